"""The known differences between our simulator and Kueue's own code, in one place.

Each rule is a deliberate product choice, named, with its reason; ``docs/simulate.md``
lists them. A difference no rule explains is a disagreement: a bug to fix, never a rule
to add. The oracle answers one scheduling attempt of the incoming Workload as if it were
its queue's head; the rules below are where our answer says more than that attempt can.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from webhook.simulate.result import UNKNOWN, WAIT, Result


@dataclass(frozen=True)
class KnownDifference:
    name: str
    reason: str
    applies: Callable[[Result, dict[str, Any]], bool]


def _queue_in_front(result: Result, kueue: dict[str, Any]) -> bool:
    """Ours is unknown only for the Workloads ahead: had it been the head, we say what Kueue says."""
    held = result.outcome == UNKNOWN or (result.outcome == WAIT and result.reason == "StrictFIFO")
    if not held or not result.position.ahead or kueue["outcome"] not in ("admit", "preempt"):
        return False
    flavors = [dict(p.flavors) for p in result.podsets]
    return flavors == [p["flavors"] for p in kueue.get("podSets") or []]


RULES: tuple[KnownDifference, ...] = (
    KnownDifference(
        "queue-in-front",
        "Kueue's attempt is the one its scheduler makes for a queue's head; we answer for the job "
        "as submitted, behind the pending Workloads its ClusterQueue orders first. When one of them "
        "could take the room first, which of them Kueue admits depends on the next cycles, so our "
        "answer is unknown rather than Kueue's head-of-queue decision; in a StrictFIFO queue it waits for them.",
        _queue_in_front,
    ),
)


def explain(folder: Path, result: Result, kueue: dict[str, Any]) -> str | None:
    """The name of the rule that explains why ``result`` differs from Kueue's, if one does."""
    for rule in RULES:
        if rule.applies(result, kueue):
            return rule.name
    return None
