# ---
# jupyter:
#   jupytext:
#     formats: ipynb,py:percent
#     text_representation:
#       extension: .py
#       format_name: percent
#   kernelspec:
#     display_name: Python 3
#     language: python
#     name: python3
# ---

# %% [markdown]
# # 11 · The weekly bad-case review (Badcase 复盘)
#
# A routine (docs/metrics.md#the-weekly-bad-case-review), usable without writing code:
#
# 1. **Sample** sessions at random (随机抽样), not only the failed ones: sampling failures alone distorts the shares.
# 2. **Tag** each failure by where it happened (归因): structure, semantic, execution or rule-blocked.
#    Tags are proposed automatically from the trace; correct any you disagree with.
# 3. **Target** (定靶) only the largest class this week.
# 4. **Verify** on the same metric next week.
# 5. **Keep** (沉淀) the typical case: promote it into the regression suite in one click.

# %%
import os
import tempfile
from pathlib import Path

import pandas as pd

from agentlab.models.cassette import CassetteModel, labels
from agentlab.evals import auto_tag, load_cases, promote, run_case, run_suite, sample
from agentlab.workbook.exercises import largest_share
from agentlab.workbook.widgets import BadCaseReview

cases = load_cases("../data/aftersales_cases.jsonl")
by_id = {c.id: c for c in cases}
sessions = []
for tape in sorted(Path("../data/cassettes").glob("aftersales-*.jsonl")):
    for label in labels(tape):
        case_id, loop = label.rsplit("/", 1)
        if case_id in by_id:
            sessions.append(run_case(by_id[case_id], loop=loop, model=CassetteModel(tape, label, then="(end)")))
sessions += run_suite(cases, loop="naive")
print(f"{len(sessions)} sessions to sample from, {sum(not s.passed for s in sessions)} of them failed")

# %% [markdown]
# ## Sample, tag, target
#
# Twelve sessions at random. Change a tag with its menu; the shares and the target update.

# %%
suite = Path(os.environ.get("AGENTLAB_REGRESSION_SUITE", Path(tempfile.mkdtemp()) / "regression.jsonl"))
review = BadCaseReview(sessions, cases, suite, n=12, seed=7)
review.widget

# %%
pd.DataFrame([{"case": r.case_id, "loop": r.run.loop, "status": r.run.status, "auto tag": auto_tag(r),
               "why it failed": "; ".join(r.failures)} for r in review.picked])

# %% [markdown]
# ## Keep it: promote a bad case into the regression suite
#
# The button above does this; here is the same in code. The new case replays every message of the bad
# session's model replies (all the tool calls of each), so it reproduces without a model. It is run at once,
# through the loop the session used: it *fails*, the same way the session did. That is the point of a
# regression case: it stays red until the fix lands, then turns green and keeps the bug from coming back.

# %%
bad = next((r for r in review.picked if not r.passed), None)
if bad is not None:
    new = promote(bad, by_id[bad.case_id], suite)
    again = run_case(new, loop=bad.run.loop)
    print(f"added {new.id} to {suite.name}; replayed through the {bad.run.loop} loop it ends {again.run.status}, "
          f"{'passes' if again.passed else 'fails as the session did: ' + '; '.join(again.failures)}")
    print(suite.read_text().splitlines()[-1][:300])

# %% [markdown]
# ## Exercise
#
# After your corrections to the tags above, which failure class is this week's target? (The check reads
# the tags as they are now, so correct them first if you disagree with any.)

# %%
my_answer = None  # a tag: structure, semantic, execution or rule_blocked
print(largest_share(my_answer, review.counts()))
