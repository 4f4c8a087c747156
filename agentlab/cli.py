"""``python -m agentlab``: small commands for engineers.

    check-args --tools FILE --name TOOL --args RAW [--lang zh] [--clean]
        print exactly what the model would be told; exit 0 valid, 1 invalid, 2 usage error
    lint FILE [--lang zh] [--json]
        print the schema linter's findings; exit 1 if any error-level finding

Every command answers a bad input (a missing or malformed file, a number out of range)
with one line on stderr that names the file and what was expected, and exit code 2;
never a traceback. ``AGENTLAB_DEBUG=1`` shows the traceback of an unexpected failure.
"""
from __future__ import annotations

import argparse
import json
import os
import sys
import threading
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from functools import cache, partial
from typing import Any, NoReturn

from .commands import EXTRA as _EXTRA
from .commands import emit, load_registry
from .i18n import LANGS, Lang, colon, columns, joined, label, pad, t
from .serve_commands import SERVE

__all__ = ["COMMANDS", "build_parser", "main"]

EXTRA = {**_EXTRA, **SERVE}  # every command beyond check-args and lint, in the order help lists them

PROG = "python -m agentlab"


class _Formatter(argparse.HelpFormatter):
    """argparse's help, wrapped by the columns text takes (a Chinese character two) and never inside a run of Latin
    letters, digits or punctuation: textwrap broke "$AGENTLAB_STORE" in two, and a line of Chinese, one long "word" to
    it, anywhere."""

    def _split_lines(self, text: str, width: int) -> list[str]:
        import re
        lines, line, used = [], "", 0
        for piece in re.findall(r"[\x21-\x7e]+|\s+|.", " ".join(text.split())):
            if line and used + columns(piece) > width and not piece.isspace():
                lines.append(line.rstrip())
                line, used = "", 0
            if not (piece.isspace() and not line):
                line, used = line + piece, used + columns(piece)
        return [*lines, line.rstrip()] if line.strip() else lines

    def __init__(self, prog: str, *, lang: Lang = "en", **kwargs: Any):
        super().__init__(prog, **kwargs)
        self._colon = colon(lang).rstrip()

    # argparse ends each section's title with an ASCII colon of its own ("%s:"), "位置参数:" in Chinese: the title
    # is marked where it starts and the mark with its colon is replaced by the language's own when the help is made
    def start_section(self, heading: str | None) -> None:
        super().start_section(f"{heading}\0" if heading else heading)

    def format_help(self) -> str:
        return super().format_help().replace("\0:", self._colon)


class _Parser(argparse.ArgumentParser):
    """argparse with a usage error as one line on stderr and exit 2 (its usage block is in --help)."""

    def __init__(self, *args: Any, lang: Lang = "en", **kwargs: Any):
        # no abbreviated options: "--lan zh" ran the command in Chinese while its usage error, read before parsing,
        # was English (one spelling of each option, read the same way by both)
        kwargs.setdefault("allow_abbrev", False)
        kwargs.setdefault("formatter_class", partial(_Formatter, lang=lang))
        super().__init__(*args, **kwargs)
        self.lang = lang

    def add_subparsers(self, **kwargs: Any) -> Any:
        # a command's own commands (site keys create) speak the language their parent was built in
        kwargs.setdefault("parser_class", partial(_Parser, lang=self.lang))
        # named in the reader's words where argparse names it (its usage line, "argument command: invalid choice",
        # "the following arguments are required"): by its dest it read "参数 keys_command" to a Chinese reader
        kwargs.setdefault("metavar", t("cli.command", self.lang))
        return super().add_subparsers(**kwargs)

    def _check_value(self, action: argparse.Action, value: Any) -> None:
        # argparse lists the choices itself, each in ASCII quotes and joined with ", " ('check-args', 'lint'): a
        # Chinese reader gets them listed the Chinese way (check-args、lint), in the catalogue's sentence
        if self.lang != "en" and action.choices is not None and value not in action.choices:
            msg = argparse._("invalid choice: %(value)r (choose from %(choices)s)")  # type: ignore[attr-defined]
            raise argparse.ArgumentError(action, msg % {"value": value, "choices": joined(map(str, action.choices),
                                                                                          self.lang, "list")})
        super()._check_value(action, value)

    def error(self, message: str) -> NoReturn:
        print(t("cli.usage", self.lang, message=message, prog=self.prog), file=sys.stderr)
        raise SystemExit(2)


def cmd_check_args(ns: argparse.Namespace) -> int:
    reg = load_registry(ns.tools, lang=ns.lang)
    checked = reg.check(ns.name, ns.args, clean=ns.clean)
    emit(checked.render(ns.lang), json_text=True)
    return 0 if checked.ok else 1  # the verdict, whether or not stdout could take the text


def cmd_lint(ns: argparse.Namespace) -> int:
    from .lint import lint
    reg = load_registry(ns.file, lang=ns.lang, close=False)
    findings = lint(reg, lang=ns.lang)
    if ns.json:
        emit(json.dumps([f.to_dict() for f in findings], ensure_ascii=False, indent=2), json_text=True)
    else:
        for f in findings:
            emit(f"{pad(label(f.severity, ns.lang), 7)} {f.rule} {f.location}{colon(ns.lang)}{f.message}\n        -> {f.suggestion}")
        emit(t("cli.lint.findings", ns.lang, n=len(findings)))
    return 1 if any(f.severity == "error" for f in findings) else 0


COMMANDS: dict[str, Callable[[argparse.Namespace], int]] = {
    "check-args": cmd_check_args,
    "lint": cmd_lint,
}


def build_parser(lang: Lang = "en") -> argparse.ArgumentParser:
    p = _Parser(prog=PROG, description="agentlab: reliable tool-calling agents, hands on.", lang=lang)
    # before the command as after it ("python -m agentlab --lang zh" read zh as a command's name)
    p.add_argument("--lang", choices=("en", "zh"), default="en", help="the language help, errors and output speak")
    sub = p.add_subparsers(dest="command")
    c = sub.add_parser("check-args", help="check one tool call's raw arguments like the model boundary does", lang=lang)
    c.add_argument("--tools", required=True, help="JSON file of OpenAI-format tool specs")
    c.add_argument("--name", required=True, help="tool name the model asked for")
    c.add_argument("--args", required=True, help="the raw arguments string, exactly as the model sent it")
    c.add_argument("--lang", choices=("en", "zh"), default="en")
    c.add_argument("--clean", action="store_true", help="clean values first ('45元' -> 45) and report what changed")
    li = sub.add_parser("lint", help="lint a JSON file of tool specs", lang=lang)
    li.add_argument("file")
    li.add_argument("--lang", choices=("en", "zh"), default="en")
    li.add_argument("--json", action="store_true")
    for name, (help_, configure, _fn) in EXTRA.items():  # a help that is a catalogue key is said in ``lang``
        configure(sub.add_parser(name, help=t(help_, lang) if help_.startswith("kit.") else help_, lang=lang))
    return p


def _lang_of(argv: list[str]) -> Lang:
    """``--lang zh`` read before parsing, so that even a usage error speaks the user's language; without it,
    ``AGENTLAB_LANG``, then the locale's own (``LC_ALL``, ``LC_MESSAGES``, ``LANG``: ``zh_CN.UTF-8`` is Chinese)."""
    given = None
    for i, a in enumerate(argv):
        if a == "--":  # what follows is operands (a file may be called --lang)
            break
        if a.startswith("--lang=") or (a == "--lang" and i + 1 < len(argv)):
            given = a.partition("=")[2] if "=" in a else argv[i + 1]  # the last one wins, as argparse reads it
    if given is not None:
        return "zh" if given == "zh" else "en"
    for name in ("AGENTLAB_LANG", "LC_ALL", "LC_MESSAGES", "LANG"):
        value = os.environ.get(name, "")
        if value:
            return "zh" if value.lower().startswith("zh") else "en"
    return "en"


@cache
def _cli_said() -> dict[str, dict[str, dict[str, str]]]:
    """``{lang: {"help": {English help: its translation}, "argparse": {argparse's message: its translation}}}``,
    from ``data/i18n/cli.json``: the help of every command and option, and argparse's own words (its usage line, its
    section titles, its usage errors), which Python ships in English alone."""
    from .resources import data_file
    return json.loads(data_file("i18n/cli.json").read_text(encoding="utf-8"))


#: the table of argparse's words the calling thread parses with (see _argparse_says); unset: argparse's own
_here = threading.local()
_said_lock = threading.Lock()


def _translated_by_thread() -> None:
    """argparse asks its module's ``_`` and ``ngettext`` for each of its words: both are replaced, once, by functions
    that answer from the calling thread's table while it parses (:func:`_argparse_says`) and ask argparse's own
    functions otherwise. Swapped in and out around each parse instead, another thread's argparse (a server's, a
    notebook's) said Chinese while one command parsed."""
    with _said_lock:
        if getattr(argparse._, "agentlab", False):  # type: ignore[attr-defined]
            return
        own, own_n = argparse._, argparse.ngettext  # type: ignore[attr-defined]

        def said(text: str) -> str:
            table = getattr(_here, "table", None)
            return own(text) if table is None else table.get(text, text)

        def said_n(one: str, many: str, n: int) -> str:
            table = getattr(_here, "table", None)
            if table is None:
                return own_n(one, many, n)
            text = one if n == 1 else many
            return table.get(text, text)
        said.agentlab = said_n.agentlab = True  # type: ignore[attr-defined]
        argparse._, argparse.ngettext = said, said_n  # type: ignore[attr-defined]


@contextmanager
def _argparse_says(lang: Lang) -> Iterator[None]:
    """argparse's own words in ``lang`` while the parser is built, parses and prints its help: argparse asks
    ``gettext`` for each (``_("usage: ")``, ``_("the following arguments are required: %s")``), and the words are
    looked up here instead, in this thread only; anything not in the table stays as argparse says it."""
    table = _cli_said().get(lang, {}).get("argparse", {})
    if not table:
        yield
        return
    _translated_by_thread()
    before = getattr(_here, "table", None)
    _here.table = table
    try:
        yield
    finally:
        _here.table = before


def _speak(parser: argparse.ArgumentParser, lang: Lang) -> None:
    """Every command's ``--lang`` defaults to ``lang``: the language the help and the usage errors were read in (from
    the locale, say) is the one the command then answers in."""
    for action in parser._actions:
        if action.dest == "lang" and action.default == "en" and action.choices is not None and lang in action.choices:
            action.default = lang  # a --lang whose default is another (the trainer's "both") keeps it
        if isinstance(action, argparse._SubParsersAction):
            for sub in dict.fromkeys(action.choices.values()):
                _speak(sub, lang)


def _say_help(parser: argparse.ArgumentParser, lang: Lang) -> None:
    """Every help and description of ``parser`` and its commands, said in ``lang`` (data/i18n/cli.json); an option
    its command gave no help (--lang, --port, --model...) gets the one its name has there ("unsaid")."""
    unsaid = _cli_said()["en"]["unsaid"]
    said = _cli_said().get(lang, {}).get("help", {})
    parser.description = said.get(parser.description or "", parser.description)
    for action in parser._actions:
        if not action.help and action.option_strings and action.dest in unsaid:
            action.help = unsaid[action.dest]
        if action.help and action.help != argparse.SUPPRESS:
            action.help = said.get(action.help, action.help)
        if isinstance(action, argparse._SubParsersAction):
            for choice in action._choices_actions:
                choice.help = said.get(choice.help or "", choice.help)
            for sub in dict.fromkeys(action.choices.values()):
                _say_help(sub, lang)


def _parsed(argv: list[str]) -> tuple[argparse.Namespace | None, int, Lang]:
    """``argv`` parsed as the command line reads it: (the options, 0, the reader's language), or (None, the exit code,
    the language) for a usage error (already said, in the reader's language) or ``--help`` (printed)."""
    lang = _lang_of(argv)
    with _argparse_says(lang):
        parser = build_parser(lang)
        _say_help(parser, lang)
        _speak(parser, lang)
        try:
            return parser.parse_args(argv), 0, lang
        except SystemExit as exc:  # a usage error (already printed) or --help
            return None, exc.code if isinstance(exc.code, int) else 2, lang


def check_usage(argv: list[str]) -> int | None:
    """The exit code of ``python -m agentlab ARGV`` when its options are wrong (said on stderr, in the reader's
    language) or ``--help`` was asked for (printed); None when they are right. Run nothing: ``python run.py local``
    reads its options with it before installing the local model, the standard library alone being there."""
    ns, code, _ = _parsed(argv)
    return code if ns is None else None


def main(argv: list[str] | None = None) -> int:
    argv = list(sys.argv[1:] if argv is None else argv)
    ns, code, lang = _parsed(argv)
    if ns is None:
        return code
    if ns.command is None:
        print(t("cli.no_command", lang, commands=joined([*COMMANDS, *EXTRA], lang, "list"), prog=PROG), file=sys.stderr)
        return 2
    # the command's own --lang, when it names one language: the trainer's "both" (its room page speaks both) left
    # its errors in English for a reader who had asked for Chinese (--lang zh, AGENTLAB_LANG, the locale)
    given = getattr(ns, "lang", lang)
    lang = given if given in LANGS else lang
    fn = COMMANDS.get(ns.command) or EXTRA[ns.command][2]
    try:
        return fn(ns)
    except KeyboardInterrupt:
        return 130
    except Exception as exc:
        localized = getattr(exc, "localized", None)  # InputError, SuiteError, LocalModelMissing
        if callable(localized):
            message = localized(lang)
        elif os.environ.get("AGENTLAB_DEBUG"):
            raise
        else:  # a bug or a case nobody foresaw: still one line, and a way to see more
            message = t("cli.unexpected", lang, kind=type(exc).__name__, detail=str(exc)[:200])
        print(t("cli.error", lang, message=" ".join(message.split())), file=sys.stderr)
        return 2
