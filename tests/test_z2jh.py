"""deploy/z2jh/: the Zero to JupyterHub values and the room's three services as plain Kubernetes manifests.

Nothing here starts Kubernetes: the files parse, say what the hub contract says (the environment names, the
trainer service, the culler, memory limits), agree with each other (every address in the values is a Service of
the manifests, on its port), the hub's extra Python runs against a stand-in spawner, and the check of the values
against the chart's own schema (deploy/z2jh/validate.py, run with a copy of the chart: docs/workshop.md) works.
"""
import types
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
    assert trainer["command"] == ["python3", "-m", "agentlab.hub.progress"]  # it takes no arguments: all by env
    env = trainer["environment"]
    assert env["AGENTLAB_PROGRESS_BIND"] == "0.0.0.0" and env["AGENTLAB_PROGRESS_STATE"].startswith("/srv/jupyterhub/")
    roles = v["hub"]["loadRoles"]
    assert env["AGENTLAB_TRAINER_GROUP"] in roles["trainers"]["groups"]
    assert "access:services!service=trainer" in roles["user"]["scopes"] and "self" in roles["user"]["scopes"]
    port = urlsplit(trainer["url"]).port
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


def _validate():
    import importlib.util
    spec = importlib.util.spec_from_file_location("z2jh_validate", Z2JH / "validate.py")
    mod = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(mod)
    return mod


def test_the_schema_check_merges_as_helm_does_and_names_each_problem(tmp_path):
    """deploy/z2jh/validate.py checks the values against a copy of the chart (not on the registries): here against
    a small chart of its own, so the check itself is tested."""
    v = _validate()
    (tmp_path / "values.yaml").write_text("cull: {enabled: true, timeout: 3600}\nhub: {db: {type: sqlite-pvc}}\n")
    (tmp_path / "values.schema.yaml").write_text(yaml.safe_dump({
        "type": "object", "additionalProperties": False,
        "properties": {"cull": {"type": "object", "properties": {"timeout": {"type": "integer"}}},
                       "hub": {"type": "object", "required": ["db"]}, "singleuser": {"type": "object"},
                       "proxy": {"type": "object"}, "scheduling": {"type": "object"}, "prePuller": {"type": "object"}}}))
    assert v.merge({"a": {"b": 1, "c": 2}}, {"a": {"b": None, "d": 3}}) == {"a": {"c": 2, "d": 3}}
    assert v.problems(tmp_path) == []  # the workbook's values, over this chart's defaults (hub.db kept)
    bad = tmp_path / "bad.yaml"
    bad.write_text("cull: {timeout: half an hour}\nhub: {db: null}\nsurprise: 1\n")
    found = v.problems(tmp_path, bad)
    assert any(p.startswith("cull.timeout:") for p in found) and any("db" in p for p in found), found
    assert any("surprise" in p for p in found)
