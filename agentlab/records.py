"""Frozen records, made quickly: :func:`quick` gives a frozen dataclass an ``__init__`` that fills it in one step.

A frozen dataclass's own ``__init__`` sets each field through ``object.__setattr__``, one call per field (its
``__setattr__`` refuses). The records made on every model turn and tool call (a trace row has 25 fields, a call's
outcome 11) spent more on that than on anything they hold.
"""
from __future__ import annotations

from dataclasses import MISSING, fields
from typing import Any, TypeVar

__all__ = ["quick"]

T = TypeVar("T")
_UNSET: Any = type("_Unset", (), {"__repr__": lambda self: "<factory>"})()  # a field whose default is made per record


def quick(cls: type[T]) -> type[T]:
    """``cls``, a frozen dataclass, whose ``__init__`` writes every field into the record's ``__dict__`` at once.

    The signature, defaults and default factories are the dataclass's; the record is the same (equal, hashed,
    printed and frozen alike). A class this cannot do exactly (``__post_init__``, slots, an ``InitVar``, a field
    outside ``__init__`` or keyword-only) keeps the dataclass's own ``__init__``."""
    own = fields(cls)  # type: ignore[arg-type]
    if ("__slots__" in cls.__dict__ or hasattr(cls, "__post_init__") or len(own) != len(cls.__dataclass_fields__)  # type: ignore[attr-defined]
            or any(not f.init or f.kw_only for f in own)):
        return cls
    scope: dict[str, Any] = {"_UNSET": _UNSET}
    params, made = [], []
    for f in own:
        if f.default is not MISSING:
            scope[f"_default_{f.name}"] = f.default
            params.append(f"{f.name}=_default_{f.name}")
        elif f.default_factory is not MISSING:
            scope[f"_factory_{f.name}"] = f.default_factory
            params.append(f"{f.name}=_UNSET")
            made.append(f"    if {f.name} is _UNSET:\n        {f.name} = _factory_{f.name}()\n")
        else:
            params.append(f.name)
    names = ", ".join(f"{f.name}={f.name}" for f in own)
    source = f"def __init__(self, {', '.join(params)}):\n{''.join(made)}    self.__dict__.update({names})\n"
    exec(source, scope)
    init = scope["__init__"]
    init.__annotations__ = {**{f.name: f.type for f in own}, "return": None}  # as help() and signature() read it
    init.__qualname__ = f"{cls.__qualname__}.__init__"
    init.__module__ = cls.__module__
    cls.__init__ = init  # type: ignore[method-assign]
    return cls
