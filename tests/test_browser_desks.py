"""A PM's desks in the no-code app, in Debian's chromium through Voila, in each language: each desk with a fault,
the two sides' difference outlined, what each side wrote as rows (the lost reply's second refund is a row of its
own), and their own tools file uploaded for the probe's report."""
import re

import pytest
from conftest import ROOT
from test_browser import TOKEN, _app, _browser, _free_port, _need_browser, _server

from agentlab.i18n import t
from agentlab.models.faults import FAULTS
from agentlab.scenarios import aftersales, expense, retail
from agentlab.workbook.pm_app import PMApp

pytestmark = pytest.mark.browser

#: desk, fault, and a row the naive side must show that the guarded side does not
JOURNEYS = [("aftersales", aftersales.SCENARIO, "lost_reply", ("effect.table.refunds", 2)),
            ("expense", expense.SCENARIO, "lost_reply", ("effect.table.records", 2)),
            ("retail", retail.SCENARIO, "camel_case", ("effect.table.changed", 1))]
CJK = re.compile(r"[\u3400-\u9fff]")


@pytest.mark.parametrize("locale,lang", [("zh-CN", "zh"), ("en-US", "en")])
def test_a_pm_picks_each_desk_and_a_fault_and_sees_where_the_sides_part(tmp_path, locale, lang):
    _need_browser()
    port = _free_port()
    cmd, env = _app(port, AGENTLAB_REVIEW_DIR=str(tmp_path / "r"))  # what `python run.py app` starts
    with _server(cmd, env, f"tcp://127.0.0.1:{port}", tmp_path / "voila.log", cwd=ROOT), \
            _browser(tmp_path, f"voila-desks-{locale}", locale=locale, local_only=True) as page:
        page.goto(f"http://127.0.0.1:{port}/?token={TOKEN}", timeout=120_000)
        run_button = page.get_by_role("button", name=t("ui.run", lang), exact=True)
        run_button.wait_for(timeout=120_000)
        for desk, scenario, fault, second in JOURNEYS:
            if desk == "retail" and not retail.available():
                assert page.get_by_text(t("effect.retail_missing", lang)).count() == 1
                continue
            page.locator("select").filter(has_text=scenario.title[lang]).first.select_option(label=scenario.title[lang])
            # the fault menu once the kernel has sent this desk's own faults (each desk leaves some out): chosen before
            # they arrived, the choice was made in the last desk's menu and the run went on with another fault
            labels = [label for label, _ in PMApp._fault_options(lang, "self-correcting", desk)]
            # (ipywidgets writes an option's spaces as no-break spaces)
            page.wait_for_function("labels => [...document.querySelectorAll('select')].some(s => JSON.stringify("
                                   "[...s.options].map(o => o.textContent.replace(/\\u00a0/g, ' '))) === JSON.stringify(labels))",
                                   arg=labels, timeout=60_000, polling=100)
            menu = page.locator("select").filter(has_text=FAULTS[fault].describe(lang)).first
            menu.select_option(label=FAULTS[fault].describe(lang))
            page.wait_for_function("([s, label]) => s.options[s.selectedIndex].textContent.replace(/\\u00a0/g, ' ') "
                                   "=== label", arg=[menu.element_handle(), FAULTS[fault].describe(lang)],
                                   timeout=60_000, polling=100)
            run_button.click()
            result = page.locator(".agentlab-result")
            key, n = second
            row = t("effect.row", lang, table=t(key, lang), n=n, fields="").strip()
            result.get_by_text(row).first.wait_for(timeout=60_000)  # this desk's rows: the run is shown
            result.get_by_text(t("effect.title", lang)).wait_for(timeout=60_000)
            page.get_by_text(t("explain.injected_tool" if FAULTS[fault].kind == "tool" else "explain.injected", lang,
                               what=FAULTS[fault].describe(lang))).first.wait_for(timeout=60_000)
            assert result.locator("td", has_text="◆").count() >= 1, (desk, fault)  # where the two sides part
            # what each side wrote, row against row, the first row where they differ outlined
            assert result.locator("td.agentlab-wrote", has_text="◆").count() == 2, desk
            assert result.locator("td.agentlab-wrote", has_text=row).count() >= 1, (desk, row)
            shown = result.inner_text()
            if lang == "en":
                assert not CJK.search(shown), (desk, CJK.findall(shown)[:10])
            else:
                assert t("effect.title", "en") not in shown and t("ui.what_happened", "zh") in shown
            result.screenshot(path=str(tmp_path / f"{desk}-{fault}-{lang}.png"))  # the traces and the rows written
        # their own tools file, uploaded: the probe's report in the page
        with page.expect_file_chooser() as chooser:  # ipywidgets' upload button opens the browser's file chooser
            page.get_by_role("button", name=re.compile(re.escape(t("probe.ui.upload", lang)))).click()
        chooser.value.set_files(str(ROOT / "data" / "expense_tools.json"))
        page.locator(".agentlab-probe").get_by_text("book_expense_record").first.wait_for(timeout=120_000)
        assert "Traceback" not in page.inner_text("body")
