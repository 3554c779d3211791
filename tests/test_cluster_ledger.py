"""What counts as in use and as pending, as Kueue's cache counts it (``webhook.quota.ledger``)."""

from __future__ import annotations

from typing import Any

import pytest

from webhook.quota.ledger import FINISHED, HOLDS, IDLE, INADMISSIBLE, WAITS, ChipsLedger, project

TPU = "google.com/tpu"


def workload(
    conditions: list[tuple[str, str, str]] | None = None, active: bool | None = None, admitted: bool = False
) -> dict[str, Any]:
    pod = {"containers": [{"name": "c", "resources": {"requests": {TPU: "4"}}}]}
    spec: dict[str, Any] = {
        "queueName": "q",
        "priorityClassRef": {"name": "guaranteed"},
        "podSets": [{"name": "workers", "count": 16, "template": {"spec": pod}}],
    }
    if active is not None:
        spec["active"] = active
    status: dict[str, Any] = {"conditions": [{"type": t, "status": s, "reason": r} for t, s, r in conditions or []]}
    if admitted:
        status["admission"] = {
            "clusterQueue": "cq",
            "podSetAssignments": [{"name": "workers", "flavors": {TPU: "f"}, "resourceUsage": {TPU: "64"}}],
        }
    return {"metadata": {"name": "w", "namespace": "ns"}, "spec": spec, "status": status}


RESERVED = ("QuotaReserved", "True", "QuotaReserved")


@pytest.mark.parametrize(
    ("obj", "state"),
    [
        (workload([RESERVED], admitted=True), HOLDS),
        (workload([RESERVED, ("Finished", "True", "Succeeded")], admitted=True), FINISHED),
        (workload([RESERVED], active=False, admitted=True), IDLE),  # deactivated: Kueue releases its quota
        (workload(admitted=True), WAITS),  # an admission without QuotaReserved True holds nothing
        (workload(), WAITS),
        (workload([("QuotaReserved", "False", "Pending")]), WAITS),
        (workload([("QuotaReserved", "False", "Inadmissible")]), INADMISSIBLE),
        (workload([("QuotaReserved", "False", "ExceedsMaxQuota")]), INADMISSIBLE),
        (workload([("QuotaReserved", "False", "OnHold")]), INADMISSIBLE),
        (workload([("WaitingForReplacementPods", "True", "")]), INADMISSIBLE),
        (workload(active=False), IDLE),
    ],
    ids=[
        "reserved",
        "finished",
        "deactivated-while-reserved",
        "admission-without-reservation",
        "waiting",
        "waiting-for-quota",
        "inadmissible",
        "exceeds-max-quota",
        "on-hold",
        "waiting-for-replacement-pods",
        "inactive",
    ],
)
def test_a_workload_counts_as_kueue_counts_it(obj: dict[str, Any], state: str) -> None:
    assert project(obj, TPU).state == state


def test_the_ledger_moves_by_the_difference() -> None:
    ledger = ChipsLedger("guaranteed")
    holding, waiting = project(workload([RESERVED], admitted=True), TPU), project(workload(), TPU)
    ledger.move("ns", holding, +1)
    ledger.move("ns", waiting, +1)
    ledger.move("ns", waiting, +1)
    assert ledger.in_use == {("cq", "f"): 64} and ledger.holding == {("cq", "f"): 64}
    [(shape, count)] = ledger.waiting_for("ns", "q")
    assert count == 2 and shape[0].total(TPU) == 64
    assert project(workload(), TPU).shape is shape  # identical podSets share one shape
    for entry in (holding, waiting, waiting):
        ledger.move("ns", entry, -1)
    assert not ledger.in_use and not ledger.holding and ledger.waiting_for("ns", "q") == []
