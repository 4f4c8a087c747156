"""The weekly review widget, headless, as a product manager goes through it in either language: the sample, a
conversation read whole, notes on three failures, grouped, one promoted, the week exported."""

import html
import re

import pytest
from conftest import uploaded

from agentlab.evals.suite import load_cases
from agentlab.evals.weekly import ReviewStore
from agentlab.i18n import t
from agentlab.resources import data_file
from agentlab.workbook.weekly_widget import WeeklyReview

NOTES = {"en": ["The refund was created twice after a timeout", "Refund sent with broken JSON arguments",
                "Kept calling get_order in a loop"],
         "zh": ["超时后退款创建了两次", "退款参数是坏的 JSON", "一直在循环查询订单"]}
GROUPS = {"en": ("refund", "loops"), "zh": ("退款", "循环")}


def _ids(w):
    return [v for _, v in w.conversations.options]


@pytest.mark.parametrize("lang", ["en", "zh"])
def test_a_week_reviewed_from_the_sample_to_the_export(tmp_path, lang):
    w = WeeklyReview(folder=tmp_path, lang=lang)
    assert t("weekly.title", lang) in w.header.value and w.open.description == t("weekly.open", lang)
    w.open.click()
    assert t("weekly.loaded", lang, n=4, source="logs_openai_sample.jsonl") in w.message.value
    # three of the four still ended well (the log review counts them a success): said so, not left as "failed" alone
    from agentlab.evals.weekly import ENDED_WELL
    assert t("weekly.ended_well", lang, n=3) in w.message.value
    assert sum(c.status in ENDED_WELL for c in w.items) == 3
    assert w.week.value == "2026-W10" and len(_ids(w)) == 4
    # a conversation read whole: every message, the tool call with its arguments and the tool's answer
    w.conversations.value = _ids(w)[0]
    assert 'get_order({&quot;orderId&quot;: &quot;A1001&quot;})' in w.conversation.value
    assert "unknown field orderId" in w.conversation.value and t("weekly.role.tool", lang) in w.conversation.value
    w.author.value = "Ann" if lang == "en" else "小王"
    for cid, text in zip(_ids(w)[:3] if lang == "en" else [_ids(w)[i] for i in (0, 1, 3)], NOTES[lang], strict=True):
        w.conversations.value = cid
        w.note.value = text
        w.save.click()
        assert "role='status'" in w.message.value, w.message.value
        assert text.split()[0] in w.conversation.value  # the note shows under the conversation
    assert len(ReviewStore(tmp_path).notes("2026-W10")) == 3
    # group: the suggestion shared by two notes, then the third note under the team's own name
    words, own = GROUPS[lang]
    button = next(b for b in w.suggested.children[1:] if b.description.startswith(words))
    assert w.group_suggested.layout.display is None  # a suggestion to file: its button is there
    button.click()
    assert w.group_name.value == words
    w.group_suggested.click()
    assert t("weekly.grouped", lang, n=2, category=words) in w.message.value.replace("&#x27;", "'")
    w.group_note.value = w.group_note.options[-1][1]
    w.group_name.value = own
    w.group.click()
    assert ReviewStore(tmp_path).counts("2026-W10") == {words: 2, own: 1}
    # every note filed, nothing left to suggest: no button that could only answer "click a suggested group first"
    assert not w.suggested.children and w.group_suggested.layout.display == "none"
    assert t("weekly.largest", lang, category=words, n=2, total=4) in w.counts.value
    text_of_plot = str(w.trend.outputs[-1]["data"]["text/plain"])
    assert words in text_of_plot and own in text_of_plot and "2026-W10" in text_of_plot
    # its groups are weeks, and the chart says so in its words (2026-W10 stood there unnamed)
    week = html.escape(t("weekly.col.week", lang))
    assert re.search(rf"<thead><tr><th [^>]*>{week}</th>", str(w.trend.outputs[-1]["data"]["text/html"]))
    # promote the conversation on screen
    w.promote.click()
    cases = load_cases(w.suite)
    assert len(cases) == 1 and cases[0].id in w.message.value
    assert str(tmp_path) not in w.message.value and "download='regression.jsonl'" in w.message.value
    w.export.click()
    csv_file = tmp_path / "exports" / f"weekly-2026-W10-logs_openai_sample-{lang}.csv"
    assert csv_file.exists() and NOTES[lang][0] in csv_file.read_text(encoding="utf-8-sig")
    assert "download=" in w.message.value and t("weekly.exported", lang) in w.message.value.replace("&#x27;", "'")
    assert str(tmp_path) not in w.message.value, "a folder of the machine serving the page, shown to the browser"
    # every sentence the widget said is the catalogue's in this language
    other = "zh" if lang == "en" else "en"
    assert t("weekly.step.note", other) not in str(w.titles[2].value)


def test_refusals_are_said_in_the_pages_language_and_a_colleagues_note_appears(tmp_path):
    w = WeeklyReview(folder=tmp_path, lang="zh")
    w.open.click()
    w.author.value = "小王"
    w.note.value = ""
    w.save.click()
    assert t("weekly.err.empty_note", "zh") in w.message.value and "Traceback" not in w.message.value
    w.note.value = "x" * 100_000
    w.save.click()
    assert "role='alert'" in w.message.value and "100000" in w.message.value
    w.note.value, w.category.value = "好的笔记", "<b>坏</b>"
    w.save.click()
    assert t("weekly.err.bad_category", "zh", limit=60).split("（")[0] in w.message.value
    colleague = ReviewStore(tmp_path)
    colleague.add_note(w.current(), "同事写的笔记", "小李")
    w.group_suggested.click()  # nothing picked: a line says so
    assert t("weekly.no_suggestion", "zh") in w.message.value
    w.refresh_notes.click()
    assert "同事写的笔记" in w.conversation.value
    assert t("weekly.no_suggestion", "zh") not in w.message.value  # the last action's line went with the refresh
    w.lang.value = "en"
    assert t("weekly.title", "en") in w.header.value and w.save.description == t("weekly.save", "en")


def test_an_uploaded_file_that_cannot_be_read_gets_one_sentence(tmp_path):
    w = WeeklyReview(folder=tmp_path, lang="en")
    w.source.value = "upload"
    w.open.click()
    assert t("weekly.no_upload", "en") in w.message.value
    w.upload.value = uploaded("mine.jsonl", b"not json\n")
    assert w.source.value == "upload"
    w.open.click()
    assert "role='alert'" in w.message.value and "mine.jsonl" in w.message.value and "Traceback" not in w.message.value
    w.upload.value = uploaded("ours.jsonl", data_file("logs_openai_sample.jsonl").read_bytes())
    w.open.click()
    assert t("weekly.loaded", "en", n=4, source="ours.jsonl") in w.message.value


@pytest.mark.parametrize("lang", ["en", "zh"])
def test_one_line_that_cannot_be_read_is_read_past_and_said_as_the_log_review_says_it(tmp_path, lang):
    """A file with one line cut short (the shipped bad sample) was dropped whole: week "-", "no failed conversation in
    this week", while the log review beside it read the other lines and found two."""
    w = WeeklyReview(folder=tmp_path, lang=lang)
    w.source.value = "upload"
    w.upload.value = uploaded("bad.jsonl", data_file("logs_bad_sample.jsonl").read_bytes())
    w.open.click()
    assert len(w.items) == 2 and t("weekly.loaded", lang, n=2, source="bad.jsonl") in w.message.value, w.message.value
    assert t("logs.unread", lang, n=1, first="X").split("X")[0][:20] in w.message.value, w.message.value
    assert "role='alert'" not in w.message.value


@pytest.mark.parametrize("lang", ["en", "zh"])
def test_a_suggestion_never_moves_a_note_a_colleague_has_filed(tmp_path, lang):
    """Two people on one week: one files a note under their own category; the other, on a page drawn before that,
    applies a suggestion holding the same note. It kept its category (the suggestion overwrote it before), the page
    says so, and a suggestion is only made from notes no one has filed."""
    words, own = GROUPS[lang]
    ann, bob = WeeklyReview(folder=tmp_path, lang=lang), WeeklyReview(folder=tmp_path, lang=lang)
    ann.open.click()
    ann.author.value = "Ann"
    for cid, text in zip([_ids(ann)[i] for i in (0, 1, 3)] if lang == "zh" else _ids(ann)[:3], NOTES[lang], strict=True):
        ann.conversations.value = cid
        ann.note.value = text
        ann.save.click()
    bob.open.click()  # Bob's page: drawn now, every note unfiled
    bob.author.value = "Bob"
    suggestion = next(b for b in bob.suggested.children[1:] if b.description.startswith(words))
    suggestion.click()
    held = bob.pending.notes
    assert len(held) == 2
    store = ReviewStore(tmp_path)
    store.assign(held[0], own, "Ann")  # Ann files one of them meanwhile
    bob.group_suggested.click()
    assert {n.id: n.category for n in store.notes()}[held[0]] == own, "a colleague's category was overwritten"
    assert {n.id: n.category for n in store.notes()}[held[1]] == words
    shown = bob.message.value.replace("&#x27;", "'")
    assert t("weekly.grouped", lang, n=1, category=words) in shown and f"#{held[0]} → {own}" in shown, shown
    # the next suggestions hold only notes no one has filed
    filed = {n.id for n in store.notes() if n.category}
    assert all(not set(s.notes) & filed for s in bob._suggestions), bob._suggestions


def test_an_uploaded_log_is_opened_when_it_arrives(tmp_path):
    """As the log review: a file that reaches the kernel after Open was pressed is opened when it arrives."""
    w = WeeklyReview(folder=tmp_path, lang="en")
    w.open.click()  # the sample, chosen before the file arrived
    w.upload.value = uploaded("ours.jsonl", data_file("logs_openai_sample.jsonl").read_bytes())
    assert t("weekly.loaded", "en", n=4, source="ours.jsonl") in w.message.value, w.message.value


@pytest.mark.parametrize("lang", ["en", "zh"])
def test_an_export_is_refused_before_a_week_is_open_and_a_large_page_still_downloads(tmp_path, lang, monkeypatch):
    """Export before anything was opened wrote an empty "Weekly review undated ()"; a real week's page (6.7 MB) was
    named but gave no link, while the message said to save it from the links below."""
    import base64
    import io
    import re
    import zipfile

    from agentlab.workbook import weekly_widget
    w = WeeklyReview(folder=tmp_path, lang=lang)
    assert w.export_week() == {} and t("weekly.nothing_to_export", lang) in w.message.value
    assert not (tmp_path / "exports").exists()
    page = tmp_path / "weekly-2026-W10-big-en.html"
    page.write_text("<p>" + "a failed conversation " * 200_000 + "</p>", encoding="utf-8")  # 4.4 MB
    link = weekly_widget._download(page)
    name, url = re.search(r"download='([^']+)' href='([^']+)'", link).groups()
    assert name == page.name + ".zip"
    packed = zipfile.ZipFile(io.BytesIO(base64.b64decode(url.split("base64,", 1)[1])))
    assert packed.read(page.name) == page.read_bytes()


@pytest.mark.parametrize("lang", ["en", "zh"])
def test_the_counts_and_the_sentence_under_them_count_the_same_conversations(lang):
    """The table gave each category's share of the notes (1 · 50%) beside "1 of 4 failed conversations"; a tie at the
    top was settled by the categories' names."""
    from types import SimpleNamespace

    from agentlab.workbook.weekly_widget import counts_html
    review = SimpleNamespace(counts={"argument names": 1, "tool names": 1}, conversations=(1, 2, 3, 4))
    page = counts_html(review, lang)
    assert "25%" in page and "50%" not in page, page
    assert t("weekly.largest_tied", lang, category="argument names" + ("、" if lang == "zh" else ", ") + "tool names",
             n=1, total=4) in page.replace("&#x27;", "'"), page


@pytest.mark.parametrize("lang", ["en", "zh"])
def test_a_second_click_keeps_what_the_first_said(tmp_path, lang):
    """A double click on Save turned the green "saved" red ("The note is empty"); a second Keep said "Added as case"
    though the suite still held one line."""
    w = WeeklyReview(folder=tmp_path, lang=lang)
    w.open.click()
    w.conversations.value = _ids(w)[0]
    w.author.value = "Ann"
    w.note.value = "refunded twice"
    w.save.click()
    saved = w.message.value
    w.save.click()
    assert w.message.value == saved and "role='status'" in saved
    assert len(ReviewStore(tmp_path).notes("2026-W10")) == 1
    w.promote.click()
    w.promote.click()
    assert len(load_cases(w.suite)) == 1
    case = load_cases(w.suite)[0].id
    assert t("weekly.promoted_already", lang, id=case, suite=w.suite.name) in w.message.value.replace("&#x27;", "'")


@pytest.mark.parametrize("lang", ["en", "zh"])
def test_a_reload_takes_the_reader_back_to_their_week_conversation_and_unsaved_note(tmp_path, lang):
    """A reload opened the app as new: the source and the week reset, and a note typed and not saved was lost."""
    w = WeeklyReview(folder=tmp_path, lang=lang)
    w.source.value = "sample:telemetry"
    w.open.click()
    weeks = [v for _, v in w.week.options]
    w.week.value = weeks[-1]
    third = _ids(w)[min(2, len(_ids(w)) - 1)]
    w.conversations.value = third
    w.author.value = "Ann" if lang == "en" else "小王"
    w.note.value = NOTES[lang][0][:12]  # typed, not saved
    again = WeeklyReview(folder=tmp_path, lang=lang)  # the page reloaded: a new app on the same review folder
    assert again.source.value == "sample:telemetry" and again.week.value == weeks[-1]
    assert again.conversations.value == third and again.author.value == w.author.value
    assert again.note.value == NOTES[lang][0][:12] and third in [c.id for c in again.items]
    again.save.click()  # saved: the next reload has no note waiting
    assert WeeklyReview(folder=tmp_path, lang=lang).note.value == ""


def test_an_uploaded_source_is_taken_up_again_when_the_same_file_comes(tmp_path):
    """An upload goes with the page it came from; the same file uploaded again finds its week and note again."""
    from agentlab.resources import data_file as data
    sample = data("logs_openai_sample.jsonl").read_bytes()
    w = WeeklyReview(folder=tmp_path)
    w.upload.value = uploaded("mine.jsonl", sample)
    assert len(_ids(w)) == 4
    w.conversations.value = _ids(w)[1]
    w.note.value = "half a thought"
    again = WeeklyReview(folder=tmp_path)
    assert again.items == [] and again.note.value == ""  # nothing to show it on yet
    again.upload.value = uploaded("mine.jsonl", sample)
    assert again.conversations.value == _ids(w)[1] and again.note.value == "half a thought"


def test_a_place_file_cut_short_or_odd_opens_the_app_as_new(tmp_path):
    from agentlab.workbook.weekly_widget import _place_name
    (tmp_path / _place_name()).write_text('{"source": "sample:tele', encoding="utf-8")
    w = WeeklyReview(folder=tmp_path)
    assert w.items == [] and w.source.value == "sample:openai"
    (tmp_path / _place_name()).write_text('{"source": "run:/nowhere", "week": 5}', encoding="utf-8")
    assert WeeklyReview(folder=tmp_path).items == []


def test_a_colleague_on_the_same_folder_gets_the_notes_but_not_my_name_or_unsaved_note(tmp_path, monkeypatch):
    import getpass
    w = WeeklyReview(folder=tmp_path)
    w.open.click()
    w.author.value, w.note.value = "Ann", "not finished"
    monkeypatch.setattr(getpass, "getuser", lambda: "bo")  # another account opens the shared folder
    theirs = WeeklyReview(folder=tmp_path)
    assert theirs.author.value == "" and theirs.note.value == "" and theirs.items == []


def test_a_different_file_never_takes_up_another_file_s_unsaved_note(tmp_path):
    """The note kept for conversation X of mine.jsonl came back on whatever conversation the next upload opened at (a
    file with one line fewer): saved, it landed in the team's notes on the wrong conversation."""
    sample = data_file("logs_openai_sample.jsonl").read_bytes()
    w = WeeklyReview(folder=tmp_path)
    w.upload.value = uploaded("mine.jsonl", sample)
    w.conversations.value = _ids(w)[1]
    w.note.value = "refunded twice: the retry had no key"
    again = WeeklyReview(folder=tmp_path)
    other = b"\n".join(sample.splitlines()[1:]) + b"\n"  # the same log, a line fewer: other content
    again.upload.value = uploaded("other.jsonl", other)
    assert again.items and again.note.value == ""
    same = WeeklyReview(folder=tmp_path)  # the place was let go with the other file
    same.upload.value = uploaded("mine.jsonl", sample)
    assert same.note.value == ""


def test_a_note_taken_up_survives_the_next_reload_and_a_second_page(tmp_path):
    """Taken up after an upload, the note was lost at the next reload (the upload's own loading wrote the place over
    first); a second page of the same account, on another conversation, wiped it."""
    sample = data_file("logs_openai_sample.jsonl").read_bytes()
    w = WeeklyReview(folder=tmp_path)
    w.upload.value = uploaded("mine.jsonl", sample)
    first, second = _ids(w)[0], _ids(w)[2]
    w.conversations.value = first
    w.note.value = "the guard never fired"
    for _ in range(2):  # reloaded twice, the same file uploaded each time
        again = WeeklyReview(folder=tmp_path)
        again.upload.value = uploaded("mine.jsonl", sample)
        assert again.conversations.value == first and again.note.value == "the guard never fired"
    other_page = WeeklyReview(folder=tmp_path)
    other_page.upload.value = uploaded("mine.jsonl", sample)
    other_page.conversations.value = second  # moves on, its box empty
    other_page.note.value = ""
    back = WeeklyReview(folder=tmp_path)
    back.upload.value = uploaded("mine.jsonl", sample)
    back.conversations.value = first
    assert [v for v in back.store.folder.glob("last_place.*.json")]
    from agentlab.workbook.weekly_widget import WeeklyReview as W2
    assert W2(folder=tmp_path)._read_place()["drafts"].get(first) == "the guard never fired"


def test_a_stored_run_that_no_longer_opens_is_let_go_in_a_sentence(tmp_path):
    import json

    from agentlab.workbook.weekly_widget import _place_name
    run = tmp_path / "runs" / "2026-03-05-guarded"
    run.mkdir(parents=True)
    (run / "meta.json").write_text('{"label": "guarded", "cut', encoding="utf-8")
    for lang in ("en", "zh"):
        (tmp_path / _place_name()).write_text(json.dumps({"source": f"run:{run}", "opened": "yes", "drafts": {}}),
                                              encoding="utf-8")
        w = WeeklyReview(folder=tmp_path, lang=lang)
        if f"run:{run}" not in [v for _, v in w.source.options]:
            continue  # a run the review does not list is not offered, nor taken up
        assert t("weekly.place_lost", lang) in w.message.value and "JSONDecodeError" not in w.message.value
    again = WeeklyReview(folder=tmp_path)  # let go: the next page opens as new, nothing opened
    assert again.message.value == "" and again.items == []


def test_the_place_file_is_this_account_s_alone(tmp_path):
    import stat

    from agentlab.workbook.weekly_widget import _place_name
    w = WeeklyReview(folder=tmp_path)
    w.open.click()
    w.note.value = "private draft"
    assert stat.S_IMODE((tmp_path / _place_name()).stat().st_mode) == 0o600


def test_a_file_that_cannot_be_read_leaves_nothing_of_the_last_source_and_a_waiting_upload_is_said(tmp_path):
    """In a real browser: the telemetry sample open, then an openai log uploaded with the format still on telemetry:
    refused, but the sample's conversations stayed listed under "my upload", where a note would land on them. And after
    a reload nothing said that the same file, uploaded again, brings the unsaved note back."""
    sample = data_file("logs_openai_sample.jsonl").read_bytes()
    w = WeeklyReview(folder=tmp_path, lang="zh")
    w.source.value = "sample:telemetry"
    w.open.click()
    ended = []
    for cid in _ids(w):  # the end of each run said as the list says it (运行结束：done_after_self_correction Done.)
        w.conversations.value = cid
        ended += re.findall(r"运行结束</b>：<span[^>]*>([^<]*)", w.conversation.value)
    assert ended and not [e for e in ended if re.match(r"[a-z_]+\b", e)], ended
    w.upload.value = uploaded("mylog.jsonl", sample)  # read as telemetry: refused
    assert "role='alert'" in w.message.value and _ids(w) == [] and w.items == []
    w.format.value = "openai"
    w.open.click()
    w.conversations.value = _ids(w)[1]
    w.note.value = "半句话"
    again = WeeklyReview(folder=tmp_path, lang="zh")
    assert t("weekly.upload_again", "zh") in again.message.value


def test_the_chart_counts_the_notes_on_the_source_reviewed_as_the_sentence_beside_it_does(tmp_path):
    """Notes filed on the chat sample, then the telemetry sample opened: "No note is in a category yet." above a
    chart of the chat sample's four categories."""
    w = WeeklyReview(folder=tmp_path, lang="en")
    w.open.click()
    w.conversations.value = _ids(w)[0]
    w.author.value, w.category.value, w.note.value = "Ann", "idempotency", "created twice"
    w.save.click()
    assert w.trend.outputs and "idempotency" in str(w.trend.outputs[-1]["data"]["text/plain"])
    w.source.value = "sample:telemetry"
    w.open.click()
    assert t("weekly.no_counts", "en") in w.counts.value
    assert not w.trend.outputs or "idempotency" not in str(w.trend.outputs[-1]["data"]["text/plain"])


def test_a_teams_own_category_reads_as_typed_in_the_chart_as_in_the_table(tmp_path):
    """On the Chinese page a category typed "idempotency" read 幂等 in the chart and its text alone."""
    w = WeeklyReview(folder=tmp_path, lang="zh")
    w.open.click()
    w.conversations.value = _ids(w)[0]
    w.author.value, w.category.value, w.note.value = "小王", "idempotency", "退款创建了两次"
    w.save.click()
    text_of_plot = str(w.trend.outputs[-1]["data"]["text/plain"])
    assert "idempotency" in text_of_plot and "幂等" not in text_of_plot and "idempotency" in w.counts.value


@pytest.mark.parametrize("lang", ["en", "zh"])
def test_the_page_says_where_the_review_folder_is(tmp_path, lang, monkeypatch):
    """The notes, the kept cases and the exports landed in a folder the page never named: a reader had to ask."""
    w = WeeklyReview(folder=tmp_path / "review", lang=lang)  # a folder elsewhere: its name, never its path
    assert "review" in w.header.value and str(tmp_path) not in w.header.value and "regression.jsonl" in w.header.value
    monkeypatch.chdir(tmp_path)  # beside the notebook: its place from there
    w = WeeklyReview(folder=tmp_path / "app" / ".agentlab-review", lang=lang)
    assert "app/.agentlab-review" in w.header.value and str(tmp_path) not in w.header.value


@pytest.mark.parametrize("lang", ["en", "zh"])
def test_filing_with_an_empty_box_says_what_it_did_and_a_category_is_one_whatever_its_end_marks(tmp_path, lang):
    """With the category box empty, "file this note" took the note out of its category and said "1 note filed under
    “-”"; and 参数错误，， and 参数错误 were two rows of the counts, tied in the summary."""
    w = WeeklyReview(folder=tmp_path, lang=lang)
    w.open.click()
    w.author.value = "Ann"
    for cid, category in zip(_ids(w)[:2], ("参数错误，，", "参数错误"), strict=True):
        w.conversations.value = cid
        w.note.value = "wrong arguments"
        w.category.value = category
        w.save.click()
    assert ReviewStore(tmp_path).counts("2026-W10") == {"参数错误": 2}
    w.group_note.value = w.group_note.options[0][1]
    w.group_name.value = ""
    w.group.click()
    said = w.message.value.replace("&#x27;", "'")
    assert "“-”" not in said and "参数错误" in said and ("taken out" in said if lang == "en" else "移出" in said), said
    assert ReviewStore(tmp_path).counts("2026-W10") == {"参数错误": 1}
    w.group.click()  # the same note, in no category now, and still no name: nothing to do, and said so
    assert t("weekly.name_a_category", lang) in w.message.value.replace("&#x27;", "'")


def test_suggestion_buttons_made_after_the_page_is_shown_carry_no_null_tooltip(tmp_path):
    """The app's controls get an empty tooltip when shown (ipywidgets drew an unset one as "null"); the suggestion
    row is made later, at each week shown, and was left out."""
    w = WeeklyReview(folder=tmp_path, lang="en")
    w.open.click()
    w.author.value = "Ann"
    for cid, text in zip(_ids(w)[:2], NOTES["en"][:2], strict=True):
        w.conversations.value = cid
        w.note.value = text
        w.save.click()
    assert w.suggested.children and all(c.tooltip is not None for c in w.suggested.children)


def test_switching_language_after_a_file_that_could_not_be_read_redraws_every_section(tmp_path):
    """Chinese page, a file that cannot be read, then English: "这一周没有失败的对话。" and "还没有笔记被归类。" stayed
    under English headings (only a week with conversations was drawn again)."""
    import re
    w = WeeklyReview(folder=tmp_path, lang="zh")
    w.source.value = "upload"
    w.upload.value = uploaded("bad.jsonl", b"not json\n")
    w.open.click()
    w.lang.value = "en"
    shown = " ".join(x.value for x in (w.conversation, w.counts) if isinstance(getattr(x, "value", None), str))
    assert not re.search("[\u4e00-\u9fff]", shown), shown
