"""``webhook.cluster.own``: which Workloads are an object's own, and the state without them."""

from __future__ import annotations

import copy
from typing import Any

import pytest
from cluster_fixtures import OBJECTS, POLICY
from support import load_deployment, load_job, load_jobset, set_path

from webhook.cluster.own import OwnedWorkloads, WithoutWorkloads
from webhook.cluster.statefiles import state_from_objects
from webhook.cluster.store import ClusterStore
from webhook.engine.decision import AdmissionFacts, decide
from webhook.objects.kinds import DEPLOYMENT, JOB, JOBSET

UID = "6f1e0c2a-0000-4000-8000-00000000a3f8"
RUNNING = "jobset-a-running-guaranteed-1a2b3"  # team-a, holds 128 guaranteed chips of tpu7x-4x4x4
PENDING = "jobset-a-pending-guaranteed-4c5d6"  # team-a, waits for 64 guaranteed chips
BEST_EFFORT = "jobset-a-running-besteffort-7e8f9"  # team-a, holds 64 best-effort chips


def owner(kind: str, name: str, uid: str = "", api_version: str = "jobset.x-k8s.io/v1alpha2") -> dict[str, Any]:
    reference = {"apiVersion": api_version, "kind": kind, "name": name, "controller": True}
    return {**reference, "uid": uid} if uid else reference


def workload(name: str, namespace: str = "kubemaker", *owners: dict[str, Any]) -> dict[str, Any]:
    metadata: dict[str, Any] = {"name": name, "namespace": namespace}
    if owners:
        metadata["ownerReferences"] = list(owners)
    return {"apiVersion": "kueue.x-k8s.io/v1beta2", "kind": "Workload", "metadata": metadata}


def fixture_workload(name: str) -> dict[str, Any]:
    return next(o for o in OBJECTS if o["kind"] == "Workload" and o["metadata"]["name"] == name)


# ---------------------------------------------------------------- OwnedWorkloads


def test_a_jobsets_workload_is_found_by_its_owner_reference() -> None:
    owners = OwnedWorkloads()
    owners.add(workload("jobset-train-1a2b3", "kubemaker", owner(JOBSET, "train", UID)))
    owners.add(workload("jobset-other-4c5d6", "kubemaker", owner(JOBSET, "other")))
    owners.add(workload("jobset-train-7e8f9", "elsewhere", owner(JOBSET, "train")))
    assert owners.of(JOBSET, "kubemaker", "train", UID) == (("kubemaker", "jobset-train-1a2b3"),)
    assert owners.of(JOBSET, "kubemaker", "train") == (("kubemaker", "jobset-train-1a2b3"),)
    # the kind must match too: a Job of the same name owns nothing of the JobSet's
    assert owners.of(JOB, "kubemaker", "train") == ()
    assert owners.of(JOBSET, "kubemaker", "absent") == ()


def test_a_namesake_from_before_a_re_create_is_not_the_objects() -> None:
    owners = OwnedWorkloads()
    owners.add(workload("jobset-train-old", "kubemaker", owner(JOBSET, "train", "old-uid")))
    owners.add(workload("jobset-train-new", "kubemaker", owner(JOBSET, "train", UID)))
    assert owners.of(JOBSET, "kubemaker", "train", UID) == (("kubemaker", "jobset-train-new"),)
    # without the object's uid (a state file that dropped it) both are taken for its own
    assert len(owners.of(JOBSET, "kubemaker", "train")) == 2


def test_a_workload_without_owner_references_is_nobodys() -> None:
    owners = OwnedWorkloads()
    owners.add(fixture_workload(RUNNING))
    owners.add({"kind": "Workload", "metadata": {"namespace": "kubemaker"}})  # no name: ignored
    assert owners.of(JOBSET, "kubemaker", "llm-pretrain-a3f8") == ()


def test_a_deployments_workloads_are_its_pods() -> None:
    owners = OwnedWorkloads()
    pod = "eval-gateway-7d9fb5c4d8-x2k9p"
    owners.add(workload("pod-eval-gateway-1", "kubemaker", owner("Pod", pod, "p1", "v1")))
    owners.add(workload("pod-eval-gateway-2", "kubemaker", owner("Pod", "eval-gateway-7d9fb5c4d8-q4z7w", "p2", "v1")))
    # another Deployment whose name starts with this one's: its pods are not this one's
    owners.add(workload("pod-eval-gateway-api-1", "kubemaker", owner("Pod", "eval-gateway-api-6c8d9f-x2k9p", "", "v1")))
    # a pod name no Deployment gives (vowels in the hash): nobody's
    owners.add(workload("pod-eval-gateway-3", "kubemaker", owner("Pod", "eval-gateway-aeiou-x2k9p", "", "v1")))
    assert owners.of(DEPLOYMENT, "kubemaker", "eval-gateway", "deployment-uid") == (
        ("kubemaker", "pod-eval-gateway-1"),
        ("kubemaker", "pod-eval-gateway-2"),
    )
    assert owners.of(DEPLOYMENT, "kubemaker", "eval-gateway-api") == (("kubemaker", "pod-eval-gateway-api-1"),)
    assert owners.of(DEPLOYMENT, "other", "eval-gateway") == ()


# ---------------------------------------------------------------- WithoutWorkloads


def _state(objects: list[dict[str, Any]]) -> ClusterStore:
    return state_from_objects(copy.deepcopy(objects), POLICY)


QUEUES = ("team-a", "team-b", "dev", "team-c")
FLAVORS = ("tpu7x-4x4x4", "tpu7x-4x4x8", "tpu7x-4x8x8", "tpu7x-8x8x8", "cpu-standard")


@pytest.mark.parametrize("left_out", [(RUNNING,), (PENDING,), (BEST_EFFORT,), (RUNNING, PENDING, BEST_EFFORT), ()])
def test_the_view_answers_as_a_state_without_those_workloads(left_out: tuple[str, ...]) -> None:
    whole = _state(OBJECTS)
    without = _state([o for o in OBJECTS if not (o["kind"] == "Workload" and o["metadata"]["name"] in left_out)])
    view = WithoutWorkloads(whole, [("kubemaker", name) for name in left_out]).snapshot()
    expected = without.snapshot()
    for queue in QUEUES:
        for flavor in FLAVORS:
            assert view.balance(queue, flavor) == expected.balance(queue, flavor), (queue, flavor)
            assert view.in_use(queue, flavor) == expected.in_use(queue, flavor), (queue, flavor)
    # ... and the store itself is left as it was
    fresh = _state(OBJECTS).snapshot()
    assert whole.snapshot().balance("team-a", "tpu7x-4x4x4") == fresh.balance("team-a", "tpu7x-4x4x4")


def test_an_unknown_key_leaves_nothing_out() -> None:
    whole = _state(OBJECTS)
    view = WithoutWorkloads(whole, [("kubemaker", "no-such-workload")]).snapshot()
    assert view.balance("team-a", "tpu7x-4x4x4") == whole.snapshot().balance("team-a", "tpu7x-4x4x4")


def _guaranteed_jobset() -> dict[str, Any]:
    """RFC-0033 4.6's job as guaranteed: 128 chips of tpu7x-4x4x4 in team-a, the shape of RUNNING."""
    jobset = load_jobset("rfc-4.6-static")
    set_path(jobset, 'metadata.labels["kueue.x-k8s.io/priority-class"]', "guaranteed")
    return jobset


def test_a_running_job_is_not_refused_for_the_quota_it_holds() -> None:
    whole = _state(OBJECTS)
    facts = AdmissionFacts(namespace="kubemaker", kind=JOBSET)
    counted = decide(_guaranteed_jobset(), facts, POLICY, whole)
    assert [f.rule for f in counted.violations] == ["guaranteed-balance-exceeded"]
    assert "nominal 256 − in use 128 − pending 64" in counted.violations[0].problem
    own = WithoutWorkloads(whole, [("kubemaker", RUNNING)])
    assert decide(_guaranteed_jobset(), facts, POLICY, own).allowed
    # the state less that Workload says the same
    without = _state([o for o in OBJECTS if o["metadata"].get("name") != RUNNING])
    assert decide(_guaranteed_jobset(), facts, POLICY, without).allowed


def test_every_other_answer_is_the_stores() -> None:
    whole = _state(OBJECTS)
    view = WithoutWorkloads(whole, [("kubemaker", RUNNING)]).snapshot()
    stored = whole.snapshot()
    # the queues and nodes, and what is memoized on them, are the store's snapshot's
    assert view.queues is stored.queues and view.nodes is stored.nodes
    for kind, obj in ((JOB, load_job("rfc-job-static")), (DEPLOYMENT, load_deployment("service-deployment"))):
        facts = AdmissionFacts(namespace="kubemaker", kind=kind)
        a, b = decide(copy.deepcopy(obj), facts, POLICY, whole), decide(copy.deepcopy(obj), facts, POLICY, view)
        assert (a.allowed, [f.line() for f in a.findings], a.warnings) == (
            b.allowed,
            [f.line() for f in b.findings],
            b.warnings,
        )
    assert view.namespace_labels("kubemaker") == stored.namespace_labels("kubemaker")
    assert view.local_queue_names("kubemaker") == stored.local_queue_names("kubemaker")
    assert view.static_topologies() == stored.static_topologies()
    assert view.accelerator_chips() == stored.accelerator_chips()
    assert view.node_pools("4x4x4") == stored.node_pools("4x4x4")
    assert view.potential("team-a", "tpu7x-4x4x4", "google.com/tpu") == stored.potential(
        "team-a", "tpu7x-4x4x4", "google.com/tpu"
    )
