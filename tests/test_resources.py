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
