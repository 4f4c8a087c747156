"""``python -m agentlab site check``: the offline validation set (docs/site.md#site-check, agentlab/site/check.py).

The shipped skills pass with zero boundary failures; a skill whose boundary case fails makes the
command exit 1 and say which case and why; a skill without a kind of case fails too.
"""
import json
import os
import re
import subprocess
import sys

import pytest
from conftest import ROOT
from site_helpers import write_skill

from agentlab.site.check import KINDS, CheckCase, _judge, load_check_cases, run_checks


def site_check(*args):
    env = {**os.environ, "PYTHONPATH": str(ROOT)}
    return subprocess.run([sys.executable, "-m", "agentlab", "site", *args, "check"], cwd=ROOT, env=env,
                          capture_output=True, text=True, timeout=120)


def cases(folder, *lines):
    (folder / "cases.jsonl").write_text("".join(json.dumps(x) + "\n" for x in lines), encoding="utf-8")


def counter(root):
    """A skill that takes an integer ``n`` and echoes it: its schema forgot a minimum."""
    return write_skill(root, "echo_n", 'return {"n": arguments.get("n", 0)}')


def failed(report):
    """What a failing report's assertion shows: each case that failed with its problems (the report's own repr is
    cut short by pytest, and a failure seen once in CI could not be told from it)."""
    return [(o.case.skill, o.case.name, o.problems) for o in report.outcomes if not o.passed]


def test_every_shipped_skill_has_all_three_kinds_and_passes():
    report = run_checks(load_check_cases())
    assert report.ok, failed(report)
    assert report.boundary_failures == 0 and not report.missing and not report.unknown
    skills = {o.case.skill for o in report.outcomes}
    assert {"current_weather", "send_notification", "get_order", "create_refund", "book_expense_record"} <= skills
    assert len(skills) >= 19 and all(report.counts(s, k)[1] >= 1 for s in skills for k in KINDS)
    # every skill has a generated timeout case, under its own timeout, answered 504 with a fallback hint
    timed = {o.case.skill: o for o in report.outcomes if o.case.source == "generated"}
    assert set(timed) == skills and all(o.passed for o in timed.values())
    assert timed["current_weather"].case.name == "generated: no answer within its 2 s"
    assert timed["send_notification"].case.expect == {"status": 504, "error": "TIMEOUT", "fallback_hint": True}


def test_a_timeout_reply_without_the_skills_own_seconds_or_a_hint_fails_the_generated_case(tmp_path, monkeypatch):
    import agentlab.site.execute as execute
    folder = counter(tmp_path / "skills")
    cases(folder, {"kind": "normal", "name": "one", "arguments": {"n": 1}, "expect": {"status": 200}})
    real = execute.make_error

    def wrong_seconds(code, **kw):  # a site that reports some other timeout than the skill's own
        return real(code, **{**kw, "seconds": 99}) if code == "TIMEOUT" else real(code, **kw)

    monkeypatch.setattr(execute, "make_error", wrong_seconds)
    monkeypatch.setattr(execute, "site_hint", lambda error, lang, kind=None: None)
    report = run_checks(load_check_cases(tmp_path / "skills"), skills_dirs=[tmp_path / "skills"], lang="zh")
    failed = next(o for o in report.outcomes if o.case.skill == "echo_n" and o.case.source == "generated")
    assert failed.case.name == "自动生成：在规定的 5 秒内没有响应"
    assert failed.problems == ("fallback_hint absent, expected present", "the timeout reply does not name the skill's own 5 s")


def test_a_nested_result_is_flagged_not_refused(tmp_path):
    from agentlab.site.flat import NestedResultWarning
    nested = {"type": "object", "properties": {"order": {"type": "object"}, "n": {"type": "integer"},
                                               "lines": {"type": "array", "items": {"type": "object"}}}}
    with pytest.warns(NestedResultWarning, match=r"nested output fields \['order', 'lines'\]"):
        folder = write_skill(tmp_path / "skills", "deep_answer", 'return {"order": {"id": "A1"}, "n": 1, "lines": []}',
                             output_schema=nested)
        cases(folder, {"kind": "normal", "name": "one", "arguments": {"n": 1}, "expect": {"status": 200}},
              {"kind": "boundary", "name": "a string", "arguments": {"n": "1"}, "expect": {"status": 422}},
              {"kind": "abnormal", "name": "a float", "arguments": {"n": 1.5}, "expect": {"status": 422}})
        report = run_checks(load_check_cases(tmp_path / "skills"), skills_dirs=[tmp_path / "skills"], timeouts=False)
    assert report.ok, failed(report)
    assert report.nested == {"deep_answer": ["order", "lines"]}
    assert "warning: deep_answer declares nested output fields (order, lines)" in "\n".join(report.lines())
    assert "警告：deep_answer 的输出声明了嵌套字段（order、lines）" in "\n".join(report.lines("zh"))


def test_the_command_passes_on_the_shipped_skills_in_both_languages():
    from concurrent.futures import ThreadPoolExecutor
    with ThreadPoolExecutor(2) as both:  # side by side: each mostly waits for the skills' own timeouts
        en, zh = both.map(lambda args: site_check(*args), [(), ("--lang", "zh")])
    assert en.returncode == 0, en.stdout + en.stderr
    assert "boundary failures: 0 (must be 0). PASS" in en.stdout and "current_weather" in en.stdout
    assert zh.returncode == 0 and "边界用例失败：0 个（必须为 0）。通过" in zh.stdout


def test_a_broken_boundary_case_exits_1_and_says_which(tmp_path):
    folder = counter(tmp_path / "skills")
    cases(folder,
          {"kind": "normal", "name": "one", "arguments": {"n": 1}, "expect": {"status": 200, "result": {"n": 1}}},
          {"kind": "boundary", "name": "a string is refused", "arguments": {"n": "1"}, "expect": {"status": 422, "fields": ["n"]}},
          {"kind": "boundary", "name": "a negative number is refused", "arguments": {"n": -1},
           "expect": {"status": 422, "fields": ["n"]}},
          {"kind": "abnormal", "name": "a float", "arguments": {"n": 1.5}, "expect": {"status": 422}})
    done = site_check("--skills", str(tmp_path / "skills"))
    assert done.returncode == 1, done.stdout + done.stderr
    assert "FAILED echo_n [boundary] 'a negative number is refused' (echo_n/cases.jsonl:3): status 200, expected 422" \
        in done.stdout
    assert "boundary failures: 1 (must be 0). FAIL" in done.stdout
    assert re.search(r"^echo_n +1/1 +1/2 +2/2  FAILED$", done.stdout, re.M)  # abnormal: with its timeout case
    assert re.search(r"^current_weather +2/2 +6/6 +4/4$", done.stdout, re.M)  # the shipped ones still pass
    # in Chinese, what went wrong is said in Chinese (it read "status 200, expected 422" inside a Chinese line)
    zh = site_check("--skills", str(tmp_path / "skills"), "--lang", "zh").stdout
    assert "“a negative number is refused”（echo_n/cases.jsonl:3）：状态码 200，应为 422" in zh, zh
    assert not re.search(r"expected|status \d|no problem", zh), zh


def test_a_skill_without_a_kind_of_case_fails(tmp_path):
    folder = counter(tmp_path / "skills")
    cases(folder, {"kind": "normal", "name": "one", "arguments": {"n": 1}, "expect": {"status": 200}})
    report = run_checks(load_check_cases(tmp_path / "skills"), skills_dirs=[tmp_path / "skills"], timeouts=False)
    assert not report.ok and report.boundary_failures == 0 and report.missing == {"echo_n": ["boundary", "abnormal"]}
    done = site_check("--skills", str(tmp_path / "skills"))
    assert done.returncode == 1 and "echo_n has no boundary, abnormal case" in done.stdout


def test_a_malformed_case_is_a_usage_error(tmp_path):
    folder = counter(tmp_path / "skills")
    (folder / "cases.jsonl").write_text('{"kind": "edge", "arguments": {}, "expect": {}}\n', encoding="utf-8")
    done = site_check("--skills", str(tmp_path / "skills"))
    assert done.returncode == 2 and "echo_n/cases.jsonl:1" in done.stderr and "Traceback" not in done.stderr


def test_every_shipped_case_has_a_chinese_name():
    """notebook 15's check named the failing cases in English in Chinese ("a subject of 121 characters"): each case
    of a shipped skill and of the desks names itself in Chinese too, and a report in Chinese uses that name."""
    shipped = load_check_cases()
    assert len(shipped) >= 100
    assert all(re.search(r"[\u4e00-\u9fff]", c.name_in("zh")) and c.name_in("en") == c.name for c in shipped), \
        [c.name for c in shipped if not re.search(r"[\u4e00-\u9fff]", c.name_in("zh"))]


def test_a_case_whose_other_language_is_not_a_name_is_refused_with_its_line(tmp_path):
    folder = counter(tmp_path / "skills")
    (folder / "cases.jsonl").write_text('{"kind": "normal", "name": "one", "arguments": {"n": 1}, "expect": {}, '
                                        '"i18n": {"zh": "一"}}\n', encoding="utf-8")
    with pytest.raises(ValueError, match=r"cases\.jsonl:1"):
        load_check_cases(tmp_path / "skills", desks=False)


def test_the_judge_reads_every_expectation():
    case = CheckCase("s", "boundary", "x", {}, {"status": 422, "error": "INVALID_ARGS", "fields": ["a"], "fallback_hint": True})
    body = {"success": False, "error": {"code": "INVALID_ARGS", "problems": [{"field": "b"}]}, "fallback_hint": None}
    assert _judge(case, 422, body) == ("no problem about 'a' (got ['b'])", "fallback_hint absent, expected present")
    ok = CheckCase("s", "normal", "x", {}, {"result": {"city": "Beijing"}})
    assert _judge(ok, 200, {"success": True, "result": {"city": "Beijing", "t": 1}}) == ()
    assert _judge(ok, 200, {"success": True, "result": {"city": "Paris"}}) == ("result.city is 'Paris', expected 'Beijing'",)
    refused = CheckCase("s", "abnormal", "x", {}, {"error": "NOT_FOUND"})
    assert _judge(refused, 200, {"success": False, "error": {"code": "NOT_FOUND"}}) == ()


def test_files_are_written_for_one_case_only(tmp_path):
    down = {"mode": "down"}
    report = run_checks([
        CheckCase("current_weather", "abnormal", "down", {"city": "Beijing"}, {"status": 503}, {"weather_source.json": down}),
        CheckCase("current_weather", "normal", "up again", {"city": "Beijing"}, {"status": 200})], timeouts=False)
    assert all(o.passed for o in report.outcomes), [o.problems for o in report.outcomes]


def test_the_checks_sites_leave_no_log_line_waiting_when_their_folder_goes(tmp_path, monkeypatch):
    """run_checks removes its sites' folder at the end: their log lines are written first (one left waiting was
    written by the flusher into the folder while it was being removed, and `site check` could fail with
    "Directory not empty")."""
    from agentlab.site import logs as site_logs
    queued = []
    real = site_logs._Flusher.queue
    monkeypatch.setattr(site_logs._Flusher, "queue", lambda self, logs: queued.append(logs) or real(self, logs))
    folder = counter(tmp_path / "skills")
    cases(folder, {"kind": "normal", "name": "one", "arguments": {"n": 1}, "expect": {"status": 200}})
    run_checks(load_check_cases(tmp_path / "skills"), skills_dirs=[tmp_path / "skills"], timeouts=False)
    assert queued and all(not logs._waiting for logs in queued)
