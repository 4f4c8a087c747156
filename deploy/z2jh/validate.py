"""Check values.yaml against the Zero to JupyterHub chart's own schema, merged over the chart's defaults as Helm
merges them. The chart is not on the package registries, so this runs where a copy of it is at hand:

    python deploy/z2jh/validate.py PATH/TO/zero-to-jupyterhub-k8s/jupyterhub

It prints one line per problem (the value's path and what is wrong) and exits 1 on any; tests/test_z2jh.py runs it
against a small chart of its own, so the check itself is tested everywhere.
"""
from __future__ import annotations

import copy
import json
import sys
from pathlib import Path
from typing import Any

import jsonschema
import yaml

HERE = Path(__file__).resolve().parent


def merge(base: Any, over: Any) -> Any:
    """Helm's merge of user values over the chart's defaults: maps merge, a null removes, anything else replaces."""
    if not isinstance(base, dict) or not isinstance(over, dict):
        return copy.deepcopy(over)
    out = copy.deepcopy(base)
    for key, value in over.items():
        if value is None:
            out.pop(key, None)
        else:
            out[key] = merge(out.get(key), value)
    return out


def problems(chart: Path, values: Path = HERE / "values.yaml") -> list[str]:
    """Each problem as ``path.to.value: message``; none when the values fit the chart."""
    schema_file = next(p for p in (chart / "values.schema.json", chart / "values.schema.yaml") if p.exists())
    text = schema_file.read_text(encoding="utf-8")
    schema = json.loads(text) if schema_file.suffix == ".json" else yaml.safe_load(text)
    merged = merge(yaml.safe_load((chart / "values.yaml").read_text(encoding="utf-8")),
                   yaml.safe_load(values.read_text(encoding="utf-8")))
    errors = sorted(jsonschema.Draft7Validator(schema).iter_errors(merged), key=lambda e: list(map(str, e.path)))
    return [f"{'.'.join(map(str, e.path)) or '(top)'}: {e.message}" for e in errors]


if __name__ == "__main__":
    if len(sys.argv) != 2 or not Path(sys.argv[1]).is_dir():
        sys.exit(__doc__)
    found = problems(Path(sys.argv[1]))
    print("\n".join(found) or "values.yaml fits the chart's schema")
    sys.exit(1 if found else 0)
