"""What a run's tools wrote, as rows a person can count: the refunds, the ledger lines, the store's changed records.

A trace shows what the model asked and what it was told; the harm of a lost reply resent is in neither: the two
traces can match row for row while one side refunded twice. So the app and the notebooks put, under each side's
trace, the rows its desk gained between the start and the end of the run: a double write is two rows.
"""
from __future__ import annotations

import json
from collections import Counter
from collections.abc import Mapping, Sequence
from typing import Any

from ..i18n import Lang, joined, t, t_or

__all__ = ["written_rows", "written_side_by_side"]


def _table(name: str, lang: Lang) -> str:
    return t_or(f"effect.table.{name}", name, lang)


def _fields(row: Any, lang: Lang) -> str:
    # each field by its name in the reader's language (English: as stored) and its value, the fields a list in that
    # language (金额 199元 beside a Chinese reader's next field took an English comma); a Chinese reader read
    # "order_id A1001、amount 199.0" among the page's Chinese
    if isinstance(row, Mapping):
        return joined((f"{t_or(f'effect.field.{k}', k, lang)} {_value(v, k, lang)}" for k, v in row.items()
                       if v not in ("", None)), lang, "list")
    return _value(row)


def _value(v: Any, field: str = "", lang: Lang = "en") -> str:
    """A stored value as text; an order's status (``paid``, ``refunded``) in the reader's language. Other values are
    what the tools wrote (an order id, a reason code the contract lists) and stay as written."""
    if isinstance(v, str):
        return t_or(f"effect.status.{v}", v, lang) if field == "status" else v
    return json.dumps(v, ensure_ascii=False)


def _leaves(before: Any, after: Any, path: tuple[str, ...] = ()) -> list[tuple[tuple[str, ...], Any, Any]]:
    """The changed values of two nested dicts: (path, old, new); a list compares whole."""
    if before == after:
        return []
    if isinstance(before, Mapping) and isinstance(after, Mapping):
        out = []
        for k in [*before, *[k for k in after if k not in before]]:
            out += _leaves(before.get(k), after.get(k), (*path, str(k)))
        return out
    return [(path, before, after)]


def _grouped(before: Mapping[str, Any], after: Mapping[str, Any], lang: Lang) -> dict[str, list[str]]:
    """The lines of :func:`written_rows`, by the desk's table they belong to, in the desk's order."""
    out: dict[str, list[str]] = {}
    for name in [*before, *[k for k in after if k not in before]]:
        old, new = before.get(name), after.get(name)
        if isinstance(new, Sequence) and not isinstance(new, str):
            kept = Counter(json.dumps(r, sort_keys=True, ensure_ascii=False) for r in (old or []))
            n = 0
            for row in new:
                key = json.dumps(row, sort_keys=True, ensure_ascii=False)
                if kept[key]:
                    kept[key] -= 1
                    continue
                n += 1
                out.setdefault(name, []).append(t("effect.row", lang, table=_table(name, lang), n=n, fields=_fields(row, lang)))
        else:
            for path, was, now in _leaves(old, new, (name,)):
                where = [*path[1:-1], t_or(f"effect.field.{path[-1]}", path[-1], lang)] if len(path) > 2 else path[1:]
                what = f"{_table(path[0], lang)} {'/'.join(where)}".strip()
                field = "status" if path[0] == "status" else path[-1]  # the status table holds each order's status
                out.setdefault(name, []).append(t("effect.change", lang, what=what, old=_value(was, field, lang),
                                                  new=_value(now, field, lang)))
    return out


def written_rows(before: Mapping[str, Any], after: Mapping[str, Any], lang: Lang = "en") -> list[str]:
    """One line per row the run added to a list of the desk's (a refund, a ledger line, a ticket), then one per
    value it changed elsewhere (an order's status), numbered per table so that "refund 2" is the second refund."""
    return [line for lines in _grouped(before, after, lang).values() for line in lines]


def written_side_by_side(before: Mapping[str, Any], left: Mapping[str, Any], right: Mapping[str, Any],
                         lang: Lang = "en") -> tuple[list[str | None], list[str | None]]:
    """Both sides' lines, table against table (refund 2 faces the other side's refund 2, or nothing), padded with
    None where a side wrote fewer: the rows a trace shows under each side."""
    a, b = _grouped(before, left, lang), _grouped(before, right, lang)
    out_a: list[str | None] = []
    out_b: list[str | None] = []
    for name in [*a, *[k for k in b if k not in a]]:
        la, lb = a.get(name, []), b.get(name, [])
        n = max(len(la), len(lb))
        out_a += [*la, *[None] * (n - len(la))]
        out_b += [*lb, *[None] * (n - len(lb))]
    return out_a, out_b
