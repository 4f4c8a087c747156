"""agentlab.scratch: the folders notebooks and the app work in go when the kernel does."""
import os
import re
import stat
import subprocess
import sys
from pathlib import Path

from conftest import ROOT, uploaded

from agentlab.scratch import forget, scratch_folder

MADE = """
import sys
from agentlab.scratch import scratch_folder
for prefix in ("skill-site-", "agentlab-logs-"):
    folder = scratch_folder(prefix)
    (folder / "inside").mkdir()
    (folder / "inside" / "calls.jsonl").write_text("{}\\n")
    print(folder)
"""


def test_a_scratch_folder_is_the_users_alone_and_gone_when_the_process_ends(tmp_path):
    out = subprocess.run([sys.executable, "-c", MADE], capture_output=True, text=True, check=True, cwd=ROOT,
                         env={"PATH": "", "TMPDIR": str(tmp_path), "PYTHONPATH": str(ROOT)}).stdout.split()
    assert len(out) == 2 and all(Path(p).parent == tmp_path for p in out), out
    assert not list(tmp_path.iterdir()), "left behind when the process ended"
    folder = scratch_folder()
    if os.name == "posix":  # on a shared machine, nobody else reads a reader's upload
        assert stat.S_IMODE(folder.stat().st_mode) == 0o700
    forget(folder)


def test_forget_removes_a_scratch_folder_at_once_and_nothing_else(tmp_path):
    folder = scratch_folder()
    (folder / "a.jsonl").write_text("{}\n")
    forget(folder / "a.jsonl")  # a file inside: its whole folder
    assert not folder.exists()
    mine = tmp_path / "mine.jsonl"
    mine.write_text("{}\n")
    forget(mine)
    forget(None)
    assert mine.exists()


def test_a_readers_upload_goes_when_another_replaces_it_and_a_sample_never_does():
    from agentlab.resources import data_file
    from agentlab.workbook.log_widget import LOG_SAMPLES, LogReview
    from agentlab.workbook.weekly_widget import WeeklyReview
    logs = data_file(LOG_SAMPLES["openai"]).read_bytes()
    app = LogReview()
    sample = app.use_sample()
    app.upload.value = uploaded("../../week1.jsonl", logs)  # a name is never a path
    first = app.path
    assert first is not None and first.name == "week1.jsonl" and first.read_bytes() == logs and sample.exists()
    app.upload.value = uploaded("week2.jsonl", logs)
    assert app.path.exists() and not first.exists() and not first.parent.exists()
    app.run.click()
    assert app.report is not None and app.report["totals"]["runs"] == 5
    theirs_first = app.path
    app.use_sample()  # the reader turned to the sample: their upload is not kept
    assert not theirs_first.exists() and app.path.exists()
    app.upload.value = uploaded("..", logs)  # no name at all: still kept, under a name of the site's
    assert app.path.name == "upload" and app.path.read_bytes() == logs
    mine = scratch_folder("notebook-")  # a notebook's own folder, whose file the reader then reviews
    (mine / "ours.jsonl").write_bytes(logs)
    theirs = LogReview(path=mine / "ours.jsonl")
    theirs.upload.value = uploaded("week3.jsonl", logs)
    theirs.use_sample()
    assert (mine / "ours.jsonl").exists(), "a replaced path kept_upload never wrote was removed"
    forget(mine)
    weekly = WeeklyReview()
    weekly.upload.value = uploaded("mine.jsonl", logs)
    mine = weekly.uploaded
    weekly.upload.value = uploaded("ours.jsonl", logs)
    assert mine is not None and not mine.exists() and weekly.uploaded.exists()
    for path in (app.path, weekly.uploaded):
        forget(path)
        assert not path.exists()


def test_no_notebook_and_no_module_makes_a_folder_that_outlives_it():
    # the class of the folders notebooks 11, 15, 16 and 19 and the app's uploads left in /tmp at every run
    sources = [*ROOT.glob("notebooks/**/*.py"), *ROOT.glob("agentlab/**/*.py"), *ROOT.glob("app/*.py")]
    leaky = re.compile(r"\bmkdtemp\(|NamedTemporaryFile\([^)]*delete\s*=\s*False")
    found = [str(p.relative_to(ROOT)) for p in sources if leaky.search(p.read_text(encoding="utf-8"))]
    assert not found, f"use agentlab.scratch.scratch_folder: {found}"


def test_a_refused_upload_is_named_by_its_own_name_never_the_servers_folder():
    """A log file that is not JSON, uploaded to the log review or the weekly review: the page said
    "/tmp/agentlab-logs-tphuddg2/notjson.txt:1: not valid JSON", the machine's own folder shown to the reader."""
    from agentlab.workbook.log_widget import LogReview
    from agentlab.workbook.weekly_widget import WeeklyReview
    app = LogReview()
    app.upload.value = uploaded("notjson.txt", b"this is not json\n")
    app.run.click()
    assert app.report is None and "notjson.txt:1" in app.view.value, app.view.value
    assert str(app.path.parent) not in app.view.value and "/tmp" not in app.view.value
    week = WeeklyReview(folder=scratch_folder("weekly-"))
    week.upload.value = uploaded("week.jsonl", b'{"role": "user", "content": "hi\n')
    week.open.click()
    shown = week.message.value
    assert "week.jsonl" in shown and "/tmp" not in shown and "agentlab-weekly-" not in shown, shown
