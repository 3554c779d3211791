"""The answer's renderings: the webhook's one line per outcome and the text's first line."""

from __future__ import annotations

from decimal import Decimal

from webhook.simulate.result import Numbers, PodSetResult, Position, PreemptionResult, Result


def test_warning_lines_per_outcome() -> None:
    admit = Result("admit", "", "team-a", "fits", (PodSetResult("w", 16, {"google.com/tpu": "tpu7x"}),))
    assert admit.warning() == "[simulate] starts now on tpu7x"
    borrowing = Result(
        "admit",
        "",
        "team-a",
        "fits",
        (
            PodSetResult("w", 16, {"google.com/tpu": "tpu7x"}, Decimal(64), "google.com/tpu"),
            PodSetResult("head", 1, {"memory": "cpu-standard"}, Decimal(2**35), "memory"),
        ),
    )
    assert borrowing.warning() == "[simulate] starts now on cpu-standard, tpu7x, borrowing 64 chips, 32Gi memory"
    preempt = Result(
        "preempt",
        "",
        "team-a",
        "fits once",
        preemptions=(
            PreemptionResult("ns/x", "team-b", 100, "InCohortReclamation"),
            PreemptionResult("ns/y", "team-b", 100, "InCohortReclamation"),
            PreemptionResult("ns/z", "team-c", 100, "InCohortFairSharing"),
        ),
    )
    assert preempt.warning() == (
        "[simulate] will preempt 2 Workloads of team-b to reclaim quota, 1 Workload of team-c for fair sharing"
    )
    numbers = Numbers("tpu7x", "google.com/tpu", Decimal(64), Decimal(256), Decimal(256), Decimal(0), "tpu-pool")
    wait = Result("wait", "WaitingForQuota", "team-a", "m", position=Position(3, Decimal(96)), numbers=numbers)
    assert (
        wait.warning()
        == "[simulate] will wait: team-a uses 256 of 256 tpu7x chips, cohort tpu-pool lends 0; 3 Workloads ahead"
    )
    assert Result("never", "ExceedsMaxQuota", "q", "too big").warning() == "[simulate] will not start: too big"
    assert Result("unknown", "", "q", "Workloads are not in the state").warning() == (
        "[simulate] cannot tell: Workloads are not in the state"
    )


def test_text_lists_at_most_ten_victims_and_notes() -> None:
    victims = tuple(PreemptionResult(f"ns/w{i}", "team-b", 1, "InCohortReclamation") for i in range(12))
    notes = tuple(f"note {i}" for i in range(12))
    lines = Result(
        "preempt", "", "team-a", "fits once", preemptions=victims, kind="JobSet", name="j", namespace="ns", notes=notes
    ).text()
    assert lines.splitlines()[0] == "PREEMPT  JobSet ns/j"
    assert lines.count("  preempts ") == 10 and "  … and 2 more" in lines
    assert lines.count("  note: ") == 10


def test_fractional_amounts_stay_exact_in_json() -> None:
    result = Result("admit", "", "q", "fits", (PodSetResult("p", 1, {"cpu": "f"}, Decimal("0.5")),))
    assert result.to_json()["podSets"] == [{"name": "p", "count": 1, "flavors": {"cpu": "f"}, "borrows": "0.5"}]


def test_a_wait_is_short_unless_wide_and_an_admit_keeps_its_flavors() -> None:
    numbers = Numbers("tpu7x", "google.com/tpu", Decimal(64), Decimal(256), Decimal(256), Decimal(0), "tpu-pool")
    podsets = (PodSetResult("w", 16, {}),)
    wait = Result(
        "wait",
        "WaitingForQuota",
        "team-a",
        "needs 64 chips",
        podsets,
        position=Position(3, Decimal(96)),
        numbers=numbers,
        kind="JobSet",
        namespace="ns",
        name="j",
        notes=("a note",),
    )
    why = ["WAIT (WaitingForQuota)  JobSet ns/j", "  ClusterQueue team-a", "  needs 64 chips"]
    position = "  position: 3 Workloads ahead (96 chips), BestEffortFIFO"
    assert wait.text(wide=False).splitlines() == [*why, position, "  (3 more lines: -o wide)"]
    assert wait.text().splitlines() == [
        *why,
        "  podSet w ×16: no flavor fits yet",
        "  google.com/tpu on tpu7x: needs 64, queue uses 256 of nominal 256, cohort tpu-pool lends 0",
        position,
        "  note: a note",
    ]
    admit = Result("admit", "", "team-a", "fits", (PodSetResult("w", 16, {"google.com/tpu": "tpu7x"}),), name="j")
    assert admit.text(wide=False) == admit.text()
