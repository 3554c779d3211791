"""Reading Kueue's conditions and AdmissionCheck states out of untrusted stored JSON."""

from __future__ import annotations

import pytest

from webhook.explain.conditions import (
    MAX_MESSAGE,
    AdmissionCheckState,
    Condition,
    is_deactivation,
    read_admission_checks,
    read_conditions,
)


def test_conditions_by_type_malformed_entries_skipped_last_of_a_type_wins() -> None:
    entries = [
        {"type": "QuotaReserved", "status": "False", "reason": "Pending"},
        "not a condition",
        {"status": "True"},
        {"type": 3, "status": "True"},
        {"type": "Evicted", "status": "True", "reason": 7, "message": None, "lastTransitionTime": ""},
        {"type": "QuotaReserved", "status": "True", "reason": "QuotaReserved", "lastTransitionTime": "t"},
    ]
    assert read_conditions(entries) == {
        "QuotaReserved": Condition("QuotaReserved", "True", "QuotaReserved", "", "t"),
        "Evicted": Condition("Evicted", "True", "", "", None),
    }


@pytest.mark.parametrize("entries", [None, {}, "x", 3])
def test_conditions_that_are_not_a_list_are_none(entries: object) -> None:
    assert read_conditions(entries) == {}


def test_admission_checks_in_order_malformed_skipped() -> None:
    entries = [
        {"name": "tpu7x-slice", "state": "Pending", "message": "creating", "lastTransitionTime": "t"},
        {"state": "Ready"},
        {"name": "other", "state": "Ready"},
    ]
    assert read_admission_checks(entries) == [
        AdmissionCheckState("tpu7x-slice", "Pending", "creating", "t"),
        AdmissionCheckState("other", "Ready", "", None),
    ]
    assert read_admission_checks({"name": "x"}) == []


@pytest.mark.parametrize(
    ("reason", "expected"),
    [
        # pkg/workload/evict IsEvictedByDeactivation: a prefix match on "Deactivated"
        ("Deactivated", True),
        ("DeactivatedDueToRequeuingLimitExceeded", True),
        ("DeactivatedDueToMaximumExecutionTimeExceeded", True),
        ("InactiveWorkload", True),  # the reason before v0.9
        ("Preempted", False),
        ("PodsReadyTimeout", False),
        ("", False),
    ],
)
def test_deactivation_reasons(reason: str, expected: bool) -> None:
    assert is_deactivation(reason) is expected


def test_messages_are_kept_short_enough_to_quote() -> None:
    long = "m" * 5000
    condition = read_conditions([{"type": "Evicted", "status": "True", "message": long}])["Evicted"]
    check = read_admission_checks([{"name": "tpu7x-slice", "message": long}])[0]
    assert condition.message == check.message == "m" * (MAX_MESSAGE - 1) + "…"
