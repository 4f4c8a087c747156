"""The OpenAI adapter's overhead per request, against the bare ``openai`` client.

Both talk to the project's own chat-completions server on 127.0.0.1 with no delay, so the
difference is the adapter: building the request, cleaning messages, classifying, converting the reply.

Run: python run.py bench   (or: python benchmarks/bench_openai.py)
"""
from __future__ import annotations

import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))


from agentlab.models import call  # noqa: E402
from agentlab.models.fakeserver import ChatServer  # noqa: E402
from agentlab.models.openai_model import OpenAIModel  # noqa: E402
from agentlab.scenarios import aftersales  # noqa: E402

N = 300


def main() -> None:
    tools = aftersales.SCENARIO.setup()[1].specs()
    messages = [{"role": "system", "content": aftersales.SYSTEM_PROMPT["en"]}, {"role": "user", "content": "refund A1001"}]
    reply = call("get_order", {"order_id": "A1001"})
    with ChatServer([reply] * (4 * N + 20)) as server:
        model = OpenAIModel("m", base_url=server.base_url, api_key="k")
        bare = model.client  # the same client and connection: only the adapter's own work differs
        kwargs = model.request(messages, tools)
        for _ in range(10):  # warm the connection
            bare.chat.completions.create(**kwargs)
            model.complete(messages, tools)
        best_bare = best_adapter = float("inf")
        for _ in range(3):
            t0 = time.perf_counter()
            for _ in range(N // 3):
                r = bare.chat.completions.create(**kwargs)
                r.choices[0].message.tool_calls[0].function.arguments  # noqa: B018 - what a caller reads
            best_bare = min(best_bare, (time.perf_counter() - t0) / (N // 3))
            t0 = time.perf_counter()
            for _ in range(N // 3):
                model.complete(messages, tools)
            best_adapter = min(best_adapter, (time.perf_counter() - t0) / (N // 3))
    print(f"per request on the local test server: bare openai client {best_bare * 1e3:.2f} ms, "
          f"OpenAIModel {best_adapter * 1e3:.2f} ms, overhead {(best_adapter - best_bare) * 1e6:.0f} us "
          f"({best_adapter / best_bare - 1:+.1%})")


if __name__ == "__main__":
    main()
