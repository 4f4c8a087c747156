"""deploy/z2jh/: the Zero to JupyterHub values and the room's three services as plain Kubernetes manifests.

Nothing here starts Kubernetes: the files parse, say what the hub contract says (the environment names, the
trainer service, the culler, memory limits), agree with each other (every address in the values is a Service of
the manifests, on its port), the hub's extra Python runs against a stand-in spawner, and the values validate
against the chart's own schema merged over the chart's defaults when a copy of the chart is given
(``Z2JH_CHART=<the chart's jupyterhub/ folder>``; docs/workshop.md).
"""
import copy
import json
import os
import types
from pathlib import Path
from urllib.parse import urlsplit

import pytest
from conftest import ROOT

yaml = pytest.importorskip("yaml")

Z2JH = ROOT / "deploy" / "z2jh"
CONTRACT = ["AGENTLAB_BASE_URL", "AGENTLAB_MODEL", "AGENTLAB_API_KEY", "AGENTLAB_SITE_URL", "AGENTLAB_STORE",
            "AGENTLAB_STORE_PREFIX"]


def values() -> dict:
    return yaml.safe_load((Z2JH / "values.yaml").read_text(encoding="utf-8"))


def manifests() -> list[dict]:
    return [d for f in sorted(Z2JH.glob("*.yaml")) if f.name != "values.yaml"
            for d in yaml.safe_load_all(f.read_text(encoding="utf-8")) if d]


def test_the_participants_get_the_contracts_environment():
    env = values()["singleuser"]["extraEnv"]
    assert set(CONTRACT) <= set(env), set(CONTRACT) - set(env)
    assert "{username}" in env["AGENTLAB_STORE_PREFIX"]  # the spawner fills it in: one prefix per participant
    assert "valueFrom" in env["AGENTLAB_API_KEY"]  # a secret, not a literal in a file


def test_the_hub_runs_the_trainer_service_and_culls_and_limits():
    v = values()
    trainer = v["hub"]["services"]["trainer"]
    assert trainer["command"][:3] == ["python3", "-m", "agentlab.hub.progress"]
    port = int(trainer["command"][trainer["command"].index("--port") + 1])
    assert urlsplit(trainer["url"]).port == port
    assert any(p["port"] == port for p in v["hub"]["service"]["extraPorts"])
    assert v["cull"]["enabled"] and v["cull"]["timeout"] >= 600  # servers report activity every 300 s
    assert v["singleuser"]["memory"]["limit"] and v["singleuser"]["memory"]["guarantee"]
    assert v["singleuser"]["image"]["name"].endswith("agentlab-workbook")


def test_every_address_the_participants_get_is_a_service_of_the_manifests():
    services = {d["metadata"]["name"]: {p["port"] for p in d["spec"]["ports"]} for d in manifests() if d["kind"] == "Service"}
    env = values()["singleuser"]["extraEnv"]
    for name in ("AGENTLAB_BASE_URL", "AGENTLAB_SITE_URL", "AGENTLAB_STORE"):
        url = urlsplit(env[name])
        assert url.hostname in services and url.port in services[url.hostname], (name, env[name], services)
    opened = {p["port"] for rule in values()["singleuser"]["networkPolicy"]["egress"] for p in rule["ports"]}
    assert opened >= {port for ports in services.values() for port in ports}


def test_each_manifest_is_a_deployment_and_its_service_the_egress_rule_selects():
    docs = manifests()
    deployments = [d for d in docs if d["kind"] == "Deployment"]
    assert {d["metadata"]["name"] for d in deployments} == {"agentlab-model", "agentlab-site", "agentlab-redis"}
    for d in deployments:
        labels = d["spec"]["template"]["metadata"]["labels"]
        assert labels["app.kubernetes.io/part-of"] == "agentlab"
        assert d["spec"]["selector"]["matchLabels"].items() <= labels.items()
        service = next(s for s in docs if s["kind"] == "Service" and s["metadata"]["name"] == d["metadata"]["name"])
        assert service["spec"]["selector"].items() <= labels.items()


def test_the_hubs_extra_config_sets_a_participants_own_site_key(tmp_path, monkeypatch):
    code = values()["hub"]["extraConfig"]["agentlab.py"]
    keys = tmp_path / "keys"
    keys.mkdir()
    (keys / "alice").write_text("sk-alice\n")
    code = code.replace("/etc/agentlab/site-keys", str(keys))
    c = types.SimpleNamespace(KubeSpawner=types.SimpleNamespace(environment={}, pre_spawn_hook=None))
    exec(compile(code, "values.yaml:hub.extraConfig", "exec"), {"c": c})  # as the hub runs it
    for name, want in (("alice", "sk-alice"), ("bob", None)):
        spawner = types.SimpleNamespace(user=types.SimpleNamespace(name=name), environment={})
        c.KubeSpawner.pre_spawn_hook(spawner)
        assert spawner.environment.get("AGENTLAB_SITE_KEY") == want


def _merge(base, over):
    """Helm's merge of user values over the chart's defaults: maps merge, a null removes, anything else replaces."""
    if not isinstance(base, dict) or not isinstance(over, dict):
        return copy.deepcopy(over)
    out = copy.deepcopy(base)
    for key, value in over.items():
        if value is None:
            out.pop(key, None)
        else:
            out[key] = _merge(out.get(key), value)
    return out


def test_the_values_validate_against_the_charts_own_schema():
    chart = os.environ.get("Z2JH_CHART")
    if not chart:
        pytest.skip("Z2JH_CHART is not set (the chart's jupyterhub/ folder: values.yaml and its schema)")
    import jsonschema
    chart = Path(chart)
    schema_file = next(p for p in (chart / "values.schema.json", chart / "values.schema.yaml") if p.exists())
    schema = (json.loads(schema_file.read_text(encoding="utf-8")) if schema_file.suffix == ".json"
              else yaml.safe_load(schema_file.read_text(encoding="utf-8")))
    merged = _merge(yaml.safe_load((chart / "values.yaml").read_text(encoding="utf-8")), values())
    errors = sorted(jsonschema.Draft7Validator(schema).iter_errors(merged), key=lambda e: list(e.path))
    assert not errors, [f"{'.'.join(map(str, e.path))}: {e.message}" for e in errors]
    broken = _merge(merged, {"cull": {"timeout": "half an hour"}})  # the check can fail
    assert list(jsonschema.Draft7Validator(schema).iter_errors(broken))
