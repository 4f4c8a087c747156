"""The weather-like read skill: a live source that can be slow or down, and a cache marked with its time.

The source is a small table (the demo has no network); ``weather_source.json`` in the
site's data folder makes it slow (``{"mode": "slow", "delay": 10}``) or down
(``{"mode": "down"}``), so the timeout and the fallback can be seen. Every live answer
is cached; ``allow_cached=true`` answers from the cache, saying when it was measured.

Replicas sharing the data folder share the cache file: it is replaced whole (written to a
temporary file, then renamed) under a lock file, so a reader never meets half a file and no
replica's update is lost under another's; a cache that cannot be read counts as empty.
"""
from __future__ import annotations

import datetime as _dt
import json
import time
from pathlib import Path

from agentlab.errors import Problem, ToolFailure
from agentlab.i18n import LANGS, Lang, both, joined, t, t_or
from agentlab.site.files import load_json, locked, write_atomic
from agentlab.site.skills import SkillContext, read_meta, register_skill
from agentlab.tools import rule

__all__ = ["CITIES", "current_weather"]

#: city -> (temperature, condition, humidity, wind); Chinese names map to the same rows
CITIES = {"Beijing": (7.0, "cloudy", 35.0, "north 3"), "Shanghai": (14.0, "light rain", 80.0, "east 2"),
          "Guangzhou": (22.0, "sunny", 60.0, "south 1"), "Shenzhen": (23.0, "sunny", 65.0, "south 2"),
          "Hangzhou": (13.0, "overcast", 75.0, "east 2")}
_ALIASES = {"北京": "Beijing", "上海": "Shanghai", "广州": "Guangzhou", "深圳": "Shenzhen", "杭州": "Hangzhou"}


def _city(name: str) -> str | None:
    name = name.strip()
    if name.endswith("市"):  # 北京市 is 北京
        name = name[:-1]
    return _ALIASES.get(name) or next((c for c in CITIES if c.lower() == name.lower()), None)


def check_city(args: dict, ctx: SkillContext) -> list[Problem]:
    if _city(args["city"]) is None:
        return [rule("city", **{lang: t("skill.weather.unknown_city", lang, known=joined(CITIES, lang, "list"))
                                for lang in LANGS})]
    return []


def _source(ctx: SkillContext) -> dict:
    path = Path(ctx.data_dir) / "weather_source.json"
    try:
        return json.loads(path.read_text(encoding="utf-8"))
    except (OSError, ValueError):
        return {"mode": "ok"}


def _cache(path: Path) -> dict:
    cache = load_json(path, {})
    return cache if isinstance(cache, dict) else {}


def _entry(value: object) -> bool:
    """A cached answer that can be shown (a hand-edited or damaged entry counts as none)."""
    return isinstance(value, dict) and isinstance(value.get("temperature"), (int, float)) \
        and all(isinstance(value.get(k), str) for k in ("condition", "as_of"))


@register_skill(read_meta(Path(__file__).with_name("skill.json")), validate=check_city)
def current_weather(arguments: dict, ctx: SkillContext) -> dict:
    """Today's weather in a known city, live or (when asked) from the cache."""
    city = _city(arguments["city"]) or arguments["city"]
    cache_path = Path(ctx.data_dir) / "weather_cache.json"
    if arguments.get("allow_cached"):
        cache = _cache(cache_path)  # no lock: the file is only ever replaced whole
        if not _entry(cache.get(city)):
            raise ToolFailure("NOT_FOUND", both("skill.weather.nothing_is_cached_for", city=city))
        entry = cache[city]
        return {**entry, "cached": True,
                "summary": t("skill.weather.summary_cached", ctx.lang, city=_said(city, ctx.lang),
                             condition=_said(entry["condition"], ctx.lang), temperature=entry["temperature"],
                             as_of=entry["as_of"])}
    source = _source(ctx)
    if source.get("mode") == "down":
        raise ConnectionError("weather source refused the connection")
    if source.get("mode") == "slow":
        time.sleep(float(source.get("delay", 10)))
    temperature, condition, humidity, wind = CITIES[city]
    now = _dt.datetime.now(_dt.UTC).isoformat(timespec="seconds")
    result = {"city": city, "temperature": temperature, "condition": condition, "humidity": humidity, "wind": wind,
              "cached": False, "as_of": now}
    with ctx.lock, locked(cache_path.with_name(cache_path.name + ".lock")):  # other replicas write it too
        cache = _cache(cache_path)
        cache[city] = result
        write_atomic(cache_path, json.dumps(cache, ensure_ascii=False))
    return {**result, "summary": t("skill.weather.summary", ctx.lang, city=_said(city, ctx.lang),
                                   condition=_said(condition, ctx.lang), temperature=temperature, humidity=humidity,
                                   wind=_said(wind, ctx.lang))}


def _said(word: str, lang: Lang) -> str:
    """A city, a condition or a wind of the table as the summary says it in ``lang`` (the data keeps the table's)."""
    return t_or(f"skill.weather.word.{word}", word, lang)
