"""Notebook 06's build exercise, solved: a step budget just above the longest healthy run (9 turns), and the
breaker on the third identical call."""
from agentlab import GuardConfig

my_config = GuardConfig(step_budget=10, repeat_limit=3)
