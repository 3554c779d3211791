"""Answers cut to what the caller may read: other namespaces' Workloads and jobs, other teams' usage."""

from __future__ import annotations

from typing import Any

from webhook.advisor.access import HIDDEN, MAX_REVIEWS, OTHER_QUEUE, named_namespaces, other_queues, redact
from webhook.advisor.frontproxy import Caller

ALICE = Caller("alice", ("team-b",))


class Grants:
    """An authorizer from a set of namespaces and a quota flag, recording what it is asked."""

    def __init__(self, namespaces: set[str], quota: bool = False) -> None:
        self.namespaces = namespaces
        self.quota = quota
        self.asked: list[str] = []

    def may_read(self, caller: Caller, namespace: str) -> bool:
        self.asked.append(namespace)
        return namespace in self.namespaces

    def may_see_quota(self, caller: Caller) -> bool:
        self.asked.append("quotas")
        return self.quota


def waiting() -> dict[str, Any]:
    """A §12 ``wait`` for a job of kubemaker in team-b, with holders in its queue and cohort."""
    return {
        "source": "request",
        "kind": "JobSet",
        "namespace": "kubemaker",
        "name": "big",
        "outcome": "wait",
        "reason": "WaitingForQuota",
        "clusterQueue": "team-b",
        "podSets": [{"name": "w", "count": 64, "flavors": {"google.com/tpu": "tpu7x"}, "borrows": 0}],
        "preemptions": [
            {
                "workload": "team-a-ns/train-1",
                "clusterQueue": "team-a",
                "priority": 100,
                "reason": "InCohortReclamation",
            }
        ],
        "position": {"ahead": 1, "chipsAhead": 64},
        "message": "team-b uses 256 of 256 tpu7x chips, cohort tpu-pool lends 0; held by team-a 256, team-b 256; "
        "waiting behind kubemaker/first and team-a-ns/train-1 (kueue.x-k8s.io/v1beta2, google.com/tpu, 256/512)",
        "holders": {
            "flavor": "tpu7x",
            "resource": "google.com/tpu",
            "clusterQueues": [{"name": "team-a", "amount": 256}, {"name": "team-b", "amount": 256}],
            "workloads": [
                {"name": "kubemaker/first", "clusterQueue": "team-b", "amount": 128},
                {"name": "other-ns/second", "clusterQueue": "team-b", "amount": 128},
            ],
        },
    }


def test_only_namespaces_and_queues_are_taken_for_names() -> None:
    answer = waiting()
    assert named_namespaces(answer) == {"kubemaker", "team-a-ns", "other-ns"}
    assert other_queues(answer) == {"team-a"}
    assert other_queues({"results": [{"simulation": answer}]}) == {"team-a"}


def test_a_caller_of_one_namespace_reads_its_own_names_only() -> None:
    grants = Grants({"kubemaker"})
    cut = redact(waiting(), "kubemaker", ALICE, grants, other_queues(waiting()))
    expected = waiting()
    expected["preemptions"][0].update(workload=HIDDEN, clusterQueue=OTHER_QUEUE)
    expected["holders"]["clusterQueues"][0]["name"] = OTHER_QUEUE
    expected["holders"]["workloads"][1]["name"] = HIDDEN
    expected["message"] = (
        f"team-b uses 256 of 256 tpu7x chips, cohort tpu-pool lends 0; held by {OTHER_QUEUE} 256, team-b 256; "
        f"waiting behind kubemaker/first and {HIDDEN} (kueue.x-k8s.io/v1beta2, google.com/tpu, 256/512)"
    )
    assert cut == expected
    # its own namespace is never asked about; each other one once
    assert sorted(grants.asked) == ["other-ns", "quotas", "team-a-ns"]


def test_a_caller_allowed_everywhere_reads_the_answer_whole() -> None:
    grants = Grants({"team-a-ns", "other-ns"}, quota=True)
    assert redact(waiting(), "kubemaker", ALICE, grants, other_queues(waiting())) == waiting()


def test_beyond_the_review_budget_names_stay_hidden() -> None:
    names = [f"ns-{i:02d}/w" for i in range(MAX_REVIEWS + 4)]
    grants = Grants({name.split("/")[0] for name in names})
    cut = redact({"message": ", ".join(names)}, "kubemaker", ALICE, grants)
    assert len(grants.asked) == MAX_REVIEWS
    assert cut["message"].split(", ") == names[:MAX_REVIEWS] + [HIDDEN] * 4
