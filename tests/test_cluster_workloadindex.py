"""Explain's lookups into the Workloads' projections (``webhook.cluster.workloadindex``)."""

from __future__ import annotations

from cluster_fixtures import team_a_workload
from explain_builders import JOBSET_UID, WORKLOAD_UID, rfc_example_one, workload_index

from webhook.cluster.workloadindex import NAMESPACE_SHARDS, WorkloadRecords
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
    assert (sorted(held.keys_in("kubemaker")), list(held.keys_in("other"))) == (
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
        if held.namespaces.get(("kubemaker", shard)) is not published.namespaces.get(("kubemaker", shard))
    ]
    assert len(copied) == 1
    assert ("kubemaker", "another") not in set(published.keys_in("kubemaker"))


def test_explain_looks_records_up_by_uid_job_uid_and_namespace_as_documents() -> None:
    """The records are explain's Workload index: each lookup answers the records' documents, by name."""
    one = rfc_example_one().obj()
    unlabelled = rfc_example_one().name("w2").uid("u2").job_uid(None).namespace("other").obj()
    index = workload_index([one, unlabelled, {"metadata": "broken"}])
    documents = [read_workload(one, TPU).document(), read_workload(unlabelled, TPU).document()]
    assert index.by_uid(WORKLOAD_UID) == documents[0]
    assert index.by_uid("missing") is None
    assert (list(index.by_job_uid(JOBSET_UID)), list(index.by_job_uid("missing"))) == ([documents[0]], [])
    assert list(index.in_namespace("other")) == [documents[1]]
    index.pop(("other", "w2"))
    assert list(index.in_namespace("other")) == [] and index.by_uid("u2") is None
