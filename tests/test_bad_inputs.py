"""Every command, fed bad input, says what is wrong in one line and exits 2: never a traceback.

The corpus runs in-process through ``agentlab.cli.main`` (fast), and a sample of it
runs again in a real subprocess, where a traceback would really reach the terminal.
"""
import json
import subprocess
import sys

import pytest
from conftest import ROOT

from agentlab import cli

TOOLS = str(ROOT / "data" / "aftersales_tools.json")
SUITE = str(ROOT / "data" / "aftersales_cases.jsonl")
GOOD_CASE = {"id": "c1", "task": "refund A1001", "expect": {"refunds": []}}

# name -> file content (str, or bytes for a non-UTF-8 file)
FILES = {
    "empty.json": "",
    "blank.json": "  \n\n",
    "broken.json": '{"name": "get_order",',
    "ints.json": "[1, 2, 3]",
    "tools_str.json": '{"tools": "x"}',
    "number.json": "42",
    "no_tools.json": "[]",
    "nameless.json": '[{"description": "look up an order"}]',
    "bad_params.json": '[{"name": "t", "parameters": "x"}]',
    "bad_type.json": '[{"name": "t", "parameters": {"type": "strnig"}}]',
    "twice.json": '[{"name": "t"}, {"name": "t"}]',
    "latin1.json": b'[{"name": "caf\xe9"}]',
    "empty.jsonl": "",
    "blank.jsonl": "\n  \n",
    "short_script.jsonl": json.dumps({**GOOD_CASE, "fake": {"script": [["get_order"]]}}),
    "fake_str.jsonl": json.dumps({**GOOD_CASE, "fake": "oops"}),
    "bad_plan.jsonl": json.dumps({**GOOD_CASE, "fake": {"plan": [["get_order"]]}}),
    "plan_args.jsonl": json.dumps({**GOOD_CASE, "fake": {"plan": [["get_order", "A1001"]]}}),
    "scenario.jsonl": json.dumps({**GOOD_CASE, "scenario": "nope"}),
    "fault.jsonl": json.dumps({**GOOD_CASE, "fake": {"plan": [], "fault": "nope"}}),
    "tool_fault.jsonl": json.dumps({**GOOD_CASE, "fake": {"plan": [], "fault": "flaky_tool"}}),
    "at_step.jsonl": json.dumps({**GOOD_CASE, "fake": {"plan": [], "fault": "camel_case", "at_step": 0}}),
    "fake_key.jsonl": json.dumps({**GOOD_CASE, "fake": {"plans": []}}),
    "expect_str.jsonl": json.dumps({**GOOD_CASE, "expect": "refunded"}),
    "expect_key.jsonl": json.dumps({**GOOD_CASE, "expect": {"refund": []}}),
    "expect_refunds.jsonl": json.dumps({**GOOD_CASE, "expect": {"refunds": 5}}),
    "expect_status.jsonl": json.dumps({**GOOD_CASE, "expect": {"statuses": ["finished"]}}),
    "no_id.jsonl": json.dumps({"task": "x", "expect": {}}),
    "task_num.jsonl": json.dumps({**GOOD_CASE, "task": 7}),
    "line_list.jsonl": json.dumps(GOOD_CASE) + "\n[1, 2]\n",
    "line_broken.jsonl": json.dumps(GOOD_CASE) + "\n{not json\n",
    "dup_id.jsonl": json.dumps(GOOD_CASE) + "\n" + json.dumps(GOOD_CASE) + "\n",
    "start.jsonl": json.dumps({**GOOD_CASE, "start": {"orders": "A1001"}}),
    "latin1.jsonl": b'{"id": "caf\xe9", "task": "x", "expect": {}}\n',
    "cassette.jsonl": "{not json\n",
    "not_gguf.gguf": "hello",
    "afile": "I am a file, not a directory",
}


@pytest.fixture
def bad(tmp_path, monkeypatch):
    """The corpus files in a fresh folder, which is also the working directory."""
    for name, content in FILES.items():
        (tmp_path / name).write_bytes(content if isinstance(content, bytes) else content.encode())
    (tmp_path / "adir").mkdir()
    monkeypatch.chdir(tmp_path)
    monkeypatch.setenv("AGENTLAB_CACHE", str(tmp_path / "cache"))
    return tmp_path


def check_args(tools):
    return ["check-args", "--tools", tools, "--name", "get_order", "--args", "{}"]


def eval_(*extra, suite=SUITE):
    return ["eval", "--suite", suite, "--out", "runs", *extra]


# (argv, words the one error line must contain)
CORPUS = [
    # check-args: the tools file
    (check_args("missing.json"), ["missing.json", "no such file"]),
    (check_args("adir"), ["adir", "directory"]),
    (check_args("empty.json"), ["empty.json", "empty"]),
    (check_args("blank.json"), ["blank.json", "empty"]),
    (check_args("broken.json"), ["broken.json", "not valid JSON"]),
    (check_args("ints.json"), ["ints.json", "tool 1", "1", "name"]),
    (check_args("tools_str.json"), ["tools_str.json", '"x"', "tool specs"]),
    (check_args("number.json"), ["number.json", "42", "tool specs"]),
    (check_args("no_tools.json"), ["no_tools.json", "no tools"]),
    (check_args("nameless.json"), ["nameless.json", "tool 1", "name"]),
    (check_args("bad_params.json"), ["bad_params.json", "parameters", "object"]),
    (check_args("bad_type.json"), ["bad_type.json", "'t'", "strnig"]),
    (check_args("twice.json"), ["twice.json", "'t'", "twice"]),
    (check_args("latin1.json"), ["latin1.json", "UTF-8"]),
    # lint: the same file, another command
    (["lint", "missing.json"], ["missing.json", "no such file"]),
    (["lint", "adir"], ["adir", "directory"]),
    (["lint", "empty.json"], ["empty.json", "empty"]),
    (["lint", "broken.json"], ["broken.json", "not valid JSON"]),
    (["lint", "ints.json"], ["ints.json", "tool 1"]),
    (["lint", "tools_str.json"], ["tools_str.json", "tool specs"]),
    (["lint", "bad_type.json"], ["bad_type.json", "strnig"]),
    (["lint", "latin1.json"], ["latin1.json", "UTF-8"]),
    # eval: the suite file, line by line
    (eval_(suite="missing.jsonl"), ["missing.jsonl", "no such file"]),
    (eval_(suite="adir"), ["adir", "directory"]),
    (eval_(suite="empty.jsonl"), ["empty.jsonl", "no cases"]),
    (eval_(suite="blank.jsonl"), ["blank.jsonl", "no cases"]),
    (eval_(suite="latin1.jsonl"), ["latin1.jsonl", "UTF-8"]),
    (eval_(suite="short_script.jsonl"), ["short_script.jsonl:1", "fake.script[0]", "[tool name, arguments]"]),
    (eval_(suite="fake_str.jsonl"), ["fake_str.jsonl:1", "fake", '"oops"', "object"]),
    (eval_(suite="bad_plan.jsonl"), ["bad_plan.jsonl:1", "fake.plan[0]"]),
    (eval_(suite="plan_args.jsonl"), ["plan_args.jsonl:1", "fake.plan[0]"]),
    (eval_(suite="scenario.jsonl"), ["scenario.jsonl:1", "'nope'", "aftersales"]),
    (eval_(suite="fault.jsonl"), ["fault.jsonl:1", "'nope'", "camel_case"]),
    (eval_(suite="tool_fault.jsonl"), ["tool_fault.jsonl:1", "'flaky_tool'"]),
    (eval_(suite="at_step.jsonl"), ["at_step.jsonl:1", "fake.at_step", "at least 1"]),
    (eval_(suite="fake_key.jsonl"), ["fake_key.jsonl:1", "'plans'"]),
    (eval_(suite="expect_str.jsonl"), ["expect_str.jsonl:1", "expect", "object"]),
    (eval_(suite="expect_key.jsonl"), ["expect_key.jsonl:1", "'refund'", "refunds"]),
    (eval_(suite="expect_refunds.jsonl"), ["expect_refunds.jsonl:1", "expect.refunds", "array"]),
    (eval_(suite="expect_status.jsonl"), ["expect_status.jsonl:1", "'finished'", "done"]),
    (eval_(suite="no_id.jsonl"), ["no_id.jsonl:1", "'id'"]),
    (eval_(suite="task_num.jsonl"), ["task_num.jsonl:1", "task", "string"]),
    (eval_(suite="line_list.jsonl"), ["line_list.jsonl:2", "[1, 2]", "object"]),
    (eval_(suite="line_broken.jsonl"), ["line_broken.jsonl:2", "not valid JSON"]),
    (eval_(suite="dup_id.jsonl"), ["dup_id.jsonl:2", "'c1'", "line 1"]),
    (eval_(suite="start.jsonl"), ["start.jsonl:1", "start"]),
    # eval: numbers and outputs, checked before anything runs
    (eval_("--trials", "0"), ["--trials", "between 1 and 1000", "0"]),
    (eval_("--trials", "-1"), ["--trials", "between 1 and 1000", "-1"]),
    (eval_("--trials", "1001"), ["--trials", "between 1 and 1000", "1001"]),
    (eval_("--concurrency", "0"), ["--concurrency", "between 1 and 64"]),
    (eval_("--trials", "two"), ["--trials", "two"]),
    (["eval", "--suite", SUITE, "--out", "afile"], ["afile", "not a directory"]),
    (["eval", "--suite", SUITE, "--out", "afile/runs"], ["afile/runs", "cannot"]),
    (eval_("--model", "replay", "--cassette", "missing.jsonl"), ["missing.jsonl", "no such file"]),
    (eval_("--model", "replay", "--cassette", "adir"), ["adir", "directory"]),
    (eval_("--model", "replay", "--cassette", "cassette.jsonl"), ["cassette.jsonl:1", "not valid JSON"]),
    (["eval"], ["--suite", "required"]),
    # demo
    (["demo", "--step", "0"], ["--step", "between 1 and 4", "0"]),
    (["demo", "--step", "99"], ["--step", "between 1 and 4", "99"]),
    (["demo", "--step", "-3"], ["--step", "-3"]),
    (["demo", "--fault", "nope"], ["--fault", "nope"]),
    (["demo", "--lang", "fr"], ["--lang", "fr"]),
    # local (nothing is started: every check comes first)
    (["local", "--gguf", "missing.gguf"], ["missing.gguf", "no such file"]),
    (["local", "--gguf", "adir"], ["adir", "directory"]),
    (["local", "--gguf", "not_gguf.gguf"], ["not_gguf.gguf", "GGUF"]),
    (["local", "--gguf", "not_gguf.gguf", "--port", "0"], ["--port", "between 1 and 65535"]),
    (["local", "--gguf", "not_gguf.gguf", "--port", "70000"], ["--port", "70000"]),
    (["local", "--gguf", "not_gguf.gguf", "--threads", "0"], ["--threads", "at least 1"]),
    (["local", "--gguf", "not_gguf.gguf", "--ctx", "-5"], ["--ctx", "at least"]),
    # the command line itself
    (["no-such-command"], ["no-such-command"]),
    ([], ["check-args", "eval"]),
]


def one_line(err: str) -> str:
    lines = [x for x in err.splitlines() if x.strip()]
    assert len(lines) == 1, f"expected one line on stderr, got {lines}"
    return lines[0]


@pytest.mark.parametrize("argv,words", CORPUS, ids=[" ".join(a) or "(nothing)" for a, _ in CORPUS])
def test_bad_input_is_one_line_and_exit_2(bad, capsys, argv, words):
    rc = cli.main(argv)
    out, err = capsys.readouterr()
    line = one_line(err)
    assert rc == 2, (rc, err)
    assert "Traceback" not in out + err
    assert "unexpected" not in line, line  # the catch-all is a safety net, not an answer
    assert line.startswith("error:"), line
    for w in words:
        assert w in line, (w, line)


def test_the_corpus_is_large():
    assert len(CORPUS) >= 20
    assert {a[0] for a, _ in CORPUS if a} >= {"check-args", "lint", "eval", "demo", "local"}


@pytest.mark.parametrize("argv,words", [
    (check_args("ints.json"), ["ints.json", "tool 1"]),
    (["lint", "tools_str.json"], ["tools_str.json"]),
    (eval_(suite="short_script.jsonl"), ["short_script.jsonl:1"]),
    (eval_(suite="adir"), ["adir", "directory"]),
    (eval_("--trials", "0"), ["--trials"]),
    (["demo", "--step", "99"], ["--step"]),
    (["demo", "--fault", "nope"], ["--fault"]),
])
def test_bad_input_in_a_real_process(bad, argv, words):
    p = subprocess.run([sys.executable, "-m", "agentlab", *argv], capture_output=True, text=True, cwd=bad,
                       env={**__import__("os").environ, "PYTHONPATH": str(ROOT)})
    assert p.returncode == 2 and "Traceback" not in p.stderr + p.stdout, p.stderr
    line = one_line(p.stderr)
    for w in words:
        assert w in line, (w, line)


@pytest.mark.parametrize("argv,words", [
    ([*check_args("ints.json"), "--lang", "zh"], ["ints.json", "第 1 个工具"]),
    (eval_("--lang", "zh", suite="short_script.jsonl"), ["short_script.jsonl:1", "fake.script"]),
    (eval_("--lang", "zh", "--trials", "0"), ["--trials", "之间"]),
    (["demo", "--lang", "zh", "--step", "9"], ["--step", "之间"]),
    (["demo", "--lang", "zh", "--fault", "nope"], ["错误", "--help"]),
])
def test_errors_speak_chinese_with_lang_zh(bad, capsys, argv, words):
    assert cli.main(argv) == 2
    line = one_line(capsys.readouterr().err)
    assert line.startswith("错误：")
    for w in words:
        assert w in line, (w, line)


def test_eval_checks_its_output_before_running_the_suite(bad, capsys, monkeypatch):
    import agentlab.evals

    def must_not_run(*a, **kw):
        raise AssertionError("the suite ran before --out was checked")

    monkeypatch.setattr(agentlab.evals, "run_suite", must_not_run)
    assert cli.main(["eval", "--suite", SUITE, "--out", "afile"]) == 2
    assert "afile" in capsys.readouterr().err
    assert (bad / "afile").read_text() == FILES["afile"]


def test_a_good_suite_still_runs(bad, capsys):
    (bad / "good.jsonl").write_text(json.dumps({**GOOD_CASE, "fake": {"script": [["get_order", {"order_id": "A1001"}],
                                                                               "A1001 is paid."]}}) + "\n")
    assert cli.main(["eval", "--suite", "good.jsonl", "--out", "runs", "--json"]) == 0
    assert json.loads(capsys.readouterr().out)["cases"] == 1


def test_check_args_keeps_its_verdict_when_stdout_cannot_take_the_text(bad):
    """An ASCII-only stdout (LANG=C) must not turn 'invalid' (1) into a usage error (2)."""
    argv = ["check-args", "--tools", TOOLS, "--name", "get_order", "--args", '{"orderId": "A1001"}', "--lang", "zh"]
    env = {**__import__("os").environ, "PYTHONPATH": str(ROOT), "PYTHONIOENCODING": "ascii"}
    p = subprocess.run([sys.executable, "-m", "agentlab", *argv], capture_output=True, text=True, cwd=bad, env=env)
    assert p.returncode == 1, p.stderr
    assert "参数没有通过检查" in json.loads(p.stdout)["error"]["message"] and not p.stderr


def test_a_closed_pipe_keeps_the_verdict_and_prints_nothing_more(bad):
    argv = ["check-args", "--tools", TOOLS, "--name", "get_order", "--args", '{"orderId": "A1001"}']
    env = {**__import__("os").environ, "PYTHONPATH": str(ROOT)}
    p = subprocess.Popen([sys.executable, "-m", "agentlab", *argv], stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                         cwd=bad, env=env)
    p.stdout.close()  # the reader went away (`| head -c0`)
    err = p.stderr.read().decode()
    assert p.wait(60) == 1 and "Traceback" not in err and "Exception ignored" not in err, err
