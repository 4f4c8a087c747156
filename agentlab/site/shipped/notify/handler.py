"""The notifying write skill: one e-mail per call, into an outbox file (nothing leaves the machine).

It is the seed's double e-mail: a client that resends after a lost reply would send two.
The site's idempotency key makes the second request a replay of the first, so the outbox
holds one message (docs/guards.md#idempotency). Replicas sharing the data folder append
under a lock file, so two messages never interleave in the outbox.
"""
from __future__ import annotations

import json
import uuid
from pathlib import Path

from agentlab.i18n import t
from agentlab.site.files import locked
from agentlab.site.skills import SkillContext, read_meta, register_skill

__all__ = ["send_notification"]


@register_skill(read_meta(Path(__file__).with_name("skill.json")))
def send_notification(arguments: dict, ctx: SkillContext) -> dict:
    """Append one message to ``outbox.jsonl`` in the site's data folder."""
    message = {"message_id": "M" + uuid.uuid4().hex[:10], **arguments}
    outbox = Path(ctx.data_dir) / "outbox.jsonl"
    with ctx.lock, locked(outbox.with_name("outbox.jsonl.lock")), outbox.open("a", encoding="utf-8") as f:
        f.write(json.dumps(message, ensure_ascii=False) + "\n")
    return {"message_id": message["message_id"], "to": arguments["to"],
            "summary": t("skill.notify.summary", ctx.lang, subject=arguments["subject"], to=arguments["to"])}
