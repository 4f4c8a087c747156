"""The workshop hub under a room: N participants start their servers and run notebook 00 at once.

    python benchmarks/hub_load.py --users 3 [--hostile] [--no-model] [--timeout 900] [--json]

Starts the real hub (as ``python run.py hub`` does, in a fresh state folder; loopback only), creates N
participants through the hub's REST API with an admin token, starts their servers, then runs every code cell
of notebook 00 and one exercise check in each participant's own kernel (the kernel websocket, through the
hub's proxy), all at once. Then, if the model is installed, every participant asks the shared model one
question at the same moment. Reports: the time until every notebook has run, the hub's memory and each
participant's (their server and kernels, summed), the shared model's throughput, and the failures (target 0;
the exit status is 1 on any). Needs root, requirements-hub.txt and ``npm ci`` in hub/.

With ``--hostile`` one more participant attacks the room (benchmarks/hostile_participant.py, from their own kernel:
fill their Redis and run a script in it that never ends, try the room's Redis, flood the model, hold 900 half-open
connections each to the site and the model, flood the hub with refused requests), and the round (notebooks, a site call, a model question) is measured
twice: quiet, then under the attack. Under it every call must still succeed, and each participant's times stay
within ``--slower`` times the quiet ones, plus 5 s (the model too: one request of the attacker's at a time shares its
tokens, never a queue of them).
"""
from __future__ import annotations

import argparse
import json
import os
import secrets
import shutil
import sys
import tempfile
import threading
import time
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from agentlab.cmdline import size  # noqa: E402
from agentlab.hub.config import HubSettings  # noqa: E402
from agentlab.hub.kernel import run_cells  # noqa: E402
from agentlab.hub.launch import Hub, _find_gguf, workshop_uids  # noqa: E402
from agentlab.hub.users import SERVICES_USER, os_name, processes_of  # noqa: E402

CHECK = ("from agentlab.workbook.exercises import double_refund_fault\n"
         "fb = double_refund_fault('lost_reply')\nprint(type(fb).__name__, fb.state)")
ASK = ("import json, os, time, urllib.request\nt0 = time.time()\n"
       "body = {'model': os.environ['AGENTLAB_MODEL'], 'max_tokens': 48, 'temperature': 0,\n"
       "        'messages': [{'role': 'user', 'content': 'In two sentences: why must a refund tool take an idempotency key?'}]}\n"
       "req = urllib.request.Request(os.environ['AGENTLAB_BASE_URL'] + '/chat/completions', json.dumps(body).encode(),\n"
       "                             {'Content-Type': 'application/json'})\n"
       "req.add_header('Authorization', 'Bearer ' + os.environ['AGENTLAB_API_KEY'])  # each participant's own key\n"
       "reply = json.load(urllib.request.urlopen(req, timeout=600))\n"
       "print(json.dumps({'tokens': reply['usage']['completion_tokens'], 't0': t0, 't1': time.time()}))")
SITE = ("import json, time\nfrom agentlab.site.client import site_registry\nt0 = time.time()\n"
        "n = len(site_registry())\nprint(json.dumps({'skills': n, 's': time.time() - t0}))")
HOSTILE_NAME = "hostile"
#: the cap of the hub's log and each service's in this room (agentlab.hub.records): low, so a flood reaches it
LOG_CAP = 4 << 20


def notebook_cells(path: Path) -> list[str]:
    nb = json.loads(path.read_text(encoding="utf-8"))
    return ["".join(c["source"]) for c in nb["cells"] if c["cell_type"] == "code" and "".join(c["source"]).strip()]


def rss_of(pids) -> int:
    total = 0
    for pid in pids:
        try:
            for line in Path(f"/proc/{pid}/status").read_text().splitlines():
                if line.startswith("VmRSS:"):
                    total += int(line.split()[1]) * 1024
        except OSError:
            continue
    return total


def tree(pid: int) -> list[int]:
    """pid and its descendants (from /proc)."""
    children: dict[int, list[int]] = {}
    for entry in Path("/proc").iterdir():
        if entry.name.isdigit():
            try:
                ppid = int(Path(entry, "stat").read_text().rsplit(")", 1)[1].split()[1])
            except (OSError, IndexError, ValueError):
                continue
            children.setdefault(ppid, []).append(int(entry.name))
    out, todo = [], [pid]
    while todo:
        p = todo.pop()
        out.append(p)
        todo += children.get(p, [])
    return out


class Peaks:
    """The largest RSS seen, sampled every half second: the hub's process, each participant's account, the services."""

    def __init__(self, hub: Hub, names: list[str]):
        import pwd
        self.hub, self.stop = hub, threading.Event()
        self.uids = {}
        self.names = names
        self.peak: dict[str, int] = {}
        self._pwd = pwd
        self.thread = threading.Thread(target=self.run, daemon=True)
        self.thread.start()

    def sample(self) -> None:
        seen = {"hub": rss_of([self.hub.proc.pid])}
        by_uid: dict[int, list[int]] = {}
        for pid in processes_of(set(self._uids().values())):
            try:
                by_uid.setdefault(Path(f"/proc/{pid}").stat().st_uid, []).append(pid)
            except OSError:
                pass
        for who, uid in self._uids().items():
            seen[who] = rss_of(by_uid.get(uid, []))
        seen["proxy"] = sum(rss_of(tree(int(p))) for p in self._proxy_pid())
        for k, v in seen.items():
            self.peak[k] = max(self.peak.get(k, 0), v)

    def _proxy_pid(self) -> list[str]:
        f = self.hub.settings.state / "hub" / "proxy.pid"
        return [f.read_text().strip()] if f.exists() else []

    def _uids(self) -> dict[str, int]:
        if len(self.uids) < len(self.names) + 1:
            for who, account in [("services", SERVICES_USER), *((n, os_name(n)) for n in self.names)]:
                try:
                    self.uids[who] = self._pwd.getpwnam(account).pw_uid
                except KeyError:
                    pass
        return self.uids

    def run(self) -> None:
        while not self.stop.wait(0.5):
            self.sample()


def main() -> int:
    ap = argparse.ArgumentParser(prog="python benchmarks/hub_load.py")
    ap.add_argument("--users", type=int, default=3)
    ap.add_argument("--no-model", action="store_true")
    ap.add_argument("--timeout", type=float, default=900, help="the whole run's bound, seconds")
    ap.add_argument("--mem-limit", default="2G")
    ap.add_argument("--json", action="store_true")
    ap.add_argument("--hostile", action="store_true", help="one more participant attacks the room; measured twice")
    ap.add_argument("--slower", type=float, default=3.0,
                    help="under attack, the most each time may grow (times the quiet figure, plus a margin)")
    ns = ap.parse_args()
    if not 1 <= ns.users <= 200:
        ap.error("--users is 1 to 200")
    names = [f"p{i:03d}" for i in range(ns.users)]
    state = Path(tempfile.mkdtemp(prefix="agentlab-hub-load-"))
    token = secrets.token_hex(16)
    gguf = None if ns.no_model else _find_gguf(state)
    from agentlab.hub import services
    s = HubSettings(root=ROOT, state=state, python=Path(sys.executable),
                    proxy=ROOT / "hub" / "node_modules" / ".bin" / "configurable-http-proxy",
                    workshop_password=secrets.token_urlsafe(9), port=services.free_port(), gguf=gguf,
                    slots=max(1, min(8, ns.users)), data_limit=size(ns.mem_limit), log_cap=LOG_CAP)
    roles = [{"name": "load", "services": ["load"],
              "scopes": ["admin:users", "admin:servers", "access:servers", "list:users", "read:users", "tokens"]}]
    hub = Hub(s, extra_services=[{"name": "load", "api_token": token}], extra_roles=roles)
    cells = [*notebook_cells(ROOT / "notebooks" / "00_start_here.ipynb"), CHECK]
    failures: list[str] = []
    report: dict[str, object] = {"users": ns.users, "model": gguf is not None, "cores": os.cpu_count(),
                                 "load_avg_before": Path("/proc/loadavg").read_text().split()[0]}
    deadline = time.monotonic() + ns.timeout
    t0 = time.monotonic()
    hub.start()
    report["hub_start_s"] = round(time.monotonic() - t0, 1)
    peaks = Peaks(hub, [*names, *([HOSTILE_NAME] if ns.hostile else [])])
    stopping = threading.Event()  # Ctrl-C: the participants' threads stop waiting
    try:
        def up(name: str) -> str:
            hub.api(token, "POST", f"/users/{name}")
            hub.api(token, "POST", f"/users/{name}/server")
            while not hub.api(token, "GET", f"/users/{name}")["servers"].get("", {}).get("ready"):
                if time.monotonic() > deadline or stopping.is_set():
                    raise TimeoutError(f"{name}: the server did not start in time")
                time.sleep(1)
            return hub.api(token, "POST", f"/users/{name}/tokens", {"note": "load test"})["token"]

        def run(name: str, own: str, code: list[str]) -> list:
            ran = run_cells(f"{hub.url}/user/{name}/", own, code, timeout=max(10.0, deadline - time.monotonic()))
            if len(ran) != len(code) or not all(r.ok for r in ran):
                raise RuntimeError(f"{name}: cell {len(ran)} of {len(code)}: {ran[-1].error if ran else '?'}")
            return ran

        def notebook(name: str, own: str) -> float:
            started = time.monotonic()
            ran = run(name, own, cells)
            if "Feedback" not in ran[-1].stdout:
                raise RuntimeError(f"{name}: the exercise check said {ran[-1].stdout!r}")
            return time.monotonic() - started

        def each(fn, label: str) -> dict[str, object]:
            """``fn(name, token)`` for every participant at once; the results by name (failures counted)."""
            out: dict[str, object] = {}
            with ThreadPoolExecutor(len(names)) as pool:
                futures = {n: pool.submit(fn, n, tokens[n]) for n in names}
                for n, f in futures.items():
                    try:
                        out[n] = f.result(timeout=max(1.0, deadline - time.monotonic()))
                    except KeyboardInterrupt:
                        stopping.set()  # before the pool waits for its threads
                        raise
                    except Exception as exc:  # noqa: BLE001 - every failure is counted and said, the run goes on
                        stopping.set() if time.monotonic() > deadline else None
                        failures.append(f"{n} {label}: {type(exc).__name__}: {str(exc)[:300]}")
            return out

        def ask(name: str, own: str) -> dict[str, float]:
            return json.loads(run(name, own, [ASK])[0].stdout)

        def site_call(name: str, own: str) -> float:
            got = json.loads(run(name, own, [SITE])[0].stdout)
            if got["skills"] < 5:
                raise RuntimeError(f"{name}: the site listed {got['skills']} skills")
            return float(got["s"])

        def round_(prefix: str) -> dict[str, float]:
            """Notebooks, then a site call, then a model question, each by every participant at once."""
            t1 = time.monotonic()
            took = each(notebook, f"{prefix}notebook")
            report[f"{prefix}all_notebooks_s"] = round(time.monotonic() - t1, 1)
            report[f"{prefix}slowest_notebook_s"] = round(max(took.values()), 1) if took else None
            sites = each(site_call, f"{prefix}site call")
            report[f"{prefix}slowest_site_call_s"] = round(max(sites.values()), 2) if sites else None
            if gguf is not None:
                answers = list(each(ask, f"{prefix}asking the model").values())
                if answers:
                    wall = max(a["t1"] for a in answers) - min(a["t0"] for a in answers)
                    report[f"{prefix}model_tokens_per_s"] = round(sum(a["tokens"] for a in answers) / wall, 1)
                    report[f"{prefix}model_slowest_answer_s"] = round(max(a["t1"] - a["t0"] for a in answers), 1)
            return {k: v for k, v in report.items() if k.startswith(prefix) and isinstance(v, float)}

        t1 = time.monotonic()
        everyone = [*names, *([HOSTILE_NAME] if ns.hostile else [])]
        with ThreadPoolExecutor(len(everyone)) as pool:
            tokens = dict(zip(everyone, pool.map(up, everyone), strict=True))
        report["servers_started_s"] = round(time.monotonic() - t1, 1)
        if gguf is not None:
            while not hub.model_ready() and time.monotonic() < deadline:
                time.sleep(1)
            if not hub.model_ready():
                failures.append("the shared model did not answer in time")
        report["model_slots"] = s.slots
        quiet = round_("")
        if ns.hostile and not failures:
            room_redis = str(s.state / "redis" / "redis.sock")
            attack = f"import subprocess, sys\nprint(subprocess.run([sys.executable, {str(ROOT / 'benchmarks' / 'hostile_participant.py')!r}, " \
                     f"'start', {room_redis!r}], capture_output=True, text=True, check=True).stdout)"
            saw = json.loads(run(HOSTILE_NAME, tokens[HOSTILE_NAME], [attack])[0].stdout)
            report["hostile_saw"] = saw
            if saw.get("room_redis") == "reached":
                failures.append("the hostile participant reached the room's Redis")
            time.sleep(10)  # the attack builds up: Redis full and looping, the model's queue and the sockets held
            attacked = round_("attacked_")
            # the hub's own records under the flood of refused requests: each log under its cap, the hub's trimmed
            logs = [p for p in (hub.log, *sorted((s.state / "logs").glob("*.log"))) if p.exists()]
            largest = max(p.stat().st_size for p in logs)
            report["largest_log_mib"] = round(largest / (1 << 20), 1)
            report["hub_log_trimmed"] = hub.log.with_name(hub.log.name + ".1").exists()
            if largest > 2 * LOG_CAP:
                failures.append(f"under attack a log of the room reached {largest} bytes (cap {LOG_CAP})")
            if not report["hub_log_trimmed"]:
                failures.append("the hub's flooded log was never trimmed")
            for key, value in attacked.items():
                calm = quiet.get(key.removeprefix("attacked_"))
                if calm is None or "tokens_per_s" in key:
                    continue
                # the same bound for the model as for the rest (it had 30 s more): the attacker may hold a core with
                # its own Redis's endless script and one request in the model's turn, a threefold share at worst,
                # never a queue of its requests ahead of another participant's (fair turns, one in flight each)
                allowed = ns.slower * calm + 5
                if value > allowed:
                    failures.append(f"under attack {key} = {value} s, more than {ns.slower} × {calm} s (+ margin)")
    except KeyboardInterrupt:
        failures.append("interrupted")
    finally:
        stopping.set()
        peaks.stop.set()
        peaks.thread.join()
        hub.stop()
        left = list(processes_of(workshop_uids()))
        if left:
            failures.append(f"{len(left)} processes left running after the hub stopped")
        if failures:  # the hub's log (and every server's, in it) kept for reading
            kept = Path(tempfile.gettempdir()) / f"{state.name}.log"
            shutil.copyfile(hub.log, kept)
            failures.append(f"the hub's log: {kept}")
        shutil.rmtree(state, ignore_errors=True)
    mib = 1 << 20
    per = [peaks.peak.get(n, 0) for n in names]
    report.update(hub_rss_mib=round(peaks.peak.get("hub", 0) / mib), proxy_rss_mib=round(peaks.peak.get("proxy", 0) / mib),
                  services_rss_mib=round(peaks.peak.get("services", 0) / mib),
                  participant_rss_mib={n: round(peaks.peak.get(n, 0) / mib) for n in names},
                  participant_rss_mean_mib=round(sum(per) / len(per) / mib), participant_rss_max_mib=round(max(per) / mib),
                  load_avg_after=Path("/proc/loadavg").read_text().split()[0], failures=failures)
    if ns.json:
        print(json.dumps(report, indent=1))
    else:
        for k, v in report.items():
            if k != "participant_rss_mib":
                print(f"{k:26} {v}")
    return 1 if failures else 0


if __name__ == "__main__":
    sys.exit(main())
