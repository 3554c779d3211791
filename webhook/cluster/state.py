"""The interface the engine and the rules read cluster state through.

Two implementations fill it: the watch cache (server) and the file snapshot (``check
--cluster-state``), both ``webhook.cluster.store.ClusterStore`` underneath. Every answer
distinguishes "known" from "unknown": unknown is not zero (SPEC §5), so a rule whose
inputs are unknown is skipped with a warning instead of judging against an empty
cluster. The engine asks ``unavailable`` before running a rule that ``requires`` kinds;
the other methods are only called once those kinds are known.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from decimal import Decimal
from typing import Any, Protocol

from webhook.cluster.model import Capacity, ClusterQueueInfo, NodeFit


class ClusterState(Protocol):
    def namespace_labels(self, namespace: str) -> Mapping[str, str] | None:
        """The namespace's labels; ``None`` when the namespace or its kind is not known."""

    def static_topologies(self) -> frozenset[str]:
        """Static pool topologies learned from node labels (empty when unknown)."""

    def unavailable(self, kinds: frozenset[str]) -> dict[str, str]:
        """Of ``kinds``, those that cannot be read now, each with the reason."""

    def local_queue(self, namespace: str, name: str) -> str | None:
        """The ClusterQueue a LocalQueue points to; ``None`` when there is no such LocalQueue."""

    def local_queue_names(self, namespace: str) -> list[str]:
        """The LocalQueues of a namespace, sorted (for messages)."""

    def cluster_queue(self, name: str) -> ClusterQueueInfo | None:
        """A ClusterQueue's selector, covered resources and quotas; ``None`` when absent."""

    def tpu_flavor(self, cluster_queue: str, node_selector: Mapping[str, str]) -> str | None:
        """The TPU flavor a podSet with this node selector would be assigned in that queue."""

    def pod_flavor(self, cluster_queue: str, node_selector: Mapping[str, str], tpu: bool) -> str | None:
        """The flavor of ``cluster_queue`` one pod would be assigned: ``tpu_flavor`` for a TPU pod,
        else the first flavor that is not a TPU flavor and whose ``nodeLabels`` the selector
        allows; ``None`` when there is none or a flavor it would try first is unknown."""

    def capacity(self, cluster_queue: str, flavor: str, resource: str) -> Capacity | None:
        """The most the queue can ever hold of ``resource`` in ``flavor`` (nominal + borrowing)."""

    def guaranteed_usage(self, cluster_queue: str, flavor: str) -> tuple[int, int]:
        """Chips of the queue's guaranteed Workloads on ``flavor``: (holding quota, waiting)."""

    def node_fit(
        self,
        selector: Mapping[str, str],
        requests: Mapping[str, Decimal],
        tolerations: Sequence[Mapping[str, Any]] = (),
        tolerate_keys: frozenset[str] = frozenset(),
    ) -> NodeFit:
        """Whether one schedulable, tolerated node matching ``selector`` holds ``requests`` at once."""

    def node_pools(self, topology: str) -> int:
        """How many TPU node pools of a static topology exist."""
