"""Every admin rule against its allowed and refused examples (admin_rule_examples.yaml)."""

from __future__ import annotations

import pytest
from admin_fixtures import CASES, AdminCase
from support import assert_example_findings

from webhook.admin import AdminRule
from webhook.admin.catalog import ADMIN_RULES, ADMIN_RULES_BY_ID


@pytest.mark.parametrize("case", CASES, ids=lambda c: c.id)
def test_admin_rule_example(case: AdminCase) -> None:
    assert_example_findings(case.rule, case.fires, case.findings(), case.path, case.count, case.message)


@pytest.mark.parametrize("rule", ADMIN_RULES, ids=lambda r: r.id)
def test_every_admin_rule_has_an_allowed_and_a_refused_example(rule: AdminRule) -> None:
    outcomes = {case.fires for case in CASES if case.rule == rule.id}
    assert outcomes == {True, False}, f"{rule.id} needs an allowed and a refused example"


def test_examples_name_only_admin_rules() -> None:
    assert {case.rule for case in CASES} <= set(ADMIN_RULES_BY_ID)
