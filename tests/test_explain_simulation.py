"""What the explainer reads of the simulator's answer, and the KEP-10852 token."""

from __future__ import annotations

import dataclasses
from decimal import Decimal

import pytest
from explain_builders import simulation

from webhook.explain.simulation import SimulationView, read_simulation
from webhook.simulate.result import Position, Result


def test_empty_parts_read_as_absent_and_a_fraction_of_a_chip_is_not_counted() -> None:
    """An empty reason, ClusterQueue or message says nothing; chips ahead are said only when whole."""
    answer = dataclasses.replace(simulation("wait", cluster_queue=""), position=Position(2, Decimal("0.5")))
    assert read_simulation(answer) == SimulationView("wait", None, None, 2, None, 0, None)
    assert read_simulation(simulation("never", ahead=3)) == SimulationView("never", None, "team-a", None, None, 0, None)
    assert read_simulation(simulation("wait", "StrictFIFO", 1, 64, "m", "q")) == SimulationView(
        "wait", "StrictFIFO", "q", 1, 64, 0, "m"
    )
    assert read_simulation(None) is None


@pytest.mark.parametrize(
    ("result", "points"),
    [
        (
            simulation("admit", ahead=0, chips_ahead=0),
            [
                "As if submitted now, it would start at Kueue's next scheduling cycle (PendingEvaluation).",
                "First in line in its ClusterQueue: no Workload is ahead of it.",
            ],
        ),
        (
            simulation("preempt", ahead=1, chips_ahead=64, preempting=("b/x", "b/y")),
            [
                "As if submitted now, it would start at Kueue's next scheduling cycle after preempting 2 "
                "Workload(s) (PendingEvaluation).",
                "Number 2 in line in its ClusterQueue: 1 Workload is ahead of it (64 chips).",
            ],
        ),
        (
            simulation("wait", "WaitingForQuota", 2, 128, "team-a uses 256 of 256 tpu7x chips"),
            [
                "As if submitted now, it would wait (WaitingForQuota).",
                "Number 3 in line in its ClusterQueue: 2 Workloads are ahead of it (128 chips).",
                "team-a uses 256 of 256 tpu7x chips.",
            ],
        ),
        (
            simulation("never", "ExceedsMaxQuota", message="needs 1024 chips, the cohort has 512."),
            [
                "As it is, it can never be admitted (ExceedsMaxQuota).",
                "needs 1024 chips, the cohort has 512.",
            ],
        ),
        (
            simulation("unknown", "", message="LocalQueues are not in the state"),
            [
                "The simulation cannot say what Kueue would do with it now.",
                "LocalQueues are not in the state.",
            ],
        ),
    ],
)
def test_points_per_outcome(result: Result, points: list[str]) -> None:
    view = read_simulation(result)
    assert view is not None
    assert view.points() == points
