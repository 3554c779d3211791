"""Explain's lookups into the Workloads' projections (``webhook.cluster.workloaddocs``)."""

from __future__ import annotations

from cluster_fixtures import team_a_workload

from webhook.cluster.workloaddocs import NAMESPACE_SHARDS, WorkloadRecords
from webhook.kueue.workload import read_workload

TPU = "google.com/tpu"


def records(count: int) -> WorkloadRecords:
    out = WorkloadRecords()
    for i in range(count):
        out.put(("kubemaker", f"w{i}"), read_workload(team_a_workload(f"w{i}", 4), TPU))
    return out


def test_a_namespace_reads_back_every_workload_filed_in_it() -> None:
    held = records(1000)
    held.pop(("kubemaker", "w7"))
    assert (sorted(held.in_namespace("kubemaker")), list(held.in_namespace("other"))) == (
        sorted(("kubemaker", f"w{i}") for i in range(1000) if i != 7),
        [],
    )


def test_a_write_after_a_fork_copies_one_shard_of_the_namespace() -> None:
    """One namespace may hold every Workload of the cluster: a Workload event must not copy them all."""
    held = records(2000)
    published = held.fork()
    held.put(("kubemaker", "another"), read_workload(team_a_workload("another", 4), TPU))
    copied = [
        shard
        for shard in range(NAMESPACE_SHARDS)
        if held.by_namespace.get(("kubemaker", shard)) is not published.by_namespace.get(("kubemaker", shard))
    ]
    assert len(copied) == 1
    assert ("kubemaker", "another") not in set(published.in_namespace("kubemaker"))
