"""The approval gate's desk: the held calls of a store, each approved or rejected by a person with a button
(docs/guards.md#approval). A request decided elsewhere since the desk was drawn (in code, on another page), or
whose outcome is not known yet, is said as it is, never decided again."""
from __future__ import annotations

import html
import json

import ipywidgets as W

from ..approval import approve, pending, reject
from ..i18n import Lang, aside, joined, t
from ..store import Store
from ..tools import Registry
from .widgets import LANG_OPTIONS, App, _safe, offer

__all__ = ["ApprovalDesk"]


class ApprovalDesk(App):
    """Held calls with Approve and Reject buttons."""

    def __init__(self, store: Store, registry: Registry, *, lang: Lang = "en"):
        self.store, self.registry = store, registry
        self.lang = W.ToggleButtons(options=LANG_OPTIONS, value=lang)
        self.choice = W.Dropdown(description="")
        self.reason = W.Text(value=t("ui.reject_reason", lang), layout=W.Layout(width="320px"))
        self.approve = W.Button(button_style="success")
        self.reject = W.Button(button_style="danger")
        self.status = W.HTML()
        self.said = ""  # what the last decision did, kept across a language switch
        self.approve.on_click(lambda _: _safe(self.status, lambda: self._decide(True)))
        self.reject.on_click(lambda _: _safe(self.status, lambda: self._decide(False)))
        self.lang.observe(lambda change: self._relabel(change.get("old")), names="value")
        self._relabel()
        self.widget = W.VBox([self.lang, self.choice, W.HBox([self.approve, self.reject, self.reason]), self.status])

    def _relabel(self, old: Lang | None = None) -> None:
        lang = self.lang.value
        self.approve.description, self.reject.description = t("ui.approve", lang), t("ui.reject", lang)
        if old is not None and self.reason.value == t("ui.reject_reason", old):  # untouched: translate it
            self.reason.value = t("ui.reject_reason", lang)
        self.refresh()

    def refresh(self) -> None:
        lang = self.lang.value
        items = pending(self.store)
        tags = {"failed": f" [{t('ui.failed_once', lang)}]", "unknown": f" [{t('ui.outcome_unknown', lang)}]"}
        offer(self.choice, [(f"{a.tool} {a.args}{aside(a.reason, lang)}" + tags.get(a.state, ""), a.id) for a in items])
        waiting = (t("ui.pending", lang, what=joined((a.id for a in items), lang, "list")) if items
                   else t("ui.none_pending", lang))
        self.status.value = (self.said + "<br>" if self.said else "") + waiting

    def _decide(self, yes: bool) -> None:
        if not self.choice.value:
            return
        lang = self.lang.value
        # the list was read when it was drawn: a request decided since (in code, in another page) is said as decided,
        # never rejected after its refund was paid, nor "approved: ran once" when nothing ran
        held = self.store.get_approval(self.choice.value)
        if held is not None and held.state in ("approved", "rejected", "unknown"):
            # an outcome not known yet (approved, its result never came back) is neither approved again nor rejected:
            # it is settled when the result lands or by a person who checked (agentlab.approval.resolve)
            msg = t(f"ui.already_{held.state}", lang, id=held.id)
        elif yes:
            d = approve(self.store, self.registry, self.choice.value)
            result = json.dumps(d.data, ensure_ascii=False)
            msg = t("ui.approval_failed", lang, error=d.error.text(lang)) if d.error is not None \
                else t("ui.approved", lang, result=result) if d.ran \
                else t(f"ui.already_{d.approval.state}", lang, id=d.approval.id)  # decided elsewhere meanwhile
        else:
            d = reject(self.store, self.choice.value, self.reason.value)
            msg = t("ui.rejected", lang) if d.approval.state == "rejected" and d.approval.decision == self.reason.value \
                else t(f"ui.already_{d.approval.state}", lang, id=d.approval.id)
        self.said = html.escape(msg)
        self.refresh()
