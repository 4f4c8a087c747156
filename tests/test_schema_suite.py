"""The whole upstream JSON Schema test suite for draft 2020-12, through ``compile_schema``.

Every keyword file and everything under ``optional/`` (formats included), one test per
upstream test, named ``file:group:test`` after the suite's own descriptions. The suite's
remote documents (``remotes/``) are given as ``resources`` under ``http://localhost:1234/``,
as the suite expects; nothing is fetched.

Two explicit exceptions, both about ``format``, both strict ``xfail`` (an upstream test that
starts passing fails here, so the lists cannot go stale, and only an AssertionError counts:
any other failure in those files is a failure):

* ``ANNOTATION_FORMATS``: the ``optional/format/`` files of formats we do not assert. Draft
  2020-12 makes every format an annotation by default; we assert six (``FORMATS``), and a
  value these files call invalid is accepted. Their valid values must still be accepted.
* ``ASSERTED_ON_PURPOSE``: ``format.json`` says an invalid date (email, ...) is "only an
  annotation by default"; we assert those six on purpose, so a model's "2026-02-30" is refused.
"""
import json
from functools import cache

import pytest
from conftest import DATASETS, need

from agentlab.schema import FORMATS, compile_schema

FULL = DATASETS / "json-schema-test-suite" / "full"
SUITE = FULL / "draft2020-12"
REMOTES = FULL / "remotes"

ANNOTATION_FORMATS = {
    "duration", "hostname", "idn-email", "idn-hostname", "ipv6", "iri", "iri-reference", "json-pointer",
    "relative-json-pointer", "uri", "uri-reference", "uri-template", "regex",
    "ecmascript-regex",  # the file of format "regex" with ECMA-262 specifics
}
ASSERTED_ON_PURPOSE = {f"invalid {name} string is only an annotation by default" for name in FORMATS}


def _expected_to_differ(rel: str, test: dict) -> str | None:
    """Why our answer differs from upstream's on this test, or None when it must agree."""
    if rel == "format.json" and test["description"] in ASSERTED_ON_PURPOSE:
        return "agentlab asserts this format on purpose (agentlab.schema.FORMATS)"
    if test["valid"]:
        return None  # elsewhere we accept whatever the suite accepts, in every file
    parts = rel.removesuffix(".json").split("/")
    if parts[:2] == ["optional", "format"] and parts[2] in ANNOTATION_FORMATS:
        return f"format {parts[2]!r} is an annotation here, not asserted (see agentlab.schema.FORMATS)"
    return None


def _cases():
    if not SUITE.exists():
        return [pytest.param(None, None, None, id="suite-absent")]
    cases = []
    for path in sorted(SUITE.rglob("*.json")):
        rel = path.relative_to(SUITE).as_posix()
        for g, group in enumerate(json.loads(path.read_text(encoding="utf-8"))):
            for test in group["tests"]:
                why = _expected_to_differ(rel, test)
                marks = [pytest.mark.xfail(strict=True, raises=AssertionError, reason=why)] if why else []
                cases.append(pytest.param(rel, g, test, id=f"{rel}:{group['description']}:{test['description']}",
                                          marks=marks))
    return cases


@cache
def _resources() -> dict:
    return {f"http://localhost:1234/{p.relative_to(REMOTES).as_posix()}": json.loads(p.read_text(encoding="utf-8"))
            for p in REMOTES.rglob("*.json")}


@cache
def _validator(rel: str, group: int):
    schema = json.loads((SUITE / rel).read_text(encoding="utf-8"))[group]["schema"]
    return compile_schema(schema, resources=_resources())


@pytest.mark.dataset
@pytest.mark.parametrize("rel,group,test", _cases())
def test_upstream(rel, group, test):
    need(SUITE, "the full JSON-Schema-Test-Suite (json-schema-test-suite/full)")
    problems = _validator(rel, group)(test["data"])
    assert (not problems) == test["valid"], problems


@pytest.mark.dataset
def test_the_whole_suite_is_collected():
    need(SUITE, "the full JSON-Schema-Test-Suite (json-schema-test-suite/full)")
    cases = _cases()
    files = {c.values[0] for c in cases}
    assert files == {p.relative_to(SUITE).as_posix() for p in SUITE.rglob("*.json")}
    assert any(f.startswith("optional/format/") for f in files) and len(cases) > 2000
    # the exceptions are what they say: every annotation format has a file, every on-purpose test exists
    assert {f"optional/format/{name}.json" for name in ANNOTATION_FORMATS} <= files
    descriptions = {c.values[2]["description"] for c in cases if c.values[0] == "format.json"}
    assert ASSERTED_ON_PURPOSE <= descriptions
