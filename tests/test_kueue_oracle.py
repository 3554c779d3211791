"""Our simulator against Kueue's own code (``tests/oracle/``, Go) on generated states.

The oracle is built with ``go build`` (Go's build cache keeps a rebuild to seconds) and
asked the same question as the simulator for every generated state; any difference that
no rule of ``oracle_known`` names fails the test, with the replayable case written out.
Without Go the tests skip with one line saying so; under ``CI=true`` they fail instead.
"""

from __future__ import annotations

from pathlib import Path

import pytest
from oracle_cases import draw_cases
from oracle_harness import (
    Run,
    ask_ours,
    build_oracle,
    built_for_tests,
    compare,
    compare_gate,
    kueue_version,
    run_cases,
    write_disagreement,
)

from webhook.quota.feasibility import Feasibility

#: cases a run of the suite checks, and the seed that draws them (the same cases every run)
CASES, SEED = 600, 45


@pytest.fixture(scope="module")
def oracle(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return built_for_tests(build_oracle, tmp_path_factory.mktemp("oracle") / "oracle", "the Kueue oracle")


@pytest.fixture(scope="module")
def run(oracle: Path, tmp_path_factory: pytest.TempPathFactory) -> Run:
    return run_cases(oracle, draw_cases(CASES, SEED), tmp_path_factory.mktemp("cases"))


def test_the_generated_states_agree_with_kueue(run: Run, tmp_path: Path) -> None:
    if run.disagreements:
        lines = [f"{write_disagreement(c, tmp_path)}: " + "; ".join(c.differences) for c in run.disagreements[:10]]
        pytest.fail(f"{run.line(kueue_version())}\n" + "\n".join(lines))
    assert len(run.comparisons) == CASES
    assert run.agreed + run.known == CASES
    outcomes = {c.kueue["outcome"] for c in run.comparisons}
    assert outcomes == {"admit", "preempt", "wait", "never"}, "the states should reach every outcome"


def test_the_gates_agree_with_kueue_at_zero_usage(run: Run, tmp_path: Path) -> None:
    """The gates' "could it ever fit" on each state without usage: ``fit`` where Kueue admits,
    ``nofit`` where it never would."""
    if run.gate_disagreements:
        lines = [f"{write_disagreement(g, tmp_path)}: {g.difference}" for g in run.gate_disagreements[:10]]
        pytest.fail(f"{run.gate_line(kueue_version())}\n" + "\n".join(lines))
    assert len(run.gates) == CASES
    assert {g.gate for g in run.gates} >= {"fit", "nofit"}


def test_a_gate_that_refuses_what_kueue_admits_is_a_disagreement(run: Run) -> None:
    admitted = next(g for g in run.gates if g.kueue["outcome"] == "admit")
    refused = compare_gate(admitted.folder, Feasibility((), "nofit"), admitted.kueue)
    assert refused.disagrees


def test_a_victim_kueue_names_that_we_do_not_is_a_disagreement(run: Run) -> None:
    """The comparison can fail: no known difference covers a victim set that differs."""
    preempting = next(c for c in run.comparisons if c.kueue["outcome"] == "preempt" and c.agrees)
    extra = {"workload": "default/someone-else", "reason": "InClusterQueue"}
    altered = dict(preempting.kueue, victims=[*preempting.kueue["victims"], extra])
    found = compare(preempting.folder, ask_ours(preempting.folder), altered)
    assert found.disagrees
    assert [d.split(":")[0] for d in found.differences] == ["victims"]


def test_the_same_seed_draws_the_same_cases() -> None:
    first, again = draw_cases(20, 3), draw_cases(20, 3)
    assert [c.state_yaml() + c.incoming_yaml() for c in first] == [c.state_yaml() + c.incoming_yaml() for c in again]
