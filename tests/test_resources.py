"""agentlab/resources.py: finding the package's own files and the font without importing what ships them."""


def test_a_path_entry_this_user_may_not_enter_does_not_stop_the_import(monkeypatch):
    """A server started by the workshop hub as another account may have, on sys.path, a working folder it cannot
    enter: finding the font there raised PermissionError at import time, so every command failed."""
    from pathlib import Path

    from agentlab import resources
    real = Path.is_file

    def is_file(self):
        if str(self).startswith("/forbidden"):
            raise PermissionError(13, "Permission denied", str(self))
        return real(self)
    monkeypatch.setattr(Path, "is_file", is_file)
    monkeypatch.setattr("sys.path", ["/forbidden", *__import__("sys").path])
    assert resources._installed_font("no/such/font.otf") == []


def test_a_data_url_carries_the_file_up_to_the_cap_and_none_past_it():
    """The one builder of the links a page carries its file in (the log review's cases, the weekly export); each
    caps at the same size."""
    import base64

    from agentlab.resources import MAX_LINK_BYTES, data_url
    text = "退款 A1001\n".encode()
    url = data_url(text, "text/csv")
    assert url is not None and url.startswith("data:text/csv;charset=utf-8;base64,")
    assert base64.b64decode(url.split(",", 1)[1]) == text
    assert data_url(b"x" * MAX_LINK_BYTES, "text/csv") is not None and data_url(b"x" * (MAX_LINK_BYTES + 1), "text/csv") is None


def test_a_file_saved_with_a_bom_is_read_by_every_command_that_reads_a_users_file(tmp_path):
    # Windows Notepad saves UTF-8 with a BOM: the log review and the probe refused such a tools file with the
    # decoder's English ("Unexpected UTF-8 BOM") inside a Chinese sentence, while the app's probe panel read it
    import json

    from agentlab.commands import load_registry, read_json
    from agentlab.evals.log_tools import tools_file
    from agentlab.resources import data_file
    specs = json.loads(data_file("aftersales_tools.json").read_text(encoding="utf-8"))
    path = tmp_path / "tools.json"
    path.write_text(json.dumps(specs, ensure_ascii=False), encoding="utf-8-sig")
    assert path.read_bytes().startswith(b"\xef\xbb\xbf")
    assert read_json(str(path), "what.tools") == specs
    assert load_registry(str(path)).names == tools_file(path)[0].names
    from agentlab import Registry
    assert Registry.from_json(path).names == tools_file(path)[0].names
    cases = tmp_path / "cases.jsonl"
    cases.write_text('{"id": "a"}\n{"id": "b"}\n', encoding="utf-8-sig")
    assert read_json(str(cases), "what.suite", lines=True) == [{"id": "a"}, {"id": "b"}]
