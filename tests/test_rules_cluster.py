"""The cluster-aware rules against RFC-0033 4.2/4.6-shaped state (tests/fixtures/cluster).

Each rule has a passing and a failing case; the state is the file snapshot, so the
same fixtures drive ``check --cluster-state`` (tests/test_cli_cluster_state.py) and, loaded
into the test API server, the watch cache (tests/test_cluster_watch.py).
"""

from __future__ import annotations

import copy
from decimal import Decimal
from typing import Any

import pytest
from builders import JobSetBuilder, jobset
from cluster_fixtures import OBJECTS, STATE, cluster_findings
from support import JOBSET_CLUSTER_RULES, POD, load_jobset

from webhook.cluster import kinds as k
from webhook.cluster.statefiles import state_from_objects
from webhook.cluster.store import ClusterStore
from webhook.engine.decision import AdmissionFacts, Decision, decide
from webhook.kube.scheduling import Toleration, selector_matches
from webhook.policy.config import Policy

CLUSTER_RULES = JOBSET_CLUSTER_RULES
POLICY = Policy()
CONTAINER = f"{POD}.spec.containers[0]"
TIER = "scheduling.antgroup.com/kueue-tier"


def judge(obj: dict[str, Any], state: ClusterStore = STATE, stage: str = "mutate") -> Decision:
    namespace = obj["metadata"]["namespace"]
    facts = AdmissionFacts(namespace=namespace, stage=stage)  # type: ignore[arg-type]
    return decide(obj, facts, POLICY, state)


def dev_job(namespace: str) -> dict[str, Any]:
    obj = jobset().obj()
    obj["metadata"]["namespace"] = namespace
    del obj["metadata"]["labels"]
    return obj


def test_the_rfc_job_passes_every_cluster_rule() -> None:
    decision = judge(jobset().obj())
    assert decision.allowed, decision.deny_message()
    assert decision.skipped == [] and decision.warnings == []
    assert cluster_findings(decision) == {}


def test_the_snapshot_reads_rfc_numbers() -> None:
    view = STATE.snapshot()
    capacity = view.potential("team-a", "tpu7x-4x4x4", "google.com/tpu")
    assert capacity.value == 384
    assert capacity.explanation == "nominal 256 + borrowing limit 128 (cohort tpu-pool could lend 320)"
    assert view.potential("dev", "tpu7x-4x4x4", "google.com/tpu").value == 64 + 256
    balance = view.balance("team-a", "tpu7x-4x4x4")
    assert (balance.nominal, balance.holding, balance.waiting, balance.left) == (256, 128, 64, 64)
    assert view.in_use("team-a", "tpu7x-4x4x4") == 128 + 64  # every priority: the best-effort job too
    assert view.static_topologies() == {"4x4x4", "4x4x8", "4x8x8"}
    assert view.node_pools("4x4x4") == 2 and view.node_pools("8x8x8") == 0


# ---------------------------------------------------------------- one case each way


def test_local_queue_not_found() -> None:
    found = cluster_findings(judge(jobset().queue("team-z-queue").obj()))
    [line] = found["local-queue-not-found"]
    assert "no LocalQueue 'team-z-queue' in namespace 'kubemaker'" in line
    assert "inject" not in line  # the user wrote this queue
    assert "team-a-queue, team-b-queue, team-c-queue" in line


def test_local_queue_not_found_for_the_injected_dev_default() -> None:
    decision = judge(dev_job("orphan-dev"))
    assert decision.tier == "dev"  # learned from the namespace's labels in the snapshot
    [line] = cluster_findings(decision)["local-queue-not-found"]
    assert "no LocalQueue 'default' in namespace 'orphan-dev'" in line and "inject" in line
    assert not decision.allowed


def test_dev_default_queue_exists_in_falcon_jobs() -> None:
    decision = judge(dev_job("falcon-jobs"))
    assert cluster_findings(decision) == {}
    assert decision.allowed, decision.deny_message()


def test_namespace_not_selected() -> None:
    decision = judge(dev_job("legacy"))  # its default LocalQueue points at production team-a
    [line] = cluster_findings(decision)["namespace-not-selected"]
    assert "ClusterQueue 'team-a'" in line
    assert "scheduling.antgroup.com/kueue-tier=production" in line
    assert "scheduling.antgroup.com/kueue-tier=dev" in line


def test_a_null_namespace_selector_matches_nothing() -> None:
    assert not selector_matches(None, {"a": "b"})
    assert selector_matches({}, {"a": "b"})
    expressions = {"matchExpressions": [{"key": "tier", "operator": "In", "values": ["dev"]}]}
    assert selector_matches(expressions, {"tier": "dev"})
    assert not selector_matches(expressions, {"tier": "production"})


def test_resource_not_covered() -> None:
    decision = judge(jobset().queue("team-c-queue").obj())
    [line] = cluster_findings(decision)["resource-not-covered"]
    assert line.startswith(f'[resource-not-covered] {CONTAINER}.resources.requests["ephemeral-storage"]')
    assert "resource ephemeral-storage unavailable in ClusterQueue" in line


def test_resource_not_covered_in_a_cpu_head() -> None:
    """RFC 4.2: every requested resource must be covered, in a CPU-only podSet too."""
    obj = jobset().queue("team-c-queue").obj()
    obj = JobSetBuilder(obj).request("ephemeral-storage", None).obj()
    head = copy.deepcopy(obj["spec"]["replicatedJobs"][0])
    head["name"], head["replicas"] = "coordinator", 1
    head_pod = head["template"]["spec"]["template"]
    head["template"]["spec"]["parallelism"] = head["template"]["spec"]["completions"] = 1
    head_pod["metadata"] = {}
    head_pod["spec"] = {
        "containers": [
            {
                "name": "head",
                "image": "python:3.12",
                "resources": {"requests": {"cpu": "4", "ephemeral-storage": "10Gi"}},
            }
        ]
    }
    obj["spec"]["replicatedJobs"].append(head)
    [line] = cluster_findings(judge(obj))["resource-not-covered"]
    assert line.startswith("[resource-not-covered] spec.replicatedJobs[1].template.spec.template.spec.containers[0]")
    assert "podSet 'coordinator' requests ephemeral-storage" in line


def test_namespace_labels_given_on_the_command_line_beat_the_cache() -> None:
    """With --namespace-labels, the namespace's labels come from the flag."""
    obj = dev_job("legacy")  # its labels in the cache say dev; team-a selects production
    obj = JobSetBuilder(obj).queue("default").priority("best-effort").obj()
    facts = AdmissionFacts(namespace="legacy", stage="mutate", namespace_labels={TIER: "production"})
    decision = decide(obj, facts, POLICY, STATE)
    assert decision.tier == "production"
    assert "namespace-not-selected" not in cluster_findings(decision)
    facts = AdmissionFacts(namespace="legacy", stage="mutate", namespace_labels={TIER: "dev"})
    assert "namespace-not-selected" in cluster_findings(decide(dev_job("legacy"), facts, POLICY, STATE))


def test_resource_covered_passes() -> None:
    obj = jobset().queue("team-c-queue").obj()
    obj = JobSetBuilder(obj).request("ephemeral-storage", None).obj()
    assert "resource-not-covered" not in cluster_findings(judge(obj))


def test_exceeds_queue_capacity_with_a_borrowing_limit() -> None:
    obj = jobset().replicas(8).obj()  # 8 × 64 = 512 > 256 + 128
    [line] = cluster_findings(judge(obj))["exceeds-queue-capacity"]
    assert "needs 512 google.com/tpu of flavor 'tpu7x-4x4x4'" in line
    assert "never hold more than 384 (nominal 256 + borrowing limit 128" in line


def test_exceeds_queue_capacity_without_a_cohort() -> None:
    obj = jobset().queue("team-c-queue").obj()
    [line] = cluster_findings(judge(obj))["exceeds-queue-capacity"]
    assert "never hold more than 64 (nominal 64, no cohort to borrow from)" in line


def test_within_queue_capacity_passes() -> None:
    obj = jobset().replicas(6).obj()  # 384 = the most team-a can hold
    assert "exceeds-queue-capacity" not in cluster_findings(judge(obj))


def test_no_borrowing_limit_means_what_the_cohort_can_lend() -> None:
    objects = copy.deepcopy(OBJECTS)
    for obj in objects:
        if obj["kind"] == "ClusterQueue" and obj["metadata"]["name"] == "dev":
            del obj["spec"]["resourceGroups"][0]["flavors"][0]["resources"][0]["borrowingLimit"]
    capacity = state_from_objects(objects, POLICY).snapshot().potential("dev", "tpu7x-4x4x4", "google.com/tpu")
    assert capacity.value == 64 + 256 + 256  # team-a and team-b lend all of their nominal
    assert "no borrowing limit" in capacity.explanation


def test_guaranteed_balance_exceeded() -> None:
    obj = jobset().priority("guaranteed").obj()
    [line] = cluster_findings(judge(obj))["guaranteed-balance-exceeded"]
    assert "needs 128 chips of flavor 'tpu7x-4x4x4'" in line
    assert "64 guaranteed chips left: nominal 256 − in use 128 − pending 64" in line


def test_guaranteed_within_balance_passes() -> None:
    obj = jobset().priority("guaranteed").obj()
    obj = JobSetBuilder(obj).replicas(1).obj()
    decision = judge(obj)
    assert cluster_findings(decision) == {}
    assert decision.allowed, decision.deny_message()


def test_best_effort_has_no_balance_to_exceed() -> None:
    obj = jobset().replicas(6).obj()
    assert "guaranteed-balance-exceeded" not in cluster_findings(judge(obj))


def test_exceeds_node_capacity() -> None:
    obj = jobset().request("cpu", "300").obj()
    [line] = cluster_findings(judge(obj))["exceeds-node-capacity"]
    # the cordoned node with 416 CPUs does not count
    assert "cpu 300" in line and "none of the 4 schedulable nodes" in line and "short of cpu" in line


HUGE = ["1e400", "1e999999", "1" + "0" * 1000, 1e400, 10**400, "1e2147483647", "9" * 5000 + "Ei"]


@pytest.mark.parametrize("value", HUGE, ids=lambda value: repr(value)[:16])
@pytest.mark.parametrize("resource", ["ephemeral-storage", "cpu", "memory", "google.com/tpu", "example.com/widget"])
def test_a_quantity_beyond_any_node_is_refused_by_the_rule_it_breaks(value: Any, resource: str) -> None:
    """A valid quantity (the JobSet CRD's pattern accepts all of these) too large for any
    node is still a number: no 500, no traceback, but the rules it breaks."""
    obj = jobset().request(resource, value).obj()
    decision = judge(obj)
    assert not decision.allowed
    found = cluster_findings(decision)
    if resource in ("ephemeral-storage", "cpu", "memory", "google.com/tpu"):  # what one node must hold
        [line] = found["exceeds-node-capacity"]
        # held at 10^31, or (a binary suffix) capped at 2^63 - 1 as the API server caps it
        assert f"{resource} 1e31 or more" in line or (isinstance(value, str) and value.endswith("Ei"))
    else:
        assert "resource-not-covered" in found


def test_the_arithmetic_is_exact_at_a_bound_of_thirty_digits() -> None:
    """10^28 + 1 bytes on a node of 10^28: Python's default context (28 digits) calls them
    equal; the quantities' own context does not, in the parse and in the sums."""
    nodes = copy.deepcopy(OBJECTS)
    for obj in nodes:
        if obj["kind"] == "NodeList" or obj["kind"] == "List":
            for item in obj.get("items", []):
                if item.get("kind") == "Node":
                    item["status"]["allocatable"]["ephemeral-storage"] = "1e28"
        elif obj["kind"] == "Node":
            obj["status"]["allocatable"]["ephemeral-storage"] = "1e28"
    state = state_from_objects(nodes, POLICY)
    over = jobset().request("ephemeral-storage", "10000000000000000000000000001").obj()
    assert "exceeds-node-capacity" in cluster_findings(judge(over, state))
    at = jobset().request("ephemeral-storage", "1e28").obj()
    assert "exceeds-node-capacity" not in cluster_findings(judge(at, state))


def test_fits_on_one_node() -> None:
    obj = jobset().request("cpu", "200").request("memory", "700Gi").obj()
    assert "exceeds-node-capacity" not in cluster_findings(judge(obj))


def test_init_containers_count_at_their_largest() -> None:
    obj = (
        jobset()
        .init_containers([{"name": "stage-data", "image": "busybox", "resources": {"requests": {"memory": "800Gi"}}}])
        .obj()
    )
    [line] = cluster_findings(judge(obj))["exceeds-node-capacity"]
    assert "memory 800Gi" in line and "short of memory" in line


def test_a_sidecar_adds_to_the_pod_on_its_node() -> None:
    """A restartable init container runs beside the main container: 700Gi + 100Gi > 720Gi."""
    obj = jobset().request("memory", "700Gi").obj()
    sidecar = {
        "name": "proxy",
        "image": "envoy",
        "restartPolicy": "Always",
        "resources": {"requests": {"memory": "100Gi"}},
    }
    JobSetBuilder(obj).init_containers([sidecar])
    [line] = cluster_findings(judge(obj))["exceeds-node-capacity"]
    assert "memory 800Gi" in line
    del sidecar["restartPolicy"]  # a plain init container runs alone: 700Gi at most
    assert "exceeds-node-capacity" not in cluster_findings(judge(obj))


def test_node_fit_is_a_conjunction_per_node() -> None:
    """DD-0018: CPU fits one node and memory another, but no node holds both."""
    store = ClusterStore(POLICY)
    for name, cpu, memory in (("cpu-heavy", "100", "10Gi"), ("memory-heavy", "10", "100Gi")):
        node = {
            "metadata": {"name": name, "labels": {"pool": "p"}},
            "status": {"allocatable": {"cpu": cpu, "memory": memory}},
        }
        store.apply(k.NODES, "ADDED", node)
    requests = {"cpu": Decimal(50), "memory": Decimal(50 * 2**30)}
    view = store.snapshot()
    fit = view.node_fit({"pool": "p"}, requests)
    assert (fit.matching, fit.fits) == (2, False)
    assert view.node_fit({"pool": "p"}, {"cpu": Decimal(50)}).fits
    assert view.node_fit({"pool": "other"}, requests).matching == 0  # unknown, not "too small"


def test_taints_not_tolerated_exclude_a_node() -> None:
    store = ClusterStore(POLICY)
    node = {
        "metadata": {"name": "n", "labels": {}},
        "status": {"allocatable": {"cpu": "8"}},
        "spec": {"taints": [{"key": "dedicated", "value": "infra", "effect": "NoSchedule"}]},
    }
    store.apply(k.NODES, "ADDED", node)
    view = store.snapshot()
    assert view.node_fit({}, {"cpu": Decimal(1)}).matching == 0
    tolerations = [Toleration("dedicated", "Equal", "infra", "NoSchedule")]
    assert view.node_fit({}, {"cpu": Decimal(1)}, tolerations).fits


def test_insufficient_node_pools() -> None:
    obj = jobset().replicas(3).obj()
    [line] = cluster_findings(judge(obj))["insufficient-node-pools"]
    assert line.startswith("[insufficient-node-pools] spec.replicatedJobs[0].replicas:")
    assert "needs 3 slice(s) of topology 4x4x4" in line and "has 2 4x4x4 node pool(s)" in line


def test_enough_node_pools_pass() -> None:
    single = load_jobset("rfc-4.6-static-single")  # one 4x8x8 slice, one 4x8x8 pool
    assert "insufficient-node-pools" not in cluster_findings(judge(single))


def test_cluster_rules_also_run_on_the_validating_path() -> None:
    obj = jobset().queue("team-z-queue").obj()
    assert "local-queue-not-found" in cluster_findings(judge(obj, stage="validate"))


# ---------------------------------------------------------------- unknown is not zero


def test_a_kind_missing_from_the_snapshot_skips_its_rules_with_warnings() -> None:
    state = state_from_objects([o for o in OBJECTS if o["kind"] != "Node"], POLICY)
    obj = jobset().replicas(3).request("cpu", "300").obj()
    decision = judge(obj, state)
    assert set(decision.skipped) == {"exceeds-node-capacity", "insufficient-node-pools"}
    warnings = [w for w in decision.warnings if "skipped" in w]
    assert len(warnings) == 2
    assert all("Nodes: no objects of this kind in the --cluster-state input" in w for w in warnings)
    assert "exceeds-node-capacity" not in cluster_findings(decision)
    assert decision.allowed  # nothing else is wrong, and unknown is not a reason to deny


def test_structural_rules_keep_enforcing_while_cluster_rules_are_skipped() -> None:
    state = state_from_objects([], POLICY)
    obj = jobset().node_selector("cloud.google.com/gke-tpu-topology", None).obj()
    decision = judge(obj, state)
    assert not decision.allowed
    assert "static-topology-selector-missing" in {f.rule for f in decision.violations}
    assert set(decision.skipped) == CLUSTER_RULES


@pytest.mark.parametrize(("namespace", "tier"), [("orphan-dev", "dev"), ("kube-system", None)])
def test_the_tier_comes_from_the_namespace_labels(namespace: str, tier: str | None) -> None:
    decision = judge(dev_job(namespace))
    assert decision.tier == tier
    if tier is None:
        assert decision.warnings == []  # known labels without a tier: unmanaged, no warning


def usage(store: ClusterStore) -> tuple[int, int]:
    balance = store.snapshot().balance("team-a", "tpu7x-4x4x4")
    return balance.holding, balance.waiting


def test_ledger_moves_with_each_event() -> None:
    store = state_from_objects(OBJECTS, POLICY)
    [pending] = [o for o in OBJECTS if o["metadata"]["name"].startswith("jobset-a-pending")]
    [running] = [o for o in OBJECTS if o["metadata"]["name"].startswith("jobset-a-running-guaranteed")]
    assert usage(store) == (128, 64)
    admitted = copy.deepcopy(running)
    admitted["metadata"]["name"] = pending["metadata"]["name"]
    admitted["status"]["admission"]["podSetAssignments"][0]["resourceUsage"]["google.com/tpu"] = "64"
    store.apply(k.WORKLOADS, "MODIFIED", admitted)  # the pending one is admitted
    assert usage(store) == (192, 0)
    finished = copy.deepcopy(running)
    finished["status"]["conditions"].append({"type": "Finished", "status": "True"})
    store.apply(k.WORKLOADS, "MODIFIED", finished)
    assert usage(store) == (64, 0)
    store.apply(k.WORKLOADS, "DELETED", admitted)
    assert usage(store) == (0, 0)


def test_status_only_updates_keep_the_memos() -> None:
    """Node heartbeats and Kueue's ClusterQueue usage writes leave the snapshot, and the answers memoized on it."""
    store = ClusterStore(POLICY)
    node = {
        "metadata": {"name": "n1", "labels": {"pool": "p"}},
        "status": {"allocatable": {"cpu": "8"}, "conditions": [{"type": "Ready", "status": "True"}]},
    }
    store.apply(k.NODES, "ADDED", node)
    queue = {"metadata": {"name": "team-a"}, "spec": {"cohortName": "tpu-pool"}, "status": {"pendingWorkloads": 0}}
    store.apply(k.CLUSTER_QUEUES, "ADDED", queue)
    before = store.snapshot()

    heartbeat = {**node, "status": {**node["status"], "conditions": [{"type": "Ready", "status": "Unknown"}]}}
    store.apply(k.NODES, "MODIFIED", heartbeat)
    store.apply(k.CLUSTER_QUEUES, "MODIFIED", {**queue, "status": {"pendingWorkloads": 7}})
    assert store.snapshot() is before

    relabelled = {**node, "metadata": {"name": "n1", "labels": {"pool": "q"}}}
    store.apply(k.NODES, "MODIFIED", relabelled)
    store.apply(k.CLUSTER_QUEUES, "MODIFIED", {**queue, "spec": {"cohortName": "other"}})
    after = store.snapshot()
    assert after is not before and after.version > before.version
    assert after.nodes is not before.nodes and after.queues is not before.queues
    assert after.node_fit({"pool": "q"}, {"cpu": Decimal(1)}).fits
    assert after.node_fit({"pool": "p"}, {"cpu": Decimal(1)}).matching == 0
