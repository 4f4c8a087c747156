"""A command line that speaks its reader's language: help, usage errors and argparse's own words.

Every command a person types (``python -m agentlab ...``, ``python run.py hub``) is read by a :class:`Parser`
through :func:`parse`: the reader's language is read before parsing (``--lang``, ``AGENTLAB_LANG``, the locale), so a
usage error already speaks it; the help of every option comes from ``data/i18n/cli.json``, and so do argparse's own
words ("usage:", "the following arguments are required"), which Python ships in English alone. The standard library
and the catalogue alone: ``run.py`` reads a command's options with it before anything is installed.
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

from .i18n import Lang, colon, columns, joined, t

__all__ = ["Formatter", "Parser", "argparse_says", "count", "full_to_half", "half_width", "lang_word", "parse", "parse_typed",
           "positive", "reader_lang", "say_help", "size", "speak"]


#: marks a line of Chinese never starts with (they close what is before them) or ends with (they open what follows)
_NO_START = frozenset("）」』】》〉、，。：；！？…")
_NO_END = frozenset("（「『【《〈")


class Formatter(argparse.HelpFormatter):
    """argparse's help, wrapped by the columns text takes (a Chinese character two) and never inside a run of Latin
    letters, digits or punctuation: textwrap broke "$AGENTLAB_STORE" in two, and a line of Chinese, one long "word" to
    it, anywhere."""

    def _split_lines(self, text: str, width: int) -> list[str]:
        import re
        lines: list[str] = []
        line: list[str] = []  # the pieces of the line being filled
        for piece in re.findall(r"[\x21-\x7e]+|\s+|.", " ".join(text.split())):
            if line and columns("".join(line)) + columns(piece) > width and not piece.isspace():
                # a closing mark (）、。) never starts a line and an opening one (（「) never ends one, as Chinese type is
                # set: what is before a closing mark goes down with it, and an opening mark with its word
                cut = len(line) - (piece in _NO_START)  # a closing mark takes the piece before it down with it
                while cut > 0 and (line[cut - 1] in _NO_END or (cut < len(line) and line[cut] in _NO_START)):
                    cut -= 1
                if not "".join(line[:cut]).strip():  # nothing could stay above: the closing mark hangs past the width
                    if piece in _NO_START:
                        line.append(piece)
                        continue
                    cut = len(line)
                lines.append("".join(line[:cut]).rstrip())
                line = line[cut:]
                while line and line[0].isspace():
                    line.pop(0)
            if not (piece.isspace() and not line):
                line.append(piece)
        rest = "".join(line)
        return [*lines, rest.rstrip()] if rest.strip() else lines

    def __init__(self, prog: str, *, lang: Lang = "en", **kwargs: Any):
        super().__init__(prog, **kwargs)
        self._colon = colon(lang).rstrip()

    # argparse ends each section's title with an ASCII colon of its own ("%s:"), "位置参数:" in Chinese: the title
    # is marked where it starts and the mark with its colon is replaced by the language's own when the help is made
    def start_section(self, heading: str | None) -> None:
        super().start_section(f"{heading}\0" if heading else heading)

    def format_help(self) -> str:
        return super().format_help().replace("\0:", self._colon)


def count(text: str) -> int:
    """An option's type: a whole number, 0 or more (a Parser says what is wrong with one in the reader's language)."""
    value = int(text)
    if value < 0:
        raise ValueError(text)
    return value


def positive(text: str) -> int:
    """An option's type: a whole number, 1 or more (a Parser says what is wrong with one in the reader's language)."""
    value = int(text)
    if value < 1:
        raise ValueError(text)
    return value


def size(text: str) -> int:
    """An option's type: a size in bytes, ``2G``, ``512M``, ``1048576`` (K, M and G are powers of 1024; a trailing B or
    i is allowed), typed with full-width characters too (２Ｇ); a Parser says what is wrong with one in the reader's
    language. Anything else raises ValueError."""
    units = {"K": 1 << 10, "M": 1 << 20, "G": 1 << 30}
    read = full_to_half(text).strip().upper().removesuffix("B").removesuffix("I")
    number, unit = (read[:-1], units[read[-1]]) if read and read[-1] in units else (read, 1)
    if not number.strip() or not all(c.isascii() for c in number):
        raise ValueError(text)
    value = float(number)
    if not value >= 0 or value == float("inf"):
        raise ValueError(text)
    return int(value * unit)


class Parser(argparse.ArgumentParser):
    """argparse with a usage error as one line on stderr and exit 2 (its usage block is in --help)."""

    def __init__(self, *args: Any, lang: Lang = "en", **kwargs: Any):
        # no abbreviated options: "--lan zh" ran the command in Chinese while its usage error, read before parsing,
        # was English (one spelling of each option, read the same way by both)
        kwargs.setdefault("allow_abbrev", False)
        kwargs.setdefault("formatter_class", partial(Formatter, lang=lang))
        super().__init__(*args, **kwargs)
        self.lang = lang

    def add_subparsers(self, **kwargs: Any) -> Any:
        # a command's own commands (site keys create) speak the language their parent was built in
        kwargs.setdefault("parser_class", partial(Parser, lang=self.lang))
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

    def _get_value(self, action: argparse.Action, arg_string: str) -> Any:
        # a name typed with a Chinese keyboard (ｅｘｐｅｎｓｅ), in capitals, or a language named in words (中文) is read
        # as the choice it spells, and said so in a line: refused, it was listed beside a name that looks the same
        if action.choices is not None and isinstance(arg_string, str) and arg_string not in action.choices:
            read = _as_choice(arg_string, action)
            if read is not None:
                print(t("cli.read_choice", self.lang, typed=arg_string, read=read), file=sys.stderr)
                arg_string = read
        # argparse names a number's type by its Python function ("invalid int value: 'x'", "应为 int"): said as the
        # reader says a number instead
        if action.type is count or action.type is positive:
            try:
                value = int(arg_string)
            except ValueError:
                raise argparse.ArgumentError(action, t("cli.not_whole", self.lang, value=arg_string)) from None
            if value < (1 if action.type is positive else 0):
                key = "cli.not_positive" if action.type is positive else "cli.negative"
                raise argparse.ArgumentError(action, t(key, self.lang, value=arg_string))
            return value
        if action.type is size:  # "invalid size value: '两G'" named the Python function
            try:
                return size(arg_string)
            except ValueError:
                raise argparse.ArgumentError(action, t("cli.not_size", self.lang, value=arg_string)) from None
        if action.type in (int, float):
            try:
                return action.type(arg_string)
            except ValueError:
                key = "cli.not_whole" if action.type is int else "cli.not_number"
                raise argparse.ArgumentError(action, t(key, self.lang, value=arg_string)) from None
        return super()._get_value(action, arg_string)

    def parse_args(self, args: Any = None, namespace: Any = None) -> argparse.Namespace:  # type: ignore[override]
        # an option no command knows is said by the command the reader typed, so that the error points to its help
        # ("see python -m agentlab lint --help"), not to the whole program's list of commands
        ns, extras = self.parse_known_args(args, namespace)
        if extras:
            self._typed(ns).error(argparse._("unrecognized arguments: %s") % " ".join(extras))  # type: ignore[attr-defined]
        return ns

    def _typed(self, ns: argparse.Namespace) -> argparse.ArgumentParser:
        """The innermost command ``ns`` was read by (this parser when it has none)."""
        for action in self._actions:
            if isinstance(action, argparse._SubParsersAction):
                sub = action.choices.get(getattr(ns, action.dest, None) or "")
                if isinstance(sub, Parser):
                    return sub._typed(ns)
        return self

    def error(self, message: str) -> NoReturn:
        print(t("cli.usage", self.lang, message=message, prog=self.prog), file=sys.stderr)
        raise SystemExit(2)


#: a language as a reader may name it: ``--lang`` takes en or zh, and 中文 or Chinese means zh
_LANG_WORDS = {"中文": "zh", "汉语": "zh", "简体中文": "zh", "chinese": "zh", "cn": "zh", "zh-cn": "zh", "zh_cn": "zh",
               "zh-hans": "zh", "英文": "en", "英语": "en", "english": "en", "en-us": "en", "en_us": "en", "en-gb": "en"}


#: a Chinese keyboard's full-width forms (ｅｘｐｅｎｓｅ, ８０８０, the ideographic space) -> the half-width ones: only these,
#: never what NFKC also folds (a superscript ² is no 2)
_FULL_WIDTH = {**{c: c - 0xFEE0 for c in range(0xFF01, 0xFF5F)}, 0x3000: 0x20}


def full_to_half(text: str) -> str:
    """``text`` with a Chinese keyboard's full-width letters, digits and marks as the half-width ones, trimmed."""
    return text.translate(_FULL_WIDTH).strip()


def lang_word(text: str) -> str:
    """A ``--lang`` value as typed, read as the language it names: ``ｚｈ``, ``ZH``, ``中文`` and ``Chinese`` are ``zh``.
    Anything else comes back in its half-width lower-case form, for the option's choices to refuse."""
    word = full_to_half(text).lower()
    return _LANG_WORDS.get(word, word)


def _as_choice(text: str, action: argparse.Action) -> str | None:
    """The one choice of ``action`` that ``text`` spells once its full-width letters are read as half-width ones and
    its case is set aside (a language also by its name, :func:`lang_word`), or None."""
    word = lang_word(text) if action.dest == "lang" else full_to_half(text)
    names = [c for c in action.choices or () if isinstance(c, str)]
    if word in names:
        return word
    same = [c for c in names if c.casefold() == word.casefold()]
    return same[0] if len(same) == 1 else None


def reader_lang(argv: list[str]) -> Lang:
    """``--lang zh`` read before parsing, so that even a usage error speaks the user's language; without it,
    ``AGENTLAB_LANG``, then the locale's own (``LC_ALL``, ``LC_MESSAGES``, ``LANG``: ``zh_CN.UTF-8`` is Chinese)."""
    given = None
    for i, a in enumerate(argv):
        if a == "--":  # what follows is operands (a file may be called --lang)
            break
        if a.startswith("--lang=") or (a == "--lang" and i + 1 < len(argv)):
            given = a.partition("=")[2] if "=" in a else argv[i + 1]  # the last one wins, as argparse reads it
    if given is not None:
        given = lang_word(given)  # as the parser then reads it (中文 is zh)
    if given in ("en", "zh"):  # a mistyped one (--lang fr) is refused in the language of the locale
        return "zh" if given == "zh" else "en"
    for name in ("AGENTLAB_LANG", "LC_ALL", "LC_MESSAGES", "LANG"):
        value = os.environ.get(name, "")
        if value:
            return "zh" if value.lower().startswith("zh") else "en"
    return "en"


@cache
def _said_table() -> dict[str, dict[str, dict[str, str]]]:
    """``{lang: {"help": {English help: its translation}, "argparse": {argparse's message: its translation}}}``,
    from ``data/i18n/cli.json``: the help of every command and option, and argparse's own words (its usage line, its
    section titles, its usage errors), which Python ships in English alone."""
    from .resources import data_file
    return json.loads(data_file("i18n/cli.json").read_text(encoding="utf-8"))


#: the table of argparse's words the calling thread parses with (see argparse_says); unset: argparse's own
_here = threading.local()
_said_lock = threading.Lock()


def _translated_by_thread() -> None:
    """argparse asks its module's ``_`` and ``ngettext`` for each of its words: both are replaced, once, by functions
    that answer from the calling thread's table while it parses (:func:`argparse_says`) and ask argparse's own
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
def argparse_says(lang: Lang) -> Iterator[None]:
    """argparse's own words in ``lang`` while the parser is built, parses and prints its help: argparse asks
    ``gettext`` for each (``_("usage: ")``, ``_("the following arguments are required: %s")``), and the words are
    looked up here instead, in this thread only; anything not in the table stays as argparse says it."""
    table = _said_table().get(lang, {}).get("argparse", {})
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


def speak(parser: argparse.ArgumentParser, lang: Lang) -> None:
    """Every command's ``--lang`` defaults to ``lang``: the language the help and the usage errors were read in (from
    the locale, say) is the one the command then answers in."""
    for action in parser._actions:
        if action.dest == "lang" and action.default == "en" and action.choices is not None and lang in action.choices:
            action.default = lang  # a --lang whose default is another (the trainer's "both") keeps it
        if isinstance(action, argparse._SubParsersAction):
            for sub in dict.fromkeys(action.choices.values()):
                speak(sub, lang)


def say_help(parser: argparse.ArgumentParser, lang: Lang) -> None:
    """Every help and description of ``parser`` and its commands, said in ``lang`` (data/i18n/cli.json); an option
    its command gave no help (--lang, --port, --model...) gets the one its name has there ("unsaid")."""
    unsaid = _said_table()["en"]["unsaid"]
    said = _said_table().get(lang, {}).get("help", {})
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
                say_help(sub, lang)


#: what a Chinese keyboard types for an option's two dashes (an autocorrected em dash, or full-width ones)
_DASHES = ("——", "－－", "—", "––", "–")
#: an option whose value is a secret: the value is never read again, nor said back (at the name's end: not --keyfile)
_SECRET = r"(pass|password|passwd|secret|token|key)$"


def _option(piece: str, names: frozenset[str] | None) -> tuple[str, str, str] | None:
    """``piece`` as an option typed with full-width marks, read: (name, "=" or "", value); None when it is no option
    (or not one of ``names``). Only the name's own marks are read: a value keeps every character it was typed with."""
    import re
    import unicodedata
    dash = next((d for d in _DASHES if piece.startswith(d)), None)
    if dash is not None:
        if not re.match(r"[A-Za-zＡ-Ｚａ-ｚ]", piece[len(dash):]):
            return None
        piece = "--" + piece[len(dash):]
    elif not piece.startswith("--") or piece == "--":
        return None
    head, eq, value = piece.partition("=")
    if "＝" in head:  # a full-width = before any half-width one: the name ends there
        head, _, before = head.partition("＝")
        value, eq = before + eq + value, "="
    name = unicodedata.normalize("NFKC", head)
    if names is not None and name not in names:
        return None
    return name, eq, value


def half_width(argv: list[str], names: frozenset[str] | None = None) -> tuple[list[str], list[tuple[str, str]]]:
    """``argv`` with the full-width marks a Chinese keyboard types in options read as the half-width ones, and what
    was read so (``(typed, read)`` pairs, for one line saying it). ``——lang``, ``—lang`` and ``－－lang`` are
    ``--lang``; ``--lang＝zh`` is ``--lang=zh``; an ideographic space (U+3000) between an option and a word parts them
    as a plain one does; a language given as ``ｚｈ`` or ``ZH`` is ``zh``. ``names``: the only options read so (None:
    any). A value keeps every character it was typed with, an operand is left as typed (a name with a full-width space
    in it, Chinese text), nothing after ``--`` is touched, and a secret's value (an option named like a password, key
    or token) is never changed nor said back. The package's command line reads a line so only when it was refused as
    typed (:func:`agentlab.cli.main`): a valid command line always keeps its meaning."""
    import re
    out: list[str] = []
    read: list[tuple[str, str]] = []
    lang_next = secret_next = False
    for i, typed in enumerate(argv):
        if typed == "--":
            out += argv[i:]
            break
        if secret_next:
            out.append(typed)
            secret_next = False
            continue
        pieces = [p for p in typed.split("\u3000") if p]
        # an ideographic space parts an option from what follows it, never an operand's words ("北京　上海")
        if len(pieces) > 1 and not (any(_option(p, names) for p in pieces)
                                    and all(p.isascii() or _option(p, names) for p in pieces)):
            pieces = [typed]
        now: list[str] = []
        typed_said: list[str] = []  # the word as typed, and as read, for the line that says so: no secret's value
        read_said: list[str] = []
        for piece in pieces or [typed]:
            if secret_next:  # the value of a secret typed in the same word: kept, and never said
                secret_next = False
                now.append(piece)
                typed_said.append("…")
                read_said.append("…")
                continue
            new = piece
            if lang_next:
                lang_next = False
                new = full_to_half(piece).strip()  # its width alone: its case is the parser's to read, and say
            elif (found := _option(piece, names)) is not None:
                name, eq, value = found
                secret = re.search(_SECRET, name, re.I) is not None
                if name == "--lang":
                    value = full_to_half(value).strip()  # 中文, ZH, zh-CN: the parser's to read (_as_choice), and say
                lang_next, secret_next = name == "--lang" and not eq, secret and not eq
                new = name + eq + value
                if secret and eq:  # its value kept as typed, and never said
                    typed_said.append(piece.split("=", 1)[0].split("＝", 1)[0] + "=…")
                    read_said.append(name + "=…")
                    now.append(new)
                    continue
            now.append(new)
            typed_said.append(piece)
            read_said.append(new)
        if now != [typed]:
            read.append(("\u3000".join(typed_said), " ".join(read_said)))
        out += now
    return out, read

def parse(build: Callable[[Lang], argparse.ArgumentParser],
          argv: list[str]) -> tuple[argparse.Namespace | None, int, Lang]:
    """``argv`` read by the parser ``build`` makes in the reader's language: (the options, 0, the language), or (None,
    the exit code, the language) for a usage error (already said, in the reader's language) or ``--help`` (printed)."""
    lang = reader_lang(argv)
    with argparse_says(lang):
        parser = build(lang)
        say_help(parser, lang)
        speak(parser, lang)
        try:
            return parser.parse_args(argv), 0, lang
        except SystemExit as exc:  # a usage error (already printed) or --help
            return None, exc.code if isinstance(exc.code, int) else 2, lang


def parse_typed(build: Callable[[Lang], argparse.ArgumentParser],
                argv: list[str]) -> tuple[argparse.Namespace | None, int, Lang]:
    """:func:`parse` of ``argv`` as typed; refused so, and holding options typed with a Chinese keyboard's full-width
    marks (``——lang``, ``--users　3``), parsed again read as half-width (:func:`half_width`), what was read said in a
    line. A command line that parses as typed keeps its meaning: a value or an operand is never read again. The
    package's commands and ``run.py hub`` read their options so (the hub had refused ``--users　3``)."""
    import contextlib
    import io
    fixed, read = half_width(argv)
    if not read:
        return parse(build, argv)
    refused = io.StringIO()
    with contextlib.redirect_stderr(refused):
        ns, code, lang = parse(build, argv)
    if ns is not None or code == 0:
        sys.stderr.write(refused.getvalue())  # whatever it said on the way (a warning) is still said
        return ns, code, lang
    for typed, now in read:
        print(t("cli.read_half_width", reader_lang(fixed), typed=typed, read=now), file=sys.stderr)
    return parse(build, fixed)
