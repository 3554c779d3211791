"""``audit --output policyreport``: the reports validate against the PolicyReport CRD, and say what the audit found.

The CRD's schema is not shipped by any package on PyPI or npm (none was found that
carries ``wgpolicyk8s.io_policyreports.yaml``), so ``CRD_SCHEMA`` below restates it: the
``openAPIV3Schema`` of version ``v1alpha2`` of ``policyreports.wgpolicyk8s.io`` in
kubernetes-sigs/wg-policy-prototypes (``policy-report/crd/v1alpha2/
wgpolicyk8s.io_policyreports.yaml``, the CRD Kyverno and Policy Reporter install), field
for field, without its descriptions and the ``format`` of its two integers (``validate``
checks the int32 one itself); compared with that file once when this was written.
``ClusterPolicyReport``'s schema is the same (``..._clusterpolicyreports.yaml``; only the
CRD's scope differs).

The restatement is stricter than the API server in one way, on purpose: the CRD is a
structural schema, so the API server *prunes* a field it does not declare instead of
refusing it. Here every object with declared properties also has
``additionalProperties: false``, so a field the server would silently drop fails the test.
"""

from __future__ import annotations

import copy
import json
import re
from typing import Any

import jsonschema
import pytest
import yaml
from cluster_fixtures import STATE
from support import load_deployment, load_job, load_jobset, set_path

from webhook.cli.policyreport import AuditResult, object_results, policy_reports, policyreport
from webhook.cli.report import Report
from webhook.engine.decision import AdmissionFacts, decide
from webhook.objects.kinds import DEPLOYMENT, JOB, JOBSET
from webhook.objects.sources import Document
from webhook.policy.config import Policy
from webhook.rules.catalog import policy_from_mapping


def _object(properties: dict[str, Any], required: list[str] | None = None) -> dict[str, Any]:
    schema: dict[str, Any] = {"type": "object", "properties": properties, "additionalProperties": False}
    if required:
        schema["required"] = required
    return schema


_STRING = {"type": "string"}
_STRINGS = {"type": "object", "additionalProperties": {"type": "string"}}
_REFERENCE = _object(
    {key: _STRING for key in ("apiVersion", "fieldPath", "kind", "name", "namespace", "resourceVersion", "uid")}
)
_SELECTOR = _object(
    {
        "matchExpressions": {
            "type": "array",
            "items": _object(
                {"key": _STRING, "operator": _STRING, "values": {"type": "array", "items": _STRING}},
                ["key", "operator"],
            ),
        },
        "matchLabels": _STRINGS,
    }
)
CRD_SCHEMA: dict[str, Any] = _object(
    {
        "apiVersion": _STRING,
        "kind": _STRING,
        "metadata": {"type": "object"},
        "results": {
            "type": "array",
            "items": _object(
                {
                    "category": _STRING,
                    "message": _STRING,
                    "policy": _STRING,
                    "properties": _STRINGS,
                    "resourceSelector": _SELECTOR,
                    "resources": {"type": "array", "items": _REFERENCE},
                    "result": {"type": "string", "enum": ["pass", "fail", "warn", "error", "skip"]},
                    "rule": _STRING,
                    "scored": {"type": "boolean"},
                    "severity": {"type": "string", "enum": ["critical", "high", "low", "medium", "info"]},
                    "source": _STRING,
                    "timestamp": _object(
                        {"nanos": {"type": "integer"}, "seconds": {"type": "integer"}}, ["nanos", "seconds"]
                    ),
                },
                ["policy"],
            ),
        },
        "scope": _REFERENCE,
        "scopeSelector": _SELECTOR,
        "summary": _object({key: {"type": "integer"} for key in ("error", "fail", "pass", "skip", "warn")}),
    }
)
DNS_SUBDOMAIN = re.compile(r"[a-z0-9]([-a-z0-9]*[a-z0-9])?(\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*")
INT32 = range(-(2**31), 2**31)


def validate(report: dict[str, Any]) -> None:
    """What the API server checks of a PolicyReport: the CRD schema and the object metadata."""
    jsonschema.Draft7Validator(CRD_SCHEMA).validate(report)
    assert report["apiVersion"] == "wgpolicyk8s.io/v1alpha2"
    assert report["kind"] in ("PolicyReport", "ClusterPolicyReport")
    metadata = report["metadata"]
    assert set(metadata) <= {"name", "namespace", "labels"}
    assert len(metadata["name"]) <= 253 and DNS_SUBDOMAIN.fullmatch(metadata["name"])
    assert ("namespace" in metadata) == (report["kind"] == "PolicyReport")
    for key, value in metadata.get("labels", {}).items():
        assert len(value) <= 63 and re.fullmatch(r"([A-Za-z0-9][-A-Za-z0-9_.]*)?[A-Za-z0-9]?", value), key
    for result in report.get("results", []):
        assert result["timestamp"]["nanos"] in INT32
    # etcd stores at most 1.5 MiB per object
    assert len(json.dumps(report)) < 1_500_000


def audited(obj: dict[str, Any], kind: str, policy: Policy, uid: str = "uid-1", cluster: Any = STATE) -> AuditResult:
    metadata = obj["metadata"]
    namespace = metadata.get("namespace", "default")
    decision = decide(obj, AdmissionFacts(namespace=namespace, kind=kind), policy, cluster)
    return AuditResult(
        Document("cluster", 0, None),
        obj["kind"],
        namespace,
        metadata["name"],
        decision,
        mode=policy.mode,
        api_version=obj["apiVersion"],
        uid=uid,
    )


def _mixed() -> list[AuditResult]:
    """Denied, warned, admitted, excepted and skipped objects in three namespaces."""
    static = Policy()
    denied = load_jobset("falcon-migration")  # static mode: denied twice, warned once
    admitted = load_jobset("rfc-4.6-static")
    admitted_job = load_job("rfc-job-static")
    service = load_deployment("service-deployment")
    unqueued = load_deployment("service-deployment")
    unqueued["metadata"]["name"] = "metrics-agent"
    del unqueued["metadata"]["labels"]  # production, no queue, no TPU: runs outside Kueue (a warning)
    bare = load_jobset("rfc-4.6-static")
    bare["metadata"].update(name="no-state", namespace="team-x")
    return [
        audited(denied, JOBSET, static, "u-denied"),
        audited(admitted, JOBSET, static, "u-admitted"),
        audited(admitted_job, JOB, static, "u-job"),
        audited(service, DEPLOYMENT, static, "u-service"),
        audited(unqueued, DEPLOYMENT, static, "u-unqueued"),
        audited(bare, JOBSET, static, "u-bare", cluster=None),
    ]


def test_every_report_validates_against_the_crd() -> None:
    reports = policy_reports(_mixed(), now=1_800_000_000)
    assert [(r["kind"], r["metadata"]["namespace"]) for r in reports] == [
        ("PolicyReport", "falcon-jobs"),
        ("PolicyReport", "kubemaker"),
        ("PolicyReport", "team-x"),
    ]
    for report in reports:
        validate(report)
        assert report["metadata"]["name"] == "tpu-admission"
        assert report["metadata"]["labels"] == {"app.kubernetes.io/managed-by": "tpu-admission"}


def test_the_validator_catches_what_the_server_would_refuse_or_prune() -> None:
    [report, *_] = policy_reports(_mixed())
    for path, value in (
        ("results[0].result", "denied"),
        ("results[0].scored", "yes"),
        ("results[0].resources[0].owner", "x"),
        ("summary.total", 3),
        ("results[0].properties.count", 3),
    ):
        broken = copy.deepcopy(report)
        set_path(broken, path, value)
        with pytest.raises(jsonschema.ValidationError):
            validate(broken)
    broken = copy.deepcopy(report)
    del broken["results"][0]["policy"]
    with pytest.raises(jsonschema.ValidationError):
        validate(broken)


def test_a_result_per_finding_and_a_pass_per_clean_object() -> None:
    reports = {r["metadata"]["namespace"]: r for r in policy_reports(_mixed())}
    falcon = reports["falcon-jobs"]["results"]
    assert [(r["rule"], r["result"]) for r in falcon] == [
        ("static-topology-selector-missing", "fail"),
        ("tas-annotation-missing", "fail"),
        ("slice-topology-ignored", "warn"),
    ]
    first = falcon[0]
    assert first["policy"] == first["source"] == "tpu-admission"
    assert first["category"] == "static"
    assert first["resources"] == [
        {
            "apiVersion": "jobset.x-k8s.io/v1alpha2",
            "kind": "JobSet",
            "name": "falcon-sft",
            "namespace": "falcon-jobs",
            "uid": "u-denied",
        }
    ]
    assert first["properties"] == {
        "tier": "dev",
        "mode": "static",
        "path": 'spec.replicatedJobs[0].template.spec.template.spec.nodeSelector["cloud.google.com/gke-tpu-topology"]',
    }
    assert "set nodeSelector cloud.google.com/gke-tpu-topology" in first["message"]
    kubemaker = reports["kubemaker"]["results"]
    # ordered by kind, then name; a clean object has one pass result and no rule
    assert [(r["resources"][0]["kind"], r["resources"][0]["name"], r["result"]) for r in kubemaker] == [
        ("Deployment", "eval-gateway", "pass"),
        ("Deployment", "metrics-agent", "pass"),
        ("Job", "llm-eval-b7c2", "pass"),
        ("JobSet", "llm-pretrain-a3f8", "pass"),
    ]
    assert all("rule" not in r for r in kubemaker)
    assert kubemaker[0]["message"] == "admitted: no rule found anything"
    assert "runs outside every quota" in kubemaker[1]["message"]


def test_summary_counts_equal_the_results() -> None:
    for report in policy_reports(_mixed()):
        counted = {key: 0 for key in ("pass", "fail", "warn", "error", "skip")}
        for result in report["results"]:
            counted[result["result"]] += 1
        assert report["summary"] == counted


def test_a_skipped_cluster_rule_is_a_skip_result() -> None:
    """Nodes unknown: the node rules are skipped for the object, each a ``skip`` naming why."""
    from cluster_fixtures import OBJECTS

    from webhook.cluster.statefiles import state_from_objects

    no_nodes = state_from_objects([o for o in copy.deepcopy(OBJECTS) if o["kind"] != "Node"], Policy())
    result = audited(load_jobset("rfc-4.6-static"), JOBSET, Policy(), cluster=no_nodes)
    entries = object_results(result, {"seconds": 1, "nanos": 0})
    skips = [e for e in entries if e["result"] == "skip"]
    assert {e["rule"] for e in skips} == {"exceeds-node-capacity", "insufficient-node-pools"}
    assert all("Nodes" in e["message"] and not e["message"].startswith("[") for e in skips)
    # no finding: the object passes too, and its pass does not repeat the skips
    [passed] = [e for e in entries if e["result"] == "pass"]
    assert passed["message"] == "admitted: no rule found anything"


def test_an_excepted_finding_is_a_warn_with_the_reason() -> None:
    exception = {"rules": ["tas-annotation-missing"], "names": ["falcon-sft"], "reason": "migrating by June"}
    policy = policy_from_mapping({"exceptions": [exception]})
    result = audited(load_jobset("falcon-migration"), JOBSET, policy)
    [excepted] = [
        e for e in object_results(result, {"seconds": 1, "nanos": 0}) if e["rule"] == "tas-annotation-missing"
    ]
    assert excepted["result"] == "warn"
    assert excepted["properties"]["exception"] == "migrating by June"


def test_a_crowded_namespace_is_split_without_splitting_an_object() -> None:
    results = []
    for i in range(30):
        jobset = load_jobset("falcon-migration")
        jobset["metadata"]["name"] = f"falcon-{i:02}"
        results.append(audited(jobset, JOBSET, Policy(), f"u{i}"))
    reports = policy_reports(results, max_bytes=8_000)
    assert len(reports) > 2
    assert [r["metadata"]["name"] for r in reports] == ["tpu-admission"] + [
        f"tpu-admission-{n}" for n in range(2, len(reports) + 1)
    ]
    names = [r["resources"][0]["name"] for report in reports for r in report["results"]]
    assert sorted(set(names)) == [f"falcon-{i:02}" for i in range(30)]
    for report in reports:
        validate(report)
        per_object = {r["resources"][0]["name"] for r in report["results"]}
        for other in reports:
            if other is not report:
                assert not per_object & {r["resources"][0]["name"] for r in other["results"]}
        assert len(json.dumps(report["results"], separators=(",", ":"))) <= 8_000 + 2


def test_an_object_without_a_namespace_goes_to_a_cluster_report() -> None:
    result = _mixed()[1]
    result.namespace = ""
    [report] = policy_reports([result])
    assert report["kind"] == "ClusterPolicyReport" and "namespace" not in report["metadata"]
    assert "namespace" not in report["results"][0]["resources"][0]
    validate(report)


def test_the_formatter_prints_yaml_documents_kubectl_applies() -> None:
    text = policyreport(Report(results=list(_mixed())))
    documents = list(yaml.safe_load_all(text))
    assert [d["metadata"]["namespace"] for d in documents] == ["falcon-jobs", "kubemaker", "team-x"]
    assert "&id" not in text and "*id" not in text  # no YAML anchors for the shared parts
    for document in documents:
        validate(document)
    assert policyreport(Report()).startswith("#")  # nothing audited: a comment, no object


def test_a_rule_that_fires_on_two_podsets_is_one_result_per_object_and_rule() -> None:
    """Kyverno and Policy Reporter key a result by (policy, rule, resource): two ``fail`` results
    for one rule and one object read as two failures of two checks."""
    jobset = load_jobset("falcon-migration")  # static mode: two rules deny, one warns, per podSet
    second = copy.deepcopy(jobset["spec"]["replicatedJobs"][0])
    second["name"] = "evaluators"
    jobset["spec"]["replicatedJobs"].append(second)
    [report] = policy_reports([audited(jobset, JOBSET, Policy(), "u-two")], now=1_800_000_000)
    validate(report)
    results = report["results"]
    assert [(r["rule"], r["result"]) for r in results] == [
        ("static-topology-selector-missing", "fail"),
        ("tas-annotation-missing", "fail"),
        ("slice-topology-ignored", "warn"),
    ]
    assert report["summary"] == {"pass": 0, "fail": 2, "warn": 1, "error": 0, "skip": 0}
    selector = results[0]
    paths = [
        f'spec.replicatedJobs[{i}].template.spec.template.spec.nodeSelector["cloud.google.com/gke-tpu-topology"]'
        for i in (0, 1)
    ]
    assert selector["properties"]["path"] == ", ".join(paths)
    single = object_results(audited(load_jobset("falcon-migration"), JOBSET, Policy()), {"seconds": 1, "nanos": 0})
    first = single[0]["message"]
    assert "podSet 'workers'" in first
    assert selector["message"].split("\n") == [
        f"{paths[0]}: {first}",
        f"{paths[1]}: " + first.replace("podSet 'workers'", "podSet 'evaluators'"),
    ]


def test_a_rule_that_found_something_and_was_skipped_elsewhere_is_one_result() -> None:
    """A cluster rule may judge one podSet and find another's state unknown: one ``fail`` that
    says so, not a ``fail`` and a ``skip`` for the same rule and object."""
    from webhook.engine.decision import Decision
    from webhook.kube.fieldpaths import ROOT
    from webhook.policy.findings import Finding

    rule = "exceeds-node-capacity"
    skipped = f"[{rule}] skipped: cluster state unknown (Nodes: not listed yet)"
    finding = Finding(rule, ROOT.child("spec", "replicas"), "too big", "ask for less")
    result = AuditResult(
        Document("cluster", 0, None),
        "JobSet",
        "kubemaker",
        "big",
        Decision(allowed=False, findings=[finding], warnings=[skipped], tier="production", skipped=[rule]),
        mode="static",
    )
    [entry] = object_results(result, {"seconds": 1, "nanos": 0})
    assert (entry["rule"], entry["result"]) == (rule, "fail")
    assert (
        entry["message"] == "too big; ask for less\n(elsewhere skipped: cluster state unknown (Nodes: not listed yet))"
    )
