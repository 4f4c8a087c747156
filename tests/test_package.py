"""The public surface, import hygiene, and the README's size claim."""
import ast
import importlib
import importlib.util
import re
import subprocess
import sys
from types import MappingProxyType

import pytest
from conftest import ROOT

import agentlab

PUBLIC = [
    "GUARDS", "NO_GUARDS", "STATUSES", "CallContext", "CallOutcome", "Checked", "Finding", "GuardConfig",
    "MemoryStore", "Model", "ModelError", "Problem", "Registry", "Reply", "RetryPolicy", "Run", "SQLiteStore",
    "SchemaError", "Store", "Tool", "ToolCall", "ToolError", "ToolFailure", "UsageError", "approve", "call",
    "compare_html", "compile_schema", "friendly", "lint", "make_error", "pending", "redact", "reject",
    "render", "resolve", "rule", "run_guarded", "run_naive", "say", "tool_calls",
]
MODULES = sorted(p for p in (ROOT / "agentlab").rglob("*.py") if p.name != "__main__.py")


def dotted(path) -> str:
    parts = list(path.relative_to(ROOT).with_suffix("").parts)
    return ".".join(parts[:-1] if parts[-1] == "__init__" else parts)


def test_import_is_light():
    code = ("import sys, agentlab, agentlab.cli, agentlab.models, agentlab.evals, agentlab.evals.otel; "
            "print([m for m in ('matplotlib', 'ipywidgets', 'pandas', 'openai', 'opentelemetry', 'agentlab.clean') if m in sys.modules])")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True).stdout
    # agentlab.clean is loaded by the registry for "45元"; models' protocol alone must not need it
    assert "matplotlib" not in out and "pandas" not in out and "openai" not in out and "ipywidgets" not in out
    assert "opentelemetry" not in out  # the spans' SDK is loaded by export_run, not by importing the exporter
    code = "import sys, agentlab.models.interface; print('agentlab.models.fakes' in sys.modules)"
    assert subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True).stdout.strip() == "False"


def test_public_surface_is_pinned():
    assert sorted(agentlab.__all__) == sorted(PUBLIC)
    for name in agentlab.__all__:
        assert getattr(agentlab, name).__doc__, name


#: extras a module may build a class on when asked for it (the hub's classes on JupyterHub): ``run.py test --quick``
#: on a participant's laptop has only the dev requirements, and such a name is then declared but not loadable
EXTRAS = {"jupyterhub"}


UNLOADABLE = object()


def lookup(mod, name: str) -> tuple[bool, object]:
    """Whether ``mod`` has ``name`` and what it is; a name whose extra is not installed is present but UNLOADABLE."""
    try:
        return hasattr(mod, name), getattr(mod, name, None)
    except ModuleNotFoundError as exc:
        if (exc.name or "").split(".")[0] not in EXTRAS:
            raise
        return True, UNLOADABLE


@pytest.mark.parametrize("path", MODULES, ids=[dotted(p) for p in MODULES])
def test_every_module_declares_what_it_exports(path):
    tree = ast.parse(path.read_text(encoding="utf-8"))
    assert ast.get_docstring(tree), f"{dotted(path)} has no docstring"
    declared = [n for n in tree.body if isinstance(n, ast.Assign) and any(
        isinstance(t, ast.Name) and t.id == "__all__" for t in n.targets)]
    assert declared, f"{dotted(path)} has no __all__"
    mod = importlib.import_module(dotted(path))
    for name in mod.__all__:
        assert lookup(mod, name)[0] or importlib.util.find_spec(f"{dotted(path)}.{name}"), \
            f"{dotted(path)}.__all__ lists {name!r}, which does not exist"


def test_exported_names_do_not_collide():
    """One name, one meaning: no two modules export different objects under the same name."""
    seen: dict[str, tuple[str, object]] = {}
    for path in MODULES:
        mod = importlib.import_module(dotted(path))
        for name in getattr(mod, "__all__", ()):
            # a package may list its modules, imported only when asked for (agentlab.hub: no JupyterHub on import)
            found, obj = lookup(mod, name)
            if not found:
                obj = importlib.import_module(f"{dotted(path)}.{name}")
            elif obj is UNLOADABLE:
                continue  # built on an extra that is not installed here: nothing to compare
            siblings = name in seen and seen[name][0].startswith("agentlab.scenarios.") \
                and dotted(path).startswith("agentlab.scenarios.")  # every scenario module has the same shape
            if name in seen and seen[name][1] is not obj and not siblings \
                    and not isinstance(obj, (str, int, float, tuple, dict, MappingProxyType)):  # data, not meaning
                pytest.fail(f"{name!r} means different things in {seen[name][0]} and {dotted(path)}")
            seen.setdefault(name, (dotted(path), obj))


def test_errors_still_offers_what_moved_to_redaction():
    """Redaction moved to ``agentlab/redaction.py``; every ``from agentlab.errors import redact`` keeps working,
    with the very same objects (so the name-collision check above sees one meaning)."""
    from agentlab import errors, redaction
    for name in ("redact", "redact_secrets", "find_secrets", "mask_personal", "TEXT_LIMIT", "DETAIL_LIMIT", "_cut"):
        assert getattr(errors, name) is getattr(redaction, name), name
    assert {"redact", "redact_secrets", "find_secrets", "mask_personal"} <= set(errors.__all__)
    assert agentlab.redact is redaction.redact


def test_readme_states_the_true_core_size():
    # the core layer: the flat modules and the schema engine's package (see tests/test_layers.py)
    files = [*(ROOT / "agentlab").glob("*.py"), *(ROOT / "agentlab" / "schema").glob("*.py")]
    core = sum(len(p.read_text(encoding="utf-8").splitlines()) for p in files)
    claim = re.search(r"core package is ([\d,]+) lines", (ROOT / "README.md").read_text(encoding="utf-8"))
    assert claim, "README must state the core size"
    assert abs(int(claim.group(1).replace(",", "")) - core) <= core * 0.05, (claim.group(1), core)


def test_the_readme_names_every_module_of_the_tree():
    readme = (ROOT / "README.md").read_text(encoding="utf-8")
    arch = readme[readme.index("### Architecture"):readme.index("### For engineers")]
    for path in [*MODULES, ROOT / "agentlab" / "__main__.py"]:
        if path.name == "__init__.py":
            assert f"{path.parent.name}/" in arch or path.parent.name == "agentlab", path
            continue
        assert f"`{path.name}`" in arch or f" {path.name}" in arch, f"README's architecture section misses {path.name}"
    for folder in ("models", "scenarios", "evals", "workbook"):
        assert f"{folder}/" in arch


def test_the_version_is_stated_once():
    """pyproject.toml reads the version from agentlab/version.py, so a release changes one line."""
    import tomllib
    pyproject = tomllib.loads((ROOT / "pyproject.toml").read_text(encoding="utf-8"))
    project = pyproject["project"]
    assert "version" not in project and "version" in project.get("dynamic", []), "the version belongs in agentlab/version.py"
    module, _, name = pyproject["tool"]["setuptools"]["dynamic"]["version"]["attr"].rpartition(".")
    assert module == "agentlab.version" and getattr(importlib.import_module(module), name) == agentlab.__version__
    # the build reads the attribute without importing the package: it must stay one plain string assignment
    tree = ast.parse((ROOT / "agentlab" / "version.py").read_text(encoding="utf-8"))
    assert [n.value.value for n in tree.body if isinstance(n, ast.Assign) and n.targets[0].id == name] == [agentlab.__version__]


def test_the_classifiers_say_what_pyproject_says():
    import tomllib
    project = tomllib.loads((ROOT / "pyproject.toml").read_text(encoding="utf-8"))["project"]
    classifiers = project.get("classifiers", [])
    oldest = project["requires-python"].removeprefix(">=")
    assert f"Programming Language :: Python :: {oldest}" in classifiers
    assert {"Natural Language :: English", "Natural Language :: Chinese (Simplified)"} <= set(classifiers)
    # PEP 639: the license is the SPDX expression in `license`, which supersedes the License :: classifiers
    assert isinstance(project["license"], str) and not any(c.startswith("License ::") for c in classifiers)
    assert (ROOT / "LICENSE").read_text(encoding="utf-8").startswith(f"{project['license']} License")


def test_the_quick_check_names_tests_that_exist():
    """``python run.py test --quick`` lists test files (and one notebook test): each must still be there."""
    tree = ast.parse((ROOT / "run.py").read_text(encoding="utf-8"))
    quick = next(ast.literal_eval(n.value) for n in tree.body
                 if isinstance(n, ast.Assign) and getattr(n.targets[0], "id", "") == "QUICK")
    assert quick
    for entry in quick:
        path, _, test = entry.partition("::")
        assert (ROOT / path).is_file(), entry
        if test:
            name = re.sub(r"\[.*\]$", "", test)
            assert f"def {name}(" in (ROOT / path).read_text(encoding="utf-8"), entry


def test_the_wheel_ships_every_package():
    """setuptools is given the packages by name: a new folder of modules (agentlab/schema/) must be named too,
    or the wheel installs without it and ``import agentlab`` fails on a participant's machine."""
    import tomllib
    listed = set(tomllib.loads((ROOT / "pyproject.toml").read_text(encoding="utf-8"))["tool"]["setuptools"]["packages"])
    folders = {dotted(p) for p in (ROOT / "agentlab").rglob("__init__.py")
               if "shipped" not in p.relative_to(ROOT / "agentlab").parts}  # skills are data, loaded by the site's scan
    assert folders <= listed, sorted(folders - listed)


def test_the_package_checks_pass_on_a_laptop_without_the_hub_extra():
    """``run.py test --quick`` on a participant's machine has the dev requirements only: the hub's classes, built on
    JupyterHub when asked for, must not fail the checks above there (they did: ModuleNotFoundError from hasattr)."""
    code = ("import sys; sys.modules['jupyterhub'] = None\n"  # as if it were not installed
            "import pytest\n"
            "sys.exit(pytest.main(['-q', '-p', 'no:cacheprovider', '-p', 'no:xdist', 'tests/test_package.py',"
            " '-k', 'declares_what_it_exports or do_not_collide']))")
    got = subprocess.run([sys.executable, "-c", code], cwd=ROOT, capture_output=True, text=True, timeout=120)
    assert got.returncode == 0, got.stdout[-2000:]


#: data/ files the package never reads (a test's and the docs' source, a note for translators): not in the wheel
NOT_SHIPPED = {"course/paths.json", "i18n/README.md"}


def test_the_wheel_ships_every_data_file_the_package_reads():
    """data/bfcl/release.json (the BFCL release's hashes, read before any question) was left out of the wheel's
    package-data: an installed workbook refused every BFCL question for a file it did not have. Every file of data/
    matches a package-data pattern, or is named here as one the package never reads."""
    import fnmatch
    import tomllib
    patterns = tomllib.loads((ROOT / "pyproject.toml").read_text(encoding="utf-8"))["tool"]["setuptools"][
        "package-data"]["agentlab.data"]
    files = [p.relative_to(ROOT / "data").as_posix() for p in (ROOT / "data").rglob("*") if p.is_file()
             and "__pycache__" not in p.parts]
    left_out = [f for f in files if f not in NOT_SHIPPED and not any(
        fnmatch.fnmatch(f, pat) and f.count("/") == pat.count("/") for pat in patterns)]
    assert not left_out, left_out


def _core_modules() -> set[str]:
    """The modules ``pip install .`` brings: pyproject's dependencies and theirs, read from the installed metadata."""
    import tomllib
    from importlib import metadata
    wanted = [re.split(r"[<>=!~;\[ ]", d, maxsplit=1)[0] for d in
              tomllib.loads((ROOT / "pyproject.toml").read_text(encoding="utf-8"))["project"]["dependencies"]]
    seen: set[str] = set()
    while wanted:
        name = wanted.pop().lower().replace("_", "-")
        if name in seen:
            continue
        try:
            requires = metadata.requires(name) or []
        except metadata.PackageNotFoundError:  # a dependency of another platform's (colorama on Windows)
            continue
        seen.add(name)
        for req in requires:
            if "extra ==" not in req:
                wanted.append(re.split(r"[<>=!~;\[ (]", req, maxsplit=1)[0])
    tops = {top for top, dists in metadata.packages_distributions().items()
            if any(d.lower().replace("_", "-") in seen for d in dists)}
    return tops | {"agentlab"}


_CORE_ONLY = """
import importlib.abc, importlib.machinery, runpy, sys, sysconfig
site = (sysconfig.get_paths()["purelib"], sysconfig.get_paths()["platlib"])
allowed = set(sys.argv[1].split(","))
class CoreOnly(importlib.abc.MetaPathFinder):
    def find_spec(self, name, path=None, target=None):
        top = name.partition(".")[0]
        if top in allowed or top in sys.stdlib_module_names:
            return None
        spec = importlib.machinery.PathFinder.find_spec(top)
        if spec is not None and spec.origin and spec.origin.startswith(site):
            raise ModuleNotFoundError(f"No module named {top!r} (not in the core install)", name=top)
        return None
sys.meta_path.insert(0, CoreOnly())
sys.argv = ["agentlab", *sys.argv[2:]]
runpy.run_module("agentlab", run_name="__main__")
"""


@pytest.mark.parametrize("argv", [
    ["check-args", "--tools", "data/aftersales_tools.json", "--name", "get_order", "--args", '{"order_id": "A1001"}'],
    ["lint", "data/bad_tools.json"], ["demo"], ["eval", "--suite", "data/aftersales_cases.jsonl", "--model", "fake"],
    ["probe", "--tools", "data/aftersales_tools.json", "--model", "fake", "--out", "{tmp}/probe"],
    ["review", "--logs", "data/logs_openai_sample.jsonl", "--out", "{tmp}/review"]])
def test_every_core_command_runs_on_the_core_install_alone(argv, tmp_path):
    """`pip install .` gives the core: review stopped on a missing jinja2 and probe on matplotlib there, each with
    "unexpected ModuleNotFoundError"; run here with every package outside the core's dependencies made missing."""
    args = [a.replace("{tmp}", str(tmp_path)) for a in argv]
    got = subprocess.run([sys.executable, "-c", _CORE_ONLY, ",".join(sorted(_core_modules())), *args], cwd=ROOT,
                         capture_output=True, text=True, timeout=300)
    assert got.returncode in (0, 1) and "ModuleNotFoundError" not in got.stdout + got.stderr, got.stderr[-2000:]
