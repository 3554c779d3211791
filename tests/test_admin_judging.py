"""lint: one decision per input object, the policy's actions and exceptions, and skipped rules said once."""

from __future__ import annotations

from admin_fixtures import cluster_state, lint_objects, result_label, rfc_objects

from webhook.admin.catalog import ADMIN_RULES, policy_from_mapping
from webhook.admin.judging import plan
from webhook.policy.findings import Action


def test_plan_follows_the_mode_and_the_policys_actions() -> None:
    static = {rule.id: action for rule, action in plan(policy_from_mapping({"mode": "static"}))}
    dynamic = {rule.id: action for rule, action in plan(policy_from_mapping({"mode": "dynamic"}))}
    assert "quota-exceeds-flavor-capacity" in static and "quota-exceeds-flavor-capacity" not in dynamic
    assert "cq-slice-check-scope" in dynamic and "cq-slice-check-scope" not in static
    tuned = policy_from_mapping({"rules": {"cq-limit-invalid": "off", "quota-not-pool-multiple": "deny"}})
    actions = {rule.id: action for rule, action in plan(tuned)}
    assert "cq-limit-invalid" not in actions and actions["quota-not-pool-multiple"] is Action.DENY
    assert len(static) + len(dynamic) < 2 * len(ADMIN_RULES)


def test_a_rule_without_its_kinds_is_skipped_once_for_the_run() -> None:
    policy = policy_from_mapping({"mode": "dynamic"})
    judged = lint_objects(rfc_objects("dynamic"), None, policy)
    notes = [
        (result_label(j), w)
        for j in judged
        if j.decision is not None
        for w in j.decision.warnings
        if w.startswith("[quota-exceeds-cluster] skipped")
    ]
    assert notes == [
        (
            "ClusterQueue/team-a",
            "[quota-exceeds-cluster] skipped: for every ClusterQueue, Cohort: no Nodes in the input or "
            "--cluster-state (add `kubectl get nodes -o yaml` or a `tpu-admission snapshot` file)",
        )
    ]
    assert all(j.decision is None or j.decision.allowed for j in judged)


def test_a_part_unknown_to_one_object_is_said_on_that_object() -> None:
    policy = policy_from_mapping({"mode": "dynamic"})
    objects = rfc_objects("dynamic")
    objects.append(
        {
            "apiVersion": "kueue.x-k8s.io/v1beta2",
            "kind": "LocalQueue",
            "metadata": {"name": "team-c-queue", "namespace": "research"},
            "spec": {"clusterQueue": "team-a"},
        }
    )
    judged = {result_label(j): j.decision for j in lint_objects(objects, None, policy)}
    research = judged["LocalQueue/research/team-c-queue"]
    assert research is not None
    assert research.warnings == [
        "[lq-namespace-not-selected] skipped: the labels of namespace 'research' (no Namespace object, "
        "not in the policy's namespaceTiers)"
    ]


def test_exceptions_match_cluster_scoped_objects_by_name() -> None:
    policy = policy_from_mapping(
        {
            "mode": "dynamic",
            "exceptions": [{"rules": ["quota-exceeds-cluster"], "names": ["team-*"], "reason": "the Q3 expansion"}],
        }
    )
    objects = rfc_objects("dynamic")
    judged = {
        result_label(j): j.decision for j in lint_objects(objects, cluster_state("dynamic", {"cubes": 8}), policy)
    }
    team_a, dev = judged["ClusterQueue/team-a"], judged["ClusterQueue/dev"]
    assert team_a is not None and dev is not None
    assert team_a.allowed and team_a.excepted == ["quota-exceeds-cluster"]
    assert team_a.findings[0].action is Action.WARN and team_a.findings[0].excepted == "the Q3 expansion"
    assert any(w.startswith("[quota-exceeds-cluster]") for w in team_a.warnings)
    assert not dev.allowed  # not excepted


def test_the_report_carries_the_tier_a_queue_serves() -> None:
    judged = {result_label(j): j.decision for j in lint_objects(rfc_objects("dynamic"), None, policy_from_mapping({}))}
    assert judged["ClusterQueue/dev"].tier == "dev"  # type: ignore[union-attr]
    assert judged["LocalQueue/kubemaker/team-a-queue"].tier == "production"  # type: ignore[union-attr]
    assert judged["ResourceFlavor/tpu7x"].tier is None  # type: ignore[union-attr]
