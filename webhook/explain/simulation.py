"""What the explainer reads of the simulator's answer, and its KEP-10852 reason.

The answer is the simulator's own ``Result``, written into the JSON answer as SPEC §12
writes it; here only its outcome, reason, ClusterQueue, position, preemptions and message
are read.

The KEP-10852 token of a waiting job: the result's ``reason`` when it is one of the
KEP's tokens; else by outcome: ``admit`` and ``preempt`` are ``PendingEvaluation``
(nothing blocks it: Kueue's next scheduling cycle admits it, after issuing the
preemptions), ``wait`` is ``WaitingForQuota``. ``never`` and ``unknown`` without a token
give none, and the Workload's stored reason stands.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Final

from webhook.explain.conditions import KEP_10852_REASONS
from webhook.simulate.result import Result

ADMIT: Final = "admit"
PREEMPT: Final = "preempt"
WAIT: Final = "wait"
NEVER: Final = "never"
UNKNOWN: Final = "unknown"
_BY_OUTCOME: Final = {ADMIT: "PendingEvaluation", PREEMPT: "PendingEvaluation", WAIT: "WaitingForQuota"}
#: the outcomes of a job that stands in line (it starts now, or waits): the others have no place to tell
_IN_LINE: Final = frozenset({ADMIT, PREEMPT, WAIT})


@dataclass(frozen=True, slots=True)
class SimulationView:
    outcome: str | None
    reason: str | None
    cluster_queue: str | None
    ahead: int | None
    chips_ahead: int | None
    preemptions: int
    message: str | None

    @property
    def kep_reason(self) -> str | None:
        if self.reason in KEP_10852_REASONS:
            return self.reason
        return _BY_OUTCOME.get(self.outcome or "")

    def points(self) -> list[str]:
        """The simulation's answer in sentences (see ``webhook.explain.explainer``)."""
        points = []
        token = f" ({self.kep_reason})" if self.kep_reason else ""
        if self.outcome == ADMIT:
            points.append(f"As if submitted now, it would start at Kueue's next scheduling cycle{token}.")
        elif self.outcome == PREEMPT:
            points.append(
                f"As if submitted now, it would start at Kueue's next scheduling cycle after preempting "
                f"{self.preemptions} Workload(s){token}."
            )
        elif self.outcome == WAIT:
            points.append(f"As if submitted now, it would wait{token}.")
        elif self.outcome == NEVER:
            points.append(f"As it is, it can never be admitted{token}.")
        elif self.outcome == UNKNOWN:
            points.append("The simulation cannot say what Kueue would do with it now.")
        if self.ahead is not None:
            points.append(self.position())
        if self.message:
            points.append(self.message.rstrip(".") + ".")
        return points

    def position(self) -> str:
        """Where it stands in its ClusterQueue, the place and the count ahead saying the same thing."""
        ahead = self.ahead or 0
        if ahead == 0:
            return "First in line in its ClusterQueue: no Workload is ahead of it."
        chips = f" ({self.chips_ahead} chips)" if self.chips_ahead is not None else ""
        workloads = "1 Workload is" if ahead == 1 else f"{ahead} Workloads are"
        return f"Number {ahead + 1} in line in its ClusterQueue: {workloads} ahead of it{chips}."

    def next_step(self, cluster_queue: str | None) -> str | None:
        """What the person can do about a waiting job, from the simulation's answer; ``None`` when it
        says nothing that decides it (``unknown``, or an answer of a newer shape)."""
        queue = f"ClusterQueue {cluster_queue}" if cluster_queue else "its ClusterQueue"
        if self.outcome in (ADMIT, PREEMPT):
            return "nothing: Kueue admits it at its next scheduling cycle."
        if self.outcome == WAIT:
            return _WAIT_STEPS.get(self.reason or "", _WAIT_STEP).format(queue=queue)
        if self.outcome == NEVER:
            return _NEVER_STEPS.get(self.reason or "", _NEVER_STEP).format(queue=queue)
        return None


_WAIT_STEP: Final = "wait for quota to free up in {queue}, or ask for a smaller slice to start sooner."
_WAIT_STEPS: Final = {
    "StrictFIFO": "wait: {queue} is StrictFIFO and the Workload at its head goes first.",
    "Suspended": "ask the queue's owner to resume it (its stopPolicy is not None); it cannot start before.",
    "TopologyPlacementFailed": "wait for whole node pools to free up, or ask for a smaller slice.",
}
_NEVER_STEP: Final = "fix the job or its queue as the detail says, and resubmit: as it is, it never starts."
_NEVER_STEPS: Final = {
    "ExceedsMaxQuota": "ask for a smaller slice: it asks for more than {queue} could ever hold, borrowing included.",
    "NoMatchingFlavor": "fix the job's resources or node selectors, or its queue: no flavor of {queue} can hold it.",
    "Misconfigured": "fix the queue the job names (its LocalQueue or ClusterQueue), or the job, and resubmit.",
    "Deactivated": "set the Workload's spec.active back to true.",
}


def read_simulation(result: Result | None) -> SimulationView | None:
    """The parts of ``result`` the explainer uses; ``None`` when there is no result. A job that
    never fits, or one the simulator cannot place, has no place in line to tell."""
    if result is None:
        return None
    chips = result.position.chips_ahead
    queued = result.outcome in _IN_LINE
    return SimulationView(
        result.outcome or None,
        result.reason or None,
        result.cluster_queue or None,
        result.position.ahead if queued else None,
        int(chips) if queued and chips == chips.to_integral_value() else None,
        len(result.preemptions),
        result.message or None,
    )
