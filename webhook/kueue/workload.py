"""A Workload as Kueue's code reads it (Kueue's ``pkg/workload``: ``workload.Info``), read once per event.

``WorkloadInfo`` is the one projection of a Workload document: the store makes it once per
watch event (``read_workload``), and the ledger, the simulator and explain read it instead of
the document. It holds what each of them reads, no more: key, uid, queue, priority,
creation and reservation times, state, conditions, the admission (ClusterQueue, usage per
(flavor, resource), topology domains), the podSets' shapes while it waits, its owner, and
for explain its AdmissionChecks, labels and requeue state. ``document()`` gives explain's
part back in the Workload's own shape. One per Workload held, so slots and shared values
only: strings interned, tuples and usage handed to the store's sharing table.

What counts, as Kueue's cache counts it (``HasActiveQuotaReservation``, ``IsAdmissible``):

- **in use** (``HOLDS``): condition ``QuotaReserved`` is True, ``Finished`` is not True,
  and ``spec.active`` is not false. Its usage is read from ``status.admission``
  (``podSetAssignments[].resourceUsage`` on ``flavors``), so the flavor is Kueue's own;
  the topology domains its ``topologyAssignment`` places pods in are kept too (static
  mode's placement reads which node pools are held).
- **pending** (``WAITS``): no active reservation, not finished, ``spec.active`` not false,
  and ``WaitingForReplacementPods`` not True, whatever reason its ``QuotaReserved`` False
  condition gives (``Pending``, ``Inadmissible``, or one token per cause): every one names
  a Workload still in its queue.
- everything else (finished, deactivated, waiting for replacement pods) does not count.

``AdmittedWorkload`` is what the tree and the preemptor need of one holding quota, and
``PendingWorkload`` what the queue in front and the flavor assigner need of one waiting; the
projection makes either (``WorkloadInfo.counted``) when a scheduling attempt reads its queue.
"""

from __future__ import annotations

import dataclasses
import sys
from collections.abc import Mapping
from dataclasses import dataclass
from datetime import UTC, datetime
from decimal import Decimal
from typing import Any, Final

from webhook.kube.jsonvalues import as_dict
from webhook.kube.quantity import CONTEXT, quantity_or_none
from webhook.kube.sharing import Share, unshared
from webhook.kube.topology import NODEPOOL_LABEL
from webhook.kueue.podset import PodSetDemand, podset_demand
from webhook.kueue.resources import FlavorResource

ZERO: Final = Decimal(0)
HOLDS, WAITS, IDLE, FINISHED, REPLACING = "holds", "waits", "idle", "finished", "replacing"

_CONDITION_FIELDS: Final = ("type", "status", "reason", "message", "lastTransitionTime")
_CHECK_FIELDS: Final = ("name", "state", "message", "lastTransitionTime")
_OWNER_FIELDS: Final = ("apiVersion", "kind", "name", "uid", "controller")
_SPEC_FIELDS: Final = ("queueName", "active", "priority", "priorityClassName")
_REF_FIELDS: Final = ("group", "kind", "name")
_REQUEUE_FIELDS: Final = ("count", "requeueAt")
#: the job-uid label first (``WorkloadInfo.job_uid``)
_LABELS: Final = ("kueue.x-k8s.io/job-uid", "kueue.x-k8s.io/queue-name")

#: a mapping's values in its fields' order, ``None`` for a field it does not have
Values = tuple[Any, ...]
#: (flavor, resource, amount) of an admitted Workload
Usage = tuple[tuple[str, str, Decimal], ...]
#: (node label, value) of the topology domains an admitted Workload's pods are placed in
Placed = tuple[tuple[str, str], ...]
#: its podSets as the flavor assigner reads them
Shape = tuple[PodSetDemand, ...]


@dataclass(frozen=True, slots=True)
class AdmittedWorkload:
    """A Workload holding quota (``QuotaReserved`` True, not finished): what it uses, and where."""

    key: str
    uid: str
    cluster_queue: str
    priority: int
    created: datetime
    #: ``QuotaReserved``'s lastTransitionTime; ``None``: unknown (Kueue then reads "now")
    reserved: datetime | None
    usage: Mapping[FlavorResource, Decimal]
    #: ``Evicted`` is True: preemption or eviction already under way (Kueue tries it first)
    evicted: bool = False


@dataclass(frozen=True, slots=True)
class PendingWorkload:
    """A Workload waiting in a LocalQueue, or the job being simulated: what the queue in front and
    the flavor assigner read of it."""

    key: str
    uid: str
    namespace: str
    queue_name: str
    priority: int
    created: datetime
    podsets: Shape
    active: bool = True


#: a creation time Kueue would order before every other (``metadata.creationTimestamp`` unknown)
EPOCH: Final = datetime.fromtimestamp(0, UTC)


def _time(seconds: float) -> datetime:
    return datetime.fromtimestamp(seconds, UTC) if seconds else EPOCH


#: what the ledger, the simulator's state and the placement read: equal in these, a new
#: projection moves no count
COUNTED: Final = (
    "chips",
    "cluster_queue",
    "created",
    "evicted",
    "local_queue",
    "owner_kind",
    "owner_name",
    "placed",
    "priority",
    "priority_value",
    "reserved_at",
    "shape",
    "state",
    "uid",
    "usage",
)
#: what explain reads besides: equal in these and in ``uid``, explain's lookups stay as they are
EXPLAINED: Final = (
    "api_version",
    "namespace",
    "name",
    "created_at",
    "labels",
    "owners",
    "spec",
    "priority_class_ref",
    "conditions",
    "admitted_to",
    "checks",
    "requeue",
)


class WorkloadInfo:
    """The projection of one Workload (see the module): what Kueue's cache counts, and what explain reads."""

    __slots__ = COUNTED + EXPLAINED

    def __init__(
        self,
        local_queue: str,
        cluster_queue: str,
        priority: str,
        state: str,
        chips: tuple[tuple[str, int], ...] = (),
        shape: Shape = (),
        *,
        uid: str = "",
        priority_value: int = 0,
        created: float = 0.0,
        reserved_at: float = 0.0,
        usage: Usage = (),
        owner_kind: str = "",
        owner_name: str = "",
        evicted: bool = False,
        placed: Placed | None = (),
        api_version: str = "",
        namespace: str = "",
        name: str = "",
        created_at: str = "",
        labels: Values = (None, None),
        owners: tuple[Values, ...] = (),
        spec: Values = (None, None, None, None),
        priority_class_ref: Values | None = None,
        conditions: tuple[Values, ...] = (),
        admitted_to: str | None = None,
        checks: tuple[Values, ...] | None = None,
        requeue: Values | None = None,
    ) -> None:
        self.local_queue = local_queue
        #: holding quota: the ClusterQueue of its admission ("" otherwise)
        self.cluster_queue = cluster_queue
        #: the priority class's name (``spec.priorityClassRef``)
        self.priority = priority
        self.state = state
        #: holding quota: (flavor, chips) from the admission
        self.chips = chips
        #: waiting: its podSets, as the flavor assigner reads them
        self.shape = shape
        self.uid = uid
        #: ``spec.priority``: the value Kueue orders and preempts by
        self.priority_value = priority_value
        #: ``metadata.creationTimestamp``, seconds since the epoch (0: unknown)
        self.created = created
        #: when its ``QuotaReserved`` condition turned True, seconds since the epoch (0: not reserved)
        self.reserved_at = reserved_at
        #: holding quota: (flavor, resource, amount) summed over its podSets, from the admission
        self.usage = usage
        #: its controller owner (the job Kueue made it for), when it names one
        self.owner_kind = owner_kind
        self.owner_name = owner_name
        #: holding quota with ``Evicted`` True: its eviction is under way (Kueue's preemptor tries it first)
        self.evicted = evicted
        #: holding quota: the topology domains its admission's ``topologyAssignment`` places pods in,
        #: as (node label, value) of the node-pool level, else of the lowest level (hostnames);
        #: ``None`` when a ``topologyAssignment`` is there but cannot be read
        self.placed = placed
        self.api_version = api_version
        self.namespace = namespace
        self.name = name
        #: ``metadata.creationTimestamp`` as written
        self.created_at = created_at
        self.labels = labels
        self.owners = owners
        self.spec = spec
        self.priority_class_ref = priority_class_ref
        #: ``status.conditions``, each as (type, status, reason, message, lastTransitionTime), read once
        self.conditions = conditions
        #: ``status.admission.clusterQueue`` whatever the state (``cluster_queue`` only while it holds)
        self.admitted_to = admitted_to
        self.checks = checks
        self.requeue = requeue

    def counts_like(self, other: WorkloadInfo) -> bool:
        """Same in what is counted: a status-only update (most Workload events) moves no count."""
        return all(getattr(self, name) == getattr(other, name) for name in COUNTED)

    def reads_like(self, other: WorkloadInfo) -> bool:
        """Same in what explain reads: its lookups and records stay as they are."""
        return self.uid == other.uid and all(getattr(self, name) == getattr(other, name) for name in EXPLAINED)

    def __eq__(self, other: object) -> bool:
        if not isinstance(other, WorkloadInfo):
            return NotImplemented
        return self.counts_like(other) and self.reads_like(other)

    __hash__ = None  # type: ignore[assignment]

    @property
    def job_uid(self) -> str:
        """The ``kueue.x-k8s.io/job-uid`` label ("" when absent)."""
        value = self.labels[0]
        return value if isinstance(value, str) else ""

    def owner_references(self) -> list[dict[str, Any]]:
        return [_mapping(owner, _OWNER_FIELDS) for owner in self.owners]

    def admitted(self, namespace: str, name: str) -> AdmittedWorkload:
        """It holding quota, as the cohort tree and the preemptor read it (``namespace``/``name``: its key)."""
        key = f"{namespace}/{name}"
        return AdmittedWorkload(
            key,
            self.uid or key,
            self.cluster_queue,
            self.priority_value,
            _time(self.created),
            datetime.fromtimestamp(self.reserved_at, UTC) if self.reserved_at else None,
            {(flavor, resource): amount for flavor, resource, amount in self.usage},
            self.evicted,
        )

    def pending(self, namespace: str, name: str, active: bool = True) -> PendingWorkload:
        """It waiting in its LocalQueue, as the queue in front reads it."""
        key = f"{namespace}/{name}"
        return PendingWorkload(
            key,
            self.uid or key,
            namespace,
            self.local_queue,
            self.priority_value,
            _time(self.created),
            self.shape,
            active,
        )

    def counted(self, namespace: str, name: str) -> AdmittedWorkload | PendingWorkload | None:
        """It as Kueue's cache counts it: holding quota, waiting, or (``None``) not at all."""
        if self.state == HOLDS:
            return self.admitted(namespace, name)
        if self.state == WAITS:
            return self.pending(namespace, name)
        return None

    def document(self) -> dict[str, Any]:
        """Explain's part in the Workload's own shape (a new dict: the reader may keep it)."""
        metadata: dict[str, Any] = {"name": self.name, "namespace": self.namespace}
        if self.uid:
            metadata["uid"] = self.uid
        if self.created_at:
            metadata["creationTimestamp"] = self.created_at
        labels = _mapping(self.labels, _LABELS)
        if labels:
            metadata["labels"] = labels
        if self.owners:
            metadata["ownerReferences"] = self.owner_references()
        spec = _mapping(self.spec, _SPEC_FIELDS)
        if self.priority_class_ref is not None:
            spec["priorityClassRef"] = _mapping(self.priority_class_ref, _REF_FIELDS)
        status: dict[str, Any] = {"conditions": [_mapping(c, _CONDITION_FIELDS) for c in self.conditions]}
        if self.admitted_to is not None:
            status["admission"] = {"clusterQueue": self.admitted_to}
        if self.checks is not None:
            status["admissionChecks"] = [_mapping(check, _CHECK_FIELDS) for check in self.checks]
        if self.requeue is not None:
            status["requeueState"] = _mapping(self.requeue, _REQUEUE_FIELDS)
        return {
            "apiVersion": self.api_version,
            "kind": "Workload",
            "metadata": metadata,
            "spec": spec,
            "status": status,
        }


def _intern(value: Any) -> str:
    return sys.intern(str(value)) if value else ""


def _values(value: Any, fields: tuple[str, ...], shared: Share) -> Values:
    """A mapping's ``fields`` as a shared tuple of shared values."""
    source = as_dict(value)
    return shared(tuple(shared(source.get(key)) for key in fields))


def _values_list(value: Any, fields: tuple[str, ...], shared: Share) -> tuple[Values, ...] | None:
    if not isinstance(value, list):
        return None
    return shared(tuple(_values(item, fields, shared) for item in value if isinstance(item, Mapping)))


def _mapping(values: Values, fields: tuple[str, ...]) -> dict[str, Any]:
    return {key: value for key, value in zip(fields, values, strict=True) if value is not None}


def _states(conditions: tuple[Values, ...]) -> dict[str, tuple[bool, str]]:
    """Per condition type: whether it is True, and since when (the last entry of a type wins)."""
    return {str(c[0]): (c[1] == "True", str(c[4] or "")) for c in conditions}


def _seconds(value: Any) -> float:
    """An RFC 3339 time as seconds since the epoch; 0 when absent or unreadable."""
    if not isinstance(value, str) or not value:
        return 0.0
    try:
        return datetime.fromisoformat(value).timestamp()
    except ValueError:
        return 0.0


def _owner(metadata: Mapping[str, Any]) -> tuple[str, str]:
    """(kind, name) of the ``controller: true`` owner reference; ("", "") when none."""
    for reference in metadata.get("ownerReferences") or ():
        if isinstance(reference, dict) and reference.get("controller") is True:
            return _intern(reference.get("kind")), str(reference.get("name") or "")
    return "", ""


def _usage(admission: Mapping[str, Any]) -> Usage:
    """Per (flavor, resource), what the admission's podSets use (``resourceUsage`` on ``flavors``)."""
    sums: dict[tuple[str, str], Decimal] = {}
    for assignment in map(as_dict, admission.get("podSetAssignments") or ()):
        flavors = as_dict(assignment.get("flavors"))
        for resource, raw in as_dict(assignment.get("resourceUsage")).items():
            amount, flavor = quantity_or_none(raw), flavors.get(resource)
            if amount is not None and flavor:
                key = (_intern(flavor), _intern(resource))
                sums[key] = CONTEXT.add(sums.get(key, ZERO), amount)
    return tuple(sorted((flavor, resource, amount) for (flavor, resource), amount in sums.items()))


def _placed(admission: Mapping[str, Any], shared: Share) -> Placed | None:
    """The domains of every podSet's ``topologyAssignment`` (shared); ``None`` when one cannot be read."""
    found: set[tuple[str, str]] = set()
    for assignment in map(as_dict, admission.get("podSetAssignments") or ()):
        topology = assignment.get("topologyAssignment")
        if topology is None:
            continue
        domains = _domains(topology)
        if domains is None:
            return None
        found.update(domains)
    return shared(tuple(sorted(found)))


def _domains(topology: Any) -> set[tuple[str, str]] | None:
    """(label, value) per domain of one ``topologyAssignment``: v1beta2's ``slices`` (values per level,
    each ``universal`` or ``individual`` prefix + roots + suffix) or v1beta1's ``domains`` (values)."""
    levels = topology.get("levels") if isinstance(topology, dict) else None
    if not isinstance(levels, list) or not levels or not all(isinstance(level, str) and level for level in levels):
        return None
    at = levels.index(NODEPOOL_LABEL) if NODEPOOL_LABEL in levels else len(levels) - 1
    label = _intern(levels[at])
    found: set[tuple[str, str]] = set()
    if "slices" in topology:
        slices = topology["slices"]
        if not isinstance(slices, list):
            return None
        for piece in slices:
            values = _slice_values(piece, len(levels), at)
            if values is None:
                return None
            found.update((label, value) for value in values)
        return found
    domains = topology.get("domains")
    if not isinstance(domains, list):
        return None
    for domain in domains:
        values = domain.get("values") if isinstance(domain, dict) else None
        if not isinstance(values, list) or len(values) != len(levels) or not isinstance(values[at], str):
            return None
        found.add((label, _intern(values[at])))
    return found


def _slice_values(piece: Any, levels: int, at: int) -> list[str] | None:
    """The values at level ``at`` of one v1beta2 ``TopologyAssignmentSlice``."""
    if not isinstance(piece, dict):
        return None
    count, per_level = piece.get("domainCount"), piece.get("valuesPerLevel")
    if type(count) is not int or count < 1 or not isinstance(per_level, list) or len(per_level) != levels:
        return None
    level = per_level[at]
    if not isinstance(level, dict):
        return None
    universal, individual = level.get("universal"), level.get("individual")
    if isinstance(universal, str) and universal and individual is None:
        return [_intern(universal)]
    if universal is not None or not isinstance(individual, dict):
        return None
    roots, prefix, suffix = individual.get("roots"), individual.get("prefix") or "", individual.get("suffix") or ""
    if not isinstance(roots, list) or len(roots) != count or not isinstance(prefix, str) or not isinstance(suffix, str):
        return None
    if not all(isinstance(root, str) for root in roots):
        return None
    return [_intern(f"{prefix}{root}{suffix}") for root in roots]


_NOT: Final = (False, "")


def shape_of(spec: Mapping[str, Any], shared: Share = unshared) -> Shape:
    """A Workload's ``spec.podSets`` as the flavor assigner reads them (shared between equal shapes).

    A podSet asks for topology-aware scheduling when Kueue wrote a ``topologyRequest`` on it
    (from the job's annotations, as ``webhook.quota.podsets.asks_for_tas`` reads them).
    """
    podsets = []
    for podset in map(as_dict, spec.get("podSets") or ()):
        pod = as_dict(as_dict(podset.get("template")).get("spec"))
        count = podset.get("count", 1)
        demand = podset_demand(str(podset.get("name", "")), pod, count if isinstance(count, int) else 1, share=shared)
        if "topologyRequest" in podset:
            demand = podset_demand(demand.name, pod, demand.count, dict(demand.requests), tas=True, share=shared)
        podsets.append(demand)
    return shared(tuple(podsets))


def submitted_workload(obj: Mapping[str, Any], tpu: str) -> PendingWorkload:
    """A Workload document as submitted now (the job ``simulate`` is asked about): its podSets
    whatever its status says, and whether it is active (a deactivated one is answered, not dropped)."""
    metadata, spec = as_dict(obj.get("metadata")), as_dict(obj.get("spec"))
    info = read_workload(obj, tpu)
    active = spec.get("active", True) is not False
    job = info.pending(str(metadata.get("namespace", "")), str(metadata.get("name", "")), active)
    # the projection keeps podSets only while the Workload waits; as submitted, it always has them
    return job if info.shape else dataclasses.replace(job, podsets=shape_of(spec))


def read_workload(obj: Mapping[str, Any], tpu: str, shared: Share = unshared) -> WorkloadInfo:
    """A Workload document (``kueue.x-k8s.io/v1beta2``) read once into its projection.

    ``shared``: the store's sharing table (``webhook.kube.sharing``).
    """
    metadata, spec, status = as_dict(obj.get("metadata")), as_dict(obj.get("spec")), as_dict(obj.get("status"))
    ref = spec.get("priorityClassRef")
    value = spec.get("priority")
    owner_kind, owner_name = _owner(metadata)
    owners = metadata.get("ownerReferences")
    admission = as_dict(status.get("admission"))
    admitted_to = admission.get("clusterQueue")
    conditions = _values_list(status.get("conditions"), _CONDITION_FIELDS, shared) or ()
    common: dict[str, Any] = {
        "uid": str(metadata.get("uid") or ""),
        "priority_value": shared(value) if type(value) is int else 0,
        "created": _seconds(metadata.get("creationTimestamp")),
        "owner_kind": owner_kind,
        "owner_name": owner_name,
        "api_version": shared(str(obj.get("apiVersion") or "")),
        "namespace": shared(str(metadata.get("namespace") or "")),
        "name": str(metadata.get("name") or ""),
        "created_at": shared(str(metadata.get("creationTimestamp") or "")),
        "labels": _values(metadata.get("labels"), _LABELS, shared),
        "owners": _values_list(owners, _OWNER_FIELDS, shared) or (),
        "spec": _values(spec, _SPEC_FIELDS, shared),
        "priority_class_ref": _values(ref, _REF_FIELDS, shared) if isinstance(ref, Mapping) else None,
        "conditions": conditions,
        "admitted_to": shared(admitted_to) if isinstance(admitted_to, str) else None,
        "checks": _values_list(status.get("admissionChecks"), _CHECK_FIELDS, shared),
        "requeue": _values(status.get("requeueState"), _REQUEUE_FIELDS, shared) if "requeueState" in status else None,
    }
    priority = _intern(ref.get("name")) if isinstance(ref, dict) else ""
    queue = _intern(spec.get("queueName"))
    states = _states(conditions)
    reserved, since = states.get("QuotaReserved", _NOT)
    if states.get("Finished", _NOT)[0]:
        return WorkloadInfo(queue, "", priority, FINISHED, **common)
    if spec.get("active", True) is False:
        return WorkloadInfo(queue, "", priority, IDLE, **common)
    if reserved:
        usage = _usage(admission)
        chips = tuple((flavor, int(amount)) for flavor, resource, amount in usage if resource == tpu and amount)
        return WorkloadInfo(
            queue,
            _intern(admitted_to),
            priority,
            HOLDS,
            shared(chips),
            reserved_at=_seconds(since),
            usage=shared(usage),
            evicted=states.get("Evicted", _NOT)[0],
            placed=_placed(admission, shared),
            **common,
        )
    if states.get("WaitingForReplacementPods", _NOT)[0]:
        return WorkloadInfo(queue, "", priority, REPLACING, **common)
    return WorkloadInfo(queue, "", priority, WAITS, shape=shape_of(spec, shared), **common)
