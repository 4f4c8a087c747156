"""The command line that speaks its reader's language (agentlab/cmdline.py), for every parser built on it: the
package's (``python -m agentlab``) and the workshop hub's (``python run.py hub``)."""
import argparse
import re

import pytest

from agentlab import cmdline
from agentlab.cli import build_parser
from agentlab.hub.launch import hub_command, hub_parser, hub_usage
from agentlab.i18n import t

CJK = re.compile("[\u4e00-\u9fff]")
PARSERS = {"agentlab": build_parser, "hub": hub_parser}


def _helps(parser, top=True):
    """(what, its help) of ``parser``'s description and every option and command of it and of its commands."""
    if top:
        yield "description", parser.description
    for a in parser._actions:
        if a.option_strings:
            yield "/".join(a.option_strings), a.help
        if isinstance(a, argparse._SubParsersAction):
            yield from ((c.dest, c.help) for c in a._choices_actions)
            for sub in dict.fromkeys(a.choices.values()):
                yield from _helps(sub, top=False)


@pytest.mark.parametrize("name", PARSERS)
def test_every_option_says_what_it_is_for_in_both_languages(name):
    """The hub's options had their help in English alone (and --admin none): a Chinese trainer read ``run.py hub
    --help`` in English under a Chinese usage line."""
    for lang in ("en", "zh"):
        with cmdline.argparse_says(lang):
            parser = PARSERS[name](lang)
            cmdline.say_help(parser, lang)
        said = [(what, text) for what, text in _helps(parser) if text != argparse.SUPPRESS]
        bare = [what for what, text in said if not text]
        assert not bare, (name, lang, bare)
        if lang == "zh":
            english = [text for _, text in said if not CJK.search(text)]
            assert not english, (name, english)


@pytest.mark.parametrize("lang, words", [("en", "'x' is not a whole number"), ("zh", "“x”不是整数")])
def test_a_number_option_given_words_is_said_in_the_readers_words(capsys, lang, words):
    """argparse names the type by Python's function: "invalid int value: 'x'", in Chinese "取值无效（应为 int）"."""
    from agentlab.cli import main
    assert main(["--lang", lang, "eval", "--suite", "s.jsonl", "--trials", "x"]) == 2
    assert hub_usage(["--lang", lang, "--users", "x"]) == 2
    err = capsys.readouterr().err
    assert err.count(words) == 2 and "int" not in err, err


@pytest.mark.parametrize("lang, words", [("en", "'-1' is less than 0"), ("zh", "“-1”小于 0")])
def test_a_count_below_zero_is_refused_in_the_readers_words(capsys, lang, words):
    """--seats -1 read as no cap at all: a count is 0 or more, and the hub says so before it starts anything."""
    assert hub_usage(["--lang", lang, "--seats", "-1"]) == 2
    assert hub_usage(["--lang", lang, "--seats", "0"]) is None
    assert words in capsys.readouterr().err


@pytest.mark.parametrize("argv", [["--userz", "3"], ["--users"], ["--lang", "fr"], ["--port", "a"]])
def test_the_hub_says_a_mistyped_option_in_the_readers_language(capsys, monkeypatch, argv):
    """The hub's usage errors were argparse's English whatever the reader asked for (its own lines were Chinese)."""
    for name in ("AGENTLAB_LANG", "LC_ALL", "LC_MESSAGES"):
        monkeypatch.delenv(name, raising=False)
    monkeypatch.setenv("LANG", "zh_CN.UTF-8")
    assert hub_command(argv) == 2
    err = capsys.readouterr().err
    assert err.startswith("错误：") and CJK.search(err) and "error" not in err and "usage" not in err, err
    assert hub_command(["--help"]) == 0
    out = capsys.readouterr().out
    assert out.startswith("用法：python run.py hub") and "预计的学员人数" in out, out


def test_a_mistyped_language_is_refused_in_the_locales_language(capsys, monkeypatch):
    """``--lang fr`` made the reader's language English, so a Chinese locale was told its mistake in English."""
    from agentlab.cli import main
    for name in ("AGENTLAB_LANG", "LC_ALL", "LC_MESSAGES"):
        monkeypatch.delenv(name, raising=False)
    monkeypatch.setenv("LANG", "zh_CN.UTF-8")
    assert cmdline.reader_lang(["--lang", "fr"]) == "zh"
    assert main(["lint", "x.json", "--lang", "fr"]) == 2
    err = capsys.readouterr().err
    assert "“fr”" in err and "en、zh" in err and "invalid" not in err, err


@pytest.mark.parametrize("argv, help_of", [
    (["lint", "x.json", "--bogus"], "python -m agentlab lint --help"),
    (["site", "keys", "create", "--name", "a", "--bogus"], "python -m agentlab site keys create --help"),
    (["--bogus"], "python -m agentlab --help"),
])
@pytest.mark.parametrize("lang", ["en", "zh"])
def test_an_unknown_option_points_to_the_help_of_the_command_typed(capsys, argv, help_of, lang):
    """argparse says an option nobody knows from the top of the program: ``lint x.json --bogus`` was sent to the whole
    program's help (its list of commands) instead of lint's."""
    from agentlab.cli import main
    assert main(["--lang", lang, *argv]) == 2
    err = capsys.readouterr().err
    assert "--bogus" in err and help_of in err, err


def test_run_py_local_names_itself_in_its_usage(capsys):
    """``python run.py local --help`` printed ``usage: python -m agentlab local``: a command the reader had not typed."""
    from agentlab.cli import check_usage
    assert check_usage(["local", "--help"], "python run.py") == 0
    assert capsys.readouterr().out.startswith("usage: python run.py local ")
    assert check_usage(["local", "--bogus"], "python run.py") == 2
    assert "see python run.py local --help" in capsys.readouterr().err


@pytest.mark.parametrize("typed, read, said", [
    (["demo", "——lang", "zh"], ["demo", "--lang", "zh"], [("——lang", "--lang")]),  # "--" autocorrected, twice
    (["demo", "—lang", "zh"], ["demo", "--lang", "zh"], [("—lang", "--lang")]),
    (["demo", "－－lang", "zh"], ["demo", "--lang", "zh"], [("－－lang", "--lang")]),  # full-width hyphens
    (["demo", "--lang＝zh"], ["demo", "--lang=zh"], [("--lang＝zh", "--lang=zh")]),
    (["demo", "--lang", "ｚｈ"], ["demo", "--lang", "zh"], [("ｚｈ", "zh")]),
    (["demo", "--lang", "ZH"], ["demo", "--lang", "ZH"], []),  # its case is the parser's to read, and say (below)
    (["demo　--lang", "zh"], ["demo", "--lang", "zh"], [("demo　--lang", "demo --lang")]),  # an ideographic space
    (["demo", "——ｌａｎｇ＝ＺＨ"], ["demo", "--lang=ZH"], [("——ｌａｎｇ＝ＺＨ", "--lang=ZH")]),
])
def test_options_typed_with_full_width_marks_are_read_as_half_width(typed, read, said):
    assert cmdline.half_width(typed) == (read, said)


@pytest.mark.parametrize("operands", [["--name", "张三"], ["note", "——这是中文"], ["--", "——lang"], ["--data", "./数据"],
                                      ["--admin-password", "——Secret1"], ["--api-key", "ＡＢＣ"]])  # never said back
def test_operands_and_what_follows_two_dashes_are_left_as_typed(operands):
    assert cmdline.half_width(operands) == (operands, [])


@pytest.mark.parametrize("typed", [["demo", "——lang", "zh", "--scenario", "nope"],
                                   ["demo", "--lang＝ｚｈ", "--scenario", "nope"],
                                   ["demo　——lang", "zh", "--scenario", "nope"]])
def test_the_package_reads_a_chinese_keyboards_options_and_answers_in_chinese(capsys, monkeypatch, typed):
    """``python -m agentlab demo ——lang zh`` was argparse's English "unrecognized arguments": the language asked for
    was never seen. Now the options are read, said once, and the real mistake (a scenario that does not exist) is
    said in Chinese."""
    from agentlab.cli import main
    monkeypatch.setenv("LANG", "C.UTF-8")
    monkeypatch.delenv("AGENTLAB_LANG", raising=False)
    assert main(typed) == 2
    err = capsys.readouterr().err
    assert err.startswith("（已把 ") and "无效的取值" in err and "unrecognized" not in err, err


@pytest.mark.parametrize("typed, said, lang", [
    (["demo", "--scenario", "ｅｘｐｅｎｓｅ", "--lang", "zh"], "（已把 ｅｘｐｅｎｓｅ 读作 expense，", "zh"),
    (["demo", "--scenario＝ｅｘｐｅｎｓｅ", "--lang", "zh"], "（已把 ｅｘｐｅｎｓｅ 读作 expense，", "zh"),
    (["demo", "--scenario", "ＥＸＰＥＮＳＥ"], "(read ＥＸＰＥＮＳＥ as expense,", "en"),
    (["demo", "--lang=zh", "--fault=ＣＡＭＥＬ_ＣＡＳＥ", "--scenario", "expense"], "读作 camel_case，", "zh"),
    (["ｄｅｍｏ", "--scenario", "expense", "--lang", "zh"], "（已把 ｄｅｍｏ 读作 demo，", "zh"),
    (["demo", "--scenario", "expense", "--lang", "中文"], "（已把 中文 读作 zh，", "zh"),
    (["demo", "--scenario", "expense", "--lang", "Chinese"], "（已把 Chinese 读作 zh，", "zh"),
])
def test_a_choice_typed_with_a_chinese_keyboard_or_named_in_words_is_read_and_said(capsys, monkeypatch, typed, said,
                                                                                   lang):
    """Only ``--lang``'s value was read as half-width: ``--scenario ｅｘｐｅｎｓｅ`` was refused beside the choice
    ``expense``, which looks the same on screen, and ``--lang 中文`` was refused in English. A value is read as the one
    choice it spells (its letters half-width, its case aside, a language by its name), and said so in a line."""
    from agentlab.cli import _parse_as_typed_or_half_width
    monkeypatch.setenv("LANG", "C.UTF-8")
    monkeypatch.delenv("AGENTLAB_LANG", raising=False)
    ns, code, got = _parse_as_typed_or_half_width(typed)
    err = capsys.readouterr().err
    assert code == 0 and ns is not None and got == lang, err
    assert ns.command == "demo" and ns.scenario in ("expense", None) and ns.lang == lang, ns
    assert said in err and "invalid" not in err and "无效" not in err, err


@pytest.mark.parametrize("typed", [["demo", "--scenario", "ｎｏｐｅ"], ["demo", "--scenario", "exp"],
                                   ["demo", "--lang", "法语"]])
def test_a_value_that_spells_no_choice_is_still_refused(capsys, typed):
    from agentlab.cli import main
    assert main(typed) == 2
    assert "读作" not in capsys.readouterr().err


def test_the_readers_language_named_in_words_is_the_language_of_the_errors(monkeypatch):
    monkeypatch.setenv("LANG", "C.UTF-8")
    monkeypatch.delenv("AGENTLAB_LANG", raising=False)
    assert cmdline.reader_lang(["--lang", "中文"]) == "zh" and cmdline.reader_lang(["--lang=ＺＨ"]) == "zh"
    assert cmdline.reader_lang(["--lang", "英文"]) == "en" and cmdline.lang_word("简体中文") == "zh"


def test_chinese_help_never_starts_a_line_with_a_closing_mark_nor_ends_one_with_an_opening_one():
    """argparse's help wrapped Chinese by the column alone: a lone ）or a leading 、 started a line (``probe --help``)."""
    fmt = cmdline.Formatter("prog", lang="zh")
    text = "（默认：.agentlab-gateway）每个故障的名字：clean、camel_case、drop_required、wrong_type（大小写都行）。" * 3
    for width in range(12, 60):
        lines = fmt._split_lines(text, width)
        assert "".join(lines).replace(" ", "") == text.replace(" ", "")
        assert not any(line[:1] in cmdline._NO_START for line in lines), (width, lines)
        assert not any(line[-1:] in cmdline._NO_END for line in lines[:-1]), (width, lines)
        if width >= 20:  # wider than its longest run of Latin letters and a mark: no line past the width
            assert all(cmdline.columns(line) <= width for line in lines), (width, lines)


@pytest.mark.parametrize("lang", ["en", "zh"])
def test_the_hubs_sizes_and_spaces_typed_on_a_chinese_keyboard_are_read_or_refused_in_a_line(lang, capsys):
    """``--mem-limit ２Ｇ`` ended in a traceback (ValueError in parse_size) and ``--users　3`` (an ideographic space
    inside one word) was an unrecognized argument, though the package's commands read both."""
    from agentlab.cmdline import parse_typed
    ns, code, _ = parse_typed(hub_parser, ["--lang", lang, "--mem-limit", "２Ｇ", "--disk-limit", "4ＧＢ",
                                           "--account-mem-limit", "512m", "--users\u30003"])
    assert code == 0 and (ns.mem_limit, ns.disk_limit, ns.account_mem_limit, ns.users) == (2 << 30, 4 << 30, 512 << 20, 3)
    assert t("cli.read_half_width", lang, typed="--users\u30003", read="--users 3") in capsys.readouterr().err
    for bad in ("两G", "-1G", "G", "2X", "inf"):
        assert hub_usage(["--lang", lang, f"--mem-limit={bad}"]) == 2, bad
        err = capsys.readouterr().err
        assert t("cli.not_size", lang, value=bad) in err and "Traceback" not in err, err
    assert hub_usage(["--lang", lang, "--users\u30003"]) is None  # run.py's check before installing: read, said once
    assert capsys.readouterr().err == ""  # (by the hub as it starts, not twice)


@pytest.mark.parametrize("typed", ["zh-CN", "ZH", "Chinese"])
def test_a_language_in_another_case_or_a_region_is_said_as_read_for_what_it_was(typed):
    """``python run.py hub --lang zh-CN`` said "read zh-CN as zh-cn: options take half-width marks", the wrong reason
    (no full-width mark was typed), then a second line. It is read once, as the choice it names, and said so."""
    import subprocess
    import sys

    from conftest import ROOT
    done = subprocess.run([sys.executable, str(ROOT / "run.py"), "hub", "--lang", typed, "--users", "abc"], cwd=ROOT,
                          capture_output=True, text=True, timeout=120)
    said = [line for line in done.stderr.splitlines() if line.strip()]
    assert done.returncode == 2 and said[0] == t("cli.read_choice", "zh", typed=typed, read="zh"), done.stderr
    assert len(said) == 2 and said[1].startswith("错误："), done.stderr  # and then the real mistake, in Chinese
