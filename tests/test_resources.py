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
