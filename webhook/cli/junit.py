"""``check --output junit``: the JUnit XML that GitLab and Jenkins read as test reports.

One ``testsuite`` per input file, one ``testcase`` per object named
``kind/namespace/name``: a ``failure`` when it is denied (its violations, one per line,
as the API server would print them), ``skipped`` when it is not a kind we judge, and
the warnings in ``system-out``. Under ``--strict`` warnings are a failure too, since
they fail the run. A file that could not be read is a testcase with an ``error``.
"""

from __future__ import annotations

import re
import xml.etree.ElementTree as ET

from webhook.cli.report import CheckResult, Report

# XML 1.0 cannot carry most control characters, even escaped; a manifest's values can.
_NOT_XML = re.compile("[^\t\n\r\x20-\ud7ff\ue000-\ufffd\U00010000-\U0010ffff]")


def _clean(text: str) -> str:
    return _NOT_XML.sub("\ufffd", text)


def _counts(element: ET.Element, tests: int, failures: int, errors: int, skipped: int) -> None:
    element.set("tests", str(tests))
    element.set("failures", str(failures))
    element.set("errors", str(errors))
    element.set("skipped", str(skipped))


def _testcase(suite: ET.Element, result: CheckResult, strict: bool) -> tuple[int, int]:
    """Adds the object's testcase; returns (failed, skipped) as 0/1."""
    source = result.document.source
    case = ET.SubElement(
        suite,
        "testcase",
        name=_clean(result.label),
        classname=_clean(source),
        file=_clean(source),
        line=str(result.document.line),
    )
    decision = result.decision
    if decision is None:
        if strict and result.mistake:  # --strict fails the run on it: the report says so where it is
            ET.SubElement(case, "failure", type="mistake", message=_clean(f"--strict: skipped: {result.skipped}"))
            return 1, 0
        ET.SubElement(case, "skipped", message=_clean(result.skipped))
        return 0, 1
    mode = f"tier {decision.tier or 'none'}, mode {result.mode}"
    failing: list[str] = []
    if not decision.allowed:
        failing = [f.line() for f in decision.violations]
        kind, message = "denied", f"denied ({mode}): {len(failing)} violation(s)"
    elif strict and result.strict_warnings:
        failing = result.strict_warnings
        kind, message = "warning", f"--strict ({mode}): {len(failing)} warning(s)"
    if failing:
        ET.SubElement(case, "failure", type=kind, message=_clean(message)).text = _clean("\n".join(failing))
    if decision.warnings:
        ET.SubElement(case, "system-out").text = _clean("\n".join(f"warning: {w}" for w in decision.warnings))
    return int(bool(failing)), 0


def junit(report: Report) -> str:
    sources: dict[str, tuple[list[CheckResult], list[str]]] = {}
    for result in report.results:
        sources.setdefault(result.document.source, ([], []))[0].append(result)
    for error in report.errors:
        sources.setdefault(error.source, ([], []))[1].append(error.problem)

    suites_name = f"tpu-admission {report.command}"
    root = ET.Element("testsuites", name=suites_name)
    totals = [0, 0, 0, 0]
    for source, (results, errors) in sources.items():
        suite = ET.SubElement(root, "testsuite", name=_clean(source))
        failed = skipped = 0
        for result in results:
            case_failed, case_skipped = _testcase(suite, result, report.strict)
            failed += case_failed
            skipped += case_skipped
        for message in errors:
            case = ET.SubElement(suite, "testcase", name=_clean(source), classname=_clean(source), file=_clean(source))
            unread = ET.SubElement(case, "error", type="unreadable", message=_clean(message))
            unread.text = _clean(f"{source}: {message}")
        counts = (len(results) + len(errors), failed, len(errors), skipped)
        _counts(suite, *counts)
        totals = [a + b for a, b in zip(totals, counts, strict=True)]
    if "nothing was checked" in report.strict_failures():
        # The run fails with no object to blame; say why where the report is read.
        suite = ET.SubElement(root, "testsuite", name=suites_name)
        case = ET.SubElement(suite, "testcase", name="at least one object checked", classname=suites_name)
        ET.SubElement(case, "failure", type="strict", message="--strict: nothing was checked")
        _counts(suite, 1, 1, 0, 0)
        totals = [totals[0] + 1, totals[1] + 1, totals[2], totals[3]]
    _counts(root, *totals)
    ET.indent(root)
    return ET.tostring(root, encoding="unicode", xml_declaration=True)
