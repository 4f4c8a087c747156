"""The course: every notebook framed in both languages, and the paths through them fit their time.

``data/course/paths.json`` is the one source: each notebook's prerequisites and minutes (and how the minutes were
measured), and the paths (half a day, a full day, self-paced) as notebooks and breaks. The notebooks' frames (a
cell of objectives, prerequisites and time after the title; a recap and what comes next at the end) and
docs/course.md must agree with it.
"""
import json
import re

import jupytext
import pytest
from conftest import ROOT

NB_DIR = ROOT / "notebooks"
COURSE = json.loads((ROOT / "data" / "course" / "paths.json").read_text(encoding="utf-8"))
NOTEBOOKS = COURSE["notebooks"]
PATHS = COURSE["paths"]
SOURCES = sorted(NB_DIR.glob("[0-9][0-9]_*.py"))
PAIRS = [(p, "en") for p in SOURCES] + [(NB_DIR / "zh" / p.name, "zh") for p in SOURCES]

#: what a frame says, in each language
SAYS = {
    "en": {"objectives": "**After this notebook you can:**", "before": "**Before it:**", "none": "nothing",
           "time": re.compile(r"^\*\*Time:\*\* about (\d+) minutes", re.M), "recap": "## Recap",
           "next": "**Next:**", "docs": "../docs/"},
    "zh": {"objectives": "**学完本笔记本，你能：**", "before": "**先修：**", "none": "无",
           "time": re.compile(r"^\*\*用时：\*\* 约 (\d+) 分钟", re.M), "recap": "## 回顾",
           "next": "**下一步：**", "docs": "../../docs/zh/"},
}
BULLET = re.compile(r"^- \S", re.M)
NUMBERED = re.compile(r"\[(\d\d) · ([^\]]+)\]\((\d\d_\w+)\.ipynb\)")


def steps(path: str) -> list:
    return PATHS[path]["steps"]


def order(path: str) -> list[str]:
    return [s for s in steps(path) if isinstance(s, str)]


def title(source, lang: str) -> str:
    """A notebook's title as its own first cell writes it: ``NN · words``."""
    nb = jupytext.read(source if lang == "en" else NB_DIR / "zh" / source.name)
    return nb.cells[0].source.splitlines()[0].removeprefix("# ").strip()


def section(text: str, start: str, end: str | None = None) -> str:
    after = text.split(start, 1)[1] if start in text else ""
    return after.split(end, 1)[0] if end and end in after else after


def test_every_notebook_is_in_the_course_data():
    assert sorted(NOTEBOOKS) == [p.name[:2] for p in SOURCES]
    for nn, facts in NOTEBOOKS.items():
        assert facts["minutes"] > 0 and facts["minutes"] % 5 == 0, nn
        assert set(facts["prerequisites"]) <= set(NOTEBOOKS) - {nn}, nn


@pytest.mark.parametrize("source,lang", PAIRS, ids=[f"{lang}/{p.stem}" for p, lang in PAIRS])
def test_the_notebook_opens_with_its_frame(source, lang):
    """After the title: 2 to 4 objectives, the prerequisites by number and title (linked), and the minutes of
    data/course/paths.json."""
    nb, say = jupytext.read(source), SAYS[lang]
    nn = source.name[:2]
    assert nb.cells[0].cell_type == "markdown" and nb.cells[0].source.startswith(f"# {nn} · ")
    frame = nb.cells[1]
    assert frame.cell_type == "markdown" and frame.source.startswith(say["objectives"]), frame.source[:80]
    objectives = section(frame.source, say["objectives"], say["before"])
    assert 2 <= len(BULLET.findall(objectives)) <= 4, objectives
    before = section(frame.source, say["before"]).splitlines()[0]
    named = [m.group(1) for m in NUMBERED.finditer(before)]
    assert named == NOTEBOOKS[nn]["prerequisites"], (before, NOTEBOOKS[nn]["prerequisites"])
    if not named:
        assert say["none"] in before, before
    for m in NUMBERED.finditer(before):
        target = NB_DIR / f"{m.group(3)}.py"
        assert target.is_file() and m.group(3)[:2] == m.group(1), m.group(0)
        assert f"{m.group(1)} · {m.group(2)}" == title(target, lang), (m.group(0), title(target, lang))
    minutes = say["time"].findall(frame.source)
    assert minutes == [str(NOTEBOOKS[nn]["minutes"])], (minutes, NOTEBOOKS[nn]["minutes"])


@pytest.mark.parametrize("source,lang", PAIRS, ids=[f"{lang}/{p.stem}" for p, lang in PAIRS])
def test_the_notebook_ends_with_a_recap_and_what_comes_next(source, lang):
    """The last cell: 3 to 5 bullets of what was shown, then the next notebook of the self-paced path (linked) and a
    page of the docs in the notebook's language."""
    nb, say = jupytext.read(source), SAYS[lang]
    nn = source.name[:2]
    last = nb.cells[-1]
    assert last.cell_type == "markdown" and last.source.startswith(say["recap"]), last.source[:80]
    recap = section(last.source, say["recap"], say["next"])
    assert 3 <= len(BULLET.findall(recap)) <= 5, recap
    after = section(last.source, say["next"])
    assert after.strip(), "no next step"
    assert say["docs"] in after, f"no link to the docs in {lang}: {after}"
    path = order("self_paced")
    following = path[path.index(nn) + 1] if path.index(nn) + 1 < len(path) else None
    linked = [m.group(1) for m in NUMBERED.finditer(after)]
    if following:
        assert linked[:1] == [following], (linked, following)
    assert "course.md" in after, after


def test_every_notebook_is_in_the_self_paced_path_once():
    assert sorted(order("self_paced")) == sorted(NOTEBOOKS)


@pytest.mark.parametrize("name", sorted(PATHS))
def test_the_path_fits_its_time(name):
    spent = sum(NOTEBOOKS[s]["minutes"] if isinstance(s, str) else s["break"] for s in steps(name))
    assert spent <= PATHS[name]["minutes"], (name, spent, PATHS[name]["minutes"])
    assert PATHS[name]["minutes"] - spent < 60, f"{name} leaves an hour unused: add a notebook"
    assert len(order(name)) == len(set(order(name))), name


@pytest.mark.parametrize("name", sorted(PATHS))
def test_the_path_respects_the_prerequisites(name):
    """Every notebook of a path comes after all of its prerequisites, in the same path."""
    seen: set[str] = set()
    for nn in order(name):
        missing = set(NOTEBOOKS[nn]["prerequisites"]) - seen
        assert not missing, f"{name}: {nn} comes before its prerequisites {sorted(missing)}"
        seen.add(nn)


def test_prerequisites_come_earlier_in_some_path():
    for nn, facts in NOTEBOOKS.items():
        for p in facts["prerequisites"]:
            assert any(p in order(x) and nn in order(x) and order(x).index(p) < order(x).index(nn) for x in PATHS), (nn, p)


@pytest.mark.parametrize("page", ["docs/course.md", "docs/zh/course.md"])
def test_the_course_page_lists_each_path_as_the_data_does(page):
    """Each path's table on the course page names its notebooks in the data's order, with the data's minutes."""
    text = (ROOT / page).read_text(encoding="utf-8")
    for name in PATHS:
        marker = f"<!-- path: {name} -->"
        assert marker in text, f"{page} has no table for {name}"
        table = text.split(marker, 1)[1].split("\n\n", 1)[0]
        rows = [r for r in table.strip().splitlines() if r.startswith("|") and not set(r) <= set("|-: ")][1:]
        listed = [re.search(r"\b(\d\d) · ", r).group(1) for r in rows if re.search(r"\b\d\d · ", r)]
        assert listed == order(name), (page, name, listed)
        for r in rows:
            m = re.search(r"\b(\d\d) · ", r)
            if m:
                assert f"| {NOTEBOOKS[m.group(1)]['minutes']} |" in r, (page, r)
    for nn in NOTEBOOKS:
        assert f"{nn} · " in text, f"{page} does not place notebook {nn} on the map"


@pytest.mark.parametrize("readme,page", [("README.md", "docs/course.md"), ("README.zh.md", "docs/zh/course.md")])
def test_the_readme_links_the_course(readme, page):
    assert f"]({page})" in (ROOT / readme).read_text(encoding="utf-8")


@pytest.mark.parametrize("page", ["docs/course.md", "docs/zh/course.md"])
def test_the_course_page_says_each_paths_minutes_and_the_total_as_the_data_does(page):
    """The sentence above each path's table ("170 minutes of 180") and the total of all notebooks are the data's:
    the tables were written from it while a sentence kept an older measure."""
    text = (ROOT / page).read_text(encoding="utf-8")
    said = re.compile(r"(\d+) minutes of\s+(\d+)" if "/zh/" not in page else r"共 (\d+) 分钟\s*（上限\s*(\d+)）")
    for name in PATHS:
        before = text.split(f"<!-- path: {name} -->", 1)[0]
        spent = sum(NOTEBOOKS[s]["minutes"] if isinstance(s, str) else s["break"] for s in steps(name))
        assert said.findall(before)[-1] == (str(spent), str(PATHS[name]["minutes"])), (page, name)
    total = sum(f["minutes"] for f in NOTEBOOKS.values())
    assert re.search(rf"(?:add up to|合计)\s*{total}\s*(?:minutes|分钟)", text), (page, total)


@pytest.mark.parametrize("lang, said", [("en", r"^\*\*Timing:\*\* about (\d+) minutes\."), ("zh", r"^\*\*时间：\*\* 约 (\d+) 分钟。")])
def test_the_trainer_notes_give_each_notebook_the_minutes_the_course_gives_it(lang, said):
    """Every note gave five minutes more than the notebook and the course page: the half-day path ran 195 of 180."""
    for nn, facts in NOTEBOOKS.items():
        note = (ROOT / "data" / "trainer" / f"{nn}.{lang}.md").read_text(encoding="utf-8")
        assert re.findall(said, note, re.M) == [str(facts["minutes"])], (nn, lang)


@pytest.mark.parametrize("lang", ["en", "zh"])
def test_each_trainer_note_is_headed_by_its_notebooks_own_title(lang):
    """The Chinese note for 00 was headed "Start here：…" and several others by a title their notebook does not have."""
    folder = NB_DIR / "zh" if lang == "zh" else NB_DIR
    for nb in sorted(folder.glob("[0-9][0-9]_*.py")):
        title = next(line[4:].strip() for line in nb.read_text(encoding="utf-8").splitlines() if line.startswith("# # "))
        note = (ROOT / "data" / "trainer" / f"{nb.name[:2]}.{lang}.md").read_text(encoding="utf-8")
        assert note.splitlines()[0] == f"# {title}", (lang, nb.name)
