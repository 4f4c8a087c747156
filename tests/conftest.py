import os
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent
DATASETS = Path(os.environ.get("AGENTLAB_DATASETS", ROOT.parent / "shared" / "datasets"))
IN_CI = bool(os.environ.get("AGENTLAB_CI"))


def need(path: Path, what: str) -> Path:
    """Skip (on a user's machine) or fail (in CI) when an external resource is absent."""
    if not path.exists():
        msg = f"{what} not found at {path}"
        if IN_CI:
            pytest.fail(msg + " (CI must not skip this)")
        pytest.skip(msg + "; see the README to get it")
    return path


@pytest.fixture(scope="session")
def datasets() -> Path:
    return need(DATASETS, "../shared/datasets")
