"""Skill metadata, registration and the folder scan (agentlab/site/skills.py)."""
import pytest
from site_helpers import test_skills, write_skill

from agentlab.schema import SchemaError
from agentlab.site.skills import SkillMeta, load_skills, register_skill, shipped_dir


def test_the_shipped_skills_load_from_their_folders():
    skills = {s.name: s for s in load_skills(shipped_dir())}
    assert set(skills) == {"current_weather", "send_notification", "extract_page_text"}
    weather = skills["current_weather"].meta
    assert weather.rate_class == "query" and weather.per_minute == 60 and weather.fallback_hint
    assert weather.text("display_name", "zh") == "当前天气查询"
    notify = skills["send_notification"].meta
    assert notify.writes and notify.per_minute == 10 and notify.to_dict()["idempotency"]["required"]


def test_a_new_folder_is_a_new_skill_and_the_main_program_does_not_change(tmp_path):
    test_skills(tmp_path)
    names = [s.name for s in load_skills(shipped_dir(), tmp_path)]
    assert names == sorted(names) and {"broken_output", "slow_write", "current_weather"} <= set(names)


def test_a_name_defined_twice_is_refused(tmp_path):
    write_skill(tmp_path / "a", "twin", "return {}")
    write_skill(tmp_path / "b", "twin", "return {}")
    with pytest.raises(ValueError, match="twice"):
        load_skills(tmp_path / "a", tmp_path / "b")


def test_register_skill_changes_nothing_global():
    meta = SkillMeta("lonely", "Lonely", "Use never.")
    fn = register_skill(meta)(lambda args, ctx: {})
    assert fn.__skill__.meta is meta and fn.__skill__.handler is fn


@pytest.mark.parametrize("bad", [dict(skill_name="Bad-Name"), dict(rate_class="free"), dict(timeout=0),
                                 dict(input_schema={"type": "objekt"})])
def test_bad_metadata_fails_at_registration(bad):
    fields = dict(skill_name="ok_name", display_name="x", description="y") | bad
    with pytest.raises((ValueError, SchemaError)):
        SkillMeta(**fields)


def test_limits_in_the_metadata_are_the_ones_enforced():
    assert SkillMeta("p", "p", "d", rate_class="paid").per_minute == 5
    assert SkillMeta("p", "p", "d", rate_class="paid", limits={"per_minute": 2}).to_dict()["limits"]["per_minute"] == 2


@pytest.mark.parametrize("pattern", ["^(a+)+$", "(a|aa)+$", "(x+x+)+y"])
def test_a_catastrophic_pattern_fails_skill_registration_with_the_sentence(pattern):
    """Before, a skill whose input (or output) schema held ``^(a+)+$`` registered, and served calls."""
    for where in ("input_schema", "output_schema"):
        schema = {"type": "object", "properties": {"code": {"type": "string", "pattern": pattern}}}
        with pytest.raises(SchemaError) as info:
            SkillMeta("codes", "Codes", "Use it for codes.", **{where: schema})
        assert repr(pattern) in str(info.value) and "exponential" in str(info.value)
        assert "指数级" in info.value.localized("zh")
    assert SkillMeta("codes", "Codes", "Use it.", input_schema={"type": "object", "properties": {
        "code": {"type": "string", "pattern": "^[a-z]+(-[a-z]+)*$"}}})


@pytest.mark.parametrize("lang, said", [("en", "Beijing: cloudy, 7 °C, humidity 35%, wind north 3."),
                                        ("zh", "北京：多云，7 °C，湿度 35%，北风 3 级。")])
def test_a_shipped_skills_summary_is_said_in_the_callers_language_and_its_data_stays(tmp_path, lang, said):
    """A Chinese caller read "Beijing: cloudy, 7 °C ..." and "Sent 'Hi' to ..." in English."""
    import json as _json

    from agentlab.site.service import SkillSite
    site = SkillSite(tmp_path)
    try:
        key, _ = site.create_key("x", ["*"])
        weather = site.execute("current_weather", b'{"arguments": {"city": "Beijing"}}', api_key=key,
                               idempotency_key=None, session_id=None, lang=lang).body["result"]
        sent = site.execute("send_notification", _json.dumps({"arguments": {"to": "a@b.com", "subject": "Hi",
                                                                            "body": "x"}}).encode(),
                            api_key=key, idempotency_key="k1", session_id=None, lang=lang).body["result"]
    finally:
        site.close()
    assert weather["summary"] == said and weather["condition"] == "cloudy" and weather["city"] == "Beijing"
    assert sent["summary"] == {"en": "Sent 'Hi' to a@b.com.", "zh": "已把“Hi”发送给 a@b.com。"}[lang]


def test_every_shipped_skills_examples_are_calls_and_results_its_schemas_take_in_each_language():
    """The weather skill's page showed an example result without as_of and summary, which its own output schema
    requires (the web page's without source, text, chars...), and the Chinese page an English summary."""
    import json
    from pathlib import Path

    from agentlab.schema import compile_schema
    from agentlab.site.skills import SkillMeta
    shipped = sorted((Path(__file__).resolve().parents[1] / "agentlab" / "site" / "shipped").glob("*/skill.json"))
    assert len(shipped) >= 3
    for path in shipped:
        meta = SkillMeta(**json.loads(path.read_text(encoding="utf-8")))
        for lang in ("en", "zh"):
            said = meta.to_dict(lang)
            ins, outs = compile_schema(said["input_schema"]), compile_schema(said["output_schema"])
            for example in said["examples"]:
                assert not ins(example.get("arguments", {})), (path.parent.name, lang)
                if "result" in example:
                    assert not outs(example["result"]), (path.parent.name, lang, outs(example["result"]))
                    # the summary's own words, after the page's title or the city: in the page's language
                    words = example["result"].get("summary", "").split(":")[-1].split("：")[-1]
                    assert not words or (lang == "zh") == any("\u4e00" <= ch <= "\u9fff" for ch in words), (path.parent.name, lang, words)
