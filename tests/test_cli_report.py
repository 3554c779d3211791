"""What fails a ``check`` run, and the counts every format prints."""

from __future__ import annotations

from typing import Any

import pytest
from support import load_jobset, with_slice_topology

from webhook.cli.report import EXIT_DENIED, EXIT_OK, EXIT_USAGE, CheckResult, Report
from webhook.engine.decision import AdmissionFacts, decide
from webhook.objects.sources import Document, SourceError
from webhook.policy.config import Policy
from webhook.rules.catalog import policy_from_mapping


def result(obj: Any, policy: Policy | None = None, namespace: str | None = None) -> CheckResult:
    policy = policy or Policy()
    namespace = namespace or obj["metadata"]["namespace"]
    decision = decide(obj, AdmissionFacts(namespace=namespace), policy)
    return CheckResult(
        Document("job.yaml", 1, obj), "JobSet", namespace, obj["metadata"]["name"], decision, mode="static"
    )


def skipped() -> CheckResult:
    return CheckResult(Document("svc.yaml", 1, {}), "Service", "default", "web", None, "not a JobSet", "static")


ADMITTED = load_jobset("rfc-4.6-static")
DENIED = {**load_jobset("rfc-4.6-static"), "spec": {**load_jobset("rfc-4.6-static")["spec"], "suspend": True}}
WARNS = with_slice_topology(load_jobset("rfc-4.6-static"))
UNREADABLE = SourceError("bad.yaml", "not valid YAML or JSON: …", 3)


@pytest.mark.parametrize(
    ("results", "errors", "strict", "code"),
    [
        ([ADMITTED], [], False, EXIT_OK),
        ([ADMITTED], [], True, EXIT_OK),
        ([ADMITTED, DENIED], [], False, EXIT_DENIED),
        ([WARNS], [], False, EXIT_OK),
        ([WARNS], [], True, EXIT_DENIED),
        ([], [], False, EXIT_DENIED),  # nothing judged, as kubectl apply with no objects
        ([], [], True, EXIT_DENIED),
        ([DENIED], [UNREADABLE], False, EXIT_USAGE),  # an unread input outranks a deny
        ([ADMITTED], [UNREADABLE], True, EXIT_USAGE),
    ],
)
def test_exit_codes(results: list[Any], errors: list[SourceError], strict: bool, code: int) -> None:
    report = Report([result(obj) for obj in results], list(errors), strict=strict)
    assert report.exit_code() == code


def test_nothing_judged_passes_only_when_allowed() -> None:
    assert Report([skipped()], allow_empty=True).exit_code() == EXIT_OK
    assert Report([skipped()]).exit_code() == EXIT_DENIED
    assert Report([skipped()], strict=True, allow_empty=True).exit_code() == EXIT_DENIED


def test_unknown_tier_warns_and_skipped_objects_do_not() -> None:
    report = Report([result(ADMITTED, namespace="kubmaker"), skipped()], strict=True)
    assert report.summary() == {"checked": 1, "admitted": 1, "denied": 0, "warned": 1, "skipped": 1, "errors": 0}
    assert report.results[0].tier is None and report.results[0].notices[0].startswith("the tier of namespace")
    assert report.strict_failures() == ["1 object(s) with warnings"]
    only_skipped = Report([skipped()], strict=True)
    assert only_skipped.strict_failures() == ["nothing was checked"]


def test_excepted_warnings_are_not_strict_warnings() -> None:
    obj = load_jobset("rfc-4.6-static")
    obj["spec"]["suspend"] = True
    policy = policy_from_mapping({"exceptions": [{"rules": ["suspend-forbidden"], "reason": "approved"}]})
    excepted = result(obj, policy)
    assert excepted.allowed and excepted.decision is not None and len(excepted.decision.warnings) == 1
    assert excepted.strict_warnings == [] and excepted.notices == []
    report = Report([excepted], strict=True)
    assert report.exit_code() == EXIT_OK and report.summary()["warned"] == 0


def test_summary_counts_and_line() -> None:
    report = Report(
        [result(ADMITTED), result(DENIED), result(WARNS), skipped()], [UNREADABLE], mode="dynamic", mode_source="--mode"
    )
    assert report.summary() == {"checked": 3, "admitted": 2, "denied": 1, "warned": 1, "skipped": 1, "errors": 1}
    assert report.summary_line() == "3 checked, 2 admitted, 1 denied, 1 warned, 1 skipped, 1 errors; mode dynamic"
    default = Report([result(ADMITTED)])
    assert default.summary_line().endswith("mode static (the default; use --mode dynamic for dynamic-mode jobs)")
    queues = Report([result(ADMITTED)], command="lint-queues")  # it judges queues: no word about jobs
    assert (
        queues.summary_line()
        == "1 checked, 1 admitted, 0 denied, 0 warned, 0 skipped, 0 errors; mode static (the default)"
    )
    assert [r.label for r in (result(ADMITTED), skipped())] == [
        "JobSet/kubemaker/llm-pretrain-a3f8",
        "Service/default/web",
    ]
