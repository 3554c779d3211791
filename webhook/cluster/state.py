"""The interface the engine and the rules read cluster state through.

Two implementations fill it: the watch cache (server) and the file snapshot (``check
--cluster-state``). Every answer distinguishes "known" from "unknown": unknown is not
zero (SPEC §5), so a rule whose inputs are unknown is skipped with a warning instead of
judging against an empty cluster.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Protocol


class ClusterState(Protocol):
    def namespace_labels(self, namespace: str) -> Mapping[str, str] | None:
        """The namespace's labels; ``None`` when the namespace or its kind is not known."""

    def static_topologies(self) -> frozenset[str]:
        """Static pool topologies learned from node labels (empty when unknown)."""

    def unavailable(self, kinds: frozenset[str]) -> dict[str, str]:
        """Of ``kinds``, those that cannot be read now, each with the reason."""
