"""The trainer's view: a JupyterHub service that shows where the room is in the exercises.

Each notebook's exercise check (agentlab/workbook/exercises.py) posts its verdict here when it runs inside
the hub, authenticated with the participant's own server token; the service asks the hub whose token it is
and writes that user's row only, so nobody can report for anybody else. The page shows, per participant and
per notebook, whether the last check said "not yet", "not quite" or "right", and when. A trainer (a hub
admin, a member of the trainer group, or a name given to the service) sees the whole room, where it is
stuck, and the trainer notes (``data/trainer/NN.<lang>.md``: never in the participant's copy, which is the
notebooks folder); a participant sees their own row and nothing else. docs/trainer.md says how to run it.

Each report also carries what the learner answered (normalised, redacted and cut short by the check, and again
here: a participant's client is not trusted to have done so). A trainer sees, per exercise, what the room typed,
grouped with counts, most common first, and which groups the check called right, so a misconception the room
shares shows; a participant never sees anybody's answers, their own included, through this service.

Outside a hub (a trainer's laptop, ``python -m agentlab trainer --room CODE``, :func:`serve_room`) the same app
runs with a :class:`Room` instead of the hub: a report carries the room code (a wrong one is refused), the
participant's name and a key the participant's machine made once (the first key to report under a name owns it,
so nobody overwrites another's row); the trainer's page and ``api/room`` need the trainer secret printed at start.

The state is one SQLite file in the service's state folder: the latest verdict per participant and notebook
(and since when it has said so), and a bounded history.
"""
from __future__ import annotations

import hashlib
import hmac
import json
import logging
import math
import os
import re
import secrets
import sqlite3
import sys
import time
import unicodedata
from collections.abc import Awaitable, Callable, Iterable, Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any
from urllib.parse import unquote

from ..i18n import Lang, accepted_lang, joined, said_marks, t
from ..jsonutil import parse_strict
from ..redaction import redact_secrets
from ..resources import render_page
from .notes import build_ids, exercise_ids, notes_html, trainer_notes
from .records import IDLE

__all__ = ["ACCESS_SCOPE", "ANSWER_LIMIT", "EXTRA", "MAX_BODY", "PER_ACCOUNT", "AnswerGroup", "Progress", "Room", "Standing",
           "clean_answer", "known_exercises", "make_app", "participant_env", "serve_room", "service"]

NAME = "trainer"
PREFIX = f"/services/{NAME}/"
#: The scope a participant's role needs to open the page (JupyterHub grants a service's pages by scope).
ACCESS_SCOPE = f"access:services!service={NAME}"
MAX_BODY = 2048  # bytes: a report is a few short fields; anything larger is not a report
PER_ACCOUNT = 32  # connections one account of the machine may hold open to the trainer's view at once
#: What reports besides the numbered notebooks: the capstone, with a score (not in exercises.json, whose keys are
#: exactly the notebooks). agentlab/workbook/exercises.py has the same table; a test holds them equal.
EXTRA = {"capstone": "capstone"}
ANSWER_LIMIT = 80  # characters of an answer kept: a word or a number, never a page of somebody's text
NAME_LIMIT = 40  # characters of a participant's name (outside the hub, where the participant chooses it)
MAX_PARTICIPANTS = 500  # names one room takes: a participant inventing names cannot grow the page without bound
# names one address may join a room with: a participant inventing names cannot fill the room and keep the rest out,
# while a few laptops behind one router (or one who mistyped a name) still join
NAMES_PER_ADDRESS = 20
# distinct answers of one participant that count on the trainer's page, per exercise (their latest): a participant
# sending answer after answer cannot push everybody else's off the eight groups shown
ANSWERS_PER_PARTICIPANT = 3
GROUPS_SHOWN = 8  # answer groups per exercise on the page; the rest are counted, not listed
STATES = ("not yet", "wrong", "right")
HISTORY_PER_USER = 2000  # reports kept per participant: a loop re-running a check cannot fill the disk
_log = logging.getLogger(__name__)

Resolve = Callable[[str], Awaitable[Mapping[str, Any] | None]]


def known_exercises() -> dict[str, str]:
    """Every notebook that reports -> its exercise id: each numbered notebook followed by its build exercise
    (``NNb``, when it has one), then :data:`EXTRA`."""
    builds = build_ids()
    out: dict[str, str] = {}
    for nb, ex in exercise_ids().items():
        out[nb] = ex
        if f"{nb}b" in builds:
            out[f"{nb}b"] = builds[f"{nb}b"]
    return {**out, **EXTRA}


_CONTROL = re.compile(r"[\x00-\x1f\x7f-\x9f\u200b-\u200f\u2028-\u202e\u2060-\u206f\ufeff]")
_SEPARATORS = re.compile(r"[\s_-]+")


def clean_answer(text: str) -> str:
    """An answer as the room's view keeps it: secrets removed, full-width forms folded (NFKC), control and
    direction characters gone, case folded, spaces collapsed, at most :data:`ANSWER_LIMIT` characters.

    The check does this before sending; it is done again here because a hostile participant's client need not."""
    text = redact_secrets(text[:4 * ANSWER_LIMIT])  # redacted before the cut: a cut key might no longer look like one
    text = " ".join(_CONTROL.sub(" ", unicodedata.normalize("NFKC", text)).split()).casefold()
    return text if len(text) <= ANSWER_LIMIT else text[:ANSWER_LIMIT - 1] + "…"


def _answer_key(answer: str) -> str:
    """Answers the checks read alike group together: "duplicate call", "Duplicate_Call" and "duplicate-call"."""
    return _SEPARATORS.sub("", answer)


@dataclass(frozen=True)
class Standing:
    """One participant's latest verdict on one notebook's exercise, and since when it has said so."""

    user: str
    notebook: str
    exercise: str
    state: str
    at: float
    since: float
    answer: str | None = None
    score: float | None = None


@dataclass(frozen=True)
class AnswerGroup:
    """The participants who gave one answer to one exercise, and what the check said of it."""

    answer: str  # the spelling most of them used
    count: int  # participants, each counted once however often they sent it
    state: str  # "right" or "wrong": the same answer judged differently (different data) is two groups


@dataclass(frozen=True)
class Room:
    """A room outside the hub: the code participants report with, and the secret the trainer's page needs."""

    code: str
    trainer_secret: str


class Progress:
    """The reports, in SQLite: the latest verdict per participant and notebook, and the history."""

    def __init__(self, path: Path | str, clock: Callable[[], float] = time.time) -> None:
        self.clock = clock
        # one connection, used from the service's one event-loop thread
        self.db = sqlite3.connect(str(path), isolation_level=None, check_same_thread=False)
        self.db.executescript("""
            PRAGMA journal_mode=WAL;
            CREATE TABLE IF NOT EXISTS latest (user TEXT NOT NULL, notebook TEXT NOT NULL, exercise TEXT NOT NULL,
                state TEXT NOT NULL, at REAL NOT NULL, since REAL NOT NULL, PRIMARY KEY (user, notebook));
            CREATE TABLE IF NOT EXISTS history (id INTEGER PRIMARY KEY, user TEXT NOT NULL, notebook TEXT NOT NULL,
                exercise TEXT NOT NULL, state TEXT NOT NULL, at REAL NOT NULL, client_at REAL);
            CREATE INDEX IF NOT EXISTS history_user ON history (user, id);
            CREATE TABLE IF NOT EXISTS owners (user TEXT PRIMARY KEY, key_hash TEXT NOT NULL, at REAL NOT NULL);
        """)
        if "source" not in {row[1] for row in self.db.execute("PRAGMA table_info(owners)")}:
            self.db.execute("ALTER TABLE owners ADD COLUMN source TEXT")  # a state folder from before the limit
        for table in ("latest", "history"):  # a state folder from before answers were reported: add the columns
            have = {row[1] for row in self.db.execute(f"PRAGMA table_info({table})")}
            for column, kind in (("answer", "TEXT"), ("score", "REAL")):
                if column not in have:
                    self.db.execute(f"ALTER TABLE {table} ADD COLUMN {column} {kind}")

    def record(self, user: str, notebook: str, exercise: str, state: str, client_at: float | None = None,
               answer: str | None = None, score: float | None = None) -> Standing:
        """Store a verdict at the service's own time (a participant's clock says nothing about the room's)."""
        now = self.clock()
        answer = None if answer is None else clean_answer(answer)
        with self.db:
            old = self.db.execute("SELECT exercise, state, at, since, answer, score FROM latest WHERE user=? AND notebook=?",
                                  (user, notebook)).fetchone()
            # an answered exercise that reports "not yet" again (the notebook run afresh from a copy never saved, or
            # fetched again) stays answered: the page showed a right answer as unanswered beside its own count of it
            kept = old is not None and state == "not yet" and old[1] != "not yet"
            since = old[3] if old and old[1] == state else now  # "not quite for 12 minutes" counts from the first
            if not kept:
                self.db.execute("INSERT OR REPLACE INTO latest (user, notebook, exercise, state, at, since, answer, score) "
                                "VALUES (?, ?, ?, ?, ?, ?, ?, ?)", (user, notebook, exercise, state, now, since, answer, score))
            self.db.execute("INSERT INTO history (user, notebook, exercise, state, at, client_at, answer, score) "
                            "VALUES (?, ?, ?, ?, ?, ?, ?, ?)", (user, notebook, exercise, state, now, client_at, answer, score))
            self.db.execute("DELETE FROM history WHERE user=? AND id <= (SELECT id FROM history WHERE user=? "
                            "ORDER BY id DESC LIMIT 1 OFFSET ?)", (user, user, HISTORY_PER_USER))
        if kept:
            return Standing(user, notebook, *old)
        return Standing(user, notebook, exercise, state, now, since, answer, score)

    def answers(self) -> dict[str, tuple[list[AnswerGroup], int]]:
        """Per notebook, what the room answered: groups most common first (at most :data:`GROUPS_SHOWN`), and how
        many more groups there are. Every answer a participant gave counts once for them (from the bounded history),
        so a misconception the room shared still shows after each participant has corrected it."""
        # newest first, so that each participant's latest few distinct answers per notebook are the ones counted
        rows = self.db.execute("SELECT notebook, user, answer, state FROM history "
                               "WHERE answer IS NOT NULL AND state != 'not yet' ORDER BY id DESC").fetchall()
        users: dict[tuple[str, str, str], set[str]] = {}
        spellings: dict[tuple[str, str, str], dict[str, int]] = {}
        theirs: dict[tuple[str, str], set[tuple[str, str]]] = {}  # (notebook, user) -> the answers counted
        for notebook, user, answer, state in rows:
            mine = theirs.setdefault((notebook, user), set())
            if (answer, state) in mine or len(mine) >= ANSWERS_PER_PARTICIPANT:
                continue
            mine.add((answer, state))
            key = (notebook, _answer_key(answer), state)
            users.setdefault(key, set()).add(user)
            spellings.setdefault(key, {}).setdefault(answer, 0)
            spellings[key][answer] += 1
        out: dict[str, list[AnswerGroup]] = {}
        for key, who in users.items():
            spelled = min(spellings[key].items(), key=lambda kv: (-kv[1], len(kv[0]), kv[0]))[0]
            out.setdefault(key[0], []).append(AnswerGroup(spelled, len(who), key[2]))
        result: dict[str, tuple[list[AnswerGroup], int]] = {}
        for notebook, groups in out.items():
            groups.sort(key=lambda g: (-g.count, g.state != "right", g.answer))
            result[notebook] = (groups[:GROUPS_SHOWN], len(groups) - min(len(groups), GROUPS_SHOWN))
        return result

    def owner(self, user: str) -> str | None:
        """Outside the hub: the hash of the key that first reported under ``user``, or None."""
        row = self.db.execute("SELECT key_hash FROM owners WHERE user=?", (user,)).fetchone()
        return None if row is None else str(row[0])

    def claim(self, user: str, key_hash: str, source: str = "") -> str:
        """Outside the hub, the first key to join or report under a name owns it: "ok", "taken" (another key's),
        "full" (the room has :data:`MAX_PARTICIPANTS`) or "busy" (``source``, the address it comes from, has joined
        :data:`NAMES_PER_ADDRESS` names already)."""
        with self.db:
            owner = self.owner(user)
            if owner is not None:
                return "ok" if hmac.compare_digest(owner, key_hash) else "taken"
            if self.db.execute("SELECT COUNT(*) FROM owners").fetchone()[0] >= MAX_PARTICIPANTS:
                return "full"
            if source and self.db.execute("SELECT COUNT(*) FROM owners WHERE source=?",
                                          (source,)).fetchone()[0] >= NAMES_PER_ADDRESS:
                return "busy"
            self.db.execute("INSERT INTO owners (user, key_hash, at, source) VALUES (?, ?, ?, ?)",
                            (user, key_hash, self.clock(), source))
        return "ok"

    def latest(self, user: str | None = None) -> list[Standing]:
        """Every participant's latest verdicts (or one participant's), by participant and notebook."""
        sql = "SELECT user, notebook, exercise, state, at, since, answer, score FROM latest"
        rows = self.db.execute(sql + (" WHERE user=?" if user is not None else "") + " ORDER BY user, notebook",
                               (user,) if user is not None else ()).fetchall()
        return [Standing(*row) for row in rows]

    def history(self, user: str) -> list[tuple[str, str, float]]:
        """One participant's reports, oldest first: (notebook, state, time)."""
        return self.db.execute("SELECT notebook, state, at FROM history WHERE user=? ORDER BY id", (user,)).fetchall()


def _board(verdicts: Iterable[Standing], users: Iterable[str], now: float) -> dict[str, Any]:
    """The room as data: rows per participant, counts per notebook, the longest "not quite" first."""
    cells: dict[str, dict[str, dict[str, Any]]] = {u: {} for u in users}
    counts = {nb: dict.fromkeys(STATES, 0) for nb in known_exercises()}
    stuck = []
    for v in verdicts:
        # no answer in a cell: a participant's own board goes to the participant, and answers are the trainer's
        cell: dict[str, Any] = {"state": v.state, "at": v.at, "since": v.since}
        if v.score is not None:
            cell["score"] = v.score  # the capstone's: its own, and the trainer's view
        cells.setdefault(v.user, {})[v.notebook] = cell
        if v.notebook in counts:
            counts[v.notebook][v.state] += 1
        if v.state == "wrong":
            stuck.append({"user": v.user, "notebook": v.notebook, "since": v.since, "seconds": round(now - v.since)})
    for row in cells.values():  # a participant who has not reported on an exercise is "not yet" there too
        for nb in counts:
            if nb not in row:
                counts[nb]["not yet"] += 1
    stuck.sort(key=lambda s: (s["since"], s["user"]))
    return {"exercises": known_exercises(), "rows": [{"user": u, "cells": cells[u]} for u in sorted(cells)],
            "counts": counts, "stuck": stuck}


def capstone_ranking(verdicts: Iterable[Standing]) -> list[dict[str, Any]]:
    """The room's capstone scores, best first; the same score shares its rank, and among equals whoever reached it
    first is listed first. The trainer's to show or not: never on a participant's page."""
    scored = sorted((v for v in verdicts if v.notebook == "capstone" and v.score is not None),
                    key=lambda v: (-v.score, v.since, v.user))  # type: ignore[operator]
    out: list[dict[str, Any]] = []
    for i, v in enumerate(scored):
        rank = out[-1]["rank"] if out and out[-1]["score"] == v.score else i + 1
        out.append({"rank": rank, "user": v.user, "score": v.score, "since": v.since})
    return out


def _answers_json(store: Progress) -> dict[str, Any]:
    return {nb: {"groups": [{"answer": g.answer, "count": g.count, "state": g.state} for g in groups], "more": more}
            for nb, (groups, more) in store.answers().items()}


def _lang(handler: Any) -> Lang:
    asked = handler.get_query_argument("lang", "")
    if asked in ("en", "zh"):
        return asked
    return accepted_lang(handler.request.headers.get("Accept-Language", ""))


_KEY_OK = re.compile(r"[A-Za-z0-9_-]{16,128}")
TRAINER_COOKIE = "agentlab-trainer"


def participant_name(raw: str) -> str | None:
    """A name a participant gave outside the hub, as the room shows it (NFKC, no control or direction characters,
    spaces collapsed), or None when it is empty or longer than :data:`NAME_LIMIT`."""
    name = " ".join(_CONTROL.sub(" ", unicodedata.normalize("NFKC", raw[:4 * NAME_LIMIT])).split())
    return name if 0 < len(name) <= NAME_LIMIT else None


def _key_hash(key: str) -> str:
    return hashlib.sha256(key.encode()).hexdigest()  # the key itself is never stored: a copied state file claims nobody


def make_app(store: Progress, *, resolve: Resolve | None = None, prefix: str = PREFIX, trainer_group: str = NAME,
             trainers: Iterable[str] = (), hub_auth: Any = None, room: Room | None = None,
             members: Callable[[], Awaitable[list[str]]] | None = None) -> Any:
    """The service as a tornado application.

    ``resolve(token)`` says whose a token is (a user model with ``name``, ``groups``, maybe ``admin``), or None;
    by default the hub says (``hub_auth.user_for_token``), and a browser is identified by its OAuth cookie.
    Tests inject their own resolver; nothing else differs. ``members``: the room's participants (the hub's users,
    :func:`agentlab.hub.members.hub_members`), each a row of the trainer's board before their first check.

    With ``room`` there is no hub (and no JupyterHub needs to be installed): a participant is identified by the
    room code, their name and their key (headers ``Authorization: room CODE``, ``X-Agentlab-Participant`` (the
    name, percent-encoded UTF-8) and ``X-Agentlab-Key``); the trainer by ``Authorization: trainer SECRET`` or, in
    a browser, the cookie that ``?trainer=SECRET`` sets once."""
    import tornado.web

    trainer_names = frozenset(trainers)
    async def no_one() -> list[str]:  # no hub to ask (a laptop's room, a test): the rows are those the checks made
        return []
    room_members = members or no_one
    if room is None:
        from jupyterhub.services.auth import HubOAuthCallbackHandler, HubOAuthenticated
        bases: tuple[type, ...] = (HubOAuthenticated, tornado.web.RequestHandler)
    else:
        bases = (tornado.web.RequestHandler,)  # a laptop's room: plain tornado, the hub's mixin is never asked

    def is_trainer(user: Mapping[str, Any]) -> bool:
        return (user.get("admin") is True or trainer_group in (user.get("groups") or ())
                or user.get("name") in trainer_names)

    def header_token(handler: Any) -> str:
        kind, _, token = handler.request.headers.get("Authorization", "").partition(" ")
        return token.strip() if kind.lower() in ("token", "bearer") else ""

    class Base(*bases):  # type: ignore[misc]
        """Who is asking, and errors as JSON with a code and a sentence: no page of the server's, no traceback."""

        user: Mapping[str, Any] | None = None
        hub_down = False  # the hub could not be asked: say so, rather than call a good token bad
        by_cookie = True  # a browser signed in through the hub's OAuth
        refused: tuple[int, str] | None = None  # outside the hub: why these credentials identify nobody
        key_hash = ""  # outside the hub: the participant's key, hashed, for the report to claim the name with

        async def prepare(self) -> None:
            self.lang = _lang(self)
            if room is not None:
                return self.identify_in_room(room)
            token = header_token(self)
            try:
                if token:
                    self.user = await (resolve or (lambda tk: hub_auth.user_for_token(tk, sync=False)))(token)
                elif self.by_cookie and resolve is None and hub_auth is not None:
                    self.user = await hub_auth.get_user(self, sync=False)  # the browser's OAuth cookie
            except Exception as exc:  # noqa: BLE001 - the hub unreachable or refusing: nobody is identified
                _log.warning("could not identify a request: %s", type(exc).__name__)
                self.user, self.hub_down = None, True
            if self.user is not None and not isinstance(self.user.get("name"), str):
                self.user = None

        def identify_in_room(self, room: Room) -> None:
            kind, _, secret = self.request.headers.get("Authorization", "").partition(" ")
            kind, secret = kind.lower(), secret.strip()
            cookie = self.get_cookie(TRAINER_COOKIE, "") if self.by_cookie else ""
            if (kind == "trainer" and hmac.compare_digest(secret.encode(), room.trainer_secret.encode())) or \
                    (cookie and hmac.compare_digest(cookie.encode(), room.trainer_secret.encode())):
                self.user = {"name": "trainer", "admin": True}  # made here, never from what a request says
                return
            if kind != "room":
                return  # nobody: 401 where a page or the API needs somebody
            if not hmac.compare_digest(secret.encode(), room.code.encode()):
                self.refused = (401, "bad_room")
                return
            name = participant_name(unquote(self.request.headers.get("X-Agentlab-Participant", "")))
            key = self.request.headers.get("X-Agentlab-Key", "")
            if name is None or not _KEY_OK.fullmatch(key):
                self.refused = (400, "bad_participant")
                return
            self.key_hash = _key_hash(key)
            owner = store.owner(name)
            if owner is not None and not hmac.compare_digest(owner, self.key_hash):
                self.refused = (403, "name_taken")  # somebody else's row: neither readable nor writable
                return
            self.user = {"name": name}

        def fail(self, status: int, code: str, **fields: Any) -> None:
            self.set_status(status)
            if status == 503:
                self.set_header("Retry-After", "5")
            self.set_header("Content-Type", "application/json; charset=utf-8")
            self.finish(json.dumps({"error": {"code": code, "message": t(f"trainer.error.{code}", self.lang, **fields)}},
                                   ensure_ascii=False))

        def write_error(self, status_code: int, **kwargs: Any) -> None:
            if not hasattr(self, "lang"):  # refused before prepare (a method the address does not take): as asked
                self.lang = _lang(self)
            self.fail(status_code, {404: "not_found", 405: "method"}.get(status_code, "failed"))

        def who(self) -> Mapping[str, Any] | None:
            if self.user is None:
                if self.refused is not None:
                    self.fail(*self.refused, name_limit=NAME_LIMIT)
                elif self.hub_down:
                    self.fail(503, "unavailable")
                else:
                    self.fail(401, "trainer_secret" if room is not None else "unauthorized")
            return self.user

        def claimed(self, user: Mapping[str, Any]) -> bool:  # outside the hub: the name is this key's, or refused
            if room is None or not self.key_hash:
                return True
            got = store.claim(user["name"], self.key_hash, self.request.remote_ip or "")
            if got != "ok":
                code = {"taken": "name_taken", "full": "room_full", "busy": "address_full"}[got]
                self.fail(403, code, limit=MAX_PARTICIPANTS if got == "full" else NAMES_PER_ADDRESS)
            return got == "ok"

        def reply(self, body: Any) -> None:
            self.set_header("Content-Type", "application/json; charset=utf-8")
            self.set_header("Cache-Control", "no-store")
            self.finish(json.dumps(body, ensure_ascii=False))

    class Report(Base):
        by_cookie = False  # only the header's token: a browser's cookie can never post a report (no cross-site posts)

        def post(self) -> None:
            user = self.who()
            if user is None:
                return
            if len(self.request.body) > MAX_BODY:
                return self.fail(413, "too_large", limit=MAX_BODY)
            if not self.request.headers.get("Content-Type", "").lower().startswith("application/json"):
                return self.fail(415, "content_type")
            try:
                text = self.request.body.decode("utf-8")
            except UnicodeDecodeError:
                return self.fail(400, "bad_body")
            body, failure = parse_strict(text)
            if failure is not None or not isinstance(body, dict) or \
                    set(body) - {"notebook", "exercise", "state", "at", "answer", "score"}:
                return self.fail(400, "bad_body")
            notebook, exercise, state, at, answer, score = (
                body.get(k) for k in ("notebook", "exercise", "state", "at", "answer", "score"))
            if notebook not in known_exercises() or exercise != known_exercises()[notebook]:
                return self.fail(400, "unknown_exercise")
            if state not in STATES:
                # the API's words, and the page's for them ("wrong" is said "not quite" there)
                return self.fail(400, "bad_state", states=joined(STATES, self.lang, "list"),
                                 shown=joined((t("trainer.state." + x.replace(" ", "_"), self.lang) for x in STATES),
                                              self.lang, "list"))
            for number in (at, score):
                if number is not None and (isinstance(number, bool) or not isinstance(number, (int, float))
                                           or not math.isfinite(number) or abs(number) > 1e12):
                    return self.fail(400, "bad_body")
            if score is not None and not (notebook == "capstone" and 0 <= score <= 1):
                return self.fail(400, "bad_score")  # the share of the capstone's cases passed: nothing else
            if answer is not None and not isinstance(answer, str):
                return self.fail(400, "bad_body")
            if answer is None and score is not None:
                answer = _share(float(score))  # the capstone's answer is its score: grouped like any other
            if not self.claimed(user):
                return
            v = store.record(user["name"], notebook, exercise, state, None if at is None else float(at),
                             answer=answer, score=None if score is None else float(score))
            # the reply does not echo the answer: what the service kept is the trainer's to read
            self.reply({"recorded": {"user": v.user, "notebook": v.notebook, "exercise": v.exercise,
                                     "state": v.state, "at": v.at}})

    class Join(Base):  # connect: the name claimed now (it was "Connected", then each report refused unseen)
        by_cookie = False

        def post(self) -> None:
            user = self.who()
            if user is not None and self.claimed(user):
                self.reply({"joined": user["name"]})

    class Mine(Base):
        def get(self) -> None:
            user = self.who()
            if user is not None:
                self.reply(_board(store.latest(user["name"]), [user["name"]], store.clock()))

    class Room_(Base):
        async def get(self) -> None:
            user = self.who()
            if user is None:
                return
            if not is_trainer(user):
                return self.fail(403, "trainer_only")
            latest = store.latest()
            self.reply({**_board(latest, await room_members(), store.clock()), "answers": _answers_json(store),
                        "ranking": capstone_ranking(latest)})

    class Notes(Base):
        def get(self, notebook: str) -> None:
            user = self.who()
            if user is None:
                return
            if not is_trainer(user):
                return self.fail(403, "trainer_only")
            text = trainer_notes(notebook, self.lang)
            if text is None:
                return self.fail(404, "not_found")
            self.reply({"notebook": notebook, "lang": self.lang, "notes": text})

    class Page(Base):
        async def get(self) -> None:
            given = self.get_query_argument("trainer", "")
            if room is not None and given:
                if not hmac.compare_digest(given.encode(), room.trainer_secret.encode()):
                    return self.fail(401, "trainer_secret")
                # once: the secret moves from the address (history, a projector) to a cookie this browser keeps
                self.set_cookie(TRAINER_COOKIE, given, httponly=True, samesite="Strict", path=prefix)
                return self.redirect(prefix + (f"?lang={self.lang}" if self.get_query_argument("lang", "") else ""))
            if self.user is None:
                if room is None and hub_auth is not None and resolve is None:
                    return self.redirect(self.get_login_url())  # the hub's login, then back here
                status, code = self.refused or (401, "trainer_secret" if room is not None else "unauthorized")
                if "text/html" not in self.request.headers.get("Accept", ""):
                    return self.fail(status, code, name_limit=NAME_LIMIT)
                self.set_status(status)  # a browser: a page saying it, not the API's JSON
                self.set_header("Content-Type", "text/html; charset=utf-8")
                said = t(f"trainer.error.{code}", self.lang, name_limit=NAME_LIMIT)
                return self.finish(render_page("trainer_refused.html", lambda k: t(k, self.lang), lang=self.lang, message=said))
            name, trainer = self.user["name"], is_trainer(self.user)
            now = store.clock()
            latest = store.latest(None if trainer else name)
            board = _board(latest, await room_members() if trainer else [name], now)
            # the capstone ranking: the trainer's choice to show (on a projector), never a participant's to see
            ranking = capstone_ranking(latest) if trainer and self.get_query_argument("ranking", "") == "show" else None
            # each notebook's notes, then its build exercise's (``NNb``), in the board's order
            notes = {nb: notes_html(trainer_notes(nb, self.lang)) for nb in known_exercises() if nb not in EXTRA} \
                if trainer else {}
            say = lambda key, **kw: t(key, self.lang, **kw)  # noqa: E731
            self.set_header("Cache-Control", "no-store")
            self.set_header("Content-Security-Policy", "default-src 'none'; style-src 'unsafe-inline'")
            # (said_marks: what redaction took out of an answer, [secret removed], said in the page's language)
            self.finish(said_marks(render_page("trainer_progress.html", say, lang=self.lang, me=name, trainer=trainer,
                                    board=board, notes=notes, clock=_clock_text, minutes=_minutes, share=_share,
                                    shown=lambda nb: say("trainer.capstone") if nb == "capstone" else nb,
                                    answers=store.answers() if trainer else {}, room=room.code if room else None,
                                    ranking=ranking,
                                    word={s: say(f"trainer.state.{s.replace(' ', '_')}") for s in STATES},
                                    other="zh" if self.lang == "en" else "en"), self.lang))

    routes: list[Any] = [(prefix, Page), (prefix + "api/report", Report), (prefix + "api/join", Join),
                         (prefix + "api/progress", Mine),
                         (prefix + "api/room", Room_), (prefix + r"api/notes/([^/]+)", Notes)]
    if hub_auth is not None and room is None:
        routes.append((prefix + "oauth_callback", HubOAuthCallbackHandler))

    class Missing(Base):
        def prepare(self) -> None:  # type: ignore[override]
            self.lang = _lang(self)
            self.fail(404, "not_found")

    return tornado.web.Application(routes, default_handler_class=Missing, cookie_secret=os.urandom(32),
                                   hub_auth=hub_auth, xsrf_cookies=False, serve_traceback=False)


def _share(score: float) -> str:  # a capstone score, the share of its cases passed, as the page says it: 21%
    return f"{score:.0%}"


def _clock_text(at: float) -> str:
    return time.strftime("%H:%M", time.localtime(at))


def _minutes(seconds: float) -> int:  # (a clock set back by a moment reads 0, never -1)
    return max(0, int(seconds // 60))


def service(port: int, state_dir: Path, *, trainer_group: str = NAME, trainers: Iterable[str] = (),
            notes: Path | None = None) -> dict[str, Any]:
    """The entry for ``c.JupyterHub.services``: the hub starts the service and routes /services/trainer/ to it.

    Participants need :data:`ACCESS_SCOPE` in their role to open the page (``trainer_group`` members and admins
    see the room); the state (one SQLite file) lives in ``state_dir``; ``notes``: a folder of the trainer notes
    only the service's account reads (else ``$AGENTLAB_TRAINER_NOTES``, else the checkout's data)."""
    env = {"AGENTLAB_PROGRESS_STATE": str(state_dir), "AGENTLAB_TRAINER_GROUP": trainer_group,
           "AGENTLAB_TRAINERS": ",".join(trainers)}
    if notes is not None:
        env["AGENTLAB_TRAINER_NOTES"] = str(notes)
    for name in ("AGENTLAB_TRAINER_NOTES", "PYTHONPATH"):  # a notes folder of the hub's own; a checkout not installed
        if os.environ.get(name) and name not in env:
            env[name] = os.environ[name]
    return {"name": NAME, "url": f"http://127.0.0.1:{port}", "command": [sys.executable, "-m", "agentlab.hub.progress"],
            "environment": env, "oauth_no_confirm": True, "display": True}


def participant_env(port: int, host: str = "127.0.0.1") -> dict[str, str]:
    """What a participant's server needs for its checks to report: the service's report URL (on loopback when the
    servers run on the hub's machine; a container names the host it reaches the service by)."""
    return {"AGENTLAB_PROGRESS_URL": f"http://{host}:{port}{PREFIX}api/report"}


ROOM_CODE = re.compile(r"[A-Za-z0-9_-]{4,64}")


def new_room(code: str, secret: str | None = None) -> Room:
    """A room with ``code`` (4 to 64 letters, digits, ``-`` or ``_``: it travels in a header and is read aloud) and
    a trainer secret (a fresh random one unless given)."""
    if not ROOM_CODE.fullmatch(code):
        raise ValueError(code)
    return Room(code, secret or secrets.token_urlsafe(18))


def lan_address() -> str:
    """The address other machines on the network most likely reach this one by (loopback when there is none)."""
    import socket
    try:
        with socket.socket(socket.AF_INET, socket.SOCK_DGRAM) as probe:
            probe.connect(("10.255.255.255", 1))  # no packet is sent: this only asks which interface would be used
            return str(probe.getsockname()[0])
    except OSError:
        return "127.0.0.1"


async def serve_room(room: Room, state_dir: Path, *, port: int, host: str = "0.0.0.0",
                     ready: Callable[[int], None] | None = None, stop: Any = None) -> None:
    """Serve the trainer's view of ``room`` without a hub, until ``stop`` (an asyncio.Event) is set; ``ready`` is
    told the port listened on (``port=0``: a free one)."""
    import asyncio

    import tornado.httpserver
    import tornado.netutil

    state_dir.mkdir(parents=True, exist_ok=True)
    store = Progress(state_dir / "progress.sqlite")
    app = make_app(store, prefix="/", room=room)
    # larger bodies than a report are read (and refused with a sentence) up to 64 KB; beyond, the socket closes; a
    # connection that sends nothing is closed (Tornado kept one an hour: idle ones used up the process's files)
    server = tornado.httpserver.HTTPServer(app, max_body_size=65536, idle_connection_timeout=IDLE, body_timeout=IDLE)
    sockets = tornado.netutil.bind_sockets(port, host)
    server.add_sockets(sockets)
    if ready is not None:
        ready(int(sockets[0].getsockname()[1]))
    try:
        await (stop or asyncio.Event()).wait()
    finally:
        server.stop()
        store.db.close()


def main() -> None:
    """Run as the hub's service: the hub hands over the URL, the prefix and the OAuth settings by environment."""
    import asyncio
    from urllib.parse import urlparse

    import tornado.httpserver
    from jupyterhub.services.auth import HubOAuth

    logging.basicConfig(level=logging.INFO, format="%(asctime)s trainer %(levelname)s %(message)s")
    url = urlparse(os.environ.get("JUPYTERHUB_SERVICE_URL", "http://127.0.0.1:10102"))
    state = Path(os.environ.get("AGENTLAB_PROGRESS_STATE", "."))
    state.mkdir(parents=True, exist_ok=True)
    store = Progress(state / "progress.sqlite")
    trainers = [n for n in os.environ.get("AGENTLAB_TRAINERS", "").split(",") if n]
    auth = HubOAuth.instance(cache_max_age=60)
    from .members import hub_members
    app = make_app(store, prefix=os.environ.get("JUPYTERHUB_SERVICE_PREFIX", PREFIX), hub_auth=auth,
                   trainer_group=os.environ.get("AGENTLAB_TRAINER_GROUP", NAME), trainers=trainers,
                   members=hub_members(trainers))

    # every participant reaches it: at most PER_ACCOUNT connections open at once from each account of the machine
    # (one held 27,000 idle ones, reopened as the idle timeout closed them, and the trainer's page failed with 500)
    from .doors import admit_at_most
    admit_at_most(PER_ACCOUNT, unlimited=(0, os.getuid()))

    async def serve() -> None:
        # as the room's own server above: bodies up to 64 KB, a silent connection closed
        server = tornado.httpserver.HTTPServer(app, max_body_size=65536, xheaders=True, idle_connection_timeout=IDLE,
                                               body_timeout=IDLE)
        # on one machine the URL's own host (loopback); in a cluster the URL names a Service, so listen on the pod's
        server.listen(url.port or 80, os.environ.get("AGENTLAB_PROGRESS_BIND") or url.hostname or "127.0.0.1")
        _log.info("trainer's view on %s", url.geturl())
        await asyncio.Event().wait()

    asyncio.run(serve())


if __name__ == "__main__":
    main()
