"""deploy/z2jh/: the Zero to JupyterHub values and the room's three services as plain Kubernetes manifests.

Nothing here starts Kubernetes: the files parse, say what the hub contract says (the environment names, the
trainer service, the culler, memory limits), agree with each other (every address in the values is a Service of
the manifests, on its port), the hub's extra Python runs against a stand-in spawner, and the check of the values
against the chart's own schema (deploy/z2jh/validate.py, run with a copy of the chart: docs/workshop.md) works.
"""
import json
import types
from urllib.parse import urlsplit

import pytest
from conftest import ROOT

yaml = pytest.importorskip("yaml")

Z2JH = ROOT / "deploy" / "z2jh"
CONTRACT = ["AGENTLAB_BASE_URL", "AGENTLAB_MODEL", "AGENTLAB_API_KEY", "AGENTLAB_SOURCE", "AGENTLAB_SITE_URL", "AGENTLAB_STORE",
            "AGENTLAB_STORE_PREFIX"]


def values() -> dict:
    return yaml.safe_load((Z2JH / "values.yaml").read_text(encoding="utf-8"))


def manifests() -> list[dict]:
    return [d for f in sorted(Z2JH.glob("*.yaml")) if f.name != "values.yaml"
            for d in yaml.safe_load_all(f.read_text(encoding="utf-8")) if d]


def hooked(tmp_path, monkeypatch, names=("alice", "bob")):
    """Run hub.extraConfig as the hub runs it; each name's environment from its pre-spawn hook."""
    monkeypatch.setenv("AGENTLAB_MODEL_SECRET", "model-gate-secret")
    monkeypatch.setenv("AGENTLAB_HUB_PASSWORD", "room-pw")
    keys = tmp_path / "keys"
    keys.mkdir(exist_ok=True)
    (keys / "alice").write_text("sk-alice\n")
    monkeypatch.setenv("AGENTLAB_HUB_ADMIN_PASSWORD", "trainers-own-pw")
    code = (values()["hub"]["extraConfig"]["agentlab.py"].replace("/etc/agentlab/site-keys", str(keys))
            .replace("/srv/jupyterhub/", str(tmp_path) + "/"))
    c = types.SimpleNamespace(KubeSpawner=types.SimpleNamespace(environment={}, pre_spawn_hook=None),
                              WorkshopAuthenticator=types.SimpleNamespace())
    exec(compile(code, "values.yaml:hub.extraConfig", "exec"), {"c": c})
    envs = {}
    for name in names:
        spawner = types.SimpleNamespace(user=types.SimpleNamespace(name=name), environment={})
        c.KubeSpawner.pre_spawn_hook(spawner)
        envs[name] = {**values()["singleuser"]["extraEnv"], **c.KubeSpawner.environment, **spawner.environment}
    return c, envs


def test_the_participants_get_the_contracts_environment(tmp_path, monkeypatch):
    from agentlab.hub.model_gate import who_holds
    c, envs = hooked(tmp_path, monkeypatch)
    for env in envs.values():
        assert set(CONTRACT) <= set(env), set(CONTRACT) - set(env)
    # each participant's own key to the model's gate, made from its secret (never the secret itself)
    assert {n: who_holds("model-gate-secret", envs[n]["AGENTLAB_API_KEY"]) for n in envs} == {"alice": "alice", "bob": "bob"}
    assert envs["alice"]["AGENTLAB_STORE_PREFIX"] != envs["bob"]["AGENTLAB_STORE_PREFIX"]
    assert "model-gate-secret" not in json.dumps(envs)
    assert c.WorkshopAuthenticator.workshop_password == "room-pw"
    from agentlab.hub.auth import PasswordBook
    book = PasswordBook(tmp_path / "agentlab-passwords.json", "room-pw", admins=c.WorkshopAuthenticator.admin_names)
    assert book.login("trainer", "trainers-own-pw") and not book.login("trainer", "another-pw", "room-pw")


def test_each_participant_has_a_redis_of_their_own_and_cannot_reach_the_rooms(tmp_path, monkeypatch):
    """A shared Redis with a user per participant let one ``EVAL "while true do end" 0`` freeze it for the room, and
    one participant fill it: each pod now runs its own, bounded, on its own loopback; the room's is the site's."""
    v = values()
    assert v["hub"]["config"]["JupyterHub"]["authenticator_class"] == "agentlab.hub.auth.WorkshopAuthenticator"
    assert v["hub"]["config"]["Authenticator"]["request_otp"] is True  # the room's password to claim a name
    for name in ("AGENTLAB_HUB_PASSWORD", "AGENTLAB_MODEL_SECRET"):
        assert "secretKeyRef" in v["hub"]["extraEnv"][name]["valueFrom"]
    assert "AGENTLAB_REDIS_PASSWORD" not in v["hub"]["extraEnv"]  # the hub makes no Redis users any more
    redis_args = next(d for d in manifests() if d["kind"] == "Deployment" and d["metadata"]["name"] == "agentlab-redis"
                      )["spec"]["template"]["spec"]["containers"][0]["args"]
    assert redis_args[redis_args.index("--requirepass") + 1] == "$(REDIS_PASSWORD)"
    [own] = v["singleuser"]["extraContainers"]
    args = dict(zip(own["args"][::2], own["args"][1::2], strict=True))
    assert args["--bind"] == "127.0.0.1" and args["--port"] == "6379" and args["--maxmemory"] == "64mb"
    assert args["--maxmemory-policy"] == "noeviction" and args["--appendfsync"] == "always"
    assert own["resources"]["limits"]["cpu"] and own["resources"]["limits"]["memory"]
    _, envs = hooked(tmp_path, monkeypatch, ["alice"])
    assert envs["alice"]["AGENTLAB_STORE"] == f"redis://127.0.0.1:{args['--port']}/0"
    opened = {p["port"] for rule in v["singleuser"]["networkPolicy"]["egress"] for p in rule["ports"]}
    assert 6379 not in opened  # the room's Redis: the site's alone


def test_the_model_is_served_through_its_fair_share_gate():
    model = next(d for d in manifests() if d["kind"] == "Deployment" and d["metadata"]["name"] == "agentlab-model")
    [container] = model["spec"]["template"]["spec"]["containers"]
    command = container["command"]
    assert command[:3] == ["python", "-m", "agentlab.hub.model_gate"]
    assert command[command.index("--port") + 1] == "8080" and command[command.index("--host") + 1] == "0.0.0.0"
    [secret] = [e for e in container["env"] if e["name"] == "AGENTLAB_MODEL_SECRET"]
    assert secret["valueFrom"]["secretKeyRef"] == {"name": "agentlab-model", "key": "secret"}
    hub_secret = values()["hub"]["extraEnv"]["AGENTLAB_MODEL_SECRET"]["valueFrom"]["secretKeyRef"]
    assert hub_secret == secret["valueFrom"]["secretKeyRef"]  # the keys the hub makes are the ones the gate checks


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


def test_every_address_the_participants_get_is_a_service_of_the_manifests(tmp_path, monkeypatch):
    services = {d["metadata"]["name"]: {p["port"] for p in d["spec"]["ports"]} for d in manifests() if d["kind"] == "Service"}
    _, envs = hooked(tmp_path, monkeypatch, ["alice"])
    env = envs["alice"]
    for name in ("AGENTLAB_BASE_URL", "AGENTLAB_SITE_URL"):
        url = urlsplit(env[name])
        assert url.hostname in services and url.port in services[url.hostname], (name, env[name], services)
    opened = {p["port"] for rule in values()["singleuser"]["networkPolicy"]["egress"] for p in rule["ports"]}
    reached = {urlsplit(env[n]).port for n in ("AGENTLAB_BASE_URL", "AGENTLAB_SITE_URL")}
    assert opened == reached  # the model and the site, nothing else of the room's (its Redis is the site's)


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
    _, envs = hooked(tmp_path, monkeypatch)
    assert envs["alice"].get("AGENTLAB_SITE_KEY") == "sk-alice" and "AGENTLAB_SITE_KEY" not in envs["bob"]


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
