"""``check --output sarif``: SARIF 2.1.0, which GitHub code scanning reads.

The rules in ``tool.driver.rules`` are the catalog's, with their help text; each
deny- or warn-level finding is one result on the line of the offending field. A finding
a policy exception turned into a warning carries the exception as an external
suppression with the admin's reason. What is not a finding (an input that could not be
read, an unknown tier, a skipped cluster check, ``--strict`` failing the run) goes in
the invocation's tool notifications.
"""

from __future__ import annotations

import json
from pathlib import PurePath, PurePosixPath
from typing import Any
from urllib.parse import quote

from webhook import __version__
from webhook.cli.report import CheckResult, Report
from webhook.policy.findings import Action
from webhook.rules import Rule
from webhook.rules.catalog import RULES

SCHEMA = "https://json.schemastore.org/sarif-2.1.0.json"
_LEVELS = {Action.DENY: "error", Action.WARN: "warning", Action.OFF: "none"}


def _uri(source: str) -> str:
    """A URI reference for the file: relative paths stay relative (to the repository root)."""
    path = PurePath(source)
    if path.is_absolute():
        return path.as_uri()
    return quote(PurePosixPath(*path.parts).as_posix())


def _location(source: str, line: int | None, label: str | None = None) -> dict[str, Any]:
    physical: dict[str, Any] = {"artifactLocation": {"uri": _uri(source)}}
    if line:
        physical["region"] = {"startLine": line}
    location: dict[str, Any] = {"physicalLocation": physical}
    if label:
        location["logicalLocations"] = [{"fullyQualifiedName": label, "kind": "resource"}]
    return location


def _rule(rule: Rule[Any, Any]) -> dict[str, Any]:
    modes = "both modes" if len(rule.modes) == 2 else f"{next(iter(rule.modes))} mode"
    help_text = (
        f"{rule.title}: {rule.why}. Checked in {modes}; default action {rule.default_action.value}. "
        f"An admin can change the action in the policy (rules: {{{rule.id}: deny|warn|off}}) "
        f"or grant a per-object exception with a reason (exceptions:)."
    )
    return {
        "id": rule.id,
        "shortDescription": {"text": rule.title},
        "fullDescription": {"text": rule.why},
        "help": {"text": help_text},
        "defaultConfiguration": {"level": _LEVELS[rule.default_action]},
        "properties": {"tags": ["kubernetes", "kueue", rule.family]},
    }


def _results(result: CheckResult, index: dict[str, int]) -> list[dict[str, Any]]:
    out = []
    document = result.document
    for finding in result.reported:
        entry: dict[str, Any] = {
            "ruleId": finding.rule,
            "ruleIndex": index[finding.rule],
            "level": _LEVELS[finding.action],
            "message": {"text": f"{finding.path}: {finding.message}"},
            "locations": [_location(document.source, document.line_of(finding.path), result.label)],
            "properties": {
                "path": str(finding.path),
                "kind": result.kind,
                "namespace": result.namespace,
                "name": result.name,
                "tier": result.tier,
                "mode": result.mode,
            },
        }
        if finding.excepted:
            entry["suppressions"] = [{"kind": "external", "justification": finding.excepted}]
        out.append(entry)
    return out


def sarif(report: Report) -> str:
    rules = report.catalog or RULES
    index = {rule.id: position for position, rule in enumerate(rules)}
    notifications: list[dict[str, Any]] = []
    for error in report.errors:
        notifications.append(
            {
                "level": "error",
                "message": {"text": f"{error.source}: {error.problem}"},
                "locations": [_location(error.source, error.line)],
                "descriptor": {"id": "input-not-read"},
            }
        )
    results: list[dict[str, Any]] = []
    for result in report.results:
        results += _results(result, index)
        for notice in result.notices:
            notifications.append(
                {
                    "level": "warning",
                    "message": {"text": f"{result.label}: {notice}"},
                    "locations": [_location(result.document.source, result.document.line, result.label)],
                }
            )
        if result.mistake:
            notifications.append(
                {
                    "level": "warning",
                    "message": {"text": f"{result.label}: skipped: {result.skipped}"},
                    "locations": [_location(result.document.source, result.document.line, result.label)],
                }
            )
    if report.left_out:
        notifications.append({"level": "note", "message": {"text": report.left_out_line()}})
    for note in report.notes:
        notifications.append({"level": "note", "message": {"text": note}})
    for reason in report.strict_failures():
        notifications.append({"level": "error", "message": {"text": f"--strict fails the run: {reason}"}})
    run = {
        "tool": {
            "driver": {
                "name": "tpu-admission",
                "version": __version__,
                "semanticVersion": __version__,
                "rules": [_rule(rule) for rule in rules],
            }
        },
        "invocations": [
            {
                "executionSuccessful": not report.errors,
                "exitCode": report.exit_code(),
                "toolExecutionNotifications": notifications,
            }
        ],
        "results": results,
        "properties": {"mode": report.mode, "summary": report.summary()},
    }
    return json.dumps({"$schema": SCHEMA, "version": "2.1.0", "runs": [run]}, indent=2, ensure_ascii=False)
