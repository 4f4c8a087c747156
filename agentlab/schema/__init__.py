"""JSON Schema (draft 2020-12) compiled once into plain Python checks.

``jsonschema.validate`` re-checks the schema itself on every call; a tool's
schema does not change between calls, so we compile it once into a tree of
closures and then each call only runs the checks. Every problem is collected
(never just the first) as a :class:`~agentlab.errors.Problem` with a path such
as ``items[0].sku``.

Every keyword of draft 2020-12 is enforced, by one of two paths; none is
accepted and then ignored:

* **compiled** (:mod:`~agentlab.schema.compiler`, fast): ``type`` ``enum`` ``const`` ``properties``
  ``required`` ``additionalProperties`` ``patternProperties`` ``propertyNames``
  ``minProperties`` ``maxProperties`` ``dependentRequired`` ``dependentSchemas``
  ``items`` ``prefixItems`` ``contains`` ``minContains`` ``maxContains``
  ``minItems`` ``maxItems`` ``uniqueItems`` ``minimum`` ``maximum``
  ``exclusiveMinimum`` ``exclusiveMaximum`` ``multipleOf`` ``minLength``
  ``maxLength`` ``pattern`` ``format`` ``anyOf`` ``oneOf`` ``allOf`` ``not``
  ``if``/``then``/``else``, ``$ref`` to a JSON pointer in the same document
  (``~0``, ``~1`` and percent-escapes included), and boolean schemas. The older
  ``dependencies`` is enforced too, as the suite's compatibility tests expect.
* **delegated** (:mod:`agentlab.schema.delegate`, the ``jsonschema`` package,
  imported only then): a schema that uses :data:`DELEGATED` keywords
  (``unevaluated*``, ``$anchor``, ``$dynamicRef``...), an ``$id`` below the root,
  a ``$ref`` to an anchor or another document, or a ``$schema`` other than
  2020-12. The whole schema goes; its errors come back as the same problems.

Refused with :class:`SchemaError` at registration: a ``$ref`` to a document
nobody supplied (documents come only from ``compile_schema(..., resources=)``;
nothing is fetched), an unknown ``$schema``, a required ``$vocabulary`` we do
not know, a pattern that does not compile, and a pattern shaped for catastrophic
backtracking (:func:`slow_pattern`: ``^(a+)+$``, ``(a|aa)+``; ``re`` has no timeout).

Patterns follow ECMA-262 in both paths (:func:`ecma_to_python`). ``format`` is
asserted for the names in :data:`FORMATS` (date, date-time, time, email, uuid,
ipv4); every other format is an annotation, as 2020-12 makes them by default.
Annotations (``description``, ``default``, ``examples``...) and unknown
keywords are ignored, as the draft says; :func:`unsupported_keywords` lists the
unknown ones so the linter can warn about them.

This module is the package's face: import from here. Behind it, one idea per module, lowest first:

* ``base``: what every path shares (``SchemaError``, problem paths, walking subschemas, ``$ref`` loops);
* ``formats``: the ``format`` values asserted; ``ecma``: ECMA-262 patterns for Python's ``re``;
* ``backtracking``: patterns refused for catastrophic backtracking;
* ``checks``: the compiled closures, one per keyword group;
* ``keywords``: the meta-schema checks (known keywords, allowed values);
* ``compiler``: the ``Compiler`` and :func:`compile_schema`, which hands what it cannot compile to
  ``delegate`` (jsonschema);
* ``closing``: :func:`close_objects`, the registry's "no unknown fields".
"""
from __future__ import annotations

from ..errors import Problem
from .backtracking import refuse_slow_patterns, slow_pattern
from .base import DRAFT_2020_12, SchemaError, join, ref_loop, show, transform
from .checks import TYPE_TESTS, Check
from .closing import close_objects
from .compiler import Compiler, compile_schema
from .ecma import ecma_to_python
from .formats import FORMATS
from .keywords import ANNOTATIONS, DELEGATED, KEYWORDS, check_keywords, subschemas, unsupported_keywords

__all__ = ["ANNOTATIONS", "DELEGATED", "DRAFT_2020_12", "FORMATS", "KEYWORDS", "TYPE_TESTS", "Check", "Compiler",
           "Problem", "SchemaError", "check_keywords", "close_objects", "compile_schema", "ecma_to_python", "join",
           "ref_loop", "refuse_slow_patterns", "show", "slow_pattern", "subschemas", "transform",
           "unsupported_keywords"]
