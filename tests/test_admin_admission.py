"""The admin guard on the webhook: one Kueue object judged against the watch cache."""

from __future__ import annotations

import copy
import re
import time
from typing import Any

import pytest
from admin_fixtures import CASES, AdminCase, cluster_state, label, lint_objects, result_label, rfc_objects
from fuzzing import mutate_subtrees
from hypothesis import given, settings
from hypothesis import strategies as st
from kueue_cache import cache_of

from webhook.admin.admission import KueueRequest, decide_kueue, served_plan
from webhook.admin.catalog import KUEUE_REFUSES, policy_from_mapping
from webhook.admin.judging import ALREADY
from webhook.cluster import kinds as k
from webhook.cluster.store import ClusterStore
from webhook.engine.decision import Decision
from webhook.policy.config import Policy

NOMINAL = "spec.resourceGroups[0].flavors[0].resources[0].nominalQuota"


def policy(mode: str = "dynamic") -> Policy:
    return policy_from_mapping({"mode": mode})


def find(objects: list[dict[str, Any]], key: str) -> dict[str, Any]:
    return next(o for o in objects if label(o) == key)


def set_nominal(obj: dict[str, Any], chips: int) -> dict[str, Any]:
    changed = copy.deepcopy(obj)
    changed["spec"]["resourceGroups"][0]["flavors"][0]["resources"][0]["nominalQuota"] = chips
    return changed


def ask(
    obj: dict[str, Any],
    cluster: ClusterStore | None,
    rules: Policy,
    operation: str = "CREATE",
    old: dict[str, Any] | None = None,
) -> Decision:
    namespace = str((obj.get("metadata") or {}).get("namespace") or "")
    return decide_kueue(KueueRequest(operation, namespace, obj, old), rules, cluster)


def lines(decision: Decision) -> list[tuple[str, str, str, str]]:
    return [(f.rule, str(f.path), f.message, f.action.value) for f in decision.findings]


def without_file_lines(found: list[tuple[str, str, str, str]]) -> list[tuple[str, str, str, str]]:
    """A YAML error's line: of the file in ``lint-queues``, of the ConfigMap's key on the
    webhook (which has no file). Different on purpose; the rest of the message is the same."""
    return [
        (rule, path, re.sub(r" \(line \d+ of [^)]+\)", "", message), action) for rule, path, message, action in found
    ]


def rfc_cache(mode: str = "dynamic", objects: list[dict[str, Any]] | None = None, **nodes: Any) -> ClusterStore:
    rules = policy(mode)
    state = cluster_state(mode, nodes or None)
    return cache_of([*(objects or rfc_objects(mode)), *state], rules)


# ---------------------------------------------------------------- the same answers as lint-queues


@pytest.mark.parametrize("case", CASES, ids=lambda c: c.id)
def test_every_example_answers_on_the_webhook_as_lint_queues_does(case: AdminCase) -> None:
    """Each object of each example, sent alone against a cache holding the rest, gets
    ``lint-queues``' findings on it, less the rules Kueue's own webhook refuses."""
    rules = case.policy()
    inputs = case.inputs()
    state = case.cluster() or []
    cluster = cache_of([*inputs, *state], rules)
    expected: dict[str, list[tuple[str, str, str, str]]] = {}
    for judged in lint_objects(inputs, case.cluster(), rules):
        if judged.decision is not None:
            found = [f for f in judged.decision.findings if f.rule not in KUEUE_REFUSES]
            expected[result_label(judged)] = without_file_lines(lines(Decision(findings=found)))
    answered = {}
    for obj in inputs:
        key = label(obj)
        if key in expected:
            answered[key] = without_file_lines(lines(ask(obj, cluster, rules)))
    assert answered == expected


@pytest.mark.parametrize("mode", ["dynamic", "static"])
def test_the_rfcs_objects_are_admitted_one_by_one(mode: str) -> None:
    cluster = rfc_cache(mode)
    answers = {label(obj): ask(obj, cluster, policy(mode)) for obj in rfc_objects(mode)}
    assert {key: (d.allowed, d.findings, d.warnings) for key, d in answers.items()} == {
        key: (True, [], []) for key in answers
    }


# ---------------------------------------------------------------- edits against the cluster


def test_an_edit_raising_one_teams_nominal_past_the_cluster_is_refused() -> None:
    cluster = rfc_cache()
    team_a = find(rfc_objects("dynamic"), "ClusterQueue/team-a")
    decision = ask(set_nominal(team_a, 320), cluster, policy(), "UPDATE", team_a)
    assert decision.allowed is False
    assert [(rule, path) for rule, path, _, _ in lines(decision)] == [("quota-exceeds-cluster", NOMINAL)]
    assert "640 chips (team-a 320, team-b 256, dev 64)" in decision.deny_message()
    assert "> 576 chips on 144 nodes" in decision.deny_message()


def test_the_same_edit_on_a_bigger_cluster_is_admitted() -> None:
    cluster = rfc_cache(cubes=10)
    team_a = find(rfc_objects("dynamic"), "ClusterQueue/team-a")
    decision = ask(set_nominal(team_a, 320), cluster, policy(), "UPDATE", team_a)
    assert (decision.allowed, decision.findings) == (True, [])


def test_an_update_is_not_refused_for_what_was_already_so() -> None:
    """A cube is gone (512 chips for 576 of nominal): every ClusterQueue is already over.
    Cutting team A's quota must stay possible, though the sum is still over after it."""
    cluster = rfc_cache(cubes=8)
    team_a = find(rfc_objects("dynamic"), "ClusterQueue/team-a")
    decision = ask(set_nominal(team_a, 224), cluster, policy(), "UPDATE", team_a)
    assert decision.allowed is True
    assert [(rule, action) for rule, _, _, action in lines(decision)] == [("quota-exceeds-cluster", "warn")]
    assert decision.warnings == [decision.findings[0].line(), ALREADY.format(rule="quota-exceeds-cluster")]


def test_a_create_in_an_overfull_cluster_is_refused() -> None:
    """Only an UPDATE has an old object to compare with: a new ClusterQueue adds to the sum."""
    cluster = rfc_cache(cubes=8)
    team_a = find(rfc_objects("dynamic"), "ClusterQueue/team-a")
    decision = ask(team_a, cluster, policy(), "CREATE")
    assert decision.allowed is False
    assert [rule for rule, _, _, _ in lines(decision)] == ["quota-exceeds-cluster"]


def test_an_update_that_breaks_another_rule_is_still_refused() -> None:
    cluster = rfc_cache(cubes=8)
    team_a = find(rfc_objects("dynamic"), "ClusterQueue/team-a")
    edited = copy.deepcopy(team_a)
    edited["spec"]["namespaceSelector"] = None
    decision = ask(edited, cluster, policy(), "UPDATE", team_a)
    assert decision.allowed is False
    assert {(rule, action) for rule, _, _, action in lines(decision)} == {
        ("cq-namespace-selector-missing", "deny"),
        ("quota-exceeds-cluster", "warn"),
    }


# ---------------------------------------------------------------- what is served, what is not


def test_rules_kueue_refuses_itself_are_not_served() -> None:
    assert KUEUE_REFUSES
    assert {rule.id for rule, _ in served_plan(policy())} & KUEUE_REFUSES == set()
    cluster = rfc_cache()
    team_a = find(rfc_objects("dynamic"), "ClusterQueue/team-a")
    negative = copy.deepcopy(team_a)
    negative["spec"]["resourceGroups"][0]["flavors"][0]["resources"][0]["borrowingLimit"] = -1
    refused_offline = [
        f.rule for j in lint_objects([negative], None, policy()) if j.decision for f in j.decision.findings
    ]
    assert refused_offline.count("cq-limit-invalid") == 1
    assert [rule for rule, _, _, _ in lines(ask(negative, cluster, policy()))] == []


@pytest.mark.parametrize("operation", ["DELETE", "CONNECT"])
def test_a_delete_is_allowed_unjudged(operation: str) -> None:
    team_a = find(rfc_objects("dynamic"), "ClusterQueue/team-a")
    assert ask(set_nominal(team_a, 100_000), rfc_cache(), policy(), operation) == Decision()


@pytest.mark.parametrize(
    "obj",
    [
        {"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": "other", "namespace": "kueue-system"}},
        {"apiVersion": "v1", "kind": "Node", "metadata": {"name": "gke-node"}},
        {"apiVersion": "batch/v1", "kind": "Job", "metadata": {"name": "j", "namespace": "default"}},
        "not an object",
    ],
    ids=["another-configmap", "a-node", "a-job", "a-string"],
)
def test_what_the_guard_does_not_judge_is_allowed(obj: Any) -> None:
    assert decide_kueue(KueueRequest("CREATE", "kueue-system", obj), policy(), rfc_cache()) == Decision()


def test_the_requests_namespace_names_a_namespaced_object() -> None:
    """A CREATE may leave ``metadata.namespace`` out: the API server's ``request.namespace`` is where it goes."""
    cluster = rfc_cache()
    queue = copy.deepcopy(find(rfc_objects("dynamic"), "LocalQueue/kubemaker/team-a-queue"))
    del queue["metadata"]["namespace"]
    queue["spec"]["clusterQueue"] = "team-b"
    decision = decide_kueue(KueueRequest("CREATE", "kubemaker", queue), policy(), cluster)
    assert [rule for rule, _, _, _ in lines(decision)] == ["lq-name-convention"]


# ---------------------------------------------------------------- unknown is not zero


def test_without_a_cluster_cross_object_rules_are_skipped_with_the_reason() -> None:
    team_a = find(rfc_objects("dynamic"), "ClusterQueue/team-a")
    decision = ask(set_nominal(team_a, 100_000), None, policy())
    assert decision.allowed is True
    assert "quota-exceeds-cluster" in decision.skipped
    assert any(
        w.startswith("[quota-exceeds-cluster] skipped:") and "runs without a cluster" in w for w in decision.warnings
    )


def test_a_kind_the_watch_cannot_read_is_named_with_the_watchs_reason() -> None:
    rules = policy()
    store = cache_of([*rfc_objects("dynamic"), *cluster_state("dynamic")], rules)
    store.availability.mark_absent(k.NODES.name, "forbidden (403): check its RBAC")
    team_a = find(rfc_objects("dynamic"), "ClusterQueue/team-a")
    decision = ask(set_nominal(team_a, 100_000), store, rules)
    assert "quota-exceeds-cluster" in decision.skipped
    note = next(w for w in decision.warnings if w.startswith("[quota-exceeds-cluster] skipped:"))
    assert "Nodes unknown: the webhook's cache cannot say (Nodes: forbidden (403): check its RBAC)" in note


def test_an_empty_kind_is_a_known_zero() -> None:
    """No Nodes at all (a synced, empty list): 576 chips of nominal over 0 chips is refused, not skipped."""
    rules = policy()
    store = cache_of([*rfc_objects("dynamic"), {"apiVersion": "v1", "kind": "NodeList", "items": []}], rules)
    team_a = find(rfc_objects("dynamic"), "ClusterQueue/team-a")
    decision = ask(team_a, store, rules)
    assert "quota-exceeds-cluster" not in decision.skipped
    assert "quota-exceeds-cluster" in [rule for rule, _, _, _ in lines(decision)]


# ---------------------------------------------------------------- limits


def test_many_findings_are_bounded() -> None:
    rules = policy_from_mapping({"mode": "dynamic", "limits": {"maxFindings": 2}})
    cluster = rfc_cache()
    team_a = find(rfc_objects("dynamic"), "ClusterQueue/team-a")
    broken = copy.deepcopy(team_a)
    broken["spec"]["resourceGroups"] = [
        {"coveredResources": ["google.com/tpu"], "flavors": [{"name": f"missing-{n}", "resources": []}]}
        for n in range(6)
    ]
    decision = ask(broken, cluster, rules)
    assert decision.allowed is False
    assert len(decision.violations) == 2
    assert decision.omitted > 0
    assert decision.deny_message().endswith(f"... and {decision.omitted} more")


# ---------------------------------------------------------------- anything the API server may send

_FUZZ_CACHE = rfc_cache()
_FUZZ_OBJECTS = rfc_objects("dynamic")


@st.composite
def mangled_kueue_objects(draw: st.DrawFn) -> tuple[dict[str, Any], dict[str, Any]]:
    """One of the RFC's objects, and a copy with one to three subtrees replaced by arbitrary
    JSON or removed (the kind and apiVersion kept, so the guard reads it as what it claims to be)."""
    original = draw(st.sampled_from(_FUZZ_OBJECTS))
    head = {"apiVersion": original["apiVersion"], "kind": original["kind"]}
    mangled = mutate_subtrees(draw, copy.deepcopy(original), keep_root=True)
    return original, ({**mangled, **head} if isinstance(mangled, dict) else head)


@given(pair=mangled_kueue_objects(), operation=st.sampled_from(["CREATE", "UPDATE"]))
@settings(max_examples=300, deadline=None)
def test_any_mangled_kueue_object_gets_a_decision(pair: tuple[dict[str, Any], dict[str, Any]], operation: str) -> None:
    """Never an exception (which the server would turn into an unjudged "allowed"): a decision
    whose refusal names its rules, whatever the fields hold."""
    original, obj = pair
    namespace = str(original["metadata"].get("namespace") or "")
    request = KueueRequest(operation, namespace, obj, original if operation == "UPDATE" else None)
    decision = decide_kueue(request, policy(), _FUZZ_CACHE)
    assert decision.allowed is not any(f.action.value == "deny" for f in decision.findings)
    if not decision.allowed:
        assert decision.deny_message().startswith("[")


# ---------------------------------------------------------------- hostile values


@pytest.mark.parametrize("mode", ["static", "dynamic"])
@pytest.mark.parametrize("nominal", ["9Ei", "1e29", "1e30", "1e31", "1e40", "1" + "0" * 40])
def test_a_nominal_beyond_any_cluster_is_refused_whatever_its_size(mode: str, nominal: str) -> None:
    """Past 10^28 the pool remainder needed more digits than Python's default context: an
    internal error, which the webhook (failurePolicy Ignore) answered with an allow."""
    cluster = rfc_cache(mode)
    team_a = find(rfc_objects(mode), "ClusterQueue/team-a")
    decision = ask(set_nominal(team_a, nominal), cluster, policy(mode), "UPDATE", team_a)  # type: ignore[arg-type]
    assert decision.allowed is False
    assert "quota-exceeds-cluster" in [rule for rule, _, _, _ in lines(decision)]


def test_an_alias_bomb_in_kueues_configuration_is_refused_at_once() -> None:
    """Nine levels of ten aliases in ``controller_manager_config.yaml``: 10^9 nodes for the
    duplicate-key walk, had the loader not refused it (Kueue's decoder refuses it too)."""
    config_map = find(rfc_objects("dynamic"), "Configuration")
    levels = ['a0: &a0 ["lol"]'] + [f"a{i}: &a{i} [{', '.join([f'*a{i - 1}'] * 10)}]" for i in range(1, 10)]
    bomb = copy.deepcopy(config_map)
    bomb["data"]["controller_manager_config.yaml"] = "\n".join([*levels, "x: *a9"]) + "\n"
    started = time.perf_counter()
    decision = ask(bomb, rfc_cache(), policy(), "UPDATE", config_map)
    assert time.perf_counter() - started < 1
    assert decision.allowed is False
    [(rule, path, message, action)] = lines(decision)
    assert (rule, path, action) == ("config-rejected-by-kueue", 'data["controller_manager_config.yaml"]', "deny")
    assert "document contains excessive aliasing" in message
