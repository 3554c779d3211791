"""The PGO training run (``bench/pgo_train.py``): what it feeds the instrumented build."""

from __future__ import annotations

import sys
from pathlib import Path

import pytest

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "bench"))

import pgo_train

import webhook.engine.decision
from webhook.engine.decision import decide
from webhook.rules.catalog import load_policy, policy_from_mapping
from webhook.serving.app import admission_facts
from webhook.wire.reviews import parse_review


def test_the_corpus_trains_allowed_denied_and_patched_decisions_of_every_kind() -> None:
    policies = {"static": load_policy(None), "dynamic": policy_from_mapping({"mode": "dynamic"})}
    seen = set()
    kinds = set()
    for mode, body in pgo_train.bodies():
        request = parse_review(body)
        kinds.add(request.kind)
        decision = decide(request.object, admission_facts(request, "mutate", None), policies[mode])
        seen.add("patched" if decision.patch else "allowed" if decision.allowed else "denied")
    assert kinds == {"JobSet", "Job", "Deployment"}
    assert seen == {"allowed", "denied", "patched"}


def test_training_refuses_to_run_on_pure_python(capsys: pytest.CaptureFixture[str]) -> None:
    """A pure run writes no profile: the "use" build would silently be a plain one."""
    code = pgo_train.main(["--rounds", "1"])
    if str(webhook.engine.decision.__file__).endswith(".so"):  # the suite run against the compiled build
        assert code == 0 and "decisions over" in capsys.readouterr().err
    else:
        assert code == 2 and "is not compiled" in capsys.readouterr().err


def test_the_trainer_reads_each_fixture_in_the_mode_the_rule_examples_use() -> None:
    from rule_cases import DYNAMIC_FIXTURES

    assert pgo_train.DYNAMIC == DYNAMIC_FIXTURES
