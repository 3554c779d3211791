"""Preemption scenarios played against Kueue's manager: the queues of one scenario, the jobs
that hold quota before it, and the job it submits; ``tpu-admission simulate --kubeconfig``
predicts, kubectl submits, and the Workloads say what Kueue did.

Every scenario gets a namespace, a cohort and ClusterQueues of its own (named after it), so
that what one leaves behind (no garbage collector runs here to delete a finished Workload)
never holds quota in another. The flavor has no topology: these scenarios are about quota,
and Kueue admits them without placing pods on the (kubelet-less) nodes.
"""

from __future__ import annotations

import json
import random
import subprocess
import sys
import tempfile
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from controlplane import KUEUE_USER, ControlPlane
from workloads import DECISION_WITHIN, conditions, is_true, owned_by, wait_for_workload, workloads

TPU = "google.com/tpu"
#: chips per pod (a tpu7x host's four)
CHIPS_PER_POD = 4
FLAVOR = "e2e-tpu7x"
#: Kueue manages jobs only in namespaces that carry the tier label (its
#: managedJobsNamespaceSelector asks only that the key exists); a value that is neither of
#: the policy's tiers keeps our webhook's tier rules out, as the scenarios are about quota
TIER, SCENARIO_TIER = "scheduling.antgroup.com/kueue-tier", "e2e-scenario"
QUEUE_LABEL, PRIORITY_LABEL = "kueue.x-k8s.io/queue-name", "kueue.x-k8s.io/priority-class"
#: how long a pending job must stay pending, and nothing be evicted, to be taken as waiting
SETTLE_SECONDS = 8.0
#: Kueue orders preemption candidates by when they were admitted, to the second
ADMISSION_TICK = 1.1


@dataclass(frozen=True)
class Job:
    """A batch/v1 Job of ``chips`` TPU chips (one pod per four) on ``team``'s LocalQueue."""

    name: str
    team: str
    chips: int
    priority: str

    def manifest(self, namespace: str) -> dict[str, Any]:
        pods = self.chips // CHIPS_PER_POD
        chips = {TPU: str(CHIPS_PER_POD)}
        container = {"name": "c", "image": "registry.invalid/none", "resources": {"requests": chips, "limits": chips}}
        return {
            "apiVersion": "batch/v1",
            "kind": "Job",
            "metadata": {
                "name": self.name,
                "namespace": namespace,
                "labels": {QUEUE_LABEL: f"{self.team}-queue", PRIORITY_LABEL: self.priority},
            },
            "spec": {
                "parallelism": pods,
                "completions": pods,
                "backoffLimit": 0,
                "template": {"spec": {"restartPolicy": "Never", "containers": [container]}},
            },
        }


@dataclass(frozen=True)
class Team:
    """A ClusterQueue of the scenario's cohort: its TPU quota and preemption policy."""

    name: str
    nominal: int = 256
    borrowing: int | None = 128
    within: str = "LowerPriority"
    reclaim: str = "LowerPriority"


@dataclass(frozen=True)
class Scenario:
    name: str
    teams: tuple[Team, ...]
    #: admitted one after another, in this order, before ``incoming`` is submitted
    before: tuple[Job, ...]
    incoming: Job

    @property
    def namespace(self) -> str:
        return f"e2e-{self.name}"

    def cluster_queue(self, team: str) -> str:
        return f"{self.name}-{team}"


@dataclass(frozen=True)
class Decision:
    """What happened to the incoming job, in the terms both sides can state: started now or
    not, and which of the jobs before it were preempted, each with Kueue's reason."""

    outcome: str
    victims: frozenset[tuple[str, str]] = field(default_factory=frozenset)


def flavor() -> dict[str, Any]:
    return {"apiVersion": "kueue.x-k8s.io/v1beta2", "kind": "ResourceFlavor", "metadata": {"name": FLAVOR}, "spec": {}}


def queue_objects(scenario: Scenario) -> list[dict[str, Any]]:
    cohort = f"{scenario.name}-pool"
    objects: list[dict[str, Any]] = [
        {
            "apiVersion": "v1",
            "kind": "Namespace",
            "metadata": {"name": scenario.namespace, "labels": {TIER: SCENARIO_TIER}},
        },
        {"apiVersion": "kueue.x-k8s.io/v1beta2", "kind": "Cohort", "metadata": {"name": cohort}, "spec": {}},
    ]
    for team in scenario.teams:
        quota: dict[str, Any] = {"name": TPU, "nominalQuota": team.nominal}
        if team.borrowing is not None:
            quota["borrowingLimit"] = team.borrowing
        objects.append(
            {
                "apiVersion": "kueue.x-k8s.io/v1beta2",
                "kind": "ClusterQueue",
                "metadata": {"name": scenario.cluster_queue(team.name)},
                "spec": {
                    "cohortName": cohort,
                    "namespaceSelector": {},
                    "resourceGroups": [
                        {"coveredResources": [TPU], "flavors": [{"name": FLAVOR, "resources": [quota]}]}
                    ],
                    "preemption": {"withinClusterQueue": team.within, "reclaimWithinCohort": team.reclaim},
                },
            }
        )
        objects.append(
            {
                "apiVersion": "kueue.x-k8s.io/v1beta2",
                "kind": "LocalQueue",
                "metadata": {"name": f"{team.name}-queue", "namespace": scenario.namespace},
                "spec": {"clusterQueue": scenario.cluster_queue(team.name)},
            }
        )
    return objects


def apply(plane: ControlPlane, *objects: dict[str, Any], as_user: str | None = None) -> None:
    listed = json.dumps({"apiVersion": "v1", "kind": "List", "items": list(objects)})
    plane.kubectl(
        "apply", *(["--as", as_user, "--as-group", "system:masters"] if as_user else []), "-f", "-", stdin=listed
    )


def set_up(plane: ControlPlane, scenario: Scenario) -> None:
    """The scenario's queues, then its jobs before, each admitted before the next is submitted.

    The queue objects are applied as Kueue's controller, the one user our admin guard lets
    by on Kueue's objects (in system:masters, as no Kueue RBAC is installed here): its rules
    refuse the scenarios' deliberately small, TPU-only queues."""
    apply(plane, flavor(), as_user=KUEUE_USER)
    apply(plane, *queue_objects(scenario), as_user=KUEUE_USER)
    for job in scenario.before:
        apply(plane, job.manifest(scenario.namespace))
        wait_for_workload(plane, "Job", scenario.namespace, job.name, "Admitted")
        time.sleep(ADMISSION_TICK)


def predict(plane: ControlPlane, scenario: Scenario) -> tuple[Decision, dict[str, Any]]:
    """``tpu-admission simulate --kubeconfig`` on the incoming job; the decision and the whole answer."""
    with tempfile.TemporaryDirectory() as folder:
        path = Path(folder) / f"{scenario.incoming.name}.json"
        path.write_text(json.dumps(scenario.incoming.manifest(scenario.namespace)))
        command = [sys.executable, "-m", "webhook", "simulate", "--kubeconfig", str(plane.layout.kubeconfig)]
        run = subprocess.run([*command, "-o", "json", str(path)], capture_output=True, text=True, check=False)
    assert run.returncode in (0, 1), run.stderr
    (result,) = json.loads(run.stdout)["results"]
    names = workload_jobs(plane, scenario.namespace)
    victims = frozenset((names.get(v["workload"], v["workload"]), v["reason"]) for v in result["preemptions"])
    outcome = {"admit": "admit", "preempt": "preempt"}.get(result["outcome"], "not now")
    return Decision(outcome, victims), result


def workload_jobs(plane: ControlPlane, namespace: str) -> dict[str, str]:
    """Each Workload's ``namespace/name`` -> the name of the Job it is for."""
    found = {}
    for workload in workloads(plane, namespace):
        for owner in workload["metadata"].get("ownerReferences", []):
            found[f"{namespace}/{workload['metadata']['name']}"] = owner["name"]
    return found


def submit_and_observe(plane: ControlPlane, scenario: Scenario) -> tuple[Decision, dict[str, Any]]:
    """Submit the incoming job with kubectl; once Kueue has acted, what it did and the
    incoming Workload's conditions (admitted, or the pending reason and message)."""
    namespace, incoming = scenario.namespace, scenario.incoming
    apply(plane, incoming.manifest(namespace))
    deadline = time.monotonic() + DECISION_WITHIN
    pending_since: float | None = None
    while time.monotonic() < deadline:
        workload = owned_by(plane, "Job", namespace, incoming.name)
        victims = preempted(plane, scenario)
        if workload is not None and is_true(workload, "Admitted"):
            return Decision("preempt" if victims else "admit", victims), workload
        attempted = workload is not None and conditions(workload).get("QuotaReserved", ("", ""))[0] == "False"
        if attempted and not victims:
            pending_since = pending_since or time.monotonic()
            if time.monotonic() - pending_since >= SETTLE_SECONDS:
                assert workload is not None
                return Decision("not now"), workload
        else:
            pending_since = None
        time.sleep(0.5)
    raise AssertionError(f"{scenario.name}: Kueue neither admitted {incoming.name} nor left it pending")


def preempted(plane: ControlPlane, scenario: Scenario) -> frozenset[tuple[str, str]]:
    """The jobs before whose Workloads Kueue preempted, each with the Preempted condition's reason."""
    found = set()
    for workload in workloads(plane, scenario.namespace):
        state = conditions(workload).get("Preempted")
        if state and state[0] == "True":
            owners = workload["metadata"].get("ownerReferences", [])
            found.add((owners[0]["name"] if owners else workload["metadata"]["name"], state[1]))
    return frozenset(found)


# ---------------------------------------------------------------- drawn scenarios

#: the preemption policies a drawn team may have (Kueue's enums)
WITHIN = ("Never", "LowerPriority", "LowerOrNewerEqualPriority")
RECLAIM = ("Never", "LowerPriority", "Any")
PRIORITIES = ("guaranteed", "best-effort")
#: a drawn job's size, in chips: a multiple of 32 (8 pods)
CHIP_STEP = 32


def draw(seed: int, index: int) -> Scenario:
    """Scenario ``index`` of the run seeded ``seed``: two or three teams in one cohort with drawn
    quotas, borrowing limits and preemption policies; up to eight jobs that each fit when they
    are submitted (so Kueue admits them without preempting); and one incoming job of any size
    and priority, which may fit, borrow, need preemption or never fit."""
    rng = random.Random(seed * 1000 + index)
    teams = tuple(
        Team(
            f"team-{letter}",
            nominal=rng.choice((64, 128, 256)),
            borrowing=rng.choice((None, 0, 64, 128)),
            within=rng.choice(WITHIN),
            reclaim=rng.choice(RECLAIM),
        )
        for letter in "abc"[: rng.randint(2, 3)]
    )
    pool = sum(team.nominal for team in teams)
    used = {team.name: 0 for team in teams}
    before = []
    for number in range(rng.randint(2, 8)):
        team = rng.choice(teams)
        chips = CHIP_STEP * rng.randint(1, 6)
        ceiling = team.nominal + (team.borrowing if team.borrowing is not None else pool)
        if used[team.name] + chips <= ceiling and sum(used.values()) + chips <= pool:
            used[team.name] += chips
            before.append(Job(f"{team.name[-1]}-{number}", team.name, chips, rng.choice(PRIORITIES)))
    incoming = Job("new", rng.choice(teams).name, CHIP_STEP * rng.randint(1, 10), rng.choice(PRIORITIES))
    return Scenario(f"g{seed % 100:02d}-{index:02d}", teams, tuple(before), incoming)
