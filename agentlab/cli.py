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
from collections.abc import Callable
from pathlib import Path

from .cmdline import Parser, parse, parse_typed
from .commands import EXTRA as _EXTRA
from .commands import emit, load_registry
from .i18n import LANGS, Lang, colon, joined, label, pad, t
from .serve_commands import SERVE

__all__ = ["COMMANDS", "build_parser", "main"]

EXTRA = {**_EXTRA, **SERVE}  # every command beyond check-args and lint, in the order help lists them

PROG = "python -m agentlab"


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


def build_parser(lang: Lang = "en", prog: str = PROG) -> argparse.ArgumentParser:
    p = Parser(prog=prog, description="agentlab: reliable tool-calling agents, hands on.", lang=lang)
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


def check_usage(argv: list[str], prog: str = PROG) -> int | None:
    """The exit code of ``python -m agentlab ARGV`` when its options are wrong (said on stderr, in the reader's
    language) or ``--help`` was asked for (printed); None when they are right. Run nothing: ``python run.py local``
    reads its options with it before installing the local model, the standard library alone being there, and names
    itself (``prog``) in the usage it prints: the reader typed run.py, not ``python -m agentlab``."""
    ns, code, _ = parse(lambda lang: build_parser(lang, prog), argv)
    return code if ns is None else None


def said_safely(message: str) -> str:
    """An error for the terminal in one line, less credentials and with other people's data masked: the message
    may quote what a user's file held (a log line's keys, an exception a module raised on import), and a terminal
    ends up in CI logs and screenshots."""
    from .errors import mask_personal, redact_secrets
    return mask_personal(redact_secrets(" ".join(message.split())))


def _parse_as_typed_or_half_width(argv: list[str]) -> tuple[argparse.Namespace | None, int, Lang]:
    """The package's command line read as typed, else with a Chinese keyboard's marks read (:func:`parse_typed`)."""
    return parse_typed(build_parser, argv)


def main(argv: list[str] | None = None) -> int:
    argv = list(sys.argv[1:] if argv is None else argv)
    ns, code, lang = _parse_as_typed_or_half_width(argv)
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
    except KeyboardInterrupt:  # said in a line, as run.py says it: nothing of Python's traceback
        print("\n" + t("cli.interrupted", lang, command=ns.command), file=sys.stderr)
        return 130
    except Exception as exc:
        localized = getattr(exc, "localized", None)  # InputError, SuiteError, LocalModelMissing
        if callable(localized):
            message = localized(lang)
        elif os.environ.get("AGENTLAB_DEBUG"):
            raise
        else:  # a bug or a case nobody foresaw: still one line, and a way to see more
            message = t("cli.unexpected", lang, kind=type(exc).__name__, detail=str(exc)[:200])
        print(t("cli.error", lang, message=said_safely(message)), file=sys.stderr)
        if getattr(exc, "key", None) in _NEEDS_PACKAGES:  # run with another Python than the checkout's own
            python = _checkout_python()
            if python is not None:
                print(t("cli.use_checkout_python", lang, python=python, command=ns.command), file=sys.stderr)
        return 2


#: the errors that say a package is missing from the Python the command runs with
_NEEDS_PACKAGES = frozenset({"site.needs_extra", "cli.needs_openai", "local.no_runtime"})


def _checkout_python() -> str | None:
    """The checkout's own environment's Python (``.venv``, made by run.py), when the command runs with another: a
    reader who typed ``python -m agentlab site check`` with the system's Python was told to pip install an extra
    the environment beside it already has. None when there is none, or it is this one."""
    venv = Path(__file__).resolve().parent.parent / ".venv"
    python = venv / ("Scripts/python.exe" if os.name == "nt" else "bin/python")
    if not python.exists() or Path(sys.prefix).resolve() == venv.resolve():
        return None
    try:
        return str(python.relative_to(Path.cwd()))
    except ValueError:
        return str(python)
