"""The judged set from the watch cache: what the admin guard's webhook judges an object against.

``lint-queues`` reads its cluster from files (``webhook.admin.objectset``); the webhook reads
the same kinds from the cache, which keeps Kueue's objects as written
(``webhook.cluster.documents``) and the Nodes parsed. Each cached document goes through
the one reader (``webhook.admin.kueueobjects.read_document``), so a ConfigMap becomes Kueue's
Configuration exactly as it does in a file.

A kind is known when its watch is synced (an empty list is a known zero); otherwise it
is unknown with the watch's reason, which the skip note quotes. The set is rebuilt only
when a kept document, a Node or a kind's availability changed: requests between changes
share it, and each puts its own object in place with ``ObjectSet.replaced``.
"""

from __future__ import annotations

import threading
from dataclasses import dataclass
from typing import Final

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
from webhook.cluster.store import ClusterStore
from webhook.kueue.clusterqueue import ClusterQueueInfo, parse_cluster_queue
from webhook.objects.sources import Document
from webhook.policy.config import Policy
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


@dataclass(frozen=True, slots=True)
class Live:
    """The cache as the guard reads it now: shared by the requests until it changes, so never changed."""

    objects: ObjectSet
    #: the Nodes and the ClusterQueues parsed once (``AdminContext``'s views), not per request
    nodes: list[NodeInfo]
    queues: dict[str, ClusterQueueInfo]


class LiveObjects:
    """The cache's Kueue objects as a judged set, rebuilt when the cache changed."""

    def __init__(self, store: ClusterStore, policy: Policy) -> None:
        self.store = store
        self.policy = policy
        self._build = threading.Lock()
        self._version: object = None
        self._live = Live(ObjectSet(), [], {})

    def current(self) -> Live:
        """The set, the parsed Nodes and ClusterQueues as the cache holds them now."""
        store = self.store
        with self._build:
            reasons = {kind.name: store.availability.reason(kind.name) for _, kind in CACHED}
            version = (store.documents.generation, store.node_generation, tuple(reasons.values()))
            if version != self._version:
                objects, nodes = self._read(reasons)
                queues = {o.name: parse_cluster_queue(o.data) for o in objects.of(CLUSTER_QUEUE)}
                self._live = Live(objects, nodes, queues)
                self._version = version
            return self._live

    def _read(self, reasons: dict[str, str | None]) -> tuple[ObjectSet, list[NodeInfo]]:
        store = self.store
        with store.lock:  # a copy of the lists: the reading below runs without the lock
            documents = {kind.name: store.documents.of(kind) for _, kind in CACHED if kind is not k.NODES}
            nodes = list(store.node_index.nodes.values())
        objects = ObjectSet()
        for admin_kind, kind in CACHED:
            reason = reasons[kind.name]
            if reason is not None:
                objects.reasons[admin_kind.plural] = f"the webhook's cache cannot say ({kind.name}: {reason})"
                continue
            objects.known.add(admin_kind.plural)
            for data in documents.get(kind.name, ()):
                read = read_document(Document(SOURCE, 0, data), "state", self.policy)
                if isinstance(read, KueueObject):
                    objects.put(read)
        return objects, nodes if reasons[k.NODES.name] is None else []
