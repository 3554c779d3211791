"""Every admin rule against its allowed and refused examples (admin_rule_examples.yaml)."""

from __future__ import annotations

import pytest
from admin_fixtures import CASES, AdminCase

from webhook.admin import AdminRule
from webhook.admin.catalog import ADMIN_RULES, ADMIN_RULES_BY_ID


@pytest.mark.parametrize("case", CASES, ids=lambda c: c.id)
def test_admin_rule_example(case: AdminCase) -> None:
    found = case.findings()
    if not case.fires:
        assert found == [], [f.line() for f in found]
        return
    assert found, f"{case.rule} did not fire"
    first = found[0]
    if case.path is not None:
        assert str(first.path) == case.path, first.line()
    if case.count is not None:
        assert len(found) == case.count, [f.line() for f in found]
    if case.message is not None:
        assert case.message in first.message, first.message
    assert first.fix, "every finding says how to fix it"
    for finding in found:  # "<what is wrong>; <how to fix>": the one "; " separates the two
        assert "; " not in finding.problem and "; " not in finding.fix, finding.line()


@pytest.mark.parametrize("rule", ADMIN_RULES, ids=lambda r: r.id)
def test_every_admin_rule_has_an_allowed_and_a_refused_example(rule: AdminRule) -> None:
    outcomes = {case.fires for case in CASES if case.rule == rule.id}
    assert outcomes == {True, False}, f"{rule.id} needs an allowed and a refused example"


def test_examples_name_only_admin_rules() -> None:
    assert {case.rule for case in CASES} <= set(ADMIN_RULES_BY_ID)
