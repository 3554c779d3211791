"""The quota model over the store (``webhook.quota.model``): the store tells it what comes and
goes, it answers; and the quota package stays below the store and the rules."""

from __future__ import annotations

import ast
from decimal import Decimal
from pathlib import Path
from typing import Any

from quota_fixtures import cluster_queue, q, store

from webhook.cluster import kinds as k
from webhook.kueue.podset import podset_demand

TPU = "google.com/tpu"
QUOTA = Path(__file__).resolve().parents[1] / "webhook" / "quota"
#: what the quota package may import of the project: the layers below it
BELOW = ("webhook.kube", "webhook.policy", "webhook.objects", "webhook.kueue", "webhook.quota")


def test_the_cohort_sums_follow_cluster_queue_events() -> None:
    """What member ClusterQueues store in their cohort is summed as they are added, changed, moved, deleted."""
    one = cluster_queue("one", [[("red", {"cpu": q("10")})]], "c")
    two = cluster_queue("two", [[("red", {"cpu": q("10")})]], "c")
    state = store(one, two)

    def most() -> Decimal | None:
        return state.snapshot().potential("one", "red", "cpu").value

    assert most() == 20
    state.apply(k.CLUSTER_QUEUES, "MODIFIED", cluster_queue("two", [[("red", {"cpu": q("30", None, "10")})]], "c"))
    assert most() == 20  # it lends only 10 of its 30
    state.apply(k.CLUSTER_QUEUES, "MODIFIED", cluster_queue("two", [[("red", {"cpu": q("30")})]], "other"))
    assert most() == 10
    state.apply(k.CLUSTER_QUEUES, "MODIFIED", two)
    assert most() == 20
    state.apply(k.CLUSTER_QUEUES, "DELETED", two)
    assert most() == 10


def admitted(name: str, priority: str, flavor: str, chips: int) -> dict[str, Any]:
    return {
        "metadata": {"name": name, "namespace": "ns"},
        "spec": {"queueName": "q", "priorityClassRef": {"name": priority}, "podSets": []},
        "status": {
            "conditions": [{"type": "QuotaReserved", "status": "True"}],
            "admission": {
                "clusterQueue": "cq",
                "podSetAssignments": [{"name": "w", "flavors": {TPU: flavor}, "resourceUsage": {TPU: str(chips)}}],
            },
        },
    }


def test_the_balance_passes_over_a_flavor_whose_guaranteed_chips_are_taken() -> None:
    state = store(
        cluster_queue("cq", [[("first", {TPU: q("64")}), ("second", {TPU: q("64")})]]),
        flavors={"first": {}, "second": {}},
    )
    state.apply(k.WORKLOADS, "ADDED", admitted("held", "guaranteed", "first", 48))
    state.apply(k.WORKLOADS, "ADDED", admitted("spare", "best-effort", "second", 32))
    job = [podset_demand("workers", {}, 8, {TPU: Decimal(4)})]  # 32 chips
    view = state.snapshot()
    assert dict(view.assign("cq", job).podsets[0].flavors) == {TPU: "first"}
    assert dict(view.assign("cq", job, within_balance=True).podsets[0].flavors) == {TPU: "second"}
    assert (view.balance("cq", "first").left, view.balance("cq", "second").left) == (16, 64)
    assert (view.in_use("cq", "first"), view.in_use("cq", "second")) == (48, 32)  # every priority
    state.apply(k.WORKLOADS, "DELETED", admitted("held", "guaranteed", "first", 48))
    view = state.snapshot()
    assert view.balance("cq", "first").left == 64 and view.in_use("cq", "first") == 0


def test_the_quota_package_imports_nothing_above_it() -> None:
    """No import cycle through the store or the rules: quota reads the store through a protocol."""
    for module in sorted(QUOTA.glob("*.py")):
        for node in ast.walk(ast.parse(module.read_text())):
            names = (
                [alias.name for alias in node.names]
                if isinstance(node, ast.Import)
                else [node.module or ""]
                if isinstance(node, ast.ImportFrom)
                else []
            )
            for name in names:
                if name.startswith("webhook"):
                    assert name.startswith(BELOW), f"{module.name} imports {name}"
