"""Shared by the skill site's tests: a clock to move by hand, a broken and a slow skill written as folders, and
the real server (``python -m agentlab site`` under uvicorn) started in a subprocess."""
import json
import os
import signal
import subprocess
import sys
import textwrap
import time
from pathlib import Path

from conftest import ROOT, free_port


class Clock:
    """Wall-clock seconds that move only when told."""

    def __init__(self, now: float = 1_800_000_000.0):
        self.now = now

    def __call__(self) -> float:
        return self.now


def write_skill(folder: Path, name: str, body: str, *, output_schema=None, rate_class="query", timeout=5.0) -> Path:
    """A skill folder: skill.json and a handler.py whose function body is ``body``."""
    d = folder / name
    d.mkdir(parents=True, exist_ok=True)
    meta = {"skill_name": name, "display_name": name, "description": f"Use for the {name} test.",
            "input_schema": {"type": "object", "properties": {"n": {"type": "integer"}}},
            "output_schema": output_schema or {"type": "object"}, "rate_class": rate_class, "timeout": timeout}
    (d / "skill.json").write_text(json.dumps(meta), encoding="utf-8")
    (d / "handler.py").write_text(textwrap.dedent(f'''\
        """A test skill."""
        import time
        from pathlib import Path
        from agentlab.site.skills import read_meta, register_skill

        __all__ = ["{name}"]


        @register_skill(read_meta(Path(__file__).with_name("skill.json")))
        def {name}(arguments, ctx):
        ''') + textwrap.indent(textwrap.dedent(body), "    "), encoding="utf-8")
    return d


def test_skills(folder: Path) -> Path:
    """A broken skill (its output breaks its schema), a scalar, a secret-leaking failure, a slow write."""
    write_skill(folder, "broken_output", 'return {"wrong": 1}',
                output_schema={"type": "object", "properties": {"answer": {"type": "string"}}, "required": ["answer"]})
    write_skill(folder, "scalar_answer", 'return 42')
    write_skill(folder, "leaky_failure", 'raise RuntimeError("db login failed: password=hunter2 at 10.0.0.7")')
    write_skill(folder, "slow_write", 'time.sleep(arguments.get("n", 3)); return {"done": True}', rate_class="write",
                timeout=1.0)
    return folder


test_skills.__test__ = False  # a helper, not a test


class SiteServer:
    """``python -m agentlab site --data DATA *args --port P`` on a free loopback port, in its own process group
    (so that stopping it stops whatever it started). Output goes to ``log`` when given, else nowhere.
    ``unset`` names environment variables the server must not inherit (say, a store chosen by the caller's shell).

    Start several, then ``wait_ready`` each, so that they boot side by side; or use it as a context manager,
    which waits on entry and stops on exit."""

    def __init__(self, data: Path, *args: str, log: Path | None = None, ready: str = "/api/skills",
                 unset: tuple[str, ...] = ()):
        self.port = free_port()
        self.base = f"http://127.0.0.1:{self.port}"
        self.ready, self.log = ready, log
        env = {**os.environ, "PYTHONPATH": str(ROOT)}
        for name in unset:
            env.pop(name, None)
        self._out = open(log, "w") if log else None  # closed in stop(), once the process has ended
        self.proc = subprocess.Popen([sys.executable, "-m", "agentlab", "site", "--data", str(data), *args,
                                      "--port", str(self.port)], cwd=ROOT, env=env,
                                     stdout=self._out or subprocess.DEVNULL,
                                     stderr=subprocess.STDOUT if self._out else subprocess.DEVNULL,
                                     start_new_session=True)

    def wait_ready(self, timeout: float = 60) -> None:
        """Poll ``ready`` until it answers 200; the server's own output in the error if it exits or never does."""
        import httpx
        deadline = time.monotonic() + timeout
        while True:
            try:
                if httpx.get(self.base + self.ready, timeout=2).status_code == 200:
                    return
            except httpx.TransportError:
                pass
            if self.proc.poll() is not None or time.monotonic() > deadline:
                said = self.log.read_text() if self.log and self.log.exists() else "(its output was not kept)"
                self.stop()
                raise RuntimeError(f"the site at {self.base} did not start: {said}")
            time.sleep(0.2)

    def stop(self) -> None:
        """SIGTERM to the group, SIGKILL if it has not ended 10 s later (a test may have killed it already)."""
        if self.proc.poll() is None:
            os.killpg(self.proc.pid, signal.SIGTERM)
            try:
                self.proc.wait(10)
            except subprocess.TimeoutExpired:
                os.killpg(self.proc.pid, signal.SIGKILL)
                self.proc.wait(10)
        if self._out:
            self._out.close()

    def __enter__(self) -> "SiteServer":
        self.wait_ready()
        return self

    def __exit__(self, *exc) -> None:
        self.stop()
