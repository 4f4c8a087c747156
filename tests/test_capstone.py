"""The capstone (docs/capstone.md): one command grades a desk by the linter, the probe, the twelve checks and its
own suite; the shipped broken desk fails with every breakage named, the trainer's solution passes everything."""
from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from agentlab.workbook import exercises
from agentlab.workbook.capstone import DeskError, copy_desk, grade_desk, load_desk, score, send_progress

ROOT = Path(__file__).resolve().parent.parent
BROKEN = ROOT / "data" / "capstone" / "broken_desk.py"
FIXED = ROOT / "data" / "trainer" / "solutions" / "capstone_desk.py"


def _cli(*args: str, cwd: Path = ROOT) -> subprocess.CompletedProcess:
    env = {**os.environ, "PYTHONPATH": str(ROOT)}
    for var in ("AGENTLAB_PROGRESS_URL", "JUPYTERHUB_API_TOKEN", "AGENTLAB_DEBUG"):
        env.pop(var, None)
    return subprocess.run([sys.executable, "-m", "agentlab", *args], capture_output=True, text=True, env=env,
                          cwd=cwd, timeout=240)


@pytest.fixture(scope="module")
def broken_en() -> subprocess.CompletedProcess:
    return _cli("capstone")


#: each deliberate breakage of the broken desk, and the words of the report that name it
BREAKAGES = {
    "vague schemas (linter)": ["AL002 get_order", "AL006 create_refund.amount"],
    "vague schemas (check 4)": ["FAIL  check 4"],
    "untyped field: a wrong type reaches the backend (probe, check 9)": ["get_order, wrong_type: nothing caught it",
                                                                          "FAIL  check 9"],
    "a date frozen into the prompt": ["FAIL  check 1", "dated 2024-01-01"],
    "no context budget": ["FAIL  check 3", "(budget -)"],
    "an unbounded loop budget": ["FAIL  check 7", "after 50 model turns"],
    "a write with no idempotency key, a risky refund with no confirmation": [
        "FAIL  check 10", "took effect once: NO", "confirmations pending: 0"],
    "retries without backoff or jitter": ["FAIL  check 11", "waited 1.00-1.00 s"],
    "a missing order said as a dropped connection, resent (a 4xx retried)": [
        "capstone-missing-order: status done", "told UNAVAILABLE"],
    "a required field left out of the schema": ["capstone-amount-required"],
    "an error message a model cannot read": ["boundary-amount-above", "TOOL_ERROR"],
    "no business rule: a shipped order refunded": ["capstone-shipped-readable"],
}


def test_the_broken_desk_fails_and_every_breakage_is_named(broken_en: subprocess.CompletedProcess) -> None:
    out = broken_en.stdout
    assert broken_en.returncode == 1, broken_en.stderr
    assert "Traceback" not in out + broken_en.stderr
    for breakage, words in BREAKAGES.items():
        for w in words:
            assert w in out, f"{breakage}: {w!r} not in the report"
    assert "passed 3 of 14. (1 does not apply to this desk.)" in out
    assert "11 left to fix." in out
    assert out.count("to fix: ") == 11  # every failure says what to fix


def test_the_fixed_desk_passes_everything_by_the_same_command() -> None:
    run = _cli("capstone", "--desk", str(FIXED))
    assert run.returncode == 0, run.stdout + run.stderr
    assert "FAIL" not in run.stdout
    assert "passed 14 of 14." in run.stdout and "Everything passes" in run.stdout


def test_the_report_speaks_chinese() -> None:
    broken, fixed = _cli("capstone", "--lang", "zh"), _cli("capstone", "--desk", str(FIXED), "--lang", "zh")
    assert (broken.returncode, fixed.returncode) == (1, 0)
    assert "14 项中通过 3 项。（1 项不适用于这个助手。）" in broken.stdout and "还剩 11 项要修。" in broken.stdout
    assert "怎么修：" in broken.stdout and "to fix" not in broken.stdout
    assert "第 7 项检查：每一轮最多 3 到 5 次工具往返" in broken.stdout
    assert "14 项中通过 14 项。" in fixed.stdout and "全部通过" in fixed.stdout


def test_copy_gives_an_editable_copy_that_grades_like_the_broken_desk(tmp_path: Path) -> None:
    run = _cli("capstone", "--copy", str(tmp_path / "mine"))
    assert run.returncode == 0, run.stderr
    mine = tmp_path / "mine" / "desk.py"
    assert str(mine) in run.stdout and mine.read_text(encoding="utf-8") == BROKEN.read_text(encoding="utf-8")
    assert os.access(mine, os.W_OK)
    again = _cli("capstone", "--copy", str(tmp_path / "mine"))  # never overwritten
    assert again.returncode == 2 and "already exists" in again.stderr and "Traceback" not in again.stderr
    # the participant fixes one thing (the step budget): that check passes, the rest stays
    text = mine.read_text(encoding="utf-8").replace("GuardConfig(step_budget=None,", "GuardConfig(step_budget=5,")
    mine.write_text(text, encoding="utf-8")
    items = grade_desk(load_desk(str(mine)))
    seven = next(i for i in items if i.kind == "check" and i.number == 7)
    assert seven.passed and score(items) == (4, 14)


def test_the_checklist_runs_on_a_desk_file() -> None:
    fixed = _cli("checklist", "--desk", str(FIXED))
    assert fixed.returncode == 0 and "11 of 11 checks pass" in fixed.stdout
    broken = _cli("checklist", "--desk", "capstone", "--lang", "zh", "--json")
    assert broken.returncode == 1
    statuses = {r["number"]: r["status"] for r in json.loads(broken.stdout)}
    assert statuses[7] == "fail" and statuses[5] == "n/a"
    shipped = _cli("checklist", "--desk", "aftersales")
    assert shipped.returncode == 0 and "11 of 11 checks pass" in shipped.stdout


@pytest.mark.parametrize(("text", "en", "zh"), [
    ("def desk(:\n", "could not be loaded: SyntaxError", "加载失败：SyntaxError"),
    ("x = 1\n", "has no desk() function", "没有 desk() 函数"),
    ("def desk():\n    return {'name': 'mine'}\n", "returned a dict, not an agentlab.scenarios.Scenario", "返回的是 dict"),
    ("import nowhere_to_be_found\n", "ModuleNotFoundError", "ModuleNotFoundError"),
    ("def desk():\n    raise ValueError('no orders file')\n", "ValueError: no orders file (line 2)", "ValueError：no orders file（第 2 行）"),
    # it had exited 0 with nothing printed, which the docs read as "everything passes"
    ("import sys\nsys.exit(0)\n", "called sys.exit()", "调用了 sys.exit()"),
    ("def desk():\n    import sys\n    sys.exit(0)\n", "called sys.exit()", "调用了 sys.exit()"),
])
def test_a_malformed_desk_is_one_structured_line_in_either_language(tmp_path: Path, text: str, en: str, zh: str) -> None:
    bad = tmp_path / "desk.py"
    bad.write_text(text, encoding="utf-8")
    for lang, words, prefix in (("en", en, "error: "), ("zh", zh, "错误：")):
        run = _cli("capstone", "--desk", str(bad), "--lang", lang)
        assert run.returncode == 2 and run.stdout == ""
        assert run.stderr.startswith(prefix) and words in run.stderr and "Traceback" not in run.stderr
        assert len(run.stderr.strip().splitlines()) == 1
        assert run.stderr.count("line 1") + run.stderr.count("第 1 行") <= 1, run.stderr  # said once ("(line 1) (line 1)")


def test_a_missing_desk_or_a_folder_is_said(tmp_path: Path) -> None:
    with pytest.raises(DeskError) as missing:
        load_desk(str(tmp_path / "nowhere.py"))
    assert "no desk at" in missing.value.localized("en") and "aftersales" in missing.value.localized("en")
    assert "处没有助手" in missing.value.localized("zh")
    run = _cli("checklist", "--desk", str(tmp_path), "--lang", "zh")
    assert run.returncode == 2 and "是一个文件夹" in run.stderr


def test_the_score_goes_to_the_trainers_view_as_the_capstone(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    sent: list[tuple[str, str, bytes]] = []
    monkeypatch.setenv("AGENTLAB_PROGRESS_URL", "http://hub.invalid/progress")
    monkeypatch.setenv("JUPYTERHUB_API_TOKEN", "token")
    items = grade_desk(load_desk(str(FIXED)))
    thread = send_progress(items, send=lambda url, token, body: sent.append((url, token, body)))
    assert thread is not None
    thread.join(5)
    body = json.loads(sent[0][2])
    assert body["notebook"] == "capstone" and body["exercise"] == exercises.EXTRA["capstone"]
    assert body["state"] == "right" and body["score"] == 1.0


def test_nothing_is_sent_outside_a_hub(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv("AGENTLAB_PROGRESS_URL", raising=False)
    assert send_progress(grade_desk(load_desk(str(FIXED)))[:1], send=lambda *a: pytest.fail("sent")) is None


def test_the_solution_is_not_among_what_a_participant_is_given(tmp_path: Path) -> None:
    # the hub copies notebooks only; --copy gives the broken desk, never the trainer's solution
    target = copy_desk(tmp_path / "c")
    assert "FIX " not in target.read_text(encoding="utf-8")
    assert "FIX " in FIXED.read_text(encoding="utf-8")


def test_a_desk_whose_tool_calls_sys_exit_is_said_not_passed(tmp_path: Path) -> None:
    """A tool of the participant's desk that called sys.exit(0) ended the capstone and the checklist while they ran
    it: nothing printed, exit 0, which docs/capstone.md reads as "everything passes"."""
    _cli("capstone", "--copy", str(tmp_path))
    desk = tmp_path / "desk.py"
    text = desk.read_text(encoding="utf-8")
    # in a tool the checks call, and where the desk's tools are made (its setup)
    for head, indent in (("    def get_order(order_id: Any) -> dict:\n", "        "), ("def make_registry(", "    ")):
        at = text.index(head)
        body = text.index("\n", text.index(":\n", at)) + 1 if head.startswith("def ") else at + len(head)
        desk.write_text(text[:body] + indent + "import sys; sys.exit(0)\n" + text[body:], encoding="utf-8")
        for command in ("capstone", "checklist"):
            run = _cli(command, "--desk", str(desk), "--lang", "zh")
            assert run.returncode == 2 and "调用了 sys.exit()" in run.stderr, (head, command, run.returncode, run.stderr)
