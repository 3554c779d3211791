"""PodSets as Kueue's quota reads them (``webhook.quota.podsets``): counts, demands, totals."""

from __future__ import annotations

from decimal import Decimal
from typing import Any

import msgspec
from quota_fixtures import jobset, pod

from webhook.kube.sharing import Sharing
from webhook.kueue.podset import podset_demand
from webhook.quota.podsets import (
    PoolShortage,
    demand_of,
    demands_of,
    exceeding,
    pod_count,
    pool_shortages,
    requesting,
    total_request,
)

TPU = "google.com/tpu"
TOPOLOGY = "cloud.google.com/gke-tpu-topology"


def tpu_pod(chips: str = "4", **spec: Any) -> dict[str, Any]:
    return pod({"cpu": "1", TPU: chips}, **spec)


def test_pod_count_is_replicas_times_parallelism() -> None:
    """Kueue's podSet count for a replicatedJob; a Job without parallelism runs one pod each."""
    workload = jobset(("workers", 2, 4, tpu_pod()), ("head", 3, None, pod({"cpu": "1"})))
    assert [pod_count(p) for p in workload.podsets] == [8, 3]
    assert [(d.name, d.count) for d in demands_of(workload)] == [("workers", 8), ("head", 3)]


def test_pod_count_caps_a_jobs_pods_by_its_completions() -> None:
    """Kueue counts min(parallelism, completions) pods a Job: 2 replicas of 4-wide Jobs that
    complete after 2 pods make a podSet of 4."""
    workload = jobset(("workers", 2, 4, pod({"cpu": "1"})))
    (podset,) = workload.podsets
    assert pod_count(msgspec.structs.replace(podset, completions=2)) == 4


def test_a_topology_annotation_asks_for_topology_aware_scheduling_and_tpus_alone_do_not() -> None:
    """Kueue reads a topology request only from its annotations (the Slice Provisioner writes
    them from its own on the Job template): a TPU pod without one asks for none."""
    workload = jobset(
        ("workers", 1, 1, tpu_pod()),
        ("head", 1, 1, pod({"cpu": "1"})),
        ("sliced", 1, 1, tpu_pod()),
        ("cpu", 1, 1, pod({"cpu": "1"})),
    )
    workload.podsets[1].annotations["kueue.x-k8s.io/podset-required-topology"] = "rack"
    workload.podsets[2].annotations["cloud.google.com/gke-tpu-slice-topology"] = "4x4x4"
    assert [demand_of(p, 1).tas for p in workload.podsets] == [False, True, True, False]


def test_where_the_rules_require_a_topology_a_tpu_podset_is_read_as_asking_for_one() -> None:
    workload = jobset(("workers", 1, 1, tpu_pod()), ("cpu", 1, 1, pod({"cpu": "1"})))
    assert [d.tas for d in demands_of(workload, topology_required=True)] == [True, False]
    assert [d.tas for d in demands_of(workload)] == [False, False]


def test_identical_podsets_share_one_demand() -> None:
    """100,000 Workloads of a few shapes keep a few demands: the ledger shares them through the
    watch cache's sharing table. A request's job shares through no table (none that outlives it)."""
    shared = Sharing().share
    first = podset_demand("w", tpu_pod(nodeSelector={"pool": "a"}), 16, share=shared)
    assert podset_demand("w", tpu_pod(nodeSelector={"pool": "a"}), 16, share=shared) is first
    assert podset_demand("w", tpu_pod(nodeSelector={"pool": "a"}), 16) is not first
    assert first.total(TPU) == 64 and first.total("memory") == 0
    assert first.node_selector == (("pool", "a"),)


def test_chip_totals_count_every_pod() -> None:
    workload = jobset(("workers", 2, 4, tpu_pod()), ("head", 1, None, pod({"cpu": "1"})))
    chips = requesting(workload.podsets, TPU)
    assert [p.name for p in chips] == ["workers"]
    assert total_request(chips, TPU) == 32
    assert total_request(workload.podsets, "cpu") == 9
    assert exceeding(chips, TPU, Decimal(32)) is None  # exactly the ceiling fits
    assert exceeding(chips, TPU, Decimal(31)) == 32


def test_pool_shortages_count_slices_per_topology() -> None:
    """One node pool per slice: replicas of every podSet selecting a topology add up."""
    workload = jobset(
        ("a", 2, 1, tpu_pod(nodeSelector={TOPOLOGY: "4x4x4"})),
        ("b", 1, 1, tpu_pod(nodeSelector={TOPOLOGY: "4x4x4"})),
        ("c", 1, 1, tpu_pod(nodeSelector={TOPOLOGY: "4x4x8"})),
        ("d", 5, 1, tpu_pod()),  # no topology selected: not a static pool's business
    )
    pools = {"4x4x4": 2, "4x4x8": 1}
    [short] = pool_shortages(workload.podsets, TOPOLOGY, lambda topology: pools.get(topology, 0))
    assert short == PoolShortage("4x4x4", 3, 2, workload.podsets[0])
    assert pool_shortages(workload.podsets, TOPOLOGY, lambda topology: 3) == []
