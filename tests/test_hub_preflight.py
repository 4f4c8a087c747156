"""The hub's checks before it starts (agentlab/hub/preflight.py, Hub.check_folders and Hub.check_imports).

A fresh hub once started with an environment that lacked the site's and Redis's extras: every participant's start
failed and the site restarted every 30 s, and nothing said so. Another machine's shared Python lived under a 0700
home, and every account but root failed to run it. Each check is run here on an environment or a folder tree made
broken on purpose: an import blocked by a ``sitecustomize`` module, a folder of mode 0700.
"""
import os
import stat
import sys
import tempfile
from pathlib import Path

import pytest
from conftest import ROOT

from agentlab.hub import preflight
from agentlab.hub.config import HubSettings
from agentlab.i18n import t

# Hub.start() prepares the services' account (usermod) before its checks refuse: never while another test's hub runs
# as that account (usermod: "in use"). One hub per machine: these run on the hub tests' worker, after them.
pytestmark = pytest.mark.xdist_group("hub")

BLOCKER = '''import sys
class _Blocked:
    def find_spec(self, name, path=None, target=None):
        if name.split(".")[0] in {blocked!r}:
            raise ModuleNotFoundError(f"No module named {{name!r}}")
        return None
sys.meta_path.insert(0, _Blocked())
'''


def _open_tree(prefix: str) -> Path:
    d = Path(tempfile.mkdtemp(prefix=prefix))  # mkdtemp makes it 0700; the tree must be the test's to close
    d.chmod(0o755)
    return d


def _python_without(base: Path, *modules: str) -> Path:
    """A python that is this environment's with ``modules`` made unimportable (a wrapper script, so that another
    account running it gets the same)."""
    blocker = base / "blocker"
    blocker.mkdir(mode=0o755)
    (blocker / "sitecustomize.py").write_text(BLOCKER.format(blocked=set(modules)))
    (blocker / "sitecustomize.py").chmod(0o644)
    wrapper = base / "python"
    wrapper.write_text(f'#!/bin/sh\nPYTHONPATH="{blocker}${{PYTHONPATH:+:$PYTHONPATH}}" exec "{sys.executable}" "$@"\n')
    wrapper.chmod(0o755)
    return wrapper


def test_an_environment_without_uvicorn_is_said_piece_by_piece(tmp_path):
    python = _python_without(tmp_path, "uvicorn", "redis")
    missing = preflight.missing_imports(python, [ROOT], model=False)
    by_module = {m.module: m for m in missing}
    assert by_module["uvicorn"].piece == "site" and "uvicorn" in by_module["uvicorn"].error
    assert by_module["redis"].piece == "redis"
    assert {m.piece for m in missing} <= {"site", "redis"}, missing  # nothing else is said missing
    assert preflight.missing_imports(Path(sys.executable), [ROOT], model=False) == []  # the real one has all


def test_a_python_that_does_not_run_is_said_not_missing_modules(tmp_path):
    broken = tmp_path / "python"
    broken.write_text("#!/bin/sh\necho 'cannot execute: Permission denied' >&2\nexit 126\n")
    broken.chmod(0o755)
    with pytest.raises(preflight.PythonDoesNotStart, match="Permission denied"):
        preflight.missing_imports(broken, [ROOT])


def _need_root():
    from conftest import skip_or_fail
    if not hasattr(os, "geteuid") or os.geteuid() != 0:
        skip_or_fail("the hub's checks run the environment as the services' account: the test needs root")


def _settings(state: Path, python: Path) -> HubSettings:
    return HubSettings(root=ROOT, state=state, python=python, proxy=ROOT / "hub", workshop_password="room-pw-1")


@pytest.mark.parametrize("lang", ["en", "zh"])
def test_the_hub_refuses_to_start_with_one_line_per_missing_piece(lang):
    """Run as the services' account, as the site and the spawner would run: nothing is started, the trainer
    reads each missing module with the piece of the room it breaks, in their language, and what to do."""
    import shutil

    from agentlab.hub.launch import Hub, HubRefused
    _need_root()
    base = _open_tree("agentlab-preflight-")
    try:
        hub = Hub(_settings(base / "state", _python_without(base, "uvicorn")), lang=lang)
        with pytest.raises(HubRefused) as refused:
            hub.start()
        assert hub.proc is None  # JupyterHub was never started
        lines = str(refused.value).splitlines()
        site = t("hub.piece.site", lang)
        assert [x for x in lines if "uvicorn" in x] == [next(x for x in lines if x.startswith(f"✗ {site}"))]
        assert lines[-1] == t("hub.preflight.refused", lang)
        assert "Traceback" not in str(refused.value)
    finally:
        shutil.rmtree(base, ignore_errors=True)


def test_a_folder_closed_to_other_accounts_is_named_and_opened_only_when_asked():
    """The shared Python under a 0700 folder (root's home, where pyenv puts it): the hub names exactly that folder,
    says why and how, and changes nothing; with --fix-permissions it adds o+x to it, and nothing else."""
    import shutil

    from agentlab.hub.launch import Hub, HubRefused
    base = _open_tree("agentlab-closed-")
    try:
        closed = base / "home"
        (closed / "env" / "bin").mkdir(parents=True)
        closed.chmod(0o700)
        python = closed / "env" / "bin" / "python"  # says where its base install is, as a Python would
        python.write_text("#!/bin/sh\necho /usr\n")
        python.chmod(0o755)
        needed = preflight.needed_folders(python, base / "state")
        assert Path("/usr/lib") in needed
        assert closed in needed and closed / "env" / "bin" in needed and base in needed
        assert preflight.closed_folders([base, closed, closed / "env", base / "absent"]) == [closed]
        for lang in ("en", "zh"):
            with pytest.raises(HubRefused) as refused:
                Hub(_settings(base / "state", python), lang=lang).check_folders()
            said = str(refused.value)
            assert str(closed) in said and "--fix-permissions" in said and "o+x" in said, said
            assert stat.S_IMODE(closed.stat().st_mode) == 0o700  # nothing was changed without being asked
        elsewhere = [f for f in preflight.closed_folders(preflight.needed_folders(python, ROOT / "agentlab"))
                     if f != base and base not in f.parents]
        if elsewhere:  # the fix would open those too: not from a test
            pytest.skip(f"folders outside the test's are closed here: {elsewhere}")
        opened = Hub(_settings(base / "state", python), fix_permissions=True).check_folders()
        assert len(opened) == 1 and str(closed) in opened[0]
        assert stat.S_IMODE(closed.stat().st_mode) == 0o701  # pass through only: not list, not read
        assert closed not in preflight.closed_folders(preflight.needed_folders(python, base / "state"))
    finally:
        shutil.rmtree(base, ignore_errors=True)
