"""Static mode's placement: whole node pools free for the job's slices, as Kueue's TAS finds them.

In static mode (RFC-0033 4.6) a TPU slice is one node pool of a fixed topology
(``cloud.google.com/gke-tpu-topology``), and a job asks Kueue's topology-aware scheduling
for one pool per slice (``podset-slice-required-topology: cloud.google.com/gke-nodepool``
with ``podset-slice-size``). Kueue places the job only when, besides the quota, enough
pools of its flavor's nodes have every host free (``FindTopologyAssignmentsForWorkload``
in kubernetes-sigs/kueue ``pkg/cache/scheduler/tas_flavor_snapshot.go``). A host is taken
when an admitted, not finished Workload's ``topologyAssignment`` names it (or its pool);
since a static slice takes all of a pool's hosts, a pool with any taken host holds no new
slice, and a pool is counted whole or not at all.

``Placement`` is what the engine reads of the cluster for that (built from a live snapshot
by ``webhook.simulate.live``); ``pool_needs`` works out the pools a job asks for from its
podSets and the flavors the quota assignment gave them; ``PoolTracker`` follows, during one
preemption search, which pools the victims removed so far free
(``workloadFits`` checks TAS after quota, so Kueue's victims must free pools too).
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence, Set
from dataclasses import dataclass, field
from decimal import Decimal

from webhook.kueue.podset import PodSetDemand
from webhook.kueue.resourceflavor import FlavorInfo
from webhook.kueue.workload import WorkloadInfo
from webhook.quota.capacity import topology_chips

#: a Workload as the snapshot keys it: (namespace, name)
WorkloadKey = tuple[str, str]
#: a node selector as a sorted tuple (hashable: the node side memoizes on it)
Selector = tuple[tuple[str, str], ...]


@dataclass(frozen=True, slots=True)
class PoolNeed:
    """The whole free pools one topology's podSets need: ``slices`` of them."""

    topology: str
    flavor: str
    #: the flavor's node labels and the podSet's node selector: the nodes Kueue's TAS considers
    selector: Selector
    slices: int


#: a topology domain: (node label, value), a pool or one of its hosts
Domain = tuple[str, str]


@dataclass
class Placement:
    """What static placement reads of the cluster: the pools and who occupies them.

    ``pools`` gives node pool -> schedulable hosts of the nodes matching a selector;
    ``pool_of`` the node pool a topology domain names; ``occupied`` gives each domain admitted
    Workloads hold -> those Workloads, and the Workloads whose ``topologyAssignment`` cannot be
    read; ``workloads`` the stored Workloads (what a holder holds, and in which queue).
    ``missing`` says why placement cannot be checked (no Nodes in the state): then nothing
    here is read. The domains are grouped by pool once, at the first ask; a pool's occupants
    are worked out when a job first asks about that pool (the pools of its topology), so the
    cost follows the pools asked about, not the Workloads.
    """

    topology_label: str
    pools: Callable[[Selector], Mapping[str, int]]
    pool_of: Callable[[str, str], str | None]
    occupied: Callable[[], tuple[Mapping[Domain, Set[WorkloadKey]], Sequence[WorkloadKey]]]
    workloads: Mapping[WorkloadKey, WorkloadInfo]
    missing: str | None = None
    _by_pool: dict[str, tuple[Domain, ...]] | None = field(default=None, repr=False)
    _occupants: dict[str, tuple[str, ...]] = field(default_factory=dict, repr=False)
    _unreadable: dict[frozenset[str], tuple[str, ...]] = field(default_factory=dict, repr=False)

    def _domains(self, pool: str) -> tuple[Domain, ...]:
        """The domains admitted Workloads hold in ``pool`` (the pool itself, or its hosts)."""
        if self._by_pool is None:
            by_pool: dict[str, list[Domain]] = {}
            for domain in self.occupied()[0]:
                found = self.pool_of(*domain)
                if found is not None:
                    by_pool.setdefault(found, []).append(domain)
            self._by_pool = {name: tuple(held) for name, held in by_pool.items()}
        return self._by_pool.get(pool, ())

    def _members(self, domain: Domain) -> Set[WorkloadKey]:
        return self.occupied()[0].get(domain) or frozenset()

    def _entry(self, workload: str) -> WorkloadInfo | None:
        namespace, _, name = workload.partition("/")
        return self.workloads.get((namespace, name))

    def occupants(self, pool: str) -> tuple[str, ...]:
        """The admitted Workloads (``ns/name``) holding hosts of ``pool``, sorted (one pool's
        domains expanded, at its first ask; at most as many pools as the cluster has are kept)."""
        held = self._occupants.get(pool)
        if held is None:
            found: set[WorkloadKey] = set()
            for domain in self._domains(pool):
                found.update(self._members(domain))
            held = self._occupants[pool] = tuple(f"{ns}/{name}" for ns, name in sorted(found))
        return held

    def taken(self, pool: str) -> int:
        """How many admitted Workloads hold hosts of ``pool``: read off the index when the pool is held
        as a whole (its one domain), without listing them."""
        domains = self._domains(pool)
        if len(domains) == 1 and pool not in self._occupants:
            return len(self._members(domains[0]))
        return len(self.occupants(pool))

    def pools_of(self, workload: str) -> tuple[str, ...]:
        """The pools whose hosts ``workload`` (``ns/name``) holds, from its ``topologyAssignment``."""
        entry = self._entry(workload)
        domains = (entry.placed or ()) if entry is not None else ()
        return tuple(sorted({pool for domain in domains if (pool := self.pool_of(*domain)) is not None}))

    def queue_of(self, workload: str) -> str:
        """The ClusterQueue ``workload`` holds quota in ("" when it is not stored)."""
        entry = self._entry(workload)
        return entry.cluster_queue if entry is not None else ""

    def unreadable(self, flavors: frozenset[str]) -> tuple[str, ...]:
        """Admitted Workloads on one of ``flavors`` whose ``topologyAssignment`` cannot be read (kept
        per set of flavors: a state where many cannot be read costs one pass, not one per job)."""
        held = self._unreadable.get(flavors)
        if held is None:
            held = tuple(
                f"{ns}/{name}"
                for ns, name in self.occupied()[1]
                if (entry := self.workloads.get((ns, name))) is not None
                and any(flavor in flavors for flavor, _, _ in entry.usage)
            )
            if len(self._unreadable) < 64:
                self._unreadable[flavors] = held
        return held


def pool_needs(
    podsets: Sequence[PodSetDemand],
    assigned: Sequence[Mapping[str, str]],
    flavors: Mapping[str, FlavorInfo],
    topology_label: str,
    tpu: str,
) -> tuple[PoolNeed, ...]:
    """The pools the job's static podSets need, one group per topology (its first podSet's selector).

    A podSet counts when it asks for topology-aware scheduling, selects a topology, and got a
    TPU flavor that is a TAS flavor (``spec.topologyName``): a flavor without one is not placed by
    Kueue's TAS. Its slices are its chips over the topology's chips (a 4x4x4 pool: 64).
    """
    groups: dict[str, PoolNeed] = {}
    for podset, chosen in zip(podsets, assigned, strict=False):
        topology = dict(podset.node_selector).get(topology_label)
        flavor = chosen.get(tpu)
        info = flavors.get(flavor) if flavor else None
        if not podset.tas or not topology or info is None or info.topology_name is None:
            continue
        chips, per_slice = podset.total(tpu), topology_chips(topology)
        if chips <= 0 or not per_slice:
            continue
        slices = int(-(-chips // Decimal(per_slice)))
        held = groups.get(topology)
        if held is None:
            selector = tuple(sorted({**dict(info.node_labels), **dict(podset.node_selector)}.items()))
            groups[topology] = PoolNeed(topology, info.name, selector, slices)
        else:
            groups[topology] = PoolNeed(topology, held.flavor, held.selector, held.slices + slices)
    return tuple(groups[t] for t in sorted(groups))


class PoolTracker:
    """The free pools of each need, moved as Workloads are taken out and put back (one answer)."""

    def __init__(self, placement: Placement, wanted: Sequence[PoolNeed]) -> None:
        self.placement = placement
        self.wanted = tuple(wanted)
        #: per need: its usable pools (a schedulable host at least: a pool counts whole, at the size its
        #: topology declares, as the capacity rules count it)
        self.usable: list[tuple[str, ...]] = []
        #: pool -> (need index, occupants not taken out)
        self.left: dict[str, list[int]] = {}
        self.free: list[int] = []
        for i, need in enumerate(self.wanted):
            pools = tuple(sorted(p for p, hosts in placement.pools(need.selector).items() if hosts))
            self.usable.append(pools)
            free = 0
            for pool in pools:
                taken = placement.taken(pool)
                if taken:
                    self.left.setdefault(pool, [i, taken])
                else:
                    free += 1
            self.free.append(free)

    def fits(self) -> bool:
        return all(free >= need.slices for free, need in zip(self.free, self.wanted, strict=True))

    def possible(self) -> bool:
        """Whether the job could be placed with every Workload gone (``WithSimulateEmpty``)."""
        return all(len(pools) >= need.slices for pools, need in zip(self.usable, self.wanted, strict=True))

    def remove(self, workload: str) -> None:
        for pool in self.placement.pools_of(workload):
            held = self.left.get(pool)
            if held is not None:
                held[1] -= 1
                if held[1] == 0:
                    self.free[held[0]] += 1

    def add(self, workload: str) -> None:
        for pool in self.placement.pools_of(workload):
            held = self.left.get(pool)
            if held is not None:
                if held[1] == 0:
                    self.free[held[0]] -= 1
                held[1] += 1

    def short(self) -> PoolNeed | None:
        """The first need without enough free pools now."""
        return next((n for n, free in zip(self.wanted, self.free, strict=True) if free < n.slices), None)

    def index_of(self, need: PoolNeed) -> int:
        return self.wanted.index(need)

    def holders(self, need: PoolNeed) -> list[tuple[str, int]]:
        """The Workloads occupying the need's usable pools, with how many each, most first."""
        counted: dict[str, int] = {}
        for pool in self.usable[self.index_of(need)]:
            for key in self.placement.occupants(pool):
                counted[key] = counted.get(key, 0) + 1
        return sorted(counted.items(), key=lambda h: (-h[1], h[0]))
