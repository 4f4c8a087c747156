"""``--dist loadgroup`` as pytest-xdist means it, on pytest 9 too (imported by tests/conftest.py).

pytest-xdist marks each test of an ``xdist_group`` by appending ``@group`` to its node id (``item._nodeid``); its
scheduler then sends every test with the same suffix to one worker. pytest 9 reads a node's id from ``item._id``, so
the suffix was lost without a word and each grouped test went to whichever worker was free: the hub's tests ran on
both workers at once, two hubs on one machine's workshop accounts (one hub per machine is what they need), and the
real local model was loaded by both. Here the suffix is set again where xdist's did not take.
"""
from __future__ import annotations

import pytest


def group_names(item: pytest.Item) -> str:
    """The group suffix pytest-xdist gives ``item``: its ``xdist_group`` names, sorted, joined by ``_`` ('' if none)."""
    names = {str(m.args[0] if m.args else m.kwargs.get("name", "default")) for m in item.iter_markers("xdist_group")}
    return "_".join(sorted(names))


@pytest.hookimpl(trylast=True)
def pytest_collection_modifyitems(config: pytest.Config, items: list[pytest.Item]) -> None:
    """On a worker of ``--dist loadgroup`` (after pytest-xdist's own hook): each grouped test's node id ends in
    ``@group``. A pytest whose node ids xdist can still change already has it; nothing is done twice."""
    if not getattr(config.option, "loadgroup", False):
        return
    for item in items:
        group = group_names(item)
        if group and not item.nodeid.endswith(f"@{group}"):
            from _pytest.nodeid import NodeId  # pytest 9's node id; older ones never get here
            item._id = NodeId.parse(f"{item.nodeid}@{group}")  # type: ignore[attr-defined]
            if not item.nodeid.endswith(f"@{group}"):  # a later pytest again: said, not silently spread
                raise RuntimeError("pytest no longer reads a node's id from item._id: see tests/xdist_groups.py")
