"""The skill site (docs/site.md): tools served over HTTP so the model only decides and the site executes.

Layer "site", above scenarios (it hosts the desks) and below evals. One module per idea:
``skills.py`` (metadata, registration, the folder scan), ``execute.py`` (the three layers and
the output check), ``keys.py``, ``limits.py``, ``logs.py``, ``desks.py`` (the desks' tools as
skills), ``service.py`` (one request through every check), ``app.py`` (FastAPI), ``pages.py`` (the
market, detail and call-log pages), ``check.py`` (``site check``, the validation set),
``client.py`` (the skills as agentlab tools over httpx). Importing this package loads none
of FastAPI, uvicorn or httpx; ``app.py`` and ``client.py`` do, when used.
"""
from __future__ import annotations

from .skills import Skill, SkillContext, SkillMeta, load_skills, register_skill

__all__ = ["Skill", "SkillContext", "SkillMeta", "load_skills", "register_skill"]
