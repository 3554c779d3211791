"""The differential run: our simulator and Kueue's own packages (``tests/oracle/``) asked the
same question, their answers compared.

A case folder holds ``state.yaml`` and ``incoming.yaml``, the files ``tpu-admission
simulate --cluster-state state.yaml incoming.yaml`` reads. Our side reads them exactly as
that command does (``load_state_files``, ``LiveSimulator``, ``simulate_submitted``) in this
process; Kueue's side is the Go program, one process for a whole batch of folders.
Compared: the outcome, the reason of a ``wait`` or ``never``, the flavor of each podSet's
resources when the job would start, and the victims with their reasons. A difference that
a rule of ``oracle_known`` explains is counted as known; any other is a disagreement.
"""

from __future__ import annotations

import json
import os
import shutil
import subprocess
from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import oracle_known
import yaml
from oracle_cases import Case

from webhook.advisor.submitted import simulate_submitted
from webhook.cluster.statefiles import load_state_files
from webhook.kueue.workload import submitted_workload
from webhook.policy.config import Policy
from webhook.quota.feasibility import Feasibility
from webhook.simulate.live import LiveSimulator
from webhook.simulate.result import Result

ORACLE_DIR = Path(__file__).resolve().parent / "oracle"
#: the Kueue version the oracle links, as go.mod pins it
KUEUE_MODULE = "sigs.k8s.io/kueue"


class OracleUnavailable(RuntimeError):
    """Go is not installed, or the oracle did not build; the message says which."""


def module_version(module: str) -> str:
    """The version ``tests/oracle/go.mod`` pins ``module`` at."""
    for line in (ORACLE_DIR / "go.mod").read_text().splitlines():
        parts = line.split()
        if module in parts[:2] and parts.index(module) + 1 < len(parts):
            return parts[parts.index(module) + 1]
    raise OracleUnavailable(f"{ORACLE_DIR / 'go.mod'} does not require {module}")


def built_for_tests(build: Callable[[Path], Path], output: Path, what: str) -> Path:
    """``build(output)`` for a test's fixture: without Go the test skips saying what it needs;
    under ``CI=true``, or with Go present but the build failing, it fails instead."""
    import pytest  # only the tests' fixtures call this; the bench reads the rest of the module

    try:
        return build(output)
    except OracleUnavailable as exc:
        if os.environ.get("CI") == "true" or shutil.which("go") is not None:
            pytest.fail(str(exc))
        pytest.skip(f"needs Go (go on PATH) and the Go module proxy to build {what} in tests/oracle")


def kueue_version() -> str:
    return module_version(KUEUE_MODULE)


def build_oracle(output: Path) -> Path:
    """``go build`` the oracle into ``output`` (Go's build cache keeps a rebuild to seconds)."""
    go = shutil.which("go")
    if go is None:
        raise OracleUnavailable("the Kueue oracle needs Go (go on PATH) and the Go module proxy")
    env = {**os.environ, "GOFLAGS": os.environ.get("GOFLAGS", "-p=2"), "GOWORK": "off"}
    done = subprocess.run(
        [go, "build", "-o", str(output), "."], cwd=ORACLE_DIR, env=env, capture_output=True, text=True, check=False
    )
    if done.returncode != 0:
        raise OracleUnavailable(f"go build in {ORACLE_DIR} failed:\n{done.stderr.strip()}")
    return output


def write_case(case: Case, folder: Path) -> Path:
    folder.mkdir(parents=True, exist_ok=True)
    (folder / "state.yaml").write_text(case.state_yaml())
    (folder / "incoming.yaml").write_text(case.incoming_yaml())
    (folder / "policy.yaml").write_text(POLICY_YAML)
    return folder


def ask_kueue(binary: Path, folders: Sequence[Path]) -> list[dict[str, Any]]:
    """Kueue's decisions, one per folder, in order."""
    out: list[dict[str, Any]] = []
    for start in range(0, len(folders), 200):  # keep the command line short
        chunk = [str(f) for f in folders[start : start + 200]]
        done = subprocess.run([str(binary), *chunk], capture_output=True, text=True, check=False, timeout=600)
        if done.returncode != 0:
            raise OracleUnavailable(f"the oracle failed: {done.stderr.strip()}")
        out += [json.loads(line) for line in done.stdout.splitlines() if line.strip()]
    if len(out) != len(folders):
        raise OracleUnavailable(f"the oracle answered {len(out)} of {len(folders)} cases")
    return out


#: dynamic mode: no node-pool placement, which the oracle's states (without Topologies and
#: Nodes) cannot mirror on Kueue's side (written beside each case as ``policy.yaml``, for
#: ``tpu-admission simulate --config``)
POLICY_YAML = "mode: dynamic\n"
POLICY = Policy.model_validate(yaml.safe_load(POLICY_YAML))


def ask_gate(folder: Path) -> Feasibility | None:
    """The gates' "could it ever fit" (``Snapshot.assign``) for the job's ClusterQueue; ``None``
    when its LocalQueue names none in the state."""
    snapshot = load_state_files([str(folder / "state.yaml")], POLICY).snapshot()
    job = submitted_workload(yaml.safe_load((folder / "incoming.yaml").read_text()), POLICY.tpu.resource_name)
    queue = snapshot.queues.local_queues.get((job.namespace, job.queue_name))
    return None if queue is None else snapshot.assign(queue, job.podsets)


@dataclass(frozen=True)
class GateComparison:
    """The gates' answer for a state at zero usage beside Kueue's attempt on it."""

    folder: Path
    gate: str
    kueue: dict[str, Any]
    difference: str | None
    known: str | None = None

    @property
    def disagrees(self) -> bool:
        return self.difference is not None and self.known is None


#: what the gates' answer must be for each of Kueue's outcomes at zero usage
GATE_EXPECTS = {"admit": "fit", "never": "nofit", "misconfigured": "none"}


def compare_gate(folder: Path, assignment: Feasibility | None, kueue: dict[str, Any]) -> GateComparison:
    gate = "none" if assignment is None else assignment.status
    wanted = GATE_EXPECTS.get(kueue["outcome"])
    if wanted == gate:
        return GateComparison(folder, gate, kueue, None)
    difference = f"gate at zero usage: ours {gate}, Kueue {kueue['outcome']} ({kueue.get('reason', '')})"
    known = oracle_known.explain_gate(assignment, kueue) if assignment is not None else None
    return GateComparison(folder, gate, kueue, difference, known)


def ask_ours(folder: Path) -> Result:
    """Our answer, read from the folder as ``simulate --cluster-state`` reads it."""
    return _ours(folder / "state.yaml", folder)


def _ours(state: Path, folder: Path) -> Result:
    snapshot = load_state_files([str(state)], POLICY).snapshot()
    incoming = yaml.safe_load((folder / "incoming.yaml").read_text())
    return simulate_submitted(incoming, LiveSimulator(snapshot, POLICY))


def _holds_quota(obj: dict[str, Any]) -> bool:
    """A Workload Kueue's cache holds: its ``QuotaReserved`` condition is true."""
    conditions = (obj.get("status") or {}).get("conditions") or []
    return any(c.get("type") == "QuotaReserved" and c.get("status") == "True" for c in conditions)


def ask_ours_as_head(folder: Path) -> Result:
    """Our answer with every pending Workload left out of the state: the job as its queue's
    head, which is the one attempt Kueue's side makes (its cache holds no pending Workload).
    The state file is written beside the case as ``as-head/state.yaml``, to replay."""
    documents = []
    for document in yaml.safe_load_all((folder / "state.yaml").read_text()):
        if isinstance(document, dict) and isinstance(document.get("items"), list):
            items = document["items"]
            document = {**document, "items": [o for o in items if o.get("kind") != "Workload" or _holds_quota(o)]}
        elif isinstance(document, dict) and document.get("kind") == "Workload" and not _holds_quota(document):
            continue
        documents.append(document)
    head = folder / "as-head"
    head.mkdir(exist_ok=True)
    (head / "state.yaml").write_text(yaml.safe_dump_all(documents, sort_keys=False))
    return _ours(head / "state.yaml", folder)


@dataclass(frozen=True)
class Comparison:
    folder: Path
    ours: dict[str, Any]
    kueue: dict[str, Any]
    #: what differs, field by field; empty when they agree
    differences: tuple[str, ...]
    #: the known difference that explains them, if one does
    known: str | None = None

    @property
    def agrees(self) -> bool:
        return not self.differences

    @property
    def disagrees(self) -> bool:
        return bool(self.differences) and self.known is None


def summary(result: Result) -> dict[str, Any]:
    """Our answer in the oracle's terms."""
    return {
        "outcome": result.outcome,
        "reason": result.reason,
        "podSets": [{"name": p.name, "flavors": dict(sorted(p.flavors.items()))} for p in result.podsets],
        "victims": sorted(({"workload": v.workload, "reason": v.reason} for v in result.preemptions), key=str),
        "message": result.message,
        "notes": list(result.notes),
    }


#: reasons both sides give a ``wait`` or ``never`` by the same name
COMPARED_REASONS = frozenset({"ExceedsMaxQuota", "NoMatchingFlavor", "WaitingForQuota"})


def differences(ours: dict[str, Any], kueue: dict[str, Any]) -> tuple[str, ...]:
    out = []
    if ours["outcome"] != kueue["outcome"]:
        out.append(
            f"outcome: ours {ours['outcome']} ({ours['reason']}), Kueue {kueue['outcome']} ({kueue.get('reason', '')})"
        )
        return tuple(out)
    if ours["outcome"] in ("wait", "never"):
        reasons = {ours["reason"], kueue.get("reason", "")}
        if reasons <= COMPARED_REASONS and len(reasons) > 1:
            out.append(f"reason: ours {ours['reason']}, Kueue {kueue.get('reason')}")
    if ours["outcome"] in ("admit", "preempt"):
        theirs = [
            {"name": p["name"], "flavors": dict(sorted(p["flavors"].items()))} for p in kueue.get("podSets") or []
        ]
        if ours["podSets"] != theirs:
            out.append(f"flavors: ours {ours['podSets']}, Kueue {theirs}")
    victims = sorted(({"workload": v["workload"], "reason": v["reason"]} for v in kueue.get("victims") or []), key=str)
    if ours["victims"] != victims:
        out.append(f"victims: ours {ours['victims']}, Kueue {victims}")
    return tuple(out)


def compare(folder: Path, result: Result, kueue: dict[str, Any]) -> Comparison:
    ours = summary(result)
    found = differences(ours, kueue)
    known = (
        oracle_known.explain(result, kueue, lambda: not differences(summary(ask_ours_as_head(folder)), kueue))
        if found
        else None
    )
    return Comparison(folder, ours, kueue, found, known)


@dataclass
class Run:
    comparisons: list[Comparison] = field(default_factory=list)
    #: the same states at zero usage: the gates' "could it ever fit" beside Kueue
    gates: list[GateComparison] = field(default_factory=list)

    @property
    def agreed(self) -> int:
        return sum(1 for c in self.comparisons if c.agrees)

    @property
    def known(self) -> int:
        return sum(1 for c in self.comparisons if c.known is not None)

    @property
    def disagreements(self) -> list[Comparison]:
        return [c for c in self.comparisons if c.disagrees]

    @property
    def gate_disagreements(self) -> list[GateComparison]:
        return [g for g in self.gates if g.disagrees]

    def line(self, version: str) -> str:
        n = len(self.comparisons)
        return f"oracle: {self.agreed + self.known}/{n} agree with Kueue {version} ({self.known} known differences)"

    def gate_line(self, version: str) -> str:
        n, known = len(self.gates), sum(1 for g in self.gates if g.known is not None)
        agree = n - len(self.gate_disagreements)
        return f"gates at zero usage: {agree}/{n} agree with Kueue {version} ({known} known differences)"


def run_cases(binary: Path, cases: Iterable[Case], workdir: Path) -> Run:
    """Each case as it is (the simulator) and at zero usage (the gates), both beside Kueue."""
    drawn = list(cases)
    folders = [write_case(case, workdir / f"case-{i:05d}") for i, case in enumerate(drawn)]
    zero = [write_case(case.at_zero_usage(), workdir / f"zero-{i:05d}") for i, case in enumerate(drawn)]
    decisions = ask_kueue(binary, folders + zero)
    for folder, decision in zip(folders + zero, decisions, strict=True):
        if decision.get("outcome") == "error":
            raise OracleUnavailable(f"{folder}: the oracle could not read the case: {decision.get('message')}")
    run = Run()
    for folder, decision, at_zero in zip(folders, decisions[: len(folders)], decisions[len(folders) :], strict=True):
        # Kueue's own answer for the state without usage, for the known differences to read
        run.comparisons.append(compare(folder, ask_ours(folder), {**decision, "atZeroUsage": at_zero}))
    for folder, decision in zip(zero, decisions[len(folders) :], strict=True):
        run.gates.append(compare_gate(folder, ask_gate(folder), decision))
    return run


def write_disagreement(comparison: Comparison | GateComparison, into: Path) -> Path:
    """A replayable case folder: the inputs, both answers and what differs."""
    target = into / comparison.folder.name
    if target.exists():
        shutil.rmtree(target)
    shutil.copytree(comparison.folder, target)
    if isinstance(comparison, GateComparison):
        report: dict[str, Any] = {"differences": [comparison.difference], "gate": comparison.gate}
        report["kueue"] = comparison.kueue
    else:
        report = {"differences": list(comparison.differences), "ours": comparison.ours, "kueue": comparison.kueue}
    (target / "answers.json").write_text(json.dumps(report, indent=2, default=str) + "\n")
    return target
