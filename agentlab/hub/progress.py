"""The trainer's view: a JupyterHub service that shows where the room is in the exercises.

Each notebook's exercise check (agentlab/workbook/exercises.py) posts its verdict here when it runs inside
the hub, authenticated with the participant's own server token; the service asks the hub whose token it is
and writes that user's row only, so nobody can report for anybody else. The page shows, per participant and
per notebook, whether the last check said "not yet", "not quite" or "right", and when. A trainer (a hub
admin, a member of the trainer group, or a name given to the service) sees the whole room, where it is
stuck, and the trainer notes (``data/trainer/NN.<lang>.md``: never in the participant's copy, which is the
notebooks folder); a participant sees their own row and nothing else. docs/trainer.md says how to run it.

The state is one SQLite file in the service's state folder: the latest verdict per participant and notebook
(and since when it has said so), and a bounded history.
"""
from __future__ import annotations

import json
import logging
import os
import sqlite3
import sys
import time
from collections.abc import Awaitable, Callable, Iterable, Mapping
from dataclasses import dataclass
from functools import cache
from pathlib import Path
from typing import Any

from ..i18n import Lang, t
from ..jsonutil import parse_strict
from ..resources import data_file, render_page

__all__ = ["ACCESS_SCOPE", "MAX_BODY", "Progress", "Standing", "make_app", "participant_env", "service"]

NAME = "trainer"
PREFIX = f"/services/{NAME}/"
#: The scope a participant's role needs to open the page (JupyterHub grants a service's pages by scope).
ACCESS_SCOPE = f"access:services!service={NAME}"
MAX_BODY = 2048  # bytes: a report is four short fields; anything larger is not a report
STATES = ("not yet", "wrong", "right")
HISTORY_PER_USER = 2000  # reports kept per participant: a loop re-running a check cannot fill the disk
_log = logging.getLogger(__name__)

Resolve = Callable[[str], Awaitable[Mapping[str, Any] | None]]


@cache
def exercise_ids() -> dict[str, str]:
    """Notebook number -> exercise id, the same file the checks read (``data/trainer/exercises.json``)."""
    return dict(json.loads(data_file("trainer/exercises.json").read_text(encoding="utf-8")))


def notes_dir() -> Path:
    """Where the trainer notes are: ``$AGENTLAB_TRAINER_NOTES`` (a folder only the hub's user reads), else the data."""
    return Path(os.environ.get("AGENTLAB_TRAINER_NOTES") or data_file("trainer"))


def trainer_notes(notebook: str, lang: Lang) -> str | None:
    """The notes for one notebook in ``lang`` (English when the translation is missing), or None."""
    if notebook not in exercise_ids():  # the number is checked first: no path is ever built from a caller's text
        return None
    for candidate in (lang, "en"):
        path = notes_dir() / f"{notebook}.{candidate}.md"
        if path.is_file():
            return path.read_text(encoding="utf-8")
    return None


@dataclass(frozen=True)
class Standing:
    """One participant's latest verdict on one notebook's exercise, and since when it has said so."""

    user: str
    notebook: str
    exercise: str
    state: str
    at: float
    since: float


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
        """)

    def record(self, user: str, notebook: str, exercise: str, state: str, client_at: float | None = None) -> Standing:
        """Store a verdict at the service's own time (a participant's clock says nothing about the room's)."""
        now = self.clock()
        with self.db:
            old = self.db.execute("SELECT state, since FROM latest WHERE user=? AND notebook=?",
                                  (user, notebook)).fetchone()
            since = old[1] if old and old[0] == state else now  # "not quite for 12 minutes" counts from the first
            self.db.execute("INSERT OR REPLACE INTO latest VALUES (?, ?, ?, ?, ?, ?)",
                            (user, notebook, exercise, state, now, since))
            self.db.execute("INSERT INTO history (user, notebook, exercise, state, at, client_at) VALUES (?, ?, ?, ?, ?, ?)",
                            (user, notebook, exercise, state, now, client_at))
            self.db.execute("DELETE FROM history WHERE user=? AND id <= (SELECT id FROM history WHERE user=? "
                            "ORDER BY id DESC LIMIT 1 OFFSET ?)", (user, user, HISTORY_PER_USER))
        return Standing(user, notebook, exercise, state, now, since)

    def latest(self, user: str | None = None) -> list[Standing]:
        """Every participant's latest verdicts (or one participant's), by participant and notebook."""
        sql = "SELECT user, notebook, exercise, state, at, since FROM latest"
        rows = self.db.execute(sql + (" WHERE user=?" if user is not None else "") + " ORDER BY user, notebook",
                               (user,) if user is not None else ()).fetchall()
        return [Standing(*row) for row in rows]

    def history(self, user: str) -> list[tuple[str, str, float]]:
        """One participant's reports, oldest first: (notebook, state, time)."""
        return self.db.execute("SELECT notebook, state, at FROM history WHERE user=? ORDER BY id", (user,)).fetchall()


def _board(verdicts: Iterable[Standing], users: Iterable[str], now: float) -> dict[str, Any]:
    """The room as data: rows per participant, counts per notebook, the longest "not quite" first."""
    cells: dict[str, dict[str, dict[str, Any]]] = {u: {} for u in users}
    counts = {nb: dict.fromkeys(STATES, 0) for nb in exercise_ids()}
    stuck = []
    for v in verdicts:
        cells.setdefault(v.user, {})[v.notebook] = {"state": v.state, "at": v.at, "since": v.since}
        if v.notebook in counts:
            counts[v.notebook][v.state] += 1
        if v.state == "wrong":
            stuck.append({"user": v.user, "notebook": v.notebook, "since": v.since, "seconds": round(now - v.since)})
    stuck.sort(key=lambda s: (s["since"], s["user"]))
    return {"exercises": exercise_ids(), "rows": [{"user": u, "cells": cells[u]} for u in sorted(cells)],
            "counts": counts, "stuck": stuck}


def _lang(handler: Any) -> Lang:
    asked = handler.get_query_argument("lang", "")
    if asked in ("en", "zh"):
        return asked
    accept = handler.request.headers.get("Accept-Language", "")
    first = accept.split(",")[0].strip().lower()
    return "zh" if first.startswith("zh") else "en"


def make_app(store: Progress, *, resolve: Resolve | None = None, prefix: str = PREFIX, trainer_group: str = NAME,
             trainers: Iterable[str] = (), hub_auth: Any = None) -> Any:
    """The service as a tornado application.

    ``resolve(token)`` says whose a token is (a user model with ``name``, ``groups``, maybe ``admin``), or None;
    by default the hub says (``hub_auth.user_for_token``), and a browser is identified by its OAuth cookie.
    Tests inject their own resolver; nothing else differs."""
    import tornado.web
    from jupyterhub.services.auth import HubOAuthCallbackHandler, HubOAuthenticated

    trainer_names = frozenset(trainers)

    def is_trainer(user: Mapping[str, Any]) -> bool:
        return (user.get("admin") is True or trainer_group in (user.get("groups") or ())
                or user.get("name") in trainer_names)

    def header_token(handler: Any) -> str:
        kind, _, token = handler.request.headers.get("Authorization", "").partition(" ")
        return token.strip() if kind.lower() in ("token", "bearer") else ""

    class Base(HubOAuthenticated, tornado.web.RequestHandler):
        """Who is asking, and errors as JSON with a code and a sentence: no page of the server's, no traceback."""

        user: Mapping[str, Any] | None = None
        hub_down = False  # the hub could not be asked: say so, rather than call a good token bad
        by_cookie = True  # a browser signed in through the hub's OAuth

        async def prepare(self) -> None:
            self.lang = _lang(self)
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

        def fail(self, status: int, code: str, **fields: Any) -> None:
            self.set_status(status)
            if status == 503:
                self.set_header("Retry-After", "5")
            self.set_header("Content-Type", "application/json; charset=utf-8")
            self.finish(json.dumps({"error": {"code": code, "message": t(f"trainer.error.{code}", self.lang, **fields)}},
                                   ensure_ascii=False))

        def write_error(self, status_code: int, **kwargs: Any) -> None:
            if not hasattr(self, "lang"):
                self.lang = "en"
            self.fail(status_code, {404: "not_found", 405: "method"}.get(status_code, "failed"))

        def who(self) -> Mapping[str, Any] | None:
            if self.user is None:
                if self.hub_down:
                    self.fail(503, "unavailable")
                else:
                    self.fail(401, "unauthorized")
            return self.user

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
            if failure is not None or not isinstance(body, dict) or set(body) - {"notebook", "exercise", "state", "at"}:
                return self.fail(400, "bad_body")
            notebook, exercise, state, at = (body.get(k) for k in ("notebook", "exercise", "state", "at"))
            if notebook not in exercise_ids() or exercise != exercise_ids()[notebook]:
                return self.fail(400, "unknown_exercise")
            if state not in STATES:
                return self.fail(400, "bad_state", states=", ".join(STATES))
            if at is not None and (isinstance(at, bool) or not isinstance(at, (int, float))):
                return self.fail(400, "bad_body")
            v = store.record(user["name"], notebook, exercise, state, None if at is None else float(at))
            self.reply({"recorded": {"user": v.user, "notebook": v.notebook, "exercise": v.exercise,
                                     "state": v.state, "at": v.at}})

    class Mine(Base):
        def get(self) -> None:
            user = self.who()
            if user is not None:
                self.reply(_board(store.latest(user["name"]), [user["name"]], store.clock()))

    class Room(Base):
        def get(self) -> None:
            user = self.who()
            if user is None:
                return
            if not is_trainer(user):
                return self.fail(403, "trainer_only")
            self.reply(_board(store.latest(), [], store.clock()))

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
        def get(self) -> None:
            if self.user is None:
                if hub_auth is not None and resolve is None:
                    return self.redirect(self.get_login_url())  # the hub's login, then back here
                return self.fail(401, "unauthorized")
            name, trainer = self.user["name"], is_trainer(self.user)
            now = store.clock()
            board = _board(store.latest(None if trainer else name), [] if trainer else [name], now)
            notes = {nb: trainer_notes(nb, self.lang) for nb in exercise_ids()} if trainer else {}
            say = lambda key, **kw: t(key, self.lang, **kw)  # noqa: E731
            self.set_header("Cache-Control", "no-store")
            self.set_header("Content-Security-Policy", "default-src 'none'; style-src 'unsafe-inline'")
            self.finish(render_page("trainer_progress.html", say, lang=self.lang, me=name, trainer=trainer,
                                    board=board, notes=notes, clock=_clock_text, minutes=_minutes,
                                    word={s: say(f"trainer.state.{s.replace(' ', '_')}") for s in STATES},
                                    other="zh" if self.lang == "en" else "en"))

    routes: list[Any] = [(prefix, Page), (prefix + "api/report", Report), (prefix + "api/progress", Mine),
                         (prefix + "api/room", Room), (prefix + r"api/notes/([^/]+)", Notes)]
    if hub_auth is not None:
        routes.append((prefix + "oauth_callback", HubOAuthCallbackHandler))

    class Missing(Base):
        def prepare(self) -> None:  # type: ignore[override]
            self.lang = _lang(self)
            self.fail(404, "not_found")

    return tornado.web.Application(routes, default_handler_class=Missing, cookie_secret=os.urandom(32),
                                   hub_auth=hub_auth, xsrf_cookies=False, serve_traceback=False)


def _clock_text(at: float) -> str:
    return time.strftime("%H:%M", time.localtime(at))


def _minutes(seconds: float) -> int:
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
    app = make_app(store, prefix=os.environ.get("JUPYTERHUB_SERVICE_PREFIX", PREFIX), hub_auth=auth,
                   trainer_group=os.environ.get("AGENTLAB_TRAINER_GROUP", NAME), trainers=trainers)

    async def serve() -> None:
        # larger bodies than a report are read (and refused with a sentence) up to 64 KB; beyond, the socket closes
        server = tornado.httpserver.HTTPServer(app, max_body_size=65536, xheaders=True)
        # on one machine the URL's own host (loopback); in a cluster the URL names a Service, so listen on the pod's
        server.listen(url.port or 80, os.environ.get("AGENTLAB_PROGRESS_BIND") or url.hostname or "127.0.0.1")
        _log.info("trainer's view on %s", url.geturl())
        await asyncio.Event().wait()

    asyncio.run(serve())


if __name__ == "__main__":
    main()
