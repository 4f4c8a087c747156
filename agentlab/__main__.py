"""``python -m agentlab``: the command line (see :mod:`agentlab.cli`)."""
import sys

from .cli import main

__all__: list[str] = []

sys.exit(main())
