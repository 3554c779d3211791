"""Kueue's Workload conditions as the explainer reads them: types, reasons, one record each.

The names are Kueue's (``apis/kueue/v1beta2/workload_types.go``), kept here as constants so
the state machine reads as the RFC's table does. A condition list as stored is untrusted
JSON: ``read_conditions`` keeps the well-formed entries and skips the rest (a condition
without a string ``type`` says nothing), and when a type repeats the last one wins, as
``apimeta.FindStatusCondition`` would find only one. Messages are kept to
``MAX_MESSAGE`` characters: the API server allows 32768, and an answer quotes them.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any, Final

# condition types
QUOTA_RESERVED: Final = "QuotaReserved"
ADMITTED: Final = "Admitted"
EVICTED: Final = "Evicted"
PREEMPTED: Final = "Preempted"
REQUEUED: Final = "Requeued"
FINISHED: Final = "Finished"
PODS_READY: Final = "PodsReady"

# Evicted reasons (Kueue writes ``Deactivated`` + ``DueTo<cause>`` when Kueue itself
# deactivated the Workload; ``InactiveWorkload`` is the reason before v0.9)
EVICTED_BY_PREEMPTION: Final = "Preempted"
EVICTED_BY_DEACTIVATION: Final = "Deactivated"
EVICTED_INACTIVE_LEGACY: Final = "InactiveWorkload"

# Finished reasons
FINISHED_FAILED: Final = "Failed"

# Preempted reasons
IN_CLUSTER_QUEUE: Final = "InClusterQueue"
IN_COHORT_RECLAMATION: Final = "InCohortReclamation"
IN_COHORT_FAIR_SHARING: Final = "InCohortFairSharing"
IN_COHORT_RECLAIM_WHILE_BORROWING: Final = "InCohortReclaimWhileBorrowing"

#: The QuotaReserved=False reasons of KEP-10852 (Inadmissible Workloads Observability),
#: workload-wide ones first, then those of the nominated flavor, then ``PendingEvaluation``.
KEP_10852_REASONS: Final[tuple[str, ...]] = (
    "Deactivated",
    "OnHold",
    "Misconfigured",
    "NoMatchingFlavor",
    "Suspended",
    "AdmissionGated",
    "WaitingForPodsReady",
    "ExceedsMaxQuota",
    "WaitingForQuota",
    "TopologyPlacementFailed",
    "WaitingForPreemptedWorkloads",
    "PendingEvaluation",
)

MAX_MESSAGE: Final = 1024

#: AdmissionCheck state that lets a Workload be admitted
CHECK_READY: Final = "Ready"


@dataclass(frozen=True, slots=True)
class Condition:
    """One ``status.conditions`` entry; ``since`` is its ``lastTransitionTime`` as written."""

    type: str
    status: str
    reason: str = ""
    message: str = ""
    since: str | None = None

    @property
    def true(self) -> bool:
        return self.status == "True"


@dataclass(frozen=True, slots=True)
class AdmissionCheckState:
    """One ``status.admissionChecks`` entry (the slice check of RFC-0033 is one)."""

    name: str
    state: str
    message: str = ""
    since: str | None = None


def _text(value: Any) -> str:
    return value if isinstance(value, str) else ""


def _message(value: Any) -> str:
    text = _text(value)
    return text if len(text) <= MAX_MESSAGE else text[: MAX_MESSAGE - 1] + "…"


def _time(value: Any) -> str | None:
    return value if isinstance(value, str) and value else None


def read_conditions(entries: Any) -> dict[str, Condition]:
    """The conditions of a ``status.conditions`` list by type (malformed entries skipped)."""
    found: dict[str, Condition] = {}
    for entry in entries if isinstance(entries, list) else ():
        if not isinstance(entry, Mapping) or not isinstance(entry.get("type"), str):
            continue
        found[entry["type"]] = Condition(
            entry["type"],
            _text(entry.get("status")),
            _text(entry.get("reason")),
            _message(entry.get("message")),
            _time(entry.get("lastTransitionTime")),
        )
    return found


def read_admission_checks(entries: Any) -> list[AdmissionCheckState]:
    """The ``status.admissionChecks`` of a Workload, in order (malformed entries skipped)."""
    return [
        AdmissionCheckState(
            entry["name"],
            _text(entry.get("state")),
            _message(entry.get("message")),
            _time(entry.get("lastTransitionTime")),
        )
        for entry in (entries if isinstance(entries, list) else ())
        if isinstance(entry, Mapping) and isinstance(entry.get("name"), str)
    ]


def is_deactivation(reason: str) -> bool:
    """Whether an Evicted reason says the Workload was deactivated (``spec.active: false``)."""
    return reason.startswith(EVICTED_BY_DEACTIVATION) or reason == EVICTED_INACTIVE_LEGACY
