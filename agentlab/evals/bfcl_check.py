"""What the BFCL figures are made from, checked before a figure is: the recordings, the questions, the shipped files.

A figure held beside the leaderboard's is only as good as what it was graded from. Before these checks, a recording
with its wrong answers taken out, another model's recording under this model's name, answers to questions outside
the sample, a question file whose accepted answers were edited, or a shipped file edited by hand each gave a confident
figure (and "reproduced: yes"); a line cut short gave a Python traceback with the machine's paths in it. Each is now
refused in one sentence in the reader's language (:class:`Untrusted`), naming a file by its name alone.

A recording is read line by line (:func:`read_recording`): each line a JSON object with the recorder's fields, the
lines of one question (or conversation) together and only once. :func:`check_recording` then holds it to the sample
it is graded on: each answer to a question of the sample, each made by the model the file is named for, and nothing
left out but its end. The recorder asks the sample in one fixed order (:func:`agentlab.evals.bfcl.recording_order`),
so a recording cut short (stopped, or still being made) lacks the questions after its last one; one that lacks a
question before others it holds was not made by the recorder as it is.
"""
from __future__ import annotations

import argparse
import hashlib
import json
import sys
from collections.abc import Callable, Collection, Iterator, Mapping, Sequence
from dataclasses import dataclass
from functools import cache
from pathlib import Path
from typing import Any, Literal, TypeVar

from ..i18n import Lang, LocalizedError
from ..resources import data_file

__all__ = [
    "RELEASE_FILE",
    "Coverage",
    "Untrusted",
    "check_data",
    "check_recording",
    "command",
    "mend_for_resume",
    "model_of",
    "read_recording",
    "read_results_file",
    "release",
]

Kind = Literal["prompt", "single", "multi"]
T = TypeVar("T")
#: the BFCL release the figures are for: the hash of each question and answer file (data/bfcl/release.json)
RELEASE_FILE = "bfcl/release.json"
#: the modes each kind of recording labels its conversations with (``<question id>/<mode>``)
_MODES: dict[Kind, tuple[str, ...]] = {"prompt": (), "single": ("loop", "constrained"), "multi": ("raw", "guarded")}
_SHOWN = 3  # question ids named in a sentence (then "and N more")


class Untrusted(LocalizedError):
    """A recording, a question file or a shipped file no figure is made from: why, as a line of the catalogue
    (``bfcl.check.*``), said in either language (:meth:`localized`). A ``ValueError``."""

    def _render_traceback_(self) -> list[str]:
        """What a notebook shows of it (IPython asks this in place of the traceback): the line, in the notebook's
        language (its ``LANG``). Notebook 18 showed the whole stack, with the machine's paths, and the line last and in
        English in the Chinese notebook: nothing in the stack is the learner's to fix."""
        lang: Lang = "en"
        try:
            from IPython import get_ipython
            shell = get_ipython()
            lang = "zh" if shell is not None and shell.user_ns.get("LANG") == "zh" else "en"
        except ImportError:
            pass
        return [self.localized(lang)]


def model_of(size: str) -> str:
    """The name the recorder writes on each line of a size's recordings."""
    return f"qwen2.5-coder-{size}"


def _listed(ids: Sequence[str]) -> str:
    shown = ", ".join(ids[:_SHOWN])
    return shown + (f" (+{len(ids) - _SHOWN})" if len(ids) > _SHOWN else "")


def _lines(path: Path) -> Iterator[tuple[int, dict]]:
    """Each non-blank line of ``path`` as a JSON object, with its number; a line that is not one is refused."""
    try:
        f = path.open("rb")
    except OSError as exc:
        raise Untrusted("bfcl.check.unreadable", file=path.name, why=exc) from None
    with f:
        for n, raw in enumerate(f, 1):
            if not raw.strip():
                continue
            try:
                # a BOM (an editor's "UTF-8 with signature") starts the first line: read as the text it marks
                entry = json.loads(raw.decode("utf-8-sig" if n == 1 else "utf-8"), parse_constant=_no_constant)
            except UnicodeDecodeError:
                raise Untrusted("bfcl.check.not_utf8", file=path.name, line=n) from None
            except (json.JSONDecodeError, RecursionError, ValueError):
                raise Untrusted("bfcl.check.not_json", file=path.name, line=n) from None
            if not isinstance(entry, dict):
                raise Untrusted("bfcl.check.not_object", file=path.name, line=n)
            yield n, entry


def _no_constant(name: str) -> Any:
    """NaN and Infinity, which Python's json reads and no JSON holds: refused as the file's own error (a shipped figure
    of NaN was a ValueError traceback)."""
    raise ValueError(name)


def _field(entry: dict, name: str, kind: type | tuple[type, ...], path: Path, n: int) -> Any:
    if name not in entry:
        raise Untrusted("bfcl.check.missing_field", file=path.name, line=n, field=name)
    value = entry[name]
    if not isinstance(value, kind) or isinstance(value, bool):
        raise Untrusted("bfcl.check.wrong_type", file=path.name, line=n, field=name)
    return value


def _reply(entry: dict, path: Path, n: int) -> None:
    """A conversation line's reply as the recorder writes it (``reply_to_dict``), or its recorded API error: the
    fields a replay reads, each of its kind (an ``error`` without its code, a call without its arguments, a usage of
    the wrong length were tracebacks with the machine's paths)."""
    if "error" in entry:
        error = _field(entry, "error", dict, path, n)
        _field(error, "code", str, path, n)
        return
    reply = _field(entry, "reply", dict, path, n)
    if reply.get("content") is not None:
        _field(reply, "content", str, path, n)
    for call in _field(reply, "tool_calls", list, path, n) if "tool_calls" in reply else ():
        if not isinstance(call, dict):
            raise Untrusted("bfcl.check.wrong_type", file=path.name, line=n, field="tool_calls")
        _field(call, "name", str, path, n)
        _field(call, "arguments", str, path, n)
    usage = reply.get("usage")
    if usage is not None and not (isinstance(usage, list) and len(usage) == 2
                                  and all(isinstance(u, int) and not isinstance(u, bool) for u in usage)):
        raise Untrusted("bfcl.check.wrong_type", file=path.name, line=n, field="usage")


def read_recording(path: Path, kind: Kind, sample: Collection[str] | None = None) -> dict[str, list[dict]]:
    """Each recorded question's lines (``prompt``: by question id, its turns in order) or each conversation's
    (``single``, ``multi``: by label), in the file's order.

    Raises :class:`Untrusted` for a line that is not a JSON object in UTF-8, a field of the recorder's missing or of
    another type, a label that names no mode of the recorder's, a question's turns out of order, or a question (a
    conversation) recorded in two places of the file (a file appended to itself: counted twice, or refused later by a
    message that told to record again, which then failed the same way). With ``sample``, an answer to a question not
    in it is refused at its line: a file of junk lines was read whole first (1.5 million of them, 1.2 GB)."""
    groups: dict[str, list[dict]] = {}
    last: str | None = None
    for n, entry in _lines(path):
        if kind == "prompt":
            key = _field(entry, "id", str, path, n)
            turn = _field(entry, "turn", int, path, n)
            _field(entry, "text", str, path, n)
        else:
            key = _field(entry, "label", str, path, n)
            qid, _, mode = key.rpartition("/")
            if not qid or mode not in _MODES[kind]:
                raise Untrusted("bfcl.check.label", file=path.name, line=n, label=key[:80],
                                modes=", ".join(_MODES[kind]))
            _reply(entry, path, n)
        if sample is not None and key != last:
            qid = key if kind == "prompt" else key.rpartition("/")[0]
            if qid not in sample:
                raise Untrusted("bfcl.check.outside", file=path.name, id=qid[:80], asked=len(sample))
        if key != last and key in groups:
            raise Untrusted("bfcl.check.twice", file=path.name, line=n, item=key[:80])
        if kind == "prompt":
            expected = len(groups.get(key, ())) + 1
            if turn != expected:
                raise Untrusted("bfcl.check.turns", file=path.name, line=n, id=key[:80], turn=turn, expected=expected)
        groups.setdefault(key, []).append(entry)
        last = key
    return groups


@dataclass(frozen=True)
class Coverage:
    """How much of the sample a recording holds: ``recorded`` of ``asked`` questions, ``ids`` those recorded in the
    recorder's order; the rest are its end (``left``), not yet recorded."""

    file: str
    recorded: int
    asked: int
    left: tuple[str, ...]
    ids: tuple[str, ...] = ()

    def check_replayed(self, replayed: Collection[str]) -> None:
        """Each recorded question but the last replays whole (``replayed``: the ids a replay gave a result for).
        A question cut short (a re-ask's last reply deleted) was left out of the figures without a word, which kept
        the wrong answers out as surely as deleting them: only the question the recorder was on when it stopped
        may be unfinished."""
        cut = [q for q in self.ids[:-1] if q not in replayed]
        if cut:
            raise Untrusted("bfcl.check.cut_short", file=self.file, missing=len(cut), ids=_listed(cut))


def check_recording(path: Path, kind: Kind, *, size: str, order: Sequence[str],
                    groups: Mapping[str, str] | None = None) -> Coverage:
    """``path`` held to the sample it is graded on, ``order`` (every question id of the sample, in the order the
    recorder asks them): every line read (:func:`read_recording`), each answer to a question of the sample and by
    ``size``'s model, every mode of each question recorded, and no question left out before one recorded.
    ``groups`` (question id -> its category): a recording of some categories only (the recorder's ``--categories``)
    is held to those categories' part of the order.

    Raises :class:`Untrusted` otherwise: figures graded from the rest would be of another sample, another model, or
    a sample with questions (or one mode's conversations) taken out, its wrong answers say, beside a leaderboard's
    figure for the whole."""
    if not path.is_file():
        raise Untrusted("bfcl.check.no_recording", file=path.name)
    model, place = model_of(size), {qid: i for i, qid in enumerate(order)}
    recorded = read_recording(path, kind, place)
    modes: dict[str, set[str]] = {}
    for key, entries in recorded.items():
        qid, _, mode = key.rpartition("/") if kind != "prompt" else (key, "", "")
        want = f"{model} (constrained)" if mode == "constrained" else model
        found = {str(e.get("model")) for e in entries}
        if found != {want}:
            raise Untrusted("bfcl.check.model", file=path.name, id=qid, found=", ".join(sorted(found))[:80],
                            expected=want)
        modes.setdefault(qid, set()).add(mode)
    if groups is not None:  # the categories it holds: a recording of multiple alone lacks no simple_python question
        held = {groups.get(q) for q in modes}
        order = [q for q in order if groups.get(q) in held]
        place = {qid: i for i, qid in enumerate(order)}
    ids = sorted(modes, key=place.__getitem__)
    last = place[ids[-1]] if ids else -1
    gaps = [q for q in order[:last] if q not in modes]
    if gaps:
        raise Untrusted("bfcl.check.gaps", file=path.name, missing=len(gaps), recorded=len(modes), asked=len(order),
                        ids=_listed(gaps))
    every = set(_MODES[kind]) or {""}
    partial = [q for q in ids[:-1] if modes[q] != every]
    if partial:  # the recorder writes every mode of a question before the next: only the last may lack one
        raise Untrusted("bfcl.check.modes", file=path.name, missing=len(partial), ids=_listed(partial),
                        modes=", ".join(_MODES[kind]))
    return Coverage(path.name, len(modes), len(order), tuple(order[last + 1:]), tuple(ids))


def read_results_file(path: Path, make: Callable[[Any], T]) -> T:
    """``make(doc)`` of a shipped results file (``data/bfcl/*.json``) read as JSON, NaN and Infinity refused: what
    ``make`` builds and checks, or :class:`Untrusted` (``bfcl.check.shipped_unreadable``) for a file that is not JSON
    or not of the shape ``make`` reads (a key missing, a value of another kind); ``make``'s own refusals pass as
    they are."""
    try:
        doc = json.loads(path.read_text(encoding="utf-8"), parse_constant=_no_constant)
        return make(doc)
    except Untrusted:
        raise
    except (OSError, ValueError, RecursionError, KeyError, TypeError, AttributeError, OverflowError,
            ZeroDivisionError):
        raise Untrusted("bfcl.check.shipped_unreadable", file=path.name) from None


# --- the questions: the release the figures are for ------------------------------------------------------------
@cache
def release() -> dict[str, Any]:
    """The BFCL release the leaderboard's figures and the workbook's are for: its commit, and each file's SHA-256."""
    return json.loads(data_file(RELEASE_FILE).read_text(encoding="utf-8"))


_HASHED: dict[tuple[str, int, int], str] = {}


def _sha256(path: Path) -> str:
    st = path.stat()
    key = (str(path.resolve()), st.st_mtime_ns, st.st_size)
    if key not in _HASHED:
        _HASHED[key] = hashlib.sha256(path.read_bytes()).hexdigest()
    return _HASHED[key]


def check_data(path: Path, name: str) -> None:
    """``path`` is the release's file ``name`` (``data/BFCL_v4_multiple.json``, ``possible_answer/...``), unchanged.

    Raises :class:`Untrusted` for a file of another content: questions or accepted answers edited (or another release
    of them) grade replies against something the leaderboard's figure was not."""
    files: Mapping[str, str] = release()["files"]
    if name in files and not path.is_file():
        raise Untrusted("bfcl.check.data_missing", file=name, commit=release()["commit"][:8])
    if name not in files:
        raise Untrusted("bfcl.check.data_unknown", file=name, commit=release()["commit"][:8])
    if _sha256(path) != files[name]:
        raise Untrusted("bfcl.check.data_changed", file=name, commit=release()["commit"][:8])


# --- a recording resumed -------------------------------------------------------------------------------------------
def mend_for_resume(path: Path, keep: Callable[[dict], bool] | None = None) -> None:
    """A recording made ready to record on from: a last line the recorder did not finish dropped (no newline: it
    stopped mid-write; reading it was a traceback), and with ``keep`` only the lines of conversations ``keep`` says
    are whole (the rest is asked again). Lines are split at newlines alone: a reply that holds U+2028 is one line of
    JSON, which ``str.splitlines`` cut in two, and the resume stopped on it."""
    if not path.is_file():
        return
    data = path.read_bytes()
    lines = data.split(b"\n")[:-1]  # the part after the last newline is a line cut short, or nothing
    if keep is not None:
        lines = [x for x in lines if x.strip() and keep(json.loads(x.decode("utf-8-sig")))]
    mended = b"".join(x + b"\n" for x in lines)
    if mended != data:
        path.write_bytes(mended)


# --- the benchmarks' command lines ----------------------------------------------------------------------------------
def command(build: Callable[[Lang], argparse.ArgumentParser], body: Callable[[argparse.Namespace, Lang], int],
            argv: list[str] | None = None) -> int:
    """A BFCL benchmark's command line: its options read in the reader's language (``--lang zh``, or the locale), a
    usage error said in one line; then ``body``, whose refusals (:class:`Untrusted`: a recording, the questions or a
    shipped file no figure is made from) are one line in that language and exit 2, never a traceback."""
    from ..cmdline import parse
    ns, code, lang = parse(build, sys.argv[1:] if argv is None else argv)
    if ns is None:
        return code
    try:
        return body(ns, lang)
    except Untrusted as exc:
        print(exc.localized(lang), file=sys.stderr)
        return 2
