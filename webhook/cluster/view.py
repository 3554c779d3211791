"""The interfaces the engine and the rules read cluster state through.

``ClusterState`` is what the engine is handed (the watch cache for the server, the state
files for ``check``, both ``webhook.cluster.store.ClusterStore`` underneath, or ``audit``'s
view less an object's own Workloads): it gives one ``ClusterView`` per request, a
``webhook.cluster.snapshot.Snapshot``, which every rule of the request reads. Every answer
distinguishes "known" from "unknown": unknown is not zero, so a rule whose inputs are
unknown is skipped with a warning instead of judging against an empty cluster. The engine
asks ``unavailable`` before running a rule that ``requires`` kinds; the other methods are
only called once those kinds are known.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from decimal import Decimal
from typing import Any, Protocol

from webhook.kube.scheduling import Toleration
from webhook.kueue.clusterqueue import ClusterQueueInfo
from webhook.kueue.podset import PodSetDemand
from webhook.kueue.potential import Bound
from webhook.policy.config import Policy
from webhook.quota.feasibility import Feasibility
from webhook.quota.ledger import Balance, BalanceAnswer
from webhook.quota.objects import NodeFit


class ClusterView(Protocol):
    """One state of the cluster, never changed while a request reads it."""

    @property
    def policy(self) -> Policy:
        """The policy the view was read with: answers memoized on it are for that policy only."""

    def remember(self, key: Any, make: Callable[[], Any]) -> Any:
        """The answer memoized on this view under ``key``, worked out by ``make`` the first time."""

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
        """A ClusterQueue's selector, resource groups and quotas; ``None`` when absent."""

    def assign(self, cluster_queue: str, podsets: Sequence[PodSetDemand], within_balance: bool = False) -> Feasibility:
        """Kueue's flavor assignment of ``podsets`` in the queue, judged on "could it ever fit".

        ``within_balance`` also passes over a flavor whose guaranteed balance cannot hold the chips.
        """

    def guaranteed_shortfalls(self, cluster_queue: str, podsets: Sequence[PodSetDemand]) -> BalanceAnswer:
        """Where a guaranteed job's chips exceed the queue's guaranteed balance (``webhook.quota.ledger``)."""

    def potential(self, cluster_queue: str, flavor: str, resource: str) -> Bound:
        """The most the queue could ever hold of ``resource`` in ``flavor`` (Kueue's potential quota)."""

    def in_use(self, cluster_queue: str, flavor: str) -> int:
        """TPU chips of the queue's Workloads that hold quota on ``flavor`` now (every priority)."""

    def balance(self, cluster_queue: str, flavor: str) -> Balance:
        """The queue's guaranteed balance of TPU chips on ``flavor``."""

    def node_fit(
        self,
        selector: Mapping[str, str],
        requests: Mapping[str, Decimal],
        tolerations: Sequence[Toleration] = (),
        tolerate_keys: frozenset[str] = frozenset(),
    ) -> NodeFit:
        """Whether one schedulable, tolerated node matching ``selector`` holds ``requests`` at once."""

    def node_pools(self, topology: str) -> int:
        """How many TPU node pools of a static topology exist."""

    def accelerator_chips(self) -> Decimal | None:
        """Chips on all nodes of the TPU accelerator; ``None`` when unknown."""


class ClusterState(Protocol):
    """Where the cluster's state comes from: a view of it per request."""

    def snapshot(self) -> ClusterView:
        """The state now (the same object while nothing changed)."""
