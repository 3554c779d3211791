"""Output formats of ``check``: a registry that doubles as the ``--output`` choices."""

from __future__ import annotations

import json
from collections.abc import Callable
from dataclasses import dataclass

from webhook.engine import Decision
from webhook.findings import Action
from webhook.sources import Document


@dataclass(slots=True)
class CheckResult:
    document: Document
    kind: str
    namespace: str
    name: str
    decision: Decision | None  # None: not a judged kind (JobSet, Job, Deployment), skipped
    skipped: str = ""

    @property
    def allowed(self) -> bool:
        return self.decision is None or self.decision.allowed


def _label(result: CheckResult) -> str:
    where = f"{result.namespace}/{result.name}" if result.namespace else result.name or "(unnamed)"
    return f"{result.kind or '(no kind)'} {where}"


def text(results: list[CheckResult]) -> str:
    blocks = []
    for result in results:
        head = f"{result.document.source}:{result.document.line}: {_label(result)}"
        decision = result.decision
        if decision is None:
            blocks.append(f"{head}: skipped ({result.skipped})")
            continue
        verdict = "admitted" if decision.allowed else "DENIED"
        lines = [f"{head}: {verdict}" + (f" (tier {decision.tier})" if decision.tier else "")]
        lines += [f"  deny  {f.line()}" for f in decision.violations]
        lines += [f"  warn  {w}" for w in decision.warnings]
        if decision.patch:
            added = ", ".join(f"{op['path']}={json.dumps(op['value'])}" for op in decision.patch)
            lines.append(f"  patch {added}")
        blocks.append("\n".join(lines))
    denied = sum(not r.allowed for r in results)
    checked = sum(r.decision is not None for r in results)
    blocks.append(f"{checked} checked, {denied} denied, {len(results) - checked} skipped")
    return "\n".join(blocks)


def as_json(results: list[CheckResult]) -> str:
    out = []
    for result in results:
        decision = result.decision or Decision()
        record: dict[str, object] = {
            "source": result.document.source,
            "line": result.document.line,
            "kind": result.kind,
            "namespace": result.namespace,
            "name": result.name,
            "allowed": result.allowed,
            "violations": [
                {"rule": f.rule, "path": str(f.path), "message": f.message, "action": f.action.value}
                for f in decision.findings
                if f.action in (Action.DENY, Action.WARN)
            ],
            "warnings": list(decision.warnings),
            "patch": list(decision.patch),
        }
        if result.decision is None:
            record["skipped"] = result.skipped
        else:
            record["tier"] = decision.tier
        out.append(record)
    return json.dumps({"results": out}, indent=2, ensure_ascii=False)


def _escape(value: str, property_value: bool = False) -> str:
    # GitHub workflow commands: % CR LF always, and : , inside properties.
    value = value.replace("%", "%25").replace("\r", "%0D").replace("\n", "%0A")
    if property_value:
        value = value.replace(":", "%3A").replace(",", "%2C")
    return value


def github(results: list[CheckResult]) -> str:
    lines = []
    for result in results:
        if result.decision is None:
            continue
        doc = result.document
        for finding in result.decision.findings:
            level = "error" if finding.action is Action.DENY else "warning"
            props = (
                f"file={_escape(doc.source, True)},line={doc.line_of(finding.path)},"
                f"title={_escape(f'{finding.rule} ({_label(result)})', True)}"
            )
            lines.append(f"::{level} {props}::{_escape(f'{finding.path}: {finding.message}')}")
        for warning in result.decision.warnings:
            if not warning.startswith("["):  # rule warnings were annotated above
                lines.append(f"::warning file={_escape(doc.source, True)},line={doc.line}::{_escape(warning)}")
    return "\n".join([*lines, text(results)])


FORMATTERS: dict[str, Callable[[list[CheckResult]], str]] = {
    "text": text,
    "json": as_json,
    "github": github,
}
