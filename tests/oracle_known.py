"""The known differences between our simulator and Kueue's own code, in one place.

Each rule is a deliberate product choice, named, with its reason; ``docs/simulate.md``
lists them. A difference no rule explains is a disagreement: a bug to fix, never a rule
to add. The oracle answers one scheduling attempt of the incoming Workload as if it were
its queue's head; the rules below are where our answer says more than that attempt can.
"""

from __future__ import annotations

import re
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from webhook.quota.feasibility import Feasibility
from webhook.simulate.result import NEVER, WAIT, Result

#: whether our answer for the job as its queue's head (every pending Workload left out of the
#: state) agrees with Kueue's in full; asked only by the rule that needs it
AsHead = Callable[[], bool]


@dataclass(frozen=True)
class KnownDifference:
    name: str
    reason: str
    applies: Callable[[Result, dict[str, Any], AsHead], bool]


def _queue_in_front(result: Result, kueue: dict[str, Any], agrees_as_head: AsHead) -> bool:
    """Workloads wait ahead of the job, and our answer for the job as the queue's head is
    Kueue's in full: the whole difference is the queue in front."""
    return bool(result.position.ahead) and agrees_as_head()


def _podset_named(message: str, pattern: str) -> str | None:
    """The last podSet a message names: Kueue's stops at the podSet that fails, after those that
    only need preemption."""
    found = re.findall(pattern, message)
    return found[-1] if found else None


def _at_zero_usage(kueue: dict[str, Any]) -> tuple[str, str]:
    """Kueue's own outcome and reason for the same state with no Workload holding quota."""
    zero = kueue.get("atZeroUsage") or {}
    return str(zero.get("outcome", "")), str(zero.get("reason", ""))


def _two_blockers_in_one_podset(result: Result, kueue: dict[str, Any], _: AsHead) -> bool:
    """The same podSet: ours never NoMatchingFlavor; Kueue's never ExceedsMaxQuota, or a wait
    for quota where Kueue itself, with no usage, names NoMatchingFlavor."""
    if result.outcome != NEVER or result.reason != "NoMatchingFlavor":
        return False
    theirs = (kueue["outcome"], kueue.get("reason"))
    if theirs == ("wait", "WaitingForQuota"):
        if _at_zero_usage(kueue) != ("never", "NoMatchingFlavor"):
            return False
    elif theirs != ("never", "ExceedsMaxQuota"):
        return False
    ours = _podset_named(result.message, r"^podSet (\S+?):")
    theirs = _podset_named(str(kueue.get("message", "")), r"couldn't assign flavors to pod set (\S+?):")
    return ours is not None and ours == theirs


def _never_that_fits_at_zero_usage(result: Result, kueue: dict[str, Any], _: AsHead) -> bool:
    """Kueue's never, which its own attempt with no usage contradicts by admitting the job."""
    return (
        result.outcome == WAIT
        and result.reason == "WaitingForQuota"
        and kueue["outcome"] == "never"
        and _at_zero_usage(kueue)[0] == "admit"
    )


def _another_choice_holds(result: Result, kueue: dict[str, Any], _: AsHead) -> bool:
    """Kueue's never, with its reason, where another choice of flavors holds the job: ours is a wait
    with Kueue's reason (the engine gives a wait that reason only then)."""
    return (
        result.outcome == WAIT
        and result.reason in ("ExceedsMaxQuota", "NoMatchingFlavor")
        and (kueue["outcome"], kueue.get("reason")) == ("never", result.reason)
    )


RULES: tuple[KnownDifference, ...] = (
    KnownDifference(
        "queue-in-front",
        "Kueue's attempt is the one its scheduler makes for a queue's head; we answer for the job "
        "as submitted, behind the pending Workloads its ClusterQueue orders first: those that fit "
        "go first and take their room (BestEffortFIFO), the head blocks (StrictFIFO), and where "
        "that is not worked out the answer is unknown. The rule applies only when our answer for "
        "the same job as the queue's head (every pending Workload left out) is Kueue's in full.",
        _queue_in_front,
    ),
    KnownDifference(
        "two-blockers-in-one-podset",
        "A podSet with a resource group that has no flavor matching its pods is never admitted; "
        "when another of its groups fails too (its quota exceeded, or short for now), which reason "
        "Kueue names depends on the order it tries the podSet's resources (by a hash of their names "
        "in v0.19, with VectorizedResourceRequests; Go's random map order without it), stopping at "
        "the first that fails. We name NoMatchingFlavor, KEP-10852's more severe reason and the one "
        "that holds whatever the usage; for a wait, only when Kueue with no usage names it too.",
        _two_blockers_in_one_podset,
    ),
    KnownDifference(
        "never-that-fits-at-zero-usage",
        "Kueue's resolveNoFitReason folds the NoFit attempts of resource groups that did find a "
        "flavor into the reason, and can call a job never (ExceedsMaxQuota, NoMatchingFlavor) that "
        "its own attempt admits once usage is gone. Our never must mean never: we name the failing "
        "group's reason, WaitingForQuota. The rule applies only when Kueue admits the same job on "
        "the same state without usage.",
        _never_that_fits_at_zero_usage,
    ),
    KnownDifference(
        "never-another-choice-holds",
        "Kueue's attempt gives each podSet in turn the first flavor that fits and can leave a later "
        "one beyond its flavors' maximum (ExceedsMaxQuota) where another choice of flavors, which "
        "usage elsewhere leads Kueue to, holds them all. Our never is the capacity rules' answer "
        "(no choice could ever hold the job), so this is a wait that keeps Kueue's reason and says "
        "another choice could hold it; the gates let the same job through (gate-any-choice).",
        _another_choice_holds,
    ),
)


def explain(result: Result, kueue: dict[str, Any], agrees_as_head: AsHead) -> str | None:
    """The name of the rule that explains why ``result`` differs from Kueue's, if one does."""
    for rule in RULES:
        if rule.applies(result, kueue, agrees_as_head):
            return rule.name
    return None


@dataclass(frozen=True)
class KnownGateDifference:
    name: str
    reason: str
    applies: Callable[[Feasibility, dict[str, Any]], bool]


def _any_choice(assignment: Feasibility, kueue: dict[str, Any]) -> bool:
    return (
        assignment.status == "fit"
        and kueue["outcome"] == "never"
        and len(assignment.podsets) > 1
        and assignment.first_unassigned() is None
    )


GATE_RULES: tuple[KnownGateDifference, ...] = (
    KnownGateDifference(
        "gate-any-choice",
        "The gates ask whether any choice of eligible flavors could ever hold the podSets together; "
        "Kueue's attempt at zero usage gives each podSet in turn the first flavor that fits and can "
        "leave a later one without room that another choice (which usage elsewhere can lead Kueue to) "
        "would have. A job refused here might be admitted later, so the gates do not refuse it.",
        _any_choice,
    ),
)


def explain_gate(assignment: Feasibility, kueue: dict[str, Any]) -> str | None:
    """The name of the rule that explains why the gates' answer at zero usage differs from Kueue's."""
    for rule in GATE_RULES:
        if rule.applies(assignment, kueue):
            return rule.name
    return None
