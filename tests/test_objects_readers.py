"""Jobs and Deployments as the rules see them (webhook/objects/readers.py), and the engine's answers
for them: RFC-0033 4.3.1's last table, JobSet-owned Jobs, dev-tier injection, UPDATE; and the
one reader every kind is read through, from text or decoded."""

from __future__ import annotations

import copy
import json
from typing import Any

import jsonpatch
import pytest
from builders import TOPOLOGY_LABEL, TPU, DeploymentBuilder, JobBuilder, deployment, job
from support import JOBSET_OWNER as OWNER
from support import load_deployment, load_job, load_jobset

from webhook.engine.decision import AdmissionFacts, Decision, decide
from webhook.objects.kinds import DEPLOYMENT, JOB, JOBSET, kind_of_document
from webhook.objects.readers import read_workload
from webhook.objects.request import UserInfo
from webhook.policy.config import Policy
from webhook.rules.catalog import policy_from_mapping

STATIC = Policy()
DYNAMIC = Policy(mode="dynamic")
KUEUE = "system:serviceaccount:kueue-system:kueue-controller-manager"


def judge(obj: Any, kind: str, policy: Policy = STATIC, **facts: Any) -> Decision:
    namespace = obj["metadata"].get("namespace", "default") if isinstance(obj, dict) else "default"
    return decide(obj, AdmissionFacts(namespace=namespace, kind=kind, **facts), policy)


def rules(decision: Decision) -> list[str]:
    return [f.rule for f in decision.findings]


# ---------------------------------------------------------------- parsing


def test_a_job_is_one_podset_gang_admitted_over_its_parallelism() -> None:
    job = load_job("rfc-job-static")
    job["spec"]["template"]["spec"]["tolerations"] = [{"key": "google.com/tpu", "operator": "Exists"}, "junk"]
    workload = read_workload(JOB, job, STATIC)
    assert (workload.kind, workload.name, workload.namespace) == (JOB, "llm-eval-b7c2", "kubemaker")
    assert workload.replicas == 1
    assert workload.malformed == []
    (podset,) = workload.podsets
    assert (podset.name, podset.replicas, podset.parallelism, podset.completions) == ("main", 1, 16, 16)
    assert podset.is_tpu and workload.tpu_podsets == [podset]
    assert str(podset.pod_spec_path) == "spec.template.spec"
    assert str(podset.annotations_path) == "spec.template.metadata.annotations"
    assert str(podset.job_spec_path.child("parallelism")) == "spec.parallelism"
    assert podset.pod_spec["tolerations"][0] == {"key": "google.com/tpu", "operator": "Exists"}


def test_a_deployment_is_one_workload_per_pod() -> None:
    workload = read_workload(DEPLOYMENT, load_deployment("service-deployment"), STATIC)
    assert (workload.kind, workload.replicas) == (DEPLOYMENT, 3)
    (podset,) = workload.podsets
    # Kueue admits each pod on its own: the podSet is one pod, whatever spec.replicas says.
    assert (podset.replicas, podset.parallelism, podset.completions) == (1, 1, 1)
    assert not podset.is_tpu and workload.tpu_podsets == []
    assert podset.pod_requests() == {"cpu": 4, "memory": 16 * 2**30, "ephemeral-storage": 10 * 2**30}
    unset = load_deployment("dev-deployment")
    del unset["spec"]["replicas"]
    assert read_workload(DEPLOYMENT, unset, STATIC).replicas == 1  # Kubernetes' default


@pytest.mark.parametrize("obj", [None, "job", [], {"spec": "x"}, {"metadata": {"labels": []}}])
def test_garbage_is_findings_for_every_kind(obj: Any) -> None:
    for kind in (JOBSET, JOB, DEPLOYMENT):
        for document in (obj, json.dumps(obj).encode()):  # decoded, and as the review decoder hands it on
            workload = read_workload(kind, document, STATIC, "default")
            assert workload.malformed, (kind, obj)
            assert all(f.rule == "jobset-malformed" for f in workload.malformed)


@pytest.mark.parametrize(
    ("doc", "kind"),
    [
        ({"apiVersion": "batch/v1", "kind": "Job"}, JOB),
        ({"apiVersion": "apps/v1", "kind": "Deployment"}, DEPLOYMENT),
        ({"apiVersion": "jobset.x-k8s.io/v1alpha2", "kind": "JobSet"}, JOBSET),
        ({"apiVersion": "v1", "kind": "Pod"}, None),
        ({"apiVersion": "batch/v1", "kind": "CronJob"}, None),
        ({"apiVersion": "example.com/v1", "kind": "Job"}, None),
        ({"apiVersion": "extensions/v1beta1", "kind": "Deployment"}, None),
        ({"kind": "Job"}, None),
        ("Job", None),
    ],
)
def test_kind_of_a_document(doc: Any, kind: str | None) -> None:
    assert kind_of_document(doc) == kind


# ---------------------------------------------------------------- JobSet-owned Jobs


@pytest.mark.parametrize(
    ("metadata", "owned"),
    [
        ({"ownerReferences": [OWNER]}, True),
        ({"ownerReferences": [{"kind": "ReplicaSet", "apiVersion": "apps/v1", "controller": True}, OWNER]}, True),
        ({"ownerReferences": [{**OWNER, "controller": False}]}, False),  # not its controller: Kueue manages it
        ({"ownerReferences": [{k: v for k, v in OWNER.items() if k != "controller"}]}, False),
        ({"ownerReferences": [{**OWNER, "apiVersion": "example.com/v1"}]}, False),
        ({"ownerReferences": [{**OWNER, "kind": "Job"}]}, False),
        ({"labels": {"jobset.sigs.k8s.io/jobset-name": "llm-pretrain-a3f8"}}, False),  # anyone can write a label
        ({"ownerReferences": "JobSet"}, False),
        ({"ownerReferences": ["JobSet"]}, False),
        ({}, False),
    ],
)
def test_controlled_by_jobset(metadata: dict[str, Any], owned: bool) -> None:
    for kind in (JOBSET, JOB, DEPLOYMENT):
        assert read_workload(kind, {"metadata": metadata}, STATIC).controlled_by_jobset is owned
        assert read_workload(kind, None, STATIC).controlled_by_jobset is False


def _breaks_everything() -> dict[str, Any]:
    """A production Job with no labels, spec.suspend and a native priority class."""
    job = load_job("rfc-job-static")
    del job["metadata"]["labels"]
    job["spec"]["suspend"] = True
    job["spec"]["template"]["spec"]["priorityClassName"] = "ci-tpu-pool"
    return job


JOBSET_CONTROLLER = UserInfo("system:serviceaccount:jobset-system:jobset-controller-manager")


def test_a_job_of_a_jobset_is_admitted_without_a_word() -> None:
    job = _breaks_everything()
    job["metadata"]["ownerReferences"] = [OWNER]
    job["metadata"]["labels"] = {"jobset.sigs.k8s.io/jobset-name": "llm-pretrain-a3f8"}
    for stage in ("mutate", "validate"):
        for operation in ("CREATE", "UPDATE"):
            old = job if operation == "UPDATE" else None
            facts = {"stage": stage, "operation": operation, "old_object": old, "user": JOBSET_CONTROLLER}
            decision = judge(job, JOB, **facts)
            assert (decision.allowed, decision.findings, decision.warnings, decision.patch) == (True, [], [], [])
    # ... also where the namespace's tier is unknown (no "could not be determined" warning)
    job["metadata"]["namespace"] = "elsewhere"
    assert judge(job, JOB, user=JOBSET_CONTROLLER).warnings == []


@pytest.mark.parametrize("user", ["alice", "", KUEUE, "system:serviceaccount:jobset-system:default"])
def test_a_forged_jobset_owner_reference_switches_nothing_off(user: str) -> None:
    """Anyone may write an owner reference: from any user but the JobSet controller, a Job that
    names a JobSet as its controller is judged like any Job (and ``check``, which has no user, too)."""
    job = _breaks_everything()
    job["metadata"]["ownerReferences"] = [OWNER]
    forged = judge(job, JOB, user=UserInfo(user))
    plain = judge(_breaks_everything(), JOB, user=UserInfo(user))
    assert not forged.allowed
    everything = ["queue-label-missing", "priority-label-missing", "suspend-forbidden", "pod-priority-class-forbidden"]
    assert rules(forged) == rules(plain) == everything
    assert forged.deny_message() == plain.deny_message()


def test_the_jobset_controller_names_its_own_service_account_in_the_policy() -> None:
    """A cluster whose JobSet controller runs under another name (a Helm release) says so."""
    helm = policy_from_mapping({"jobsetControllerUsers": ["system:serviceaccount:jobset-system:jobset-controller"]})
    job = _breaks_everything()
    job["metadata"]["ownerReferences"] = [OWNER]
    assert not judge(job, JOB, helm, user=JOBSET_CONTROLLER).allowed
    assert judge(job, JOB, helm, user=UserInfo("system:serviceaccount:jobset-system:jobset-controller")).allowed
    # The controller's own account exempts only what names a JobSet as controller.
    assert not judge(_breaks_everything(), JOB, user=JOBSET_CONTROLLER).allowed


def test_the_same_job_without_its_owner_is_judged() -> None:
    decision = judge(_breaks_everything(), JOB)
    assert not decision.allowed
    assert rules(decision) == [
        "queue-label-missing",
        "priority-label-missing",
        "suspend-forbidden",
        "pod-priority-class-forbidden",
    ]
    assert decision.deny_message().splitlines() == [
        '[queue-label-missing] metadata.labels["kueue.x-k8s.io/queue-name"]: the production tier requires an '
        'explicit queue and the Job has none; add the label kueue.x-k8s.io/queue-name: "<team>-queue" naming '
        "your team's LocalQueue",
        '[priority-label-missing] metadata.labels["kueue.x-k8s.io/priority-class"]: the production tier requires '
        "an explicit priority class and the Job has none; add the label kueue.x-k8s.io/priority-class with one "
        "of: guaranteed, best-effort",
        "[suspend-forbidden] spec.suspend: spec.suspend is set (true), but Kueue suspends and resumes the job "
        "itself; remove spec.suspend",
        "[pod-priority-class-forbidden] spec.template.spec.priorityClassName: pod priorityClassName "
        "'ci-tpu-pool' triggers kubelet-level preemption and can outrank Kueue's guaranteed class; remove it and "
        "express priority with the kueue.x-k8s.io/priority-class label",
    ]


# ---------------------------------------------------------------- RFC-shaped objects


@pytest.mark.parametrize(
    ("loader", "name", "kind", "policy"),
    [
        (load_job, "rfc-job-static", JOB, STATIC),
        (load_job, "rfc-job-dynamic", JOB, DYNAMIC),
        (load_job, "dev-job-cpu", JOB, STATIC),
        (load_deployment, "service-deployment", DEPLOYMENT, STATIC),
        (load_deployment, "dev-deployment", DEPLOYMENT, DYNAMIC),
    ],
)
def test_rfc_shaped_objects_are_admitted(loader: Any, name: str, kind: str, policy: Policy) -> None:
    decision = judge(loader(name), kind, policy)
    assert (decision.allowed, decision.findings, decision.warnings) == (True, [], [])


@pytest.mark.parametrize(
    ("obj", "kind"), [(load_job("dev-job-cpu"), JOB), (load_deployment("dev-deployment"), DEPLOYMENT)]
)
def test_dev_tier_gets_its_default_labels(obj: dict[str, Any], kind: str) -> None:
    decision = judge(obj, kind)
    assert decision.allowed and decision.tier == "dev"
    expected = copy.deepcopy(obj)
    expected["metadata"]["labels"] = {
        "kueue.x-k8s.io/queue-name": "default",
        "kueue.x-k8s.io/priority-class": "default",
    }
    assert jsonpatch.apply_patch(obj, decision.patch) == expected
    # The validating path never patches.
    assert judge(obj, kind, stage="validate").patch == []


def test_a_deployment_keeps_its_own_labels_and_gets_the_missing_one() -> None:
    deployment = load_deployment("dev-deployment")
    deployment["metadata"]["labels"] = {"app": "notebook-proxy", "kueue.x-k8s.io/queue-name": "default"}
    decision = judge(deployment, DEPLOYMENT)
    assert decision.patch == [
        {"op": "add", "path": "/metadata/labels/kueue.x-k8s.io~1priority-class", "value": "default"}
    ]


def test_validate_on_create_leaves_suspend_to_kueues_webhook() -> None:
    job = load_job("rfc-job-static")
    job["spec"]["suspend"] = True  # Kueue's mutating webhook sets it before /validate sees the Job
    assert judge(job, JOB, stage="validate").allowed
    assert rules(judge(job, JOB)) == ["suspend-forbidden"]


# ---------------------------------------------------------------- UPDATE


def test_job_update_suspend_flip_is_kueues_alone() -> None:
    old = load_job("rfc-job-static")
    new = load_job("rfc-job-static")
    new["spec"]["suspend"] = True
    by_user = judge(new, JOB, stage="validate", operation="UPDATE", old_object=old)
    assert rules(by_user) == ["suspend-forbidden"]
    assert "delete the Job" in by_user.findings[0].fix
    by_kueue = judge(new, JOB, stage="validate", operation="UPDATE", old_object=old, user=UserInfo(KUEUE))
    assert (by_kueue.allowed, by_kueue.findings) == (True, [])


def test_deployment_updates_judge_only_the_kueue_labels() -> None:
    old = load_deployment("service-deployment")
    scaled = copy.deepcopy(old)
    scaled["spec"]["replicas"] = 30
    scaled["spec"]["template"]["spec"]["priorityClassName"] = "high"  # a create rule, not an update rule
    assert judge(scaled, DEPLOYMENT, stage="validate", operation="UPDATE", old_object=old).findings == []
    moved = copy.deepcopy(old)
    moved["metadata"]["labels"]["kueue.x-k8s.io/queue-name"] = "team-a"
    decision = judge(moved, DEPLOYMENT, stage="validate", operation="UPDATE", old_object=old)
    assert rules(decision) == ["queue-label-invalid"] and not decision.allowed


def test_a_jobset_fixture_is_still_a_jobset() -> None:
    assert judge(load_jobset("rfc-4.6-static"), JOBSET).allowed


# ---------------------------------------------------------------- RFC-0033 4.1: outside Kueue

OUTSIDE = (
    "{kind} kubemaker/{name} has no kueue.x-k8s.io/queue-name label, so Kueue does not manage it and it runs "
    "outside every quota, as the production tier's system components do; add the label to queue it under "
    "your team's quota"
)


def _system_deployment() -> dict[str, Any]:
    """A system component living in kubemaker: no Kueue labels, a native priority class."""
    deployment = load_deployment("service-deployment")
    del deployment["metadata"]["labels"]
    deployment["spec"]["template"]["spec"]["priorityClassName"] = "system-cluster-critical"
    return deployment


def test_production_cpu_workloads_without_a_queue_are_not_judged() -> None:
    decision = judge(_system_deployment(), DEPLOYMENT)
    assert (decision.allowed, decision.findings, decision.patch) == (True, [], [])
    assert decision.warnings == [OUTSIDE.format(kind="Deployment", name="eval-gateway")]
    job = load_job("dev-job-cpu")
    job["metadata"]["namespace"] = "kubemaker"
    job["metadata"]["labels"] = {"kueue.x-k8s.io/priority-class": "guaranteed"}  # a priority alone queues nothing
    job["spec"]["suspend"] = True
    decision = judge(job, JOB, stage="validate")
    assert (decision.allowed, decision.findings) == (True, [])
    assert decision.warnings == [OUTSIDE.format(kind="Job", name="data-prep")]


@pytest.mark.parametrize("where", ["containers", "initContainers"])
def test_a_tpu_workload_without_a_queue_is_judged(where: str) -> None:
    deployment = _system_deployment()
    pod = deployment["spec"]["template"]["spec"]
    pod.setdefault(where, [{"name": "warm", "image": "x"}])[0]["resources"] = {"limits": {"google.com/tpu": "4"}}
    decision = judge(deployment, DEPLOYMENT)
    assert rules(decision) == ["queue-label-missing", "priority-label-missing", "pod-priority-class-forbidden"]


def test_what_cannot_be_read_is_judged() -> None:
    deployment = _system_deployment()
    deployment["spec"]["template"]["spec"]["containers"] = {"gateway": {}}
    assert "jobset-malformed" in rules(judge(deployment, DEPLOYMENT))


def test_jobsets_and_the_dev_tier_always_queue() -> None:
    jobset = load_jobset("rfc-4.6-static")
    del jobset["metadata"]["labels"]
    assert rules(judge(jobset, JOBSET)) == ["queue-label-missing", "priority-label-missing"]
    deployment = _system_deployment()
    deployment["metadata"]["namespace"] = "default"
    decision = judge(deployment, DEPLOYMENT)
    assert rules(decision) == ["pod-priority-class-forbidden"] and decision.warnings == []


def test_dropping_the_queue_of_a_managed_workload_is_judged() -> None:
    old = load_deployment("service-deployment")
    new = copy.deepcopy(old)
    del new["metadata"]["labels"]["kueue.x-k8s.io/queue-name"]
    decision = judge(new, DEPLOYMENT, stage="validate", operation="UPDATE", old_object=old)
    assert rules(decision) == ["queue-label-missing"]
    # ... while an update of a workload that never had one stays unjudged.
    system = _system_deployment()
    decision = judge(system, DEPLOYMENT, stage="validate", operation="UPDATE", old_object=_system_deployment())
    assert (decision.allowed, decision.findings) == (True, [])


ACCELERATOR = "cloud.google.com/gke-tpu-accelerator"


def _unqueued_cpu_deployment() -> DeploymentBuilder:
    """The issue's Deployment: 8 replicas, CPU only, no Kueue labels (it runs outside Kueue)."""
    return deployment().queue(None).priority(None).replicas(8)


def _on_tpus(builder: DeploymentBuilder | JobBuilder, where: str = "containers") -> dict[str, Any]:
    """``builder``'s object asking for 4 chips of a tpu7x 2x2x1 slice (in its containers or init containers)."""
    builder.node_selector(ACCELERATOR, "tpu7x").node_selector(TOPOLOGY_LABEL, "2x2x1")
    if where == "containers":
        builder.request(TPU, "4").request(TPU, "4", kind="limits")
    else:
        builder.init_containers([{"name": "warm", "image": "x", "resources": {"limits": {TPU: "4"}}}])
    return builder.obj()


@pytest.mark.parametrize("where", ["containers", "initContainers"])
@pytest.mark.parametrize("stage", ["validate", "mutate"])
def test_an_update_that_takes_an_unjudged_workload_to_tpus_is_judged_whole(where: str, stage: str) -> None:
    """A CPU Deployment outside Kueue was admitted unjudged; the UPDATE that gives it TPUs
    meets every rule its CREATE would have, not only the label changes (there are none)."""
    old = _unqueued_cpu_deployment().obj()
    new = _on_tpus(_unqueued_cpu_deployment(), where)
    update = judge(new, DEPLOYMENT, stage=stage, operation="UPDATE", old_object=old, path_tier="production")
    assert not update.allowed
    assert rules(update) == ["queue-label-missing", "priority-label-missing"]
    assert update.deny_message() == judge(new, DEPLOYMENT).deny_message()  # as its CREATE
    # ... and with its labels it is admitted, as the CREATE would be.
    labelled = _on_tpus(_unqueued_cpu_deployment().queue("team-a-queue").priority("best-effort"), where)
    assert judge(labelled, DEPLOYMENT, stage=stage, operation="UPDATE", old_object=old).allowed


def test_a_job_taken_to_tpus_by_an_update_is_judged_whole() -> None:
    old = job("dev-job-cpu").namespace("kubemaker").queue(None).priority(None)
    new = _on_tpus(job("dev-job-cpu").namespace("kubemaker").queue(None).priority(None))
    decision = judge(new, JOB, stage="validate", operation="UPDATE", old_object=old.obj())
    assert {"queue-label-missing", "priority-label-missing"} <= set(rules(decision)) == set(rules(judge(new, JOB)))


def test_a_queue_label_on_an_unjudged_workload_brings_every_rule() -> None:
    """Queueing a system component puts it under Kueue: it meets what any queued Deployment meets."""
    old = _system_deployment()
    new = copy.deepcopy(old)
    new["metadata"]["labels"] = {"kueue.x-k8s.io/queue-name": "team-a-queue"}
    decision = judge(new, DEPLOYMENT, stage="validate", operation="UPDATE", old_object=old)
    assert rules(decision) == ["priority-label-missing", "pod-priority-class-forbidden"]
    assert rules(decision) == rules(judge(new, DEPLOYMENT))


def test_updates_of_judged_workloads_still_judge_only_what_changed() -> None:
    """What was judged at CREATE (queued, or on TPUs already) is not judged again on UPDATE."""
    queued = deployment().obj()
    on_tpus = _on_tpus(deployment())  # Kueue manages it: its TPUs are in its quota
    assert judge(on_tpus, DEPLOYMENT, stage="validate", operation="UPDATE", old_object=queued).findings == []
    # still outside Kueue after the update: admitted with the warning, judged by nothing
    old = _unqueued_cpu_deployment().obj()
    scaled = _unqueued_cpu_deployment().replicas(30).obj()
    decision = judge(scaled, DEPLOYMENT, stage="validate", operation="UPDATE", old_object=old)
    assert (decision.allowed, decision.findings) == (True, [])
    assert decision.warnings == [OUTSIDE.format(kind="Deployment", name="eval-gateway")]


def test_a_tier_can_judge_unqueued_cpu_workloads_too() -> None:
    """``allowUnqueuedCpuWorkloads: false``: every Job and Deployment there must name a queue."""
    strict = policy_from_mapping(
        {
            "tiers": {
                "production": {
                    "queueNamePattern": "^[a-z0-9]([-a-z0-9]*[a-z0-9])?-queue$",
                    "allowedPriorityClasses": ["guaranteed", "best-effort"],
                    "allowUnqueuedCpuWorkloads": False,
                }
            },
            "namespaceTiers": {"kubemaker": "production"},
        },
        "test",
    )
    decision = judge(_system_deployment(), DEPLOYMENT, strict)
    assert rules(decision) == ["queue-label-missing", "priority-label-missing", "pod-priority-class-forbidden"]
    assert decision.warnings == []
