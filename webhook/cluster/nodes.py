"""Nodes, indexed so that "does one pod fit one node" never scans every node.

Nodes are grouped by *shape*: their allocatable resources and blocking taints. A cluster
of 5,000 nodes has a handful of shapes (one per machine type and pool kind), so the fit
question is answered per shape: does this shape tolerate the pod and hold its requests,
and does at least one node of that shape match the pod's nodeSelector (a set
intersection with the label index, stopped at the first hit). Cordoned nodes are kept
out of the shapes: they take no new pods.

DD-0018: a resource that no node advertises is unknown, not zero; the fit check
leaves it out rather than call every node too small.

A snapshot of the cluster holds the index as it was (``fork``): the maps are
copy-on-write tables (``webhook.quota.table``) and each set of node names is copied the
first time it changes after a fork, so a node event after a snapshot copies the sets it
touches, not the index.

The accelerator's chips (dynamic mode's whole-cluster ceiling) count each node pool of a
known topology at the size that topology declares (a ``4x4x4`` pool is 64 chips, 16
hosts), not the hosts listed: with incremental provisioning a pool comes up without a
bad host and is completed after repair, so a job that fits the repaired pools must wait,
not be refused. A node outside such a pool counts as it is.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Iterable, Mapping, Set
from decimal import Decimal
from itertools import islice
from typing import TypeVar

from webhook.kube.quantity import CONTEXT
from webhook.kube.scheduling import Taint, Toleration, tolerated
from webhook.kube.topology import NODEPOOL_LABEL, TopologyError, parse_topology
from webhook.policy.config import TpuPolicy
from webhook.quota.objects import NodeFit, NodeInfo
from webhook.quota.table import SetTable, Table

_K = TypeVar("_K")

#: allocatable (sorted) and blocking taints
Shape = tuple[tuple[tuple[str, Decimal], ...], tuple[Taint, ...]]


class NodeIndex:
    def __init__(self, tpu: TpuPolicy) -> None:
        self.tpu = tpu
        self.nodes: Table[str, NodeInfo] = Table()
        self.label_index: SetTable[tuple[str, str], str] = SetTable()
        #: static-pool topology -> node pool -> nodes (each inner map replaced when it moves)
        self.pools: Table[str, dict[str, int]] = Table()
        self.shapes: SetTable[Shape, str] = SetTable()
        #: the first node name of each shape, for messages (worked out once per change of the shape)
        self._first: Table[Shape, str] = Table()
        #: resource -> how many nodes advertise it
        self.advertised: Counter[str] = Counter()
        #: chips of the TPU accelerator (tpu7x): each pool of a known topology at its declared size
        self.accelerator_chips = Decimal(0)
        #: (topology, node pool) of the accelerator -> (nodes present, chips on them)
        self._pool_chips: Table[tuple[str, str], tuple[int, Decimal]] = Table()

    def copy(self) -> NodeIndex:
        """An index with the same nodes that nothing moves (a snapshot's), sharing what neither side changes."""
        out = NodeIndex.__new__(NodeIndex)
        out.tpu = self.tpu
        out.nodes, out.label_index, out.pools = self.nodes.fork(), self.label_index.fork(), self.pools.fork()
        out.shapes, out._first = self.shapes.fork(), self._first.fork()
        out.advertised = Counter(self.advertised)
        out.accelerator_chips = self.accelerator_chips
        out._pool_chips = self._pool_chips.fork()
        return out

    def put(self, node: NodeInfo) -> None:
        self.remove(node.name)
        self.nodes[node.name] = node
        self._index(node, +1)

    def remove(self, name: str) -> None:
        node = self.nodes.pop(name, None)
        if node is not None:
            self._index(node, -1)

    @staticmethod
    def shape(node: NodeInfo) -> Shape:
        return tuple(sorted(node.allocatable.items())), node.taints

    def _index(self, node: NodeInfo, sign: int) -> None:
        for item in node.labels.items():
            self.label_index.move(item, node.name, sign)
        if not node.unschedulable:
            shape = self.shape(node)
            self.shapes.move(shape, node.name, sign)
            self._first.pop(shape, None)
        for resource in node.allocatable:
            self.advertised[resource] += sign
            if self.advertised[resource] <= 0:
                del self.advertised[resource]
        tpu = self.tpu
        if node.labels.get(tpu.accelerator_label) == tpu.accelerator_value:
            chips = node.allocatable.get(tpu.resource_name, Decimal(0))
            topology = node.labels.get(tpu.topology_label)
            pool_name = node.labels.get(NODEPOOL_LABEL)
            if topology and pool_name and _declared_chips(topology):
                self._count_pool((topology, pool_name), chips, sign)
            else:
                # summed as nodes come and go, in the watch's thread: in the quantities' context, exactly
                self.accelerator_chips = CONTEXT.add(self.accelerator_chips, CONTEXT.multiply(sign, chips))
            if topology:
                pools = dict(self.pools.get(topology) or {})
                pool = node.labels.get(NODEPOOL_LABEL, node.name)
                pools[pool] = pools.get(pool, 0) + sign
                if pools[pool] <= 0:
                    del pools[pool]
                if pools:
                    self.pools[topology] = pools
                else:
                    self.pools.pop(topology)

    def _count_pool(self, key: tuple[str, str], chips: Decimal, sign: int) -> None:
        """One node of a pool comes or goes: the pool counts at its declared size while any node is present."""
        nodes, present = self._pool_chips.get(key) or (0, Decimal(0))
        before = max(_declared_chips(key[0]), present) if nodes else Decimal(0)
        nodes, present = nodes + sign, CONTEXT.add(present, CONTEXT.multiply(sign, chips))
        if nodes > 0:
            self._pool_chips[key] = (nodes, present)
        else:
            self._pool_chips.pop(key, None)
        after = max(_declared_chips(key[0]), present) if nodes > 0 else Decimal(0)
        self.accelerator_chips = CONTEXT.add(self.accelerator_chips, CONTEXT.subtract(after, before))

    # ---------------------------------------------------------------- answers

    def matching(
        self, selector: Mapping[str, str], names: Set[str] | None = None, first_only: bool = False
    ) -> list[str]:
        """Nodes (of ``names``; else of all) that carry every label of ``selector`` (the first one, or
        all): the smallest set of candidates walked, the others only looked up."""
        sets: list[Set[str]] = [self.label_index.get(item) or set() for item in selector.items()]
        if names is not None:
            sets.append(names)
        if not sets:
            return list(islice(self.nodes, 1 if first_only else None))
        sets.sort(key=len)
        smallest, rest = sets[0], sets[1:]
        found = []
        for name in smallest:
            if all(name in other for other in rest):
                found.append(name)
                if first_only:
                    break
        return found

    def fit(
        self,
        selector: Mapping[str, str],
        requests: Mapping[str, Decimal],
        tolerations: Iterable[Toleration],
        tolerate_keys: frozenset[str],
    ) -> NodeFit:
        wanted = {r: q for r, q in requests.items() if r in self.advertised}  # unknown is not zero
        tolerations = tuple(tolerations)
        candidates: list[tuple[tuple[int, Decimal], set[str], Shape]] = []
        for shape, names in self.shapes.items():
            allocatable, taints = shape
            if any(t.key not in tolerate_keys and not tolerated(t, tolerations) for t in taints):
                continue
            offered = dict(allocatable)
            held = sum(1 for r, q in wanted.items() if offered.get(r, Decimal(0)) >= q)
            if held == len(wanted) and self.matching(selector, names, first_only=True):
                return NodeFit(1, True)
            # closeness, for the message: resources held, then how much of the rest it offers
            share = sum((min(offered.get(r, Decimal(0)) / q, Decimal(1)) for r, q in wanted.items() if q), Decimal(0))
            candidates.append(((held, share), names, shape))
        # Nothing fits: count the matching nodes and find the closest, for the message.
        matching, closest = 0, None
        best: tuple[int, Decimal] = (-1, Decimal(0))
        for score, names, shape in candidates:
            if not selector:  # every node of the shape matches: no need to walk them
                matching += len(names)
                if names and score > best:
                    closest, best = self.nodes[self._first_of(shape, names)], score
                continue
            found = self.matching(selector, names)
            matching += len(found)
            if found and score > best:
                closest, best = self.nodes[min(found)], score
        return NodeFit(matching, False, closest)

    def _first_of(self, shape: Shape, names: set[str]) -> str:
        first = self._first.get(shape)
        if first is None:
            first = min(names)
            self._first[shape] = first
        return first

    def node_pools(self, topology: str) -> int:
        return len(self.pools.get(topology) or ())

    def topologies(self) -> frozenset[str]:
        return frozenset(topology for topology, pools in self.pools.items() if pools)


def _declared_chips(topology: str) -> Decimal:
    """The chips a node pool of ``topology`` has when whole (``4x4x4``: 64); 0 for a value that is not one."""
    try:
        return Decimal(parse_topology(topology).chips)
    except TopologyError:
        return Decimal(0)
