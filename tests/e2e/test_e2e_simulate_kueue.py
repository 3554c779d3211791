"""RFC-0033 4.4's six preemption scenarios played against Kueue's manager: ``simulate
--kubeconfig`` predicts on the live cluster before each submit, and the Workloads Kueue
updates afterwards say what it did; the two must be the same decision (outcome and victims)."""

from __future__ import annotations

import os
from concurrent.futures import ThreadPoolExecutor

import pytest
from controlplane import ControlPlane
from scenarios import Decision, Job, Scenario, Team, draw, predict, set_up, submit_and_observe

pytestmark = pytest.mark.e2e

G, BE = "guaranteed", "best-effort"
TEAMS = (Team("team-a"), Team("team-b"), Team("team-c"))


def rfc(name: str, before: tuple[Job, ...], incoming: Job) -> Scenario:
    return Scenario(name, TEAMS, before, incoming)


SCENARIOS = [
    (
        rfc("s1", (Job("a-1", "team-a", 128, G),), Job("new", "team-b", 384, BE)),
        Decision("admit"),
    ),
    (
        rfc(
            "s2",
            (
                Job("a-1", "team-a", 128, G),
                Job("b-1", "team-b", 256, BE),
                Job("b-2", "team-b", 64, BE),
                Job("b-3", "team-b", 64, BE),
                Job("c-1", "team-c", 256, G),
            ),
            Job("new", "team-a", 128, G),
        ),
        Decision("preempt", frozenset({("b-2", "InCohortReclamation"), ("b-3", "InCohortReclamation")})),
    ),
    (
        rfc(
            "s3",
            (
                Job("a-1", "team-a", 256, G),
                Job("b-1", "team-b", 256, BE),
                Job("b-2", "team-b", 128, BE),
                Job("c-1", "team-c", 128, BE),
            ),
            Job("new", "team-a", 100, G),
        ),
        Decision("preempt", frozenset({("b-2", "InCohortFairSharing")})),
    ),
    (
        rfc(
            "s4",
            (
                Job("a-high", "team-a", 156, G),
                Job("a-low", "team-a", 100, BE),
                Job("b-1", "team-b", 256, BE),
                Job("c-1", "team-c", 256, BE),
            ),
            Job("new", "team-a", 100, G),
        ),
        Decision("preempt", frozenset({("a-low", "InClusterQueue")})),
    ),
    (
        rfc(
            "s5",
            (
                Job("a-1", "team-a", 256, BE),
                Job("a-2", "team-a", 128, BE),
                Job("b-1", "team-b", 156, BE),
                Job("c-1", "team-c", 228, G),
            ),
            Job("new", "team-b", 100, BE),
        ),
        Decision("not now"),
    ),
    (
        rfc(
            "s6",
            (
                Job("a-base", "team-a", 256, BE),
                Job("a-1", "team-a", 32, BE),
                Job("a-2", "team-a", 32, BE),
                Job("a-3", "team-a", 32, BE),
                Job("b-base", "team-b", 256, BE),
                Job("b-1", "team-b", 24, BE),
                Job("c-1", "team-c", 136, G),
            ),
            Job("new", "team-c", 64, G),
        ),
        Decision("preempt", frozenset({("a-2", "InCohortReclamation"), ("a-3", "InCohortReclamation")})),
    ),
]


@pytest.mark.parametrize(("scenario", "expected"), SCENARIOS, ids=[s.name for s, _ in SCENARIOS])
def test_simulate_predicts_what_kueue_does(control_plane: ControlPlane, scenario: Scenario, expected: Decision) -> None:
    set_up(control_plane, scenario)
    predicted, answer = predict(control_plane, scenario)
    observed, workload = submit_and_observe(control_plane, scenario)
    assert (predicted, observed) == (expected, expected), (answer, workload.get("status"))


#: the drawn run: its seed (``E2E_SEED`` picks another) and size
SEED = int(os.environ.get("E2E_SEED", "46"))
DRAWN = 50
#: scenarios played at once: each has its own namespace, cohort and queues, so they do not meet
AT_ONCE = 4


def play(plane: ControlPlane, scenario: Scenario) -> tuple[Scenario, Decision, Decision, str]:
    set_up(plane, scenario)
    predicted, answer = predict(plane, scenario)
    observed, workload = submit_and_observe(plane, scenario)
    conditions = workload.get("status", {}).get("conditions", [])
    return scenario, predicted, observed, f"simulate: {answer.get('message')!r}; Kueue: {conditions}"


def test_simulate_predicts_what_kueue_does_on_drawn_scenarios(control_plane: ControlPlane) -> None:
    """Fifty scenarios drawn from one seed, played a few at a time; every disagreement is listed."""
    scenarios = [draw(SEED, index) for index in range(DRAWN)]
    with ThreadPoolExecutor(AT_ONCE) as pool:
        played = list(pool.map(lambda scenario: play(control_plane, scenario), scenarios))
    disagreements = [
        f"{scenario.name} (seed {SEED}): simulate {predicted}, Kueue {observed}; {detail}"
        for scenario, predicted, observed, detail in played
        if predicted != observed
    ]
    assert disagreements == []
    # the run is worth something: every kind of outcome occurred
    assert {observed.outcome for _, _, observed, _ in played} == {"admit", "preempt", "not now"}
