"""The log review as a widget: a team's own log file uploaded (or the sample taken), reviewed, shown in the page's
language with no code (docs/metrics.md#bring-your-own-logs). The app and notebook 11 show it."""
from __future__ import annotations

import html
from pathlib import Path

import ipywidgets as W

from ..i18n import Lang, t
from ..resources import data_file
from .uploads import drop_upload, file_said, kept_or_said, upload_button, upload_note
from .widgets import LANG_OPTIONS, App, _safe

__all__ = ["LOG_SAMPLES", "LogReview"]


LOG_SAMPLES = {"openai": "logs_openai_sample.jsonl", "telemetry": "logs_telemetry_sample.jsonl"}


class LogReview(App):
    """Upload a log file (or take the sample), pick its format, press Review: the report of
    :func:`~agentlab.evals.log_review.review_logs`, in the page's language, with no code. A file that
    cannot be read gets its one sentence naming the line, not a traceback."""

    def __init__(self, path: str | Path | None = None, *, fmt: str = "openai", lang: Lang = "en"):
        self.lang = W.ToggleButtons(options=LANG_OPTIONS, value=lang)
        self.upload = upload_button(".jsonl,.json,.txt")
        # the team's tools file, optional: without it, calls in logs that record no tools list were read as JSON only
        # (and the page told a product manager to give one "with --tools FILE", on a page with no command line)
        self.tools_upload = upload_button(".json")
        self.tools_path: Path | None = None
        self.upload_note = W.HTML()  # the largest file it takes
        self.format = W.Dropdown(options=[*list(LOG_SAMPLES), "otel"], value=fmt)
        self.sample = W.Button()
        self.path: Path | None = Path(path) if path is not None else None
        self.report: dict | None = None
        # the sample is reviewed at once, as an upload is: the button said nothing, and an earlier file's error stayed
        self.sample.on_click(lambda _: _safe(self.view, self._sampled, self.lang.value))
        self.upload.observe(lambda _: _safe(self.view, self._uploaded, self.lang.value), names="value")
        self.tools_upload.observe(lambda _: _safe(self.view, self._tools_uploaded, self.lang.value), names="value")
        self.header = W.HTML()
        self._wire_run(self.update)
        self.widget = W.VBox([self.lang, self.header, W.HBox([self.upload, self.sample, self.upload_note]),
                              W.HBox([self.tools_upload]), self.format, self.run, self.view])

    def _relabel(self) -> None:
        lang = self.lang.value
        self.header.value = f"<h3>{html.escape(t('logs.ui.title', lang))}</h3><p>{html.escape(t('logs.intro', lang))}</p>"
        self.upload.description = t("ui.logs_upload", lang)
        self.tools_upload.description = t("ui.logs_tools_upload", lang)
        self.upload_note.value = upload_note(lang)
        self.format.description = t("ui.logs_format", lang)
        self.sample.description = t("ui.logs_sample", lang)
        self.run.description = t("ui.logs_review", lang)
        if getattr(self, "_said_in", lang) != lang:
            # the findings (or the file's error) were said in the language of the review: reviewed again, so nothing
            # stays in the other language after the switch
            _safe(self.view, self.update, lang)
        elif self.report is not None:
            from ..evals.log_review import review_html
            self.view.value = review_html(self.report, lang, page=True)

    def use_sample(self) -> Path:
        drop_upload(self.path)  # the reader's own upload is not kept once they turned to the sample
        if self.format.value not in LOG_SAMPLES:  # no sample in this format (otel): the openai one, read as such,
            self._no_sample_in = self.format.value  # and said so over the review (the menu changed with no word)
            self.format.value = "openai"
        self.path = data_file(LOG_SAMPLES[self.format.value])
        self._on_sample = True  # by this flag, not by the file's name: an upload may bear the sample's name
        return self.path

    def _sampled(self) -> dict | None:
        self.use_sample()
        return self.update()

    def take_upload(self) -> Path | None:
        """The uploaded file, kept in a temporary folder the review reads as a stream; a file too large for the page
        gets its sentence (the file read before, if any, stays the one reviewed)."""
        # a sample is never removed (kept_upload removes only what it wrote)
        path = kept_or_said(self.upload, "agentlab-logs-", self.path, self.view, self.lang.value)
        if path is not None:
            self.path, self._on_sample = path, False
        return path

    def _uploaded(self) -> dict | None:
        """A file arrived: kept, and reviewed at once. A large file reaches the kernel some seconds after the person
        picked it; one who pressed Review meanwhile was shown the sample's review, and their own file never."""
        return self.update() if self.take_upload() is not None else None

    def _tools_uploaded(self) -> dict | None:
        """The team's tools file arrived: kept, and the logs on screen (or the sample) reviewed again against it."""
        path = kept_or_said(self.tools_upload, "agentlab-tools-", self.tools_path, self.view, self.lang.value)
        if path is None:
            return None
        self.tools_path = path
        return self.update()

    def update(self) -> dict | None:
        from ..evals.log_review import review_html, review_logs
        from ..i18n import LocalizedError  # a log file that cannot be read (LogError), OTLP that is not (OtlpError)
        lang = self.lang.value
        # Review pressed before any file was chosen: the sample's review, and said to be that (a reader took it for
        # a review of nothing, or of their own file)
        unchosen = self.path is None
        if self.path is None or getattr(self, "_on_sample", False):  # the sample in the format chosen, if it has one
            self.use_sample()
        path = self.path or self.use_sample()
        self._said_in = lang
        try:
            self.report = review_logs(path, self.format.value, tools=self.tools_path, lang=lang)
        except LocalizedError as exc:
            self.report = None
            self.view.value = f"<p style='color:#d93025'>{html.escape(file_said(exc, lang))}</p>"
            return None
        said = f"<p><b>{html.escape(t('ui.logs_no_file', lang))}</b></p>" if unchosen else ""
        other = getattr(self, "_no_sample_in", None)
        if other:
            said += f"<p><b>{html.escape(t('ui.logs_no_sample_in', lang, format=other, sample='openai'))}</b></p>"
            self._no_sample_in = None
        self.view.value = said + review_html(self.report, lang, page=True)
        return self.report
