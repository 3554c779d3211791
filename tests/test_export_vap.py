"""``export vap``: the exported ValidatingAdmissionPolicy says what the webhook says.

For every object of the rule-example corpus and of two fuzz corpora, the exported policy
(evaluated by a real CEL runtime, tests/vap_runtime.py) must fire exactly the exported
rules the webhook fires, on the object as the API server hands it to a validating policy:
as submitted (the webhook down) and with the webhook's own label patch applied (the
webhook up). A CEL error anywhere is a failure.

The comparison is with the webhook's decision on the object as submitted (its mutating
path, which runs every rule). Rules the catalog exports in a narrowed form are compared
on what they cover. What other mutating webhooks add (Kueue: spec.suspend, the default
queue and priority; the Slice Provisioner: podset-* annotations) may make the policy
miss a finding, never add a refusal the webhook would not make: a property test holds it.
"""

from __future__ import annotations

import copy
import re
import shutil
import subprocess
from pathlib import Path
from typing import Any

import jsonpatch
import kubernetes_validate
import pytest
import yaml
from fuzzing import FIXTURES, mutate_subtrees, targeted_jobsets
from hypothesis import HealthCheck, assume, event, given, settings
from hypothesis import strategies as st
from rule_cases import CASES, RuleCase
from support import load_jobset
from vap_runtime import CelFailure, PolicyRuntime, Verdict, api_server_view

from webhook.cli.main import main as cli_main
from webhook.engine.decision import AdmissionFacts, Decision, decide
from webhook.export import vap
from webhook.objects.kinds import JOBSET
from webhook.objects.request import UserInfo
from webhook.policy.config import Policy
from webhook.policy.findings import Action, Finding
from webhook.rules.catalog import RULES, RULES_BY_ID, policy_from_mapping

K8S_VERSIONS = ("1.30", kubernetes_validate.latest_version())
POLICIES = {"static": Policy(), "dynamic": Policy(mode="dynamic")}
_RUNTIMES: dict[int, tuple[Policy, PolicyRuntime]] = {}


def runtime_for(policy: Policy) -> PolicyRuntime:
    cached = _RUNTIMES.get(id(policy))
    if cached is None or cached[0] is not policy:
        cached = (policy, PolicyRuntime(vap.export_objects(policy)))
        _RUNTIMES[id(policy)] = cached
    return cached[1]


def exported_rules(policy: Policy) -> set[str]:
    return {v.rule for v in vap.validations(policy)}


def within_export(finding: Finding, submitted: dict[str, Any]) -> bool:
    """Whether the webhook's finding lies inside what the narrowed export covers."""
    if finding.rule == "suspend-forbidden":
        return submitted.get("kind") != "Job" and (submitted.get("spec") or {}).get("suspend") is False
    if finding.rule == "tpu-request-invalid":
        return not str(finding.path).endswith(".spec")  # the pod's total is left to the webhook
    return True


def user_info(user: UserInfo) -> dict[str, Any]:
    return {"username": user.username, "groups": list(user.groups)}


NOBODY = UserInfo()


def compare(
    obj: Any, policy: Policy, namespace: str, user: UserInfo = NOBODY
) -> tuple[Decision, Verdict, set[str]] | None:
    """Assert the policy and the webhook agree on ``obj``; ``None`` when the API server
    would refuse the object before any validating policy runs."""
    view = api_server_view(obj, namespace)
    if view is None:
        return None
    decision = decide(copy.deepcopy(view), AdmissionFacts(namespace=namespace, user=user), policy)
    exported = exported_rules(policy)
    expected = {f.rule for f in decision.findings if f.rule in exported and within_export(f, view)}
    labels = {policy.tier_label: decision.tier} if decision.tier else {}
    runtime = runtime_for(policy)
    verdict = runtime.review(view, namespace, labels, user_info(user))
    assert verdict.fired == expected, (verdict.fired, expected, [f.line() for f in decision.findings])
    for rule in verdict.denied:
        assert policy.action_for(rule, RULES_BY_ID[rule].default_action) is Action.DENY
    for rule in verdict.warned:
        assert policy.action_for(rule, RULES_BY_ID[rule].default_action) is Action.WARN
    if decision.patch:  # the webhook was up: the policy sees its labels
        patched = jsonpatch.apply_patch(view, decision.patch)
        assert runtime.review(patched, namespace, labels, user_info(user)).fired == expected
    return decision, verdict, expected


# ------------------------------------------------------------------ the output


@pytest.mark.parametrize("mode", sorted(POLICIES))
@pytest.mark.parametrize("version", K8S_VERSIONS)
def test_export_is_schema_valid(mode: str, version: str) -> None:
    objects = list(yaml.safe_load_all(vap.render(POLICIES[mode])))
    assert [o["kind"] for o in objects] == [
        "ValidatingAdmissionPolicy",
        "ValidatingAdmissionPolicyBinding",
        "ValidatingAdmissionPolicy",
        "ValidatingAdmissionPolicyBinding",
    ] or [o["kind"] for o in objects] == ["ValidatingAdmissionPolicy", "ValidatingAdmissionPolicyBinding"]
    for obj in objects:
        kubernetes_validate.validate(obj, version, strict=True)
        assert obj["apiVersion"] == "admissionregistration.k8s.io/v1"


def test_schema_check_can_fail() -> None:
    objects = vap.export_objects(Policy())
    broken = copy.deepcopy(objects[0])
    broken["spec"]["validations"][0]["expresion"] = broken["spec"]["validations"][0].pop("expression")
    with pytest.raises(kubernetes_validate.ValidationError):
        kubernetes_validate.validate(broken, K8S_VERSIONS[0], strict=True)


@pytest.mark.parametrize("mode", sorted(POLICIES))
def test_export_covers_at_least_ten_structural_rules(mode: str) -> None:
    exported = exported_rules(POLICIES[mode])
    assert len(exported) >= 10, exported
    assert all(not RULES_BY_ID[rule].requires for rule in exported)


def test_every_rule_declares_its_export_and_the_export_follows_it() -> None:
    for rule in RULES:
        if rule.requires:
            assert not rule.vap.exported, rule.id
        if not rule.vap.exported:
            assert rule.vap.note, f"{rule.id}: say why it is not exported"
    everything = Policy(queuePermissions={"q-queue": {"users": ["a"]}}, subSlicing=False)
    produced = exported_rules(everything) | exported_rules(everything.model_copy(update={"mode": "dynamic"}))
    assert produced == {rule.id for rule in RULES if rule.vap.exported}


def test_every_message_starts_with_its_rule() -> None:
    for mode, policy in POLICIES.items():
        for obj in vap.export_objects(policy):
            for validation in obj["spec"].get("validations", []):
                rule = validation["message"].split("]")[0].lstrip("[")
                assert rule in RULES_BY_ID, (mode, validation["message"])
                assert validation.get("messageExpression", f"'[{rule}] ' + ").startswith(f"'[{rule}] ' + "), rule
                assert "\n" not in validation["message"]


def test_actions_follow_the_config() -> None:
    policy = Policy(rules={"tpu-request-invalid": "warn", "host-count-mismatch": "off"})
    objects = {
        o["metadata"]["name"]: o
        for o in vap.export_objects(policy, ["Warn", "Audit"])
        if o["kind"] == "ValidatingAdmissionPolicy"
    }
    deny_rules = [v["message"].split("]")[0][1:] for v in objects["tpu-admission"]["spec"]["validations"]]
    warn_rules = [v["message"].split("]")[0][1:] for v in objects["tpu-admission-warn"]["spec"]["validations"]]
    assert "tpu-request-invalid" in warn_rules and "tpu-request-invalid" not in deny_rules
    assert "host-count-mismatch" not in deny_rules + warn_rules
    assert objects["tpu-admission"]["spec"]["failurePolicy"] == "Fail"
    bindings = [o for o in vap.export_objects(policy, ["Warn", "Audit"]) if o["kind"].endswith("Binding")]
    assert [b["spec"]["validationActions"] for b in bindings] == [["Warn", "Audit"], ["Warn"]]
    with pytest.raises(ValueError, match="Deny and Warn"):
        vap.export_objects(policy, ["Deny", "Warn"])


def test_a_rule_with_a_policy_exception_only_warns() -> None:
    """The export cannot tell excepted objects apart, and must not refuse what the webhook admits."""
    policy = policy_from_mapping(
        {"exceptions": [{"rules": ["tpu-request-invalid"], "names": ["load-test-*"], "reason": "approved"}]}
    )
    objects = {o["metadata"]["name"]: o for o in vap.export_objects(policy) if o["kind"] == "ValidatingAdmissionPolicy"}
    deny_rules = [v["message"].split("]")[0][1:] for v in objects["tpu-admission"]["spec"]["validations"]]
    warn_rules = [v["message"].split("]")[0][1:] for v in objects["tpu-admission-warn"]["spec"]["validations"]]
    assert "tpu-request-invalid" in warn_rules and "tpu-request-invalid" not in deny_rules
    assert "host-count-mismatch" in deny_rules


def test_cli_prints_the_export(capsys: pytest.CaptureFixture[str], tmp_path: Any) -> None:
    config = tmp_path / "policy.yaml"
    config.write_text("mode: dynamic\nsliceNameBudget: 54\n")
    assert cli_main(["export", "vap", "--config", str(config)]) == 0
    out = capsys.readouterr().out
    objects = list(yaml.safe_load_all(out))
    assert objects == vap.export_objects(policy_from_mapping({"mode": "dynamic", "sliceNameBudget": 54}))
    assert "> 54" in out
    assert cli_main(["export", "vap", "--validation-actions", "Warn,Audit"]) == 0
    bindings = [o for o in yaml.safe_load_all(capsys.readouterr().out) if o["kind"].endswith("Binding")]
    assert bindings[0]["spec"]["validationActions"] == ["Warn", "Audit"]
    assert cli_main(["export", "vap", "--validation-actions", "Deny,Warn"]) == 2


# ------------------------------------------------------------------ the rule-example corpus


#: the export covers JobSets only (its matchConstraints); Jobs and Deployments stay with the webhook
JOBSET_CASES = [case for case in CASES if case.kind == JOBSET]


@pytest.mark.parametrize("case", JOBSET_CASES, ids=lambda c: c.id)
def test_rule_examples_agree(case: RuleCase) -> None:
    obj = case.object()
    namespace = obj["metadata"].get("namespace", "default")
    result = compare(obj, case.policy(), namespace, case.user)
    if result is None:
        assert case.rule == "jobset-malformed", f"{case.id}: the API server would refuse this example"
        return
    decision, verdict, expected = result
    own = [f for f in decision.findings if f.rule == case.rule]
    if case.rule in exported_rules(case.policy()) and all(within_export(f, obj) for f in own):
        assert (case.rule in verdict.fired) is case.fires, case.id
    # The messages say what the webhook says: each finding's problem and fix, verbatim.
    messages = {**verdict.denied, **verdict.warned}
    for finding in decision.findings:
        if finding.rule in expected and within_export(finding, obj):
            assert f"{finding.problem}; {finding.fix}" in messages[finding.rule], (finding.line(), messages)


def test_the_corpus_was_compared() -> None:
    """Guard for the test above: almost every example reaches the policy."""
    refused = [
        case.id
        for case in JOBSET_CASES
        if api_server_view(case.object(), case.object()["metadata"]["namespace"]) is None
    ]
    # JobSet v0.12.0's schema sets no minimum on a replicatedJob's replicas (later ones do), so
    # "negative replicas" reaches the policy and the webhook's jobset-malformed refuses it
    assert refused == ["jobset-malformed: string where a map belongs", "jobset-malformed: missing Job template"]


# ------------------------------------------------------------------ fuzz corpora

FUZZ = settings(
    max_examples=200, deadline=None, suppress_health_check=[HealthCheck.too_slow, HealthCheck.filter_too_much]
)
NAMESPACES = ["kubemaker", "default", "falcon-jobs", "unlabelled"]


@st.composite
def shared_mutated_jobsets(draw: st.DrawFn) -> Any:
    """The engine fuzz tests' strategy: one to three subtrees replaced by arbitrary JSON."""
    obj = load_jobset(draw(st.sampled_from(FIXTURES)))
    obj["metadata"].pop("namespace", None)
    return mutate_subtrees(draw, obj, keep_root=True)


@FUZZ
@given(obj=shared_mutated_jobsets(), mode=st.sampled_from(sorted(POLICIES)), namespace=st.sampled_from(NAMESPACES))
def test_shared_fuzz_corpus_agrees(obj: Any, mode: str, namespace: str) -> None:
    """Kept to what the API server accepts as a JobSet (the rest never reaches a policy)."""
    result = compare(obj, POLICIES[mode], namespace)
    assume(result is not None)
    assert result is not None
    event("denied by the policy" if result[1].denied else "admitted by the policy")


@FUZZ
@given(obj=targeted_jobsets(), mode=st.sampled_from(sorted(POLICIES)), namespace=st.sampled_from(NAMESPACES))
def test_targeted_fuzz_corpus_agrees(obj: dict[str, Any], mode: str, namespace: str) -> None:
    result = compare(obj, POLICIES[mode], namespace)
    assume(result is not None)
    assert result is not None
    for rule in sorted(result[2]):
        event(f"fires {rule}")


def other_webhooks(obj: dict[str, Any], policy: Policy, tier: str | None) -> dict[str, Any]:
    """What Kueue's and the Slice Provisioner's mutating webhooks may add on CREATE."""
    out = copy.deepcopy(obj)
    labels = out["metadata"].setdefault("labels", {})
    labels.setdefault(policy.queue_label, "default")  # Kueue: LocalQueue defaulting
    labels.setdefault(policy.priority_label, "default")  # Kueue: WorkloadPriorityClass defaulting
    out["spec"]["suspend"] = True  # Kueue manages it
    if policy.mode == "dynamic":  # the Slice Provisioner: podset-* from the slice topology
        for job in out["spec"]["replicatedJobs"]:
            pod = job.get("template", {}).get("spec", {}).get("template", {})
            notes = (pod.get("metadata") or {}).get("annotations") or {}
            if policy.tpu.slice_topology_annotation in notes:
                notes["kueue.x-k8s.io/podset-slice-required-topology"] = "cloud.google.com/gke-tpu-slice-4x4x4-id"
                notes["kueue.x-k8s.io/podset-slice-size"] = "16"
    return out


@FUZZ
@given(obj=targeted_jobsets(), mode=st.sampled_from(sorted(POLICIES)), namespace=st.sampled_from(NAMESPACES[:3]))
def test_other_webhooks_never_make_the_policy_refuse_what_the_webhook_admits(
    obj: dict[str, Any], mode: str, namespace: str
) -> None:
    policy = POLICIES[mode]
    view = api_server_view(obj, namespace)
    assume(view is not None)
    assert view is not None
    decision = decide(copy.deepcopy(view), AdmissionFacts(namespace=namespace), policy)
    final = jsonpatch.apply_patch(view, decision.patch) if decision.patch else view
    mutated = other_webhooks(final, policy, decision.tier)
    labels = {policy.tier_label: decision.tier} if decision.tier else {}
    verdict = runtime_for(policy).review(mutated, namespace, labels, {"username": "alice"})
    if verdict.denied:
        assert not decision.allowed, (verdict.denied, decision.findings)
        event("both refuse")
    else:
        event("policy admits")


# ------------------------------------------------------------------ cost and errors


def largest_jobset() -> dict[str, Any]:
    """A JobSet at the policy's bounds: every replicatedJob a TPU podSet with the most
    containers, every value as long as the checks let it be before they cut it off."""
    obj = load_jobset("rfc-4.3.1-dynamic")
    template = obj["spec"]["replicatedJobs"][0]
    container = template["template"]["spec"]["template"]["spec"]["containers"][0]
    jobs = []
    for index in range(vap.MAX_REPLICATED_JOBS):
        job = copy.deepcopy(template)
        job["name"] = f"job-{index}-" + "x" * 40
        pod = job["template"]["spec"]["template"]
        pod["metadata"]["annotations"]["cloud.google.com/gke-tpu-slice-topology"] = "999999x999999x99999" + "9" * 300
        pod["spec"]["containers"] = [
            {**copy.deepcopy(container), "name": f"c{n}", "resources": {"requests": {"google.com/tpu": "8"}}}
            for n in range(vap.MAX_CONTAINERS)
        ]
        jobs.append(job)
    obj["spec"]["replicatedJobs"] = jobs
    return obj


@pytest.mark.parametrize("mode", sorted(POLICIES))
def test_largest_jobset_within_bounds_evaluates_without_error(mode: str) -> None:
    obj = largest_jobset()
    view = api_server_view(obj, "kubemaker")
    assert view is not None
    verdict = runtime_for(POLICIES[mode]).review(view, "kubemaker", {POLICIES[mode].tier_label: "production"}, {})
    assert verdict.applied and verdict.denied
    assert "tpu-request-invalid" in verdict.denied


def test_jobsets_beyond_the_bounds_are_left_to_the_webhook() -> None:
    obj = load_jobset("rfc-4.3.1-dynamic")
    job = obj["spec"]["replicatedJobs"][0]
    obj["spec"]["replicatedJobs"] = [
        {**copy.deepcopy(job), "name": f"j{i}"} for i in range(vap.MAX_REPLICATED_JOBS + 1)
    ]
    view = api_server_view(obj, "kubemaker")
    assert view is not None
    verdict = runtime_for(POLICIES["dynamic"]).review(
        view, "kubemaker", {POLICIES["dynamic"].tier_label: "production"}, {}
    )
    assert not verdict.applied


def test_a_cel_error_is_a_failure() -> None:
    """Guard for the runtime: an expression that errors fails the comparison loudly."""
    objects = vap.export_objects(Policy())
    objects[0]["spec"]["validations"][0]["expression"] = "int('x') == 1"
    runtime = PolicyRuntime(objects)
    with pytest.raises(CelFailure):
        runtime.review(
            api_server_view(load_jobset("rfc-4.6-static"), "kubemaker") or {},
            "kubemaker",
            {"scheduling.antgroup.com/kueue-tier": "production"},
            {},
        )


# ------------------------------------------------------------------ the shipped overlay

OVERLAY = Path(__file__).resolve().parents[1] / "manifests" / "overlays" / "admission-policy"


def shipped_policy() -> Policy:
    base = yaml.safe_load_all((OVERLAY.parents[1] / "base" / "policy-configmap.yaml").read_text())
    (configmap,) = [o for o in base if o and o["kind"] == "ConfigMap"]
    return policy_from_mapping(yaml.safe_load(configmap["data"]["policy.yaml"]), "policy ConfigMap")


def test_overlay_is_the_export_of_the_shipped_policy() -> None:
    """The overlay's file is what `export vap` prints for the policy the webhook ships with."""
    assert (OVERLAY / "admission-policy.yaml").read_text() == vap.render(shipped_policy())
    spec = yaml.safe_load((OVERLAY / "kustomization.yaml").read_text())
    assert spec["resources"] == ["admission-policy.yaml"]
    objects = [o for o in yaml.safe_load_all((OVERLAY / "admission-policy.yaml").read_text()) if o]
    for obj in objects:
        for version in K8S_VERSIONS:
            kubernetes_validate.validate(obj, version, strict=True)
    bindings = [o for o in objects if o["kind"] == "ValidatingAdmissionPolicyBinding"]
    assert {b["metadata"]["name"]: b["spec"]["validationActions"] for b in bindings} == {
        "tpu-admission": ["Deny"],
        "tpu-admission-warn": ["Warn"],
    }


@pytest.mark.skipif(shutil.which("kubectl") is None, reason="no kubectl on this machine")
def test_overlay_renders_with_kubectl_kustomize() -> None:
    proc = subprocess.run(
        ["kubectl", "kustomize", str(OVERLAY)], capture_output=True, text=True, timeout=60, check=False
    )
    assert proc.returncode == 0, proc.stderr
    rendered = [d for d in yaml.safe_load_all(proc.stdout) if d]
    assert sorted((o["kind"], o["metadata"]["name"]) for o in rendered) == sorted(
        (o["kind"], o["metadata"]["name"]) for o in vap.export_objects(shipped_policy())
    )


# ------------------------------------------------------------------ the cost bound

_TOKEN = re.compile(r"\"(?:[^\"\\]|\\.)*\"|'(?:[^'\\]|\\.)*'|[A-Za-z_][A-Za-z0-9_]*|\d+|\?\.|[-+*/%<>=!&|?:\[\](){},.]")
PER_CALL_LIMIT, PER_EVALUATION_BUDGET = 1_000_000, 10_000_000


def cost_bound(expression: str) -> int:
    """An upper bound on the API server's runtime cost of one expression.

    Kubernetes' cost model charges about one unit per evaluated CEL operation and 0.1 per
    character a string operation touches. Every operation is at most one token of the
    text, so the token count bounds one pass; string literals are charged by their
    length, and each ``+`` (the concatenations of a message) another 7 units: a user's
    value is at most 64 characters in a message (``celtext.shown``), and every value is
    size-checked before a regex or ``int()`` reads it. A pass runs once per replicatedJob
    (``j``) and, inside a container comprehension (``c``), once per container: the whole
    text is charged at the innermost multiplicity it contains, an overestimate.
    """
    tokens = _TOKEN.findall(expression)
    literals = sum(len(t) for t in tokens if t[0] in "'\"")
    one_pass = len(tokens) + literals // 10 + 7 * tokens.count("+")
    passes = 1
    if "(j," in expression:
        passes = vap.MAX_REPLICATED_JOBS
    if "(c," in expression:
        passes = vap.MAX_REPLICATED_JOBS * vap.MAX_CONTAINERS
    return one_pass * passes


@pytest.mark.parametrize("mode", sorted(POLICIES))
def test_every_expression_is_within_the_api_servers_cost_limits(mode: str) -> None:
    total = 0
    for obj in vap.export_objects(POLICIES[mode]):
        if obj["kind"] != "ValidatingAdmissionPolicy":
            continue
        spec = obj["spec"]
        texts = [c["expression"] for c in spec["matchConditions"]] + [v["expression"] for v in spec["variables"]]
        texts += [v["expression"] for v in spec["validations"]]
        texts += [v.get("messageExpression", "") for v in spec["validations"]]
        for text in texts:
            bound = cost_bound(text)
            assert bound < PER_CALL_LIMIT, (bound, text[:200])
            total += bound
    assert total < PER_EVALUATION_BUDGET, total
