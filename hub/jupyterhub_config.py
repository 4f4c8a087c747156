# The workshop's JupyterHub configuration: every setting is built by agentlab.hub.config.build and written as
# JSON by `python run.py hub`; this file only applies it, section by section, and bounds the hub's own records.
import faulthandler
import json
import os
import signal
from pathlib import Path

from agentlab.hub import records
from agentlab.hub.services import undo_ignored_signals

# `kill -USR2 <the hub's pid>` writes the stack of each of the hub's threads to its log: what a hub that does not
# stop, or does not answer, is doing at that moment
faulthandler.register(signal.SIGUSR2, all_threads=True)
# started in the background by a script, the hub would hand an ignored Ctrl-C on to every service it starts, and
# each would then stop only 10 s after being asked (agentlab.hub.services.undo_ignored_signals)
undo_ignored_signals()

c = get_config()  # noqa: F821 (JupyterHub provides it)
with open(os.environ["AGENTLAB_HUB_CONFIG"], encoding="utf-8") as f:
    settings = json.load(f)
# what a participant can make the hub hold stays bounded: a request's body, idle connections, the logs
own = settings.pop("agentlab")
records.bound_requests(own["max_body"])
records.more_files()  # before the proxy and the services are started: they inherit it
# the hub's own log is where the launcher sends what the hub (and the proxy it starts) prints
# and each participant's server's log, on their own disk, which anyone can make their server write to
records.LogTrimmer(records.room_logs(Path(os.environ["AGENTLAB_HUB_LOG"]), Path(own["service_logs"]), Path(own["homes"])),
                   cap=own["log_cap"]).start()
for section, values in settings.items():
    for name, value in values.items():
        setattr(c[section], name, value)
