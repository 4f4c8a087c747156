"""The weekly bad-case review as a widget, for people who do not write code (docs/metrics.md#the-weekly-bad-case-review):
a team's own log file (or the sample, or a stored suite run), a week, its failed conversations read whole, a note on
the first thing that went wrong, the notes grouped into the team's own categories, their counts and trend, a
conversation promoted into the regression suite, the week exported. The logic is :mod:`agentlab.evals.weekly`;
the notes are shared with every colleague who opens the same review folder. The app shows it."""
from __future__ import annotations

import html
import json
import os
import time
from pathlib import Path
from typing import Any

import ipywidgets as W

from ..evals.unread import Unread
from ..evals.weekly import (
    ENDED_WELL,
    FailedConversation,
    ReviewStore,
    Suggestion,
    WeekReview,
    category_trend,
    conversations_of_logs,
    conversations_of_run,
    export_week,
    promote_conversation,
    role_said,
    status_said,
    suggest_groups,
    taxonomy,
    week_review,
    weeks_of,
)
from ..i18n import Lang, LocalizedError, colon, joined, said_marks, t, t_or
from ..resources import data_file
from ..site.files import load_json, write_atomic
from .figures import _show, figure
from .log_widget import LOG_SAMPLES
from .uploads import file_said, kept_upload, upload_button, upload_note
from .widgets import LANG_OPTIONS, App, _safe, no_null_tooltips, offer

__all__ = ["WeeklyReview", "conversation_html", "counts_html"]

_ERROR = "<p role='alert' style='color:#d93025'>{}</p>"
_OK = "<p role='status' style='color:#137333'>{}</p>"


_DRAFTS = 50  # unsaved notes kept per account, the newest


def _digest_of(path: Path) -> str:
    import hashlib
    digest = hashlib.sha256()
    try:
        with path.open("rb") as f:
            for block in iter(lambda: f.read(1 << 20), b""):
                digest.update(block)
    except OSError:
        return ""
    return digest.hexdigest()[:32]


def _place_name() -> str:
    """The file, in the review folder, of where its reader was when the page went: one per account, since colleagues
    share the folder's notes, never each other's name or unsaved note."""
    import getpass
    import re
    try:
        who = getpass.getuser()
    except (KeyError, OSError):  # an account with no name (a container's bare uid)
        who = str(os.getuid()) if hasattr(os, "getuid") else "me"
    return f"last_place.{re.sub(r'[^A-Za-z0-9_.-]', '_', who)[:64]}.json"


def _ended(message: dict[str, str], lang: Lang) -> str:
    """A message's text; a run's end opens with its final status, said as the list above it says it (a Chinese page
    read "运行结束：done_after_self_correction Done." under a list that said 自我修正后完成)."""
    text = message["text"]
    first, _, rest = text.partition(" ")
    status = t_or(f"status.{first}", "", lang) if message["role"] == "end" else ""
    return f"{status} {rest}".strip() if status else text


def conversation_html(conv: FailedConversation, notes: list[Any], lang: Lang = "en") -> str:
    """One conversation whole, each message with its role, then the notes on it (every text escaped)."""
    e = html.escape
    stage = f" · {e(t('stage.' + conv.stage, lang))}" if conv.stage else ""
    rows = "".join(  # what was cut from the logs ([address removed]) said in the page's language
        f"<li><b>{e(role_said(m['role'], lang))}</b>{colon(lang)}"
        f"<span style='white-space:pre-wrap'>{e(said_marks(_ended(m, lang), lang))}</span></li>" for m in conv.shown())
    said = "".join(f"<li>{e(n.text)} — <i>{e(n.author)}</i>"
                   f"{' · ' + e(t('weekly.in_category', lang, category=n.category)) if n.category else ''}</li>"
                   for n in notes) or f"<li>{e(t('weekly.no_notes', lang))}</li>"
    return (f"<div class='agentlab-weekly-conversation'><h4>{e(conv.where)} · {e(status_said(conv, lang))}"
            f"{stage}</h4><ol>{rows}</ol><h4>{e(t('weekly.notes', lang))}</h4><ul>{said}</ul></div>")


_CELL = "border:1px solid #dadce0;padding:3px 8px;text-align:left"


def counts_html(review: WeekReview, lang: Lang = "en") -> str:
    """The counts per category and the one to fix first."""
    e = html.escape
    total = sum(review.counts.values())
    if not total:
        return f"<p>{e(t('weekly.no_counts', lang))}</p>"
    # a share of the week's failed conversations, as the sentence below counts them: shares of the notes' total read
    # 50% beside "1 of 4 failed conversations"
    week = max(len(review.conversations), total)
    # ruled cells, the numbers set right under their headings: unstyled, the three headings read as one line of words
    # and each number stood under the start of its heading, as the log review's tables once did
    cell, num = f"style='{_CELL}'", f"style='{_CELL};text-align:right'"
    head = "".join(f"<th {num if k != 'category' else cell}>{e(t(f'weekly.col.{k}', lang))}</th>"
                   for k in ("category", "count", "share"))
    rows = "".join(f"<tr><td {cell}>{e(c)}</td><td {num}>{n}</td><td {num}>{n / week:.0%}</td></tr>"
                   for c, n in review.counts.items())
    most = max(review.counts.values())
    tops = [c for c, n in review.counts.items() if n == most]  # a tie is said as one: no category picked by its name
    key = "weekly.largest" if len(tops) == 1 else "weekly.largest_tied"
    return (f"<table class='agentlab-weekly-counts' style='border-collapse:collapse'><thead><tr>{head}</tr></thead><tbody>{rows}</tbody></table>"
            f"<p><b>{e(t(key, lang, category=joined(tops, lang, 'list'), n=most, total=len(review.conversations)))}</b></p>")


class WeeklyReview(App):
    """Pick a source and a week, read each failed conversation whole, write a note, group the notes, count them,
    promote one, export the week: every control an attribute, so a test sets values and clicks."""

    def __init__(self, *, folder: str | Path | None = None, runs: str | Path | None = None, lang: Lang = "en"):
        self.store = ReviewStore(folder)
        self.runs = Path(runs) if runs is not None else self.store.folder / "runs"
        self.suite = self.store.folder / "regression.jsonl"
        self.lang = W.ToggleButtons(options=LANG_OPTIONS, value=lang)
        self.header = W.HTML()
        self.source = W.Dropdown()
        self.upload = upload_button(".jsonl,.json,.txt")
        self.upload_note = W.HTML()
        self.format = W.Dropdown(options=["openai", "telemetry", "otel"], value="openai")
        self.open = W.Button(button_style="primary")
        self.week = W.Dropdown(options=[("-", "")])
        self.conversations = W.Select(options=[], rows=6, layout=W.Layout(width="95%"))
        self.conversation = W.HTML()
        self.note = W.Textarea(layout=W.Layout(width="95%", height="5em"))
        self.author = W.Text()
        # the boxes take the room their buttons leave: at 95% each, "Save the note" read "Save …" and "File this note
        # under the category" "File this note under the cat…" at 1400 px, in both languages
        self.category = W.Combobox(ensure_option=False, layout=W.Layout(flex="1 1 auto", min_width="12em"))
        self.save = W.Button(button_style="primary", layout=W.Layout(width="auto", flex="0 0 auto"))
        self.group_note = W.Dropdown(options=[("-", -1)], layout=W.Layout(width="95%"))
        self.group_name = W.Combobox(ensure_option=False, layout=W.Layout(flex="1 1 auto", min_width="12em"))
        self.group = W.Button(layout=W.Layout(width="auto", flex="0 0 auto"))
        self.suggested = W.HBox(layout=W.Layout(flex_flow="row wrap"))
        self.group_suggested = W.Button()
        self.refresh_notes = W.Button()
        self.counts = W.HTML()
        self.trend = W.Output()
        self.promote = W.Button(button_style="warning")
        self.export = W.Button()
        self.message = W.HTML()
        self.titles = [W.HTML() for _ in range(5)]
        self.items: list[FailedConversation] = []
        self._drawn = False  # the week's sections have been drawn (after an open, even one that failed)
        self.pending: Suggestion | None = None
        self.source_name = ""
        self.uploaded: Path | None = None
        self._suggestions: list[Suggestion] = []
        self.view = self.message  # where _safe writes a failure

        self.open.on_click(lambda _: self._do(self.load))
        # a file arrived: opened at once (a large one reaches the kernel seconds after it is picked, and an Open
        # pressed meanwhile opened the source chosen before)
        self.upload.observe(lambda _: self._do(lambda: self.take_upload() and self.load()), names="value")
        self.week.observe(lambda _: self._do(self.show_week), names="value")
        self.conversations.observe(lambda _: self._do(self.show_conversation), names="value")
        self.save.on_click(lambda _: self._do(self.save_note))
        self.group.on_click(lambda _: self._do(self.group_one))
        self.group_suggested.on_click(lambda _: self._do(self.apply_suggestion))
        self.refresh_notes.on_click(lambda _: self._do(self._refreshed))  # a line of the last action goes
        self.promote.on_click(lambda _: self._do(self.promote_one))
        self.export.on_click(lambda _: self._do(self.export_week))
        self.lang.observe(lambda _: self._relabel(), names="value")
        self._relabel()
        # where the reader was (the source, the week, the conversation, their name, the note not saved yet), kept in the
        # review folder as they go and taken up again when the app is opened anew: a reload lost the note half-written
        self._restoring = True
        self._upload_digest = ""  # what the upload held (its SHA-256): a place is taken up only on the same content
        self._place = self._read_place()  # waiting to be taken up, once, when its source is open again
        self.conversations.observe(lambda _: self._their_note(), names="value")  # before the place is written
        for w in (self.source, self.format, self.week, self.conversations, self.note, self.author):
            w.observe(lambda _: self._remember(), names="value")
        self._resume_source()
        self._restoring = False
        if not self._place:  # nothing waits for a source: where the page opened is the place now
            self._remember()
        self.widget = W.VBox([
            self.lang, self.header,
            self.titles[0], W.HBox([self.source, self.format]), W.HBox([self.upload, self.open, self.upload_note]), self.week,
            self.titles[1], self.conversations, self.conversation,
            self.titles[2], self.note, W.HBox([self.author, self.category, self.save], layout=W.Layout(width="95%")),
            self.titles[3], self.group_note, W.HBox([self.group_name, self.group], layout=W.Layout(width="95%")),
            self.suggested,
            self.group_suggested,
            self.titles[4], self.refresh_notes, self.counts, self.trend, W.HBox([self.promote, self.export]),
            self.message])

    # --- labels ---------------------------------------------------------------------------------
    def _relabel(self) -> None:
        lang = self.lang.value
        e = html.escape
        # where the notes, the regression cases and the exports are kept (a reader had to ask someone to find them),
        # by its place beside the notebook or the app: never the serving machine's own path on a page
        folder = self.store.folder.resolve()
        beside = os.path.relpath(folder, Path.cwd().resolve())
        where = t("weekly.folder", lang, folder=folder.name if beside.startswith("..") else beside)
        self.header.value = (f"<h3>{e(t('weekly.title', lang))}</h3><p>{e(t('weekly.intro', lang))}</p>"
                             f"<p><small>{e(where)}</small></p>")
        for title, key in zip(self.titles, ("source", "read", "note", "group", "count"), strict=True):
            title.value = f"<h4>{e(t('weekly.step.' + key, lang))}</h4>"
        chosen = self.source.value
        options = [(t("weekly.sample_openai", lang), "sample:openai"), (t("weekly.sample_telemetry", lang),
                                                                         "sample:telemetry"),
                   (t("weekly.uploaded", lang), "upload")]
        options += [(t("weekly.stored_run", lang, name=p.name), f"run:{p}") for p in self._stored_runs()]
        offer(self.source, options, chosen if chosen in [v for _, v in options] else "sample:openai")
        self.source.description = t("weekly.source", lang)
        self.format.description = t("ui.logs_format", lang)
        self.upload.description = t("ui.logs_upload", lang)
        self.upload_note.value = upload_note(lang)
        self.open.description = t("weekly.open", lang)
        self.week.description = t("weekly.week", lang)
        # a name for each control a screen reader announces (a placeholder is none: it goes once text is typed)
        for w, key in ((self.conversations, "conversations"), (self.note, "note"), (self.author, "author"),
                       (self.category, "category"), (self.group_note, "group_note"), (self.group_name, "category")):
            w.description = t(f"weekly.label.{key}", lang)
            w.style.description_width = "initial"  # the label whole ("Conversat…" in the default width)
        self.note.placeholder = t("weekly.note_hint", lang)
        self.author.placeholder = t("weekly.author_hint", lang)
        self.category.placeholder = t("weekly.category_hint", lang)
        self.group_name.placeholder = t("weekly.category_hint", lang)
        self.save.description = t("weekly.save", lang)
        self.group.description = t("weekly.file_under", lang)
        self.group_suggested.description = t("weekly.file_suggested", lang)
        self.refresh_notes.description = t("weekly.refresh", lang)
        self.promote.description = t("weekly.promote", lang)
        self.export.description = t("weekly.export", lang)
        for w in (self.open, self.save, self.group, self.group_suggested, self.refresh_notes, self.promote, self.export):
            w.layout.width = "auto"
        self.message.value = ""
        # every section drawn is drawn again in the new language, an empty week's too: after a file that could not be
        # read, "这一周没有失败的对话" stayed under English headings
        if self.items or self._drawn:
            self._weeks()
            self.show_week()

    def _stored_runs(self) -> list[Path]:
        if not self.runs.is_dir():
            return []
        return sorted((p for p in self.runs.iterdir() if (p / "meta.json").exists()), reverse=True)

    def _do(self, fn: Any) -> Any:
        """An action; a refused input gets its sentence in the page's language, anything else a short line
        (:func:`~agentlab.workbook.widgets._safe`), never a traceback."""
        lang = self.lang.value

        def action() -> Any:
            try:
                return fn()
            except LocalizedError as exc:
                self.message.value = _ERROR.format(html.escape(file_said(exc, lang)))
                return None
        return _safe(self.message, action, lang)

    # --- the source and the week ----------------------------------------------------------------
    def take_upload(self) -> Path | None:
        """The uploaded file, kept where the review reads it; the source becomes that file."""
        path = kept_upload(self.upload, "agentlab-weekly-", replacing=self.uploaded)
        if path is None:
            return None
        self.uploaded = path
        self._upload_digest = _digest_of(path)
        self.source.value = "upload"
        return path

    def load(self) -> list[FailedConversation]:
        """Read the chosen source: its failed conversations, and the weeks they fall in. A source that cannot be
        read leaves nothing of the one before on screen (its conversations were listed under the new one's name)."""
        try:
            return self._load()
        except Exception:
            self.items, self.source_name = [], ""
            self._weeks()
            self.show_week()
            raise

    def _load(self) -> list[FailedConversation]:
        lang = self.lang.value
        choice = self.source.value
        unread = Unread()  # a line that cannot be read, once one was: read past, and said
        if choice.startswith("sample:"):
            fmt = choice.split(":", 1)[1]
            path = data_file(LOG_SAMPLES[fmt])
            self.format.value = fmt
            self.items = conversations_of_logs(path, fmt, unread=unread)
        elif choice == "upload":
            if self.uploaded is None:
                self.message.value = _ERROR.format(html.escape(t("weekly.no_upload", lang)))
                return []
            path = self.uploaded
            self.items = conversations_of_logs(path, self.format.value, unread=unread)
        else:
            path = Path(choice.split(":", 1)[1])
            self.items = conversations_of_run(path)
        self.source_name = Path(str(path)).name
        self._weeks()
        said = t("weekly.loaded", lang, n=len(self.items), source=self.source_name)
        # a conversation is here when anything went wrong in it: those that still ended well are said so, as the log
        # review beside it counts them a success (its "success 100%" sat beside "4 failed" with one of them done)
        ended_well = sum(c.status in ENDED_WELL for c in self.items)
        if ended_well:
            said = joined([said, t("weekly.ended_well", lang, n=ended_well)], lang, "sentence")
        if unread.count:  # as the log review beside it says it: how many, and the first of them
            first = joined([e.localized(lang) for e in unread.first], lang, "clause")
            said = joined([said, t("logs.unread", lang, n=unread.count, first=first)], lang, "sentence")
        self.message.value = _OK.format(html.escape(said))
        self.show_week()
        self._resume_place()
        return self.items

    # --- where the reader was, across a reload ----------------------------------------------------
    def _source_id(self) -> str:
        """The source as a place names it: a sample or a stored run by its choice, an upload by what it held."""
        return f"upload:{self._upload_digest}" if self.source.value == "upload" else self.source.value

    def _read_place(self) -> dict[str, Any]:
        place = load_json(self.store.folder / _place_name(), {})  # none yet, or cut short: the app opens as new
        if not isinstance(place, dict):
            return {}
        kept: dict[str, Any] = {k: v for k, v in place.items() if isinstance(v, str) and len(v) <= 100_000}
        drafts = place.get("drafts")
        kept["drafts"] = {k: v for k, v in drafts.items() if isinstance(k, str) and isinstance(v, str)} \
            if isinstance(drafts, dict) else {}
        return kept

    def _remember(self) -> None:
        """Where the reader is now, written whole (never half a file) and readable by this account alone. Nothing is
        written while a place read at the start still waits for its source: the source's own loading would have
        written over the note it keeps. Each conversation's unsaved note is kept under its own id, so a second page
        of the same account, on another conversation, leaves this one's note alone."""
        if self._restoring or self._place:
            return
        drafts = self._read_place().get("drafts", {})
        conversation = self.conversations.value or ""
        if conversation:
            drafts.pop(conversation, None)
            if self.note.value.strip():
                drafts[conversation] = self.note.value
        drafts = dict(list(drafts.items())[-_DRAFTS:])  # the newest: a note nobody came back to goes in time
        place = {"source": self.source.value, "opened": "yes" if self.items else "", "upload": self._upload_digest,
                 "format": self.format.value,
                 "week": self.week.value, "conversation": conversation, "author": self.author.value, "drafts": drafts}
        try:  # whole or not at all, and made 0600 (mkstemp's own mode): a half-written file would open as a new app
            write_atomic(self.store.folder / _place_name(), json.dumps(place, ensure_ascii=False))
        except OSError:  # a folder nobody may write (the notes say so when saved): the next reload starts afresh
            pass

    def _their_note(self) -> None:
        """The note box shows the conversation picked: its own unsaved note, or nothing. A note typed on one
        conversation stays that conversation's (it was carried to the next one picked, and saved there)."""
        if self._restoring or self._place:
            return
        conversation = self.conversations.value or ""
        self.note.value = self._read_place().get("drafts", {}).get(conversation, "") if conversation else ""

    def _resume_source(self) -> None:
        """The source and the reader's name as they were; a source still there is opened again (an upload is not:
        it went with the page it came from, and is taken up when the same file comes again). A source that no longer
        opens is let go, said in a sentence: the page opens as new."""
        place = self._place
        if place.get("format") in self.format.options:
            self.format.value = place["format"]
        self.author.value = place.get("author", "")[:200]
        if place.get("source") in [v for _, v in self.source.options] and place["source"] != "upload":
            self.source.value = place["source"]
            if place.get("opened") != "yes":  # chosen, never opened: nothing to take up
                self._place = {}
                return
            self._do(self.load)
            if not self.items and self._place:  # it did not open (a stored run cut short): forgotten, and said so
                self._place = {}
                self.source.value = "sample:openai"
                self.message.value = _ERROR.format(html.escape(t("weekly.place_lost", self.lang.value)))
        elif place.get("source") == "upload":  # it waits for the same file: said, or the reader would never know
            self.message.value = _OK.format(html.escape(t("weekly.upload_again", self.lang.value)))
        else:
            self._place = {}

    def _resume_place(self) -> None:
        """Once, after a source is open: when it is the one the place names (an upload: the same content), its week,
        its conversation and that conversation's unsaved note; any other source lets the place go."""
        place, self._place = self._place, {}
        if not place:
            return
        wanted = f"upload:{place.get('upload', '')}" if place.get("source") == "upload" else place.get("source")
        if wanted == self._source_id() and self.items:
            restoring, self._restoring = self._restoring, True
            try:
                if place.get("week") in [v for _, v in self.week.options]:
                    self.week.value = place["week"]
                conversation = place.get("conversation", "")
                if conversation and conversation in [v for _, v in self.conversations.options]:
                    self.conversations.value = conversation
                    if not self.note.value:
                        self.note.value = place.get("drafts", {}).get(conversation, "")
            finally:
                self._restoring = restoring
        self._remember()

    def _weeks(self) -> None:
        lang = self.lang.value
        weeks = weeks_of(self.items)
        chosen = self.week.value
        options = [(w or t("weekly.undated", lang), w) for w in weeks] or [("-", "")]
        self.week.unobserve_all("value")
        offer(self.week, options, chosen)
        self.week.observe(lambda _: self._do(self.show_week), names="value")
        self.week.observe(lambda _: self._remember(), names="value")

    def in_week(self) -> list[FailedConversation]:
        return [c for c in self.items if c.week == self.week.value]

    def review(self) -> WeekReview:
        return week_review(self.store, self.items, self.week.value, self.source_name)

    # --- reading, noting, grouping --------------------------------------------------------------
    def _refreshed(self) -> WeekReview:
        """The week again, with everyone's notes as saved now; the line the last action left ("click a group first")
        goes, as it stayed under the fresh week."""
        self.message.value = ""
        return self.show_week()

    def show_week(self) -> WeekReview:
        """The week's conversations, its notes (everyone's, as saved now), the suggestions, counts and trend."""
        lang = self.lang.value
        self._drawn = True
        review = self.review()
        noted = {n.conversation for n in review.notes}
        chosen = self.conversations.value
        options = [(f"{'✓ ' if c.id in noted else '• '}{c.where} · {status_said(c, lang)}"
                    f"{' · ' + t('stage.' + c.stage, lang) if c.stage else ''}", c.id) for c in review.conversations]
        offer(self.conversations, options, chosen)
        self.show_conversation()
        names = [*dict.fromkeys([*self.store.categories(), *taxonomy(lang)])]
        # suggested for the notes no one has filed yet: a suggestion never moves a note a person put somewhere
        self._suggestions = suggest_groups([n for n in review.notes if not n.category], lang, review.conversations)
        suggested = [s.name for s in self._suggestions]
        self.category.options = self.group_name.options = [*dict.fromkeys([*suggested, *names])]
        note_options = [(f"#{n.id} {n.author}: {n.text[:60]}{'…' if len(n.text) > 60 else ''}"
                         f"{' → ' + n.category if n.category else ''}", n.id) for n in review.notes]
        chosen_note = self.group_note.value
        offer(self.group_note, note_options or [("-", -1)], chosen_note)
        buttons = []
        for s in self._suggestions:
            b = W.Button(description=t("weekly.suggestion", lang, name=s.name, n=len(s.notes)),
                         tooltip=t("weekly.suggestion_from." + s.source, lang), layout=W.Layout(width="auto"))
            b.on_click(lambda _, s=s: self.pick(s))
            buttons.append(b)
        self.suggested.children = [W.HTML(html.escape(t("weekly.suggestions", lang))), *buttons] if buttons else []
        no_null_tooltips(self.suggested)  # made after the page was shown: no "null" on hover either
        # shown only with a suggestion to file: with none on the page, the button answered "click a suggested group
        # first" to a person who had no group to click
        self.group_suggested.layout.display = None if buttons else "none"
        self.counts.value = counts_html(review, lang)
        self._plot()
        return review

    def show_conversation(self) -> None:
        lang = self.lang.value
        conv = self.current()
        self.conversation.value = (conversation_html(conv, self.store.notes(conversation=conv.id), lang) if conv
                                   else f"<p>{html.escape(t('weekly.none_failed', lang))}</p>")

    def current(self) -> FailedConversation | None:
        return next((c for c in self.items if c.id == self.conversations.value), None)

    def save_note(self) -> Any:
        lang = self.lang.value
        conv = self.current()
        if conv is None:
            self.message.value = _ERROR.format(html.escape(t("weekly.pick_first", lang)))
            return None
        just = getattr(self, "_saved", None)
        if not self.note.value.strip() and just is not None and just[0] == conv.id and time.monotonic() - just[1] < 3:
            return None  # a double click on the note just saved: it is saved, and the confirmation stays (it turned red)
        note = self.store.add_note(conv, self.note.value, self.author.value, category=self.category.value)
        self._saved = (conv.id, time.monotonic())
        self.note.value = ""
        self.category.value = ""
        self.show_week()
        self.message.value = _OK.format(html.escape(t("weekly.saved", lang, where=conv.where)))
        return note

    def pick(self, suggestion: Suggestion) -> None:
        """A suggestion clicked: its name in the category box, ready to file its notes under it."""
        self.pending = suggestion
        self.group_name.value = suggestion.name
        self.message.value = _OK.format(html.escape(t("weekly.picked", self.lang.value, name=suggestion.name,
                                                      n=len(suggestion.notes))))

    def group_one(self) -> Any:
        lang = self.lang.value
        if self.group_note.value in (None, -1):
            self.message.value = _ERROR.format(html.escape(t("weekly.no_note_to_group", lang)))
            return None
        before = next((n.category for n in self.store.notes() if n.id == self.group_note.value), "")
        if not self.group_name.value.strip() and not before:  # no category named, none to take it out of
            self.message.value = _ERROR.format(html.escape(t("weekly.name_a_category", lang)))
            return None
        note = self.store.assign(self.group_note.value, self.group_name.value, self.author.value)
        self.show_week()
        # an empty box takes the note out of its category: said so (it read "filed under “-”" while the note left
        # its category and the category's row left the counts)
        said = t("weekly.grouped", lang, n=1, category=note.category) if note.category else \
            t("weekly.ungrouped", lang, id=note.id, category=before)
        self.message.value = _OK.format(html.escape(said))
        return note

    def apply_suggestion(self) -> int:
        """File every note of the picked suggestion under the name in the box (the suggestion's, or the team's own)."""
        lang = self.lang.value
        if self.pending is None:
            self.message.value = _ERROR.format(html.escape(t("weekly.no_suggestion", lang)))
            return 0
        name = self.group_name.value or self.pending.name
        filed, kept = self.store.file_unfiled(self.pending.notes, name, self.author.value)
        self.pending = None
        self.show_week()
        said = t("weekly.grouped", lang, n=len(filed), category=name)
        if kept:  # filed by someone since the page was drawn: left where they put it, and said so
            said += ("" if lang == "zh" else " ") + t("weekly.kept_category", lang, n=len(kept),
                                                     notes=joined((f"#{k.id} → {k.category}" for k in kept), lang, "list"))
        self.message.value = _OK.format(html.escape(said))
        return len(filed)

    # --- counting, promoting, exporting ---------------------------------------------------------
    def _plot(self) -> None:
        from .plots import plot_bars
        lang = self.lang.value
        # the notes on this source's conversations, as the counts beside it: a chart of another source's categories
        # stood under "No note is in a category yet."
        trend = category_trend(self.store, sorted({c.week for c in self.items if c.week}), [c.id for c in self.items])
        if not any(v for row in trend.values() for v in row.values()):
            self.trend.outputs = ()
            return
        title = t("weekly.trend_title", lang)
        _show(self.trend, figure(lambda ax: plot_bars(trend, ax=ax, title=title, ylabel=t("weekly.col.count", lang),
                                                      xlabel=t("weekly.col.week", lang),
                                                      lang=lang, own_names=True), size=(7, 3)))

    def promote_one(self) -> str | None:
        lang = self.lang.value
        conv = self.current()
        if conv is None:
            self.message.value = _ERROR.format(html.escape(t("weekly.pick_first", lang)))
            return None
        before = self.store.promoted().get(conv.id)
        case_id = promote_conversation(conv, self.suite, self.store)
        # kept already (a second click, a colleague): said so, not "added" again
        key = "weekly.promoted_already" if case_id == before else "weekly.promoted"
        # the suite by its name and as a link: its folder is on the machine serving the page, not the reader's
        self.message.value = (_OK.format(html.escape(t(key, lang, id=case_id, suite=self.suite.name)))
                              + f"<ul><li>{_download(self.suite)}</li></ul>")
        return case_id

    def export_week(self) -> dict[str, Path]:
        lang = self.lang.value
        review = self.review()
        if not review.week or not review.conversations:  # it exported an empty "Weekly review undated ()"
            self.message.value = _ERROR.format(html.escape(t("weekly.nothing_to_export", lang)))
            return {}
        paths = export_week(review, self.store.folder / "exports", lang)
        # links the browser saves from: the page may be served from another machine, whose folders mean nothing here
        links = "".join(f"<li>{_download(p)}</li>" for p in paths.values())
        self.message.value = _OK.format(html.escape(t("weekly.exported", lang))) + f"<ul>{links}</ul>"
        return paths



def _download(path: Path) -> str:
    """A link the browser saves the file from (the page may run on another machine than the browser), the
    file's content in the link itself. A file past the link's limit (2 MB) is carried zipped (a week's page of
    6.7 MB zips to under a megabyte); one too large even so is named, with where it is kept."""
    import io
    import zipfile

    from ..resources import data_url
    data = path.read_bytes()
    url = data_url(data, {".csv": "text/csv", ".jsonl": "application/jsonl"}.get(path.suffix, "text/html"))
    name = path.name
    if url is None:
        packed = io.BytesIO()
        with zipfile.ZipFile(packed, "w", zipfile.ZIP_DEFLATED) as z:
            z.writestr(path.name, data)
        url, name = data_url(packed.getvalue(), "application/zip"), path.name + ".zip"
    if url is None:  # too large to carry in a link even zipped: named, and kept in the review folder's exports/
        return html.escape(path.name)
    return f"<a download='{html.escape(name)}' href='{url}'>{html.escape(name)}</a>"
