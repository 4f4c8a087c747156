"""A team's own logs, read as a stream of conversations (docs/metrics.md#bring-your-own-logs).

Three formats, each one JSON object per line:

* ``openai``: chat-completions traffic as teams log it, either one exchange per line
  (``{"request": {"messages", "tools"}, "response": {...}}``) or a whole conversation per line
  (``{"messages", "tools"}``). The exchanges of one conversation (each request repeats the history and adds to
  it) are joined into one conversation, whatever other users' exchanges a service logged between them, so a run
  is judged once, not once per turn.
* ``telemetry``: agentlab's own event rows (docs/telemetry.md), grouped by ``run_id``.
* ``otel``: OTLP JSON spans, turned into telemetry rows by :func:`agentlab.evals.otel.read_otlp`.

A file is read line by line, never whole. :func:`read_logs` holds the conversations still open (one, for an
exchange log, bounded by its line; every row of those whose ``end`` row has not come yet, for telemetry), so a
file costs what its longest conversation costs. A telemetry run may be a million rows: ``review --logs`` reads
telemetry and OTLP with :func:`read_rows` instead, one row at a time, and counts each run as its rows come
(:mod:`agentlab.evals.log_review`), so every format is reviewed in bounded memory
(``benchmarks/bench_review_memory.py``). A line that cannot be read stops the reading with one
sentence naming the file and the line (:class:`LogError`): a line longer than :data:`MAX_LINE` bytes, one
nested past what the parser takes, and a telemetry row whose fields have the wrong types included. Given an
:class:`Unread`, a reader reads on past such a line once a line of the file has been read well (a production log
cut short by a crash, one line written by something else): it is counted and said, never dropped in silence.
``NaN`` and ``Infinity``, which Python writes but JSON has not, are read as null.
"""
from __future__ import annotations

import functools
import json
import os
import re
from collections.abc import Callable, Iterable, Iterator, Mapping, Sequence
from dataclasses import dataclass, field, fields
from datetime import UTC, datetime
from pathlib import Path
from typing import Any, Literal, cast, get_type_hints

from ..errors import json_type
from ..i18n import Listed, LocalizedError, Sentence, os_reason
from ..jsonutil import UNREAD, JsonReason, quick_loads
from ..trace import Event
from . import exchanges
from .exchanges import assembled, is_chunk, prefix_keys, unindex, went_on
from .unread import Unread

__all__ = ["FORMATS", "MAX_LINE", "OPEN_RUNS", "LogError", "LogRun", "Unread", "read_logs", "read_rows", "run_meta"]

Format = Literal["openai", "telemetry", "otel"]
FORMATS: tuple[Format, ...] = ("openai", "telemetry", "otel")
_EVENT_FIELDS = {f.name for f in fields(Event)}
OPEN_RUNS = 10_000  # telemetry runs whose end has not come: past this, the oldest is closed as it is
MAX_LINE = 64 * 1024 * 1024  # bytes in one line: a file with no newline must not be read whole into memory


def _types_of_events() -> dict[str, tuple[type, ...]]:
    """The Python types each Event field takes (an int is a float too; a bool is no int here)."""
    out: dict[str, tuple[type, ...]] = {}
    for name, hint in get_type_hints(Event).items():
        text = str(hint)
        kinds: list[type] = [t for t in (bool, int, float, str) if t.__name__ in text.replace("Literal", "str")]
        if float in kinds:
            kinds.append(int)
        out[name] = tuple(kinds) + ((type(None),) if "None" in text else ())
    return out


_EVENT_TYPES = _types_of_events()
# the same as exact types, null always let through: what a line parsed from JSON may hold in each Event field (a
# bool, whose type is bool, passes only where bool is listed, as the isinstance test with its bool exception had it)
_EXACT_TYPES = {k: frozenset({*kinds, type(None)}) for k, kinds in _EVENT_TYPES.items()}
_KEPT = _EVENT_FIELDS | {"timestamp", "time", "ts"}  # what a row keeps of a line
_NULLABLE = frozenset(k for k in _KEPT if type(None) in _EVENT_TYPES.get(k, (type(None),)))  # null: said, kept


class LogError(LocalizedError):
    """A log file that cannot be read, said in one line naming the file and the line."""


@dataclass(frozen=True)
class LogRun:
    """One conversation (``openai``) or one run (``telemetry``, ``otel``) as the logs hold it.

    ``messages`` and ``tools`` are filled from openai logs; ``rows`` from telemetry. ``day`` is the
    date (UTC, ``YYYY-MM-DD``) the logs give, or ``""``; ``success`` what the logs say about the
    outcome (``success``, ``passed`` or ``resolved``, at the top or under ``metadata``), or None
    when they say nothing; ``status`` a run status the logs give (``status`` or ``final_status``).
    """

    source: str
    line: int  # the first line of the file this conversation came from
    last_line: int
    messages: tuple[dict, ...] = ()
    tools: tuple[dict, ...] = ()
    rows: tuple[dict, ...] = ()
    day: str = ""
    success: bool | None = None
    status: str | None = None
    usage: tuple[tuple[int, int], ...] = field(default=())  # (prompt, completion) tokens per logged response

    @property
    def where(self) -> str:
        return f"{self.source}:{self.line}"


def read_logs(path: str | Path, fmt: Format = "openai", *, progress: bool = False,
              shared_tools: bool = False, unread: Unread | None = None) -> Iterator[LogRun]:
    """The conversations (or runs) of a log file, one at a time, in bounded memory.

    ``progress`` draws a tqdm bar on stderr, by bytes read (the number of lines is not known up front).
    ``shared_tools`` (openai): a tools list whose text a line repeats from one before is decoded once, and the
    conversations given the same objects, for a reader that never changes them (a review: ``review --logs``).
    ``unread``: lines that cannot be read, once one has been read well, are counted there and read past."""
    if fmt not in FORMATS:
        raise LogError("logs.bad_format", got=str(fmt), known=Listed(FORMATS))
    unread = unread if unread is not None else Unread(strict=True)
    source = str(path)
    name = Path(source).name  # a report names the file, not where it sits on someone's disk
    if fmt == "otel":
        yield from _telemetry(name, _otel_rows(source, unread))
        return
    lines = _lines(source, progress=progress, unread=unread)
    yield from (_openai(name, source, lines, _Tools() if shared_tools else None, unread) if fmt == "openai"
                else _telemetry(name, _json_rows(source, lines, unread)))


def _lines(source: str, *, progress: bool, unread: Unread) -> Iterator[tuple[int, str]]:
    """``(line number, text)`` of every non-blank line, read one at a time."""
    where = {"path": source, "what": "what.logs"}
    if Path(source).is_dir():
        raise LogError("input.is_dir", **where)
    try:
        # 64 KB at a time: at the default 8 KB, a chat log's lines of a few KB cost a system call every few lines
        f = open(source, "rb", buffering=1 << 16)
        # a rotated log is often gzipped: read as the text it holds (two bytes say so, whatever its name)
        zipped = f.read(2) == b"\x1f\x8b"
        f.seek(0)
        if zipped:
            import gzip
            f = gzip.GzipFile(fileobj=f, mode="rb")  # type: ignore[assignment]
    except FileNotFoundError:
        raise LogError("input.missing", **where) from None
    except OSError as exc:
        raise LogError("input.unreadable", reason=os_reason(exc), **where) from None
    bar = None
    if progress:
        from tqdm import tqdm  # a core dependency
        bar = tqdm(total=None if zipped else os.fstat(f.fileno()).st_size, unit="B", unit_scale=True, desc=Path(source).name,
                   leave=False, mininterval=0.5)
    try:
        unread.encoding = _encoding_of(f)
        for n, raw in enumerate(_read_lines(f, where), 1):
            if bar is not None:
                bar.update(len(raw))
            if n == 1 and raw.startswith(b"\xef\xbb\xbf"):  # a byte-order mark a Windows editor wrote: not JSON
                raw = raw[3:]
            if len(raw) > MAX_LINE:  # readline stopped at the limit: the rest of the line is never read
                raise LogError("logs.line_too_long", path=source, line=n, limit=MAX_LINE)
            try:
                text = raw.decode(unread.encoding)
            except UnicodeDecodeError:
                unread.skip(LogError("logs.not_text", path=source, line=n))
                continue
            if not text.isspace():  # (never empty: a line read holds at least its newline or a character)
                yield n, text
    finally:
        if bar is not None:
            bar.close()
        f.close()


def _encoding_of(f: Any, sample: int = 65536) -> str:
    """How the file's text is written, from its first ``sample`` bytes (``f`` put back at its start): "gb18030" (of
    which GBK is part: what a Chinese Windows saves text in) when none of the lines with anything but ASCII reads as
    UTF-8 and every one reads as GB18030; else "utf-8", a broken line of it read past. A team's GBK log was refused as
    "not UTF-8 text", with nothing to do about it on a page."""
    try:
        head = f.read(sample)
    except (OSError, EOFError):  # a gzip file cut short: its reading says so, line by line
        head = b""
    f.seek(0)
    lines = head.split(b"\n")
    if len(head) == sample:
        lines = lines[:-1]  # cut in its middle, maybe in a character's
    others = [line for line in lines if not line.isascii()]
    if not others or any(_reads(line, "utf-8") for line in others):
        return "utf-8"
    return "gb18030" if all(_reads(line, "gb18030") for line in others) else "utf-8"


def _reads(raw: bytes, encoding: str) -> bool:
    try:
        raw.decode(encoding)
    except UnicodeDecodeError:
        return False
    return True


def _read_lines(f: Any, where: dict) -> Iterator[bytes]:
    """Each line of ``f`` up to :data:`MAX_LINE` bytes and one more; a gzip file broken half-way is said, not raised."""
    read = functools.partial(f.readline, MAX_LINE + 1)
    while True:
        try:
            raw = read()
        except (OSError, EOFError) as exc:  # a gzip file cut short or not gzip after its first two bytes
            reason = os_reason(exc) if isinstance(exc, OSError) and exc.errno else type(exc).__name__
            raise LogError("input.unreadable", reason=reason, **where) from None
        if not raw:
            return
        yield raw


def _no_constant(name: str) -> None:
    """NaN, Infinity, -Infinity: what Python's json writes and JSON has not; read as null (nothing said)."""
    return None


# one decoder for every line: json.loads given parse_constant builds a new one per call (a third of its cost on a row)
_DECODER = json.JSONDecoder(parse_constant=_no_constant)
_DECODE = _DECODER.decode
# the C parts of that decoder: a value from a position (its end too), a string from past its opening quote
_SCAN: Callable[[str, int], tuple[Any, int]] = _DECODER.scan_once  # type: ignore[attr-defined]
_STRING: Callable[[str, int, bool], tuple[str, int]] = json.decoder.scanstring  # type: ignore[attr-defined]
# what JSON calls white space (json.decoder's own pattern): it matches everywhere, if only nothing
_WS = cast(Callable[[str, int], "re.Match[str]"], re.compile(r"[ \t\n\r]*").match)
_SPACE = frozenset(" \t\n\r")
_SHARED_TOOLS = 8  # the texts of tools lists kept, newest first
# a JSON string, and what it reads as: where a known tools list's text was cut out of a line (a line that holds a \u0001,
# however the rest of the string is spelt, is read the long way)
_HOLE, _HELD = '"\\u0001tools\\u0001"', "\x01tools\x01"


def _skip(s: str, i: int) -> int:
    """Past the white space at ``i`` (there is some): one space, as json.dumps writes, or the pattern's run."""
    return i + 1 if s[i + 1:i + 2] not in _SPACE else _WS(s, i).end()


class _Tools:
    """Tools lists by their text: a chat log sends the same list on every line, most of the line's bytes. A line's
    list whose text is one met before is not decoded again: the line gets the list decoded then, the same object
    (so the reader must never change it), and :meth:`tools_of` the same tuple of it (a review compiles its registry
    once, found by that tuple). Only the top-level ``tools`` and ``request.tools`` are looked up."""

    def __init__(self) -> None:
        self.texts: list[tuple[str, list]] = []  # (the list's JSON text as the line wrote it, the list), newest first
        self.tuples: dict[int, tuple[list, tuple[dict, ...]]] = {}  # id(list) -> (the list, its tuple)

    def object(self, text: str) -> dict | None:
        """``text`` decoded as :data:`_DECODE` decodes it, or None for anything that is not a plain object of
        members (a line the full decoder must read, or refuse with its own message)."""
        d = self._cut(text)
        if d is not None:
            return d
        try:
            d, end = self._members(text, _WS(text, 0).end(), True)
        except (StopIteration, ValueError, RecursionError):
            return None
        return d if d is not None and _WS(text, end).end() == len(text) else None

    def _cut(self, s: str) -> dict | None:
        """``s`` read by :func:`~agentlab.jsonutil.quick_loads` with a known list's text cut out where a ``"tools"``
        key's value is that text (held by a string the line cannot hold) and the list put back, the same object, when that
        place is the top-level ``tools`` or ``request.tools``; None for anything else (read member by member)."""
        # a text that holds \x01 at all (which JSON can only spell \u0001) could hold the hole's string, however
        # its letters are written: read the long way. (The list's key, not its text, is searched for: a search
        # for the text prepared its kilobytes each time.)
        at = -1 if "\\u0001" in s else s.find('"tools"')
        while at >= 0:
            i = at + 7
            i = _skip(s, i) if s[i:i + 1] in _SPACE else i
            if s[i:i + 1] == ":":
                i = _skip(s, i + 1) if s[i + 1:i + 2] in _SPACE else i + 1
                for k, (known, tools) in enumerate(self.texts):
                    if s.startswith(known, i):
                        d = quick_loads(s[:i] + _HOLE + s[i + len(known):])
                        held = d if type(d) is dict and d.get("tools") == _HELD else d.get("request") \
                            if type(d) is dict else None  # (UNREAD: no dict)
                        if type(held) is not dict or held.get("tools") != _HELD:
                            return None  # a "tools" of a message's, a list only the start of one: the long way
                        held["tools"] = tools
                        if k:
                            self.texts.insert(0, self.texts.pop(k))
                        return d
            at = s.find('"tools"', at + 7)
        return None

    def _members(self, s: str, i: int, top: bool) -> tuple[dict | None, int]:
        # the object's members one at a time, each value decoded by the C scanner, as json's own object parser
        # reads them (a key given twice keeps its first place and its last value, as a dict assignment does);
        # white space is skipped by the pattern only where there is some (json.dumps writes ": " and ", ")
        if s[i:i + 1] != "{":
            return None, i
        d: dict = {}
        i += 1
        if s[i:i + 1] in _SPACE:
            i = _skip(s, i)
        if s[i:i + 1] == "}":
            return d, i + 1
        while True:
            if s[i:i + 1] != '"':
                return None, i
            key, i = _STRING(s, i + 1, True)
            if s[i:i + 1] in _SPACE:
                i = _skip(s, i)
            if s[i:i + 1] != ":":
                return None, i
            i += 1
            if s[i:i + 1] in _SPACE:
                i = _skip(s, i)
            value: Any = None
            if key == "tools":
                for k, (known, tools) in enumerate(self.texts):
                    if s.startswith(known, i):  # a JSON array is the same text to its closing bracket: no more
                        value, i = tools, i + len(known)
                        if k:
                            self.texts.insert(0, self.texts.pop(k))
                        break
                else:
                    value, end = _SCAN(s, i)
                    if isinstance(value, list):
                        self.texts.insert(0, (s[i:end], value))
                        del self.texts[_SHARED_TOOLS:]
                    i = end
            elif key == "request" and top and s[i:i + 1] == "{":
                value, i = self._members(s, i, False)
                if value is None:
                    return None, i
            else:
                value, i = _SCAN(s, i)
            d[key] = value
            c = s[i:i + 1]
            if c in _SPACE:
                i = _skip(s, i)
                c = s[i:i + 1]
            if c == "}":
                return d, i + 1
            if c != ",":
                return None, i
            i += 1
            if s[i:i + 1] in _SPACE:
                i = _skip(s, i)

    def tools_of(self, source: str, n: int, tools: Any) -> tuple[dict, ...]:
        """:func:`_tools` of a line's list: for a list :meth:`object` gave before, the tuple made of it then."""
        known = self.tuples.get(id(tools))
        if known is not None and known[0] is tools:
            return known[1]
        out = _tools(source, n, tools)
        if isinstance(tools, list) and any(tools is t for _, t in self.texts):
            if len(self.tuples) >= _SHARED_TOOLS:
                self.tuples.pop(next(iter(self.tuples)))
            self.tuples[id(tools)] = (tools, out)
        return out


# a first line of names between commas (session_id,tool_name,...): a CSV export, which the review does not read; it was
# told "not valid JSON (Expecting value)"
_CSV_CELL = re.compile(r'\s*"?[\w.()-]+(?: [\w.()-]+)*"?\s*')


def _csv_header(line: str) -> bool:
    """Whether ``line`` is a row of names between commas (or semicolons, or tabs): each cell matched alone, so that no
    pattern backtracks across the row (one over the whole line took minutes on a padded header)."""
    cells = re.split(r"[,;\t]", line)
    return len(cells) > 1 and all(_CSV_CELL.fullmatch(c) for c in cells)


def _object(source: str, n: int, text: str, shared: _Tools | None = None) -> dict:
    if shared is not None and text[:1] == "{":
        d = shared.object(text.rstrip("\r\n"))
        if d is not None:
            return d
    try:  # a line cut off inside a text: "unterminated", not "control character"
        # (a line opening with a byte-order mark goes through json.loads, whose message says what it is)
        d = quick_loads(text)  # (what it leaves, as a byte-order mark, is read, or refused, below)
        if d is UNREAD:
            d = (_DECODE if text[:1] != "\ufeff" else json.loads)(text.rstrip("\r\n"))
    except ValueError as exc:
        if n == 1 and _csv_header(text.strip("\ufeff\r\n")):  # a spreadsheet's export: said as one
            raise LogError("logs.looks_csv", path=source) from None
        if n == 1 and text.lstrip("\ufeff \t\r\n")[:1] == "[":  # one JSON array over many lines: valid, and said so
            raise LogError("logs.json_array", path=source) from None
        why = JsonReason.of(exc) if isinstance(exc, json.JSONDecodeError) else JsonReason(str(exc))
        raise LogError("input.not_json", path=source, line=n, detail=why, what="what.logs") from None
    except RecursionError:  # brackets nested past what the parser takes
        raise LogError("input.not_json", path=source, line=n, detail=JsonReason("nested too deeply"), what="what.logs") from None
    if not isinstance(d, dict):
        raise LogError("logs.not_object", path=source, line=n, got=Sentence("json.kind." + json_type(d)))  # JSON's word
    return d


# --- openai ------------------------------------------------------------------------------------
def _openai(name: str, source: str, lines: Iterable[tuple[int, str]], shared: _Tools | None,
            unread: Unread) -> Iterator[LogRun]:
    tools_of = shared.tools_of if shared is not None else _tools
    # the conversations an exchange may go on: a service logs its users' exchanges as they come, one user's turns
    # between another's, so an exchange joins whichever conversation it continues, not only the line before's.
    # Each is given out when OPEN_EXCHANGES newer ones have begun since, or at the end: in the order they began
    held: dict[int, LogRun] = {}  # by when they began
    ends: dict[int, list[int]] = {}  # the key of each held conversation's messages -> the conversations
    began = 0
    for n, text in lines:
        try:
            d = _object(source, n, text, shared)
            exchange = "request" in d or "response" in d
            if exchange:
                run = _exchange(name, source, n, d, tools_of)
            elif not isinstance(d.get("messages"), list):
                raise _shape_error(source, n, d)
            else:
                run = _conversation(name, n, _messages(source, n, d["messages"]), tools_of(source, n, d.get("tools")),
                                    _meta(d))
        except LogError as error:
            unread.skip(error)  # (raised again when strict, or no line was read well yet)
            continue
        unread.started = True
        if not exchange:  # a whole conversation: those begun before it first, then it
            yield from held.values()
            held.clear()
            ends.clear()
            yield run
            continue
        keys = prefix_keys(run.messages)
        goes_on = went_on(held, ends, keys, run.messages)
        if goes_on is not None:
            before = held[goes_on]
            unindex(ends, prefix_keys(before.messages)[-1], goes_on)
            held[goes_on] = LogRun(name, before.line, n, run.messages, run.tools or before.tools,
                                   day=before.day or run.day,
                                   success=run.success if run.success is not None else before.success,
                                   status=run.status or before.status, usage=before.usage + run.usage)
            ends.setdefault(keys[-1], []).append(goes_on)
            continue
        began += 1
        held[began] = run
        if keys:
            ends.setdefault(keys[-1], []).append(began)
        if len(held) > exchanges.OPEN_EXCHANGES:  # the one that began first is given out: it may go on no more
            first = next(iter(held))
            oldest = held.pop(first)
            if oldest.messages:
                unindex(ends, prefix_keys(oldest.messages)[-1], first)
            yield oldest
    yield from held.values()


def _shape_error(source: str, n: int, d: dict) -> LogError:
    """A line that is no chat-completions exchange: when its keys are another format's (telemetry rows, OTLP spans),
    the error names that format to choose, not the keys alone."""
    if is_chunk(d):  # a streamed reply logged a chunk a line: no conversation can be read from one
        return LogError("logs.chunk_line", path=source, line=n)
    other = "telemetry" if {"run_id", "kind"} <= d.keys() else "otel" if "resourceSpans" in d else None
    if other is not None:
        return LogError("logs.other_format", path=source, line=n, keys=Listed(list(d)[:6]), format=other, chosen="openai")
    return LogError("logs.openai_shape", path=source, line=n, keys=Listed(list(d)[:6]) or "-")


def _conversation(source: str, n: int, messages: tuple[dict, ...], tools: tuple[dict, ...], meta: dict) -> LogRun:
    """``LogRun(source, n, n, messages, tools, **meta)`` for a line that holds a whole conversation (one a line: the
    usual log), less the frozen dataclass ``__init__`` that sets its fields one call at a time: the values go into
    its ``__dict__``, ``rows`` and ``usage`` read their defaults from the class, where the dataclass keeps them."""
    run = object.__new__(LogRun)
    run.__dict__.update({"source": source, "line": n, "last_line": n, "messages": messages, "tools": tools}, **meta)
    return run


def _exchange(name: str, source: str, n: int, d: dict, tools_of: Callable[[str, int, Any], tuple[dict, ...]]) -> LogRun:
    request, response = d.get("request"), d.get("response")
    if not isinstance(request, dict) or not isinstance(request.get("messages"), list):
        raise _shape_error(source, n, d)
    messages = list(request["messages"])
    usage: tuple[tuple[int, int], ...] = ()
    if isinstance(response, list) or (isinstance(response, dict) and is_chunk(response)):
        response = assembled(response if isinstance(response, list) else [response])
        if response is None:
            raise LogError("logs.response_list", path=source, line=n)
    if isinstance(response, dict):
        choices = response.get("choices")
        message = choices[0].get("message") if isinstance(choices, list) and choices and isinstance(choices[0], dict) \
            else response.get("message")
        if message is None and response.get("type") == "message":  # another API's whole response: read as a message
            message = {"content": response.get("content")}
        if isinstance(message, dict):
            messages.append({"role": "assistant", **message})
        u = response.get("usage")
        if isinstance(u, dict):
            usage = ((_int(u.get("prompt_tokens")), _int(u.get("completion_tokens"))),)
    meta = _meta(d)
    if not meta["day"] and isinstance(response, dict):
        meta["day"] = _day(response.get("created"))
    # the reply read as every message is: another API's blocks refused by name, the older function calls as tool calls
    return LogRun(name, n, n, _messages(source, n, messages), tools_of(source, n, request.get("tools")), usage=usage,
                  **meta)


def _messages(source: str, n: int, messages: list) -> tuple[dict, ...]:
    legacy = False
    for i, m in enumerate(messages):
        if not isinstance(m, dict) or not isinstance(m.get("role"), str):
            raise LogError("logs.bad_message", path=source, line=n, index=i + 1)  # counted from 1
        legacy = legacy or "function_call" in m or m["role"] == "function"
        content = m.get("content")
        if type(content) is list and any(isinstance(part, dict) and part.get("type") in _ANTHROPIC_PARTS
                                         for part in content):
            # another API's messages: read as chat completions they held no call, and the review said nothing wrong
            raise LogError("logs.anthropic", path=source, line=n, index=i + 1)
    return tuple(_as_tool_calls(messages) if legacy else messages)


_ANTHROPIC_PARTS = frozenset({"tool_use", "tool_result"})  # the Messages API's calls and answers, in a message's content


def _as_tool_calls(messages: Sequence[dict]) -> list[dict]:
    """Function calling as the API had it before tool calls (an assistant's ``function_call``, answered by a
    ``function`` message), read as the tool call and tool message it is now: the call was neither counted nor
    checked, and its answer was "a history the API would refuse" for its role."""
    out: list[dict] = []
    last = None
    for i, m in enumerate(messages):
        call = m.get("function_call")
        if m.get("role") == "assistant" and isinstance(call, dict) and not m.get("tool_calls"):
            last = f"function_call_{i}"
            m = {**{k: v for k, v in m.items() if k != "function_call"},
                 "tool_calls": [{"id": last, "type": "function", "function": call}]}
        elif m.get("role") == "function":
            m = {**{k: v for k, v in m.items() if k != "name"}, "role": "tool", "tool_call_id": last or f"function_{i}"}
        out.append(m)
    return out


def _tools(source: str, n: int, tools: Any) -> tuple[dict, ...]:
    if tools is None:
        return ()
    if not isinstance(tools, list) or not all(isinstance(x, dict) for x in tools):
        raise LogError("logs.bad_tools", path=source, line=n)
    return tuple(tools)


def _meta(d: Mapping[str, Any]) -> dict[str, Any]:
    """The date, the verdict and the status a line gives about its conversation (at the top or under metadata)."""
    meta = d.get("metadata")
    look = {**meta, **d} if isinstance(meta, dict) and meta else d
    success = status = None
    for k in ("success", "passed", "resolved"):  # the first of them that is a yes or a no
        if isinstance(said := look.get(k), bool):
            success = said
            break
    for k in ("status", "final_status"):
        if isinstance(named := look.get(k), str):
            status = named
            break
    day = ""
    for k in ("timestamp", "time", "ts", "created_at", "created", "date"):  # the first given, read or not
        if k in look:
            day = _day(look[k])
            break
    return {"day": day, "success": success, "status": status}


def run_meta(row: Mapping[str, Any]) -> dict[str, Any]:
    """What a run's first row says about it (:func:`_meta`): ``day``, ``success``, ``status``."""
    return _meta(row)


def _day(value: Any) -> str:
    """``YYYY-MM-DD`` (UTC) of an epoch number (seconds or milliseconds) or an ISO text, or ``""``."""
    try:
        if isinstance(value, bool):
            return ""
        if isinstance(value, (int, float)):
            seconds = value / 1000 if value > 1e11 else value
            return datetime.fromtimestamp(seconds, tz=UTC).strftime("%Y-%m-%d")
        if isinstance(value, str) and value.isdigit():  # an epoch written as text ("1772704800"): the number
            return _day(int(value))
        if isinstance(value, str) and value:
            if _UTC_STAMP.fullmatch(value):  # a time of day in UTC: the day is its date's, read once a date
                return _utc_date(value[:10])
            stamp = datetime.fromisoformat(value.replace("Z", "+00:00"))
            return (stamp.astimezone(UTC) if stamp.tzinfo else stamp).strftime("%Y-%m-%d")
    except (ValueError, OverflowError, OSError):
        pass
    return ""


#: an ISO time in UTC whose every part is in range (a log writes one on every line): valid when its date is
_UTC_STAMP = re.compile(r"[0-9]{4}-[0-9]{2}-[0-9]{2}T(?:[01][0-9]|2[0-3]):[0-5][0-9]:[0-5][0-9](?:\.[0-9]{1,6})?Z")


@functools.lru_cache(maxsize=256)
def _utc_date(date: str) -> str:
    """:func:`_day` of any UTC time on ``date`` (``YYYY-MM-DD`` as a log wrote it, a date that does not exist too)."""
    return _day(f"{date}T00:00:00+00:00")


def _int(value: Any) -> int:
    return value if isinstance(value, int) and not isinstance(value, bool) and value >= 0 else 0


# --- telemetry ---------------------------------------------------------------------------------
def _json_rows(source: str, lines: Iterable[tuple[int, str]], unread: Unread) -> Iterator[tuple[int, dict]]:
    """Each line's row as :func:`_row` keeps it, its fields' types checked; a line that is no row counted in
    ``unread`` and read past (once a row was read), or raised."""
    shapes: dict[tuple, tuple[str, ...]] = {}  # (keys, their types) -> the keys a row keeps: see _checked_row
    for n, text in lines:
        try:
            row = _checked_row(source, n, text, shapes)
        except LogError as error:
            unread.skip(error)
            continue
        unread.started = True
        yield n, row


def _checked_row(source: str, n: int, text: str, shapes: dict[tuple, tuple[str, ...]]) -> dict:
    """A line's row, its fields' types checked. A log of one system writes a few shapes of row (the same keys, each
    with the same type), a million times: each shape is checked once, and what a row of it keeps is remembered with
    it in ``shapes``."""
    d = _object(source, n, text)
    rid, kind = d.get("run_id"), d.get("kind")
    if type(rid) is not str or not rid or type(kind) is not str or not kind:
        key = "run_id" if type(rid) is not str or not rid else "kind"
        if "messages" in d or "request" in d or "resourceSpans" in d:  # another format's line: say which
            raise LogError("logs.other_format", path=source, line=n, keys=Listed(list(d)[:6]),
                           format="otel" if "resourceSpans" in d else "openai", chosen="telemetry")
        raise LogError("logs.row_field", path=source, line=n, field=key)
    if kind not in ("model", "tool", "end"):
        raise LogError("logs.row_kind", path=source, line=n, got=kind[:30])
    shape = (tuple(d), tuple(map(type, d.values())))  # (a parsed line holds the JSON types themselves)
    kept = shapes.get(shape)
    if kept is None:
        for key, value in d.items():
            allowed = _EXACT_TYPES.get(key)
            if allowed is not None and type(value) not in allowed:
                raise LogError("logs.row_type", path=source, line=n, field=key, got=type(value).__name__)
        # null is not said, unless the field may be null
        kept = tuple(k for k, v in d.items() if k in _KEPT and (v is not None or k in _NULLABLE))
        if len(shapes) < _SHAPES:  # (a log of ever new shapes is checked row by row, as it was)
            shapes[shape] = kept
    # the fields an Event cannot do without, when a system does not log them: the run is its session. A row whose
    # every field is kept is the parsed line itself, its own from here (a new dict cost a row more than this check)
    if len(kept) == len(d):
        if "session_id" not in d:
            d["session_id"] = rid
        if "turn_id" not in d:
            d["turn_id"] = 0
        if "round_index" not in d:
            d["round_index"] = 0
        return d
    row = {"session_id": rid, "turn_id": 0, "round_index": 0}
    for k in kept:
        row[k] = d[k]
    return row


_SHAPES = 256


def _otel_rows(source: str, unread: Unread) -> Iterator[tuple[int, dict]]:
    from importlib import import_module
    otel = import_module("agentlab.evals.otel")  # written beside this reader: OTLP spans to telemetry rows
    yield from enumerate(otel.read_otlp(source, unread=unread), 1)  # each row a dict of its own, made for this reader


def read_rows(path: str | Path, fmt: Format = "telemetry", *, progress: bool = False,
              unread: Unread | None = None) -> Iterator[tuple[int, dict]]:
    """The rows of a telemetry or OTLP file one at a time, each as :func:`_telemetry` keeps it, with its line number:
    what a reader that aggregates as it goes reads, so that a run of a million rows is never held whole."""
    if fmt not in ("telemetry", "otel"):
        raise LogError("logs.bad_format", got=str(fmt), known=Listed(FORMATS))
    unread = unread if unread is not None else Unread(strict=True)
    source = str(path)
    if fmt == "otel":
        # a span's row already is what _row keeps: every Event field, none null that cannot be (otel._row
        # writes each with its type), no other key (a test holds the two equal)
        yield from _otel_rows(source, unread)
        return
    yield from _json_rows(source, _lines(source, progress=progress, unread=unread), unread)


def _telemetry(source: str, rows: Iterable[tuple[int, dict]]) -> Iterator[LogRun]:
    """Rows grouped by run: a run is given out when its ``end`` row comes (or at the end of the file). Holds every
    row of a run until it ends: :func:`agentlab.evals.log_review.review_logs` reads :func:`read_rows` instead."""
    open_runs: dict[str, tuple[int, list[dict]]] = {}
    for n, d in rows:
        rid = d["run_id"]
        first, held = open_runs.setdefault(rid, (n, []))
        held.append(d)  # (a row already: json lines made into rows as they are read, a span's row is one)
        if d["kind"] == "end":
            del open_runs[rid]
            yield _run_of(source, first, n, held)
        elif len(open_runs) > OPEN_RUNS:  # runs that never end must not fill the memory
            oldest = next(iter(open_runs))
            start, kept = open_runs.pop(oldest)
            yield _run_of(source, start, n, kept)
    for first, held in open_runs.values():
        yield _run_of(source, first, first, held)


def _run_of(source: str, first: int, last: int, rows: list[dict]) -> LogRun:
    status = next((r.get("final_status") for r in reversed(rows) if r.get("final_status")), None)
    meta = _meta(rows[0])
    return LogRun(source, first, last, rows=tuple(rows), day=meta["day"], status=status)
