"""The engine's semantics beyond single rules: stages, UPDATE, tiers, patches, actions."""

from __future__ import annotations

import copy
from typing import Any

import jsonpatch
import pytest
from cluster_fixtures import OBJECTS, STATE
from support import POD, delete_path, load_deployment, load_jobset, set_path

from webhook.cluster import kinds as k
from webhook.cluster.statefiles import state_from_objects
from webhook.engine import decision as decision_module
from webhook.engine.decision import AdmissionFacts, Decision, decide
from webhook.objects.request import UserInfo
from webhook.policy.config import Policy
from webhook.policy.findings import Action
from webhook.rules.catalog import policy_from_mapping
from webhook.rules.cluster import FAMILY as CLUSTER_FAMILY
from webhook.simulate.live import warning_line

KUEUE = UserInfo("system:serviceaccount:kueue-system:kueue-controller-manager", ("system:serviceaccounts",))
ALICE = UserInfo("alice", ("team-a",))
DYNAMIC = Policy(mode="dynamic")
STATIC = Policy()


def run(obj: Any, policy: Policy = STATIC, **facts: Any) -> Decision:
    facts.setdefault("namespace", obj["metadata"].get("namespace", "default") if isinstance(obj, dict) else "")
    return decide(obj, AdmissionFacts(**facts), policy)


def rules(decision: Decision) -> set[str]:
    return {f.rule for f in decision.findings}


def test_rfc_examples_are_admitted_in_their_modes() -> None:
    for name, policy in [
        ("rfc-4.3.1-dynamic", DYNAMIC),
        ("pathways-dynamic", DYNAMIC),
        ("falcon-migration", DYNAMIC),
        ("rfc-4.6-static", STATIC),
        ("rfc-4.6-static-single", STATIC),
    ]:
        decision = run(load_jobset(name), policy)
        assert decision.allowed, (name, decision.deny_message())
        assert decision.warnings == []


def test_all_violations_are_reported_at_once_one_per_line() -> None:
    decision = run(load_jobset("falcon-before-migration"), DYNAMIC)
    assert not decision.allowed
    assert rules(decision) == {
        "exclusive-topology-forbidden",
        "slice-topology-missing",
        "static-topology-selector-forbidden",
    }
    lines = decision.deny_message().splitlines()
    assert len(lines) == 3
    for line in lines:
        rule, _, rest = line.partition("] ")
        assert rule.startswith("[") and rule[1:] in rules(decision)
        path, _, message = rest.partition(": ")
        assert path.startswith("spec.replicatedJobs[0]")
        assert "; " in message  # what is wrong; how to fix


def test_validating_path_skips_what_other_webhooks_add() -> None:
    """Kueue sets suspend and a default priority; the Slice Provisioner adds podset-*."""
    submitted = load_jobset("rfc-4.3.1-dynamic")
    delete_path(submitted, 'metadata.labels["kueue.x-k8s.io/priority-class"]')
    mutate = run(submitted, DYNAMIC, stage="mutate")
    assert rules(mutate) == {"priority-label-missing"}

    final = copy.deepcopy(submitted)
    set_path(final, 'metadata.labels["kueue.x-k8s.io/priority-class"]', "default")  # Kueue's defaulting
    set_path(final, "spec.suspend", True)  # Kueue's webhook
    set_path(final, f'{POD}.metadata.annotations["kueue.x-k8s.io/podset-slice-size"]', "16")  # Provisioner
    set_path(
        final,
        f'{POD}.metadata.annotations["kueue.x-k8s.io/podset-slice-required-topology"]',
        "cloud.google.com/gke-tpu-partition-4x4x4-id",
    )
    validate = run(final, DYNAMIC, stage="validate", path_tier="production")
    assert validate.allowed and validate.findings == []


def test_validating_path_still_judges_topology_and_shape() -> None:
    obj = load_jobset("rfc-4.3.1-dynamic")
    set_path(obj, f'{POD}.metadata.annotations["cloud.google.com/gke-tpu-slice-topology"]', "16x16x16")
    set_path(obj, "spec.suspend", True)
    decision = run(obj, DYNAMIC, stage="validate")
    assert rules(decision) == {"slice-topology-invalid"}


def test_update_by_kueue_flipping_suspend_is_allowed() -> None:
    old = load_jobset("rfc-4.6-static")
    old["spec"]["suspend"] = True
    new = copy.deepcopy(old)
    new["spec"]["suspend"] = False
    decision = run(new, operation="UPDATE", old_object=old, user=KUEUE, stage="validate")
    assert decision.allowed and decision.findings == [] and decision.patch == []


def test_update_by_a_user_flipping_suspend_is_refused() -> None:
    old = load_jobset("rfc-4.6-static")
    old["spec"]["suspend"] = False
    new = copy.deepcopy(old)
    new["spec"]["suspend"] = True
    decision = run(new, operation="UPDATE", old_object=old, user=ALICE, stage="validate")
    assert rules(decision) == {"suspend-forbidden"}
    assert "'alice' changed spec.suspend from false to true" in decision.deny_message()


def test_update_changing_labels_must_pass_label_rules() -> None:
    old = load_jobset("rfc-4.6-static")
    new = copy.deepcopy(old)
    set_path(new, 'metadata.labels["kueue.x-k8s.io/queue-name"]', "not-a-queue-name!")
    delete_path(new, 'metadata.labels["kueue.x-k8s.io/priority-class"]')
    decision = run(new, operation="UPDATE", old_object=old, user=ALICE)
    assert rules(decision) == {"queue-label-invalid", "priority-label-missing"}


def test_update_leaves_unchanged_labels_and_other_fields_alone() -> None:
    old = load_jobset("rfc-4.6-static")
    set_path(old, 'metadata.labels["kueue.x-k8s.io/priority-class"]', "legacy")  # predates the rules
    new = copy.deepcopy(old)
    set_path(new, "spec.replicatedJobs[0].replicas", 99)  # would break structural rules on CREATE
    set_path(new, f"{POD}.spec.priorityClassName", "high")
    decision = run(new, operation="UPDATE", old_object=old, user=ALICE)
    assert decision.allowed and decision.findings == []


@pytest.mark.parametrize("operation", ["DELETE", "CONNECT"])
def test_other_operations_are_not_judged(operation: str) -> None:
    decision = run(load_jobset("falcon-before-migration"), DYNAMIC, operation=operation)
    assert decision.allowed and decision.findings == []


def test_dev_tier_gets_both_default_labels_as_a_patch() -> None:
    obj = load_jobset("falcon-migration")
    decision = run(obj, DYNAMIC)
    assert decision.allowed
    assert decision.patch == [
        {
            "op": "add",
            "path": "/metadata/labels",
            "value": {"kueue.x-k8s.io/queue-name": "default", "kueue.x-k8s.io/priority-class": "default"},
        }
    ]
    patched = jsonpatch.apply_patch(obj, decision.patch)
    assert patched["metadata"]["labels"] == {
        "kueue.x-k8s.io/queue-name": "default",
        "kueue.x-k8s.io/priority-class": "default",
    }


def test_the_labels_the_mutating_call_adds_are_told_on_both_stages() -> None:
    """``added`` is what the patch writes, and the validating call of the same CREATE says the
    same (what ``simulate`` reads with the object's own labels); a label the job sets is not added."""
    obj = load_jobset("falcon-migration")
    obj["metadata"]["labels"] = {"kueue.x-k8s.io/queue-name": "mine"}
    defaults = {"kueue.x-k8s.io/priority-class": "default"}
    assert run(obj, DYNAMIC).added == defaults
    assert run(obj, DYNAMIC, stage="validate").added == defaults
    assert run(obj, DYNAMIC, operation="UPDATE", old_object=copy.deepcopy(obj)).added == {}


def test_patch_escapes_label_keys_and_never_overwrites() -> None:
    obj = load_jobset("falcon-migration")
    obj["metadata"]["labels"] = {"app": "sft", "kueue.x-k8s.io/queue-name": "default"}
    decision = run(obj, DYNAMIC)
    assert decision.patch == [
        {"op": "add", "path": "/metadata/labels/kueue.x-k8s.io~1priority-class", "value": "default"}
    ]
    patched = jsonpatch.apply_patch(obj, decision.patch)
    assert patched["metadata"]["labels"] == {
        "app": "sft",
        "kueue.x-k8s.io/queue-name": "default",
        "kueue.x-k8s.io/priority-class": "default",
    }


def test_patch_replaces_null_labels() -> None:
    obj = load_jobset("falcon-migration")
    obj["metadata"]["labels"] = None
    decision = run(obj, DYNAMIC)
    patched = jsonpatch.apply_patch(obj, decision.patch)
    assert patched["metadata"]["labels"]["kueue.x-k8s.io/queue-name"] == "default"


def test_no_patch_when_denied_in_production_or_on_validate() -> None:
    denied = load_jobset("falcon-migration")
    set_path(denied, "spec.suspend", False)
    assert run(denied, DYNAMIC).patch == []
    assert run(load_jobset("falcon-migration"), DYNAMIC, stage="validate").patch == []
    assert run(load_jobset("rfc-4.3.1-dynamic"), DYNAMIC).patch == []


def test_tier_from_the_path_beats_the_namespace_map() -> None:
    obj = load_jobset("falcon-migration")  # falcon-jobs is dev in the config map
    decision = run(obj, DYNAMIC, path_tier="production")
    assert decision.tier == "production"
    assert rules(decision) == {"queue-label-missing", "priority-label-missing"}


def test_namespace_labels_without_a_tier_mean_unmanaged_without_warning() -> None:
    decision = run(load_jobset("falcon-before-migration"), DYNAMIC, namespace_labels={"team": "falcon"})
    assert decision.allowed and decision.findings == [] and decision.warnings == [] and decision.patch == []


def test_namespace_labels_name_the_tier() -> None:
    obj = load_jobset("falcon-migration")
    obj["metadata"]["namespace"] = "brand-new"
    labels = {"scheduling.antgroup.com/kueue-tier": "dev"}
    decision = run(obj, DYNAMIC, namespace_labels=labels)
    assert decision.tier == "dev" and decision.patch


def test_unknown_namespace_is_unmanaged_with_a_warning() -> None:
    obj = load_jobset("falcon-before-migration")
    obj["metadata"]["namespace"] = "somewhere-else"
    decision = run(obj, DYNAMIC)
    assert decision.allowed and decision.findings == []
    assert len(decision.warnings) == 1 and "could not be determined" in decision.warnings[0]


def test_unconfigured_tier_label_value_is_unmanaged_with_a_warning() -> None:
    labels = {"scheduling.antgroup.com/kueue-tier": "staging"}
    decision = run(load_jobset("falcon-before-migration"), DYNAMIC, namespace_labels=labels)
    assert decision.allowed and "'staging'" in decision.warnings[0]


def test_warn_rules_warn_and_admit() -> None:
    obj = load_jobset("rfc-4.6-static")
    set_path(obj, f'{POD}.metadata.annotations["cloud.google.com/gke-tpu-slice-topology"]', "4x4x4")
    decision = run(obj)
    assert decision.allowed
    assert [f.action for f in decision.findings] == [Action.WARN]
    assert decision.warnings[0].startswith("[slice-topology-ignored] spec.replicatedJobs[0]")


def test_config_can_turn_a_rule_to_warn_or_off() -> None:
    obj = load_jobset("rfc-4.6-static")
    set_path(obj, f'{POD}.spec.containers[0].resources.requests["google.com/tpu"]', "8")
    warn = run(obj, policy_from_mapping({"rules": {"tpu-request-invalid": "warn"}}))
    assert warn.allowed and warn.warnings[0].startswith("[tpu-request-invalid]")
    off = run(obj, policy_from_mapping({"rules": {"tpu-request-invalid": "off"}}))
    assert off.allowed and off.findings == [] and off.warnings == []


@pytest.mark.parametrize(
    "obj",
    [
        None,
        7,
        "JobSet",
        [],
        {},
        {"metadata": "x"},
        {"spec": {"replicatedJobs": "workers"}},
        {"spec": {"replicatedJobs": [None, 3, {"template": []}]}},
    ],
)
def test_garbage_objects_become_findings(obj: Any) -> None:
    decision = decide(obj, AdmissionFacts(namespace="kubemaker"), DYNAMIC)
    assert not decision.allowed
    assert "jobset-malformed" in rules(decision)


def _excepting(*exceptions: dict[str, Any], **policy: Any) -> Policy:
    return policy_from_mapping({**policy, "exceptions": list(exceptions)})


def test_an_exception_turns_matching_denies_into_warnings_with_the_reason() -> None:
    obj = load_jobset("falcon-before-migration")
    policy = _excepting(
        {
            "rules": ["exclusive-topology-forbidden", "slice-topology-missing", "static-topology-selector-forbidden"],
            "namespaces": ["falcon-*"],
            "names": ["falcon-s?t"],
            "reason": "migration window, ticket OPS-42",
        },
        mode="dynamic",
    )
    plain = run(copy.deepcopy(obj), DYNAMIC)
    excepted = run(obj, policy)
    assert excepted.allowed and not plain.allowed
    assert [(f.rule, f.path, f.problem, f.fix) for f in excepted.findings] == [
        (f.rule, f.path, f.problem, f.fix) for f in plain.findings
    ]
    assert {f.action for f in excepted.findings} == {Action.WARN}
    assert {f.excepted for f in excepted.findings} == {"migration window, ticket OPS-42"}
    assert excepted.warnings == [f.line() for f in excepted.findings]
    assert all(
        w.endswith("(allowed by a policy exception: migration window, ticket OPS-42)") for w in excepted.warnings
    )
    assert sorted(excepted.excepted) == sorted(f.rule for f in plain.findings)
    # admitted, so the mutating path patches as for any admitted job
    assert excepted.patch == run(load_jobset("falcon-migration"), DYNAMIC).patch


@pytest.mark.parametrize(
    ("exception", "applies"),
    [
        ({"rules": ["suspend-forbidden"]}, True),
        ({"rules": ["suspend-forbidden"], "namespaces": ["kube*"]}, True),
        ({"rules": ["suspend-forbidden"], "namespaces": ["default", "falcon-jobs"]}, False),
        ({"rules": ["suspend-forbidden"], "names": ["llm-pretrain-*"]}, True),
        ({"rules": ["suspend-forbidden"], "names": ["LLM-*"]}, False),  # names are case-sensitive
        ({"rules": ["suspend-forbidden"], "namespaces": ["kubemaker"], "names": ["other-*"]}, False),
        ({"rules": ["tpu-request-invalid"]}, False),
    ],
)
def test_an_exception_applies_only_to_its_rules_namespaces_and_names(exception: dict[str, Any], applies: bool) -> None:
    obj = load_jobset("rfc-4.6-static")
    obj["spec"]["suspend"] = True
    decision = run(obj, _excepting({**exception, "reason": "approved"}))
    assert decision.allowed is applies
    assert [(f.rule, f.action, f.excepted) for f in decision.findings] == [
        ("suspend-forbidden", Action.WARN if applies else Action.DENY, "approved" if applies else "")
    ]


def test_an_exception_matches_generate_name_and_leaves_warn_level_rules_warning() -> None:
    obj = load_jobset("rfc-4.6-static")
    del obj["metadata"]["name"]
    obj["metadata"]["generateName"] = "llm-pretrain-"
    annotations = obj["spec"]["replicatedJobs"][0]["template"]["spec"]["template"]["metadata"]["annotations"]
    annotations["cloud.google.com/gke-tpu-slice-topology"] = "4x4x4"
    obj["spec"]["suspend"] = True
    policy = _excepting(
        {"rules": ["suspend-forbidden", "slice-topology-ignored"], "names": ["llm-pretrain-*"], "reason": "r"}
    )
    decision = run(obj, policy)
    assert decision.allowed
    assert [(f.rule, f.action, f.excepted) for f in decision.findings] == [
        ("suspend-forbidden", Action.WARN, "r"),
        ("slice-topology-ignored", Action.WARN, "r"),
    ]


def test_off_rules_stay_off_whatever_the_exceptions() -> None:
    obj = load_jobset("rfc-4.6-static")
    obj["spec"]["suspend"] = True
    policy = _excepting({"rules": ["suspend-forbidden"], "reason": "r"}, rules={"suspend-forbidden": "off"})
    decision = run(obj, policy)
    assert decision.allowed and decision.findings == [] and decision.excepted == []


def test_exceptions_apply_to_deployments_by_name_too() -> None:
    deployment = load_deployment("service-deployment")
    del deployment["metadata"]["labels"]["kueue.x-k8s.io/priority-class"]
    policy = _excepting({"rules": ["priority-label-missing"], "names": ["eval-*"], "reason": "ok"})
    decision = decide(deployment, AdmissionFacts(namespace="kubemaker", kind="Deployment"), policy)
    assert decision.allowed and decision.excepted == ["priority-label-missing"]
    other = _excepting({"rules": ["priority-label-missing"], "names": ["other-*"], "reason": "ok"})
    assert not decide(deployment, AdmissionFacts(namespace="kubemaker", kind="Deployment"), other).allowed


# --- bounded work (issue #9) ------------------------------------------------------------

LIMITED = policy_from_mapping({"limits": {"maxReplicatedJobs": 3, "maxContainers": 4, "maxFindings": 2}})


def test_replicated_jobs_over_the_limit_are_not_walked() -> None:
    obj = load_jobset("rfc-4.6-static")
    obj["spec"]["replicatedJobs"] = [{"name": "x"}, 1, "two", None]  # items are never read
    decision = run(obj, LIMITED)
    assert decision.deny_message() == (
        "[jobset-malformed] spec.replicatedJobs: has 4 items, more than the 3 this webhook judges; "
        "Kueue admits at most 18 podSets per Workload; split the JobSet"
    )
    assert decision.omitted == 0


def test_containers_are_counted_across_pod_templates() -> None:
    obj = load_jobset("rfc-4.6-static")
    job = obj["spec"]["replicatedJobs"][0]
    containers = job["template"]["spec"]["template"]["spec"]["containers"]
    containers += [{"name": f"helper-{i}", "image": "busybox"} for i in range(2)]  # three of the four allowed
    second = set_path(copy.deepcopy(job), "name", "second")
    obj["spec"]["replicatedJobs"].append(second)  # three more: over the four of the object
    decision = run(obj, LIMITED)
    assert [f.line() for f in decision.violations] == [
        "[jobset-malformed] spec.replicatedJobs[1].template.spec.template.spec.containers: has 3 items, over what "
        "is left of the 4 containers this webhook judges per object; no real pod has this many containers; "
        "check how the manifest is generated",
        # judged without the containers it was not allowed to read
        "[tpu-request-invalid] spec.replicatedJobs[1].template.spec.template.spec.containers: TPU podSet 'second' "
        "has no container requesting google.com/tpu; request google.com/tpu: 4 in both resources.requests and "
        "resources.limits",
    ]


def test_findings_past_the_limit_become_a_count_in_deny_and_warnings() -> None:
    obj = load_jobset("rfc-4.6-static")
    obj["metadata"]["annotations"] = {f"a{i}": i for i in range(5)}
    decision = run(obj, LIMITED)
    lines = decision.deny_message().split("\n")
    assert lines == [
        '[jobset-malformed] metadata.annotations["a0"]: must be a string, got int; quote the value',
        '[jobset-malformed] metadata.annotations["a1"]: must be a string, got int; quote the value',
        "... and 3 more",
    ]
    warned = policy_from_mapping({"limits": {"maxFindings": 2}, "rules": {"jobset-malformed": "warn"}})
    decision = run(obj, warned)
    assert decision.allowed and decision.warnings[-1] == "... and 3 more" and len(decision.warnings) == 3


def test_a_finding_quoting_a_huge_value_is_cut() -> None:
    obj = load_jobset("rfc-4.6-static")
    obj["metadata"]["labels"]["kueue.x-k8s.io/queue-name"] = "q" * 1_000_000
    decision = run(obj)
    assert not decision.allowed
    assert max(len(line) for line in decision.deny_message().split("\n")) <= STATIC.limits.max_line_chars
    assert "more characters)" in decision.deny_message()


def test_an_unknown_submitter_skips_queue_permissions_with_a_warning_and_is_never_denied() -> None:
    """The API server always names the user and its groups; a caller that knows neither (check
    without --user or --group) or only one gets a skip where the other could permit it."""
    open_to = {"groups": ["team-a"], "users": ["alice"]}
    policy = policy_from_mapping({"queuePermissions": {"team-a-queue": open_to}})
    job = load_jobset("rfc-4.6-static")  # queue team-a-queue

    def outcome(user: UserInfo, on: Policy = policy) -> tuple[bool, list[str], list[str], list[str]]:
        decision = run(job, on, user=user)
        return decision.allowed, [f.line() for f in decision.findings], decision.skipped, decision.warnings

    fix = "submit to your own team's queue, or ask the cluster admins to grant access"
    path = '[queue-not-permitted] metadata.labels["kueue.x-k8s.io/queue-name"]'
    skipped = "[queue-not-permitted] skipped: "
    assert outcome(UserInfo()) == (
        True,
        [],
        ["queue-not-permitted"],
        [skipped + "the submitter is unknown (no user name or group); check takes them as --user NAME and --group G"],
    )
    assert outcome(UserInfo("", ("team-b",))) == (
        True,
        [],
        ["queue-not-permitted"],
        [
            skipped + "the submitter's user name is unknown and its groups (team-b) are not permitted on queue "
            "'team-a-queue'; check takes the name as --user NAME"
        ],
    )
    assert outcome(UserInfo("bob")) == (
        True,
        [],
        ["queue-not-permitted"],
        [
            skipped + "the submitter's groups are unknown and user 'bob' is not permitted on queue 'team-a-queue' "
            "by name; check takes them as --group G"
        ],
    )
    assert outcome(UserInfo("", ("team-a",))) == (True, [], [], [])
    assert outcome(UserInfo("alice")) == (True, [], [], [])
    assert outcome(UserInfo("bob", ("team-b",))) == (
        False,
        [f"{path}: user 'bob' may not submit to queue 'team-a-queue'; {fix}"],
        [],
        [],
    )
    # what is unknown could not permit it: refused on what is known
    by_group = policy_from_mapping({"queuePermissions": {"team-a-queue": {"groups": ["team-a"]}}})
    assert outcome(UserInfo("", ("team-b", "team-c")), by_group) == (
        False,
        [f"{path}: groups team-b, team-c may not submit to queue 'team-a-queue'; {fix}"],
        [],
        [],
    )
    by_name = policy_from_mapping({"queuePermissions": {"team-a-queue": {"users": ["alice"]}}})
    assert outcome(UserInfo("bob"), by_name)[:2] == (
        False,
        [f"{path}: user 'bob' may not submit to queue 'team-a-queue'; {fix}"],
    )


# ---------------------------------------------------------------- the [simulate] line


def test_the_validating_call_of_an_admitted_create_says_what_kueue_would_do() -> None:
    obj = load_jobset("rfc-4.6-static-single")  # 256 chips of tpu7x-4x8x8 in team-b, which has them free
    validate = AdmissionFacts(operation="CREATE", stage="validate", namespace="kubemaker", kind="JobSet")
    decision = decide(obj, validate, STATIC, STATE, warning_line)
    assert decision.allowed
    assert [w for w in decision.warnings if w.startswith("[simulate]")] == ["[simulate] starts now on tpu7x-4x8x8"]
    # the mutating call, an UPDATE, the setting off, no cluster, and no hook: no line
    mutate = AdmissionFacts(operation="CREATE", stage="mutate", namespace="kubemaker", kind="JobSet")
    update = AdmissionFacts(operation="UPDATE", stage="validate", namespace="kubemaker", kind="JobSet", old_object=obj)
    for said in (
        decide(obj, mutate, STATIC, STATE, warning_line),
        decide(obj, update, STATIC, STATE, warning_line),
        decide(obj, validate, Policy(simulate="off"), STATE, warning_line),
        decide(obj, validate, STATIC, None, warning_line),
        decide(obj, validate, STATIC, STATE),  # no hook
    ):
        assert not [w for w in said.warnings if w.startswith("[simulate]")]


def test_the_line_says_when_the_static_pools_are_held() -> None:
    """The only 4x8x8 node pool held by a Workload of team-a (its topologyAssignment, as the watch
    stores it): the create is admitted, and its line says it waits for a pool, and for whom."""
    store = state_from_objects(OBJECTS, STATIC)
    holder = copy.deepcopy(next(o for o in OBJECTS if o["kind"] == "Workload" and "running" in o["metadata"]["name"]))
    holder["metadata"]["name"] = "holder"
    (assignment,) = holder["status"]["admission"]["podSetAssignments"]
    assignment["flavors"] = {"google.com/tpu": "tpu7x-4x8x8"}
    assignment["resourceUsage"] = {"google.com/tpu": "64"}
    assignment["topologyAssignment"] = {
        "levels": ["cloud.google.com/gke-nodepool"],
        "domains": [{"values": ["tpu-4x8x8-a"], "count": 16}],
    }
    store.apply(k.WORKLOADS, "ADDED", holder)
    obj = load_jobset("rfc-4.6-static-single")
    validate = AdmissionFacts(operation="CREATE", stage="validate", namespace="kubemaker", kind="JobSet")
    decision = decide(obj, validate, STATIC, store, warning_line)
    assert decision.allowed
    assert [w for w in decision.warnings if w.startswith("[simulate]")] == [
        "[simulate] will wait: needs 1 free 4x8x8 node pool, 0 of 1 free; held by kubemaker/holder"
    ]


def test_a_denied_create_gets_no_simulate_line() -> None:
    obj = load_jobset("rfc-4.3.1-dynamic")  # in static mode: no topology selector, denied
    validate = AdmissionFacts(operation="CREATE", stage="validate", namespace="kubemaker", kind="JobSet")
    decision = decide(obj, validate, STATIC, STATE, warning_line)
    assert not decision.allowed
    assert not [w for w in decision.warnings if w.startswith("[simulate]")]


def test_the_simulate_setting_is_checked_like_every_key() -> None:
    with pytest.raises(ValueError, match="simulate"):
        Policy.model_validate({"simulate": "deny"})


def _catalog_plan(policy: Policy, key: tuple[str, str, str, bool]) -> list[tuple[str, Action]]:
    """The plan read straight off the catalog: each applicable rule with the policy's action, else its own."""
    mode, scope, kind, clustered = key
    return [
        (rule.id, action)
        for rule in decision_module.RULES
        if mode in rule.modes
        and kind in rule.kinds
        and (clustered or not rule.requires)
        and not (scope == "final" and rule.subject == "submitted")
        and not (scope == "changes" and not rule.on_update)
        and (action := policy.rules.get(rule.id, rule.default_action)) is not Action.OFF
    ]


@pytest.mark.parametrize("actions", ["none", "warn", "off", "on"])
def test_the_plan_from_the_table_is_the_catalogs_under_the_policys_actions(actions: str) -> None:
    """The plans are a constant table made at import; a policy's own actions move them per request."""
    ids = [rule.id for rule in decision_module.RULES]
    warn_only = next(rule.id for rule in decision_module.RULES if rule.default_action is Action.WARN)
    overrides = {
        "none": {},
        "warn": {ids[0]: Action.WARN, ids[-1]: Action.WARN},
        "off": {ids[0]: Action.OFF, ids[1]: Action.WARN},
        "on": {warn_only: Action.DENY},
    }[actions]
    policy = Policy(rules=overrides)
    keys = list(decision_module._APPLICABLE)
    assert len(keys) > 0
    planned = {}
    for key in keys:
        steps = decision_module._plan(policy.model_copy(update={"mode": key[0]}), key[1], key[2], key[3])  # type: ignore[arg-type]
        plan = steps.structural + steps.cluster
        required = frozenset().union(*(rule.requires for rule, _ in plan))
        cluster = tuple(step for step in plan if step[0].family == CLUSTER_FAMILY)
        assert (steps.required, steps.cluster) == (required, cluster), key
        planned[key] = [(rule.id, action) for rule, action in plan]
    assert planned == {key: _catalog_plan(policy, key) for key in keys}
