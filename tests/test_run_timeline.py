"""The timeline ``python run.py test`` prints at its end (tests/timeline.py): each worker's span and busy time, each
xdist group's span, read from the reports the workers send."""
import os
import subprocess
import sys
from pathlib import Path

from timeline import Span, group_of, summary

TESTS = Path(__file__).resolve().parent


def test_a_group_is_the_suffix_xdist_appends_and_never_a_parameters_own_at():
    assert group_of("tests/test_hub.py::test_x@hub") == "hub"
    assert group_of("tests/test_a.py::test_x[a@b]") is None
    assert group_of("tests/test_a.py::test_x[a@b]@local_model") == "local_model"
    assert group_of("tests/test_a.py::test_x") is None


def test_the_summary_says_each_workers_busy_time_and_each_groups_span():
    spans = [Span("gw0", "t.py::a@hub", 100.0, 160.0), Span("gw0", "t.py::a@hub", 160.0, 161.0),  # call, teardown
             Span("gw0", "t.py::b@hub", 161.0, 200.0), Span("gw1", "t.py::c", 100.5, 110.0),
             Span("gw1", "t.py::d", 150.0, 230.0)]
    lines = summary(spans)
    assert lines[0] == "suite timeline: 130 s from the first test's start to the last test's stop"
    assert "  worker gw0: 2 tests, 100 s in tests, last stop at 100 s" in lines
    assert "  worker gw1: 2 tests, 90 s in tests, last stop at 130 s" in lines
    assert "  group hub on gw0: 2 tests, 0 s to 100 s (100 s)" in lines
    assert lines[-2] == "  last to stop: t.py::d on gw1"
    assert lines[-1] == "  files with the most time in tests: t.py 190 s"
    two = summary([Span("gw0", "a.py::x", 0.0, 2.0), Span("gw1", "b.py::y[1]", 0.0, 3.0),
                   Span("gw1", "b.py::y[2]", 3.0, 4.0)])
    assert two[-1] == "  files with the most time in tests: b.py 4 s, a.py 2 s"
    assert summary([]) == []


def test_the_summary_names_the_files_that_cost_the_most_cpu_with_the_processes_they_waited_for():
    spans = [Span("gw0", "a.py::x", 0.0, 50.0, cpu=2.0), Span("gw1", "b.py::y[1]", 0.0, 3.0, cpu=2.5),
             Span("gw1", "b.py::y[2]", 3.0, 4.0, cpu=1.0)]
    assert summary(spans)[-1] == "  CPU in tests: 6 s; files with the most: b.py 4 s, a.py 2 s"
    # no phase measured (reports from an older worker): no line rather than a line of zeros
    assert not any("CPU" in line for line in summary([Span("gw0", "a.py::x", 0.0, 1.0)]))


def test_a_group_runs_on_one_worker_and_the_run_prints_its_timeline(tmp_path):
    """The hooks as tests/conftest.py installs them, in a small suite of its own on pytest-xdist's two workers: the two
    tests of one xdist_group on one worker (on pytest 9 they went to both: tests/xdist_groups.py), the timeline at
    the end; a run on one process prints none."""
    (tmp_path / "conftest.py").write_text(f"import sys\nsys.path.insert(0, {str(TESTS)!r})\n"
                                          "from timeline import pytest_runtest_logreport, pytest_terminal_summary, pytest_runtest_setup\n"
                                          "from timeline import pytest_runtest_call, pytest_runtest_teardown\n"
                                          "from timeline import pytest_runtest_makereport\n"
                                          "from xdist_groups import pytest_collection_modifyitems\n")
    (tmp_path / "test_small.py").write_text(
        "import pytest\n\n@pytest.mark.xdist_group('slow')\ndef test_a():\n    pass\n\n"
        "@pytest.mark.xdist_group('slow')\ndef test_b():\n    pass\n\ndef test_c():\n    sum(range(10 ** 6))\n")
    # xdist alone, not every plugin the environment installs (langsmith's and hypothesis' took ~1.5 s a process, and
    # the two runs start five)
    env = {**os.environ, "PYTEST_DISABLE_PLUGIN_AUTOLOAD": "1"}
    common = [sys.executable, "-m", "pytest", "-p", "xdist", "-p", "no:cacheprovider", "-q", "-c",
              str(tmp_path / "none.ini"), "--rootdir", str(tmp_path), str(tmp_path)]
    (tmp_path / "none.ini").write_text("[pytest]\n")
    two = subprocess.run([*common, "-n", "2", "--dist", "loadgroup"], capture_output=True, text=True, timeout=120, env=env)
    assert two.returncode == 0, two.stdout + two.stderr
    assert "suite timeline: " in two.stdout
    assert "  CPU in tests: " in two.stdout and "test_small.py" in two.stdout.split("CPU in tests: ")[1], two.stdout
    assert "group slow on gw0: 2 tests, " in two.stdout or "group slow on gw1: 2 tests, " in two.stdout, two.stdout
    one = subprocess.run(common, capture_output=True, text=True, timeout=120, env=env)
    assert one.returncode == 0 and "suite timeline" not in one.stdout, one.stdout
