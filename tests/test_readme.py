"""The README keeps its promises: the rule table is the catalog's, the test command is CI's."""

from __future__ import annotations

import argparse
import re
import shlex
from pathlib import Path

import yaml
from crd_modules import CRD_MODULE

from webhook.cli.main import build_parser
from webhook.rules.catalog import markdown_table

ROOT = Path(__file__).resolve().parents[1]
README = (ROOT / "README.md").read_text()


def test_rule_table_is_generated_from_the_catalog() -> None:
    match = re.search(r"<!-- rules:begin -->\n(.*?)\n<!-- rules:end -->", README, re.S)
    assert match, "README.md lost its rules markers"
    assert match.group(1) == markdown_table(), (
        "README's rule table is stale: regenerate it with `tpu-admission rules -o markdown`"
    )


def test_ci_runs_the_readme_test_block_verbatim() -> None:
    """The README's test block (the one that runs pytest) is, line for line and in order, the
    block CI runs between its two markers: what a newcomer is told is exactly what CI does."""
    blocks = re.findall(r"```bash\n(.*?)```", README, re.S)
    test_blocks = [block for block in blocks if "pytest" in block]
    assert len(test_blocks) == 1, "README shows one test block"
    readme_lines = test_blocks[0].strip().splitlines()
    assert not any(line.startswith("#") for line in readme_lines), "the block holds commands only"
    assert any("-r requirements.lock" in line for line in readme_lines), "it installs the locked dependencies"
    assert any(".[test]" in line for line in readme_lines), "... the test extras on top"
    assert readme_lines[-1] == ".venv/bin/python -m pytest -q"
    ci = (ROOT / ".ci" / "run").read_text()
    match = re.search(r"# --- README test block begins\n(.*?)# --- README test block ends\n", ci, re.S)
    assert match, ".ci/run lost its README block markers"
    assert match.group(1).strip().splitlines() == readme_lines


def test_quick_start_installs_only_what_the_server_needs() -> None:
    blocks = re.findall(r"```bash\n(.*?)```", README, re.S)
    serve = next(block for block in blocks if "tpu-admission serve" in block)
    assert "pip install -e . " in serve and "[test]" not in serve


def test_ci_examples_are_valid_yaml_and_valid_check_commands() -> None:
    """The GitHub Actions (SARIF) and GitLab (JUnit) jobs parse, and their check commands do too."""
    blocks = re.findall(r"```yaml\n(.*?)```", README, re.S)
    github = next(yaml.safe_load(block) for block in blocks if "upload-sarif" in block)
    gitlab = next(yaml.safe_load(block) for block in blocks if "reports:" in block)
    steps = github["jobs"]["check"]["steps"]
    upload = next(step for step in steps if "upload-sarif" in step.get("uses", ""))
    assert upload["if"] == "always()" and upload["with"]["sarif_file"] == "tpu-admission.sarif"
    assert gitlab["tpu-admission"]["artifacts"]["reports"]["junit"] == "tpu-admission.xml"
    commands = [step["run"] for step in steps if "tpu-admission check" in step.get("run", "")]
    commands += [line for line in gitlab["tpu-admission"]["script"] if "tpu-admission check" in line]
    formats = set()
    for command in commands:
        words, _, target = command.partition(" > ")
        args = build_parser().parse_args(shlex.split(words)[1:])
        formats.add((args.output, target))
    assert formats == {("sarif", "tpu-admission.sarif"), ("junit", "tpu-admission.xml")}


def test_the_readme_stays_a_guide_for_users() -> None:
    """Design notes live in docs/, benchmark figures in bench/README.md: the guide stays short."""
    assert len(README.encode()) <= 35_000, "move detail to docs/ instead of growing the README"
    assert "SPEC" not in README and "§" not in README, "name sources by what they say, not by section numbers"


def test_the_readme_says_where_the_upstream_crds_come_from() -> None:
    """The tests that read an upstream CRD take it from the Go modules tests/crds/go.mod pins:
    the README names each file they read, each module at its pinned version, and how to point
    them at another folder."""
    read: set[str] = set()
    for path in (ROOT / "tests").glob("*.py"):
        read |= set(re.findall(r'upstream_crd\("([^"]+)"\)', path.read_text()))
    assert read, "the tests read an upstream CRD"
    development = README[README.index("## Development") :]
    assert "TPU_ADMISSION_CRDS=" in development and "config/components/crd/bases" in development
    pinned = re.findall(r"^\s+(sigs\.k8s\.io/\S+) (v\S+)$", (CRD_MODULE / "go.mod").read_text(), re.M)
    assert {module for module, _ in pinned} == {"sigs.k8s.io/jobset", "sigs.k8s.io/kueue"}
    for module, version in pinned:
        assert f"`{module.removeprefix('sigs.k8s.io/')}` {version}" in development, f"README names {module} {version}"
    for name in read:
        assert f"`{name}`" in development, f"README's Development section does not name {name}"


def test_every_flag_in_the_command_table_is_one_the_command_takes() -> None:
    """The synopses of the README's command table name only flags the commands have."""
    parser = build_parser()
    commands = next(a for a in parser._actions if isinstance(a, argparse._SubParsersAction))
    rows = re.findall(r"^\| `tpu-admission ([^`]+)` \|", README, re.M)
    assert len(rows) >= 10
    for synopsis in rows:
        words = synopsis.replace("\\|", "|").split()
        command = commands.choices[words[0]]
        if words[0] in ("certs", "export"):
            nested = next(a for a in command._actions if isinstance(a, argparse._SubParsersAction))
            command = nested.choices[words[1]]
        flags = {flag.strip("[]()|.") for word in words for flag in word.split("|") if flag.strip("[(").startswith("-")}
        assert flags, synopsis
        unknown = flags - set(command._option_string_actions)
        assert not unknown, f"README's `tpu-admission {synopsis}` names {sorted(unknown)}, which it does not take"
