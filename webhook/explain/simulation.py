"""What the explainer reads of a simulate result (SPEC §12), and its KEP-10852 reason.

The result is the simulator's and is passed through to the JSON answer untouched; here
only ``outcome``, ``reason``, ``clusterQueue``, ``position``, ``preemptions`` and
``message`` are read, each only when it has the expected type, so a result of a newer
shape never breaks the explanation.

The KEP-10852 token of a waiting job: the result's ``reason`` when it is one of the
KEP's tokens; else by outcome: ``admit`` and ``preempt`` are ``PendingEvaluation``
(nothing blocks it: Kueue's next scheduling cycle admits it, after issuing the
preemptions), ``wait`` is ``WaitingForQuota``. ``never`` and ``unknown`` without a token
give none, and the Workload's stored reason stands.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any, Final

from webhook.explain.conditions import KEP_10852_REASONS

ADMIT: Final = "admit"
PREEMPT: Final = "preempt"
WAIT: Final = "wait"
NEVER: Final = "never"
UNKNOWN: Final = "unknown"
_BY_OUTCOME: Final = {ADMIT: "PendingEvaluation", PREEMPT: "PendingEvaluation", WAIT: "WaitingForQuota"}


def _text(value: Any) -> str | None:
    return value if isinstance(value, str) and value else None


def _count(value: Any) -> int | None:
    return value if isinstance(value, int) and not isinstance(value, bool) and value >= 0 else None


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
            chips = f", {self.chips_ahead} chips" if self.chips_ahead is not None else ""
            points.append(f"Position {self.ahead + 1} in its ClusterQueue: {self.ahead} Workload(s) ahead{chips}.")
        if self.message:
            points.append(self.message.rstrip(".") + ".")
        return points


def read_simulation(result: Mapping[str, Any] | None) -> SimulationView | None:
    """The parts of ``result`` the explainer uses; ``None`` when there is no result."""
    if result is None:
        return None
    position = result.get("position")
    position = position if isinstance(position, Mapping) else {}
    preemptions = result.get("preemptions")
    return SimulationView(
        _text(result.get("outcome")),
        _text(result.get("reason")),
        _text(result.get("clusterQueue")),
        _count(position.get("ahead")),
        _count(position.get("chipsAhead")),
        len(preemptions) if isinstance(preemptions, list) else 0,
        _text(result.get("message")),
    )
