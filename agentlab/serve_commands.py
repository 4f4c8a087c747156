"""The commands behind ``python -m agentlab`` that serve something until stopped: the skill site (and its keys and
check), the guarded MCP gateway (and its keys), and the trainer's view outside a hub.

Each is ``name -> (help, configure(parser), run(namespace) -> exit code)`` in :data:`SERVE`, which
``cli.py`` adds to :data:`agentlab.commands.EXTRA`; inputs are checked first and refused with
:class:`~agentlab.commands.InputError`, as every command's are.
"""
from __future__ import annotations

import argparse
import math
import os
import sys
import time
from pathlib import Path
from typing import Any

from .commands import InputError, _first_cause, _in_range, _writable_dir, emit
from .i18n import Lang, Listed, LocalizedError, joined, os_reason, t

__all__ = ["SERVE"]


def _site_configure(p: argparse.ArgumentParser) -> None:
    p.add_argument("--host", default="127.0.0.1")
    p.add_argument("--port", type=int, default=8000)
    p.add_argument("--skills", action="append", default=[], help="a folder of skills (one subfolder each); repeatable")
    p.add_argument("--data", default=".agentlab-site", help="keys, idempotency records, logs, outbox (default: %(default)s)")
    p.add_argument("--lang", choices=("en", "zh"), default="en")
    p.add_argument("--store", default=os.environ.get("AGENTLAB_STORE") or None,
                   help="claims, rate windows and quotas shared by replicas: redis://host:port/db "
                        "(default: $AGENTLAB_STORE, else SQLite in --data and limits in memory)")
    p.add_argument("--mcp-host", action="append", default=[],
                   help="a Host header /mcp accepts besides localhost (e.g. site.example:*); repeatable")
    p.add_argument("--lease-grace", type=float, default=60.0,
                   help="seconds a write's claim outlives its timeout before its outcome counts as unknown (0 or more)")
    p.add_argument("--volatile-store", action="store_true",
                   help="accept a Redis without appendonly + appendfsync always (a crash may then let a resend "
                        "run a write twice): for a throwaway demo only")
    sub = p.add_subparsers(dest="site_command")
    keys = sub.add_parser("keys", help="manage API keys").add_subparsers(dest="keys_command", required=True)
    create = keys.add_parser("create", help="create a key and print it once")
    create.add_argument("--name", required=True)
    create.add_argument("--skills", dest="key_skills", default="*", help="comma-separated skill names, or * (default)")
    create.add_argument("--operator", action="store_true",
                        help="the key also opens the call log page (every caller's calls): for a person, not an agent")
    create.add_argument("--quota", default=None, help="e.g. 1000/day (per minute, hour or day); default: none")
    # --data and --lang may come after the subcommand too (SUPPRESS: not given there, the site's value stands)
    create.add_argument("--data", default=argparse.SUPPRESS)
    create.add_argument("--lang", choices=("en", "zh"), default=argparse.SUPPRESS)
    _keys_list_revoke(keys)
    check = sub.add_parser("check", help="run every skill's normal, boundary and abnormal cases offline (exit 1 on a failure)")
    check.add_argument("--lang", choices=("en", "zh"), default=argparse.SUPPRESS)


def _keys_list_revoke(keys: Any) -> None:
    """``keys list`` and ``keys revoke``, the site's and the gateway's alike."""
    listing = keys.add_parser("list", help="every key: id, name, skills, quota, created, revoked (never a key itself)")
    revoke = keys.add_parser("revoke", help="revoke a key (by its id, or its name when one key has it): refused at once")
    revoke.add_argument("which", help="the key's id (keys list shows it) or its name")
    for p in (listing, revoke):
        p.add_argument("--data", default=argparse.SUPPRESS)
        p.add_argument("--lang", choices=("en", "zh"), default=argparse.SUPPRESS)


def _keys_command(ns: argparse.Namespace, keys: Any, command: str = "site") -> int:
    """``keys list`` (stdout) or ``keys revoke`` (stderr) on ``keys`` (a KeyStore); create stays with its command
    (``command``: the site's or the gateway's, named where no key exists yet)."""
    lang = ns.lang

    def when(ts: float) -> str:
        return time.strftime("%Y-%m-%d %H:%M UTC", time.gmtime(ts))
    if ns.keys_command == "list":
        records = keys.all()
        if not records:
            print(t("site.keys.none", lang, command=command), file=sys.stderr)
        for r in records:
            state = t("site.keys.active", lang) if r.revoked is None else t("site.keys.revoked", lang,
                                                                              when=when(r.revoked))
            # a gateway's key names tools, a site's skills
            emit(t(f"{command}.keys.line", lang, id=r.id, name=r.name, skills=",".join(r.skills),
                   quota=f"{r.quota}/{r.period}" if r.quota else t("site.no_quota", lang),
                   role=t("site.keys.operator", lang) if r.operator else "", created=when(r.created), state=state))
        return 0
    try:
        revoked = keys.revoke(ns.which)
    except LookupError:
        raise InputError("site.key_ambiguous", which=ns.which[:100],
                         n=sum(r.name == ns.which and r.revoked is None for r in keys.all())) from None
    if not revoked:
        raise InputError("site.no_such_key", which=ns.which[:100])
    for r in revoked:
        print(t("site.key_revoked", lang, id=r.id, name=r.name), file=sys.stderr)
    return 0


def _check_store(url: str) -> None:
    """Refuse a store URL that does not parse or a Redis that does not answer, in one line, before serving."""
    from .redaction import redact_secrets
    from .store import open_store
    try:
        store = open_store(url)
        ping = getattr(getattr(store, "client", None), "ping", None)
        if ping is not None:
            ping()
    except ImportError as exc:  # the URL's password (redis://user:PASSWORD@...) is never said back
        raise InputError("site.bad_store", url=redact_secrets(url),
                         detail=f"pip install 'agentlab[redis]' ({exc.name} is missing)") from None
    except Exception as exc:  # noqa: BLE001 - a bad URL or an unreachable server: said in one line
        raise InputError("site.bad_store", url=redact_secrets(url), detail=redact_secrets(str(exc)[:200])) from None


def _site(ns: argparse.Namespace) -> int:
    data = ns.data
    for folder in ns.skills:
        if not Path(folder).is_dir():
            raise InputError("input.no_folder", path=folder, what="what.skills_dir")
    try:
        import fastapi  # noqa: F401 - only to say which extra is missing, in one line
        import uvicorn
    except ImportError as exc:
        raise InputError("site.needs_extra", missing=exc.name or "fastapi") from None
    if ns.site_command == "check":
        return _site_check(ns)
    from .site.keys import parse_quota
    from .site.service import SkillSite
    if ns.store:
        _check_store(ns.store)
    quota = None
    if ns.site_command == "keys" and getattr(ns, "quota", None) is not None:
        try:
            quota = parse_quota(ns.quota)
        except ValueError:
            raise InputError("input.quota", got=ns.quota) from None
    if not (math.isfinite(ns.lease_grace) and ns.lease_grace >= 0):
        raise InputError("site.bad_lease_grace", got=ns.lease_grace)
    # the data folder made and written to first: one that cannot be was said as "the skills could not be loaded",
    # with Python's English words and the folder's path in the detail
    _writable_dir(data, "--data")
    try:
        site = SkillSite(data, skills_dirs=ns.skills, store=ns.store, lease_grace=ns.lease_grace,
                         volatile_store=ns.volatile_store)
    except LocalizedError as exc:  # a Redis that may forget claims: said as it is, not as a skills problem
        raise InputError(exc.key, **exc.fields) from None
    except (ImportError, SyntaxError, ValueError, TypeError, OSError) as exc:
        raise InputError("input.bad_skills", path=", ".join(ns.skills) or data, detail=str(exc)[:200]) from None
    if ns.site_command == "keys" and ns.keys_command != "create":
        return _keys_command(ns, site.keys)
    if ns.site_command == "keys":
        names = [n.strip() for n in ns.key_skills.split(",") if n.strip()]
        if not names:  # "" or "," would otherwise be read as no limit at all
            raise InputError("site.no_skills")
        unknown = [n for n in names if n != "*" and n not in site.skills]
        if unknown:
            raise InputError("input.unknown_skills", names=Listed(unknown), known=Listed(site.skills))
        count, period = (quota[0], quota[1]) if quota else (None, "day")
        key, record = site.create_key(ns.name, names, quota=count, period=period, operator=ns.operator)
        print(t("site.key_created", ns.lang, name=ns.name, skills=joined(record.skills, ns.lang, "list"),
                quota=ns.quota or t("site.no_quota", ns.lang)), file=sys.stderr)
        if record.operator:
            print(t("site.operator_key", ns.lang, name=ns.name), file=sys.stderr)
        emit(key)  # stdout holds the key alone, so that a script can capture it
        return 0
    _in_range("--port", ns.port, 0, 65535)
    _port_free(ns.host, ns.port)
    from .site.app import create_app
    print(t("site.serving", ns.lang, n=len(site.skills), host=ns.host, port=ns.port, data=data), file=sys.stderr, flush=True)
    # bounded before anything runs (site/serving.py): headers due within seconds, a share of connections per
    # source, requests in progress (not idle connections) bounded
    from .site.serving import server_config
    try:
        uvicorn.Server(server_config(create_app(site, mcp_hosts=ns.mcp_host), host=ns.host, port=ns.port)).run()
    except KeyboardInterrupt:  # raised again once uvicorn has shut down: Ctrl-C is how a site is stopped
        pass
    # said as the stop it is, where it was "did not finish; run it again when you are ready"
    print(t("site.stopped", ns.lang, data=data), file=sys.stderr, flush=True)
    return 0


def _site_check(ns: argparse.Namespace) -> int:
    """``site check``: the offline validation set (docs/site.md#site-check) on fresh sites in a temporary folder."""
    from .site.check import load_check_cases, run_checks
    try:
        cases = load_check_cases(*ns.skills)
    except (ValueError, OSError) as exc:
        raise InputError("input.bad_cases", detail=str(exc)[:300]) from None
    try:
        report = run_checks(cases, skills_dirs=ns.skills, lang=ns.lang)
    except (ImportError, SyntaxError, TypeError) as exc:
        raise InputError("input.bad_skills", path=", ".join(ns.skills), detail=str(exc)[:200]) from None
    for line in report.lines(ns.lang):
        emit(line)
    return 0 if report.ok else 1


def _gateway_configure(p: argparse.ArgumentParser) -> None:
    p.add_argument("--upstream", help="the MCP server guarded: a streamable-HTTP URL or a stdio command (required to serve)")
    p.add_argument("--data", default=".agentlab-gateway", help="the clients' API keys (keys.db) (default: %(default)s)")
    p.add_argument("--allow-keyless", action="store_true",
                   help="also serve clients without a key, all of them as one client with one client's limits")
    p.add_argument("--host", default="127.0.0.1")
    p.add_argument("--port", type=int, default=8100)
    p.add_argument("--store", default=None, help="where claims live: sqlite:///file.db, redis://... (default: memory)")
    p.add_argument("--writes", default="", help="tools claimed whatever their annotations say: name,name")
    p.add_argument("--per-minute", type=int, default=60, help="each client's calls a minute")
    p.add_argument("--in-flight", type=int, default=4, help="each client's calls running at once (more are refused)")
    p.add_argument("--logs", default="gateway-logs", help="the folder of the access, call, error and audit logs")
    p.add_argument("--lang", choices=("en", "zh"), default="en")
    sub = p.add_subparsers(dest="gateway_command")
    keys = sub.add_parser("keys", help="manage the clients' API keys").add_subparsers(dest="keys_command", required=True)
    create = keys.add_parser("create", help="create a key and print it once")
    create.add_argument("--name", required=True)
    create.add_argument("--tools", dest="key_skills", default="*", help="comma-separated tool names, or * (default)")
    create.add_argument("--quota", default=None, help="e.g. 1000/day (per minute, hour or day); default: none")
    create.add_argument("--data", default=argparse.SUPPRESS)
    create.add_argument("--lang", choices=("en", "zh"), default=argparse.SUPPRESS)
    _keys_list_revoke(keys)


def _gateway_keys(ns: argparse.Namespace) -> int:
    """``gateway keys create|list|revoke``: the site's key store, in the gateway's --data."""
    from .site.keys import KeyStore, parse_quota
    keys = KeyStore(Path(_writable_dir(ns.data, "--data")) / "keys.db")
    if ns.keys_command != "create":
        return _keys_command(ns, keys, "gateway")
    names = [n.strip() for n in ns.key_skills.split(",") if n.strip()]
    if not names:
        raise InputError("site.no_skills")
    try:
        count, period = parse_quota(ns.quota) if ns.quota is not None else (None, "day")
    except ValueError:
        raise InputError("input.quota", got=ns.quota) from None
    key, record = keys.create(ns.name, names, quota=count, period=period)
    print(t("site.key_created", ns.lang, name=ns.name, skills=joined(record.skills, ns.lang, "list"),
            quota=ns.quota or t("site.no_quota", ns.lang)), file=sys.stderr)
    emit(key)  # stdout holds the key alone, so that a script can capture it
    return 0


def _gateway(ns: argparse.Namespace) -> int:
    """The upstream's tools at http://HOST:PORT/mcp, each call through agentlab's guards (site/gateway.py)."""
    if ns.gateway_command == "keys":
        return _gateway_keys(ns)
    if not ns.upstream:
        raise InputError("gateway.needs_upstream")
    _in_range("--port", ns.port, 0, 65535)
    _in_range("--per-minute", ns.per_minute, 1)
    _in_range("--in-flight", ns.in_flight, 1)
    try:
        import uvicorn
    except ImportError as exc:
        raise InputError("site.needs_extra", missing=exc.name or "uvicorn") from None
    from .redaction import redact
    from .site.gateway import Gateway
    from .site.serving import server_config
    _port_free(ns.host, ns.port)  # before the upstream starts: nothing left running, nothing said as serving
    if ns.store:
        _check_store(ns.store)
    try:
        gw = Gateway(ns.upstream, writes=[n.strip() for n in ns.writes.split(",") if n.strip()], store=ns.store,
                     logs=_writable_dir(ns.logs, "--logs"), per_minute=ns.per_minute, in_flight=ns.in_flight, lang=ns.lang,
                     keys=Path(_writable_dir(ns.data, "--data")) / "keys.db", allow_keyless=ns.allow_keyless,
                     # the upstream's own key, from the environment (never the command line, which ps shows)
                     upstream_headers={"X-API-Key": os.environ["AGENTLAB_UPSTREAM_KEY"]}
                     if os.environ.get("AGENTLAB_UPSTREAM_KEY") else None)
    except Exception as exc:  # noqa: BLE001 - an upstream that does not start or answer: said in one line
        cause = _first_cause(exc)
        # the system's refusal in the reader's words (no such command, nothing listening), not "[Errno 2] No such file"
        system = _system_error(cause)
        raise InputError("gateway.no_upstream", upstream=ns.upstream[:200],
                         detail=os_reason(system) if system is not None
                         else t("gateway.upstream_closed", ns.lang) if str(cause) == "Connection closed"
                         else redact(f"{type(cause).__name__}: {cause}")[:200]) from None
    with gw:
        for name, why in sorted(gw.disabled.items()):  # each bad contract left out alone, said why
            print(t("gateway.tool_disabled", ns.lang, name=name, why=why), file=sys.stderr, flush=True)
        print(t("gateway.serving", ns.lang, n=len(gw.tools), writes=joined(sorted(gw.writes), ns.lang, "list") or "-",
                host=ns.host, port=ns.port, logs=ns.logs), file=sys.stderr, flush=True)
        if ns.allow_keyless:
            print(t("gateway.keyless", ns.lang), file=sys.stderr, flush=True)
        elif not any(k.revoked is None for k in gw.keys.all()):  # every client would hear 401, and nothing said why
            print(t("gateway.no_keys", ns.lang, data=ns.data), file=sys.stderr, flush=True)
        # bounded as the site is; on the upstream connection's own event loop, so that a call crosses no thread
        from .ports import port_taken
        from .site.mcp_client import ServerDidNotStart
        try:
            gw.conn.serve(uvicorn.Server(server_config(gw.app(), host=ns.host, port=ns.port)))
        except ServerDidNotStart:  # uvicorn said why on the line above: a port taken since the check, or another cause
            raise InputError("serve.port_busy" if port_taken(ns.host, ns.port) else "serve.not_started",
                             host=ns.host, port=ns.port) from None
    return 0


def _port_free(host: str, port: int) -> None:
    """Raises :class:`InputError` (one line, exit 2) when another program holds ``port``."""
    from .ports import port_taken
    if port_taken(host, port):
        raise InputError("serve.port_busy", host=host, port=port)


def _trainer_configure(p: argparse.ArgumentParser) -> None:
    p.add_argument("--room", required=True, help="the room code participants connect with: 4 to 64 letters, digits, - or _")
    p.add_argument("--port", type=int, default=8765, help="(default: %(default)s; 0: any free port)")
    p.add_argument("--host", default="0.0.0.0", help="the address to listen on (default: every interface, so that "
                                                      "participants on the same network reach it)")
    p.add_argument("--state", default=".agentlab-trainer", help="the folder of progress.sqlite (default: %(default)s)")
    p.add_argument("--lang", choices=("en", "zh", "both"), default="both", help="the language it speaks (default: both)")


def _trainer(ns: argparse.Namespace) -> int:
    """The trainer's view on this machine, without a hub (agentlab/hub/progress.py, docs/trainer.md)."""
    import asyncio
    lang: Lang = "zh" if ns.lang == "zh" else "en"
    _in_range("--port", ns.port, 0, 65535)
    try:
        import tornado  # noqa: F401 - the notebook server's own dependency; a bare install may lack it
    except ImportError as exc:
        raise InputError("site.needs_extra", missing=exc.name or "tornado") from None
    from .hub import progress
    try:
        room = progress.new_room(ns.room)
    except ValueError:
        raise InputError("trainer.bad_room_code", got=ns.room[:80]) from None
    state = Path(_writable_dir(ns.state, "--state"))

    def say(port: int) -> None:
        host = progress.lan_address() if ns.host in ("0.0.0.0", "::", "") else ns.host
        url = f"http://{host}:{port}/"
        for each in (("en", "zh") if ns.lang == "both" else (lang,)):
            print(t("trainer.serving", each, url=url, room=room.code, trainer_url=f"{url}?trainer={room.trainer_secret}",
                    state=state), flush=True)
    try:
        asyncio.run(progress.serve_room(room, state, port=ns.port, host=ns.host, ready=say))
    except OSError as exc:  # the port taken, an address not this machine's: one line, not a traceback
        raise InputError("trainer.cannot_listen", host=ns.host, port=ns.port, reason=os_reason(exc)) \
            from None
    return 0


SERVE = {
    "site": ("serve the skill site (keys create: make an API key; check: run the validation set)", _site_configure, _site),
    "gateway": ("serve any MCP server's tools to any MCP client with agentlab's guards in between",
                _gateway_configure, _gateway),
    "trainer": ("serve the trainer's view on this machine, without a hub: participants' checks report to it with "
                "the room code", _trainer_configure, _trainer),
}


def _system_error(exc: BaseException) -> OSError | None:
    """The operating system's error at the root of ``exc`` (an HTTP client's "all connection attempts failed" wraps
    the refused connection), or None."""
    for _ in range(10):  # a chain, never followed round a loop
        if isinstance(exc, OSError) and exc.errno is not None:
            return exc
        nxt = exc.__cause__ or exc.__context__
        if nxt is None:
            return None
        exc = nxt
    return None
