"""The no-code app's desk view: pick a desk, a model and a fault, press Run, and read what happened in plain words,
graded on the final data, with both loops' traces side by side and under each what its tools wrote.

Three desks: the after-sales desk (refunds), the bookkeeping desk (ledger lines) and tau-bench's retail store
(its data read from the datasets folder; the menu says so when it is absent). The app (app/agentlab_app.py)
shows it above the log review and the probe.
"""
from __future__ import annotations

import html
from collections.abc import Callable
from typing import Any

import ipywidgets as W

from ..i18n import Lang, columns, t
from ..models.faults import FAULTS, MODEL_FAULTS, TOOL_FAULTS
from ..resources import data_file
from ..scenarios import aftersales, expense, retail
from .demo import Comparison, compare_expense, compare_loops, compare_retail
from .widgets import LANG_OPTIONS, REPLAYABLE_FAULTS, App, _safe, comparison_html, offer

__all__ = ["CASSETTE", "DESKS", "MODELS", "NEVER_FIRES", "NEVER_MET", "PMApp"]

#: the model menu: a value the code matches on, and the catalogue key of what a person reads
MODELS = {
    "self-correcting": "app.model.self_correcting",
    "scripted refund demo": "app.model.scripted",
    "qwen 1.5b (recorded)": "app.model.recorded",
}
#: models whose every reply is fixed in advance (a script, a recording): no fault that rewrites a reply is offered with
#: them, since they cannot answer it the way a model would (the opening demo's script, made to send orderId twice by
#: camel_case, never read the order and still answered as if it had)
FIXED_REPLIES = ("scripted refund demo", "qwen 1.5b (recorded)")
CASSETTE = data_file("cassettes/aftersales-1.5b.jsonl")
#: each desk: its scenario (for its title), the models it offers, and how both loops are run on it
DESKS: dict[str, tuple[Any, tuple[str, ...], Callable[..., Comparison]]] = {
    "aftersales": (aftersales.SCENARIO, tuple(MODELS), compare_loops),
    "expense": (expense.SCENARIO, ("self-correcting",), compare_expense),
    "retail": (retail.SCENARIO, ("self-correcting",), compare_retail),
}


#: faults a desk's menu does not offer, since on that desk they are not what their label says. The bookkeeping desk's
#: fields are single words: camel_case has no name to rename (the desk opened on it, and the run said the fault never
#: fired). Its model books before it looks anything up: a ping-pong between look-ups there is the same booking sent
#: again and again, which repeat_call already shows, under a label that said "keeps looking things up".
#: The retail store's tools take no amount and no bounded number: an amount in words or a value past its limit has
#: nowhere to land, and both loops ran as if no fault had been chosen ("no guard had to step in"); an amount sent as
#: text became an order number sent as a number there (12345), not what its label says.
NEVER_FIRES: dict[str, tuple[str, ...]] = {"expense": ("camel_case", "ping_pong"),
                                           "retail": ("amount_in_words", "out_of_range", "wrong_type")}
#: faults a model never meets, whatever the desk: the recording refunds at once and never looks the order up, so a
#: look-up that fails or hangs is never met (both traces ran as with no fault)
NEVER_MET: dict[str, tuple[str, ...]] = {"qwen 1.5b (recorded)": ("flaky_tool", "hanging_tool")}


class PMApp(App):
    """For people who do not write code: menus, a Run button, two traces, what each side wrote, a plain account."""

    def __init__(self, *, lang: Lang = "en"):
        self.lang = W.ToggleButtons(options=LANG_OPTIONS, value=lang)
        self.scenario = W.Dropdown(options=self._desk_options(lang), value="aftersales")
        self.model = W.Dropdown(options=self._model_options(lang, "aftersales"), value="self-correcting")
        self.fault = W.Dropdown(options=self._fault_options(lang, "self-correcting", "aftersales"), value="camel_case")
        self.scenario.observe(lambda _: self._relabel(), names="value")  # each desk offers its own models
        self.model.observe(lambda _: self._relabel(), names="value")  # a recording offers fewer faults
        self.header = W.HTML()
        self._wire_run(self.update)
        self.widget = W.VBox([self.lang, self.header, self.scenario, self.model, self.fault, self.run,
                              self.view])

    @staticmethod
    def _desk_options(lang: Lang) -> list[tuple[str, str]]:
        return [(scenario.title[lang], name) for name, (scenario, _, _) in DESKS.items()
                if name != "retail" or retail.available()]

    @staticmethod
    def _model_options(lang: Lang, desk: str) -> list[tuple[str, str]]:
        return [(t(MODELS[k], lang), k) for k in DESKS[desk][1] if "recorded" not in k or CASSETTE.exists()]

    @staticmethod
    def _fault_options(lang: Lang, model: str, desk: str) -> list[tuple[str, str]]:
        held_back = (*NEVER_FIRES.get(desk, ()), *NEVER_MET.get(model, ()))
        names = [n for n in MODEL_FAULTS + TOOL_FAULTS if (model not in FIXED_REPLIES or n in REPLAYABLE_FAULTS)
                 and n not in held_back]
        return [(FAULTS[n].describe(lang), n) for n in names]

    def _relabel(self) -> None:
        # setting a menu's options fires its observer, which relabels again half-way: that inner call once re-ran the
        # desk with the menus' passing values (another desk's run under the chosen one's menu)
        if getattr(self, "_relabelling", False):
            return
        self._relabelling = True
        try:
            self._relabel_menus()
        finally:
            self._relabelling = False
        lang = self.lang.value
        if self.last is not None and getattr(self, "_ran_on", None) != (self.scenario.value, self.model.value):
            # another desk or model picked: the last run was of the one before, and stayed on screen under its menus
            self.last, self.view.value = None, ""
        if self.last is not None and getattr(self, "_ran_in", lang) != lang:
            # the runs themselves speak (the model's answer, the errors it read): run again in the new language, so
            # nothing stays in the other one after the switch (the scripted runs are the same each time)
            _safe(self.view, self.update, lang)
        elif self.last is not None:
            self.view.value = self._page(lang)

    def _relabel_menus(self) -> None:
        lang = self.lang.value
        missing = "" if retail.available() else f"<p><small>{html.escape(t('effect.retail_missing', lang))}</small></p>"
        # the page's own language and title follow the app's (the page template reads this mark): a Chinese page was
        # declared English to screen readers and named by the notebook's file
        mark = (f"<span class='agentlab-page-lang' hidden data-lang='{'zh-CN' if lang == 'zh' else 'en'}' "
                f"data-title='{html.escape(t('app.title', lang), quote=True)}'></span>")
        self.header.value = (f"{mark}<h3>{html.escape(t('app.title', lang))}</h3><p>{html.escape(t('app.intro', lang))}</p>"
                             + missing)
        self.scenario.description, self.model.description, self.fault.description = (
            t("ui.scenario", lang), t("ui.model", lang), t("ui.fault", lang))
        self.run.description = t("ui.run", lang)
        # each menu's options and choice go to the page in one message (offer): see there why
        desk = self.scenario.value
        offer(self.scenario, self._desk_options(lang), desk)
        offer(self.model, self._model_options(lang, desk), self.model.value)
        model = self.model.value
        offer(self.fault, self._fault_options(lang, model, desk), self.fault.value)
        # the menus line up: one description width, one menu width, wide enough for every label in either language
        widest = max(columns(t(k, lg)) for k in ("ui.scenario", "ui.model", "ui.fault") for lg in ("en", "zh"))
        longest = max(columns(label) for lg in ("en", "zh") for label, _ in
                      [*self._model_options(lg, "aftersales"), *self._fault_options(lg, model, "aftersales"),
                       *self._desk_options(lg)])
        for menu in (self.scenario, self.model, self.fault):
            menu.style.description_width = f"{widest + 2}ch"
            menu.layout.width = f"{widest + 2 + longest + 6}ch"

    def update(self) -> Comparison:
        from ..models.cassette import CassetteModel
        from .demo import make_model, seed_demo_model
        lang, choice, desk = self.lang.value, self.model.value, self.scenario.value
        self._ran_on = (desk, choice)
        if desk != "aftersales":
            self._ran_in = lang
            self.last = DESKS[desk][2](self.fault.value, lang=lang)
            self.view.value = comparison_html(self.last, lang)
            return self.last

        def base() -> Any:  # a fresh model for each loop
            if choice == "scripted refund demo":
                return seed_demo_model(lang)
            if choice == "qwen 1.5b (recorded)":
                return CassetteModel(CASSETTE, "normal-01/guarded", then=t("app.recorded.no_more", lang))
            return make_model(lang)
        # the recording refunds in its first turn, so a model fault goes there
        step = 1 if choice == "qwen 1.5b (recorded)" else 2
        # the opening demo's script answers a question about the order: graded on that task, not on the refund
        self._ran_in = lang
        self.last = compare_loops(self.fault.value, lang=lang, model=base, at_step=step,
                                  question=choice == "scripted refund demo")
        self.view.value = self._page(lang)
        return self.last

    def _page(self, lang: Lang) -> str:
        """The last run's page; a recorded model's run says first that its words are the recording's, quoted as the
        model wrote them (in English): a Chinese page showed its English reply and reason with no word about them."""
        page = comparison_html(self.last, lang) if self.last is not None else ""
        if getattr(self, "_ran_on", None) == ("aftersales", "qwen 1.5b (recorded)"):
            page = f"<p class='agentlab-recorded'><small>{html.escape(t('app.recorded.words', lang))}</small></p>{page}"
        return page
