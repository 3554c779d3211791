"""What member ClusterQueues store in their cohort, kept summed (``webhook.kueue.cohort``)."""

from __future__ import annotations

from quota_fixtures import CQ, cluster_queue, q

from webhook.kueue.clusterqueue import parse_cluster_queue
from webhook.kueue.cohort import CohortMembers, stored_in_parent


def test_a_queue_stores_its_nominal_less_what_it_keeps() -> None:
    """Nominal less the local quota (nominal − lendingLimit when one is set)."""
    queue = parse_cluster_queue(cluster_queue(CQ, [[("red", {"cpu": q("10", None, "4"), "memory": q("8")})]], "c"))
    assert stored_in_parent(queue) == {("red", "cpu"): 4, ("red", "memory"): 8}


def test_cohort_members_keep_what_their_queues_store_summed() -> None:
    """The member ClusterQueues' part of a cohort's subtree quota follows them as they come and go."""
    members = CohortMembers()
    one = parse_cluster_queue(cluster_queue("one", [[("red", {"cpu": q("10", None, "4")})]], "c"))
    two = parse_cluster_queue(cluster_queue("two", [[("red", {"cpu": q("6")})]], "c"))
    alone = parse_cluster_queue(cluster_queue("alone", [[("red", {"cpu": q("6")})]]))
    for queue in (one, two, alone):
        members.add(queue)
    assert members.stored("c") == {("red", "cpu"): 10}
    members.remove(one)
    assert members.stored("c") == {("red", "cpu"): 6}
    members.remove(two)
    assert members.stored("c") is None  # the last member gone: nothing kept for the cohort
