"""Four JSONL logs, ids on every line, no secrets, capped (agentlab/site/logs.py)."""
from agentlab.site.logs import SiteLogs, scrub


def test_every_line_has_the_ids_and_no_credentials(tmp_path):
    logs = SiteLogs(tmp_path)
    logs.write("call", request_id="r1", session_id="s1", arguments={"note": "password: hunter2", "api_key": "abc"})
    line = logs.read("call")[0]
    assert line["request_id"] == "r1" and line["session_id"] == "s1"
    assert "hunter2" not in str(line) and line["arguments"]["api_key"] == "[secret removed]"


def test_the_stack_stays_for_the_operator_without_its_secrets(tmp_path):
    logs = SiteLogs(tmp_path)
    stack = 'Traceback (most recent call last):\n  File "x.py", line 1, in f\nRuntimeError: password=hunter2\n'
    logs.write("error", request_id="r", session_id=None, stack=stack)
    kept = logs.read("error")[0]["stack"]
    assert kept.startswith("Traceback") and 'File "x.py"' in kept and "hunter2" not in kept


def test_files_are_capped_and_rotated(tmp_path):
    logs = SiteLogs(tmp_path, max_bytes=400, backups=2)
    for i in range(40):
        logs.write("access", request_id=f"r{i}", session_id=None, path="/api/skills")
    files = sorted(p.name for p in tmp_path.iterdir())
    assert files == ["access.jsonl", "access.jsonl.1", "access.jsonl.2"]
    assert all(p.stat().st_size <= 400 for p in tmp_path.iterdir())


def test_scrub_walks_nested_values():
    assert scrub({"a": [{"token": "x"}, "Bearer abcdef123456789"]}) == {"a": [{"token": "[secret removed]"}, "[secret removed]"]}
