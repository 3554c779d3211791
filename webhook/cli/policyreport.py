"""``audit --output policyreport``: ``wgpolicyk8s.io/v1alpha2`` PolicyReports (Kyverno's and Policy Reporter's).

One ``PolicyReport`` per namespace (a ``ClusterPolicyReport`` for objects without one;
the three judged kinds are all namespaced, so an audit makes none), named
``tpu-admission`` and labelled ``app.kubernetes.io/managed-by: tpu-admission`` (how
``audit --apply`` finds the reports it wrote before). Its ``results``:

- one per (object, rule) that found something, as Kyverno and Policy Reporter count
  them (one result per policy, rule and resource): ``fail`` for a deny-level rule,
  ``warn`` for a warn-level one (a finding a policy exception let through is a ``warn``
  carrying the exception's reason). A rule that fires more than once on the object (on
  two podSets) gives one result: its message lists each finding with its field path, and
  ``properties.path`` every path;
- ``skip`` for a rule that could not judge the object because what decides it is
  unknown (part of the cluster state; the submitter), the PolicyReport's own word for
  it, unless the rule found something too: then its result says so;
- ``pass`` for an object with no finding (its message carries any warning that is not
  a finding, such as "runs outside every quota").

Each result has ``policy: tpu-admission``, the rule ID, the message (what is wrong and
how to fix it), ``source: tpu-admission``, the rule's family as ``category``, the
object as ``resources[0]`` (apiVersion, kind, name, namespace, uid), and ``properties``:
the offending field's path, the tier and the mode. The ``summary`` counts the results
(objects × rules), so its counts always equal them.

A namespace with very many objects is split over ``tpu-admission``, ``tpu-admission-2``
... so that no report grows past what the API server stores in one object (etcd's
request limit is 1.5 MiB); an object's results are never split.
"""

from __future__ import annotations

import json
import time
from collections.abc import Iterable
from dataclasses import dataclass
from typing import Any, Final

import yaml

from webhook.cli.report import CheckResult, Report
from webhook.policy.findings import Action, Finding
from webhook.rules.catalog import RULES

API_VERSION: Final = "wgpolicyk8s.io/v1alpha2"
POLICY: Final = "tpu-admission"
SOURCE: Final = "tpu-admission"
REPORT_NAME: Final = "tpu-admission"
MANAGED_BY: Final = ("app.kubernetes.io/managed-by", "tpu-admission")
#: one report's results at most this many bytes of JSON: etcd takes 1.5 MiB per object
MAX_REPORT_BYTES: Final = 1_000_000
_FAMILY: Final = {rule.id: rule.family for rule in RULES}
_SUMMARY_KEYS: Final = ("pass", "fail", "warn", "error", "skip")


@dataclass(slots=True)
class AuditResult(CheckResult):
    """A ``CheckResult`` of an object that exists (in the cluster or a state file): what a
    PolicyReport names in ``resources[]``."""

    api_version: str = ""
    uid: str = ""


def _resource(result: CheckResult) -> dict[str, str]:
    reference = {
        "apiVersion": getattr(result, "api_version", "") or "",
        "kind": result.kind,
        "name": result.name,
        "namespace": result.namespace,
        "uid": getattr(result, "uid", "") or "",
    }
    return {key: value for key, value in reference.items() if value}


def _skipped(result: CheckResult) -> list[tuple[str, str]]:
    """(rule, message) of each rule skipped for unknown cluster state."""
    decision = result.decision
    if decision is None:
        return []
    out = []
    for rule in dict.fromkeys(decision.skipped):
        prefix = f"[{rule}] "
        line = next((w for w in decision.warnings if w.startswith(prefix)), f"{prefix}skipped")
        out.append((rule, line.removeprefix(prefix)))
    return out


def object_results(result: CheckResult, timestamp: dict[str, int]) -> list[dict[str, Any]]:
    """The PolicyReport results of one audited object (none for an object that was not judged)."""
    decision = result.decision
    if decision is None:
        return []
    resources = [_resource(result)]
    properties = {"tier": decision.tier or "none", "mode": result.mode}

    def entry(rule: str | None, outcome: str, message: str, extra: dict[str, str] | None = None) -> dict[str, Any]:
        out: dict[str, Any] = {"policy": POLICY}
        if rule is not None:
            out["rule"] = rule
        out.update(result=outcome, message=message, source=SOURCE)
        if rule is not None:
            out["category"] = _FAMILY.get(rule, POLICY)
        out.update(scored=True, timestamp=timestamp, resources=resources, properties={**properties, **(extra or {})})
        return out

    by_rule: dict[str, list[Finding]] = {}
    for finding in result.reported:
        by_rule.setdefault(finding.rule, []).append(finding)
    skipped = _skipped(result)
    also = dict(skipped)
    out = []
    for rule, findings in by_rule.items():
        extra = {"path": ", ".join(dict.fromkeys(str(f.path) for f in findings))}
        excepted = next((f.excepted for f in findings if f.excepted), None)
        if excepted:
            extra["exception"] = excepted
        outcome = "fail" if any(f.action is Action.DENY for f in findings) else "warn"
        # one finding: its path is properties.path; several: each message names its own
        several = len(findings) > 1
        message = "\n".join(f"{f.path}: {f.message}" if several else f.message for f in findings)
        if rule in also:
            message += f"\n(elsewhere {also[rule]})"
        out.append(entry(rule, outcome, message, extra))
    out.extend(entry(rule, "skip", message) for rule, message in skipped if rule not in by_rule)
    if not result.reported:
        skipped_lines = {f"[{rule}] {message}" for rule, message in skipped}
        notes = [notice for notice in result.notices if notice not in skipped_lines]
        message = "admitted: no rule found anything" + (f" ({'; '.join(notes)})" if notes else "")
        out.append(entry(None, "pass", message))
    return out


def _report(namespace: str, part: int, results: list[dict[str, Any]]) -> dict[str, Any]:
    summary = dict.fromkeys(_SUMMARY_KEYS, 0)
    for entry in results:
        summary[entry["result"]] += 1
    metadata: dict[str, Any] = {"name": REPORT_NAME if part == 1 else f"{REPORT_NAME}-{part}"}
    if namespace:
        metadata["namespace"] = namespace
    metadata["labels"] = {MANAGED_BY[0]: MANAGED_BY[1]}
    return {
        "apiVersion": API_VERSION,
        "kind": "PolicyReport" if namespace else "ClusterPolicyReport",
        "metadata": metadata,
        "summary": summary,
        "results": results,
    }


def policy_reports(
    results: Iterable[CheckResult], now: float | None = None, max_bytes: int = MAX_REPORT_BYTES
) -> list[dict[str, Any]]:
    """The reports for ``results``: per namespace (sorted), objects by kind and name."""
    seconds = int(time.time() if now is None else now)
    timestamp = {"seconds": seconds, "nanos": 0}
    by_namespace: dict[str, list[CheckResult]] = {}
    for result in results:
        if result.decision is not None:
            by_namespace.setdefault(result.namespace, []).append(result)
    reports = []
    for namespace in sorted(by_namespace):
        part, size = 1, 0
        current: list[dict[str, Any]] = []
        for result in sorted(by_namespace[namespace], key=lambda r: (r.kind, r.name)):
            entries = object_results(result, timestamp)
            weight = sum(len(json.dumps(entry, separators=(",", ":"))) + 1 for entry in entries)
            if current and size + weight > max_bytes:
                reports.append(_report(namespace, part, current))
                part, size, current = part + 1, 0, []
            current.extend(entries)
            size += weight
        reports.append(_report(namespace, part, current))
    return reports


class _Dumper(getattr(yaml, "CSafeDumper", yaml.SafeDumper)):  # type: ignore[misc]
    """libyaml's emitter where there is one; no ``&id001`` anchors for the parts results share."""

    def ignore_aliases(self, data: Any) -> bool:
        return True


def policyreport(report: Report) -> str:
    """The formatter: every report as one YAML document, ready for ``kubectl apply -f -``."""
    documents = policy_reports(report.results)
    if not documents:
        return "# tpu-admission audit: nothing was audited, so there is no PolicyReport"
    text: str = yaml.dump_all(documents, Dumper=_Dumper, sort_keys=False, default_flow_style=False, allow_unicode=True)
    return text.rstrip("\n")
