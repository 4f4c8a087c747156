"""``python run.py site``: a data folder, a demo key shown once, the site served, the market's address printed.

run.py's ``setup`` (the virtual environment) is replaced by this interpreter, which has the site extra;
the rest runs for real: the key is made with ``python -m agentlab site keys create``, the server is the
real one, and with no display the command says it opened nothing.
"""
import os
import queue
import re
import shlex
import socket
import subprocess
import sys
import threading
import time

import httpx
import pytest
from conftest import ROOT, free_port, stop_group

import run


def start(data, port, *more):
    code = ("import pathlib, sys, run; run.setup = lambda requirements: pathlib.Path(sys.executable); "
            "sys.exit(run.main(['site', '--port', sys.argv[1], '--data', sys.argv[2], *sys.argv[3:]]))")
    env = {k: v for k, v in os.environ.items() if k not in ("DISPLAY", "WAYLAND_DISPLAY")}
    env["PYTHONPATH"] = str(ROOT)
    proc = subprocess.Popen([sys.executable, "-c", code, str(port), str(data), *more], cwd=ROOT, env=env, text=True,
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
        if seen[-1].startswith(("no browser opened", "没有打开浏览器")):
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
        assert f"in Chinese: http://127.0.0.1:{port}/?lang=zh" in out, out
        market = httpx.get(f"http://127.0.0.1:{port}/", timeout=10)
        assert market.status_code == 200 and "Skill market" in market.text and key not in market.text
        done = httpx.post(f"http://127.0.0.1:{port}/api/skills/current_weather/execute", headers={"X-API-Key": key},
                          json={"arguments": {"city": "Beijing"}}, timeout=10)
        assert done.status_code == 200 and done.json()["success"]
    finally:
        stop(proc)
    again, lines = start(data, port, "--lang", "zh")  # the same folder: the key is not shown again, nor another made
    try:
        out = until_served(again, lines)
        assert "sk-site-" not in out and "演示密钥在创建时已显示过" in out and "no browser" not in out
        assert f"技能市场：http://127.0.0.1:{port}/?lang=zh" in out
        # the other language's page, not the same Chinese one a second time
        market_line = next(line for line in out.splitlines() if line.startswith("技能市场"))
        assert f"英文页面：http://127.0.0.1:{port}/?lang=en" in out and market_line.count(f"{port}/?lang=zh") == 1, out
        assert "Skill market" in httpx.get(f"http://127.0.0.1:{port}/?lang=en", timeout=10).text
        # every line in Chinese: the site's own ("serving 20 skills" stayed English) and its links ("?lang=zh" on each)
        assert "serving" not in out and f"{port}/logs?lang=zh" in out and "skills/current_weather?lang=zh" in out, out
        assert "Calls: 1" in httpx.get(f"http://127.0.0.1:{port}/", timeout=10).text  # the log survived the restart
    finally:
        stop(again)
    assert key not in "".join(p.read_text() for p in (data / "logs").iterdir())
    # the command it prints for a new key runs as pasted (it was printed without the Python that runs it)
    pasted = re.search(r"请运行：(.+)", out).group(1).strip().replace("NAME", "trainer")
    made = subprocess.run(shlex.split(pasted), cwd=tmp_path, capture_output=True, text=True, timeout=60,
                          env={**os.environ, "PYTHONPATH": str(ROOT)})
    assert made.returncode == 0 and made.stdout.startswith("sk-site-"), (pasted, made.stderr[-500:])


@pytest.mark.parametrize("lang, words", [("en", "is taken by another program"), ("zh", "已被其他程序占用")])
def test_a_port_asked_for_that_is_taken_is_said_before_anything_starts(tmp_path, monkeypatch, capsys, lang, words):
    """``run.py site --port N`` on a port another program holds: one line saying so, in the reader's language, exit 2,
    no key made and no server started (it printed that it served, then uvicorn's "address already in use")."""
    monkeypatch.setattr(run, "setup", lambda requirements: pytest.fail("set up for a port that was taken"))
    with socket.socket() as held:
        held.bind(("127.0.0.1", 0))
        held.listen()
        port = held.getsockname()[1]
        monkeypatch.setattr(subprocess, "Popen", lambda *a, **k: pytest.fail("started a server"))
        code = run.main(["site", "--port", str(port), "--data", str(tmp_path / "site"), "--lang", lang])
    said = capsys.readouterr()
    assert code == 2 and words in said.err and str(port) in said.err and not said.out, said
    assert not (tmp_path / "site").exists()  # no key made, no folder written


def test_no_browser_asked_for_is_said_as_asked_for(tmp_path):
    """With --no-browser it said "no display here" all the same."""
    proc, lines = start(tmp_path / "site", free_port(), "--no-browser")
    try:
        out = until_served(proc, lines)
        assert "--no-browser" in out.splitlines()[-1] and "no display" not in out.splitlines()[-1], out
    finally:
        stop(proc)


@pytest.mark.parametrize("lang", ["zh", "en"])
def test_a_data_folder_that_cannot_be_made_is_said_in_the_readers_language_as_a_data_folder(tmp_path, lang):
    """``run.py site --lang zh --data X`` where X cannot be made: the package's command that makes the demo key ran
    without ``--lang`` (an English line under a Chinese command) and blamed the skills, with Python's own words."""
    from agentlab.i18n import os_reason, said, t
    blocker = tmp_path / "a-file"
    blocker.write_text("not a folder")
    data = blocker / "site"
    proc, lines = start(data, free_port(), "--lang", lang, "--no-browser")
    try:
        code = proc.wait(60)
    finally:
        if proc.poll() is None:
            stop(proc)
    seen = []
    while True:  # what its reader thread still has to hand over once the process ended
        try:
            seen.append(lines.get(timeout=1))
        except queue.Empty:
            break
    out = "".join(seen)
    reason = said(os_reason(NotADirectoryError(20, "Not a directory")), lang)
    assert code == 2 and t("cli.out_unwritable", lang, path=str(data), reason=reason, option="--data") in out, out
    assert "skills" not in out and "技能" not in out and ("Error" not in out if lang == "zh" else True), out


@pytest.mark.parametrize("lang, stopped, not_said", [("zh", "技能站已停止（Ctrl-C）", "没有做完"),
                                                    ("en", "the site stopped (Ctrl-C)", "did not finish")])
def test_ctrl_c_stops_the_site_and_says_so_as_a_stop(tmp_path, lang, stopped, not_said):
    """Ctrl-C is how a site is stopped (the README says so): it was said as a command that 'did not finish', to be
    run again. And the page's address is printed in the reader's language (?lang=zh), as run.py prints it."""
    import signal
    port = free_port()
    proc = subprocess.Popen([sys.executable, "-m", "agentlab", "site", "--data", str(tmp_path / "data"), "--port",
                             str(port), "--lang", lang], cwd=ROOT, text=True, stdout=subprocess.PIPE,
                            stderr=subprocess.PIPE, start_new_session=True)
    try:
        deadline = time.monotonic() + 60
        while True:
            try:
                if httpx.get(f"http://127.0.0.1:{port}/", timeout=2).status_code == 200:
                    break
            except httpx.HTTPError:
                pass
            assert proc.poll() is None and time.monotonic() < deadline, proc.stderr.read() if proc.poll() else ""
            time.sleep(0.2)
        os.killpg(proc.pid, signal.SIGINT)  # what Ctrl-C in its terminal does: the whole foreground group
        _, err = proc.communicate(timeout=30)
    finally:
        if proc.poll() is None:
            stop(proc)
    assert proc.returncode == 0 and stopped in err and not_said not in err and "Traceback" not in err, err
    assert (f"http://127.0.0.1:{port}/?lang=zh" in err) == (lang == "zh"), err
