"""The package's stages import only downward: kube (vocabulary), policy, objects (the readers),
quota, cluster, simulate, explain (why a job is not running), rules, engine, admin (the guard
of Kueue's own objects), wire, serving, advisor (simulate, explain and quota apart from
admission), export, cli.

A module may import its own stage and those before it, never one after: the engine
knows nothing of the wire format (it hands the wire a patch as a list, and reads objects
through ``webhook.objects.readers.read_workload``), and what both the review decoder and
the rules need (``UserInfo``) lives below both.
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


def _imported(tree: ast.AST) -> list[tuple[int, str]]:
    names = []
    for node in ast.walk(tree):
        if isinstance(node, ast.ImportFrom) and node.module and node.level == 0:
            names.append((node.lineno, node.module))
        elif isinstance(node, ast.Import):
            names += [(node.lineno, alias.name) for alias in node.names]
    return [(line, name) for line, name in names if name.startswith("webhook.")]


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
        for line, name in _imported(ast.parse(path.read_text(encoding="utf-8"))):
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
