"""Hypothesis strategies shared by the engine, HTTP, VAP and mutating-policy fuzz tests."""

from __future__ import annotations

from typing import Any

from hypothesis import strategies as st
from support import delete_path, load_jobset, set_path

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


# ------------------------------------------------------------------ JobSets aimed at the exported rules

POD = "spec.replicatedJobs.{i}.template.spec.template"
TOPOLOGIES = [
    "4x4x4",
    "4x4x8",
    "4x8x8",
    "8x8x8",
    "8x16x16",
    "16x16x16",
    "16x24x24",
    "16x24x28",
    "8x4x4",
    "4x4x6",
    "2x2x1",
    "2x2x2",
    "2x2x4",
    "2x4x4",
    "2x2x3",
    "0x4x4",
    "4x4",
    "04x04x04",
    "4x4x4 ",
    "x",
    "",
    "999999x999999x999999",
    "1234567x4x4",
    "4x8x4",
]
QUANTITIES = [4, 8, 0, "4", "8", "4.0", "4000m", "0.004k", "4e0", "40e-1", "+4", "4.", "1"]
EDITS: dict[str, st.SearchStrategy[Any]] = {
    'metadata.labels["kueue.x-k8s.io/queue-name"]': st.sampled_from(
        ["team-a-queue", "default", "team-a", "Team-queue", "-queue", "a-queue"]
    ),
    'metadata.labels["kueue.x-k8s.io/priority-class"]': st.sampled_from(
        ["guaranteed", "best-effort", "default", "high"]
    ),
    'metadata.annotations["alpha.jobset.sigs.k8s.io/exclusive-topology"]': st.just("cloud.google.com/gke-nodepool"),
    "metadata.name": st.text("abcdefghijklmnopqrstuvwxyz0123456789-", min_size=1, max_size=40),
    "spec.suspend": st.booleans(),
    "spec.replicatedJobs.{i}.name": st.text("abcdefghijklmnopqrstuvwxyz-", min_size=1, max_size=30),
    "spec.replicatedJobs.{i}.replicas": st.integers(0, 12),
    'spec.replicatedJobs.{i}.template.metadata.annotations["alpha.jobset.sigs.k8s.io/exclusive-topology"]': st.just(
        "x"
    ),
    "spec.replicatedJobs.{i}.template.spec.parallelism": st.integers(-2, 70),
    "spec.replicatedJobs.{i}.template.spec.completions": st.integers(-2, 70),
    POD + '.metadata.annotations["cloud.google.com/gke-tpu-slice-topology"]': st.sampled_from(TOPOLOGIES)
    | st.text(max_size=8),
    POD + '.metadata.annotations["kueue.x-k8s.io/podset-required-topology"]': st.sampled_from(
        ["cloud.google.com/gke-nodepool", "kubernetes.io/hostname"]
    ),
    POD + '.metadata.annotations["kueue.x-k8s.io/podset-slice-required-topology"]': st.sampled_from(
        ["cloud.google.com/gke-nodepool", "rack"]
    ),
    POD + '.metadata.annotations["kueue.x-k8s.io/podset-slice-size"]': st.sampled_from(
        ["16", "32", "64", " 16", "016", "sixteen", "²", "99999999999999999999999", "1e1"]
    ),
    POD + '.spec.nodeSelector["cloud.google.com/gke-tpu-accelerator"]': st.sampled_from(["tpu7x", "tpu-v5p-slice", ""]),
    POD + '.spec.nodeSelector["cloud.google.com/gke-tpu-topology"]': st.sampled_from(TOPOLOGIES),
    POD + ".spec.priorityClassName": st.sampled_from(["", "high", "system-node-critical"]),
    POD + '.spec.containers.0.resources.requests["google.com/tpu"]': st.sampled_from(QUANTITIES),
    POD + '.spec.containers.0.resources.limits["google.com/tpu"]': st.sampled_from(QUANTITIES),
}


def _set(obj: dict[str, Any], path: str, value: Any, delete: bool) -> None:
    try:
        if delete:
            delete_path(obj, path)
        else:
            set_path(obj, path, value)
    except (IndexError, KeyError, TypeError):
        pass  # the fixture has no such replicatedJob or container


@st.composite
def targeted_jobsets(draw: st.DrawFn) -> dict[str, Any]:
    """A fixture JobSet with the fields the exported rules read set to edge values or removed."""
    obj = load_jobset(draw(st.sampled_from(FIXTURES)))
    obj["metadata"].pop("namespace", None)
    jobs = len(obj["spec"]["replicatedJobs"])
    for path in draw(st.lists(st.sampled_from(sorted(EDITS)), min_size=1, max_size=6, unique=True)):
        concrete = path.replace("{i}", str(draw(st.integers(0, jobs - 1))))
        _set(obj, concrete, draw(EDITS[path]), delete=draw(st.integers(0, 4)) == 0)
    return obj
