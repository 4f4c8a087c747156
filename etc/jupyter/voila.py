# Voila's settings that JSON cannot hold (a function): see README.md here.
from agentlab.workbook.pm_app import xsrf_first

c.VoilaConfiguration.prelaunch_hook = xsrf_first  # noqa: F821 - `c` is the config Voila hands this file
