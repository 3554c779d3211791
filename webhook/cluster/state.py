"""The interface the engine and the rules read cluster state through.

Two implementations fill it: the watch cache (server) and the state files (``check
--cluster-state``), both ``webhook.cluster.store.ClusterStore`` underneath; quota answers
come from its quota model (``webhook.quota.model``). Every answer distinguishes "known"
from "unknown": unknown is not zero, so a rule whose inputs are unknown is
skipped with a warning instead of judging against an empty cluster. The engine asks
``unavailable`` before running a rule that ``requires`` kinds; the other methods are only
called once those kinds are known.
"""

from __future__ import annotations

from collections.abc import Hashable, Mapping, Sequence
from decimal import Decimal
from typing import Any, Protocol

from webhook.quota.flavorassigner import Assignment
from webhook.quota.ledger import Balance, BalanceAnswer
from webhook.quota.objects import ClusterQueueInfo, NodeFit, Toleration
from webhook.quota.podsets import PodSetDemand
from webhook.quota.resource_node import Bound


class Recall(Protocol):
    """What the engine keeps the cluster rules' answers in (``webhook.engine.recall``), for one
    state of everything but the Workloads; what the Workloads decide is part of a key."""

    @property
    def answers(self) -> dict[Any, Any]:
        """The answers kept, by the caller's key."""

    def queue_balance(self, namespace: str, queue: str) -> Hashable:
        """All the guaranteed balance reads of the Workloads, for the ClusterQueue the LocalQueue
        ``namespace/queue`` points to, as one value: equal values, equal balances (``None``
        when it points to none)."""

    def keep(self, key: Hashable, answer: Any) -> None:
        """Keep ``answer`` under ``key`` in ``answers``, which holds a bounded number."""

    def ledger_changes(self) -> int:
        """A count every applied change to the Workloads held moves: an answer worked out while
        it moved may mix two states of them, and is not kept."""

    def static_topologies(self, known: frozenset[str]) -> frozenset[str]:
        """``known`` and the static pool topologies the node labels advertise
        (``ClusterState.static_topologies``), worked out once per ``known``."""


class ClusterState(Protocol):
    def namespace_labels(self, namespace: str) -> Mapping[str, str] | None:
        """The namespace's labels; ``None`` when the namespace or its kind is not known."""

    def static_topologies(self) -> frozenset[str]:
        """Static pool topologies learned from node labels (empty when unknown)."""

    def unavailable(self, kinds: frozenset[str]) -> dict[str, str]:
        """Of ``kinds``, those that cannot be read now, each with the reason."""

    def recall(self) -> Recall | None:
        """Where answers that depend on the cluster only through what this state holds are kept.

        Renewed by every change to the objects held but the Workloads (a status write that
        changes nothing kept changes nothing) or to a kind's availability; ``None`` while some
        kind a job rule reads cannot be read, when an answer may change with the clock alone
        (a watch going stale). So a ``Recall`` means every such kind can be read now.
        """

    def local_queue(self, namespace: str, name: str) -> str | None:
        """The ClusterQueue a LocalQueue points to; ``None`` when there is no such LocalQueue."""

    def local_queue_names(self, namespace: str) -> list[str]:
        """The LocalQueues of a namespace, sorted (for messages)."""

    def cluster_queue(self, name: str) -> ClusterQueueInfo | None:
        """A ClusterQueue's selector, resource groups and quotas; ``None`` when absent."""

    def assign(self, cluster_queue: str, podsets: Sequence[PodSetDemand], within_balance: bool = False) -> Assignment:
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
