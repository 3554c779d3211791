"""The package's stages import only downward: kube (vocabulary), policy, objects (the readers),
kueue (Kueue's own model: quotas, the cohort tree with its usage, fair sharing, the
ClusterQueue and Cohort views), quota (the gates' questions of it), cluster, simulate,
explain (why a job is not running), rules, engine, admin (the guard of Kueue's own objects),
wire, serving, advisor (simulate, explain and quota apart from admission), export, cli.

A module may import its own stage and those before it, never one after: the engine
knows nothing of the wire format (it hands the wire a patch as a list, and reads objects
through ``webhook.objects.readers.read_workload``), and what both the review decoder and
the rules need (``UserInfo``) lives below both. An import made only for type checking
(under ``if TYPE_CHECKING:``) or inside a function counts as much as any other: it is the
same dependency, and hiding one is how a circle between modules starts. No module reaches
itself through its imports.
"""

from __future__ import annotations

import ast
from pathlib import Path

import webhook

STAGES = (
    "kube",
    "policy",
    "objects",
    "kueue",
    "quota",
    "cluster",
    "simulate",
    "explain",
    "rules",
    "engine",
    "admin",
    "wire",
    "serving",
    "advisor",
    "export",
    "cli",
)
PACKAGE = Path(webhook.__file__).parent


def _module_name(path: Path) -> str:
    """``webhook/kueue/cohort.py`` -> ``webhook.kueue.cohort``; a package's ``__init__`` names the package."""
    return ".".join(path.relative_to(PACKAGE.parent).with_suffix("").parts).removesuffix(".__init__")


#: module name -> its file, for every module of the package
MODULES = {_module_name(path): path for path in sorted(PACKAGE.rglob("*.py"))}


def _imported(tree: ast.AST, module: str = "webhook") -> list[tuple[int, str]]:
    """Every ``webhook`` module ``tree`` imports, wherever the import sits (under ``TYPE_CHECKING``,
    in a function): ``from a.b import c`` names ``a.b.c`` when that is a module, else ``a.b``.
    ``module`` is the importing module's name, for relative imports."""
    names = []
    for node in ast.walk(tree):
        if isinstance(node, ast.ImportFrom):
            base = node.module or ""
            if node.level:  # relative: from the importing module's package (a package's own for its __init__)
                own = module if MODULES.get(module, Path()).name == "__init__.py" else module.rpartition(".")[0]
                package = own.split(".")[: len(own.split(".")) - node.level + 1]
                base = ".".join([*package, base] if base else package)
            for alias in node.names:
                whole = f"{base}.{alias.name}"
                names.append((node.lineno, whole if whole in MODULES else base))
        elif isinstance(node, ast.Import):
            names += [(node.lineno, alias.name) for alias in node.names]
    return sorted((line, name) for line, name in names if name.startswith("webhook."))


def test_every_stage_is_a_package_here() -> None:
    packages = {path.name for path in PACKAGE.iterdir() if (path / "__init__.py").exists()}
    assert packages == set(STAGES)


def test_no_module_imports_a_later_stage() -> None:
    upward = []
    for path in sorted(PACKAGE.rglob("*.py")):
        parts = path.relative_to(PACKAGE).parts
        if len(parts) < 2:
            continue  # webhook/__init__.py, __main__.py: the entry points
        own = STAGES.index(parts[0])
        for line, name in _imported(ast.parse(path.read_text(encoding="utf-8")), _module_name(path)):
            stage = name.split(".")[1]
            if stage in STAGES and STAGES.index(stage) > own:
                upward.append(f"{path.relative_to(PACKAGE.parent)}:{line} imports {name}")
    assert upward == []


def test_the_engine_imports_no_simulator() -> None:
    """The admission path decides without advisory work: the engine takes the ``[simulate]``
    line through its ``SimulateLine`` hook and never imports the simulator itself."""
    reaching = [
        f"{path.relative_to(PACKAGE.parent)}:{line} imports {name}"
        for path in sorted((PACKAGE / "engine").rglob("*.py"))
        for line, name in _imported(ast.parse(path.read_text(encoding="utf-8")))
        if name == "webhook.simulate" or name.startswith("webhook.simulate.")
    ]
    assert reaching == []


def test_an_import_for_type_checking_or_in_a_function_counts() -> None:
    """A type-only import is a dependency all the same: the layering and the circle check see it."""
    source = (
        "from __future__ import annotations\n"
        "from typing import TYPE_CHECKING\n"
        "from webhook.kueue import resources\n"
        "if TYPE_CHECKING:\n"
        "    from webhook.cli.main import main\n"
        "    import webhook.cluster.snapshot\n"
        "def later() -> None:\n"
        "    from webhook.simulate.engine import Simulator\n"
        "from .hierarchy import Tree\n"
    )
    assert _imported(ast.parse(source), "webhook.kueue.potential") == [
        (3, "webhook.kueue.resources"),
        (5, "webhook.cli.main"),
        (6, "webhook.cluster.snapshot"),
        (8, "webhook.simulate.engine"),
        (9, "webhook.kueue.hierarchy"),
    ]


def _circles(edges: dict[str, set[str]]) -> list[list[str]]:
    """The strongly connected groups of more than one module (Tarjan's algorithm, iteratively)."""
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    on_stack: set[str] = set()
    found: list[list[str]] = []
    for start in sorted(edges):
        if start in index:
            continue
        work = [(start, iter(sorted(edges[start])))]
        index[start] = low[start] = len(index)
        stack.append(start)
        on_stack.add(start)
        while work:
            node, targets = work[-1]
            target = next(targets, None)
            if target is not None:
                if target not in index:
                    index[target] = low[target] = len(index)
                    stack.append(target)
                    on_stack.add(target)
                    work.append((target, iter(sorted(edges[target]))))
                elif target in on_stack:
                    low[node] = min(low[node], index[target])
                continue
            work.pop()
            if work:
                low[work[-1][0]] = min(low[work[-1][0]], low[node])
            if low[node] == index[node]:
                group = []
                while True:
                    member = stack.pop()
                    on_stack.discard(member)
                    group.append(member)
                    if member == node:
                        break
                if len(group) > 1:
                    found.append(sorted(group))
    return found


def test_the_circle_finder_finds_a_circle() -> None:
    edges = {"a": {"b"}, "b": {"c"}, "c": {"a"}, "d": {"a"}, "e": set()}
    assert _circles(edges) == [["a", "b", "c"]]


def test_no_module_reaches_itself_through_its_imports() -> None:
    """No circle between modules, type-only imports included (within a stage the layering allows any)."""
    edges = {
        name: {
            imported
            for _, imported in _imported(ast.parse(path.read_text(encoding="utf-8")), name)
            if imported in MODULES and imported != name
        }
        for name, path in MODULES.items()
    }
    assert _circles(edges) == []


def test_the_kueue_model_imports_only_the_vocabulary_and_itself() -> None:
    """The Kueue model is the bottom both the gates and the simulator stand on: below the readers too."""
    reaching = sorted(
        f"{path.relative_to(PACKAGE.parent)}:{line} imports {name}"
        for path in sorted((PACKAGE / "kueue").rglob("*.py"))
        for line, name in _imported(ast.parse(path.read_text(encoding="utf-8")), _module_name(path))
        if not name.startswith(("webhook.kube.", "webhook.kueue."))
    )
    assert reaching == []
