"""The watchdog of ``python run.py test`` (tests/hang_watch.py): a test past its limit, where pytest-timeout's alarm
cannot stop it, ends its worker with every thread's stack shown, and the rest of the suite runs on."""
import os
import subprocess
import sys
from pathlib import Path
from types import SimpleNamespace

import pytest
from hang_watch import GRACE, limit_of

TESTS = Path(__file__).resolve().parent


def _item(marker: float | None = None, ini: str = "300", *, keyword: float | None = None) -> SimpleNamespace:
    """A test item as pytest-timeout reads one: its ``timeout`` marker (an argument or a keyword), the run's limit."""
    mark = None if marker is None and keyword is None else \
        SimpleNamespace(args=(marker,) if marker is not None else (), kwargs={"timeout": keyword} if keyword else {})
    return SimpleNamespace(get_closest_marker=lambda name=None: mark,
                           config=SimpleNamespace(getini=lambda name: ini, _env_timeout=float(ini) or None,
                                                  _env_timeout_method="signal", _env_timeout_func_only=False,
                                                  _env_timeout_disable_debugger_detection=False))


def test_the_limit_is_pytest_timeouts_own_plus_a_grace(monkeypatch):
    monkeypatch.delenv("AGENTLAB_TEST_WATCHDOG", raising=False)
    assert limit_of(_item()) == 300 + GRACE
    assert limit_of(_item(marker=60)) == 60 + GRACE  # a test's own marker, as pytest-timeout reads it
    assert limit_of(_item(keyword=900)) == 900 + GRACE  # timeout(timeout=900): not cut at the run's 300
    assert limit_of(_item(ini="0")) is None  # no limit set: none kept
    monkeypatch.setenv("AGENTLAB_TEST_WATCHDOG", "2.5")
    assert limit_of(_item(marker=60)) == 2.5


@pytest.mark.timeout(200)
def test_a_test_whose_alarm_was_lost_ends_its_worker_with_its_stack_and_the_rest_runs(tmp_path):
    """A small suite on two xdist workers, with the hooks as tests/conftest.py installs them: the first test clears
    the SIGALRM timer (as code of the workbook's that juggles it could) and sleeps for ten minutes. Without the
    watchdog the run sleeps with it (the subprocess' own limit fails this test); with it, the run ends, names the
    test, shows where it stood, and the other test passes."""
    (tmp_path / "conftest.py").write_text(f"import sys\nsys.path.insert(0, {str(TESTS)!r})\n"
                                          "from hang_watch import pytest_configure, pytest_runtest_protocol\n"
                                          "from hang_watch import pytest_exception_interact, pytest_unconfigure\n")
    (tmp_path / "test_hang.py").write_text(
        "import signal\nimport time\n\nimport pytest\n\n\ndef test_stuck():\n    signal.setitimer(signal.ITIMER_REAL, 0)\n"
        "    time.sleep(600)\n\n\ndef test_after():\n    pass\n\n\n@pytest.fixture\ndef slow_to_close():\n    yield\n"
        "    time.sleep(600)\n\n\ndef test_fails_then_its_teardown_hangs(slow_to_close):\n    assert False\n")
    (tmp_path / "none.ini").write_text("[pytest]\ntimeout = 60\n")
    env = {**os.environ, "PYTEST_DISABLE_PLUGIN_AUTOLOAD": "1", "AGENTLAB_TEST_WATCHDOG": "3"}
    run = subprocess.run([sys.executable, "-m", "pytest", "-p", "xdist", "-p", "pytest_timeout", "-p", "no:cacheprovider",
                          "-q", "-c", str(tmp_path / "none.ini"), "--rootdir", str(tmp_path), str(tmp_path),
                          "-n", "2"], capture_output=True, text=True, timeout=150, env=env)
    said = run.stdout + run.stderr
    assert run.returncode == 1, said
    assert "crashed while running" in said and "test_hang.py::test_stuck" in said, said
    assert 'test_hang.py", line 9 in test_stuck' in said, said  # the stack, at the sleep
    # a failed phase cancelled every timer (pytest's faulthandler plugin, pytest-timeout): the teardown is watched again
    assert "test_hang.py::test_fails_then_its_teardown_hangs" in said and 'test_hang.py", line 19 in slow_to_close' in said, said
    assert "1 passed" in run.stdout, said  # the run's own output where it always goes
    assert "Timeout (0:00:03)!" in run.stderr, said  # the stacks, on its stderr
