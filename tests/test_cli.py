import json
import subprocess
import sys

import pytest
from conftest import ROOT
from typography import ascii_colons, ascii_commas

TOOLS = str(ROOT / "data" / "aftersales_tools.json")


def run(*args):
    p = subprocess.run([sys.executable, "-m", "agentlab", *args], capture_output=True, text=True, cwd=ROOT)
    return p.returncode, p.stdout, p.stderr


def test_check_args_valid_exit_0():
    rc, out, _ = run("check-args", "--tools", TOOLS, "--name", "get_order", "--args", '{"order_id": "A1001"}')
    assert rc == 0 and json.loads(out)["ok"] is True


@pytest.mark.parametrize("lang,word", [("en", "did not pass"), ("zh", "参数没有通过检查")])
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
    rc, out, _ = run("lint", str(ROOT / "data" / "bad_tools.json"), "--lang", lang)
    shown = {line.split()[0] for line in out.splitlines() if line[:1] not in (" ", "") and " AL0" in line}
    # each finding's severity as the reader's tables say it (a Chinese reader read warning/error before)
    assert shown and shown <= ({"error", "warning", "info"} if lang == "en" else {"错误", "警告", "提示"}), out
    rc, out, _ = run("lint", TOOLS)
    assert rc == 0


def test_eval_with_no_openai_endpoint_refuses_before_running(monkeypatch, capsys, tmp_path):
    from agentlab.cli import main
    for var in ("AGENTLAB_BASE_URL", "OPENAI_BASE_URL", "AGENTLAB_API_KEY", "OPENAI_API_KEY"):
        monkeypatch.delenv(var, raising=False)
    code = main(["eval", "--suite", str(ROOT / "data" / "aftersales_cases.jsonl"), "--model", "openai",
                 "--out", str(tmp_path), "--json"])
    err = capsys.readouterr().err
    assert code == 2 and "AGENTLAB_BASE_URL" in err and not list(tmp_path.iterdir())


def test_eval_replay_runs_only_recorded_cases_and_says_how_many_were_left_out(capsys, tmp_path):
    import json

    from agentlab.cli import main
    from agentlab.evals import recorded_cases
    from agentlab.resources import data_file
    recorded = recorded_cases(data_file("cassettes/aftersales-0.5b.jsonl"))["guarded"]
    assert main(["eval", "--suite", str(ROOT / "data" / "aftersales_cases.jsonl"), "--model", "replay",
                 "--out", str(tmp_path), "--json"]) == 0
    report = json.loads(capsys.readouterr().out)
    assert report["cases"] == len(recorded) and len(report["not_recorded"]) == 52 - len(recorded)
    assert "(no more recorded replies)" not in json.dumps(report)


def test_eval_text_shows_both_taxonomies_and_one_format_for_rates(capsys, tmp_path):
    import re

    from agentlab.cli import main
    assert main(["eval", "--suite", str(ROOT / "data" / "aftersales_cases.jsonl"), "--out", str(tmp_path)]) == 0
    out = capsys.readouterr().out
    assert "failures by retry class" in out and "failures by stage" in out and "rule-blocked" in out
    assert "outcomes:" in out and "correct" in out
    for line in out.splitlines():
        if "rate" in line:
            assert re.search(r"\d+\.\d%", line), line  # every rate a percentage
            assert not re.search(r"rate \d\.\d{3,}", line), line  # never 0.0769 beside 7.7%


@pytest.mark.parametrize("loop", ["naive", "guarded"])
def test_the_expense_suite_replays_the_local_models_recording_by_default(capsys, tmp_path, loop):
    import json

    from agentlab.cli import main
    from agentlab.evals import recorded_cases
    from agentlab.models.cassette import read_cassette
    from agentlab.resources import data_file
    tape = data_file("cassettes/expense-0.5b.jsonl")
    if not tape.exists():
        pytest.skip("expense-0.5b.jsonl not recorded (python benchmarks/bench_real_models.py --suite data/expense_cases.jsonl)")
    from agentlab.evals import load_cases
    injected = {c.id for c in load_cases(ROOT / "data" / "expense_cases.jsonl") if c.fake.get("fault", "").startswith("api_")}
    # a server failure the case did not inject means the server was down while recording: not the model's doing
    broken = [e["label"] for e in read_cassette(tape) if "error" in e and e["error"].get("code") in ("UNAVAILABLE", "TIMEOUT")
              and e["label"].split("/")[0] not in injected]
    recorded = recorded_cases(tape)[loop]
    assert main(["eval", "--suite", str(ROOT / "data" / "expense_cases.jsonl"), "--model", "replay", "--loop", loop,
                 "--out", str(tmp_path), "--json"]) == 0
    report = json.loads(capsys.readouterr().out)
    assert report["cases"] == len(recorded) >= 10 and report["model"] == "replay"
    assert sum(report["outcomes"].values()) == len(recorded)
    assert broken == []


def test_probe_takes_its_time_budget_from_the_command_line_and_says_when_it_ran_out(tmp_path, capsys):
    from agentlab.cli import main
    code = main(["probe", "--tools", "data/aftersales_tools.json", "--model", "fake", "--out", str(tmp_path),
                 "--time-limit", "0", "--json"])
    err = capsys.readouterr().err
    assert code == 1 and "time budget" in err and "no valid call can be made" not in err


def test_eval_and_probe_take_their_live_model_from_one_helper(monkeypatch):
    # one place says which model --model names: the played sources are the command's own, openai needs an endpoint
    import argparse

    from agentlab.commands import InputError, live_model
    for name in ("AGENTLAB_BASE_URL", "OPENAI_BASE_URL", "AGENTLAB_API_KEY", "OPENAI_API_KEY"):
        monkeypatch.delenv(name, raising=False)
    for played in ("fake", "replay"):
        with live_model(argparse.Namespace(model=played)) as make:
            assert make is None
    with pytest.raises(InputError) as told, live_model(argparse.Namespace(model="openai")):
        pass
    assert told.value.key == "cli.openai_unset"
    import socket
    with socket.create_server(("127.0.0.1", 0)) as listening:  # something accepts a connection there
        monkeypatch.setenv("OPENAI_BASE_URL", f"http://127.0.0.1:{listening.getsockname()[1]}/v1")
        with live_model(argparse.Namespace(model="openai")) as make:
            assert callable(make)


def _closed_port() -> int:
    import socket
    with socket.create_server(("127.0.0.1", 0)) as s:
        return s.getsockname()[1]  # closed on the way out: nothing listens there now


@pytest.mark.parametrize("command", ["eval", "probe"])
@pytest.mark.parametrize("address, key, shown", [
    ("not a url", "cli.model_address", "not a url"),
    ("http://127.0.0.1:99999/v1", "cli.model_address", "http://127.0.0.1:99999/v1"),
    ("127.0.0.1:8080/v1", "cli.model_address", "127.0.0.1:8080/v1"),
    ("sk-proj-abcdefghijklmnopqrstuvwxyz0123", "cli.model_address", "?"),
    ("http://user:s3cr3t@127.0.0.1:{closed}/v1?key=s3cr3t", "cli.model_unreachable", "http://127.0.0.1:{closed}/v1"),
    ("http://127.0.0.1:{closed}/v1 \n", "cli.model_unreachable", "http://127.0.0.1:{closed}/v1"),  # pasted with a newline
    ("http://127.0.0.1:{closed}/sk-proj-abcdefghijklmnopqrstuvwxyz0123", "cli.model_unreachable",
     "http://127.0.0.1:{closed}"),  # a key in the path: the address without it
    ("http://user:pa/s3cr3t@127.0.0.1:1/v1", "cli.model_address", "http://127.0.0.1:1/v1"),  # a "/" in the password
    ("http://a..b/v1", "cli.model_address", "http://a..b/v1"),  # a name no resolver takes: was 'unexpected UnicodeError'
    ("http://127.0.0.1:0/v1", "cli.model_address", "http://127.0.0.1:0/v1"),  # port 0 was read as port 80
])
@pytest.mark.parametrize("lang", ["en", "zh"])
def test_a_model_endpoint_that_cannot_answer_is_refused_before_running(monkeypatch, capsys, tmp_path, command,
                                                                      address, key, shown, lang):
    """Against an endpoint that cannot answer, eval scored every case a hand-over and an unreadable error, and probe
    a table of calls let through, each exiting 0: the model service is said to be at fault, and nothing runs."""
    from agentlab.cli import main
    from agentlab.i18n import t
    closed = _closed_port()
    address, shown = address.replace("{closed}", str(closed)), shown.replace("{closed}", str(closed))
    monkeypatch.setenv("AGENTLAB_BASE_URL", address)
    monkeypatch.setenv("AGENTLAB_API_KEY", "sk-test-not-shown")
    args = (["eval", "--suite", str(ROOT / "data" / "aftersales_cases.jsonl")] if command == "eval"
            else ["probe", "--tools", str(ROOT / "data" / "aftersales_tools.json")])
    code = main([*args, "--model", "openai", "--out", str(tmp_path / "out"), "--lang", lang])
    out, err = capsys.readouterr()
    fields = {"url": shown, "seconds": "5"} if key == "cli.model_unreachable" else {"url": shown}
    assert code == 2 and t(key, lang, **fields) in err, err
    assert "Traceback" not in err + out and "s3cr3t" not in err + out and "abcdefghij" not in err + out
    assert not list(tmp_path.rglob("*.json*"))  # nothing run, nothing written (the folder may be made first)


def test_json_nested_past_the_parsers_depth_is_one_line_not_a_traceback(tmp_path, capsys):
    from agentlab.cli import main
    tools = tmp_path / "tools.json"
    tools.write_text("[" * 100_000, encoding="utf-8")
    assert main(["check-args", "--tools", str(tools), "--name", "x", "--args", "{}"]) == 2
    err = capsys.readouterr().err
    assert "tools.json" in err and "Traceback" not in err and len(err.splitlines()) == 1


def test_the_cli_speaks_chinese_in_its_help_and_its_usage_errors(capsys, monkeypatch):
    """A Chinese participant typing ``python -m agentlab eval --lang zh --help`` (or with a Chinese locale and no
    --lang) read every line in English: the commands' help was written in the code, and argparse says "usage:",
    "options" and "the following arguments are required" in English only. Now both come from data/i18n/cli.json."""
    import argparse
    import re

    from agentlab import cli, cmdline
    cjk = re.compile("[\u4e00-\u9fff]")
    with cmdline.argparse_says("zh"):
        parser = cli.build_parser("zh")
        cmdline.say_help(parser, "zh")

    def helps(p):
        yield p.description
        for a in p._actions:
            yield a.help
            if isinstance(a, argparse._SubParsersAction):
                yield from (c.help for c in a._choices_actions)
                for sub in dict.fromkeys(a.choices.values()):
                    yield from helps(sub)
    english = [h for h in helps(parser) if h and h != argparse.SUPPRESS and not cjk.search(h)]
    assert not english, english
    assert argparse._("usage: ") == "usage: ", "argparse's own words stay English outside the command"

    assert cli.main(["eval", "--lang", "zh"]) == 2
    err = capsys.readouterr().err
    assert "缺少必填的参数：--suite" in err and "the following arguments" not in err, err
    monkeypatch.setenv("LANG", "zh_CN.UTF-8")
    monkeypatch.delenv("LC_ALL", raising=False)
    monkeypatch.delenv("LC_MESSAGES", raising=False)
    monkeypatch.delenv("AGENTLAB_LANG", raising=False)
    assert cli.main(["review", "--help"]) == 0
    out = capsys.readouterr().out
    assert out.startswith("用法：") and "显示这段帮助并退出" in out and "你的日志文件" in out, out
    assert cli.main(["review", "--lang", "en", "--help"]) == 0  # --lang wins over the locale
    assert capsys.readouterr().out.startswith("usage: ")


def test_a_wrong_choice_lists_the_choices_as_the_reader_lists_them(capsys):
    """argparse lists the choices itself, each in ASCII quotes, joined with ", ": a Chinese reader read
    （可选：'check-args', 'lint', …）."""
    from agentlab import cli
    assert cli.main(["--lang", "zh", "nope"]) == 2
    err = capsys.readouterr().err
    assert "“nope”" in err and "check-args、lint、" in err and "', '" not in err, err
    assert cli.main(["nope"]) == 2
    err = capsys.readouterr().err
    assert "invalid choice: 'nope' (choose from 'check-args', 'lint'," in err, err  # English as argparse says it


def test_the_cli_in_chinese_joins_labels_and_values_as_chinese_does(capsys, monkeypatch):
    """Every command's help, a linter's findings and the capstone's report, in Chinese: argparse wrote its own ASCII
    colon after each section title (位置参数:, 选项:) and the findings read "get_order: 描述..."."""
    import argparse

    from agentlab import cli, cmdline
    monkeypatch.delenv("AGENTLAB_LANG", raising=False)
    with cmdline.argparse_says("zh"):
        parser = cli.build_parser("zh")

    def commands(p, path):
        yield path
        for a in p._actions:
            if isinstance(a, argparse._SubParsersAction):
                for name, sub in a.choices.items():
                    yield from commands(sub, [*path, name])
    said = []
    for path in commands(parser, []):
        assert cli.main(["--lang", "zh", *path, "--help"]) == 0, path
        said.append(capsys.readouterr().out)
    assert len(said) > 15 and all("选项：" in s for s in said), said[0]
    cli.main(["lint", str(ROOT / "data" / "bad_tools.json"), "--lang", "zh"])
    cli.main(["capstone", "--lang", "zh"])
    said.append(capsys.readouterr().out)
    assert " AL0" in said[-1] and "未通过" in said[-1]
    found = [c for s in said for c in ascii_colons(s)]
    assert not found, found[:10]
    assert cli.main(["lint", "--help"]) == 0 and "options:" in capsys.readouterr().out  # English keeps its own


@pytest.mark.parametrize("lang,word", [("en", "command"), ("zh", "命令")])
def test_a_missing_or_unknown_command_is_named_in_the_readers_words(capsys, lang, word):
    """argparse names a command by its dest: a Chinese reader was told "参数 command：无效的取值" and, for
    ``site keys`` with nothing after it, "缺少必填的参数：keys_command"."""
    from agentlab import cli
    for argv in (["nosuch"], ["site", "keys"], ["gateway", "keys", "nosuch"]):
        assert cli.main(["--lang", lang, *argv]) == 2
        err = capsys.readouterr().err
        assert word in err and "_command" not in err and (lang == "en" or "command" not in err), (argv, err)


def test_argparses_words_change_only_in_the_thread_that_parses():
    """A Chinese parse swapped argparse's words for the whole process: another thread's parser (a server's, a
    notebook's) printed 用法： while one command parsed. Now the words follow the thread."""
    import argparse
    import threading

    from agentlab import cmdline
    inside, done, seen = threading.Event(), threading.Event(), {}

    def other():
        inside.wait(5)
        seen["other"] = argparse._("usage: "), argparse.ngettext("expected %s argument", "expected %s arguments", 2)
        done.set()
    threading.Thread(target=other).start()
    with cmdline.argparse_says("zh"):
        inside.set()
        assert done.wait(5)
        seen["here"] = argparse._("usage: ")
    assert seen["other"] == ("usage: ", "expected %s arguments") and seen["here"] == "用法："
    assert argparse._("usage: ") == "usage: "


def test_eval_in_chinese_says_its_figures_in_chinese(capsys, tmp_path):
    """``eval --lang zh`` printed "结果： 正确 33, 正确转人工 19", the retry classes and stages by their English names
    (validation 23, structure 19) and every layer's metrics by their keys ("tokens_per_task n/a")."""
    import re

    from agentlab import cli
    suite = str(ROOT / "data" / "aftersales_cases.jsonl")
    assert cli.main(["--lang", "zh", "eval", "--suite", suite, "--model", "fake", "--out", str(tmp_path)]) == 0
    out = capsys.readouterr().out
    assert "结果：正确" in out and "校验 " in out and "结构 " in out, out
    assert not ascii_colons(out) and not ascii_commas(out), (ascii_colons(out), ascii_commas(out))
    assert not re.search(r"\b(validation|structure|semantic|[a-z]+_(rate|task|call|ms))\b|n/a", out), out


@pytest.mark.parametrize("argv", [["--lang", "zh", "trainer", "--room", "a"], ["trainer", "--room", "abcd", "--port", "99999"]])
def test_the_trainers_errors_speak_the_language_asked_for(capsys, monkeypatch, argv):
    """The trainer's own --lang defaults to "both" (its room page speaks both): with --lang zh before the command, or
    AGENTLAB_LANG=zh, its errors were English all the same."""
    from agentlab import cli
    monkeypatch.setenv("AGENTLAB_LANG", "zh")
    assert cli.main(argv) == 2
    err = capsys.readouterr().err
    assert err.startswith("错误：") and "must" not in err, err


def test_why_the_system_refused_is_said_in_the_readers_language(capsys, tmp_path):
    """An operating system's reason went into a Chinese error as the system wrote it ("无法创建或写入（No such file or
    directory）"), and the trainer's --state was called --out."""
    import errno

    from agentlab import cli
    from agentlab.i18n import os_reason, said
    assert said(os_reason(FileNotFoundError(errno.ENOENT, "No such file or directory")), "zh") == "没有这个文件或目录"
    assert os_reason(FileNotFoundError(errno.ENOENT, "No such file or directory")) == "No such file or directory"
    assert os_reason(OSError(errno.EPROTO, "Protocol error")) == "Protocol error"  # one the catalogue lacks: as said
    a_file = tmp_path / "a_file"
    a_file.write_text("x")
    suite = str(ROOT / "data" / "aftersales_cases.jsonl")
    assert cli.main(["--lang", "zh", "eval", "--suite", suite, "--model", "fake", "--out", str(a_file / "runs")]) == 2
    err = capsys.readouterr().err
    assert "（不是目录）" in err and "directory" not in err, err
    assert cli.main(["--lang", "zh", "trainer", "--room", "abcd", "--state", str(a_file / "state")]) == 2
    err = capsys.readouterr().err
    assert "--state 需要" in err and "--out" not in err, err


def test_one_language_for_the_whole_command(capsys, monkeypatch, tmp_path):
    """The language the help and a usage error are read in is the command's own: with a Chinese locale and no --lang,
    lint's usage error was Chinese and its findings English; a command's own commands (site keys create) said their
    usage error half in English; "--lan zh" ran in Chinese after an English usage line; of two --lang the first
    decided the usage language and the last the output."""
    from agentlab import cli, cmdline
    tools = tmp_path / "t.json"
    tools.write_text(json.dumps([{"type": "function", "function": {"name": "x", "description": "d", "parameters": {
        "type": "object", "properties": {"a": {"type": "string"}}}}}]))
    monkeypatch.setenv("AGENTLAB_LANG", "zh")
    cli.main(["lint", str(tools)])
    assert capsys.readouterr().out.strip().endswith("条发现")
    monkeypatch.delenv("AGENTLAB_LANG")
    monkeypatch.setenv("LANG", "en_US.UTF-8")
    monkeypatch.delenv("LC_ALL", raising=False)
    monkeypatch.delenv("LC_MESSAGES", raising=False)
    cli.main(["lint", str(tools)])
    assert capsys.readouterr().out.strip().endswith("2 findings")
    assert cli.main(["site", "keys", "create", "--lang", "zh"]) == 2
    err = capsys.readouterr().err
    assert err.startswith("错误：缺少必填的参数：--name（参见") and "see" not in err, err
    assert cli.main(["lint", "--lan", "zh", str(tools)]) == 2  # no abbreviations: one spelling, read the same way
    capsys.readouterr()
    assert cli.main(["--lang", "zh"]) == 2  # before the command too: zh is no command's name
    assert "请指定一个命令" in capsys.readouterr().err
    cli.main(["--lang", "zh", "lint", str(tools)])
    assert capsys.readouterr().out.strip().endswith("条发现")
    assert cmdline.reader_lang(["lint", "--lang", "en", "--lang", "zh"]) == "zh"
    assert cmdline.reader_lang(["lint", "--", "--lang", "zh"]) == "en"


def test_help_is_wrapped_by_columns_and_never_inside_a_name(capsys, monkeypatch):
    """argparse's textwrap split "$AGENTLAB_" from "STORE" and "afte" from "rsales", and counted a Chinese character
    as one column, so Chinese lines ran past the terminal."""
    from agentlab import cli
    from agentlab.i18n import columns as text_width
    monkeypatch.setenv("COLUMNS", "80")
    for argv in (["site", "--help"], ["checklist", "--help"]):
        for lang in ("en", "zh"):
            assert cli.main([*argv, "--lang", lang]) == 0
            out = capsys.readouterr().out
            assert all(text_width(line) <= 80 for line in out.splitlines()), out
            assert ("$AGENTLAB_STORE" in out) if argv[0] == "site" else ("aftersales" in out), out


def test_every_option_of_every_command_says_what_it_is_for():
    """--model, --loop, --trials, --lang, --port... had no help in either language: --help listed them bare."""

    from agentlab import cli, cmdline
    for lang in ("en", "zh"):
        with cmdline.argparse_says(lang):
            parser = cli.build_parser(lang)
            cmdline.say_help(parser, lang)
        assert not _bare(parser, "agentlab"), lang


def _bare(parser, path: str) -> list[str]:
    """The options of ``parser`` and its commands that have no help."""
    import argparse
    out = []
    for a in parser._actions:
        if isinstance(a, argparse._SubParsersAction):
            for name, sub in a.choices.items():
                out += _bare(sub, f"{path} {name}")
        elif a.option_strings and not a.help:
            out.append(f"{path} {a.option_strings[-1]}")
    return out


@pytest.mark.parametrize("lang", ["en", "zh"])
def test_an_error_quoting_what_a_users_file_held_reaches_the_terminal_without_its_secrets(tmp_path, lang):
    """A log line whose keys were an API key and an e-mail, and a module that raised a DSN on import, were quoted
    whole on the terminal (which ends up in CI logs); the reports themselves were redacted."""
    log = tmp_path / "keys.jsonl"
    log.write_text('{"sk-proj-AbCdEf1234567890AbCdEf1234567890XyZ": 1, "jane.doe@corp-mail.com": 2}\n', encoding="utf-8")
    rc, out, err = run("review", "--logs", str(log), "--out", str(tmp_path / "out"), "--lang", lang)
    assert rc == 2 and "AbCdEf1234567890" not in err + out and "jane.doe@" not in err + out, err
    impl = tmp_path / "impl_bad.py"
    impl.write_text('raise RuntimeError("cannot import: postgresql://u:S3cretPass@db-prod/x")\n', encoding="utf-8")
    rc, out, err = run("probe", "--tools", TOOLS, "--impl", str(impl), "--model", "fake", "--out",
                       str(tmp_path / "probe"), "--lang", lang)
    assert rc == 2 and "S3cretPass" not in err + out and "Traceback" not in err, err


def test_a_store_url_of_another_kind_is_refused_without_its_password():
    from agentlab.store import open_store
    with pytest.raises(ValueError) as caught:
        open_store("postgresql://u:Secret123@db.internal:5432/x")
    assert "Secret123" not in str(caught.value) and "postgresql://" in str(caught.value)


@pytest.mark.parametrize("lang, said", [("en", "Stopped (Ctrl-C): python -m agentlab lint did not finish"),
                                        ("zh", "已停止（Ctrl-C）：python -m agentlab lint 没有做完")])
def test_ctrl_c_is_said_in_a_line_in_the_readers_language(monkeypatch, capsys, lang, said):
    """A command stopped with Ctrl-C ended with exit 130 and nothing said; now one line, as run.py says it."""
    from agentlab import cli

    def interrupted(ns):
        raise KeyboardInterrupt
    monkeypatch.setitem(cli.COMMANDS, "lint", interrupted)
    assert cli.main(["lint", "--lang", lang, "tools.json"]) == 130
    err = capsys.readouterr().err
    assert said in err and "Traceback" not in err


def test_the_endpoint_is_tried_through_the_proxy_the_client_would_use(monkeypatch):
    """Behind a proxy (HTTPS_PROXY...), the client never connects to the model's host itself: a machine that reaches
    the model only through the proxy was refused for a direct connection it never makes."""
    import socket

    from agentlab.models.openai_model import endpoint_problem
    for var in ("HTTP_PROXY", "HTTPS_PROXY", "ALL_PROXY", "NO_PROXY", "http_proxy", "https_proxy", "all_proxy",
                "no_proxy"):
        monkeypatch.delenv(var, raising=False)
    closed = _closed_port()
    monkeypatch.setenv("AGENTLAB_BASE_URL", f"http://127.0.0.1:{closed}/v1")
    assert endpoint_problem(timeout=2)[0] == "cli.model_unreachable"
    with socket.create_server(("127.0.0.1", 0)) as proxy:
        monkeypatch.setenv("http_proxy", f"http://127.0.0.1:{proxy.getsockname()[1]}")
        assert endpoint_problem(timeout=2) is None  # the proxy answers: the client's way there is open
        monkeypatch.setenv("no_proxy", "127.0.0.1")
        assert endpoint_problem(timeout=2)[0] == "cli.model_unreachable"  # not through the proxy: tried directly
    monkeypatch.delenv("no_proxy")
    assert endpoint_problem(timeout=2)[0] == "cli.model_unreachable"  # the proxy itself gone: nothing answers


def test_the_endpoint_check_is_bounded_while_the_name_is_still_being_looked_up(monkeypatch, slow_dns):
    """A connection's timeout bounds the connect, not the name's lookup before it: with a DNS server that does not
    answer, ``eval --model openai`` waited for the system's resolver (5 s per try, per server) before it said a
    word. The fake resolver here answers only after 20 s, with a server that accepts: the check no longer waits."""
    import socket

    from agentlab.models.openai_model import endpoint_problem
    with socket.create_server(("127.0.0.1", 0)) as server:
        monkeypatch.setenv("AGENTLAB_BASE_URL", slow_dns(server.getsockname()[1]))
        got = endpoint_problem(timeout=0.3)
    assert got is not None and got[0] == "cli.model_unreachable", got


def test_the_models_address_is_used_without_the_space_pasted_after_it():
    """``AGENTLAB_BASE_URL="http://host/v1 "``: the check passed on the stripped address while every request went to
    "/v1%20/chat/completions", and every case was a hand-over."""
    from agentlab.models.openai_model import OpenAIModel
    assert OpenAIModel(base_url="http://127.0.0.1:9/v1 \n").base_url == "http://127.0.0.1:9/v1"


@pytest.mark.parametrize("argv, field, value", [
    (["check-args", "--tools", str(ROOT / "data" / "aftersales_tools.json"), "--name", "lookup_order", "--args",
      '{"order_id": "北京　上海"}'], "args", '{"order_id": "北京　上海"}'),  # an ideographic space inside a value
    (["lint", "–notes.md"], "file", "–notes.md"),  # an operand that opens with a dash
    (["eval", "--suite", "a＝b.jsonl"], "suite", "a＝b.jsonl"),
])
def test_a_command_line_that_parses_as_typed_keeps_its_meaning(argv, field, value, capsys):
    """Read with the full-width reading first, "北京　上海" was two arguments and "–notes.md" an option: only a line
    refused as typed is read again."""
    from agentlab.cli import _parse_as_typed_or_half_width
    ns, code, _ = _parse_as_typed_or_half_width(argv)
    assert ns is not None and code == 0 and getattr(ns, field) == value, capsys.readouterr().err
    assert "读作" not in capsys.readouterr().err


@pytest.mark.parametrize("lang", ["en", "zh"])
def test_a_model_service_that_refuses_the_key_is_said_not_scored(monkeypatch, capsys, tmp_path, lang):
    """With a wrong key eval printed 0% success and 'handed over, nothing wrong written', and exited 0: the
    terminal never said the key was refused."""
    from agentlab.cli import main
    from agentlab.i18n import t
    from agentlab.models.fakeserver import ChatServer, HTTPFault
    server = ChatServer([HTTPFault(401, "Incorrect API key provided")] * 200).start()
    try:
        monkeypatch.setenv("AGENTLAB_BASE_URL", server.base_url)
        monkeypatch.setenv("AGENTLAB_API_KEY", "sk-wrong-key-not-shown")
        code = main(["eval", "--suite", str(ROOT / "data" / "aftersales_cases.jsonl"), "--model", "openai",
                     "--out", str(tmp_path / "out"), "--lang", lang])
    finally:
        server.stop()
    out, err = capsys.readouterr()
    assert code == 2 and t("cli.model_refused", lang, code="UNAUTHENTICATED") in err, err
    assert "Traceback" not in err + out and "sk-wrong" not in err + out


@pytest.mark.parametrize("lang", ["en", "zh"])
def test_a_probe_whose_model_service_refuses_the_key_is_said_not_reported(monkeypatch, capsys, tmp_path, lang):
    """probe with a wrong key wrote a report of no_call cells and "not caught" rows, and exited 0."""
    from agentlab.cli import main
    from agentlab.i18n import t
    from agentlab.models.fakeserver import ChatServer, HTTPFault
    server = ChatServer([HTTPFault(401, "Incorrect API key provided")] * 500).start()
    try:
        monkeypatch.setenv("AGENTLAB_BASE_URL", server.base_url)
        monkeypatch.setenv("AGENTLAB_API_KEY", "sk-wrong-key-not-shown")
        code = main(["probe", "--tools", str(ROOT / "data" / "aftersales_tools.json"), "--model", "openai",
                     "--only", "get_order", "--out", str(tmp_path / "out"), "--lang", lang])
    finally:
        server.stop()
    out, err = capsys.readouterr()
    assert code == 2 and t("cli.model_refused", lang, code="UNAUTHENTICATED") in err, err
    assert not (tmp_path / "out" / "report.json").exists() and "sk-wrong" not in err + out


@pytest.mark.parametrize("lang", ["en", "zh"])
def test_a_model_service_that_fails_every_request_is_said_not_scored(monkeypatch, capsys, tmp_path, lang):
    """An endpoint answering 500 to everything printed 0% success, 100% takeover and 'handed over, nothing wrong
    written 52', and exited 0: figures about the service, held as the agent's."""
    from agentlab.cli import main
    from agentlab.i18n import t
    from agentlab.models.fakeserver import ChatServer
    suite = tmp_path / "cases.jsonl"
    suite.write_text("".join((ROOT / "data" / "aftersales_cases.jsonl").read_text(encoding="utf-8").splitlines(True)[:2]),
                     encoding="utf-8")
    with ChatServer() as server:  # nothing scripted: every request a 500
        monkeypatch.setenv("AGENTLAB_BASE_URL", server.base_url)
        code = main(["eval", "--suite", str(suite), "--model", "openai", "--concurrency", "2", "--json",
                     "--out", str(tmp_path / "out"), "--lang", lang])
    out, err = capsys.readouterr()
    assert code == 2 and t("cli.model_failed", lang, code="UNAVAILABLE") in err, err
    assert not out and "Traceback" not in err


@pytest.mark.parametrize("lang", ["en", "zh"])
def test_runs_a_model_service_failed_are_counted_and_said_beside_the_figures(monkeypatch, capsys, tmp_path, lang):
    """One run answered, one ended on the service's 500s: the table counted the second as the agent's hand-over and
    said nothing of the service."""
    from agentlab.cli import main
    from agentlab.i18n import t
    from agentlab.models.fakeserver import ChatServer
    suite = tmp_path / "cases.jsonl"
    suite.write_text("".join((ROOT / "data" / "aftersales_cases.jsonl").read_text(encoding="utf-8").splitlines(True)[:2]),
                     encoding="utf-8")
    with ChatServer(["I cannot look that up, sorry."]) as server:  # the first run's only reply, then 500s
        monkeypatch.setenv("AGENTLAB_BASE_URL", server.base_url)
        code = main(["eval", "--suite", str(suite), "--model", "openai", "--concurrency", "1",
                     "--out", str(tmp_path / "out"), "--lang", lang])
    out, err = capsys.readouterr()
    assert code == 0, err
    assert t("eval.model_failed", lang, n=1, runs=2, code="UNAVAILABLE") in out, out
    with ChatServer(["I cannot look that up, sorry."]) as server:
        monkeypatch.setenv("AGENTLAB_BASE_URL", server.base_url)
        main(["eval", "--suite", str(suite), "--model", "openai", "--concurrency", "1", "--json",
              "--out", str(tmp_path / "out2"), "--lang", lang])
    assert json.loads(capsys.readouterr().out)["model_failed"] == {"UNAVAILABLE": 1}


def test_a_scripted_models_faults_are_the_suites_not_a_service_failing(capsys, tmp_path):
    """The naive loop's run said "3 of 52 runs ended because the model service failed ... each counts as a hand-over"
    beside a takeover rate that counted none of them: they were the suite's own scripted faults (api_429, api_401)."""
    from agentlab.cli import main
    assert main(["eval", "--suite", str(ROOT / "data" / "aftersales_cases.jsonl"), "--loop", "naive", "--json",
                 "--out", str(tmp_path)]) == 0
    assert json.loads(capsys.readouterr().out)["model_failed"] == {}


@pytest.mark.parametrize("lang", ["en", "zh"])
def test_a_probe_whose_model_service_fails_every_request_is_said_not_reported(monkeypatch, capsys, tmp_path, lang):
    """probe against an endpoint answering 500 wrote a report of no_call cells and exited 0."""
    from agentlab.cli import main
    from agentlab.i18n import t
    from agentlab.models.fakeserver import ChatServer
    with ChatServer() as server:
        monkeypatch.setenv("AGENTLAB_BASE_URL", server.base_url)
        code = main(["probe", "--tools", str(ROOT / "data" / "aftersales_tools.json"), "--model", "openai",
                     "--only", "get_order", "--faults", "wrong_type", "--out", str(tmp_path / "out"), "--lang", lang])
    err = capsys.readouterr().err
    assert code == 2 and t("cli.model_failed", lang, code="UNAVAILABLE") in err, err
    assert not (tmp_path / "out" / "report.json").exists()


def test_evals_json_is_json_a_strict_reader_takes(capsys, tmp_path):
    """eval --json printed "tokens_per_task": NaN (no model reports tokens offline), which JSON.parse and every strict
    reader refuse; a review's report.json wrote null already."""
    from agentlab.cli import main
    assert main(["eval", "--suite", str(ROOT / "data" / "aftersales_cases.jsonl"), "--json", "--out", str(tmp_path)]) == 0
    out = capsys.readouterr().out

    def refuse(name: str) -> None:
        raise ValueError(name)
    report = json.loads(out, parse_constant=refuse)
    assert report["layers"]["experience"]["tokens_per_task"] is None


@pytest.mark.parametrize("lang", ["en", "zh"])
def test_a_probe_says_how_many_requests_the_model_service_failed_beside_its_figures(monkeypatch, capsys, tmp_path, lang):
    """Against a service failing in blocks of requests, probe exited 0 with its cells and no word of the failures."""
    from agentlab.cli import main
    from agentlab.i18n import t
    from agentlab.models.fakeserver import ChatServer, HTTPFault
    # blocks of failures longer than the client's resends: some requests fail after them, most do not
    with ChatServer(([ "I would rather not call a tool."] * 3 + [HTTPFault(500, "overloaded")] * 6) * 40) as server:
        monkeypatch.setenv("AGENTLAB_BASE_URL", server.base_url)
        code = main(["probe", "--tools", str(ROOT / "data" / "aftersales_tools.json"), "--model", "openai", "--only",
                     "get_order", "--faults", "wrong_type,camel_case", "--trials", "2", "--out", str(tmp_path / "out"),
                     "--lang", lang])
    out = capsys.readouterr().out
    failed = json.loads((tmp_path / "out" / "report.json").read_text(encoding="utf-8"))["summary"]["model_failed"]
    assert code == 0 and 0 < failed["failed"] < failed["requests"] and failed["codes"] == ["UNAVAILABLE"], failed
    assert t("probe.model_failed", lang, n=failed["failed"], requests=failed["requests"], code="UNAVAILABLE") in out


def test_a_probe_replays_its_recording_from_the_packages_data_wherever_it_is_installed(monkeypatch, tmp_path):
    """From a pip install the replay looked for site-packages/data/cassettes/ (the checkout's layout), where the
    wheel has agentlab/data/cassettes/."""
    from agentlab import resources
    from agentlab.commands import probe_cassette
    installed = tmp_path / "site-packages" / "agentlab" / "data"
    (installed / "cassettes").mkdir(parents=True)
    monkeypatch.setattr(resources, "_PACKAGED", installed)  # as a wheel lays the data out
    assert probe_cassette("data/aftersales_tools.json", "0.5b") == installed / "cassettes" / "probe-aftersales-0.5b.jsonl"


@pytest.mark.parametrize("option, value", [("--trials", "100000000"), ("--concurrency", "100000")])
def test_eval_refuses_a_count_it_would_run_until_killed(option, value, capsys):
    from agentlab.cli import main
    code = main(["eval", "--suite", str(ROOT / "data" / "aftersales_cases.jsonl"), option, value])
    assert code == 2 and option in capsys.readouterr().err


@pytest.mark.parametrize("lang", ["en", "zh"])
def test_a_real_model_asked_of_the_core_alone_says_which_extra_to_install(monkeypatch, capsys, lang):
    """pip install . then eval --model openai read "unexpected ModuleNotFoundError: No module named 'openai'"."""
    import importlib.util

    from agentlab.cli import main
    from agentlab.i18n import t
    found = importlib.util.find_spec
    monkeypatch.setattr(importlib.util, "find_spec", lambda name, *a: None if name == "openai" else found(name, *a))
    monkeypatch.setenv("AGENTLAB_BASE_URL", "http://127.0.0.1:9/v1")
    code = main(["eval", "--suite", str(ROOT / "data" / "aftersales_cases.jsonl"), "--model", "openai", "--lang", lang])
    err = capsys.readouterr().err
    assert code == 2 and t("cli.needs_openai", lang) in err and "agentlab[openai]" in err, err


def test_a_chinese_evals_progress_bar_counts_in_chinese(capsys, tmp_path):
    """A Chinese run's progress bar read "case/s"."""
    from agentlab.evals import load_cases, run_suite
    run_suite(load_cases()[:3], progress=True, lang="zh")
    err = capsys.readouterr().err
    assert "个用例" in err and "case/s" not in err, err[-300:]


@pytest.mark.parametrize("lang", ["en", "zh"])
def test_a_command_run_with_another_python_than_the_checkouts_points_to_its_environment(monkeypatch, capsys, lang):
    """``python -m agentlab site check`` with the system's Python said only "pip install 'agentlab[site]'", while the
    checkout's own environment, beside it, had every package."""
    from pathlib import Path

    import agentlab.cli as cli
    from agentlab.i18n import t
    venv = Path(cli.__file__).resolve().parent.parent / ".venv"
    if not (venv / "bin" / "python").exists():
        pytest.skip("this checkout has no .venv (python run.py setup makes it)")
    monkeypatch.setattr(sys, "prefix", "/usr")  # as the system's Python sees itself
    monkeypatch.setitem(sys.modules, "fastapi", None)  # which lacks the site's packages
    assert cli.main(["site", "check", "--lang", lang]) == 2
    err = capsys.readouterr().err
    assert "agentlab[site]" in err and t("cli.use_checkout_python", lang, python="P", command="C").split("P")[0] in err, err
    assert "bin/python -m agentlab site" in err, err
    monkeypatch.setattr(sys, "prefix", str(venv))  # run with the checkout's own Python: nothing more to say
    assert cli.main(["site", "check", "--lang", lang]) == 2
    assert "bin/python -m agentlab" not in capsys.readouterr().err
