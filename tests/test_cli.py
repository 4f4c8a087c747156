import json
import subprocess
import sys

import pytest

from conftest import ROOT

TOOLS = str(ROOT / "data" / "aftersales_tools.json")


def run(*args):
    p = subprocess.run([sys.executable, "-m", "agentlab", *args], capture_output=True, text=True, cwd=ROOT)
    return p.returncode, p.stdout, p.stderr


def test_check_args_valid_exit_0():
    rc, out, _ = run("check-args", "--tools", TOOLS, "--name", "get_order", "--args", '{"order_id": "A1001"}')
    assert rc == 0 and json.loads(out)["ok"] is True


@pytest.mark.parametrize("lang,word", [("en", "did not pass"), ("zh", "参数校验未通过")])
def test_check_args_invalid_exit_1_both_languages(lang, word):
    rc, out, _ = run("check-args", "--tools", TOOLS, "--name", "get_order", "--args", '{"orderId": "A1001"}', "--lang", lang)
    body = json.loads(out)
    assert rc == 1 and body["ok"] is False and word in body["error"]["message"]
    assert body["error"]["problems"][1]["did_you_mean"] == "order_id"


def test_check_args_clean():
    rc, out, _ = run("check-args", "--tools", TOOLS, "--name", "create_refund", "--clean",
                     "--args", '{"order_id": "A1001", "amount": "¥1,200", "reason": "user_cancel"}')
    assert rc == 0 and json.loads(out)["cleaned"][0]["after"] == 1200


@pytest.mark.parametrize("args", [
    ["check-args", "--tools", TOOLS],
    ["check-args", "--tools", "missing.json", "--name", "x", "--args", "{}"],
    ["check-args", "--tools", TOOLS, "--name", "x", "--args", "{}", "--lang", "fr"],
    ["no-such-command"], [],
])
def test_usage_errors_exit_2_without_traceback(args):
    rc, out, err = run(*args)
    assert rc == 2 and "Traceback" not in err + out


@pytest.mark.parametrize("lang", ["en", "zh"])
def test_lint(lang):
    rc, out, _ = run("lint", str(ROOT / "data" / "bad_tools.json"), "--lang", lang, "--json")
    findings = json.loads(out)
    assert rc == 1 and {"AL005", "AL004", "AL003"} <= {f["rule"] for f in findings}
    rc, out, _ = run("lint", TOOLS)
    assert rc == 0
