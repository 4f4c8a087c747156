"""``python run.py site``: a data folder, a demo key shown once, the site served, the market's address printed.

run.py's ``setup`` (the virtual environment) is replaced by this interpreter, which has the site extra;
the rest runs for real: the key is made with ``python -m agentlab site keys create``, the server is the
real one, and with no display the command says it opened nothing.
"""
import os
import queue
import re
import subprocess
import sys
import threading
import time

import httpx
from conftest import ROOT, free_port, stop_group


def start(data, port):
    code = ("import pathlib, sys, run; run.setup = lambda requirements: pathlib.Path(sys.executable); "
            "sys.exit(run.main(['site', '--port', sys.argv[1], '--data', sys.argv[2]]))")
    env = {k: v for k, v in os.environ.items() if k not in ("DISPLAY", "WAYLAND_DISPLAY")}
    env["PYTHONPATH"] = str(ROOT)
    proc = subprocess.Popen([sys.executable, "-c", code, str(port), str(data)], cwd=ROOT, env=env, text=True,
                            stdout=subprocess.PIPE, stderr=subprocess.STDOUT, start_new_session=True)
    lines: queue.Queue = queue.Queue()
    threading.Thread(target=lambda: [lines.put(x) for x in proc.stdout], daemon=True).start()
    return proc, lines


def until_served(proc, lines, timeout=60):
    seen, deadline = [], time.monotonic() + timeout
    while time.monotonic() < deadline:
        try:
            seen.append(lines.get(timeout=1))
        except queue.Empty:
            assert proc.poll() is None, "".join(seen)
            continue
        if seen[-1].startswith("no browser opened"):
            return "".join(seen)
    raise AssertionError("run.py site printed no address: " + "".join(seen))


stop = stop_group


def test_run_py_site_serves_the_market_with_a_demo_key_shown_once(tmp_path):
    data, port = tmp_path / "site", free_port()
    proc, lines = start(data, port)
    try:
        out = until_served(proc, lines)
        key = re.search(r"demo API key \(shown once.*?\): (sk-site-\S+)", out).group(1)
        assert f"the skill market: http://127.0.0.1:{port}/" in out and "no display here" in out
        market = httpx.get(f"http://127.0.0.1:{port}/", timeout=10)
        assert market.status_code == 200 and "Skill market" in market.text and key not in market.text
        done = httpx.post(f"http://127.0.0.1:{port}/api/skills/current_weather/execute", headers={"X-API-Key": key},
                          json={"arguments": {"city": "Beijing"}}, timeout=10)
        assert done.status_code == 200 and done.json()["success"]
    finally:
        stop(proc)
    again, lines = start(data, port)  # the same folder: the key is not shown again, nor another one made
    try:
        out = until_served(again, lines)
        assert "sk-site-" not in out and "the demo key was shown when it was created" in out
        assert "Calls: 1" in httpx.get(f"http://127.0.0.1:{port}/", timeout=10).text  # the log survived the restart
    finally:
        stop(again)
    assert key not in "".join(p.read_text() for p in (data / "logs").iterdir())
