"""Hypothesis strategies shared by the engine and HTTP fuzz tests."""

from __future__ import annotations

from typing import Any

from hypothesis import strategies as st

FIXTURES = [
    "rfc-4.6-static",
    "rfc-4.6-static-single",
    "rfc-4.3.1-dynamic",
    "pathways-dynamic",
    "falcon-migration",
    "falcon-before-migration",
]
scalars = (
    st.none()
    | st.booleans()
    | st.integers(min_value=-(2**70), max_value=2**70)
    | st.floats()  # json.loads accepts NaN and Infinity, so the engine sees them too
    | st.text(max_size=20)
    | st.sampled_from(["4x4x4", "2x2x1", "tpu7x", "4", "", "-1", "1e3", "100Gi", "cloud.google.com/gke-nodepool"])
)
json_values = st.recursive(
    scalars,
    lambda children: st.lists(children, max_size=4) | st.dictionaries(st.text(max_size=12), children, max_size=4),
    max_leaves=25,
)


def json_paths(node: Any, prefix: tuple[Any, ...] = ()) -> list[tuple[Any, ...]]:
    """Every path into a JSON tree, the root included."""
    out = [prefix]
    if isinstance(node, dict):
        for key, value in node.items():
            out += json_paths(value, (*prefix, key))
    elif isinstance(node, list):
        for index, value in enumerate(node):
            out += json_paths(value, (*prefix, index))
    return out


def mutate_subtrees(draw: st.DrawFn, root: Any, keep_root: bool) -> Any:
    """Replace one to three subtrees of ``root`` with arbitrary JSON, or remove them."""
    holder: dict[str, Any] = {"root": root}
    for _ in range(draw(st.integers(1, 3))):
        candidates = json_paths(holder["root"], ("root",))
        if keep_root:
            candidates = candidates[1:] or [("root",)]
        path = draw(st.sampled_from(candidates))
        parent: Any = holder
        for key in path[:-1]:
            parent = parent[key]
        if draw(st.booleans()) and len(path) > 1:
            del parent[path[-1]]
        else:
            parent[path[-1]] = draw(json_values)
    return holder["root"]
