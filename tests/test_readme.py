"""The README keeps its promises: the rule table is the catalog's, the test command is CI's."""

from __future__ import annotations

import re
from pathlib import Path

from webhook.catalog import markdown_table

ROOT = Path(__file__).resolve().parents[1]
README = (ROOT / "README.md").read_text()


def test_rule_table_is_generated_from_the_catalog() -> None:
    match = re.search(r"<!-- rules:begin -->\n(.*?)\n<!-- rules:end -->", README, re.S)
    assert match, "README.md lost its rules markers"
    assert match.group(1) == markdown_table(), (
        "README's rule table is stale: regenerate it with `tpu-admission rules --format markdown`"
    )


def test_ci_runs_the_readme_test_command() -> None:
    blocks = re.findall(r"```bash\n(.*?)```", README, re.S)
    commands = [line for block in blocks for line in block.splitlines() if "pytest" in line]
    assert commands, "README shows no test command"
    assert commands[0].strip() in (ROOT / ".ci" / "run").read_text()
