"""The cluster-aware rules on batch/v1 Jobs and apps/v1 Deployments (RFC-0033 4.3.1's last table).

The same RFC 4.2/4.6-shaped state as tests/test_rules_cluster.py. A Job is one Workload
gang-admitted over its parallelism pods (one slice); a Deployment is one Workload per
pod, so the queue rules judge one pod, never the whole of ``spec.replicas``.
"""

from __future__ import annotations

from decimal import Decimal
from typing import Any

from cluster_fixtures import OBJECTS, STATE, cluster_findings
from cluster_job_cases import ON_ONE_HOST
from support import delete_path, load_deployment, load_job, set_path

from webhook.cluster.statefiles import state_from_objects
from webhook.cluster.store import ClusterStore
from webhook.engine.decision import AdmissionFacts, Decision, decide
from webhook.kueue.podset import podset_demand
from webhook.objects.kinds import DEPLOYMENT, JOB
from webhook.policy.config import Policy

POLICY = Policy()
CONTAINER = "spec.template.spec.containers[0]"
QUEUE = 'metadata.labels["kueue.x-k8s.io/queue-name"]'
PRIORITY = 'metadata.labels["kueue.x-k8s.io/priority-class"]'
SELECTOR = "spec.template.spec.nodeSelector"


def judge(obj: dict[str, Any], kind: str, stage: str = "mutate") -> Decision:
    facts = AdmissionFacts(namespace=obj["metadata"]["namespace"], stage=stage, kind=kind)  # type: ignore[arg-type]
    return decide(obj, facts, POLICY, STATE)


def job(**changes: Any) -> dict[str, Any]:
    """RFC-shaped static Job: team-a-queue, best-effort, one 4x4x4 slice = 64 chips."""
    obj = load_job("rfc-job-static")
    for path, value in changes.items():
        set_path(obj, path, value)
    return obj


def deployment(**changes: Any) -> dict[str, Any]:
    """RFC-shaped CPU service: team-a-queue, best-effort, 3 replicas of 4 CPU / 16Gi."""
    obj = load_deployment("service-deployment")
    for path, value in changes.items():
        set_path(obj, path, value)
    return obj


def big_job(**changes: Any) -> dict[str, Any]:
    """One 8x8x8 slice (512 chips, 128 hosts): team-a's 8x8x8 flavor has nominal 0 and no pools."""
    return job(
        **{f'{SELECTOR}["cloud.google.com/gke-tpu-topology"]': "8x8x8", "spec.parallelism": 128},
        **{"spec.completions": 128, **changes},
    )


def test_rfc_shaped_job_and_deployment_pass_every_cluster_rule() -> None:
    for obj, kind in ((job(), JOB), (deployment(), DEPLOYMENT)):
        decision = judge(obj, kind)
        assert decision.allowed, decision.deny_message()
        assert (decision.skipped, decision.warnings, cluster_findings(decision)) == ([], [], {})


def test_dev_job_and_deployment_land_in_the_injected_default_queue() -> None:
    dev_job = load_job("dev-job-cpu")  # falcon-jobs has its default LocalQueue
    assert cluster_findings(judge(dev_job, JOB)) == {}
    dev_deployment = load_deployment("dev-deployment")
    dev_deployment["metadata"]["namespace"] = "orphan-dev"  # ... this one has none
    [line] = cluster_findings(judge(dev_deployment, DEPLOYMENT))["local-queue-not-found"]
    assert "no LocalQueue 'default' in namespace 'orphan-dev' (the webhook would inject it" in line


def test_local_queue_not_found() -> None:
    for obj, kind in ((job(**{QUEUE: "team-z-queue"}), JOB), (deployment(**{QUEUE: "team-z-queue"}), DEPLOYMENT)):
        [line] = cluster_findings(judge(obj, kind))["local-queue-not-found"]
        assert line.startswith(f"[local-queue-not-found] {QUEUE}: there is no LocalQueue 'team-z-queue'")


def test_namespace_not_selected() -> None:
    obj = load_deployment("dev-deployment")
    obj["metadata"]["namespace"] = "legacy"  # its default LocalQueue points at production team-a
    [line] = cluster_findings(judge(obj, DEPLOYMENT))["namespace-not-selected"]
    assert "ClusterQueue 'team-a'" in line


def test_resource_not_covered() -> None:
    for obj, kind in ((job(**{QUEUE: "team-c-queue"}), JOB), (deployment(**{QUEUE: "team-c-queue"}), DEPLOYMENT)):
        [line] = cluster_findings(judge(obj, kind))["resource-not-covered"]
        assert line.startswith(f'[resource-not-covered] {CONTAINER}.resources.requests["ephemeral-storage"]')
    covered = deployment(**{QUEUE: "team-c-queue"})
    delete_path(covered, f'{CONTAINER}.resources.requests["ephemeral-storage"]')
    assert "resource-not-covered" not in cluster_findings(judge(covered, DEPLOYMENT))


def test_a_jobs_slice_beyond_what_the_queue_can_hold() -> None:
    found = cluster_findings(judge(big_job(), JOB))
    [line] = found["exceeds-queue-capacity"]
    assert line.startswith("[exceeds-queue-capacity] spec: the job needs 512 google.com/tpu of flavor 'tpu7x-8x8x8'")
    [pools] = found["insufficient-node-pools"]
    assert pools.startswith("[insufficient-node-pools] spec: the job needs 1 slice(s) of topology 8x8x8")
    assert pools.endswith("; select a topology the cluster has node pools of")


def test_a_deployment_is_judged_one_pod_at_a_time() -> None:
    """100 TPU replicas = 400 chips, more than team-a's 384: Kueue still admits pod by pod."""
    obj = deployment(**{"spec.replicas": 100})
    obj["spec"]["template"]["metadata"]["annotations"] = dict(ON_ONE_HOST)
    obj["spec"]["template"]["spec"]["nodeSelector"] = {
        "cloud.google.com/gke-tpu-accelerator": "tpu7x",
        "cloud.google.com/gke-tpu-topology": "4x4x4",
    }
    obj["spec"]["template"]["spec"]["containers"][0]["resources"] = {
        "requests": {"google.com/tpu": "4"},
        "limits": {"google.com/tpu": "4"},
    }
    decision = judge(obj, DEPLOYMENT)
    assert "exceeds-queue-capacity" not in cluster_findings(decision)
    assert decision.allowed, decision.deny_message()


def test_guaranteed_balance() -> None:
    # team-a's 4x4x4 balance: nominal 256 − in use 128 − pending 64 = 64, one slice
    assert cluster_findings(judge(job(**{PRIORITY: "guaranteed"}), JOB)) == {}
    two = job(**{PRIORITY: "guaranteed", "spec.parallelism": 32, "spec.completions": 32})
    [line] = cluster_findings(judge(two, JOB))["guaranteed-balance-exceeded"]
    assert "needs 128 chips of flavor 'tpu7x-4x4x4'" in line and "has 64 guaranteed chips left" in line
    # a job that can never fit the queue at all is exceeds-queue-capacity's, not the balance's
    assert set(cluster_findings(judge(big_job(**{PRIORITY: "guaranteed"}), JOB))) == {
        "exceeds-queue-capacity",
        "insufficient-node-pools",
    }


def test_exceeds_node_capacity() -> None:
    # No selector and no toleration: only the two 31-CPU nodes of the CPU pool are candidates.
    [line] = cluster_findings(judge(deployment(**{f'{CONTAINER}.resources.requests["cpu"]': "40"}), DEPLOYMENT))[
        "exceeds-node-capacity"
    ]
    assert line.startswith("[exceeds-node-capacity] spec.template.spec.containers: one pod of podSet 'main'")
    assert "none of the 2 schedulable nodes" in line
    [line] = cluster_findings(judge(job(**{f'{CONTAINER}.resources.requests["cpu"]': "300"}), JOB))[
        "exceeds-node-capacity"
    ]
    assert "cpu 300" in line


def test_a_jobs_own_tolerations_count_for_node_fit() -> None:
    """A CPU Job that tolerates the TPU taint may use the 208-CPU TPU hosts."""
    obj = load_job("dev-job-cpu")
    set_path(obj, f'{CONTAINER}.resources.requests["cpu"]', "100")
    assert "exceeds-node-capacity" in cluster_findings(judge(obj, JOB))
    set_path(obj, "spec.template.spec.tolerations", [{"key": "google.com/tpu", "operator": "Exists"}])
    assert "exceeds-node-capacity" not in cluster_findings(judge(obj, JOB))


def test_cluster_rules_run_on_the_validating_path_for_jobs() -> None:
    assert "local-queue-not-found" in cluster_findings(judge(job(**{QUEUE: "team-z-queue"}), JOB, "validate"))


# ---------------------------------------------------------------- replicas-beyond-nominal


def pod_flavor(state: ClusterStore, queue: str, selector: dict[str, str], tpu: bool) -> str | None:
    """The flavor one pod takes (the quota model's flavor assignment for a podSet of one pod)."""
    requests = {"google.com/tpu": Decimal(4)} if tpu else {"cpu": Decimal(1)}
    demand = podset_demand("main", {"nodeSelector": selector}, 1, requests, tas=tpu)
    [assigned] = state.snapshot().assign(queue, [demand]).podsets
    return next(iter(assigned.flavors.values())) if assigned.status == "fit" else None


def test_the_flavor_one_pod_takes() -> None:
    assert pod_flavor(STATE, "team-a", {}, tpu=False) == "cpu-standard"  # TPU flavors are TAS-only: passed over
    assert pod_flavor(STATE, "team-a", {"cloud.google.com/gke-nodepool": "cpu-pool"}, tpu=False) == "cpu-standard"
    selector = {"cloud.google.com/gke-tpu-accelerator": "tpu7x", "cloud.google.com/gke-tpu-topology": "4x4x8"}
    assert pod_flavor(STATE, "team-a", selector, tpu=True) == "tpu7x-4x4x8"
    assert pod_flavor(STATE, "team-z", {}, tpu=False) is None
    without_flavors = state_from_objects([o for o in OBJECTS if o["kind"] != "ResourceFlavor"], POLICY)
    assert pod_flavor(without_flavors, "team-a", {}, tpu=False) is None  # unknown, not "none fits"


def test_replicas_within_nominal_pass() -> None:
    decision = judge(deployment(**{"spec.replicas": 400}), DEPLOYMENT)  # 1600 CPU, 6400Gi, 4000Gi: all nominal
    assert cluster_findings(decision) == {} and decision.warnings == []


def test_replicas_beyond_nominal_is_a_warning() -> None:
    decision = judge(deployment(**{"spec.replicas": 600}), DEPLOYMENT)
    assert decision.allowed and [f.rule for f in decision.findings] == ["replicas-beyond-nominal"]
    assert decision.warnings == [
        "[replicas-beyond-nominal] spec.replicas: 600 replicas need more than ClusterQueue 'team-a' has as nominal "
        "quota on flavor 'cpu-standard' (cpu 2400 over nominal 2000, ephemeral-storage 6000Gi over nominal 4000Gi, "
        "memory 9600Gi over nominal 8000Gi), and Kueue admits each pod on its own: the replicas beyond it run on "
        "borrowed quota, which guaranteed jobs reclaim by evicting them; run at most 400 replicas to stay within "
        "the nominal quota, or ask the admins for more nominal quota on 'cpu-standard'"
    ]


def test_replicas_beyond_nominal_for_tpu_pods() -> None:
    obj = deployment(**{"spec.replicas": 100})  # 400 chips on tpu7x-4x4x4, nominal 256
    obj["spec"]["template"]["metadata"]["annotations"] = dict(ON_ONE_HOST)
    obj["spec"]["template"]["spec"]["nodeSelector"] = {
        "cloud.google.com/gke-tpu-accelerator": "tpu7x",
        "cloud.google.com/gke-tpu-topology": "4x4x4",
    }
    obj["spec"]["template"]["spec"]["containers"][0]["resources"] = {"limits": {"google.com/tpu": "4"}}
    [line] = cluster_findings(judge(obj, DEPLOYMENT))["replicas-beyond-nominal"]
    assert "flavor 'tpu7x-4x4x4' (google.com/tpu 400 over nominal 256)" in line and "at most 64 replicas" in line


def test_replicas_beyond_nominal_only_for_production_deployments() -> None:
    dev = load_deployment("dev-deployment")
    set_path(dev, "spec.replicas", 1000)  # 1000 CPU in the dev queue's 500: dev shares one queue
    assert cluster_findings(judge(dev, DEPLOYMENT)) == {}
    many = job(**{"spec.parallelism": 16})
    assert "replicas-beyond-nominal" not in cluster_findings(judge(many, JOB))


def test_replicas_beyond_nominal_is_skipped_while_flavors_are_unknown() -> None:
    state = state_from_objects([o for o in OBJECTS if o["kind"] != "ResourceFlavor"], POLICY)
    facts = AdmissionFacts(namespace="kubemaker", kind=DEPLOYMENT)
    decision = decide(deployment(**{"spec.replicas": 600}), facts, POLICY, state)
    assert "replicas-beyond-nominal" in decision.skipped and decision.allowed
