"""Kueue's own objects as written, for the admin guard's webhook.

The job rules read compact projections of the cached objects (``webhook.kueue``, ``webhook.quota.objects``);
the admin guard's rules read the objects as written (a ClusterQueue's ``namespaceSelector``,
its resource groups in order, a Configuration's unknown fields). So the cache also keeps,
per kind the guard judges, each object's spec (or a ConfigMap's data) with the metadata a
rule reads, and drops what changes all the time and no rule reads: ``status`` (Kueue
rewrites a ClusterQueue's usage on every admission), ``managedFields``, resourceVersions.

``generation`` moves only when a kept document changes, so a status-only update leaves
whatever the guard worked out from these documents valid.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any, Final

from webhook.cluster import kinds as k

#: the kinds whose documents are kept: what the admin guard judges and reads by name
KEPT: Final[frozenset[k.Kind]] = frozenset(
    {k.NAMESPACES, k.LOCAL_QUEUES, k.CLUSTER_QUEUES, k.COHORTS, k.RESOURCE_FLAVORS, *k.ADMIN_KINDS}
)
#: the metadata a rule reads (names, and labels for namespaces and selectors)
_METADATA: Final = ("name", "namespace", "labels")
#: the top-level fields kept besides metadata (a ConfigMap has ``data``, a WorkloadPriorityClass
#: ``value``, the rest ``spec``)
_BODY: Final = ("apiVersion", "kind", "spec", "data", "value")

Key = str | tuple[str, str]


def kept_document(obj: Mapping[str, Any]) -> dict[str, Any]:
    """The part of ``obj`` the admin guard reads: its spec or data, names and labels."""
    metadata = obj.get("metadata")
    kept: dict[str, Any] = {key: obj[key] for key in _BODY if key in obj}
    if isinstance(metadata, dict):
        kept["metadata"] = {key: metadata[key] for key in _METADATA if key in metadata}
    return kept


class KeptDocuments:
    """Per kept kind, each object's kept document by its store key; the caller holds the store's lock."""

    def __init__(self) -> None:
        self.by_kind: dict[str, dict[Key, dict[str, Any]]] = {kind.name: {} for kind in KEPT}
        #: bumped when a kept document is added, changed or removed
        self.generation = 0
        #: per kind name, the ``generation`` its documents last changed at: a snapshot copies only
        #: the kinds that changed since the one before
        self.changed_at: dict[str, int] = {kind.name: 0 for kind in KEPT}

    def put(self, kind: k.Kind, key: Key, obj: Mapping[str, Any]) -> None:
        held = self.by_kind.get(kind.name)
        if held is None:
            return
        document = kept_document(obj)
        if held.get(key) != document:
            held[key] = document
            self._changed(kind)

    def remove(self, kind: k.Kind, key: Key) -> None:
        held = self.by_kind.get(kind.name)
        if held is not None and held.pop(key, None) is not None:
            self._changed(kind)

    def _changed(self, kind: k.Kind) -> None:
        self.generation += 1
        self.changed_at[kind.name] = self.generation

    def of(self, kind: k.Kind) -> list[dict[str, Any]]:
        """The kind's documents now (a new list; the documents themselves are never changed in place)."""
        return list(self.by_kind.get(kind.name, {}).values())
