"""The in-memory cluster state both sources fill, and the answers the rules read.

``ClusterStore`` implements ``ClusterState``. The watch cache feeds it events from
background threads; the snapshot feeds it files once. Writers take the lock per object;
readers that walk a collection take it too, so a request never sees a half-applied
event. Every answer a request needs is an index lookup or a memo keyed by a generation
counter that writes bump: requests never sum Workloads or scan every node twice.
"""

from __future__ import annotations

import sys
import threading
from collections import Counter, defaultdict
from collections.abc import Iterable, Mapping, Sequence
from decimal import Decimal
from typing import Any

from webhook.cluster import kinds as k
from webhook.cluster.availability import Availability
from webhook.cluster.ledger import GuaranteedLedger, WorkloadEntry, project
from webhook.cluster.model import (
    Capacity,
    ClusterQueueInfo,
    CohortInfo,
    FlavorInfo,
    NodeFit,
    NodeInfo,
    Quota,
    parse_cluster_queue,
    parse_cohort,
    parse_flavor,
    parse_node,
    string_map,
    tolerated,
)
from webhook.config import Policy

NODEPOOL_LABEL = "cloud.google.com/gke-nodepool"
Key = str | tuple[str, str]
_MEMO_LIMIT = 4096


def object_key(kind: k.Kind, obj: Mapping[str, Any]) -> Key:
    metadata = obj.get("metadata") if isinstance(obj.get("metadata"), dict) else {}
    assert isinstance(metadata, dict)
    name = str(metadata.get("name", ""))
    return (sys.intern(str(metadata.get("namespace", ""))), name) if kind.namespaced else name


class ClusterStore:
    def __init__(self, policy: Policy, stale_after: float = 120.0) -> None:
        self.policy = policy
        self.tpu = policy.tpu.resource_name
        self.lock = threading.RLock()
        self.availability = Availability((kind.name for kind in k.KINDS), stale_after)
        self.keys: dict[str, set[Key]] = {kind.name: set() for kind in k.KINDS}
        self.namespaces: dict[str, dict[str, str]] = {}
        self.local_queues: dict[tuple[str, str], str] = {}
        self.queues_of_cq: defaultdict[str, set[tuple[str, str]]] = defaultdict(set)
        self.cluster_queues: dict[str, ClusterQueueInfo] = {}
        self.members: defaultdict[str, set[str]] = defaultdict(set)
        self.cohorts: dict[str, CohortInfo] = {}
        self.flavors: dict[str, FlavorInfo] = {}
        self.priority_classes: dict[str, int] = {}
        self.nodes: dict[str, NodeInfo] = {}
        self.label_index: defaultdict[tuple[str, str], set[str]] = defaultdict(set)
        self.pools: defaultdict[str, Counter[str]] = defaultdict(Counter)
        self.workloads: dict[tuple[str, str], WorkloadEntry] = {}
        self.ledger = GuaranteedLedger(policy.guaranteed_priority_class)
        self.queue_generation = 0  # ClusterQueues, Cohorts, ResourceFlavors, LocalQueues
        self.node_generation = 0
        self._memo: dict[Any, Any] = {}
        self._memo_generation = (-1, -1)

    # ---------------------------------------------------------------- writes

    def apply(self, kind: k.Kind, event: str, obj: Mapping[str, Any]) -> None:
        """One watch event (``ADDED``, ``MODIFIED``, ``DELETED``)."""
        key = object_key(kind, obj)
        with self.lock:
            if event == "DELETED":
                self._remove(kind, key)
            else:
                self._put(kind, key, obj)

    def replace(self, kind: k.Kind, objects: Iterable[Mapping[str, Any]]) -> None:
        """A full list: put every object, then drop those that are gone."""
        seen: set[Key] = set()
        for obj in objects:
            key = object_key(kind, obj)
            seen.add(key)
            with self.lock:
                self._put(kind, key, obj)
        with self.lock:
            for key in self.keys[kind.name] - seen:
                self._remove(kind, key)

    def _unchanged(self, kind: k.Kind, key: Key, obj: Mapping[str, Any]) -> bool:
        """Whether an update leaves everything we keep of the object as it was.

        Most MODIFIED events are status-only: node heartbeats and condition changes, Kueue
        writing a ClusterQueue's usage on every admission. They must not reset the memos
        every request reads (the generations), nor re-index a node.
        """
        if key not in self.keys[kind.name]:
            return False
        metadata = obj.get("metadata") or {}
        spec = obj.get("spec") if isinstance(obj.get("spec"), dict) else {}
        if kind is k.NODES:
            return self.nodes.get(str(key)) == parse_node(obj)
        if kind is k.CLUSTER_QUEUES:
            return self.cluster_queues.get(str(key)) == parse_cluster_queue(obj)
        if kind is k.COHORTS:
            return self.cohorts.get(str(key)) == parse_cohort(obj)
        if kind is k.RESOURCE_FLAVORS:
            return self.flavors.get(str(key)) == parse_flavor(obj)
        if kind is k.NAMESPACES:
            return self.namespaces.get(str(key)) == string_map(metadata.get("labels"))
        if kind is k.LOCAL_QUEUES and isinstance(key, tuple) and isinstance(spec, dict):
            return self.local_queues.get(key) == str(spec.get("clusterQueue") or "")
        return False

    def _put(self, kind: k.Kind, key: Key, obj: Mapping[str, Any]) -> None:
        if self._unchanged(kind, key, obj):
            return
        if key in self.keys[kind.name]:
            self._remove(kind, key)
        self.keys[kind.name].add(key)
        metadata = obj.get("metadata") or {}
        spec = obj.get("spec") if isinstance(obj.get("spec"), dict) else {}
        assert isinstance(spec, dict)
        if kind is k.NAMESPACES:
            assert isinstance(key, str)
            self.namespaces[key] = string_map(metadata.get("labels"))
        elif kind is k.LOCAL_QUEUES:
            assert isinstance(key, tuple)
            cq = str(spec.get("clusterQueue") or "")
            self.local_queues[key] = cq
            self.queues_of_cq[cq].add(key)
        elif kind is k.CLUSTER_QUEUES:
            assert isinstance(key, str)
            info = parse_cluster_queue(obj)
            self.cluster_queues[key] = info
            if info.cohort:
                self.members[info.cohort].add(key)
        elif kind is k.COHORTS:
            assert isinstance(key, str)
            self.cohorts[key] = parse_cohort(obj)
        elif kind is k.RESOURCE_FLAVORS:
            assert isinstance(key, str)
            self.flavors[key] = parse_flavor(obj)
        elif kind is k.PRIORITY_CLASSES:
            assert isinstance(key, str)
            value = obj.get("value")
            self.priority_classes[key] = value if isinstance(value, int) else 0
        elif kind is k.NODES:
            assert isinstance(key, str)
            self._put_node(parse_node(obj))
        elif kind is k.WORKLOADS:
            assert isinstance(key, tuple)
            entry = project(obj, self.tpu)
            self.workloads[key] = entry
            self.ledger.move(key[0], entry, +1)
        self._bump(kind)

    def _remove(self, kind: k.Kind, key: Key) -> None:
        self.keys[kind.name].discard(key)
        name = key if isinstance(key, str) else ""
        pair = key if isinstance(key, tuple) else ("", "")
        if kind is k.NAMESPACES:
            self.namespaces.pop(name, None)
        elif kind is k.LOCAL_QUEUES:
            cq = self.local_queues.pop(pair, None)
            if cq is not None:
                self.queues_of_cq[cq].discard(pair)
        elif kind is k.CLUSTER_QUEUES:
            info = self.cluster_queues.pop(name, None)
            if info is not None and info.cohort:
                self.members[info.cohort].discard(info.name)
        elif kind is k.COHORTS:
            self.cohorts.pop(name, None)
        elif kind is k.RESOURCE_FLAVORS:
            self.flavors.pop(name, None)
        elif kind is k.PRIORITY_CLASSES:
            self.priority_classes.pop(name, None)
        elif kind is k.NODES:
            node = self.nodes.pop(name, None)
            if node is not None:
                self._index_node(node, -1)
        elif kind is k.WORKLOADS:
            self.ledger.move(pair[0], self.workloads.pop(pair, None), -1)
        self._bump(kind)

    def _put_node(self, node: NodeInfo) -> None:
        self.nodes[node.name] = node
        self._index_node(node, +1)

    def _index_node(self, node: NodeInfo, sign: int) -> None:
        for item in node.labels.items():
            if sign > 0:
                self.label_index[item].add(node.name)
            else:
                names = self.label_index.get(item)
                if names is not None:
                    names.discard(node.name)
                    if not names:
                        del self.label_index[item]
        tpu = self.policy.tpu
        if node.labels.get(tpu.accelerator_label) == tpu.accelerator_value:
            topology = node.labels.get(tpu.topology_label)
            if topology:
                pools = self.pools[topology]
                pool = node.labels.get(NODEPOOL_LABEL, node.name)
                pools[pool] += sign
                if pools[pool] <= 0:
                    del pools[pool]

    def _bump(self, kind: k.Kind) -> None:
        if kind is k.NODES:
            self.node_generation += 1
        elif kind in (k.LOCAL_QUEUES, k.CLUSTER_QUEUES, k.COHORTS, k.RESOURCE_FLAVORS):
            self.queue_generation += 1

    def _memoized(self, key: Any) -> Any:
        generation = (self.queue_generation, self.node_generation)
        if generation != self._memo_generation or len(self._memo) > _MEMO_LIMIT:
            self._memo = {}
            self._memo_generation = generation
        return self._memo.get(key, _MISSING)

    def kind_metrics(self) -> list[tuple[str, bool, float | None, float | None]]:
        """Per kind, for /metrics: usable now, seconds since last known current, since last event."""
        availability = self.availability
        return [
            (
                kind.name,
                availability.reason(kind.name) is None,
                availability.age(kind.name),
                availability.since_event(kind.name),
            )
            for kind in k.KINDS
        ]

    # ---------------------------------------------------------------- ClusterState

    def unavailable(self, kinds: frozenset[str]) -> dict[str, str]:
        return self.availability.unavailable(kinds)

    def namespace_labels(self, namespace: str) -> Mapping[str, str] | None:
        if self.availability.reason(k.NAMESPACES.name) is not None:
            return None
        return self.namespaces.get(namespace)

    def static_topologies(self) -> frozenset[str]:
        if self.availability.reason(k.NODES.name) is not None:
            return frozenset()
        with self.lock:
            return frozenset(topology for topology, pools in self.pools.items() if pools)

    def local_queue(self, namespace: str, name: str) -> str | None:
        return self.local_queues.get((namespace, name))

    def local_queue_names(self, namespace: str) -> list[str]:
        with self.lock:
            return sorted(name for ns, name in self.local_queues if ns == namespace)

    def cluster_queue(self, name: str) -> ClusterQueueInfo | None:
        return self.cluster_queues.get(name)

    def tpu_flavor(self, cluster_queue: str, node_selector: Mapping[str, str]) -> str | None:
        """The TPU flavor of ``cluster_queue`` a podSet with this node selector would use.

        Static mode: the first TPU flavor whose ``nodeLabels`` the selector satisfies (one
        flavor per node-pool topology). Dynamic mode: the queue's one TPU flavor.
        """
        memo_key = ("flavor", cluster_queue, tuple(sorted(node_selector.items())))
        cached = self._memoized(memo_key)
        if cached is not _MISSING:
            return cached  # type: ignore[no-any-return]
        with self.lock:
            answer = self._tpu_flavor(cluster_queue, node_selector)
            self._memo[memo_key] = answer
        return answer

    def _tpu_flavor(self, cluster_queue: str, node_selector: Mapping[str, str]) -> str | None:
        info = self.cluster_queues.get(cluster_queue)
        if info is None:
            return None
        tpu = self.policy.tpu
        for name in info.flavors_for(self.tpu):
            flavor = self.flavors.get(name)
            if flavor is None or tpu.accelerator_label not in flavor.node_labels:
                continue  # not a TPU flavor (cpu-standard), or unknown
            if self.policy.mode == "dynamic":
                return name
            if all(node_selector.get(key) == value for key, value in flavor.node_labels.items()):
                return name
        return None

    def pod_flavor(self, cluster_queue: str, node_selector: Mapping[str, str], tpu: bool) -> str | None:
        """The flavor one pod takes: a TPU pod's TPU flavor, else the first non-TPU flavor it may use.

        RFC-0033 4.2: CPU pods never land on the TPU flavors (TAS-only, skipped by podSets
        without a topology request) but on ``cpu-standard``. Flavors are tried in
        resource-group order; a flavor whose ``nodeLabels`` set a key the selector gives
        another value is passed over. An unknown flavor before the answer makes it unknown.
        """
        if tpu:
            return self.tpu_flavor(cluster_queue, node_selector)
        with self.lock:
            info = self.cluster_queues.get(cluster_queue)
            if info is None:
                return None
            for name, _resources in info.flavors:
                flavor = self.flavors.get(name)
                if flavor is None:
                    return None
                if self.policy.tpu.accelerator_label in flavor.node_labels:
                    continue
                if all(node_selector.get(key, value) == value for key, value in flavor.node_labels.items()):
                    return name
        return None

    def capacity(self, cluster_queue: str, flavor: str, resource: str) -> Capacity | None:
        with self.lock:
            info = self.cluster_queues.get(cluster_queue)
            if info is None:
                return None
            own = info.quota(flavor, resource) or Quota(Decimal(0))
            if not info.cohort:
                return Capacity(own.nominal, own.borrowing_limit, None, None)
            memo_key = ("cohort", info.cohort, flavor, resource)
            total = self._memoized(memo_key)
            if total is _MISSING:
                total = sum(
                    (
                        (self.cluster_queues[m].quota(flavor, resource) or Quota(Decimal(0))).lendable
                        for m in self.members[info.cohort]
                        if m in self.cluster_queues
                    ),
                    Decimal(0),
                )
                cohort = self.cohorts.get(info.cohort)
                if cohort is not None:
                    for name, resources in cohort.flavors:
                        if name == flavor and resource in resources:
                            total += resources[resource].nominal
                self._memo[memo_key] = total
            return Capacity(own.nominal, own.borrowing_limit, info.cohort, total - own.lendable)

    def guaranteed_usage(self, cluster_queue: str, flavor: str) -> tuple[int, int]:
        """Chips of the queue's guaranteed Workloads on ``flavor``: (holding quota, waiting)."""
        with self.lock:
            holding = self.ledger.holding.get((cluster_queue, flavor), 0)
            waiting = 0
            for namespace, queue in self.queues_of_cq.get(cluster_queue, ()):
                for selector, chips in self.ledger.waiting_for(namespace, queue):
                    if self.tpu_flavor(cluster_queue, dict(selector)) == flavor:
                        waiting += chips
        return holding, waiting

    def node_fit(
        self,
        selector: Mapping[str, str],
        requests: Mapping[str, Decimal],
        tolerations: Sequence[Mapping[str, Any]] = (),
        tolerate_keys: frozenset[str] = frozenset(),
    ) -> NodeFit:
        memo_key = (
            "fit",
            tuple(sorted(selector.items())),
            tuple(sorted(requests.items())),
            repr(tolerations),
            tolerate_keys,
        )
        cached = self._memoized(memo_key)
        if cached is not _MISSING:
            return cached  # type: ignore[no-any-return]
        with self.lock:
            answer = self._node_fit(selector, requests, tolerations, tolerate_keys)
            self._memo[memo_key] = answer
        return answer

    def _node_fit(
        self,
        selector: Mapping[str, str],
        requests: Mapping[str, Decimal],
        tolerations: Sequence[Mapping[str, Any]],
        tolerate_keys: frozenset[str],
    ) -> NodeFit:
        if selector:
            sets: list[set[str]] = [self.label_index.get(item, set()) for item in selector.items()]
            smallest: set[str] = min(sets, key=len)
            candidates: Iterable[str] = smallest
        else:
            candidates = self.nodes
        matching, closest, best = 0, None, -1
        for name in candidates:
            node = self.nodes[name]
            if node.unschedulable or any(node.labels.get(key) != v for key, v in selector.items()):
                continue
            if any(t.key not in tolerate_keys and not tolerated(t, tolerations) for t in node.taints):
                continue
            matching += 1
            held = sum(1 for r, q in requests.items() if node.allocatable.get(r, Decimal(0)) >= q)
            if held == len(requests):
                return NodeFit(matching, True)
            if held > best:
                closest, best = node, held
        return NodeFit(matching, False, closest)

    def node_pools(self, topology: str) -> int:
        with self.lock:
            return len(self.pools.get(topology, ()))


_MISSING = object()
