"""``python -m agentlab``: small commands for engineers.

    check-args --tools FILE --name TOOL --args RAW [--lang zh] [--clean]
        print exactly what the model would be told; exit 0 valid, 1 invalid, 2 usage error
    lint FILE [--lang zh] [--json]
        print the schema linter's findings; exit 1 if any error-level finding
"""
from __future__ import annotations

import argparse
import json
import sys
from collections.abc import Callable

from .commands import EXTRA

__all__ = ["COMMANDS", "build_parser", "main"]


class _Parser(argparse.ArgumentParser):
    def error(self, message: str) -> None:  # a usage error is exit 2, with no traceback
        self.print_usage(sys.stderr)
        print(f"error: {message}", file=sys.stderr)
        raise SystemExit(2)


def _load_registry(path: str, lang: str):
    from .tools import Registry
    return Registry.from_json(path, lang=lang)


def cmd_check_args(ns: argparse.Namespace) -> int:
    reg = _load_registry(ns.tools, ns.lang)
    checked = reg.check(ns.name, ns.args, clean=ns.clean)
    print(checked.render(ns.lang))
    return 0 if checked.ok else 1


def cmd_lint(ns: argparse.Namespace) -> int:
    from .lint import lint
    from .tools import Registry
    reg = Registry.from_json(ns.file, close=False)
    findings = lint(reg, lang=ns.lang)
    if ns.json:
        print(json.dumps([f.to_dict() for f in findings], ensure_ascii=False, indent=2))
    else:
        for f in findings:
            print(f"{f.severity:7} {f.rule} {f.location}: {f.message}\n        -> {f.suggestion}")
        print(f"{len(findings)} finding(s)" if ns.lang == "en" else f"共 {len(findings)} 条发现")
    return 1 if any(f.severity == "error" for f in findings) else 0


COMMANDS: dict[str, Callable[[argparse.Namespace], int]] = {
    "check-args": cmd_check_args,
    "lint": cmd_lint,
}


def build_parser() -> argparse.ArgumentParser:
    p = _Parser(prog="python -m agentlab", description="agentlab: reliable tool-calling agents, hands on.")
    sub = p.add_subparsers(dest="command", parser_class=_Parser)
    c = sub.add_parser("check-args", help="check one tool call's raw arguments like the model boundary does")
    c.add_argument("--tools", required=True, help="JSON file of OpenAI-format tool specs")
    c.add_argument("--name", required=True, help="tool name the model asked for")
    c.add_argument("--args", required=True, help="the raw arguments string, exactly as the model sent it")
    c.add_argument("--lang", choices=("en", "zh"), default="en")
    c.add_argument("--clean", action="store_true", help="clean values first ('45元' -> 45) and report what changed")
    li = sub.add_parser("lint", help="lint a JSON file of tool specs")
    li.add_argument("file")
    li.add_argument("--lang", choices=("en", "zh"), default="en")
    li.add_argument("--json", action="store_true")
    for name, (help_, configure, _fn) in EXTRA.items():
        configure(sub.add_parser(name, help=help_))
    return p


def main(argv: list[str] | None = None) -> int:
    parser = build_parser()
    ns = parser.parse_args(argv)
    if ns.command is None:
        parser.print_help()
        return 2
    fn = COMMANDS.get(ns.command) or EXTRA[ns.command][2]
    try:
        return fn(ns)
    except BrokenPipeError:  # `... | head`
        return 0
    except FileNotFoundError as exc:
        print(f"error: no such file: {exc.filename}", file=sys.stderr)
    except json.JSONDecodeError as exc:
        print(f"error: the input file is not valid JSON ({exc.msg} at line {exc.lineno})", file=sys.stderr)
    except (ValueError, KeyError, TypeError) as exc:
        print(f"error: {exc}", file=sys.stderr)
    return 2
