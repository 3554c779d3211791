"""The restated Kueue tables of the simulator's tests, run through Kueue's own code too.

Each row of the preemption tables (``oracle_tables``) is written as an oracle case and both
our simulator and Kueue (``tests/oracle/``) decide it; any difference that no rule of
``oracle_known`` names fails. Rows the oracle cannot express are listed in ``NOT_COMPARED``
with the reason and counted. Without Go the tests skip with one line; under ``CI=true`` they
fail instead.
"""

from __future__ import annotations

from pathlib import Path

import pytest
from oracle_harness import (
    Comparison,
    OracleUnavailable,
    ask_kueue,
    ask_ours,
    build_oracle,
    built_for_tests,
    compare,
    kueue_version,
    write_case,
    write_disagreement,
)
from oracle_tables import Recorded, TableCase, preemption_tables, recorded_calls, to_case

from tests import test_kueue_flavorassigner, test_simulate_engine

#: table rows left out of the oracle run, each with why (besides those the recording names)
_CYCLE = "a cohort cycle: Kueue's cache will not build such a state, so the oracle has no answer"
NOT_COMPARED: dict[str, str] = {
    "tests.test_simulate_engine::test_cohort_cycle_is_reported_not_looped_on #0": _CYCLE,
    "tests.test_simulate_engine::test_cohort_cycle_is_reported_not_looped_on #1": _CYCLE,
}


@pytest.fixture(scope="module")
def oracle(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return built_for_tests(build_oracle, tmp_path_factory.mktemp("oracle") / "oracle", "the Kueue oracle")


@pytest.fixture(scope="module")
def engine_calls() -> Recorded:
    """Every ``simulate`` call of the engine's tests and ``assign`` call of the assigner's, recorded."""
    engine, assigner = recorded_calls(test_simulate_engine), recorded_calls(test_kueue_flavorassigner)
    return Recorded(engine.rows + assigner.rows, {**engine.not_compared, **assigner.not_compared})


@pytest.fixture(scope="module")
def tables(engine_calls: Recorded) -> list[TableCase]:
    return preemption_tables() + engine_calls.rows


@pytest.fixture(scope="module")
def not_compared(engine_calls: Recorded) -> dict[str, str]:
    return {**NOT_COMPARED, **engine_calls.not_compared}


@pytest.fixture(scope="module")
def comparisons(
    oracle: Path, tables: list[TableCase], not_compared: dict[str, str], tmp_path_factory: pytest.TempPathFactory
) -> dict[str, Comparison]:
    workdir = tmp_path_factory.mktemp("tables")
    compared = [t for t in tables if t.name not in not_compared]
    folders = [write_case(to_case(t), workdir / f"row-{i:03d}") for i, t in enumerate(compared)]
    decisions = ask_kueue(oracle, folders)
    unread = [
        f"{t.name} ({f}): {d.get('message')}"
        for t, f, d in zip(compared, folders, decisions, strict=True)
        if d.get("outcome") == "error"
    ]
    if unread:
        raise OracleUnavailable("the oracle could not read these rows:\n" + "\n".join(unread))
    return {
        table.name: compare(folder, ask_ours(folder), decision)
        for table, folder, decision in zip(compared, folders, decisions, strict=True)
    }


def test_the_restated_tables_agree_with_kueue(comparisons: dict[str, Comparison], tmp_path: Path) -> None:
    found = [(name, c) for name, c in comparisons.items() if c.disagrees]
    if found:
        lines = [f"{name} ({write_disagreement(c, tmp_path)}): " + "; ".join(c.differences) for name, c in found]
        pytest.fail(
            f"{len(found)}/{len(comparisons)} table rows disagree with Kueue {kueue_version()}\n" + "\n".join(lines)
        )


def test_every_row_is_compared_or_named(
    tables: list[TableCase], comparisons: dict[str, Comparison], not_compared: dict[str, str]
) -> None:
    """No row is dropped silently: each is compared or listed with its reason."""
    names = [t.name for t in tables]
    assert len(set(names)) == len(names)
    assert set(NOT_COMPARED) <= set(names), "a row left out that no table holds"
    assert set(comparisons) | set(NOT_COMPARED) == set(names)
    assert all(not_compared.values())


def test_the_engine_s_simulate_calls_are_recorded(engine_calls: Recorded) -> None:
    """Every ``simulate`` call of the engine's tests is a row or named with why it is not one."""
    assert engine_calls.rows, "the engine's tests ask simulate of states the oracle can read"
    assert engine_calls.not_compared and all(engine_calls.not_compared.values())
    names = [r.name for r in engine_calls.rows] + list(engine_calls.not_compared)
    assert len(set(names)) == len(names)


def test_the_rows_reach_every_outcome_and_many_preemptions(comparisons: dict[str, Comparison]) -> None:
    """The rows reach each of Kueue's outcomes, and the preemption rows make a third at least."""
    outcomes = [c.kueue["outcome"] for c in comparisons.values()]
    assert set(outcomes) == {"admit", "preempt", "wait", "never"}
    assert outcomes.count("preempt") >= len(outcomes) // 3
