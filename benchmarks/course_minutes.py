"""The minutes each notebook asks of a participant, as data/course/paths.json records them (docs/course.md).

    python benchmarks/course_minutes.py          # words counted now, run times as recorded; --write to record
                                                 # them and rewrite docs/course.md's tables (both languages)
    python benchmarks/course_minutes.py --run    # run every notebook again (fresh kernel, top to bottom) first

minutes = run time + prose words / 100 + code words / 50 + 5 (the look-up exercise)
          + 5 + the model solution's code words / 10 (the build exercise: predict, write, run the check, fix),
rounded up to the next 5 minutes. Words are counted in the English notebook (its Chinese twin has the same code and
the same run), leaving out the frame cells (objectives at the top, recap at the end), which are read in a minute and
say what the rest says. A solution's code words leave out its docstrings and comments: what a learner types.
"""
from __future__ import annotations

import json
import math
import os
import sys
import time
from pathlib import Path

import jupytext

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from agentlab.i18n import joined, t  # noqa: E402
from agentlab.workbook import kernels  # noqa: E402

DATA = ROOT / "data" / "course" / "paths.json"
PROSE_WPM, CODE_WPM, EXERCISE = 100, 50, 5
BUILD, WRITE_WPM = 5, 10  # a build exercise: 5 minutes to predict and read the check's answer, code written at 10 words a minute
SOLUTIONS = ROOT / "data" / "trainer" / "solutions"
FRAME = ("**After this notebook you can:**", "## Recap")


def words(path: Path) -> tuple[int, int]:
    cells = [c for c in jupytext.read(path).cells if not c.source.startswith(FRAME)]
    prose = sum(len(c.source.split()) for c in cells if c.cell_type == "markdown")
    code = sum(len(c.source.split()) for c in cells if c.cell_type == "code")
    return prose, code


def solution_words(nn: str) -> int:
    """The words of code a learner writes for notebook ``nn``'s build exercise, as its model solution has them."""
    import ast
    import io
    import tokenize
    path = SOLUTIONS / f"nb{nn}.py"
    if not path.exists():
        return 0
    text = path.read_text(encoding="utf-8")
    docstrings = {(n.body[0].lineno, n.body[0].end_lineno) for n in ast.walk(ast.parse(text))
                  if isinstance(n, (ast.Module, ast.FunctionDef, ast.ClassDef)) and n.body
                  and isinstance(n.body[0], ast.Expr) and isinstance(getattr(n.body[0], "value", None), ast.Constant)}
    skip = {line for a, b in docstrings for line in range(a, (b or a) + 1)}
    kept = [tok.string for tok in tokenize.generate_tokens(io.StringIO(text).readline)
            if tok.type not in (tokenize.COMMENT, tokenize.NL, tokenize.NEWLINE, tokenize.INDENT, tokenize.DEDENT,
                                tokenize.ENDMARKER) and tok.start[0] not in skip]
    return len(" ".join(kept).split())


def run_seconds(path: Path) -> float:
    import nbformat
    from nbclient import NotebookClient

    os.environ.pop("MPLBACKEND", None)
    nb = nbformat.read(path.with_suffix(".ipynb"), as_version=4)
    t0 = time.perf_counter()
    NotebookClient(nb, timeout=600, kernel_name="python3", kernel_manager_class=kernels.KernelManager,
                   resources={"metadata": {"path": str(path.parent)}}).execute()
    return round(time.perf_counter() - t0, 1)


def minutes(prose: int, code: int, seconds: float, build: int = 0) -> int:
    build_minutes = BUILD + build / WRITE_WPM if build else 0
    return 5 * math.ceil((seconds / 60 + prose / PROSE_WPM + code / CODE_WPM + EXERCISE + build_minutes) / 5 - 1e-9)


PAGES = {"en": ROOT / "docs" / "course.md", "zh": ROOT / "docs" / "zh" / "course.md"}


def write_pages(course: dict) -> None:
    """The course page's tables, in both languages, from the data: each path's steps with their minutes and clock,
    and the measured table. A notebook's title and link are the ones the page already gives it."""
    import re
    row = re.compile(r"^\| \d+ \| (\[(\d\d) · [^\]]+\]\([^)]+\)) \|", re.M)
    for lang, page in PAGES.items():
        text = page.read_text(encoding="utf-8")
        links = {m.group(2): m.group(1) for m in row.finditer(text)}
        titles = {nn: link[1:link.index("](")] for nn, link in links.items()}
        for name, path in course["paths"].items():
            rows, clock, n = [], 0, 0
            for step in path["steps"]:
                if isinstance(step, str):
                    n, spent, label = n + 1, course["notebooks"][step]["minutes"], links[step]
                    number = str(n)
                else:
                    spent = step["break"]
                    label, number = t("course.lunch" if spent >= 45 else "course.break", lang), ""
                clock += spent
                rows.append(f"| {number} | {label} | {spent} | {clock // 60}:{clock % 60:02d} |".replace("|  |", "| |"))
            start = text.index(f"<!-- path: {name} -->")
            head_end = text.index("|---|---|---|---|\n", start) + len("|---|---|---|---|\n")
            end = text.index("\n\n", head_end)
            text = text[:head_end] + "\n".join(rows) + text[end:]
        measured_head = text.index("|---|---|---|---|---|---|---|")
        body_start = text.index("\n", measured_head) + 1
        body_end = text.find("\n\n", body_start)
        body_end = len(text.rstrip("\n")) if body_end < 0 else body_end
        lines = []
        for nn, facts in sorted(course["notebooks"].items()):
            m = facts["measured"]
            pre = joined(facts["prerequisites"], lang, "list") or t("course.none", lang)
            lines.append(f"| {titles[nn]} | {pre} | {m['run_seconds']} | {m['prose_words']} | {m['code_words']} | "
                         f"{m['build_code_words']} | {facts['minutes']} |")
        text = text[:body_start] + "\n".join(lines) + text[body_end:]
        page.write_text(text, encoding="utf-8")


def main(argv: list[str]) -> int:
    course = json.loads(DATA.read_text(encoding="utf-8"))
    print(f"{'notebook':34} {'run s':>6} {'prose':>6} {'code':>6} {'build':>6} {'min':>4}")
    for source in sorted((ROOT / "notebooks").glob("[0-9][0-9]_*.py")):
        facts = course["notebooks"][source.name[:2]]
        measured = facts["measured"]
        if "--run" in argv:
            measured["run_seconds"] = run_seconds(source)
        measured["prose_words"], measured["code_words"] = words(source)
        measured["build_code_words"] = solution_words(source.name[:2])
        facts["minutes"] = minutes(measured["prose_words"], measured["code_words"], measured["run_seconds"],
                                   measured["build_code_words"])
        print(f"{source.stem:34} {measured['run_seconds']:6.1f} {measured['prose_words']:6} "
              f"{measured['code_words']:6} {measured['build_code_words']:6} {facts['minutes']:4}")
    print("all notebooks:", sum(f["minutes"] for f in course["notebooks"].values()), "minutes")
    if "--write" in argv or "--run" in argv:
        DATA.write_text(json.dumps(course, ensure_ascii=False, indent=2) + "\n", encoding="utf-8")
        write_pages(course)
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
