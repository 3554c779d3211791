"""What is read of a simulate result (SPEC §12): typed parts only, and the KEP-10852 token."""

from __future__ import annotations

from typing import Any

import pytest
from explain_builders import simulation

from webhook.explain.simulation import SimulationView, read_simulation


def test_only_well_typed_parts_are_read() -> None:
    odd: dict[str, Any] = {
        "outcome": 3,
        "reason": None,
        "clusterQueue": "",
        "position": {"ahead": -1, "chipsAhead": "0.5"},
        "preemptions": "two",
        "message": ["x"],
    }
    assert read_simulation(odd) == SimulationView(None, None, None, None, None, 0, None)
    assert read_simulation({}) == SimulationView(None, None, None, None, None, 0, None)
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
            {**simulation("preempt"), "preemptions": [{"workload": "b/x"}, {"workload": "b/y"}]},
            [
                "As if submitted now, it would start at Kueue's next scheduling cycle after preempting 2 "
                "Workload(s) (PendingEvaluation)."
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
            ["As it is, it can never be admitted (ExceedsMaxQuota).", "needs 1024 chips, the cohort has 512."],
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
def test_points_per_outcome(result: dict[str, Any], points: list[str]) -> None:
    view = read_simulation(result)
    assert view is not None
    assert view.points() == points
