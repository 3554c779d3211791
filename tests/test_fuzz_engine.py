"""Fuzz the engine: arbitrary JSON and mutated real JobSets, Jobs and Deployments give findings, never an exception.

Whatever ``decide`` gets, it answers: a consistent decision (denied exactly when a deny
finding exists, every finding from the catalog), a response that encodes as JSON, and a
patch that applies to the submitted object and only adds labels.
"""

from __future__ import annotations

import copy
import json
from typing import Any

import jsonpatch
import pytest
from fuzzing import FIXTURES, json_paths, json_values, mutate_subtrees
from hypothesis import HealthCheck, event, given, settings
from hypothesis import strategies as st
from support import load_deployment, load_job, load_jobset

from webhook.engine.decision import AdmissionFacts, Decision, decide
from webhook.objects import kinds
from webhook.objects.request import UserInfo
from webhook.policy.config import Policy
from webhook.policy.findings import Action
from webhook.rules.catalog import RULES_BY_ID
from webhook.wire.reviews import review_response

POLICIES = {"static": Policy(), "dynamic": Policy(mode="dynamic")}
NAMESPACES = ["kubemaker", "default", "falcon-jobs", "unknown-ns", ""]
FUZZ = settings(max_examples=150, deadline=None, suppress_health_check=[HealthCheck.too_slow])

facts_strategy = st.builds(
    AdmissionFacts,
    operation=st.sampled_from(["CREATE", "UPDATE", "DELETE", "CONNECT"]),
    stage=st.sampled_from(["mutate", "validate"]),
    namespace=st.sampled_from(NAMESPACES),
    user=st.builds(UserInfo, username=st.text(max_size=10), groups=st.tuples(st.text(max_size=10))),
    path_tier=st.sampled_from([None, None, "production", "dev"]),
    kind=st.sampled_from(kinds.ORDER),
)


@st.composite
def mutated_jobsets(draw: st.DrawFn) -> dict[str, Any]:
    """A fixture JobSet with one to three subtrees replaced by arbitrary JSON or removed."""
    return mutate_subtrees(draw, load_jobset(draw(st.sampled_from(FIXTURES))), keep_root=True)  # type: ignore[no-any-return]


@st.composite
def mutated_jobs_and_deployments(draw: st.DrawFn) -> tuple[dict[str, Any], str]:
    """A fixture Job or Deployment with one to three subtrees replaced by arbitrary JSON or removed."""
    loader, names, kind = draw(
        st.sampled_from(
            [
                (load_job, ["rfc-job-static", "rfc-job-dynamic", "dev-job-cpu"], kinds.JOB),
                (load_deployment, ["service-deployment", "dev-deployment"], kinds.DEPLOYMENT),
            ]
        )
    )
    return mutate_subtrees(draw, loader(draw(st.sampled_from(names))), keep_root=True), kind


def check_decision(obj: Any, facts: AdmissionFacts, policy: Policy) -> Decision:
    before = copy.deepcopy(obj)
    decision = decide(obj, facts, policy)
    assert obj == before or obj != obj, "decide must not change the object it judges"  # NaN != NaN
    for finding in decision.findings:
        assert finding.rule in RULES_BY_ID, finding
        assert finding.action in (Action.DENY, Action.WARN)
        assert finding.line().startswith(f"[{finding.rule}] ")
    assert decision.allowed == (not any(f.action is Action.DENY for f in decision.findings))
    event("allowed" if decision.allowed else "denied")
    event("patched" if decision.patch else "no patch")
    answer = review_response("fuzz-uid", decision)
    assert json.loads(json.dumps(answer))["response"]["uid"] == "fuzz-uid"
    if not decision.allowed:
        assert answer["response"]["status"]["message"]
    if decision.patch:
        assert decision.allowed
        assert facts.operation == "CREATE"
        assert facts.stage == "mutate"
        patched = jsonpatch.apply_patch(obj, decision.patch)
        labels = patched["metadata"]["labels"]
        old_labels = (obj.get("metadata") or {}).get("labels") or {}
        assert all(labels[key] == value for key, value in old_labels.items()), "a user label was overwritten"
        without = {k: v for k, v in patched["metadata"].items() if k != "labels"}
        assert without == {k: v for k, v in (obj.get("metadata") or {}).items() if k != "labels"}
        assert {k: v for k, v in patched.items() if k != "metadata"} == {
            k: v for k, v in obj.items() if k != "metadata"
        }
    return decision


@FUZZ
@given(obj=json_values, facts=facts_strategy, mode=st.sampled_from(sorted(POLICIES)))
def test_arbitrary_json_never_raises(obj: Any, facts: AdmissionFacts, mode: str) -> None:
    check_decision(obj, facts, POLICIES[mode])


@FUZZ
@given(obj=mutated_jobsets(), facts=facts_strategy, mode=st.sampled_from(sorted(POLICIES)))
def test_mutated_jobsets_never_raise(obj: dict[str, Any], facts: AdmissionFacts, mode: str) -> None:
    check_decision(obj, facts, POLICIES[mode])


@FUZZ
@given(
    mutated=mutated_jobs_and_deployments(),
    old=st.none() | json_values,
    operation=st.sampled_from(["CREATE", "UPDATE"]),
    stage=st.sampled_from(["mutate", "validate"]),
    mode=st.sampled_from(sorted(POLICIES)),
)
def test_mutated_jobs_and_deployments_never_raise(
    mutated: tuple[dict[str, Any], str], old: Any, operation: str, stage: str, mode: str
) -> None:
    obj, kind = mutated
    metadata = obj.get("metadata")
    namespace = str(metadata.get("namespace", "")) if isinstance(metadata, dict) else ""
    facts = AdmissionFacts(operation=operation, stage=stage, namespace=namespace, old_object=old, kind=kind)  # type: ignore[arg-type]
    check_decision(obj, facts, POLICIES[mode])


@FUZZ
@given(obj=mutated_jobsets(), old=mutated_jobsets() | json_values, mode=st.sampled_from(sorted(POLICIES)))
def test_updates_with_mutated_old_objects_never_raise(obj: dict[str, Any], old: Any, mode: str) -> None:
    facts = AdmissionFacts(operation="UPDATE", stage="mutate", namespace="kubemaker", old_object=old)
    check_decision(obj, facts, POLICIES[mode])


@FUZZ
@given(labels=st.none() | json_values, namespace=st.sampled_from(["default", "falcon-jobs"]))
def test_dev_tier_patch_applies_whatever_the_metadata(labels: Any, namespace: str) -> None:
    """The label patch is built from the parsed metadata: it must apply to the raw object."""
    obj = load_jobset("rfc-4.6-static")
    obj["metadata"]["labels"] = labels
    decision = check_decision(obj, AdmissionFacts(namespace=namespace), POLICIES["static"])
    if isinstance(labels, dict) and all(isinstance(v, str) for v in labels.values()) and not labels:
        assert decision.patch, "an empty labels map in a dev namespace gets the default labels"


def test_the_mutator_reaches_deep_fields() -> None:
    """Guard for the strategy itself: the paths it mutates include pod-template fields."""
    paths = json_paths(load_jobset("rfc-4.6-static"))
    assert any("nodeSelector" in path for path in paths)
    assert any("resources" in path for path in paths)


@pytest.mark.parametrize("depth", [50, 900, 5000])
def test_deeply_nested_values_are_findings(depth: int) -> None:
    """A nesting depth no JSON parser would produce still cannot break a rule."""
    nested: Any = "x"
    for _ in range(depth):
        nested = [nested]
    obj = load_jobset("rfc-4.6-static")
    obj["metadata"]["labels"]["deep"] = nested
    obj["spec"]["replicatedJobs"][0]["template"]["spec"]["template"]["spec"]["nodeSelector"] = nested
    decision = decide(obj, AdmissionFacts(namespace="kubemaker"), POLICIES["static"])
    assert not decision.allowed
    assert {f.rule for f in decision.findings} >= {"jobset-malformed"}
    json.dumps(review_response("u", decision))
