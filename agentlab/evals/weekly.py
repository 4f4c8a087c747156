"""The weekly bad-case review of a team's own logs or a stored suite run, as the evaluation courses teach it
(docs/metrics.md#the-weekly-bad-case-review): read each failed conversation whole, write a note on the first
thing that went wrong (open coding), group the notes into the team's own categories (axial coding), count them,
fix the largest, and follow the counts from week to week.

No widgets here: :mod:`agentlab.workbook.weekly_widget` shows it. The notes live in a SQLite file that several people
(several kernels) share: WAL, one transaction per write, a busy timeout (:class:`ReviewStore`). A bad input (an empty
note, a note of 100 KB, a category name with markup) is refused with a :class:`WeeklyError`, a sentence from the
catalogue with its key and fields, never a traceback."""
from __future__ import annotations

import contextlib
import csv
import hashlib
import html
import io
import json
import os
import re
import sqlite3
import tempfile
import time
import unicodedata
from collections import Counter
from collections.abc import Iterable, Iterator, Mapping, Sequence
from dataclasses import dataclass, field
from datetime import date
from pathlib import Path
from typing import Any

from ..errors import CODES, mask_personal, redact
from ..i18n import Lang, LocalizedError, colon, said_marks, t
from ..resources import data_file
from ..store import connect_sqlite
from .failure_classes import CODE_CLASSES, FAILURE_CLASSES, class_name
from .log_review import case_of, runs_of
from .logs import Format, LogRun, read_logs
from .review import STAGES, promote, tag_cause
from .suite import load_cases
from .unread import Unread

__all__ = ["ENDED_WELL", "MAX_AUTHOR", "MAX_CATEGORY", "MAX_NOTE", "FailedConversation", "Note", "ReviewStore", "Suggestion", "WeekReview",
           "WeeklyError", "category_trend", "check_category", "conversations_of_logs", "conversations_of_run", "export_week", "promote_conversation",
           "review_dir", "role_said", "status_said", "suggest_groups", "taxonomy", "week_of", "week_review", "weekly_csv", "weekly_html", "weeks_of"]

MAX_NOTE = 4000  # characters in one note: a paragraph, never a pasted log
MAX_AUTHOR = 80
MAX_CATEGORY = 60
_FAILED = frozenset({"failed", "escalated", "budget_exhausted"})  # of runs.STATUSES: the user got no answer
ENDED_WELL = frozenset({"done", "done_after_self_correction"})  #: the user got their answer (went wrong on the way)
_MARKUP = re.compile(r"[<>&\"'`{}\[\]\\]")


_NEW_CATEGORY = "INSERT OR IGNORE INTO categories(name, author, created) VALUES (?, ?, ?)"


class WeeklyError(LocalizedError):
    """A review input refused: ``key`` the catalogue's sentence, ``fields`` what it fills in; :meth:`to_dict` the structured
    message a page or a test reads."""

    def to_dict(self, lang: Lang = "en") -> dict[str, Any]:
        return {"error": self.key, "fields": {k: str(v) for k, v in self.fields.items()}, "message": self.localized(lang)}


# --- the conversations of a week ------------------------------------------------------------------
@dataclass(frozen=True)
class FailedConversation:
    """One failed conversation, whole: every message (tool calls and results included), shown redacted but never
    cut. ``id`` is stable across sessions and machines (a hash of the conversation itself); ``stage`` and
    ``failure_class`` are the package's own taxonomy of its first error (a starting point, never forced)."""

    id: str
    where: str
    day: str
    week: str
    status: str
    messages: tuple[dict, ...]
    stage: str = ""
    failure_class: str = ""
    codes: tuple[str, ...] = ()
    origin: Any = field(default=None, compare=False, repr=False)  # what a promotion replays

    def text(self) -> str:
        """The conversation as plain text, one line per message (for a search, a test, an export)."""
        return "\n".join(f"{m['role']}: {m['text']}" for m in self.shown())

    def shown(self) -> list[dict[str, str]]:
        """Each message as a reader sees it: ``role`` and ``text`` (calls written out), secrets removed and
        personal data masked, nothing cut."""
        out = []
        for m in self.messages:
            role = str(m.get("role", ""))
            content = m.get("content")
            text = content if isinstance(content, str) else "" if content is None else json.dumps(
                content, ensure_ascii=False, default=str)
            for c in m.get("tool_calls") or ():
                fn = c.get("function", {}) if isinstance(c, Mapping) else {}
                args = fn.get("arguments") if isinstance(fn, Mapping) else ""
                args = args if isinstance(args, str) else json.dumps(args, ensure_ascii=False, default=str)
                text += ("\n" if text else "") + f"→ {fn.get('name', '') if isinstance(fn, Mapping) else ''}({args})"
            out.append({"role": role, "text": mask_personal(redact(text))})
        return out


def week_of(day: str) -> str:
    """The ISO week of a ``YYYY-MM-DD`` day (``2026-W10``), or ``""`` for a conversation the logs do not date."""
    try:
        year, week, _ = date.fromisoformat(day[:10]).isocalendar()
    except ValueError:
        return ""
    return f"{year}-W{week:02d}"


def weeks_of(conversations: Iterable[FailedConversation]) -> list[str]:
    """The weeks the conversations fall in, newest first (undated last)."""
    weeks = {c.week for c in conversations}
    return sorted(weeks - {""}, reverse=True) + ([""] if "" in weeks else [])


def _stable_id(payload: Any, seen: Counter) -> str:
    digest = hashlib.sha256(json.dumps(payload, ensure_ascii=False, sort_keys=True, default=str).encode()).hexdigest()
    seen[digest] += 1  # the same conversation twice in a file: the second is its own
    return digest[:12] + (f"-{seen[digest]}" if seen[digest] > 1 else "")


def _taxonomy_of(codes: Sequence[str], stages: Sequence[str]) -> tuple[str, str]:
    stage = next((s for s in stages if s), "") or (CODES.get(codes[0], ("", ""))[1] if codes else "")
    return stage, next((CODE_CLASSES[c] for c in codes if c in CODE_CLASSES), "")


def _rows_as_messages(rows: Sequence[Mapping[str, Any]]) -> tuple[dict, ...]:
    """A telemetry run as the messages it stands for: each model turn, each call with its arguments, each result."""
    out: list[dict] = []
    for r in rows:
        if r.get("kind") == "model":
            said_ = r.get("model_visible") or ""
            if not said_.lstrip().startswith("→"):  # " → get_order": a turn that only made calls, shown by its calls
                out.append({"role": "assistant", "content": said_})
        elif r.get("kind") == "tool":
            out.append({"role": "assistant", "content": None, "tool_calls": [
                {"id": r.get("tool_call_id"), "function": {"name": r.get("tool_name") or "",
                                                           "arguments": r.get("args_raw") or ""}}]})
            said_ = r.get("model_visible") or ""
            code = r.get("error_code")
            out.append({"role": "tool", "content": f"{code}: {said_}" if code and said_ else code or said_})
        elif r.get("kind") == "end":
            out.append({"role": "end", "content": " ".join(
                str(x) for x in (r.get("final_status"), r.get("error_code"), r.get("model_visible")) if x)})
    return tuple(out)


def conversations_of_logs(path: str | Path, fmt: Format = "openai", *, unread: Unread | None = None) -> list[FailedConversation]:
    """The failed conversations of a log file in a format ``review --logs`` reads: those where the loop's validator found
    something wrong, the logs say it failed, or it ended failed or handed to a person. A line that cannot be read, once
    one has been, is read past and counted in ``unread``, as the review does (one line cut short dropped the file)."""
    out: list[FailedConversation] = []
    seen: Counter = Counter()
    for log, run, found in runs_of(read_logs(path, fmt, unread=unread if unread is not None else Unread())):
        if not (found or log.success is False or run.status in _FAILED):
            continue
        messages = log.messages or _rows_as_messages(log.rows)
        codes = tuple(f.code for f in found) or tuple(e.error_code for e in run.events if e.error_code)
        stage, cls = _taxonomy_of(codes, [f.stage for f in found])
        out.append(FailedConversation(_stable_id(log.messages or log.rows, seen), log.where, log.day, week_of(log.day),
                                run.status, tuple(messages), stage, cls, codes, (log, tuple(found))))
    return out


def conversations_of_run(path: str | Path, cases: Iterable[Any] | None = None) -> list[FailedConversation]:
    """The failed sessions of a stored suite run (``run_suite(..., store=folder)``), each with its messages.
    ``cases``: the cases they ran (for a promotion); by default the shipped suites'."""
    from .results import load_results
    stored = load_results(path)
    day = str(stored.meta.get("time", ""))[:10]
    known = {c.id: c for c in (cases if cases is not None else _shipped_cases())}
    out: list[FailedConversation] = []
    seen: Counter = Counter()
    for r in stored.results:
        if r.passed:
            continue
        stage, code = tag_cause(r)
        codes = (code,) if code else tuple(e.error_code for e in r.run.events if e.error_code)
        out.append(FailedConversation(_stable_id([r.case_id, r.trial, r.run.messages], seen), f"{stored.path.name}/{r.case_id}",
                                day, week_of(day), r.run.status, tuple(r.run.messages), stage,
                                _taxonomy_of(codes, [])[1], codes, (r, known.get(r.case_id))))
    return out


def _shipped_cases() -> list[Any]:
    return [c for name in ("aftersales_cases.jsonl", "expense_cases.jsonl") for c in load_cases(data_file(name))]


# --- notes and categories, shared in one SQLite file ----------------------------------------------
@dataclass(frozen=True)
class Note:
    """What one reviewer wrote about one conversation, and the category the team filed it under (``""``: not yet)."""

    id: int
    week: str
    conversation: str
    text: str
    author: str
    created: float
    category: str = ""


def review_dir(folder: str | Path | None = None) -> Path:
    """Where the review keeps its file and its exports: ``folder``, else ``AGENTLAB_REVIEW_DIR``, else
    ``.agentlab-review`` under the current folder."""
    return Path(folder or os.environ.get("AGENTLAB_REVIEW_DIR") or Path.cwd() / ".agentlab-review")


def _clean(text: Any) -> str:
    return unicodedata.normalize("NFC", text).strip() if isinstance(text, str) else ""


def _check_note(text: Any, author: Any) -> tuple[str, str]:
    body, who = _clean(text), _clean(author)
    if not body:
        raise WeeklyError("weekly.err.empty_note")
    if len(body) > MAX_NOTE:
        raise WeeklyError("weekly.err.note_too_long", n=len(body), limit=MAX_NOTE)
    if not who:
        raise WeeklyError("weekly.err.no_author")
    if len(who) > MAX_AUTHOR or _MARKUP.search(who) or any(unicodedata.category(c)[0] == "C" for c in who):
        raise WeeklyError("weekly.err.bad_author", limit=MAX_AUTHOR)
    return body, who


#: the marks that end or join phrases, trimmed from a category's ends with its spaces (a closing bracket is kept:
#: "timeout (retry)")
_END_MARKS = " \t\u3000,.;:!?，。、；：！？…"


def check_category(name: Any) -> str:
    """A category name as kept (trimmed of spaces and of the marks that end a phrase, ``参数错误，，`` read as ``参数错误``:
    two rows for one category, tied in the summary), or a :class:`WeeklyError`: empty, too long, markup or control
    characters."""
    cat = _clean(name).strip(_END_MARKS)
    if not cat:
        raise WeeklyError("weekly.err.empty_category")
    if len(cat) > MAX_CATEGORY or _MARKUP.search(cat) or any(unicodedata.category(c)[0] == "C" for c in cat):
        raise WeeklyError("weekly.err.bad_category", limit=MAX_CATEGORY)
    return cat


class ReviewStore:
    """The notes of every week, in ``review.sqlite`` under :func:`review_dir`: two reviewers (two processes) on
    the same file see each other's notes on their next read. Each write is one transaction; a note is there
    whole or not at all."""

    _SCHEMA = """
    CREATE TABLE IF NOT EXISTS notes (
        id INTEGER PRIMARY KEY AUTOINCREMENT, week TEXT NOT NULL, conversation TEXT NOT NULL, text TEXT NOT NULL,
        author TEXT NOT NULL, created REAL NOT NULL, category TEXT NOT NULL DEFAULT '');
    CREATE INDEX IF NOT EXISTS notes_by_week ON notes(week);
    CREATE TABLE IF NOT EXISTS categories (name TEXT PRIMARY KEY, author TEXT NOT NULL, created REAL NOT NULL);
    CREATE TABLE IF NOT EXISTS promoted (
        conversation TEXT PRIMARY KEY, week TEXT NOT NULL, case_id TEXT NOT NULL, suite TEXT NOT NULL,
        created REAL NOT NULL);
    """

    def __init__(self, folder: str | Path | None = None, *, timeout: float = 10.0):
        self.folder = review_dir(folder)
        self.path = self.folder / "review.sqlite"
        try:
            self.folder.mkdir(parents=True, exist_ok=True)
            self.db = connect_sqlite(self.path, self._SCHEMA, wal=True, timeout=timeout)
            self.db.execute(f"PRAGMA busy_timeout={int(timeout * 1000)}")
        except (OSError, sqlite3.Error):  # a folder nobody may write, a file that is not a database
            raise WeeklyError("weekly.err.store_unwritable", path=str(self.folder)) from None

    def __repr__(self) -> str:
        return f"ReviewStore({self.path})"

    def close(self) -> None:
        self.db.close()

    def _write(self, sql: str, args: Sequence[Any], *more: tuple[str, Sequence[Any]]) -> sqlite3.Cursor:
        """``sql`` and ``more`` in one transaction (:meth:`_transaction`); the first statement's cursor."""
        with self._transaction():
            cur = self.db.execute(sql, args)
            for statement, values in more:
                self.db.execute(statement, values)
        return cur

    @contextlib.contextmanager
    def _transaction(self) -> Iterator[None]:
        """One transaction: everything in it written, or none (a failed COMMIT rolled back too, else the connection
        stayed inside it and every later write failed); a locked or read-only store said as one sentence."""
        try:
            self.db.execute("BEGIN IMMEDIATE")
        except sqlite3.OperationalError:  # still locked after the busy timeout
            raise WeeklyError("weekly.err.store_busy", path=str(self.path)) from None
        try:
            yield
            self.db.execute("COMMIT")
        except BaseException as exc:
            self.db.execute("ROLLBACK")
            if isinstance(exc, sqlite3.OperationalError):  # locked at COMMIT, read-only, a full disk
                raise WeeklyError("weekly.err.store_busy", path=str(self.path)) from None
            raise

    def add_note(self, conversation: FailedConversation | str, text: Any, author: Any, *, week: str | None = None,
                 category: Any = "") -> Note:
        """Save a note (``text`` by ``author``) on a conversation; ``category`` files it at once (optional)."""
        body, who = _check_note(text, author)
        cat = self._as_stored(check_category(category)) if _clean(category) else ""
        cid = conversation.id if isinstance(conversation, FailedConversation) else str(conversation)
        wk = week if week is not None else conversation.week if isinstance(conversation, FailedConversation) else ""
        now = time.time()
        cur = self._write("INSERT INTO notes(week, conversation, text, author, created, category) "
                          "VALUES (?, ?, ?, ?, ?, ?)", (wk, cid, body, who, now, cat),
                          *([(_NEW_CATEGORY, (cat, who, now))] if cat else []))  # the note and its category at once
        return Note(int(cur.lastrowid or 0), wk, cid, body, who, now, cat)

    def assign(self, note_id: int, category: Any, author: str = "") -> Note:
        """File a note under a category the team names (``""`` takes it out of every category)."""
        cat = self._as_stored(check_category(category)) if _clean(category) else ""
        if self._write("UPDATE notes SET category = ? WHERE id = ?", (cat, int(note_id)),
                       *([(_NEW_CATEGORY, (cat, author, time.time()))] if cat else [])).rowcount != 1:
            raise WeeklyError("weekly.err.no_note", id=note_id)
        return next(n for n in self.notes() if n.id == int(note_id))

    def file_unfiled(self, note_ids: Iterable[int], category: Any, author: str = "") -> tuple[list[int], list[Note]]:
        """File the notes that are under no category yet under ``category``, in one transaction; a note someone has
        filed already keeps its category (a suggestion is made from the notes as they were when the page was drawn,
        and a colleague may have filed one since). Returns the ids filed now and the notes that kept their own."""
        cat = self._as_stored(check_category(category))
        ids = [int(i) for i in note_ids]
        filed: list[int] = []
        with self._transaction():
            for nid in ids:
                if self.db.execute("UPDATE notes SET category = ? WHERE id = ? AND category = ''", (cat, nid)).rowcount:
                    filed.append(nid)
            if filed:
                self.db.execute(_NEW_CATEGORY, (cat, author, time.time()))
        # a note already under this very category is where it was to go: filed, not "kept by someone"
        rest = [n for n in self.notes() if n.id in set(ids) - set(filed)]
        filed += [n.id for n in rest if n.category == cat]
        return filed, [n for n in rest if n.category != cat]

    def add_category(self, name: Any, author: str = "") -> str:
        cat = self._as_stored(check_category(name))
        self._write(_NEW_CATEGORY, (cat, author, time.time()))
        return cat

    def _as_stored(self, cat: str) -> str:
        """``cat`` as the team already keeps it: a category stored before names were trimmed (``timeout.``) is the
        same category as ``timeout`` typed now, not a second row beside it."""
        return next((name for name in self.categories() if name != cat and name.strip(_END_MARKS) == cat), cat)

    def categories(self) -> list[str]:
        """Every category the team has named, oldest first."""
        return [r[0] for r in self.db.execute("SELECT name FROM categories ORDER BY created, name")]

    def notes(self, week: str | None = None, conversation: str | None = None) -> list[Note]:
        """The notes saved so far (by anyone), oldest first: of a week, of a conversation, or all."""
        sql = "SELECT id, week, conversation, text, author, created, category FROM notes WHERE 1=1"
        args: list[str] = []
        if week is not None:
            sql, args = sql + " AND week = ?", [*args, week]
        if conversation is not None:
            sql, args = sql + " AND conversation = ?", [*args, conversation]
        return [Note(*row) for row in self.db.execute(sql + " ORDER BY created, id", args)]

    def counts(self, week: str) -> dict[str, int]:
        """Conversations per category in a week (a conversation counted once per category), largest first."""
        return _counts(self.notes(week))

    def mark_promoted(self, conversation: FailedConversation, case_id: str, suite: str | Path) -> None:
        self._write("INSERT OR REPLACE INTO promoted(conversation, week, case_id, suite, created) VALUES (?, ?, ?, ?, ?)",
                    (conversation.id, conversation.week, case_id, str(suite), time.time()))

    def promoted(self, week: str | None = None) -> dict[str, str]:
        """FailedConversation id -> the case id it became."""
        rows = self.db.execute("SELECT conversation, case_id FROM promoted" + (" WHERE week = ?" if week is not None
                                                                               else ""), (week,) if week is not None else ())
        return dict(rows.fetchall())


def _counts(notes: Iterable[Note]) -> dict[str, int]:
    pairs = {(n.category, n.conversation) for n in notes if n.category}
    counted = Counter(cat for cat, _ in pairs)
    return dict(sorted(counted.items(), key=lambda kv: (-kv[1], kv[0])))


def category_trend(store: ReviewStore, weeks: Sequence[str] | None = None, conversations: Iterable[str] | None = None) -> dict[str, dict[str, int]]:
    """``{week: {category: conversations}}`` oldest week first, every category in every week (0 where none).
    ``conversations``: only notes on these (the ids of the source reviewed), as :func:`week_review` counts them."""
    notes = store.notes()
    if conversations is not None:
        ids = set(conversations)
        notes = [n for n in notes if n.conversation in ids]
    weeks = sorted(set(weeks) if weeks is not None else {n.week for n in notes if n.week})
    per = {w: _counts(n for n in notes if n.week == w) for w in weeks}
    names = sorted({c for row in per.values() for c in row})
    return {w: {c: per[w].get(c, 0) for c in names} for w in weeks}


# --- grouping the notes ---------------------------------------------------------------------------
@dataclass(frozen=True)
class Suggestion:
    """A proposed category: its ``name``, the notes it would take, and where it came from (``words`` shared by the
    notes, or the package's ``stages`` / ``classes``)."""

    name: str
    notes: tuple[int, ...]
    source: str


_STOP_EN = frozenset("""a about after again all also an and any are as at be because been before being but by can
could did do does doing done for from get got had has have he her his how i if in into is it its just me more my
no not of on once only or other our out over same she should so some than that the their them then there these
they this to too twice up us very was we were what when where which while who why will with would you your
""".split())
_STOP_ZH = frozenset("的了是在和有我你他她它这那个也就都而及与着又被把给让对从向到吗呢吧啊")
_WORD = re.compile(r"[A-Za-z][A-Za-z0-9_']+")
_HAN = re.compile(r"[\u3400-\u9fff]+")


_LONGEST_ZH = 8  # the longest Chinese term tried: a phrase a note shares with another ("金额写成"), not a sentence


def _terms(text: str) -> set[str]:
    """The words a note is about: English words (lower case, a plural's s dropped) less stop-words, and Chinese
    two-character runs (text in Chinese has no spaces) less those with a particle."""
    out = set()
    for w in _WORD.findall(text.lower()):
        w = re.sub(r"'s?$", "", w).strip("'")  # "customer's" is customer: the quote first, then a plural's s
        if w.endswith("s") and len(w) > 4 and not w.endswith(("ss", "us", "is")):  # status, analysis stay whole
            w = w[:-1]
        if w not in _STOP_EN and len(w) > 2:
            out.add(w)
    for run in _HAN.findall(text):
        out |= {run[i:i + 2] for i in range(len(run) - 1) if not set(run[i:i + 2]) & _STOP_ZH}
    return out


def _longest(pair: str, texts: Sequence[str]) -> str:
    """The longest Chinese phrase (up to eight characters, no particle at either end) around ``pair`` that every one
    of ``texts`` holds: what a group of notes that share the pair is named by."""
    best, first, at = pair, texts[0], texts[0].find(pair)
    while at >= 0:
        lo, hi = at, at + 2

        def everywhere(piece: str) -> bool:
            return all(piece in text for text in texts[1:])
        while hi - lo < _LONGEST_ZH and hi < len(first) and _HAN.fullmatch(first[hi]) and everywhere(first[lo:hi + 1]):
            hi += 1
        while hi - lo < _LONGEST_ZH and lo > 0 and _HAN.fullmatch(first[lo - 1]) and everywhere(first[lo - 1:hi]):
            lo -= 1
        while hi - lo > 2 and first[hi - 1] in _STOP_ZH:
            hi -= 1
        while hi - lo > 2 and first[lo] in _STOP_ZH:
            lo += 1
        if (-(hi - lo), first[lo:hi]) < (-len(best), best):
            best = first[lo:hi]
        at = first.find(pair, at + 1)
    return best


def taxonomy(lang: Lang = "en") -> list[str]:
    """The package's own categories, as a starting point: the four stages, then the five classes of failure."""
    return [t("stage." + s, lang) for s in STAGES] + [class_name(c, lang) for c in FAILURE_CLASSES]


def _group_name(words: list[str], texts: Sequence[str]) -> str:
    """A group's name: the longest Chinese phrase its notes share (found only for the groups offered, each pair
    skipped once a longer phrase holds it, and no search past the longest phrase tried: notes that repeat each other
    cost no more than others), else its longest word, the first in order among equals."""
    best = ""
    for pair in sorted(w for w in words if _HAN.fullmatch(w)):
        if len(best) >= _LONGEST_ZH:
            break
        if pair in best:
            continue
        found = _longest(pair, texts)
        if (-len(found), found) < (-len(best), best):
            best = found
    return best or min(words, key=lambda w: (-len(w), w))


def suggest_groups(notes: Sequence[Note], lang: Lang = "en", conversations: Iterable[FailedConversation] = (),
                   *, limit: int = 8) -> list[Suggestion]:
    """Groups proposed from the notes' own words (a word or a Chinese phrase shared by two notes or more, the most
    shared first, one per set of notes, named by its longest shared phrase), then the package's stages and classes
    the conversations fall in. A word every note holds tells no group apart: offered after the others. Deterministic;
    a suggestion is only offered, a note may go under any name.

    Chinese notes were offered their most common pairs of characters first: 工具 and 模型, which every note about an
    agent holds, before 金额写成, which two notes shared."""
    terms = {n.id: _terms(n.text) for n in notes}
    text_of = {n.id: n.text for n in notes}
    holders: dict[str, set[int]] = {}
    for nid, words in terms.items():
        for w in words:
            holders.setdefault(w, set()).add(nid)
    by_set: dict[frozenset[int], list[str]] = {}
    for word, ids in holders.items():
        if len(ids) > 1:
            by_set.setdefault(frozenset(ids), []).append(word)
    everyone = len(terms) if len(terms) > 2 else -1  # with two notes, what both share is the group
    out: list[Suggestion] = []
    for group in sorted(by_set, key=lambda s: (len(s) == everyone, -len(s), min(by_set[s])))[:limit]:
        texts = [text_of[i] for i in sorted(group)]
        out.append(Suggestion(_group_name(by_set[group], texts), tuple(sorted(group)), "words"))
    by_conv: dict[str, list[int]] = {}
    for n in notes:
        by_conv.setdefault(n.conversation, []).append(n.id)
    stage_of: dict[str, list[int]] = {}
    class_of: dict[str, list[int]] = {}
    for c in conversations:
        if c.stage in STAGES:
            stage_of.setdefault(t("stage." + c.stage, lang), []).extend(by_conv.get(c.id, ()))
        if c.failure_class:
            class_of.setdefault(class_name(c.failure_class, lang), []).extend(by_conv.get(c.id, ()))
    for source, found in (("stages", stage_of), ("classes", class_of)):
        # a group of one note is no group: it is offered only once a second note falls there too
        out += [Suggestion(name, tuple(sorted(set(ids))), source) for name, ids in sorted(found.items()) if len(set(ids)) >= 2]
    return out


def role_said(role: str, lang: Lang) -> str:
    """A message's role as a person reads it (系统, 用户...); a role the workbook does not know, as the log says it."""
    key = f"weekly.role.{role}"
    return t(key, lang) if key in _ROLES else role


_ROLES = frozenset(f"weekly.role.{r}" for r in ("system", "user", "assistant", "tool", "end"))


# --- a week's review: counts, promotion, exports --------------------------------------------------
@dataclass(frozen=True)
class WeekReview:
    """One week of one source: its failed conversations, every note on them, the counts per category."""

    source: str
    week: str
    conversations: tuple[FailedConversation, ...]
    notes: tuple[Note, ...]
    counts: Mapping[str, int]
    promoted: Mapping[str, str]


def week_review(store: ReviewStore, conversations: Iterable[FailedConversation], week: str, source: str = "") -> WeekReview:
    convs = tuple(c for c in conversations if c.week == week)
    ids = {c.id for c in convs}
    notes = tuple(n for n in store.notes(week) if n.conversation in ids)
    promoted = {k: v for k, v in store.promoted(week).items() if k in ids}
    return WeekReview(source, week, convs, notes, _counts(notes), promoted)


@contextlib.contextmanager
def _suite_lock(suite: Path) -> Iterator[None]:
    """An exclusive lock on ``suite`` (a file beside it), held while a case is chosen an id and appended."""
    import fcntl
    with open(suite.with_name(suite.name + ".lock"), "a") as lock:
        fcntl.flock(lock, fcntl.LOCK_EX)
        try:
            yield
        finally:
            fcntl.flock(lock, fcntl.LOCK_UN)


def promote_conversation(conversation: FailedConversation, suite: str | Path, store: ReviewStore | None = None) -> str:
    """Append the conversation to a regression suite (JSONL) as a case that replays it: a log's by
    :func:`~agentlab.evals.log_review.case_of`, a stored session's by :func:`~agentlab.evals.review.promote`.
    The suite's own reader checks the new line; the case's id is returned."""
    suite = Path(suite)
    suite.parent.mkdir(parents=True, exist_ok=True)
    origin = conversation.origin
    if origin is None or not isinstance(origin, tuple):
        raise WeeklyError("weekly.err.cannot_promote", id=conversation.id)
    first, second = origin
    with _suite_lock(suite):  # two reviewers promoting at once: one after the other, never one line over another
        kept = store.promoted().get(conversation.id) if store is not None else None
        if kept is not None and suite.exists() and kept in {c.id for c in load_cases(suite)}:
            return kept  # kept already (by a colleague, or a second click): one case per conversation, not two
        size = suite.stat().st_size if suite.exists() else None
        try:
            if hasattr(first, "messages") and isinstance(second, tuple):  # a log's conversation and its findings
                made = case_of(first, list(second)) if first.messages else None
                if made is None or not made["runnable"]:  # (not runnable: as the log review says, never a case)
                    raise WeeklyError("weekly.err.not_runnable" if made else "weekly.err.cannot_promote", id=conversation.id)
                case = dict(made["case"])
                existing = {c.id for c in load_cases(suite)} if suite.exists() else set()
                base, n = f"log-{conversation.id}", 1
                case["id"] = base
                while case["id"] in existing:
                    n += 1
                    case["id"] = f"{base}-{n}"
                with suite.open("a", encoding="utf-8") as f:
                    f.write(json.dumps(case, ensure_ascii=False) + "\n")
                case_id = str(case["id"])
            else:
                if second is None:
                    raise WeeklyError("weekly.err.cannot_promote", id=conversation.id)
                case_id = promote(first, second, suite).id
            load_cases(suite)  # the suite's reader accepts the new line
        except Exception:
            # put the file back as it was: cut at the length it had, so nothing a colleague wrote before goes
            if size is None:
                suite.unlink(missing_ok=True)
            elif suite.exists() and suite.stat().st_size > size:
                os.truncate(suite, size)
            raise
    if store is not None:
        store.mark_promoted(conversation, case_id, suite)
    return case_id


def _week_label(week: str, lang: Lang) -> str:
    return week or t("weekly.undated", lang)


def _cell(value: object) -> object:
    """A text cell a spreadsheet will not run: one that starts as a formula does ("=HYPERLINK(...)", "+cmd", "@SUM")
    gets a leading apostrophe, which the spreadsheet shows as text."""
    return "'" + value if isinstance(value, str) and value[:1] in ("=", "+", "-", "@", "\t", "\r") else value


def weekly_csv(review: WeekReview, lang: Lang = "en") -> str:
    """One row per note (a conversation with none gets a row too), headed in ``lang``; the file
    :func:`export_week` writes adds the UTF-8 byte-order mark, so that Excel reads Chinese."""
    buf = io.StringIO()
    w = csv.writer(buf)
    w.writerow([t(f"weekly.col.{k}", lang) for k in ("week", "conversation", "where", "status", "stage", "note",
                                                      "author", "time", "category", "promoted")])
    by_conv: dict[str, list[Note]] = {}
    for n in review.notes:
        by_conv.setdefault(n.conversation, []).append(n)
    for c in review.conversations:
        stage = t("stage." + c.stage, lang) if c.stage in STAGES else ""
        for n in by_conv.get(c.id) or [None]:  # type: ignore[list-item]
            w.writerow([_cell(v) for v in (
                _week_label(review.week, lang), c.id, c.where, status_said(c, lang), stage,
                n.text if n else "", n.author if n else "",
                time.strftime("%Y-%m-%d %H:%M", time.localtime(n.created)) if n else "",
                n.category if n else "", review.promoted.get(c.id, ""))])
    return buf.getvalue()


def status_said(conv: FailedConversation, lang: Lang = "en") -> str:
    """How a conversation ended, in words. One from the logs that stops on a call with no reply after it ("failed",
    as the log review counts it) did not finish: "crashed", as a run of the loop's own says, is not what logs show."""
    logged = isinstance(conv.origin, tuple) and bool(conv.origin) and isinstance(conv.origin[0], LogRun)
    return t("weekly.status_failed" if logged and conv.status == "failed" else f"status.{conv.status}", lang)


def weekly_html(review: WeekReview, lang: Lang = "en") -> str:
    """The week's review as one page: the counts per category, then each conversation whole with its notes.
    Every text from the logs or the notes is escaped; the page has no script."""
    e = html.escape
    # a share of the week's failed conversations, as the app's table gives it
    total = max(sum(review.counts.values()), len(review.conversations), 1)
    rows = "".join(f"<tr><td>{e(cat)}</td><td class='n'>{n}</td><td class='n'>{n / total:.0%}</td></tr>"
                   for cat, n in review.counts.items()) or \
        f"<tr><td colspan='3'>{e(t('weekly.no_counts', lang))}</td></tr>"
    by_conv: dict[str, list[Note]] = {}
    for n in review.notes:
        by_conv.setdefault(n.conversation, []).append(n)
    parts = []
    for c in review.conversations:
        # each role said as the page says it (系统, 用户...), not the log's own word for it
        msgs = "".join(f"<li><b>{e(role_said(m['role'], lang))}</b>{colon(lang)}"
                       f"<span style='white-space:pre-wrap'>{e(m['text'])}</span></li>" for m in c.shown())
        notes = "".join(f"<li>{e(n.text)} — {e(n.author)}{' [' + e(n.category) + ']' if n.category else ''}</li>"
                        for n in by_conv.get(c.id, ())) or f"<li>{e(t('weekly.no_notes', lang))}</li>"
        promoted = f"<p>{e(t('weekly.promoted_as', lang, id=review.promoted[c.id]))}</p>" if c.id in review.promoted else ""
        parts.append(f"<section><h3>{e(c.id)} · {e(c.where)} · {e(status_said(c, lang))}</h3><ol>{msgs}</ol>"
                     f"<h4>{e(t('weekly.notes', lang))}</h4><ul>{notes}</ul>{promoted}</section>")
    title = t("weekly.export_title", lang, week=_week_label(review.week, lang), source=review.source)
    head = "".join(f"<th>{e(t(f'weekly.col.{k}', lang))}</th>" for k in ("category", "count", "share"))
    return (f"<!DOCTYPE html><html lang='{'zh-CN' if lang == 'zh' else 'en'}'><head><meta charset='utf-8'>"
            f"<title>{e(title)}</title><style>{data_file('templates/weekly_export.css').read_text(encoding='utf-8')}"
            f"</style></head><body><h1>{e(title)}</h1>"
            f"<h2>{e(t('weekly.counts', lang))}</h2><table><thead><tr>{head}</tr></thead><tbody>{rows}</tbody></table>"
            f"<h2>{e(t('weekly.conversations', lang, n=len(review.conversations)))}</h2>{''.join(parts)}</body></html>")


def export_week(review: WeekReview, folder: str | Path, lang: Lang = "en") -> dict[str, Path]:
    """``weekly-<week>-<source>-<lang>.csv`` (UTF-8 with its byte-order mark) and ``.html`` in ``folder``, each written
    under a temporary name and renamed, so a colleague never opens half a file."""
    out = Path(folder)
    out.mkdir(parents=True, exist_ok=True)
    # the source in the name: the same week reviewed from another log file must not overwrite this one's export
    source = re.sub(r"[^\w.-]+", "-", Path(review.source).stem)[:40].strip("-.") if review.source else ""
    stem = f"weekly-{review.week or 'undated'}{'-' + source if source else ''}-{lang}"
    paths = {}
    # the marks of what was taken out of the logs ([phone …00]) said in the export's language, as the page says them
    for ext, body in (("csv", "\ufeff" + said_marks(weekly_csv(review, lang), lang)),
                      ("html", said_marks(weekly_html(review, lang), lang))):
        final = out / f"{stem}.{ext}"
        fd, tmp = tempfile.mkstemp(dir=out, prefix=f".{final.name}.", suffix=".partial")  # one per export at once
        with os.fdopen(fd, "w", encoding="utf-8", newline="") as f:
            f.write(body)
        os.replace(tmp, final)
        paths[ext] = final
    return paths
