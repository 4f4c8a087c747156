"""What every BFCL figure is made from, checked first (agentlab/evals/bfcl_check.py).

From outside, the leaderboard's checker printed confident figures, "reproduced: yes" among them, from a recording with
its wrong answers taken out, another model's recording under this one's name, conversations outside the sample, an
answer file edited to the model's own answers, and shipped results edited by hand; a line cut short was a traceback
with the machine's paths. Each case here is one of those, refused in one line in either language.
"""
import json
import shutil
import sys

import pytest
from conftest import ROOT, skip_or_fail

from agentlab.evals import bfcl, bfcl_official, bfcl_results
from agentlab.evals import bfcl_prompting as bp
from agentlab.evals.bfcl_check import Untrusted, check_data, check_recording, model_of, read_recording


def _write(path, lines):
    path.write_bytes(b"".join((x if isinstance(x, bytes) else x.encode()) + b"\n" for x in lines))
    return path


def _said(exc: Untrusted) -> tuple[str, str]:
    both = exc.localized("en"), exc.localized("zh")
    for text in both:
        assert "/tmp" not in text and "Traceback" not in text and str(ROOT) not in text, text
    return both


PROMPT = json.dumps({"id": "parallel_9", "model": "qwen2.5-coder-0.5b", "turn": 1, "text": "[f(a=1)]"})


@pytest.mark.parametrize("line, key", [
    ('{"id": "parallel_9", "turn": 1, "text": "[f(a=1)]"', "bfcl.check.not_json"),  # cut short
    (b'{"id": "parallel_9", "turn": 1, "text": "\xff\xfe"}', "bfcl.check.not_utf8"),
    ('{"id": "parallel_9", "turn": 1}', "bfcl.check.missing_field"),  # was KeyError: 'text', with a file path
    ('{"id": ["a"], "turn": 1, "text": "x"}', "bfcl.check.wrong_type"),  # was TypeError: unhashable type: 'list'
    ('[1, 2]', "bfcl.check.not_object"),
    ('{"id": "parallel_9", "turn": 1, "text": 5}', "bfcl.check.wrong_type"),  # was graded silently, one fewer right
    ('{"id": "parallel_9", "turn": true, "text": "x"}', "bfcl.check.wrong_type"),
    ('{"id": "parallel_9", "turn": 2, "text": "x"}', "bfcl.check.turns"),
])
def test_a_line_that_is_not_the_recorders_is_refused_in_one_sentence(tmp_path, line, key):
    path = _write(tmp_path / "bfcl-prompt-0.5b.jsonl", [PROMPT.replace("parallel_9", "parallel_1"), line])
    with pytest.raises(Untrusted) as caught:
        bp.recorded_texts(path)
    assert caught.value.key == key
    en, zh = _said(caught.value)
    assert "bfcl-prompt-0.5b.jsonl" in en and "line 2" in en and "第 2 行" in zh


@pytest.mark.parametrize("kind, line", [
    ("single", '{"label": "simple_python_1/loop", "model": "m"}'),  # was KeyError: 'reply'
    ("single", '{"label": "simple_python_1/guarded", "model": "m", "reply": {}}'),  # a mode the recorder never writes
    ("multi", '{"label": "multi_turn_base_1", "model": "m", "reply": {}}'),
    ("multi", '{"label": "multi_turn_base_1/raw", "model": "m", "reply": "text"}'),
])
def test_a_conversation_line_that_is_not_the_recorders_is_refused(tmp_path, kind, line):
    with pytest.raises(Untrusted) as caught:
        read_recording(_write(tmp_path / "bfcl.jsonl", [line]), kind)
    _said(caught.value)


def test_a_recording_added_to_itself_is_refused_and_said_how_to_mend_it(tmp_path):
    """Doubled, the prompt-mode replay said "record it again (--resume)", and --resume failed the same way; the
    template-mode replay counted nothing twice and said nothing. Both are refused, saying to record from the start."""
    once = [PROMPT, PROMPT.replace('"turn": 1', '"turn": 2'), PROMPT.replace("parallel_9", "parallel_1")]
    with pytest.raises(Untrusted) as caught:
        read_recording(_write(tmp_path / "p.jsonl", once + once), "prompt")
    assert caught.value.key == "bfcl.check.twice" and "without --resume" in caught.value.localized("en")
    line = json.dumps({"label": "simple_python_1/loop", "model": "m", "reply": {"content": "x"}})
    other = line.replace("simple_python_1", "simple_python_2")
    with pytest.raises(Untrusted, match="a second time"):
        read_recording(_write(tmp_path / "s.jsonl", [line, other, line]), "single")
    assert set(read_recording(_write(tmp_path / "s.jsonl", [line, line, other]), "single")) == {
        "simple_python_1/loop", "simple_python_2/loop"}  # a conversation's turns, together: one conversation


def _prompt_lines(ids, model="qwen2.5-coder-0.5b"):
    return [json.dumps({"id": i, "model": model, "turn": 1, "text": "[]"}) for i in ids]


ORDER = [f"q{i}" for i in range(10)]


def test_a_recording_is_held_to_its_sample_its_model_and_its_order(tmp_path):
    path = tmp_path / "bfcl-prompt-0.5b.jsonl"
    # cut short: its end is not recorded yet, and said so
    got = check_recording(_write(path, _prompt_lines(ORDER[:6])), "prompt", size="0.5b", order=ORDER)
    assert (got.recorded, got.asked, got.left) == (6, 10, tuple(ORDER[6:]))
    # questions taken out before others it holds: its wrong answers, say
    with pytest.raises(Untrusted) as caught:
        check_recording(_write(path, _prompt_lines(ORDER[:2] + ORDER[4:7])), "prompt", size="0.5b", order=ORDER)
    assert caught.value.key == "bfcl.check.gaps" and caught.value.fields["missing"] == 2
    _said(caught.value)
    # an answer to a question outside the sample (another --n, or added by hand)
    with pytest.raises(Untrusted, match="not among the 10 questions"):
        check_recording(_write(path, _prompt_lines([*ORDER, "nope_1"])), "prompt", size="0.5b", order=ORDER)
    # another model's recording under this one's name, or lines with no model at all
    with pytest.raises(Untrusted, match=r"qwen2\.5-coder-1\.5b"):
        check_recording(_write(path, _prompt_lines(ORDER, "qwen2.5-coder-1.5b")), "prompt", size="0.5b", order=ORDER)
    with pytest.raises(Untrusted, match="written by None"):
        check_recording(_write(path, [x.replace('"model": "qwen2.5-coder-0.5b", ', "") for x in _prompt_lines(ORDER)]),
                        "prompt", size="0.5b", order=ORDER)
    with pytest.raises(Untrusted) as caught:
        check_recording(tmp_path / "bfcl-prompt-7b.jsonl", "prompt", size="7b", order=ORDER)
    assert caught.value.key == "bfcl.check.no_recording"


def test_the_constrained_mode_is_written_by_its_own_name(tmp_path):
    line = {"label": "q0/loop", "model": model_of("1.5b"), "reply": {"content": "x"}}
    lines = [json.dumps(line), json.dumps({**line, "label": "q0/constrained", "model": model_of("1.5b") + " (constrained)"})]
    assert check_recording(_write(tmp_path / "b.jsonl", lines), "single", size="1.5b", order=["q0"]).recorded == 1
    lines[1] = json.dumps({**line, "label": "q0/constrained"})  # the plain model's name on a constrained line
    with pytest.raises(Untrusted, match="constrained"):
        check_recording(_write(tmp_path / "b.jsonl", lines), "single", size="1.5b", order=["q0"])


# --- the shipped recordings, the questions and the shipped results --------------------------------------------
def _order(n=bfcl.PER_CATEGORY):
    return [q.id for q in bfcl.recording_order(bfcl.questions(n))]


@pytest.mark.parametrize("size", ["0.5b", "1.5b"])
def test_the_shipped_recordings_are_whole_prefixes_of_their_samples(datasets, size):
    for kind, path in (("prompt", bp.prompt_cassette(size)), ("single", bfcl.bfcl_cassette(size))):
        got = check_recording(path, kind, size=size, order=_order())
        assert got.recorded == got.asked - len(got.left) and got.recorded >= 270, (path.name, got.recorded)


def test_a_recording_with_its_wrong_answers_taken_out_is_refused(datasets, tmp_path):
    """Leaving out 45 multiple-choice questions the 0.5B model got wrong printed 61.8% and "reproduced: yes" beside
    the leaderboard's 68.0 (34.0% and "no" on the whole sample)."""
    path = shutil.copy(bp.prompt_cassette("0.5b"), tmp_path / "bfcl-prompt-0.5b.jsonl")
    lines = path.read_text(encoding="utf-8").splitlines()
    dropped = {f"multiple_{i}" for i in range(0, 200, 3)}
    _write(path, [x for x in lines if json.loads(x)["id"] not in dropped])
    with pytest.raises(Untrusted) as caught:
        check_recording(path, "prompt", size="0.5b", order=_order())
    assert caught.value.key == "bfcl.check.gaps" and "--resume" in caught.value.localized("en")
    # the 1.5B model's recording under the 0.5B model's name
    with pytest.raises(Untrusted, match=r"qwen2\.5-coder-1\.5b"):
        check_recording(shutil.copy(bp.prompt_cassette("1.5b"), path), "prompt", size="0.5b", order=_order())
    # a recording made for a larger sample, graded against a smaller one
    with pytest.raises(Untrusted, match="not among the 12 questions"):
        check_recording(bp.prompt_cassette("0.5b"), "prompt", size="0.5b", order=_order(3))


def test_an_answer_file_edited_is_refused_before_any_question_is_read(datasets, tmp_path):
    """The accepted answers of the questions the model got wrong, set to the model's own calls, printed 76.0% and
    "reproduced: yes"; the release's hashes (data/bfcl/release.json) now tell the file apart."""
    root = tmp_path / "bfcl"
    shutil.copytree(bfcl.bfcl_dir() / "data", root / "data")
    shutil.copytree(bfcl.bfcl_dir() / "possible_answer", root / "possible_answer")
    assert len(bfcl.load("multiple", root)) > 100  # the release's files, copied: read as they are
    answers = root / "possible_answer" / "BFCL_v4_multiple.json"
    lines = answers.read_text(encoding="utf-8").splitlines()
    first = json.loads(lines[0])
    first["ground_truth"] = [{"anything": {}}]
    answers.write_text("\n".join([json.dumps(first), *lines[1:]]) + "\n", encoding="utf-8")
    with pytest.raises(Untrusted) as caught:
        bfcl.load("multiple", root)
    en, _ = _said(caught.value)
    assert caught.value.key == "bfcl.check.data_changed" and "possible_answer/BFCL_v4_multiple.json" in en
    with pytest.raises(Untrusted, match="not one of the release"):
        check_data(answers, "possible_answer/BFCL_v4_made_up.json")


def _edited(tmp_path, name, edit):
    doc = json.loads((ROOT / "data" / "bfcl" / name).read_text(encoding="utf-8"))
    edit(doc)
    path = tmp_path / name
    path.write_text(json.dumps(doc), encoding="utf-8")
    return path


def test_shipped_results_edited_by_hand_are_refused():
    """A graded.json figure set to 0.99 (its mean left as it was) and a prompting.json row set to "reproduced" beside
    an interval that excludes the leaderboard's figure were both shown as the workbook's."""
    import tempfile
    from pathlib import Path
    with tempfile.TemporaryDirectory() as tmp:
        tmp_path = Path(tmp)
        assert bfcl_results.read_shipped(ROOT / "data" / "bfcl" / "graded.json").sizes  # as shipped: read

        def figure(doc):
            doc["sizes"]["0.5b"]["accuracy"]["single"]["simple_python"] = 0.99
        with pytest.raises(Untrusted) as caught:
            bfcl_results.read_shipped(_edited(tmp_path, "graded.json", figure))
        assert caught.value.key == "bfcl.check.shipped_figure"
        _said(caught.value)

        def recording(doc):
            doc["inputs"]["0.5b"]["sha256"] = "0" * 64
        with pytest.raises(Untrusted, match="were not graded from"):
            bfcl_results.read_shipped(_edited(tmp_path, "graded.json", recording))
        assert bp.read_prompting(ROOT / "data" / "bfcl" / "prompting.json").rows  # as shipped: read

        def verdict(doc):
            row = next(r for r in doc["rows"]["1.5b"] if r["category"] == "irrelevance")
            row["reproduced"] = True
        with pytest.raises(Untrusted) as caught:
            bp.read_prompting(_edited(tmp_path, "prompting.json", verdict))
        assert caught.value.key == "bfcl.check.shipped_row" and caught.value.fields["field"] == "reproduced"
        (tmp_path / "prompting.json").write_text("{", encoding="utf-8")
        with pytest.raises(Untrusted, match="cannot be read"):
            bp.read_prompting(tmp_path / "prompting.json")


# --- the benchmarks' command lines ----------------------------------------------------------------------------
@pytest.fixture
def benches():
    sys.path.insert(0, str(ROOT / "benchmarks"))
    try:
        import bench_bfcl_local
        import bench_bfcl_multi_turn
        import bench_bfcl_prompting
    finally:
        sys.path.remove(str(ROOT / "benchmarks"))
    return {"prompting": bench_bfcl_prompting, "local": bench_bfcl_local, "multi": bench_bfcl_multi_turn}


def _run(module, argv, capsys):
    from agentlab.evals.bfcl_check import command
    code = command(module.build, module.body, argv)
    out, err = capsys.readouterr()
    assert "Traceback" not in out + err
    return code, out, err


@pytest.mark.parametrize("lang", ["en", "zh"])
def test_the_benchmarks_say_a_bad_recording_in_a_line_in_the_readers_language(datasets, benches, tmp_path, capsys,
                                                                                monkeypatch, lang):
    if not bfcl_official.evaluator_installed():
        skip_or_fail(f"the bfcl extra is not installed ({bfcl_official.INSTALL})")
    cut = tmp_path / "bfcl-prompt-0.5b.jsonl"
    lines = bp.prompt_cassette("0.5b").read_text(encoding="utf-8").splitlines()
    _write(cut, [*lines[:5], lines[5][:40], *lines[6:]])
    monkeypatch.setattr(bp, "prompt_cassette", lambda size: cut)
    code, _, err = _run(benches["prompting"], ["--replay", "--sizes", "0.5b", "--lang", lang], capsys)
    said = Untrusted("bfcl.check.not_json", file=cut.name, line=6).localized(lang)
    assert code == 2 and err.strip() == said and str(tmp_path) not in err
    doubled = tmp_path / "bfcl-0.5b.jsonl"
    text = bfcl.bfcl_cassette("0.5b").read_text(encoding="utf-8")
    doubled.write_text(text + text, encoding="utf-8")
    monkeypatch.setattr(bfcl, "bfcl_cassette", lambda size: doubled)
    code, _, err = _run(benches["local"], ["--replay", "--sizes", "0.5b", "--lang", lang], capsys)
    assert code == 2 and err.count("\n") == 1 and ("a second time" in err if lang == "en" else "第二次" in err), err


def test_the_benchmarks_refuse_bad_options_in_a_line(benches, capsys, monkeypatch):
    """--n -5 was a traceback through the standard library; --sizes 7b, --n 0 and an unknown category printed an
    empty table and exit 0; --lang zh was refused in English by all three."""
    for name, argv in (("prompting", ["--replay", "--n", "-5"]), ("local", ["--replay", "--n", "0"]),
                       ("local", ["--replay", "--categories", "bogus"]), ("prompting", ["--replay", "--sizes", "7b"]),
                       ("multi", ["--replay", "--n", "x", "--lang", "zh"])):
        code, out, err = _run(benches[name], argv, capsys)
        assert code == 2 and len(err.strip().splitlines()) == 1 and not out, (argv, err)
    from agentlab.i18n import t
    assert t("cli.not_whole", "zh", value="x") in err  # the last one asked in Chinese, and said so
    monkeypatch.setenv("AGENTLAB_DATASETS", "/nonexistent")
    code, out, err = _run(benches["local"], ["--replay", "--lang", "zh"], capsys)
    assert code == 2 and err.strip() == Untrusted("bfcl.check.no_data").localized("zh")


def test_the_mean_beside_the_published_overall_figure_covers_every_category(benches):
    row = {"0.5b": {"single": {"simple_python": 0.91, "mean": 0.91}}}
    table = benches["local"].table(row, {"0.5b": {"simple_python": 100}})
    assert "91% | 27.1" not in table and "n/a (1 of 4 categories)" in table
    assert "（4 个类别中只有 1 个）" in benches["local"].table(row, {"0.5b": {"simple_python": 100}}, "zh")


def test_a_file_of_junk_lines_is_refused_at_its_first_not_read_whole(tmp_path, monkeypatch):
    """1.5 million lines of answers to no question (368 MB) were read whole (1.2 GB) before the table was printed
    as if they were not there. The first such line is refused, and the lines after it are never read."""
    from agentlab.evals import bfcl_check
    path = _write(tmp_path / "bfcl-prompt-0.5b.jsonl", [*_prompt_lines(ORDER[:3]), *_prompt_lines(["nope_0"])])
    with path.open("a", encoding="utf-8") as f:
        f.write("this line is never read\n")
    read = []
    real = bfcl_check._lines

    def lines(p):
        for n, entry in real(p):
            read.append(n)
            yield n, entry
    monkeypatch.setattr(bfcl_check, "_lines", lines)
    with pytest.raises(Untrusted, match="nope_0"):
        check_recording(path, "prompt", size="0.5b", order=ORDER)
    assert read == [1, 2, 3, 4]


# --- a second outside pass: figures made false by deleting less, and what a learner meets ---------------------
def _rewrite(src, tmp_path, keep):
    """``src`` copied under tmp_path with only the lines ``keep(entry)`` accepts."""
    path = tmp_path / src.name
    lines = src.read_text(encoding="utf-8").splitlines()
    path.write_text("".join(x + "\n" for x in lines if keep(json.loads(x))), encoding="utf-8")
    return path


def test_one_modes_conversations_or_a_re_asks_last_reply_taken_out_are_refused(datasets, tmp_path, monkeypatch):
    """Deleting the wrong constrained answers (their /constrained lines, the /loop lines kept) printed 100% constrained
    with exit 0; deleting the last turn of re-asked questions in the middle dropped them from the figures unsaid."""
    wrong = {f"simple_python_{i}/constrained" for i in range(0, 400, 7)}
    path = _rewrite(bfcl.bfcl_cassette("0.5b"), tmp_path, lambda e: e["label"] not in wrong)
    monkeypatch.setattr(bfcl, "bfcl_cassette", lambda size: path)
    with pytest.raises(Untrusted) as caught:
        bfcl.graded_attempts("0.5b")
    assert caught.value.key == "bfcl.check.modes"
    _said(caught.value)
    # prompt mode: a question re-asked in the middle of the recording, its last reply deleted
    texts = bp.recorded_texts(bp.prompt_cassette("1.5b"))
    reasked = [q for q, replies in texts.items() if len(replies) > 1][:3]
    cut = tmp_path / "bfcl-prompt-1.5b.jsonl"
    lines = bp.prompt_cassette("1.5b").read_text(encoding="utf-8").splitlines()
    cut.write_text("".join(x + "\n" for x in lines if not (json.loads(x)["id"] in reasked and
                                                           json.loads(x)["turn"] == len(texts[json.loads(x)["id"]]))),
                   encoding="utf-8")
    monkeypatch.setattr(bp, "prompt_cassette", lambda size: cut)
    with pytest.raises(Untrusted) as caught:
        bp.graded_recording("1.5b")
    assert caught.value.key == "bfcl.check.cut_short" and caught.value.fields["missing"] == 3


def test_a_recording_of_some_categories_is_held_to_those_and_graded(datasets, tmp_path, monkeypatch):
    """An honest `--categories multiple --limit 10` recording was refused as having the other categories' questions
    "taken out"."""
    order = [q.id for q in bfcl.recording_order(bfcl.questions()) if q.category == "multiple"][:10]
    path = _rewrite(bfcl.bfcl_cassette("0.5b"), tmp_path, lambda e: e["label"].rpartition("/")[0] in order)
    monkeypatch.setattr(bfcl, "bfcl_cassette", lambda size: path)
    attempts = bfcl.graded_attempts("0.5b", categories=["multiple"])
    assert {a.id for a in attempts} == set(order)


def test_a_missing_answer_file_and_lines_with_broken_insides_are_refused(datasets, tmp_path):
    root = tmp_path / "bfcl"
    shutil.copytree(bfcl.bfcl_dir() / "data", root / "data")
    with pytest.raises(Untrusted) as caught:  # every multiple answer graded wrong (0%), exit 0, before
        bfcl.load("multiple", root)
    assert caught.value.key == "bfcl.check.data_missing"
    for line in ('{"label": "q/loop", "model": "m", "error": {}}',  # was KeyError: 'code'
                 '{"label": "q/loop", "model": "m", "reply": {"tool_calls": [{"name": "x"}]}}',  # KeyError: 'arguments'
                 '{"label": "q/loop", "model": "m", "reply": {"content": 5}}',
                 '{"label": "q/loop", "model": "m", "reply": {"usage": [1]}}',
                 '{"label": "q/loop", "model": "m", "reply": {"content": NaN}}'):
        with pytest.raises(Untrusted):
            read_recording(_write(tmp_path / "s.jsonl", [line]), "single")
    bom = json.dumps({"label": "q/loop", "model": "m", "reply": {"content": "x"}})
    (tmp_path / "b.jsonl").write_bytes(b"\xef\xbb\xbf" + bom.encode() + b"\n")  # an editor's "UTF-8 with BOM"
    assert list(read_recording(tmp_path / "b.jsonl", "single")) == ["q/loop"]


def test_a_resume_drops_a_line_cut_mid_write_and_keeps_a_reply_holding_u2028(tmp_path):
    from agentlab.evals.bfcl_check import mend_for_resume
    whole = json.dumps({"id": "a", "turn": 1, "text": "x\u2028y"}, ensure_ascii=False)  # one line of JSON
    path = tmp_path / "r.jsonl"
    path.write_text(whole + "\n" + '{"id": "b", "tu', encoding="utf-8")
    mend_for_resume(path)
    assert path.read_text(encoding="utf-8") == whole + "\n"
    mend_for_resume(path, lambda e: e["id"] != "a")
    assert path.read_text(encoding="utf-8") == ""


def test_shipped_files_edited_consistently_or_holding_nan_are_refused(tmp_path):
    """A rate and its mean edited together, a size taken out, a guarded figure raised beside "changed 0", rows that
    said "not reproduced" deleted, a multi-turn accuracy of 0.9 for 11 conversations, NaN: each was shown."""
    from agentlab.evals import bfcl_compare

    def rate(doc):
        row = doc["sizes"]["0.5b"]["accuracy"]["single"]
        row["simple_python"] = 0.99
        row["mean"] = sum(v for k, v in row.items() if k != "mean") / 4
    def gone(doc):
        del doc["sizes"]["1.5b"]
    for edit in (rate, gone):
        with pytest.raises(Untrusted):
            bfcl_results.read_shipped(_edited(tmp_path, "graded.json", edit))

    def guarded(doc):
        next(r for r in doc["rows"]["0.5b"] if r["category"] == "parallel")["official_guarded"] = 74.0
    def dropped(doc):
        doc["rows"]["0.5b"] = [r for r in doc["rows"]["0.5b"] if r["reproduced"] is not False]
    for edit in (guarded, dropped):
        with pytest.raises(Untrusted):
            bp.read_prompting(_edited(tmp_path, "prompting.json", edit))

    def multi(doc):
        doc["multi"]["0.5b"]["guarded"]["accuracy"] = 0.9
    with pytest.raises(Untrusted):
        bfcl_compare.read_official(_edited(tmp_path, "official.json", multi))
    assert bfcl_compare.read_official(ROOT / "data" / "bfcl" / "official.json").multi  # as shipped: read
    nan = tmp_path / "graded.json"
    nan.write_text((ROOT / "data" / "bfcl" / "graded.json").read_text(encoding="utf-8").replace("0.74", "NaN", 1),
                   encoding="utf-8")
    with pytest.raises(Untrusted, match="cannot be read"):
        bfcl_results.read_shipped(nan)


def test_in_a_notebook_a_refusal_is_its_line_in_the_notebooks_language_not_a_stack(monkeypatch):
    """Notebook 18 showed the whole stack, with the machine's paths, and the line last, in English in the Chinese
    notebook. IPython asks the error what to show (_render_traceback_): its line, in the notebook's LANG."""
    import types

    import IPython
    refused = Untrusted("bfcl.check.shipped_unreadable", file="graded.json")
    shell = types.SimpleNamespace(user_ns={"LANG": "zh"})
    monkeypatch.setattr(IPython, "get_ipython", lambda: shell)
    assert refused._render_traceback_() == [refused.localized("zh")]
    shell.user_ns["LANG"] = "en"
    assert refused._render_traceback_() == [refused.localized("en")]


def test_a_prompt_recording_with_a_category_taken_out_and_a_resume_of_another_sample_are_refused(datasets, tmp_path,
                                                                                                 monkeypatch):
    """The prompt-mode recorder has no --categories: a recording without multiple (the category that read "not
    reproduced") was graded as one of three categories. And a resume with another --n cut the recording down to the
    new sample's questions without a word (972 lines to 184)."""
    path = _rewrite(bp.prompt_cassette("0.5b"), tmp_path, lambda e: not e["id"].startswith("multiple_"))
    monkeypatch.setattr(bp, "prompt_cassette", lambda size: path)
    with pytest.raises(Untrusted) as caught:
        bp.graded_recording("0.5b")
    assert caught.value.key == "bfcl.check.gaps"
    with pytest.raises(Untrusted, match="not among the 80 questions"):  # what the resume reads first, with --n 20
        read_recording(bfcl.bfcl_cassette("0.5b"), "single", {q.id for q in bfcl.questions(20)})


def test_a_shipped_row_of_no_category_is_refused_not_divided_by_zero(tmp_path):
    def empty(doc):
        doc["sample"]["categories"] = []
        doc["sizes"]["0.5b"]["accuracy"]["single"] = {"mean": 0.5}
    with pytest.raises(Untrusted):
        bfcl_results.read_shipped(_edited(tmp_path, "graded.json", empty))
