"""Tool contracts and the registry that checks calls against them.

A :class:`Tool` is what the model is promised: a name, a description that says
*when* to use it, a JSON Schema for its arguments, whether calling it changes
the world, and optional business rules. The :class:`Registry` holds the tools,
exports the ``tools`` list for the chat-completions API, and turns the model's
raw ``arguments`` string into either clean arguments or a :class:`ToolError`::

    raw string -> parse (BAD_JSON) -> tool exists? (UNKNOWN_TOOL)
               -> [clean] -> JSON Schema (INVALID_ARGS, structure)
               -> business rules (INVALID_ARGS, semantic)
               -> business limits (RULE_VIOLATION, rule_blocked) -> ok
"""
from __future__ import annotations

import json
import re
from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass, field
from functools import lru_cache
from pathlib import Path
from typing import Any, Literal

from .clean import Cleaned
from .clean import clean as clean_values
from .errors import Problem, ToolError, ToolFailure, json_type, make_error, render
from .i18n import Lang, LocalizedError, check_lang, joined, t
from .jsonutil import MAX_DEPTH, depth, lone_surrogates, parse_strict
from .names import suggest
from .records import quick
from .schema import close_objects, compile_schema, transform

__all__ = ["LEGACY_TYPES", "WRITE_VERBS", "BusinessCheck", "BusinessLimit", "Checked", "Registry", "ScopedKey", "Tool",
           "ToolsInputError", "from_legacy_types", "guess_write", "load_specs", "over_limit", "rule"]

class ScopedKey(str):
    """A business key with a scope inside it that the model must never read (a client's id, a session), and the part
    it may: ``shown``, the key as its caller gave it. A conflict's message named the whole key
    (``client:key:1b46ef8d5420:k1``)."""

    shown: str

    def __new__(cls, key: str, shown: str) -> ScopedKey:
        made = super().__new__(cls, key)
        made.shown = shown
        return made


BusinessCheck = Callable[[dict], Iterable[Problem] | None]
#: the business limits a call would pass (see :func:`over_limit`); empty or None: within them
BusinessLimit = Callable[[dict], Iterable[Problem] | None]
#: the longest arguments text checked: past it a call is refused unread (no desk's call comes near a megabyte)
MAX_ARGS_CHARS = 1_000_000


@dataclass(frozen=True)
class Tool:
    """One tool contract.

    Args:
        fn: called as ``fn(**args)`` with validated arguments; returns JSON-able data. An ``async def`` is run to
            its end on an event loop of its own (in a thread: the caller may run a loop already), under the same deadline.
            It may raise :class:`~agentlab.errors.ToolFailure` to report a precise error.
        side_effect: True if calling it changes state (refund, booking). Such calls are
            only retried behind an idempotency key.
        check: business validation run after the schema: returns problems (see :func:`rule`). The model
            can correct what it finds (a date in the future, an amount above the order's): ``INVALID_ARGS``.
        limits: the business limits the desk declares for this write (a category's monthly budget, what is
            left to refund on an order), run after ``check`` on valid arguments and before anything is
            written: returns the limits the call would pass (see :func:`over_limit`). Unlike ``check``, no
            correction of the arguments makes such a call right, so it is refused as ``RULE_VIOLATION``
            (fatal, stage ``rule_blocked``): nothing runs and a person decides. Wherever the business rules
            run (the guarded loop's ``validate`` guard, :func:`~agentlab.approval.approve`, the skill site);
            the naive loop runs none.
        business_key: for side-effect tools, the key that makes a repeat the *same*
            action (one refund per order: ``lambda a: a["order_id"]``). Default: all arguments. A key scoped by
            what the model must not read (a client's id) is a :class:`ScopedKey`: the model is told its ``shown``.
        needs_approval: returns a reason when a call must wait for a person, else None.
        timeout: seconds, overriding the loop's default for this tool.
        keyed: ``fn`` takes ``idempotency_key=`` from the loop and performs one effect per
            key (like a payment API's Idempotency-Key header). Only keyed side-effect tools
            are resent after a transient failure: the first attempt may have taken effect.
        idempotent: a write that *sets* a value (a budget, a setting): running it twice has the effect of
            running it once, so it is neither claimed under a key nor deduplicated, and may be resent.
        key_scope: ``"global"`` (the business key alone: one refund per order, whoever asks) or
            ``"session"`` (the business key within one conversation: the same taxi booked twice in
            one chat is one expense; two people's taxis are two).
    """

    name: str
    description: str
    parameters: Mapping[str, Any] = field(default_factory=lambda: {"type": "object", "properties": {}})
    fn: Callable[..., Any] | None = None
    side_effect: bool = False
    check: BusinessCheck | None = None
    limits: BusinessLimit | None = None
    business_key: Callable[[dict], str] | None = None
    needs_approval: Callable[[dict], str | None] | None = None
    timeout: float | None = None
    keyed: bool = False
    key_scope: Literal["global", "session"] = "global"
    idempotent: bool = False

    def __repr__(self) -> str:
        kind = "write" if self.side_effect else "read"
        return f"Tool({self.name!r}, {kind}, params={list(self.parameters.get('properties', {}))})"

    def spec(self) -> dict:
        """The OpenAI-format tool spec."""
        return {"type": "function", "function": {
            "name": self.name, "description": self.description, "parameters": dict(self.parameters)}}


def rule(field_: str, en: str, zh: str | None = None) -> Problem:
    """A business-rule problem, e.g. ``rule("amount", "must not exceed 199.0")``."""
    return Problem(field_, "rule", detail={"en": en, "zh": zh or en})


def over_limit(field_: str, got: Any, limit: Any, en: str, zh: str | None = None) -> Problem:
    """A business limit the call would pass, for :attr:`Tool.limits`: ``got`` is what the call asks for and
    ``limit`` the most it may (both reach the model as data), ``en``/``zh`` say why and what to do next."""
    return Problem(field_, "over_limit", got=got, limit=("maximum", limit), detail={"en": en, "zh": zh or en})


@quick
@dataclass(frozen=True)
class Checked:
    """The outcome of checking one call: ``ok`` with ``args``, or an ``error``."""

    name: str
    raw: str
    args: dict | None
    error: ToolError | None
    cleaned: tuple[Cleaned, ...] = ()
    parse_ok: bool = True
    lang: Lang = "en"

    @property
    def ok(self) -> bool:
        return self.error is None

    def __repr__(self) -> str:
        return f"Checked({self.name!r}, ok)" if self.ok else f"Checked({self.name!r}, {self.error!r})"

    def render(self, lang: Lang | None = None) -> str:
        """What the model would be told about this call before it runs."""
        lang = lang or self.lang
        if self.error is not None:
            return render(self.error, lang)
        extra = {"cleaned": [c.to_dict() for c in self.cleaned]} if self.cleaned else {}
        return json.dumps({"ok": True, "tool": self.name, "args": self.args, **extra}, ensure_ascii=False)


class Registry:
    """The tools an agent may call, each schema compiled once at registration.

    Args:
        resources: the documents a schema's ``$ref`` may name, by URI
            (``{"https://example.com/money.json": {...}}``); nothing is ever fetched, so a
            ``$ref`` to any other document is refused when its tool is added.
    """

    def __init__(self, tools: Iterable[Tool] = (), *, lang: Lang = "en", clean: bool = False,
                 resources: Mapping[str, Any] | None = None):
        self.lang = check_lang(lang)
        self.clean = clean
        self.resources = dict(resources or {})
        self._tools: dict[str, Tool] = {}
        self._validators: dict[str, Callable[[Any], list[Problem]]] = {}
        for tool in tools:
            self.add(tool)

    def __repr__(self) -> str:
        return f"Registry({list(self._tools)})"

    def __len__(self) -> int:
        return len(self._tools)

    def __contains__(self, name: str) -> bool:
        return name in self._tools

    def __getitem__(self, name: str) -> Tool:
        return self._tools[name]

    def __iter__(self):
        return iter(self._tools.values())

    @property
    def names(self) -> list[str]:
        return list(self._tools)

    def add(self, tool: Tool) -> Tool:
        """Register ``tool``; a broken schema raises :class:`~agentlab.schema.SchemaError` here."""
        if tool.name in self._tools:
            raise ValueError(f"tool {tool.name!r} is registered twice")
        self._validators[tool.name] = compile_schema(dict(tool.parameters), resources=self.resources)
        self._tools[tool.name] = tool
        return tool

    def specs(self) -> list[dict]:
        """The ``tools`` list for ``client.chat.completions.create(tools=...)``."""
        return [t_.spec() for t_ in self._tools.values()]

    def subset(self, names: Iterable[str]) -> Registry:
        """A registry of a few tools (for routing only the relevant ones to the model)."""
        return Registry([self._tools[n] for n in names], lang=self.lang, clean=self.clean, resources=self.resources)

    @classmethod
    def from_specs(cls, specs: Iterable[Mapping], *, close: bool = True, legacy_types: bool = False,
                   **kwargs: Any) -> Registry:
        """Build from OpenAI-format specs, wrapped (``{"type": "function", ...}``) or bare.

        Args:
            close: reject unknown fields in every object that lists its properties
                (see :func:`~agentlab.schema.close_objects`).
            legacy_types: accept BFCL/Gorilla type names (``dict``, ``float``, ``any``).
        """
        tools = []
        for spec in specs:
            fn = spec.get("function", spec) if spec.get("type") == "function" else spec
            if "name" not in fn:
                raise ValueError("a tool spec needs a name")
            params = fn.get("parameters") or {"type": "object", "properties": {}}
            if legacy_types:
                params = from_legacy_types(params)
            if close:
                params = close_objects(params)
            tools.append(Tool(name=fn["name"], description=fn.get("description", ""), parameters=params))
        return cls(tools, **kwargs)

    @classmethod
    def from_json(cls, path: str | Path, **kwargs: Any) -> Registry:
        """Load a JSON file holding a list of specs (or ``{"tools": [...]}``)."""
        data = json.loads(Path(path).read_text(encoding="utf-8-sig"))
        if isinstance(data, dict):
            data = data.get("tools", [data])
        return cls.from_specs(data, **kwargs)

    # ------------------------------------------------------------------ checks
    def check(self, name: str, raw: str | Mapping, *, lang: Lang | None = None,
              clean: bool | None = None, rules: bool = True) -> Checked:
        """Check one call. ``raw`` is the model's ``arguments`` string (a dict is accepted too).

        ``rules=False`` stops after the schema: the loop runs the business rules
        itself, after an idempotency replay has had its chance (a replayed refund
        must not be refused because the order is now refunded).
        """
        lang = lang or self.lang
        if isinstance(raw, str):  # the model's text, the usual call (asked first: Mapping is an ABC, slow to ask)
            given = False
            if len(raw) > MAX_ARGS_CHARS:  # never parsed, kept or walked: a runaway model's megabytes
                return Checked(name, raw[:MAX_ARGS_CHARS], None, self._too_large(), parse_ok=False, lang=lang)
            raw_text = raw
            args, failure = parse_strict(raw if raw.strip() else "{}", max_depth=MAX_DEPTH)  # "" from some servers
            if failure is not None:
                err = make_error("BAD_JSON", detail=failure, example=self._example(name),
                                 position=failure.position)
                return Checked(name, raw_text, None, err, parse_ok=False, lang=lang)
            if not isinstance(args, dict):
                err = make_error("BAD_JSON", _key="BAD_JSON.not_object", got=json_type(args))
                return Checked(name, raw_text, None, err, parse_ok=False, lang=lang)
        elif not isinstance(raw, Mapping):  # neither text nor an object (bytes, a list): refused as not an object
            err = make_error("BAD_JSON", _key="BAD_JSON.not_object", got=type(raw).__name__)
            return Checked(name, "", None, err, parse_ok=False, lang=lang)
        else:
            given = True
            args = dict(raw)
            if depth(args, stop=MAX_DEPTH) > MAX_DEPTH:  # a dict that holds itself is refused here too
                err = make_error("BAD_JSON", detail=f"nested more than {MAX_DEPTH} levels deep", example=self._example(name))
                return Checked(name, "", None, err, parse_ok=False, lang=lang)
            # a framework's dict may hold what JSON has not (a date, a set): its text, never a TypeError
            raw_text = json.dumps(args, ensure_ascii=False, default=str)
            if len(raw_text) > MAX_ARGS_CHARS:
                return Checked(name, raw_text[:MAX_ARGS_CHARS], None, self._too_large(), parse_ok=False, lang=lang)
        # plain ASCII text without a \u escape cannot hold a lone surrogate: nothing to walk (the usual call)
        broken = lone_surrogates(args) if given or not raw_text.isascii() or "\\u" in raw_text else []
        if broken:  # valid JSON, but not text: nothing downstream could store or send it
            problems = [Problem(p, "broken_text") for p in broken]
            return Checked(name, raw_text, args, make_error("INVALID_ARGS", problems=problems), lang=lang)
        tool = self._tools.get(name)
        if tool is None:
            return Checked(name, raw_text, args, self.unknown_tool(name), lang=lang)
        cleaned: tuple[Cleaned, ...] = ()
        if self.clean if clean is None else clean:
            args, cleaned = clean_values(args, tool.parameters)
        try:
            problems = self._validators[name](args)
        except (RecursionError, ArithmeticError, ValueError, TypeError):
            # a check must never take the run down: whatever the model sent that a check could not
            # handle (a cycle, a number no arithmetic takes) is refused as arguments, never raised
            problems = [Problem("$", "uncheckable")]
        if problems:
            return Checked(name, raw_text, args, make_error("INVALID_ARGS", problems=problems), cleaned, lang=lang)
        rule_error = self.check_rules(name, args) if rules else None
        return Checked(name, raw_text, args, rule_error, cleaned, lang=lang)

    @staticmethod
    def _too_large() -> ToolError:
        return make_error("INVALID_ARGS", problems=[Problem("$", "uncheckable")])

    def check_rules(self, name: str, args: dict) -> ToolError | None:
        """The tool's business rules (``check``, then ``limits``) on schema-valid ``args``: None, or the error."""
        tool = self._tools[name]
        try:
            found = list(tool.check(args) or ()) if tool.check is not None else []
            if found:  # what the model can correct is said first: a limit is judged on the right arguments
                return make_error("INVALID_ARGS", problems=found, stage="semantic")
            over = list(tool.limits(args) or ()) if tool.limits is not None else []
        except ToolFailure as exc:  # a rule that blocks outright (shipped order, no such order)
            return exc.error
        return make_error("RULE_VIOLATION", problems=over) if over else None

    def unknown_tool(self, name: str) -> ToolError:
        """``UNKNOWN_TOOL`` with every tool listed, and the intended one when it is clear.

        The suggestion ranks tools by shared words, then characters (see
        :func:`~agentlab.schema.suggest`), and is left out when two tools are close:
        a model follows it, and calling the wrong tool is worse than reading the list.
        """
        names = self.names
        closest = suggest(name, names)  # cuts the name itself: a megabyte of it costs nothing
        # each language lists the names as it lists things (a Chinese hint read 可用工具：get_order, search_orders)
        if closest:
            hint = {lg: t("hint.closest_tool", lg, name=closest, tools=joined(names, lg, "list")) for lg in ("en", "zh")}
        else:
            hint = {lg: t("hint.tools", lg, tools=joined(names, lg, "list")) for lg in ("en", "zh")}
        extra = {"available_tools": names, **({"did_you_mean": closest} if closest else {})}
        return make_error("UNKNOWN_TOOL", hint=hint, extra=extra, name=name)

    def _example(self, name: str) -> str:
        tool = self._tools.get(name)
        if tool is None:
            return '{"field": "value"}'
        props = tool.parameters.get("properties", {})
        req = tool.parameters.get("required", list(props)[:1])
        sample = {k: _placeholder(props.get(k, {})) for k in req[:3]}
        return json.dumps(sample, ensure_ascii=False)


def _placeholder(schema: Mapping) -> Any:
    if schema.get("enum"):
        return schema["enum"][0]
    if schema.get("examples"):
        return schema["examples"][0]
    kind = schema.get("type")
    return {"string": "...", "integer": 1, "number": 1.0, "boolean": True,
            "array": [], "object": {}}.get(kind if isinstance(kind, str) else "", "...")


# --- a tools list somebody else wrote -------------------------------------------------------
class ToolsInputError(LocalizedError):
    """A tools list that cannot be used, said in one line in either language (where, and what was expected)."""


def load_specs(specs: Any, *, source: str = "tools", lang: Lang = "en", close: bool = True) -> Registry:
    """A Registry from parsed JSON that claims to be a tools list, checked shape by shape so that a bad
    one gets one clear line naming ``source``: a list of OpenAI-format specs, wrapped or bare,
    ``{"tools": [...]}``, or one spec on its own."""
    from .schema import SchemaError
    if isinstance(specs, dict):
        specs = specs["tools"] if "tools" in specs else [specs]
    if not isinstance(specs, list) or not specs:
        raise ToolsInputError("input.no_tools" if specs == [] else "input.tools_shape", path=source, got=_shown(specs),
                              what="what.tools")
    names: set[str] = set()
    for i, spec in enumerate(specs, 1):
        fn = spec.get("function") if isinstance(spec, dict) and spec.get("type") == "function" else spec
        if not isinstance(fn, dict) or not isinstance(fn.get("name"), str) or not fn["name"]:
            raise ToolsInputError("input.tool_item", path=source, index=i, got=_shown(spec))
        for field_, expected, kind in (("description", "string", str), ("parameters", "object", dict)):
            if fn.get(field_) is not None and not isinstance(fn[field_], kind):
                raise ToolsInputError("input.tool_field", path=source, index=i, name=fn["name"], field=field_,
                                      got=_shown(fn[field_]), expected=expected)
        if fn["name"] in names:
            raise ToolsInputError("input.tool_twice", path=source, name=fn["name"])
        names.add(fn["name"])
        try:  # one tool at a time, so that the error can say which schema is broken
            Registry.from_specs([spec], close=close)
        except SchemaError as exc:
            raise ToolsInputError("input.bad_schema", path=source, name=fn["name"], detail=exc) from None
    return Registry.from_specs(specs, lang=lang, close=close)


def _shown(value: Any, limit: int = 60) -> str:
    text = json.dumps(value, ensure_ascii=False)
    return text if len(text) <= limit else text[: limit - 3] + "..."


# --- BFCL / legacy type names --------------------------------------------------------
LEGACY_TYPES = {
    "dict": "object", "float": "number", "double": "number", "tuple": "array", "list": "array",
    "String": "string", "str": "string", "char": "string", "Array": "array", "ArrayList": "array",
    "HashMap": "object", "Map": "object", "long": "integer", "int": "integer", "Integer": "integer",
    "Boolean": "boolean", "bool": "boolean", "Long": "integer", "Float": "number", "Double": "number",
}


def from_legacy_types(schema: Any) -> Any:
    """Map BFCL/Gorilla type names (``dict``, ``float``, ``tuple``, ``any``...) to JSON Schema.

    ``any`` and an empty type become "no type constraint". Returns a new schema.
    """
    def retype(node: dict) -> dict:
        t_ = node.get("type")
        if isinstance(t_, str):
            if t_ in ("any", ""):
                del node["type"]
            else:
                node["type"] = LEGACY_TYPES.get(t_, t_)
        return node
    return transform(schema, retype)


# --- reads and writes, guessed from a tool's name -----------------------------------------------
#: verbs a tool that changes the world is named with (when nothing else says which tools write): a write taken for a
#: read is never claimed and may run twice, a read taken for a write costs a claim, so the list errs toward writes
WRITE_VERBS = frozenset("""
    accept activate add adjust append apply approve archive assign attach authorize ban block book buy cancel capture
    change charge checkout claim clear close commit complete confirm connect create credit debit decline delete
    deploy deposit detach disable dismiss drop edit enable enroll escalate exchange execute finalize flag fulfil
    fulfill grant hold import increase insert invite issue link lock make mark merge modify move notify open order
    patch pay place post publish purchase push put record redeem refund register reject release remove rename
    renew reopen replace reschedule reserve reset resolve restore return revoke save schedule send set share ship
    sign start stop submit subscribe suspend terminate transfer trigger unblock unlink unlock unsubscribe update
    upgrade upload upsert void withdraw write""".split())


#: the same for a tool named in Chinese, which has no separators to find its first word by: a name that opens with a
#: verb that only looks (查询订单) is a read; else one that holds a verb that writes anywhere (退款, 订单退款) is a write.
#: A Chinese refund tool was taken for a read, and the probe called a second refund "harmless"
READ_VERBS_ZH = ("查询", "查看", "查找", "获取", "搜索", "检索", "读取", "列出", "统计", "计算", "核对", "验证", "估算")
WRITE_VERBS_ZH = ("退款", "退货", "创建", "新建", "新增", "添加", "删除", "移除", "修改", "更改", "更新", "编辑", "取消",
                  "提交", "支付", "付款", "扣款", "转账", "充值", "下单", "预订", "预约", "记账", "入账", "录入", "发送",
                  "发布", "发放", "发起", "注册", "登记", "上传", "保存", "写入", "设置", "关闭", "开通", "审批", "批准",
                  "拒绝", "撤销", "作废", "冻结", "解冻", "绑定", "解绑", "申请", "转人工", "升级", "分配", "报销")


@lru_cache(maxsize=2048)
def guess_write(name: str) -> bool:
    """Whether a tool changes the world, guessed from its first verb (``cancel_order``, ``updateUser``,
    ``orders.close_ticket``; in Chinese, ``退款`` or ``取消订单``): the one guess the probe and the log review make when
    no tools file says."""
    last = re.split(r"[./:]", name)[-1]
    if any("\u4e00" <= ch <= "\u9fff" for ch in last):  # a name that ends on a look is a read too (退款查询, 订单详情)
        looks = last.startswith(READ_VERBS_ZH) or last.endswith((*READ_VERBS_ZH, "详情", "状态", "列表"))
        return not looks and any(verb in last for verb in WRITE_VERBS_ZH)
    words = re.sub(r"(?<=[a-z0-9])(?=[A-Z])", "_", last).lower().replace("-", "_").split("_")
    return bool(words) and words[0] in WRITE_VERBS
