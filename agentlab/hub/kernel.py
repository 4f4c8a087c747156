"""Run code in a participant's kernel through the hub's proxy, as their browser would (the kernel websocket).

Used by the load test and the tests: ``run_cells(server_url, token, cells)`` opens a session on the
participant's server (with a token, or with the ``headers`` a browser sends: its login cookies and XSRF token),
sends each cell as an ``execute_request`` and collects what it printed and whether it raised, then closes the
session. ``server_url`` is ``http://127.0.0.1:PORT/user/NAME/``.
"""
from __future__ import annotations

import asyncio
import json
import time
import uuid
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

__all__ = ["CellResult", "run_cells"]


@dataclass(frozen=True)
class CellResult:
    """One cell: ``ok``, what it printed (stdout), and its error as ``Name: value`` when it raised."""

    ok: bool
    stdout: str
    error: str
    seconds: float


def _message(msg_type: str, content: dict[str, Any], session: str) -> dict[str, Any]:
    return {"header": {"msg_id": uuid.uuid4().hex, "msg_type": msg_type, "session": session, "username": "",
                       "version": "5.3", "date": ""},
            "parent_header": {}, "metadata": {}, "content": content, "channel": "shell", "buffers": []}


async def _run(server_url: str, token: str, cells: list[str], path: str, timeout: float,
               sent: Mapping[str, str] | None) -> list[CellResult]:
    from tornado.httpclient import AsyncHTTPClient, HTTPRequest
    from tornado.websocket import websocket_connect
    headers = {**({"Authorization": f"token {token}"} if token else {}), **(sent or {}),
               "Content-Type": "application/json"}
    http = AsyncHTTPClient(force_instance=True)
    body = json.dumps({"path": path, "type": "notebook", "name": "", "kernel": {"name": "python3"}})
    reply = await http.fetch(HTTPRequest(f"{server_url}api/sessions", method="POST", headers=headers, body=body,
                                         request_timeout=timeout))
    session = json.loads(reply.body)
    kernel = session["kernel"]["id"]
    ws_url = f"{server_url.replace('http', 'ws', 1)}api/kernels/{kernel}/channels"
    results: list[CellResult] = []
    try:
        ws = await websocket_connect(HTTPRequest(ws_url, headers=headers, request_timeout=timeout),
                                     max_message_size=64 << 20)
        try:
            sid = uuid.uuid4().hex
            for code in cells:
                started = time.monotonic()
                msg = _message("execute_request", {"code": code, "silent": False, "store_history": False,
                                                   "user_expressions": {}, "allow_stdin": False,
                                                   "stop_on_error": True}, sid)
                await ws.write_message(json.dumps(msg))
                out, error, status, idle = [], "", None, False
                while status is None or not idle:
                    raw = await asyncio.wait_for(ws.read_message(), timeout)
                    if raw is None:
                        raise ConnectionError(f"the kernel's websocket closed ({ws.close_code} {ws.close_reason}) "
                                              f"in cell {len(results) + 1}")
                    m = json.loads(raw)
                    if m.get("parent_header", {}).get("msg_id") != msg["header"]["msg_id"]:
                        continue
                    kind, content = m["msg_type"], m["content"]
                    if kind == "stream" and content.get("name") == "stdout":
                        out.append(content["text"])
                    elif kind == "error":
                        error = f"{content['ename']}: {content['evalue']}"
                    elif kind == "execute_reply":
                        status = content["status"]
                        if status == "error" and not error:
                            error = f"{content.get('ename')}: {content.get('evalue')}"
                    elif kind == "status" and content.get("execution_state") == "idle":
                        idle = True
                results.append(CellResult(status == "ok", "".join(out), error, time.monotonic() - started))
                if status != "ok":
                    break
        finally:
            ws.close()
    finally:
        await http.fetch(HTTPRequest(f"{server_url}api/sessions/{session['id']}", method="DELETE", headers=headers,
                                     request_timeout=timeout), raise_error=False)
        http.close()
    return results


def run_cells(server_url: str, token: str, cells: list[str], *, path: str = "notebooks/00_start_here.ipynb",
              timeout: float = 300, headers: Mapping[str, str] | None = None) -> list[CellResult]:
    """Run ``cells`` in order in a new kernel of the server (its working folder: ``path``'s); stops at an error.
    ``token`` may be empty when ``headers`` authenticate the requests (a browser's cookies and ``X-XSRFToken``)."""
    return asyncio.run(_run(server_url, token, cells, path, timeout, headers))
