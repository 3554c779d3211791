"""Output formats of ``check``: a registry that doubles as the ``--output`` choices.

Each format renders the whole ``Report``: every object's result, every input that could
not be read, and the summary counts.
"""

from __future__ import annotations

import json
import sys
from collections.abc import Callable

from webhook.cli.junit import junit
from webhook.cli.report import CheckResult, Report
from webhook.cli.sarif import sarif
from webhook.engine.decision import Decision
from webhook.policy.findings import Action

__all__ = ["FORMATTERS", "CheckResult", "Report"]


def _label(result: CheckResult) -> str:
    if not isinstance(result.document.data, dict):
        return "(not an object)"
    where = f"{result.namespace}/{result.name}" if result.namespace else result.name or "(unnamed)"
    return f"{result.kind or '(no kind)'} {where}"


def verdict_lines(head: str, decision: Decision, mode: str, patch_note: str = "") -> list[str]:
    """One object's text block: ``head`` with its tier and mode, then a line per denial,
    warning and the patch (``patch_note`` after it), as ``check`` and ``audit`` print them."""
    lines = [f"{head} (tier {decision.tier or 'none'}, mode {mode})"]
    lines += [f"  deny  {f.line()}" for f in decision.violations]
    lines += [f"  warn  {w}" for w in decision.warnings]
    if decision.patch:
        added = ", ".join(f"{op['path']}={json.dumps(op['value'])}" for op in decision.patch)
        lines.append(f"  patch {added}{patch_note}")
    return lines


def text(report: Report) -> str:
    blocks = []
    for result in report.results:
        head = f"{result.document.source}:{result.document.line}: {_label(result)}"
        decision = result.decision
        if decision is None:
            blocks.append(f"{head}: skipped ({result.skipped})")
            continue
        verdict = "admitted" if decision.allowed else "DENIED"
        lines = verdict_lines(f"{head}: {verdict}", decision, result.mode)
        blocks.append("\n".join([*lines, *(f"  hint  {hint}" for hint in result.hints)]))
    for error in report.errors:
        where = f"{error.source}:{error.line}" if error.line else error.source
        blocks.append(f"{where}: error: {error.problem}")
    if report.left_out:
        blocks.append(report.left_out_line())
    blocks += report.notes
    blocks.append(report.summary_line())
    return "\n".join(blocks)


def as_json(report: Report) -> str:
    out = []
    for result in report.results:
        decision = result.decision
        violations = []
        for finding in result.reported:
            violation = {
                "rule": finding.rule,
                "path": str(finding.path),
                "message": finding.message,
                "action": finding.action.value,
            }
            if finding.excepted:
                violation["exception"] = finding.excepted
            violations.append(violation)
        record: dict[str, object] = {
            "source": result.document.source,
            "line": result.document.line,
            "kind": result.kind,
            "namespace": result.namespace,
            "name": result.name,
            "allowed": result.allowed,
            "tier": result.tier,
            "mode": result.mode,
            "violations": violations,
            "warnings": list(decision.warnings) if decision else [],
            "patch": list(decision.patch) if decision else [],
        }
        if decision is None:
            record["skipped"] = result.skipped
        if result.hints:
            record["hints"] = result.hints
        out.append(record)
    errors = [{"source": e.source, "line": e.line, "message": e.problem} for e in report.errors]
    document: dict[str, object] = {"results": out, "errors": errors, "summary": report.summary()}
    if report.left_out:
        document["leftOut"] = report.left_out
    if report.notes:
        document["notes"] = report.notes
    if report.strict:
        document["strictFailures"] = report.strict_failures()
    return json.dumps(document, indent=2, ensure_ascii=False)


def _escape(value: str, property_value: bool = False) -> str:
    # GitHub workflow commands: % CR LF always, and : , inside properties.
    value = value.replace("%", "%25").replace("\r", "%0D").replace("\n", "%0A")
    if property_value:
        value = value.replace(":", "%3A").replace(",", "%2C")
    return value


def github(report: Report) -> str:
    """Workflow annotations on the offending lines, then one summary line; nothing else."""
    lines = []
    for result in report.results:
        doc = result.document
        file = _escape(doc.source, True)
        for finding in result.reported:
            level = "error" if finding.action is Action.DENY else "warning"
            title = _escape(f"{finding.rule} ({_label(result)})", True)
            message = _escape(f"{finding.path}: {finding.message}")
            lines.append(f"::{level} file={file},line={doc.line_of(finding.path)},title={title}::{message}")
        for notice in result.notices:
            title = _escape(f"tpu-admission ({_label(result)})", True)
            lines.append(f"::warning file={file},line={doc.line},title={title}::{_escape(notice)}")
        for hint in result.hints:
            title = _escape(f"tpu-admission: did you mean ({_label(result)})", True)
            lines.append(f"::warning file={file},line={doc.line},title={title}::{_escape(hint)}")
        if result.mistake:
            title = _escape(f"tpu-admission ({_label(result)})", True)
            lines.append(
                f"::warning file={file},line={doc.line},title={title}::{_escape('skipped: ' + result.skipped)}"
            )
    for error in report.errors:
        where = f"file={_escape(error.source, True)}" + (f",line={error.line}" if error.line else "")
        title = _escape("tpu-admission: input not read", True)
        lines.append(f"::error {where},title={title}::{_escape(error.problem)}")
    if report.left_out:
        lines.append(f"::notice title={_escape('tpu-admission: not read', True)}::{_escape(report.left_out_line())}")
    for note in report.notes:
        lines.append(f"::notice title={_escape('tpu-admission: cluster state', True)}::{_escape(note)}")
    for reason in report.strict_failures():
        # not tied to a line, but the job fails because of it: say so where annotations show
        lines.append(f"::error title={_escape('tpu-admission --strict', True)}::{_escape(reason)}")
    lines.append(f"tpu-admission {report.command}: {report.summary_line()}")
    return "\n".join(lines)


def as_yaml(report: Report) -> str:
    """The JSON report's document as YAML (``-o yaml``, as kubectl prints it)."""
    import yaml

    return str(yaml.safe_dump(json.loads(as_json(report)), sort_keys=False)).rstrip("\n")


FORMATTERS: dict[str, Callable[[Report], str]] = {
    "text": text,
    "json": as_json,
    "yaml": as_yaml,
    "github": github,
    "junit": junit,
    "sarif": sarif,
}


def emit_report(report: Report, output: str, errors: list[str]) -> int:
    """Write ``report`` in ``output`` (text coloured on a terminal) and return its exit code.
    With a machine format, stdout is likely a file: the inputs that could not be read go to
    stderr as well, for the person reading the job's log."""
    from webhook.cli.arguments import emit
    from webhook.cli.terminal import VERDICTS, emit_text

    if errors and output not in ("text", "github"):
        for error in errors:
            print(f"tpu-admission: {error}", file=sys.stderr)
    if output == "text":
        emit_text(FORMATTERS["text"](report), VERDICTS)
    else:
        emit(FORMATTERS[output](report))
    return report.exit_code()
