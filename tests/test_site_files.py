"""The shared-file tools (agentlab/site/files.py): a file read back whole or as the default, one written in one step."""
import stat

from agentlab.site.files import load_json, write_atomic


def test_a_broken_or_overdeep_file_reads_as_the_default(tmp_path):
    """A file nested past what the parser takes raised RecursionError out of load_json (the weekly review's place)."""
    deep = tmp_path / "deep.json"
    deep.write_text("[" * 200_000 + "]" * 200_000, encoding="utf-8")
    assert load_json(deep, {}) == {}
    (tmp_path / "cut.json").write_text('{"a": ', encoding="utf-8")
    assert load_json(tmp_path / "cut.json", "x") == "x" and load_json(tmp_path / "none.json") is None


def test_a_file_written_whole_is_its_writer_s_alone(tmp_path):
    target = tmp_path / "place.json"
    write_atomic(target, '{"note": "draft"}')
    write_atomic(target, '{"note": "second"}')
    assert load_json(target) == {"note": "second"} and stat.S_IMODE(target.stat().st_mode) == 0o600
    assert [p.name for p in tmp_path.iterdir()] == ["place.json"]  # no temporary file left beside it
