"""The site's four JSON-lines logs (docs/site.md#logs), in the data folder's ``logs/``::

    access.jsonl   every request: method, path, status, latency
    call.jsonl     every execution: skill, arguments, result, status, latency
    error.jsonl    what failed inside, with the stack: for the operator, never for the model
    audit.jsonl    writes and key operations

Every line carries ``request_id`` and the agent's ``session_id``. API keys never reach a
line: only a key's id (the first digits of its hash) and name are logged; every string
is passed through :func:`~agentlab.errors.redact_secrets` and a field named like a
credential loses its value. Each file is capped: past ``max_bytes`` it moves to ``.1``
(``.1`` to ``.2``...), keeping ``backups`` old files.
"""
from __future__ import annotations

import json
import os
import re
import threading
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any, Literal

from ..errors import redact_secrets

__all__ = ["LOGS", "LogName", "SiteLogs", "scrub"]

LogName = Literal["access", "call", "error", "audit"]
LOGS: tuple[LogName, ...] = ("access", "call", "error", "audit")
_CREDENTIAL = re.compile(r"(pass(word)?|secret|token|api[_-]?key|authorization|cookie)$", re.I)


def scrub(value: Any, depth: int = 0) -> Any:
    """``value`` with credentials removed from every string and credential-named fields blanked."""
    if isinstance(value, str):
        return redact_secrets(value)
    if depth > 20:
        return "[nested too deep]"
    if isinstance(value, dict):
        return {k: ("[secret removed]" if isinstance(k, str) and _CREDENTIAL.search(k) and v else scrub(v, depth + 1))
                for k, v in value.items()}
    if isinstance(value, (list, tuple)):
        return [scrub(v, depth + 1) for v in value]
    return value


def _stack(text: str) -> str:
    # a stack is for the operator, so it is kept; credentials in it (an exception's message) are not
    return "\n".join(redact_secrets(line) if not line.lstrip().startswith(("File ", "Traceback")) else line
                     for line in text.splitlines())


class SiteLogs:
    """Appends one JSON object per line, thread-safe, with rotation."""

    def __init__(self, folder: str | Path, *, max_bytes: int = 5_000_000, backups: int = 3,
                 clock: Callable[[], float] = time.time):
        self.folder = Path(folder)
        self.folder.mkdir(parents=True, exist_ok=True)
        self.max_bytes, self.backups, self.clock = max_bytes, backups, clock
        self._lock = threading.Lock()

    def __repr__(self) -> str:
        return f"SiteLogs({self.folder})"

    def path(self, name: LogName) -> Path:
        return self.folder / f"{name}.jsonl"

    def write(self, name: LogName, *, request_id: str, session_id: str | None, **fields: Any) -> None:
        stack = fields.pop("stack", None)
        line: dict[str, Any] = {"ts": round(self.clock(), 3), "request_id": request_id, "session_id": session_id,
                                **scrub(fields)}
        if stack is not None:
            line["stack"] = _stack(stack)
        text = json.dumps(line, ensure_ascii=False, default=str) + "\n"
        with self._lock:
            path = self.path(name)
            if path.exists() and path.stat().st_size + len(text) > self.max_bytes:
                self._rotate(path)
            with path.open("a", encoding="utf-8") as f:
                f.write(text)

    def _rotate(self, path: Path) -> None:
        for i in range(self.backups, 0, -1):
            older = path.with_name(f"{path.name}.{i}")
            if i == self.backups and older.exists():
                older.unlink()
            newer = path if i == 1 else path.with_name(f"{path.name}.{i - 1}")
            if newer.exists():
                os.replace(newer, older)

    def read(self, name: LogName) -> list[dict]:
        """The current file's lines (not the rotated ones), oldest first."""
        path = self.path(name)
        if not path.exists():
            return []
        return [json.loads(x) for x in path.read_text(encoding="utf-8").splitlines() if x.strip()]
