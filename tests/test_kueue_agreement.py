"""The gates and the simulator agree on "could it ever fit".

The gates (``exceeds-queue-capacity``) read the snapshot's flavor assigner at zero usage; the
simulator answers ``never`` for a quota reason whatever the queues use now. Both read Kueue's
quota model, so on any cluster the two must give the same verdict: a job the gates call
never-fits is ``never`` in the simulator on any usage, and a job the simulator calls ``never``
for a quota reason, at any usage, is one the gates refuse. Clusters (ClusterQueues, a cohort
tree, flavors, nominal quotas, borrowing and lending limits), jobs and admitted Workloads are
drawn by a seeded generator, so a failure names a case that replays.

They agree by construction: the simulator's ``never`` is the gates' question
(``webhook.quota.feasibility``), asked whenever Kueue's assigner finds no fit now. Kueue's own
first choice is not that question: its podSet loop stops at the first podSet without room
now, before a later one shows the sum can never fit, and it takes the first flavor that fits
each podSet where another choice would hold them all.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from hypothesis import HealthCheck, event, given, settings
from hypothesis import strategies as st
from quota_fixtures import store
from simulate_builders import admitted, cluster_queue, cohort, job, simulate, state

from webhook.kueue.flavorassigner import EXCEEDS_MAX_QUOTA, NO_MATCHING_FLAVOR
from webhook.kueue.resource_node import available, potential_available
from webhook.simulate.result import NEVER, WAIT
from webhook.simulate.state import tree_of

TPU, CPU = "google.com/tpu", "cpu"
RESOURCES = (TPU, CPU)
FLAVORS = ("f0", "f1", "f2")
COHORTS = ("root", "mid")
QUEUES = ("cq0", "cq1", "cq2")
#: the job is always sent to this queue; the others are its cohort's lenders and borrowers
TARGET = QUEUES[0]


@dataclass(frozen=True)
class Cluster:
    queues: tuple[dict[str, Any], ...]
    cohorts: tuple[dict[str, Any], ...]
    #: per queue: (flavor, resource) it has quota on, the pairs admitted Workloads may use
    quota_keys: dict[str, tuple[tuple[str, str], ...]]


amounts = st.integers(min_value=0, max_value=8)


@st.composite
def _quota(draw: st.DrawFn) -> tuple[str, str | None, str | None]:
    """(nominal, borrowingLimit, lendingLimit); a lendingLimit never above nominal, as Kueue validates."""
    nominal = draw(amounts)
    borrowing = draw(st.none() | amounts)
    lending = draw(st.none() | st.integers(min_value=0, max_value=nominal))
    return (str(nominal), None if borrowing is None else str(borrowing), None if lending is None else str(lending))


@st.composite
def _groups(draw: st.DrawFn, cohort_side: bool = False) -> list[dict[str, dict[str, Any]]]:
    """One or two resource groups over disjoint resources, each with an ordered subset of the flavors."""
    split = draw(st.booleans())
    covered = [list(RESOURCES)] if not split else [[TPU], [CPU]]
    groups = []
    used: set[str] = set()
    for resources in covered:
        choices = [f for f in FLAVORS if f not in used]
        flavors = draw(st.lists(st.sampled_from(choices), min_size=0 if cohort_side else 1, max_size=2, unique=True))
        used.update(flavors)
        if flavors:
            groups.append({f: {r: draw(_quota()) for r in resources} for f in flavors})
    return groups


@st.composite
def clusters(draw: st.DrawFn) -> Cluster:
    nested = draw(st.booleans())
    cohort_objects = []
    if nested:
        cohort_objects.append(cohort("mid", *draw(_groups(cohort_side=True)), parent="root"))
    cohort_objects.append(cohort("root", *draw(_groups(cohort_side=True))))
    homes = [*COHORTS] if nested else ["root"]
    queues, keys = [], {}
    for name in QUEUES[: draw(st.integers(min_value=1, max_value=len(QUEUES)))]:
        groups = draw(_groups())
        home = draw(st.sampled_from([*homes, None]))
        queues.append(cluster_queue(name, *groups, cohort=home))
        keys[name] = tuple((f, r) for g in groups for f, rs in g.items() for r in rs)
    return Cluster(tuple(queues), tuple(cohort_objects), keys)


@st.composite
def podsets(draw: st.DrawFn, least: int = 1, most: int = 2) -> tuple[tuple[str, int, dict[str, str]], ...]:
    out = []
    for i in range(draw(st.integers(min_value=least, max_value=most))):
        requests = {r: str(draw(st.integers(min_value=1, max_value=4))) for r in draw(_some_resources())}
        out.append((f"ps{i}", draw(st.integers(min_value=1, max_value=4)), requests))
    return tuple(out)


def _some_resources() -> st.SearchStrategy[list[str]]:
    return st.lists(st.sampled_from(RESOURCES), min_size=1, max_size=2, unique=True)


@st.composite
def usage(draw: st.DrawFn, cluster: Cluster) -> list[dict[str, Any]]:
    """Admitted Workloads on flavors their queues have quota on, up to well past nominal."""
    workloads = []
    for i in range(draw(st.integers(min_value=0, max_value=4))):
        queue = draw(st.sampled_from(sorted(cluster.quota_keys)))
        keys = cluster.quota_keys[queue]
        if not keys:
            continue
        flavor, resource = draw(st.sampled_from(keys))
        amount = str(draw(st.integers(min_value=1, max_value=12)))
        workloads.append(admitted(f"w{i}", queue, {resource: amount}, flavor=flavor, namespace="ns"))
    return workloads


def _gates_refuse(cluster: Cluster, demands: Any) -> bool:
    """What ``exceeds-queue-capacity`` reads: the snapshot's assignment at zero usage says no fit."""
    flavors: dict[str, dict[str, Any]] = {f: {} for f in FLAVORS}
    snap = store(*cluster.queues, *cluster.cohorts, flavors=flavors).snapshot()
    return snap.assign(TARGET, demands).status == "nofit"


def _simulator_never(cluster: Cluster, workloads: list[dict[str, Any]], incoming: Any) -> bool:
    flavors = [
        {"apiVersion": "kueue.x-k8s.io/v1beta2", "kind": "ResourceFlavor", "metadata": {"name": f}} for f in FLAVORS
    ]
    result = simulate(state(cluster.queues, cluster.cohorts, workloads, flavors=flavors), incoming)
    return result.outcome == NEVER and result.reason in (EXCEEDS_MAX_QUOTA, NO_MATCHING_FLAVOR)


SETTINGS = settings(
    max_examples=200,
    deadline=None,
    derandomize=True,
    database=None,
    suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large],
)


def _verdicts(data: st.DataObject, cluster: Cluster, shape: Any) -> tuple[bool, bool, bool]:
    """(gates refuse, simulator ``never`` at zero usage, simulator ``never`` at drawn usage)."""
    incoming = job(TARGET, {}, podsets=shape)
    gates = _gates_refuse(cluster, incoming.podsets)
    at_zero = _simulator_never(cluster, [], incoming)
    workloads = data.draw(usage(cluster))
    event(f"gates refuse: {gates}; in use: {bool(workloads)}")
    return gates, at_zero, _simulator_never(cluster, workloads, incoming)


@SETTINGS
@given(data=st.data(), cluster=clusters())
def test_the_gates_bound_is_the_simulators_potential_and_its_available_at_zero_usage(
    data: st.DataObject, cluster: Cluster
) -> None:
    """Per queue, flavor and resource: the gates' bound (their tree, built from the member queues'
    sums) is the simulator's potential available (a node per queue) at any usage, and that is
    what the simulator's tree makes available with nothing admitted."""
    snap = store(*cluster.queues, *cluster.cohorts).snapshot()
    keys = [(q, fr) for q, frs in sorted(cluster.quota_keys.items()) for fr in frs]
    gates = {(q, fr): snap.potential(q, *fr).value for q, fr in keys}
    empty = tree_of(state(cluster.queues, cluster.cohorts))
    used = tree_of(state(cluster.queues, cluster.cohorts, data.draw(usage(cluster))))
    assert (
        {(q, fr): potential_available(used.queues[q], fr) for q, fr in keys},
        {(q, fr): available(empty.queues[q], fr) for q, fr in keys},
    ) == (gates, gates)


@SETTINGS
@given(data=st.data(), cluster=clusters(), shape=podsets(most=3))
def test_the_gates_refuse_exactly_what_the_simulator_calls_never_at_any_usage(
    data: st.DataObject, cluster: Cluster, shape: Any
) -> None:
    """``never`` is the capacity rules' answer (SPEC's simulate outcomes), at zero usage and at any
    other: the verdict never comes from usage."""
    gates, at_zero, now = _verdicts(data, cluster, shape)
    assert (at_zero, now) == (gates, gates)


def test_a_job_kueues_first_choice_cannot_hold_but_another_can_waits() -> None:
    """Kueue's assigner takes the first flavor that fits each podSet in turn and never goes back:
    here it puts the first podSet on f1, and the second then exceeds f1's 8 (Kueue reports
    ExceedsMaxQuota). With the first on f2 both fit, which Kueue chooses once f1 is in use, so
    the job is not ``never``: it waits, saying why."""
    cluster = Cluster(
        (cluster_queue("cq0", {"f0": {TPU: "1"}}, {"f1": {CPU: "8"}, "f2": {CPU: "0"}}, cohort="root"),),
        (cohort("root", {"f2": {TPU: "0", CPU: "1"}}),),
        {},
    )
    incoming = job(TARGET, {}, podsets=(("ps0", 1, {TPU: "1", CPU: "1"}), ("ps1", 4, {CPU: "2"})))
    flavors = [
        {"apiVersion": "kueue.x-k8s.io/v1beta2", "kind": "ResourceFlavor", "metadata": {"name": f}} for f in FLAVORS
    ]
    result = simulate(state(cluster.queues, cluster.cohorts, [], flavors=flavors), incoming)
    assert (result.outcome, result.reason, result.message, _gates_refuse(cluster, incoming.podsets)) == (
        WAIT,
        EXCEEDS_MAX_QUOTA,
        "podSet ps1: f1: cpu in flavor f1: 9 > maximum capacity 8; f2: cpu in flavor f2: 8 > maximum capacity 1; "
        "Kueue's first choice of flavors at the current usage cannot hold it, another choice could, "
        "and Kueue makes it when usage changes",
        False,
    )
