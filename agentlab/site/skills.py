"""A skill: a tool the site hosts, described by metadata the model and a person can both read.

The metadata is one frozen record, :class:`SkillMeta` (the fields a skill site lists plus what the
site enforces: the side effect and rate class, the timeout, the limits). A skill is that
record, a handler ``handler(arguments, ctx) -> dict`` and, optionally, a business check::

    @register_skill(read_meta(Path(__file__).with_name("skill.json")), validate=check)
    def current_weather(arguments: dict, ctx: SkillContext) -> dict: ...

A new skill is a new folder holding ``skill.json`` (the definition) and ``handler.py``
(the handler): :func:`load_skills` finds it; the site's code does not change.
"""
from __future__ import annotations

import importlib.util
import json
import re
import threading
import warnings
from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Literal

from ..errors import Problem
from ..i18n import LANGS, Lang
from ..schema import compile_schema
from ..tools import Registry, Tool
from .flat import NestedResultWarning, nested_warning

__all__ = ["RATE_CLASSES", "RateClass", "Skill", "SkillContext", "SkillMeta", "load_skills", "read_meta",
           "register_skill", "shipped_dir", "skill_texts", "skill_tools"]

RateClass = Literal["query", "write", "paid"]
#: calls per minute per key and skill, by class (docs/site.md#keys-and-limits); a skill's ``limits`` may set its own
RATE_CLASSES: dict[str, int] = {"query": 60, "write": 10, "paid": 5}
_NAME = re.compile(r"^[a-z][a-z0-9_]{0,63}$")


@dataclass(frozen=True)
class SkillMeta:
    """What the site says about a skill, in ``GET /api/skills/{name}`` and to the model.

    Args:
        description: when to use it, written for the model (what it does comes second).
        rate_class: ``query`` (reads), ``write`` (changes something: needs an Idempotency-Key),
            ``paid`` (costs money per call: a limit of its own).
        limits: ``{"per_minute": n}`` overrides the class's rate; shown to the model.
        idempotency_fields: for a write, the arguments that make a repeat the *same* action
            (one refund per order: ``["order_id"]``); empty means all of them. The client's
            loop builds its key from these; the site never invents one.
        fallback_hint: what the model can try when the skill times out or its source is down.
        i18n: another language's words, ``{"zh": {"display_name": ..., "description": ..., "notes": [...],
            "changelog": {version: change}, "fields": {field: description}}}``: the pages, the full metadata and
            the problems an input gets (a field's description is its hint) say them in that language; the schema's
            rules are the same in every language, and the list the model reads keeps its schema as written.
    """

    skill_name: str
    display_name: str
    description: str
    version: str = "1.0.0"
    tags: tuple[str, ...] = ()
    input_schema: Mapping[str, Any] = field(default_factory=lambda: {"type": "object", "properties": {}})
    output_schema: Mapping[str, Any] = field(default_factory=lambda: {"type": "object"})
    rate_class: RateClass = "query"
    timeout: float = 5.0
    limits: Mapping[str, Any] = field(default_factory=dict)
    idempotency_fields: tuple[str, ...] = ()
    idempotency_scope: Literal["global", "session"] = "global"
    fallback_hint: Mapping[str, str] | None = None
    examples: tuple[Mapping[str, Any], ...] = ()
    notes: tuple[str, ...] = ()
    changelog: tuple[Mapping[str, str], ...] = ()
    i18n: Mapping[str, Mapping[str, Any]] = field(default_factory=dict)
    _schemas: dict[str, Mapping[str, Any]] = field(default_factory=dict, init=False, repr=False, compare=False)

    def __post_init__(self) -> None:
        if not _NAME.match(self.skill_name):
            raise ValueError(f"skill_name must be snake_case letters and digits, got {self.skill_name!r}")
        if self.rate_class not in RATE_CLASSES:
            raise ValueError(f"rate_class must be one of {list(RATE_CLASSES)}, got {self.rate_class!r}")
        if not self.timeout > 0:
            raise ValueError(f"timeout must be positive, got {self.timeout!r}")
        compile_schema(dict(self.input_schema))  # a broken schema fails here, at registration
        compile_schema(dict(self.output_schema))
        self._check_i18n()

    def _check_i18n(self) -> None:
        """Another language's words, checked at registration: a description that was not text compiled only when a
        Chinese call came, and every Chinese call then failed (500) while English ones worked."""
        shapes: dict[str, Callable[[Any], bool]] = {
            "display_name": lambda v: isinstance(v, str), "description": lambda v: isinstance(v, str),
            "notes": lambda v: isinstance(v, list | tuple) and all(isinstance(n, str) for n in v),
            "changelog": lambda v: isinstance(v, Mapping) and all(isinstance(c, str) for c in v.values()),
            "fields": lambda v: isinstance(v, Mapping) and all(isinstance(d, str) for d in v.values()),
            "examples": lambda v: isinstance(v, list | tuple) and all(isinstance(e, Mapping) for e in v)}
        for lang, said in self.i18n.items():
            if lang not in LANGS or not isinstance(said, Mapping):
                raise ValueError(f"i18n must map a language ({', '.join(LANGS)}) to its words, got {lang!r}")
            for key, value in said.items():
                if key not in shapes or not shapes[key](value):
                    raise ValueError(f"i18n.{lang}.{key}: expected one of {sorted(shapes)} with text for its words "
                                     "(notes a list, changelog {version: change}, fields {field: description}, "
                                     "examples a list of {arguments, result})")
            compile_schema(dict(self.input_schema_in(lang)))

    def __repr__(self) -> str:
        return f"SkillMeta({self.skill_name!r} v{self.version}, {self.rate_class})"

    @property
    def writes(self) -> bool:
        return self.rate_class != "query"

    @property
    def per_minute(self) -> int:
        return int(self.limits.get("per_minute", RATE_CLASSES[self.rate_class]))

    def text(self, name: Literal["display_name", "description"], lang: Lang = "en") -> str:
        return self.i18n.get(lang, {}).get(name) or getattr(self, name)

    def notes_in(self, lang: Lang = "en") -> list[str]:
        """The notes in ``lang`` where the skill gives them, else as written."""
        return list(self.i18n.get(lang, {}).get("notes") or self.notes)

    def changelog_in(self, lang: Lang = "en") -> list[dict]:
        """The changelog, each change in ``lang`` where the skill gives it (by version), else as written."""
        said = self.i18n.get(lang, {}).get("changelog") or {}
        return [{**c, "change": said.get(c.get("version"), c.get("change"))} for c in self.changelog]

    def input_schema_in(self, lang: Lang = "en") -> Mapping[str, Any]:
        """The input schema with each field described in ``lang`` (its rules unchanged), made once per language: what
        the detail page shows and what a problem's hint quotes (a Chinese caller was told 缺少必填字段。Order number...)."""
        fields = self.i18n.get(lang, {}).get("fields")
        props = self.input_schema.get("properties")
        if not fields or not isinstance(props, Mapping):
            return self.input_schema
        made = self._schemas.get(lang)
        if made is None:
            made = self._schemas[lang] = {**self.input_schema, "properties": {
                k: {**v, "description": fields[k]} if k in fields and isinstance(v, Mapping) else v
                for k, v in props.items()}}
        return made

    def to_dict(self, lang: Lang = "en") -> dict:
        """The metadata as JSON, in ``lang``; the limits include the rate actually enforced."""
        return {"skill_name": self.skill_name, "display_name": self.text("display_name", lang),
                "description": self.text("description", lang), "version": self.version, "tags": list(self.tags),
                "input_schema": dict(self.input_schema), "output_schema": dict(self.output_schema),
                "rate_class": self.rate_class, "side_effect": self.writes, "timeout": self.timeout,
                "limits": {**self.limits, "per_minute": self.per_minute},
                "idempotency": {"required": self.writes, "fields": list(self.idempotency_fields),
                                "scope": self.idempotency_scope} if self.writes else None,
                "fallback_hint": (self.fallback_hint or {}).get(lang) or (self.fallback_hint or {}).get("en"),
                # an example's result in the page's language where the skill gives one (its summary is said so)
                "examples": [dict(e) for e in self.i18n.get(lang, {}).get("examples") or self.examples],
                "notes": self.notes_in(lang),
                "changelog": self.changelog_in(lang)}


@dataclass(frozen=True)
class SkillContext:
    """What a handler may use besides its arguments: the site's data folder, the shared state
    objects (the desks), the idempotency key of a write, a lock for files it appends to, and the caller's
    language (a result's ``summary`` is a sentence, said in it; its data stays as it is)."""

    data_dir: Path
    state: Mapping[str, Any] = field(default_factory=dict)
    idempotency_key: str | None = None
    lock: threading.Lock = field(default_factory=threading.Lock)
    lang: Lang = "en"


Handler = Callable[[dict, SkillContext], Any]
Validate = Callable[[dict, SkillContext], Iterable[Problem] | None]


@dataclass(frozen=True)
class Skill:
    """A skill the site can run: its metadata, its handler, its business check."""

    meta: SkillMeta
    handler: Handler
    validate: Validate | None = None

    @property
    def name(self) -> str:
        return self.meta.skill_name

    def __repr__(self) -> str:
        return f"Skill({self.name!r}, {self.meta.rate_class})"


def read_meta(path: str | Path) -> SkillMeta:
    """A :class:`SkillMeta` from a ``skill.json`` (lists become tuples; unknown fields are an error)."""
    data = json.loads(Path(path).read_text(encoding="utf-8-sig"))
    for key in ("tags", "examples", "notes", "changelog", "idempotency_fields"):
        if key in data:
            data[key] = tuple(data[key])
    return SkillMeta(**data)


def register_skill(meta: SkillMeta, *, validate: Validate | None = None) -> Callable[[Handler], Handler]:
    """Mark ``handler`` as the skill ``meta`` describes; :func:`load_skills` collects it.

    A skill whose ``output_schema`` declares nested fields is flagged here with a
    :class:`~agentlab.site.flat.NestedResultWarning` (flat results are the rule), and still registered.
    Nothing global changes: the skill is attached to the function (``fn.__skill__``), so
    importing a handler twice, or in a test, registers nothing anywhere.
    """
    nested = nested_warning(meta.skill_name, meta.output_schema)
    if nested:  # flagged, not refused (agentlab/site/flat.py says why)
        warnings.warn(nested, NestedResultWarning, stacklevel=2)

    def decorate(fn: Handler) -> Handler:
        fn.__skill__ = Skill(meta, fn, validate)  # type: ignore[attr-defined]
        return fn
    return decorate


def shipped_dir() -> Path:
    """The skills that come with agentlab: the weather-like read, the notification write and the page-text read."""
    return Path(__file__).with_name("shipped")


def load_skills(*folders: str | Path) -> list[Skill]:
    """Every skill in the folders' subfolders (``<folder>/<skill>/handler.py``), sorted by name.

    A folder that is itself a skill (it holds ``handler.py``) is loaded too. Two skills
    with one name are an error: which one runs must never depend on the order of a scan.
    """
    found: dict[str, Skill] = {}
    for folder in map(Path, folders):
        if not folder.is_dir():
            raise FileNotFoundError(f"no skills folder {folder}")
        handlers = [folder / "handler.py"] if (folder / "handler.py").is_file() else sorted(folder.glob("*/handler.py"))
        for path in handlers:
            for skill in _skills_in(path):
                if skill.name in found:
                    raise ValueError(f"skill {skill.name!r} is defined twice (second in {path.parent.name}/)")
                found[skill.name] = skill
    return [found[n] for n in sorted(found)]


def _skills_in(path: Path) -> list[Skill]:
    spec = importlib.util.spec_from_file_location(f"agentlab_skill_{path.parent.name}", path)
    if spec is None or spec.loader is None:
        raise ImportError(f"cannot load {path}")
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return [obj.__skill__ for obj in vars(module).values() if isinstance(getattr(obj, "__skill__", None), Skill)]


def skill_tools(skills: Iterable[Skill], lang: Lang = "en") -> Registry:
    """The skills as a Registry of bare contracts (no implementation): for search and for 404's closest name."""
    return Registry([Tool(s.name, s.meta.text("description", lang), dict(s.meta.input_schema)) for s in skills])


def skill_texts(skills: Iterable[Skill]) -> dict[str, dict[str, str]]:
    """What the search reads of each skill, per language: its name (twice: the shortest statement of what it does),
    display name, description and tags (``agentlab.routing.BilingualIndex``)."""
    return {s.name: {lg: " ".join((s.name, s.name, s.meta.text("display_name", lg), s.meta.text("description", lg),
                                   *s.meta.tags)) for lg in ("en", "zh")} for s in skills}
