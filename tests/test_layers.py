"""The folder tree is the architecture: lower layers never import higher ones.

Layers, lowest first (a module may import its own layer and the ones below):

    core       the flat modules (errors, names, tools, loop, store...), the schema engine's package
               (agentlab/schema/, entered through its face, agentlab/schema/__init__.py) and models/interface.py
    models     the rest of agentlab/models/ (fakes, faults, real models, cassettes, test server)
    scenarios  agentlab/scenarios/
    adapters   agentlab/adapters/ (agentlab's guards in other agent frameworks; its side-by-side table runs the test server)
    site       agentlab/site/ (the skill site: it hosts the desks' tools)
    evals      agentlab/evals/
    workbook   agentlab/workbook/
    hub        agentlab/hub/ (the workshop's JupyterHub: it starts the site and the model, and copies the workbook)
    entry      cli.py, commands.py, serve_commands.py, __main__.py, the package's __init__.py
"""
import ast

import pytest
from conftest import ROOT

PKG = ROOT / "agentlab"
LAYERS = ["core", "models", "scenarios", "adapters", "site", "evals", "workbook", "hub", "entry"]
ENTRY = {"agentlab", "agentlab.cli", "agentlab.commands", "agentlab.serve_commands", "agentlab.__main__"}


def module_name(path) -> str:
    parts = list(path.relative_to(ROOT).with_suffix("").parts)
    if parts[-1] == "__init__":
        parts.pop()
    return ".".join(parts)


def layer(module: str) -> str:
    if module in ENTRY:
        return "entry"
    parts = module.split(".")
    if len(parts) >= 2 and parts[1] in ("models", "scenarios", "adapters", "site", "evals", "workbook", "hub"):
        if module in ("agentlab.models", "agentlab.models.interface"):
            return "core"  # the protocol the loops speak (the package __init__ loads only it eagerly)
        return parts[1]
    return "core"


def imports(path) -> set[str]:
    """Every agentlab module ``path`` imports, at the top or inside a function."""
    mod = module_name(path)
    package = mod if path.name == "__init__.py" else mod.rsplit(".", 1)[0]
    found = set()
    for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
        if isinstance(node, ast.ImportFrom):
            if node.level:
                base = package.split(".")[: len(package.split(".")) - node.level + 1]
                target = ".".join(base + ([node.module] if node.module else []))
            else:
                target = node.module or ""
            if target.startswith("agentlab"):
                found.add(target)
                for alias in node.names:  # "from . import aftersales" imports a module
                    found.add(f"{target}.{alias.name}")
        elif isinstance(node, ast.Import):
            found |= {a.name for a in node.names if a.name.startswith("agentlab")}
    return {f for f in found if _exists(f)}


def _exists(module: str) -> bool:
    rel = module.split(".")[1:]
    base = PKG.joinpath(*rel)
    return base.with_suffix(".py").exists() or (base / "__init__.py").exists() or module == "agentlab"


MODULES = sorted(p for p in PKG.rglob("*.py"))


@pytest.mark.parametrize("path", MODULES, ids=[module_name(p) for p in MODULES])
def test_no_module_imports_a_higher_layer(path):
    mine = LAYERS.index(layer(module_name(path)))
    higher = sorted(m for m in imports(path) if LAYERS.index(layer(m)) > mine)
    assert not higher, f"{module_name(path)} ({layer(module_name(path))}) imports higher layers: {higher}"


def test_the_layer_rule_can_fail():
    assert layer("agentlab.workbook.plots") == "workbook" and layer("agentlab.loop") == "core"
    evals_suite = PKG / "evals" / "suite.py"
    assert "agentlab.scenarios" in imports(evals_suite)  # evals may import scenarios...
    assert LAYERS.index(layer("agentlab.workbook.plots")) > LAYERS.index(layer(module_name(evals_suite)))  # ...not plots
    assert layer("agentlab.site.service") == "site" and layer("agentlab.site.shipped.weather.handler") == "site"
    assert "agentlab.scenarios.aftersales" in imports(PKG / "site" / "desks.py")  # the site may host the desks...
    assert LAYERS.index("site") < LAYERS.index("evals")  # ...and evals may one day grade a run through the site


SCHEMA = PKG / "schema"


@pytest.mark.parametrize("path", MODULES, ids=[module_name(p) for p in MODULES])
def test_the_schema_package_is_entered_through_its_face(path):
    """Outside agentlab/schema/, only ``agentlab.schema`` is imported; inside, never the face itself.

    The face is the package's public surface, so the modules behind it can be split or renamed; and a
    module behind it that imported the face would import itself in a circle (the face imports them all).
    """
    inner = sorted(m for m in imports(path) if m.startswith("agentlab.schema."))
    if path.parent == SCHEMA:
        assert "agentlab.schema" not in imports(path) or path.name == "__init__.py", \
            f"{module_name(path)} imports the face, agentlab.schema: import the module behind it"
    else:
        assert not inner, f"{module_name(path)} reaches behind agentlab.schema's face: {inner}"


def test_only_the_delegated_path_imports_jsonschema():
    """The compiled path never needs jsonschema: an ordinary schema must not pay for importing it."""
    importers = set()
    for path in MODULES:
        for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
            names = [a.name for a in node.names] if isinstance(node, ast.Import) else \
                [node.module or ""] if isinstance(node, ast.ImportFrom) and not node.level else []
            if any(n == "jsonschema" or n.startswith("jsonschema.") for n in names):
                importers.add(module_name(path))
    assert importers == {"agentlab.schema.delegate"}


def test_the_face_rule_can_fail():
    assert "agentlab.schema.delegate" in imports(SCHEMA / "compiler.py")  # compile_schema hands some schemas on
    assert "agentlab.schema" in imports(PKG / "tools.py") and layer("agentlab.schema.compiler") == "core"


def import_cycles(graph: dict[str, set[str]]) -> list[list[str]]:
    """The groups of modules that reach each other through imports (Tarjan's strongly connected components)."""
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    cycles = []

    def visit(v: str) -> None:
        index[v] = low[v] = len(index)
        stack.append(v)
        for w in sorted(graph.get(v, ())):
            if w not in index:
                visit(w)
                low[v] = min(low[v], low[w])
            elif w in stack:
                low[v] = min(low[v], index[w])
        if low[v] == index[v]:
            group = [stack.pop()]
            while group[-1] != v:
                group.append(stack.pop())
            if len(group) > 1:
                cycles.append(sorted(group))

    for v in sorted(graph):
        if v not in index:
            visit(v)
    return sorted(cycles)


def test_no_modules_import_each_other():
    # An import inside a function counts too: a lazy import hides a cycle from Python, not from the reader, who
    # then cannot read either module without the other.
    graph = {module_name(p): imports(p) - {module_name(p)} for p in MODULES}
    assert import_cycles(graph) == []


def test_the_cycle_check_can_fail():
    assert import_cycles({"a": {"b"}, "b": {"a"}, "c": {"a"}}) == [["a", "b"]]
    assert import_cycles({"a": {"b"}, "b": {"c"}, "c": {"a"}, "d": set()}) == [["a", "b", "c"]]
    assert import_cycles({"a": {"b"}, "b": set()}) == []
    # the walk sees imports inside functions (store.py imports redis_store.py only to open a redis:// URL)
    assert "agentlab.redis_store" in imports(PKG / "store.py")


def test_redaction_sits_below_errors():
    """``redaction.py`` is read on its own: it imports no agentlab module, and ``errors.py`` builds on it.

    The renderer needs redaction, never the reverse; a redaction rule that reached back for an error type would
    make the two one module again, split across two files.
    """
    assert imports(PKG / "redaction.py") == set()
    assert "agentlab.redaction" in imports(PKG / "errors.py")


MAX_LINES = 700


@pytest.mark.parametrize("path", MODULES, ids=[module_name(p) for p in MODULES])
def test_no_module_is_longer_than_a_sitting(path):
    """A module a newcomer reads in one go: past 700 lines it holds more than one idea, so it splits by concept."""
    lines = len(path.read_text(encoding="utf-8").splitlines())
    assert lines <= MAX_LINES, f"{module_name(path)} is {lines} lines: split it by concept (at most {MAX_LINES})"
