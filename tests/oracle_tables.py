"""The restated Kueue tables of the simulator's tests as oracle cases.

The preemption tables of ``test_kueue_preemption`` restate Kueue's own test tables with the
builders of ``simulate_builders``: ClusterQueues, Cohorts and admitted Workloads written by
hand, with none of the fields their CRDs default. Here each table case becomes a case folder
the oracle reads: every object given its CRD's defaults (``crd_defaults``), each Workload
given the namespace, LocalQueue and podSet an object as stored has, a ResourceFlavor for
every flavor named, a LocalQueue of each ClusterQueue's name, Kueue's configuration when
the case asks for fair sharing, and the job as an incoming Workload asking the table's
amount in the table's queue at the table's priority. Both sides then run the whole
scheduling attempt (flavor assignment, then preemption), so what is compared is our
simulator's decision beside Kueue's, not the table's expectation.
"""

from __future__ import annotations

import copy
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from datetime import timedelta
from typing import Any

from crd_defaults import defaulted
from oracle_cases import KUEUE, NOW_ANNOTATION, Case, _kueue_configuration, _typed_list
from simulate_builders import NAMESPACE, NOW, pending_document

#: the plain words YAML 1.1 (Go's YAML reader) takes for booleans, lowercased
YAML_BOOLEANS = frozenset({"y", "n", "yes", "no", "on", "off", "true", "false"})


@dataclass(frozen=True)
class TableCase:
    """One row of a restated table, named ``table: row``."""

    name: str
    queues: Sequence[Mapping[str, Any]]
    cohorts: Sequence[Mapping[str, Any]]
    workloads: Sequence[Mapping[str, Any]]
    queue: str
    requests: Mapping[str, str]
    priority: int = 0
    fair: bool = False
    strategies: Sequence[str] = ()
    #: the ResourceFlavors as written; by default one without labels for each flavor named
    flavors: Sequence[Mapping[str, Any]] | None = None
    #: the job's Workload as written; by default one podSet asking ``requests`` once
    incoming: Mapping[str, Any] | None = None


def kube_name(name: str) -> str:
    """A table's name as a valid object name (Kueue's tables use ``a_standard``, ``ROOT``; the
    API server takes only lowercase RFC 1123 names): lowercased, ``_`` as ``-``; a name YAML 1.1
    reads as a boolean (``y``, ``n``, ``on`` ...), which the oracle's YAML reader would, prefixed."""
    out = name.lower().replace("_", "-")
    return f"named-{out}" if out in YAML_BOOLEANS else out


def _renamed(obj: Mapping[str, Any]) -> dict[str, Any]:
    """``obj`` with its own name and every queue or cohort it names as ``kube_name``."""
    out = copy.deepcopy(dict(obj))
    out["metadata"]["name"] = kube_name(out["metadata"]["name"])
    spec = out.get("spec") or {}
    for key in ("cohortName", "parentName", "queueName", "clusterQueue"):
        if spec.get(key):
            spec[key] = kube_name(spec[key])
    admission = (out.get("status") or {}).get("admission")
    if admission:
        admission["clusterQueue"] = kube_name(admission["clusterQueue"])
    return out


def _stored_workload(document: Mapping[str, Any]) -> dict[str, Any]:
    """A builder's admitted Workload as the API server holds one: a namespace, its LocalQueue
    (named after its ClusterQueue, as ``state`` names them) and a podSet of one pod asking
    what the admission uses (Kueue counts usage from the podSets and the admission together)."""
    out = _renamed(document)
    out["metadata"]["uid"] = out["metadata"]["name"]
    out["metadata"]["namespace"] = out["metadata"].get("namespace") or NAMESPACE
    admission = (out.get("status") or {}).get("admission")
    if admission and not out["spec"].get("podSets"):
        out["spec"]["podSets"] = [
            {
                "name": assigned["name"],
                "count": 1,
                "template": {
                    "spec": {"containers": [{"name": "c", "resources": {"requests": assigned["resourceUsage"]}}]}
                },
            }
            for assigned in admission["podSetAssignments"]
        ]
        for assigned in admission["podSetAssignments"]:
            assigned.setdefault("count", 1)
    return out


def _flavors(queues: Iterable[Mapping[str, Any]]) -> list[dict[str, Any]]:
    names = sorted(
        {f["name"] for q in queues for group in q["spec"].get("resourceGroups") or [] for f in group["flavors"]}
    )
    return [{"apiVersion": KUEUE, "kind": "ResourceFlavor", "metadata": {"name": n}, "spec": {}} for n in names]


def to_case(table: TableCase) -> Case:
    """The oracle case of one table row; every Kueue object with its CRD's defaults."""
    queues = [_renamed(q) for q in table.queues]
    cohorts = [_renamed(c) for c in table.cohorts]
    local_queues = [
        {
            "apiVersion": KUEUE,
            "kind": "LocalQueue",
            "metadata": {"name": q["metadata"]["name"], "namespace": NAMESPACE},
            "spec": {"clusterQueue": q["metadata"]["name"]},
        }
        for q in queues
    ]
    workloads = [_stored_workload(w) for w in table.workloads]
    # typed Lists, as the generated cases write them: an empty one says "none", not "unknown"
    objects = [
        _typed_list(kind, [defaulted(o) for o in items])
        for kind, items in (
            ("ResourceFlavor", _flavors(queues) if table.flavors is None else [dict(f) for f in table.flavors]),
            ("Cohort", cohorts),
            ("ClusterQueue", queues),
            ("LocalQueue", local_queues),
            ("Workload", workloads),
        )
    ]
    if table.fair:
        objects.append(_kueue_configuration(list(table.strategies)))
    written = table.incoming or pending_document("in", table.queue, table.requests, priority=table.priority)
    incoming = defaulted(_stored_workload(written))
    incoming["metadata"]["annotations"] = {NOW_ANNOTATION: (NOW + timedelta(hours=1)).strftime("%Y-%m-%dT%H:%M:%SZ")}
    return Case(objects, incoming, table.fair)


def preemption_tables() -> list[TableCase]:
    """Every row of ``test_kueue_preemption``'s restated tables of Kueue's preemption tests."""
    import test_kueue_preemption as t

    out = [
        TableCase(f"preemption_test: {name}", t.DEFAULT_QUEUES, (), w, q, {"cpu": cpu}, p)
        for name, (w, q, cpu, p, _) in sorted(t.CLASSICAL.items())
    ]
    out += [
        TableCase(f"preemption_fair_test: {name}", t.FAIR_QUEUES, (), w, q, {"cpu": cpu}, 0, fair=True)
        for name, (w, q, cpu, _) in sorted(t.FAIR_CASES.items())
    ]
    out += [
        TableCase(f"preemption_hierarchical_test: {name}", queues, cohorts, w, q, {"cpu": cpu}, p)
        for name, (cohorts, queues, w, (q, cpu, p), _) in sorted(t.HIERARCHICAL.items())
    ]
    out += [
        TableCase(f"preemption_fair_test, own queues: {name}", queues, cohorts, w, q, {"cpu": cpu}, p, True, s)
        for name, (queues, cohorts, w, (q, cpu, p, s), _) in sorted(t.FAIR_OWN.items())
    ]
    return out


@dataclass(frozen=True)
class Recorded:
    """The ``simulate`` calls of one test module's tests: the rows that can go to the oracle, and
    those that cannot, each with why."""

    rows: list[TableCase]
    not_compared: dict[str, str]


def _row(name: str, call: Any) -> TableCase | str:
    """A recorded ``simulate`` call as a row, or why it cannot be one."""
    if call.written is None:
        return "its state was not built by ``state``"
    if call.written.unexpressed:
        return call.written.unexpressed
    if call.incoming is None:
        return "the job was built from podSet demands, without a Workload document"
    written = call.written
    if any((f.get("spec") or {}).get("topologyName") for f in written.flavors or ()):
        return (
            "a topology-aware flavor (topologyName): Kueue places such a job by Topology and Nodes, "
            "which the oracle's states do not carry"
        )
    return TableCase(
        name,
        written.queues,
        written.cohorts,
        written.workloads,
        call.incoming["spec"]["queueName"],
        {},
        fair=written.fair,
        strategies=written.strategies,
        flavors=written.flavors,
        incoming=call.incoming,
    )


def recorded_calls(module: Any) -> Recorded:
    """Run each test of ``module`` that takes no fixture (each parameter set of a parametrized
    one) with ``simulate_builders`` recording, and turn every ``simulate`` call into a row."""
    import inspect

    from tests import simulate_builders as builders

    rows: list[TableCase] = []
    not_compared: dict[str, str] = {}
    for name, test in sorted(vars(module).items()):
        if not name.startswith("test_") or not callable(test):
            continue
        marks = [m for m in getattr(test, "pytestmark", []) if m.name == "parametrize"]
        parameters = list(inspect.signature(test).parameters)
        if len(marks) > 1 or (parameters and not marks):
            not_compared[f"{module.__name__}::{name}"] = "takes fixtures or several parameter lists"
            continue
        sets: list[tuple[str, dict[str, Any]]] = [("", {})]
        if marks:
            (argnames, values) = marks[0].args[:2]
            names = [a.strip() for a in argnames.split(",")] if isinstance(argnames, str) else list(argnames)
            sets = [(f"[{v!r}]", dict(zip(names, v if len(names) > 1 else (v,), strict=True))) for v in values]
        for label, kwargs in sets:
            calls = builders.start_recording()
            try:
                test(**kwargs)
            finally:
                builders.stop_recording()
            for index, call in enumerate(calls):
                row = _row(f"{module.__name__}::{name}{label} #{index}", call)
                if isinstance(row, str):
                    not_compared[f"{module.__name__}::{name}{label} #{index}"] = row
                else:
                    rows.append(row)
    return Recorded(rows, not_compared)
