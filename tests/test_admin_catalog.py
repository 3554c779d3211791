"""The admin catalog: its table in docs/admin-guard.md is generated, its IDs join the policy's."""

from __future__ import annotations

import re
from pathlib import Path

from webhook.admin.catalog import ADMIN_RULES, KUEUE_REFUSES, RULE_IDS, markdown_table, policy_from_mapping
from webhook.rules.catalog import RULES

DOC = (Path(__file__).resolve().parents[1] / "docs" / "admin-guard.md").read_text()


def test_the_docs_rule_table_is_generated_from_the_catalog() -> None:
    match = re.search(r"<!-- admin-rules:begin -->\n(.*?)\n<!-- admin-rules:end -->", DOC, re.S)
    assert match, "docs/admin-guard.md lost its rules markers"
    assert match.group(1) == markdown_table(), "regenerate the table: tpu-admission rules -o admin-markdown"


def test_the_catalog_is_spec_s_thirty_rules_each_declared_once() -> None:
    ids = [rule.id for rule in ADMIN_RULES]
    assert len(ids) == len(set(ids)) == 30
    assert not set(ids) & {rule.id for rule in RULES}
    assert set(ids) >= KUEUE_REFUSES
    for rule in ADMIN_RULES:
        assert rule.title and rule.why and rule.kinds and not rule.vap.exported, rule.id
        assert "" in rule.messages or len(rule.messages) > 1, rule.id


def test_the_policy_names_admin_rules_as_it_names_job_rules() -> None:
    assert set(RULE_IDS) == {rule.id for rule in (*RULES, *ADMIN_RULES)}
    policy = policy_from_mapping(
        {"rules": {"cq-companion-quota": "off"}, "exceptions": [{"rules": ["cq-dev-nominal-zero"], "reason": "x"}]}
    )
    assert policy.rules["cq-companion-quota"].value == "off"


def test_the_docs_pipeline_examples_are_valid_commands() -> None:
    import shlex

    import yaml

    from webhook.cli.main import build_parser

    commands = [
        line.strip().rstrip("\\").strip()
        for block in re.findall(r"```bash\n(.*?)```", DOC, re.S)
        for line in block.replace("\\\n", " ").splitlines()
        if line.strip().startswith("tpu-admission lint-queues")
    ]
    for block in re.findall(r"```yaml\n(.*?)```", DOC, re.S):
        data = yaml.safe_load(block)
        steps = data["jobs"]["lint-queues"]["steps"] if "jobs" in data else []
        script = data["lint-queues"]["script"] if "lint-queues" in data else []
        commands += [s["run"] for s in steps if "lint-queues" in s.get("run", "")]
        commands += [line for line in script if "lint-queues" in line]
    assert len(commands) == 3
    for command in commands:
        words = shlex.split(command.partition(" > ")[0])
        args = build_parser().parse_args(words[1:])
        assert args.command == "lint-queues"
