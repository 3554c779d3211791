"""No cache lives at module level in webhook/: what is worked out from the cluster is memoized on
the snapshot it came from (``webhook.cluster.snapshot``), what is a fixed function of the code is
a constant table made at import, and the rest is computed.

A module-level cache is a name assigned an empty dict-like at the top of a module (``{}``,
``dict()``, ``OrderedDict()``, ``defaultdict(...)``, a weak dictionary), filled later, or a
function wrapped in ``functools.lru_cache`` / ``functools.cache``. Constant tables
(``{"Ki": 10, ...}``, a comprehension) and ``cached_property`` (kept on its instance) are not.
"""

from __future__ import annotations

import ast
from pathlib import Path

import webhook

PACKAGE = Path(webhook.__file__).parent
#: what starts empty and is filled as the process runs
_EMPTY_CALLS = frozenset({"dict", "OrderedDict", "defaultdict", "WeakValueDictionary", "WeakKeyDictionary"})
_CACHE_DECORATORS = frozenset({"lru_cache", "cache"})
#: the module-level caches still here, each kept for a measured reason (the test fails when one is
#: added, and when one of these goes without being struck off):
KNOWN = {
    # quantity strings read already: 0.07 us a lookup against 1 us to parse "20Gi" again, several
    # per request and per Workload event
    "kube/quantity.py: _KEPT",
    # asked twice per podSet in dynamic mode: 0.05 / 0.27 us a hit against 0.7 / 2.8 us computed
    "kube/topology.py: @parse_topology",
    "kube/topology.py: @super_slice_problems",
}


def _name(node: ast.expr) -> str:
    """The called or decorating name (``functools.lru_cache(...)`` -> ``lru_cache``)."""
    if isinstance(node, ast.Call):
        node = node.func
    if isinstance(node, ast.Attribute):
        return node.attr
    return node.id if isinstance(node, ast.Name) else ""


def _starts_empty(value: ast.expr | None) -> bool:
    if isinstance(value, ast.Dict):
        return not value.keys
    if isinstance(value, ast.Call) and _name(value) in _EMPTY_CALLS:
        return _name(value) == "defaultdict" or not (value.args or value.keywords)
    return False


def module_caches(source: str) -> list[str]:
    """The module-level caches of one module's source: ``name`` or ``@function``."""
    tree = ast.parse(source)
    found = []
    for statement in tree.body:
        if isinstance(statement, ast.Assign) and _starts_empty(statement.value):
            found += [target.id for target in statement.targets if isinstance(target, ast.Name)]
        elif (
            isinstance(statement, ast.AnnAssign)
            and isinstance(statement.target, ast.Name)
            and _starts_empty(statement.value)
        ):
            found.append(statement.target.id)
    for node in ast.walk(tree):
        if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef)) and any(
            _name(decorator) in _CACHE_DECORATORS for decorator in node.decorator_list
        ):
            found.append(f"@{node.name}")
    return found


def test_the_check_finds_caches_and_leaves_constant_tables_alone() -> None:
    source = """
import functools
from collections import OrderedDict, defaultdict
from functools import cached_property, lru_cache

_SEEN = {}
_BY_KEY: dict[str, int] = dict()
_RECENT = OrderedDict()
_GROUPS = defaultdict(list)
SUFFIXES = {"Ki": 10, "Mi": 20}
SQUARES = {n: n * n for n in range(4)}
COPY = dict(SUFFIXES)

@lru_cache(maxsize=16)
def pointer(key): ...

@functools.cache
def pattern(text): ...

class Policy:
    @cached_property
    def names(self): ...

    @functools.lru_cache
    def plan(self): ...
"""
    assert module_caches(source) == ["_SEEN", "_BY_KEY", "_RECENT", "_GROUPS", "@pointer", "@pattern", "@plan"]


def test_webhook_holds_no_module_level_cache_but_the_known_ones() -> None:
    modules = sorted(PACKAGE.rglob("*.py"))
    assert len(modules) > 100
    found = {
        f"{path.relative_to(PACKAGE).as_posix()}: {name}"
        for path in modules
        for name in module_caches(path.read_text(encoding="utf-8"))
    }
    assert found == KNOWN
