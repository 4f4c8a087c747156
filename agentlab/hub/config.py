"""Every setting of the workshop's JupyterHub, as plain data: :func:`build` returns it, the tests read it.

``hub/jupyterhub_config.py`` applies the JSON file :func:`write_config` makes (mode 0600: it holds the workshop and
Redis passwords) to JupyterHub's own configuration object, section by section.
"""
from __future__ import annotations

import json
import os
from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from ..i18n import t
from ..models.local import default_threads
from . import members, progress, records, services
from .auth import MIN_PASSWORD

__all__ = ["LOGS", "NOTES", "TRAINER_ROLE", "TRAINER_SCOPES", "HubSettings", "build", "server_env", "write_config"]

#: The state folder's copy of the trainer notes (the services' account's, mode 0700): the trainer's view reads it.
NOTES = "trainer-notes"
#: the state folder's folder of the services' own logs (services.logged), the services' account's
LOGS = "logs"


#: What JupyterHub's login handler says, in English only, when a form's _xsrf has expired (handlers/login.py): the
#: login page replaces it with the catalogue's ``hub.login.expired`` in both languages.
JUPYTERHUB_EXPIRED = "Login form invalid or expired. Try again."


@dataclass(frozen=True)
class HubSettings:
    """One workshop: where things are, the ports, the limits."""

    root: Path                   # the checkout (notebooks/, hub/)
    state: Path                  # the hub's state folder (root-owned, 0711)
    python: Path                 # the shared environment's python
    proxy: Path                  # configurable-http-proxy
    workshop_password: str
    admin: str = "trainer"
    admin_password: str = ""     # the admin's own password, set before the hub starts ('': left as it was)
    port: int = 8000
    hub_port: int = 0            # 0: any free port (likewise below)
    proxy_api_port: int = 0
    redis_password: str = ""     # the room's Redis (a Unix socket of the services' account: no port)
    model_secret: str = ""       # the model gate's HMAC secret for participants' model keys ('': made at start)
    site_port: int = 0
    model_port: int = 0
    progress_port: int = 0       # the trainer's view (agentlab.hub.progress)
    gguf: Path | None = None     # None: the hub starts without the shared model
    slots: int = 4
    threads: int = 0             # the model's threads (0: agentlab.models.local.default_threads, one on two cores)
    idle_timeout: int = 3600
    data_limit: int = 2 << 30    # bytes per process (the server, each kernel)
    account_limit: int = 0       # bytes for all of a participant's processes together (0: twice data_limit)
    disk_limit: int = 0          # bytes of each participant's own disk (0: none; agentlab.hub.disks)
    log_cap: int = records.LOG_CAP  # bytes of the hub's log and of each service's before it starts again
    seats: int = 0               # names the workshop password may claim in all (0: no cap; agentlab.hub.auth)


#: the trainer's role: JupyterHub's admin scopes without ``shutdown`` and ``proxy`` (see :func:`build`)
TRAINER_ROLE = "agentlab-trainer"
TRAINER_SCOPES = ("admin-ui", "admin:users", "admin:servers", "admin:groups", "tokens", "list:services", "read:services",
                  "access:services", "access:servers", "read:hub", "read:roles", "read:metrics", "shares")

def server_env(s: HubSettings) -> dict[str, str]:
    """What every participant's server is told (the per-participant key and store are added at spawn)."""
    env = {"PYTHONPATH": str(s.root), "AGENTLAB_SITE_URL": f"http://127.0.0.1:{s.site_port}",
           **progress.participant_env(s.progress_port)}  # the exercise checks report there, with the server's token
    # the workbook's Jupyter settings (etc/jupyter): each notebook listed once, saved as committed, no news pop-up
    env["JUPYTER_CONFIG_PATH"] = str(s.root / "etc" / "jupyter")
    if s.gguf is not None:
        # AGENTLAB_SOURCE: notebook 09's live section asks the room's model instead of only replaying recordings
        # AGENTLAB_API_KEY is each participant's own (the spawner adds it): the gate serves participants in turn
        env.update(AGENTLAB_BASE_URL=f"http://127.0.0.1:{s.model_port}/v1", AGENTLAB_MODEL=s.gguf.stem,
                   AGENTLAB_SOURCE="openai")
    return env


def build(s: HubSettings, *, extra_services: Iterable[Mapping[str, Any]] = (),
          extra_roles: Iterable[Mapping[str, Any]] = (), extra_env: Mapping[str, str] | None = None
          ) -> dict[str, dict[str, Any]]:
    """JupyterHub's configuration, section by section. ``extra_services``/``extra_roles``/``extra_env``: the
    hook for more (the trainer's view, a load test's admin token), added as they are."""
    py, root, st = str(s.python), str(s.root), s.state
    store = f"unix://default:{s.redis_password}@{services.redis_socket(st / 'redis')}?db=0&prefix=agentlab:site:"
    svc = [services.redis(st / "redis" / "redis.conf"),
           services.site(py, root, st / "site", s.site_port, store),
           services.culler(py, s.idle_timeout)]
    if s.gguf is not None:
        svc.append(services.model(py, root, s.gguf, s.model_port, slots=s.slots,
                                  threads=s.threads or default_threads(), secret=s.model_secret,
                                  sock=st / "model" / "run" / "model.sock"))
    trainer = progress.service(s.progress_port, st / "progress", trainers=[s.admin], notes=st / NOTES)
    # the services' account runs it, with the hub's python (the state folder is that account's, like the site's)
    trainer.update(command=[py, "-m", "agentlab.hub.progress"], user=services.SERVICES_USER,
                   environment={**trainer["environment"], "PYTHONPATH": root})
    svc.append(trainer)
    svc = [services.logged(x, st / LOGS) for x in svc]  # each its own log: what one said when it stopped is its own
    svc += [dict(x) for x in extra_services]
    roles = [{"name": "trainer-view", "services": [trainer["name"]], "scopes": list(members.SCOPES)},  # the room's names
             {"name": "idle-culler", "services": ["idle-culler"],
              "scopes": ["list:users", "read:users:activity", "read:servers", "delete:servers"]},
             # a participant opens the trainer's view (and sees their own row only), beside JupyterHub's own "self"
             # without the tokens and share codes they could make without end (agentlab.hub.records)
             {"name": "user", "scopes": [*records.PARTICIPANT_SCOPES, progress.ACCESS_SCOPE]},
             # the trainer (--admin) has every right of JupyterHub's admin but two: to shut the hub down, which the admin
             # page offers as one click with no question (it ended every participant's server), and to rewrite the
             # proxy's routes. Its members given, JupyterHub makes each role's membership exact: a trainer of an earlier
             # start on the same state folder keeps no right, and nobody stays in the admin role itself
             {"name": "admin", "users": []},
             {"name": TRAINER_ROLE, "users": [s.admin], "scopes": list(TRAINER_SCOPES)},
             *(dict(r) for r in extra_roles)]
    both = " / ".join((t("hub.otp_prompt", "en"), t("hub.otp_prompt", "zh")))
    rule = {lang: t("hub.login.rule", lang) for lang in ("en", "zh")}
    login = {f"{k}_{lang}": t(f"hub.login.{key}", lang, rule=rule[lang], n=MIN_PASSWORD)
             for k, key in (("intro", "intro"), ("name", "name_label"), ("password", "password_label"),
                            ("sign_in", "sign_in"))
             for lang in ("en", "zh")}
    return {
        # read by hub/jupyterhub_config.py itself, not a section of JupyterHub's: the bounds of its own records
        "agentlab": {"max_body": records.MAX_BODY, "log_cap": s.log_cap, "service_logs": str(st / LOGS),
                     "homes": str(st / "homes")},
        "JupyterHub": {
            "bind_url": f"http://127.0.0.1:{s.port}",
            "hub_ip": "127.0.0.1", "hub_port": s.hub_port,
            "db_url": f"sqlite:///{st / 'hub' / 'jupyterhub.sqlite'}",
            "cookie_secret_file": str(st / "hub" / "cookie_secret"),
            "pid_file": str(st / "hub" / "jupyterhub.pid"),
            "authenticator_class": "agentlab.hub.auth.WorkshopAuthenticator",
            "spawner_class": "agentlab.hub.spawner.WorkshopSpawner",
            "services": svc, "load_roles": roles,
            # the login form (hub/templates/login.html): its labels and every refusal in both languages
            "template_paths": [str(s.root / "hub" / "templates")],
            "template_vars": {"agentlab_login": {**login, "jupyterhub_expired": JUPYTERHUB_EXPIRED,
                                                 "expired": "\n".join(t("hub.login.expired", x) for x in ("en", "zh"))},
                              # the menu of every hub page (hub/templates/page.html): its links in both languages
                              "agentlab_nav": {k: " / ".join(t(f"hub.nav.{k}", x) for x in ("en", "zh"))
                                               for k in ("home", "token", "admin", "progress")},
                              # JupyterHub's own pages a participant meets (hub/templates): starting, not running,
                              # refused, not found, each in both languages
                              "agentlab_pages": {k: {x: t(f"hub.page.{k}", x) for x in ("en", "zh")} for k in (
                                  "starting", "not_running_title", "not_running", "failed_title", "failed", "launch",
                                  "relaunch", "forbidden", "not_found")}},
            "cleanup_servers": True, "cleanup_proxy": True,
        },
        "ConfigurableHTTPProxy": {
            "command": [str(s.proxy)], "api_url": f"http://127.0.0.1:{s.proxy_api_port}",
            "pid_file": str(st / "hub" / "proxy.pid"),
        },
        # (the admin by the admin role above alone: admin_users beside it is merged, with a warning, and only adds)
        "Authenticator": {"allow_all": True, "request_otp": True, "otp_prompt": both},
        "WorkshopAuthenticator": {"passwords_file": str(st / "hub" / "passwords.json"),
                                  "workshop_password": s.workshop_password, "admin_names": [s.admin],
                                  "seats": s.seats},
        "Spawner": {
            # JupyterHub's single-user server, closed to every other account's connections (agentlab.hub.singleuser)
            "cmd": [str(s.python), "-m", "agentlab.hub.singleuser"], "default_url": "/lab",
            # a room starting thirty kernels at once on two cores: a kernel may take more than the default 60 s
            # to answer its first message, and the browser's connection was then dropped (measured at 30)
            "args": ["--MappingKernelManager.kernel_info_timeout=300"],
            "environment": {**server_env(s), **(extra_env or {})},
            "start_timeout": 120, "http_timeout": 120, "mem_limit": s.data_limit,
        },
        "WorkshopSpawner": {
            "state_dir": str(st), "notebooks_dir": str(s.root / "notebooks"), "python": py, "root": root,
            "site_dir": str(st / "site"), "own_redis": True, "model_secret": s.model_secret if s.gguf else "",
            "data_limit": s.data_limit, "account_limit": s.account_limit or 2 * s.data_limit,
            "disk_limit": s.disk_limit,
        },
    }


def write_config(config: Mapping[str, Any], path: Path) -> Path:
    """The configuration as JSON in a file only its owner reads (it holds passwords)."""
    fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o600)
    with os.fdopen(fd, "w", encoding="utf-8") as out:
        json.dump(config, out, indent=1)
    return path
