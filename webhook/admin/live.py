"""The judged set from the watch cache: what the admin guard's webhook judges an object against.

``lint-queues`` reads its cluster from files (``webhook.admin.objectset``); the webhook reads
the same kinds from one published snapshot of the cache (``webhook.cluster.snapshot``),
which carries Kueue's objects as written (``webhook.cluster.documents``) and the
ClusterQueues, Cohorts, ResourceFlavors and Nodes as the store parsed them, once per event.
Each kept document goes through the one reader (``webhook.admin.kueueobjects.read_document``),
so a ConfigMap becomes Kueue's Configuration exactly as it does in a file; nothing is parsed
again.

A kind is known when its watch is synced (an empty list is a known zero); otherwise it
is unknown with the watch's reason, which the skip note quotes. The set is worked out once
per state of the kept documents and of the kinds' availability, memoized on the snapshot's
documents part, which Workload and Node events leave in place: requests between changes
share it, and each puts its own object in place with ``ObjectSet.replaced``.
"""

from __future__ import annotations

from collections.abc import Collection, Mapping
from dataclasses import dataclass
from typing import Final, TypeVar

from webhook.admin.kueueobjects import (
    ADMISSION_CHECK,
    CLUSTER_QUEUE,
    COHORT,
    CONFIGURATION,
    CONTROLLER,
    LOCAL_QUEUE,
    NAMESPACE,
    NODE,
    PRIORITY_CLASS,
    RESOURCE_FLAVOR,
    TOPOLOGY,
    AdminKind,
    KueueObject,
    read_document,
)
from webhook.admin.objectset import ObjectSet
from webhook.cluster import kinds as k
from webhook.cluster.snapshot import Snapshot
from webhook.kueue.clusterqueue import ClusterQueueInfo
from webhook.kueue.cohort import CohortInfo
from webhook.kueue.resourceflavor import FlavorInfo
from webhook.objects.sources import Document
from webhook.quota.objects import NodeInfo

#: each kind the guard reads, and the cache's kind that holds it
CACHED: Final[tuple[tuple[AdminKind, k.Kind], ...]] = (
    (CLUSTER_QUEUE, k.CLUSTER_QUEUES),
    (LOCAL_QUEUE, k.LOCAL_QUEUES),
    (COHORT, k.COHORTS),
    (RESOURCE_FLAVOR, k.RESOURCE_FLAVORS),
    (PRIORITY_CLASS, k.WORKLOAD_PRIORITY_CLASSES),
    (TOPOLOGY, k.TOPOLOGIES),
    (ADMISSION_CHECK, k.ADMISSION_CHECKS),
    (CONFIGURATION, k.KUEUE_CONFIG),
    (CONTROLLER, k.KUEUE_CONTROLLER),
    (NAMESPACE, k.NAMESPACES),
    (NODE, k.NODES),
)
#: where an object read from the cache says it came from
SOURCE: Final = "cluster"

_V = TypeVar("_V")


@dataclass(frozen=True, slots=True)
class Documents:
    """What the guard works out of the kept documents alone: the judged set, and the store's parsed
    ClusterQueues, Cohorts and ResourceFlavors in the set's order (a message lists them in it,
    as ``lint-queues`` lists them in the files' order). Memoized, so never changed."""

    objects: ObjectSet
    queues: Mapping[str, ClusterQueueInfo]
    cohorts: Mapping[str, CohortInfo]
    flavors: Mapping[str, FlavorInfo]


@dataclass(frozen=True, slots=True)
class Live:
    """The cache as the guard reads it in one snapshot: never changed."""

    objects: ObjectSet
    #: the Nodes, ClusterQueues, Cohorts and ResourceFlavors as the store parsed them
    #: (``AdminContext``'s views); empty for a kind that is unknown
    nodes: Collection[NodeInfo]
    queues: Mapping[str, ClusterQueueInfo]
    cohorts: Mapping[str, CohortInfo]
    flavors: Mapping[str, FlavorInfo]


def judged_set(snapshot: Snapshot) -> Live:
    """The judged set, and the parsed views, of one snapshot."""
    reasons = tuple(snapshot.unread.get(kind.name) for _, kind in CACHED)
    held: Documents = snapshot.documents.memo.remember(
        ("admin judged set", reasons), lambda: _read(snapshot), derived=True
    )
    nodes = snapshot.nodes.index.nodes.values() if k.NODES.name not in snapshot.unread else ()
    return Live(held.objects, nodes, held.queues, held.cohorts, held.flavors)


def _read(snapshot: Snapshot) -> Documents:
    """Each kept document of a known kind read as the guard's object; the parsed views looked up."""
    unread = snapshot.unread
    objects = ObjectSet()
    for admin_kind, kind in CACHED:
        reason = unread.get(kind.name)
        if reason is not None:
            objects.reasons[admin_kind.plural] = f"the webhook's cache cannot say ({kind.name}: {reason})"
            continue
        objects.known.add(admin_kind.plural)
        for data in snapshot.documents.by_kind.get(kind.name, {}).values():
            read = read_document(Document(SOURCE, 0, data), "state", snapshot.policy)
            if isinstance(read, KueueObject):
                objects.put(read)
    queues = snapshot.queues
    return Documents(
        objects,
        _in_order(objects, CLUSTER_QUEUE, queues.cluster_queues),
        _in_order(objects, COHORT, queues.cohorts),
        _in_order(objects, RESOURCE_FLAVOR, queues.flavors),
    )


def _in_order(objects: ObjectSet, kind: AdminKind, parsed: Mapping[str, _V]) -> dict[str, _V]:
    """The store's parsed objects of ``kind``, by name, in the set's order (none for an unknown kind)."""
    return {obj.name: parsed[obj.name] for obj in objects.of(kind) if obj.name in parsed}
