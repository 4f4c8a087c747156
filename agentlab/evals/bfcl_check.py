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
from typing import Any, Literal

from ..i18n import Lang, LocalizedError
from ..resources import data_file

__all__ = ["RELEASE_FILE", "Coverage", "Untrusted", "check_data", "check_recording", "command", "model_of",
           "read_recording", "release"]

Kind = Literal["prompt", "single", "multi"]
#: the BFCL release the figures are for: the hash of each question and answer file (data/bfcl/release.json)
RELEASE_FILE = "bfcl/release.json"
#: the modes each kind of recording labels its conversations with (``<question id>/<mode>``)
_MODES: dict[Kind, tuple[str, ...]] = {"prompt": (), "single": ("loop", "constrained"), "multi": ("raw", "guarded")}
_SHOWN = 3  # question ids named in a sentence (then "and N more")


class Untrusted(LocalizedError):
    """A recording, a question file or a shipped file no figure is made from: why, as a line of the catalogue
    (``bfcl.check.*``), said in either language (:meth:`localized`). A ``ValueError``."""


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
                entry = json.loads(raw.decode("utf-8"))
            except UnicodeDecodeError:
                raise Untrusted("bfcl.check.not_utf8", file=path.name, line=n) from None
            except (json.JSONDecodeError, RecursionError):
                raise Untrusted("bfcl.check.not_json", file=path.name, line=n) from None
            if not isinstance(entry, dict):
                raise Untrusted("bfcl.check.not_object", file=path.name, line=n)
            yield n, entry


def _field(entry: dict, name: str, kind: type | tuple[type, ...], path: Path, n: int) -> Any:
    if name not in entry:
        raise Untrusted("bfcl.check.missing_field", file=path.name, line=n, field=name)
    value = entry[name]
    if not isinstance(value, kind) or isinstance(value, bool):
        raise Untrusted("bfcl.check.wrong_type", file=path.name, line=n, field=name)
    return value


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
            _field(entry, "error" if "error" in entry else "reply", dict, path, n)
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
    """How much of the sample a recording holds: ``recorded`` of ``asked`` questions; the rest are its end
    (``left``, in the recorder's order), not yet recorded."""

    recorded: int
    asked: int
    left: tuple[str, ...]


def check_recording(path: Path, kind: Kind, *, size: str, order: Sequence[str]) -> Coverage:
    """``path`` held to the sample it is graded on, ``order`` (every question id of the sample, in the order the
    recorder asks them): every line read (:func:`read_recording`), each answer to a question of the sample and by
    ``size``'s model, and no question left out before one recorded.

    Raises :class:`Untrusted` otherwise: figures graded from the rest would be of another sample, another model, or
    a sample with questions taken out (its wrong answers, say), beside a leaderboard's figure for the whole."""
    if not path.is_file():
        raise Untrusted("bfcl.check.no_recording", file=path.name)
    model, place = model_of(size), {qid: i for i, qid in enumerate(order)}
    groups = read_recording(path, kind, place)
    seen: set[str] = set()
    for key, entries in groups.items():
        qid, _, mode = key.rpartition("/") if kind != "prompt" else (key, "", "")
        if qid not in place:
            raise Untrusted("bfcl.check.outside", file=path.name, id=qid[:80], asked=len(order))
        want = f"{model} (constrained)" if mode == "constrained" else model
        found = {str(e.get("model")) for e in entries}
        if found != {want}:
            raise Untrusted("bfcl.check.model", file=path.name, id=qid, found=", ".join(sorted(found))[:80],
                            expected=want)
        seen.add(qid)
    last = max((place[q] for q in seen), default=-1)
    gaps = [q for q in order[:last] if q not in seen]
    if gaps:
        raise Untrusted("bfcl.check.gaps", file=path.name, missing=len(gaps), recorded=len(seen), asked=len(order),
                        ids=_listed(gaps))
    return Coverage(len(seen), len(order), tuple(order[last + 1:]))


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
    if name not in files:
        raise Untrusted("bfcl.check.data_unknown", file=name, commit=release()["commit"][:8])
    if _sha256(path) != files[name]:
        raise Untrusted("bfcl.check.data_changed", file=name, commit=release()["commit"][:8])


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
