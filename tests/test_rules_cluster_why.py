"""Issue #8's "Why" cases, each a cluster state plus a JobSet, decided as Kueue would decide.

Every case runs twice: through ``tpu-admission check --cluster-state`` (the case's own
state file, the console entry point in-process) and through the server (real TLS,
a live watch cache fed by the test API server holding every case of that mode at once,
each case in its own namespace). Both must give the same cluster findings.

Static cases run with ``insufficient-node-pools`` off: they carry no Nodes (quota is the
point here), and an empty node list would make every multi-slice job lack pools.

A case may leave kinds unknown (``unknown``): its state file has none of them, and its
server's API answers 404 for them, as when a kind was not captured or is not served. A
job's expected skips name text each "skipped" warning of that rule must hold, so a
skipped rule says what would decide it.
"""

from __future__ import annotations

import copy
import json
import ssl
from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import httpx
import pytest
import yaml
from builders import jobset
from cluster_apiserver import FakeApiServer, wait_until, write_kubeconfig
from cluster_fixtures import ALL, FAST
from rfc_queues import team_flavor_quotas, tpu7x_flavor_spec
from support import FIXTURES, RunningServer, review
from support import JOBSET_CLUSTER_RULES as CLUSTER_RULES

from webhook.cli.main import main
from webhook.cluster import kinds as k
from webhook.cluster.watch import WatchCache, start_watch_cache
from webhook.objects.sources import load_documents
from webhook.policy.config import Policy
from webhook.serving import certs
from webhook.serving.app import ServerState
from webhook.serving.runner import TlsSettings

KQ = "kueue.x-k8s.io/v1beta2"
TPU = "google.com/tpu"
ACC = "cloud.google.com/gke-tpu-accelerator"
TOPO = "cloud.google.com/gke-tpu-topology"
TIER = "scheduling.antgroup.com/kueue-tier"
PRIORITY = 'metadata.labels["kueue.x-k8s.io/priority-class"]'
QUEUE = 'metadata.labels["kueue.x-k8s.io/queue-name"]'
POLICIES = {
    "static": {"rules": {"insufficient-node-pools": "off"}},
    "dynamic": {"mode": "dynamic"},
}


# ---------------------------------------------------------------- object builders


def namespace(name: str) -> dict[str, Any]:
    return {"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": name, "labels": {TIER: "production"}}}


def flavor(name: str, labels: dict[str, str]) -> dict[str, Any]:
    """A TPU flavor: topology-aware (a TPU podSet asks for a topology, and Kueue gives it no other kind)."""
    toleration = {"key": TPU, "operator": "Exists", "effect": "NoSchedule"}
    return {
        "apiVersion": KQ,
        "kind": "ResourceFlavor",
        "metadata": {"name": name},
        "spec": {"nodeLabels": labels, "tolerations": [toleration], "topologyName": "tpu-topology"},
    }


def cluster_queue(name: str, flavors: list[tuple[str, int, int | None]], cohort: str | None = None) -> dict[str, Any]:
    """One resource group covering TPU, CPU, memory and disk; (flavor, TPU nominal, borrowingLimit)."""
    entries = []
    for flavor_name, nominal, borrowing in flavors:
        tpu: dict[str, Any] = {"name": TPU, "nominalQuota": nominal}
        if borrowing is not None:
            tpu["borrowingLimit"] = borrowing
        rest = [{"name": r, "nominalQuota": q} for r, q in (("cpu", "100000"), ("memory", "100000Gi"))]
        entries.append(
            {"name": flavor_name, "resources": [tpu, *rest, {"name": "ephemeral-storage", "nominalQuota": "100000Gi"}]}
        )
    spec: dict[str, Any] = {
        "namespaceSelector": {"matchLabels": {TIER: "production"}},
        "resourceGroups": [{"coveredResources": [TPU, "cpu", "memory", "ephemeral-storage"], "flavors": entries}],
    }
    if cohort:
        spec["cohortName"] = cohort
    return {"apiVersion": KQ, "kind": "ClusterQueue", "metadata": {"name": name}, "spec": spec}


def local_queue(ns: str, cq: str) -> dict[str, Any]:
    return {
        "apiVersion": KQ,
        "kind": "LocalQueue",
        "metadata": {"name": "team-a-queue", "namespace": ns},
        "spec": {"clusterQueue": cq},
    }


def cohort(name: str, parent: str | None = None, quota: tuple[str, int] | None = None) -> dict[str, Any]:
    spec: dict[str, Any] = {}
    if parent:
        spec["parentName"] = parent
    if quota:
        spec["resourceGroups"] = [
            {
                "coveredResources": [TPU],
                "flavors": [{"name": quota[0], "resources": [{"name": TPU, "nominalQuota": quota[1]}]}],
            }
        ]
    return {"apiVersion": KQ, "kind": "Cohort", "metadata": {"name": name}, "spec": spec}


def workload(
    ns: str,
    name: str,
    pods: int,
    topology: str,
    conditions: list[dict[str, Any]] | None = None,
    admitted_to: tuple[str, str] | None = None,
) -> dict[str, Any]:
    """A guaranteed Workload of ``pods`` × 4 chips; ``admitted_to`` = (ClusterQueue, flavor) when it holds quota."""
    pod = {
        "nodeSelector": {ACC: "tpu7x", TOPO: topology},
        "containers": [
            {"name": "jax", "image": "python:3.12", "resources": {"requests": {TPU: "4"}, "limits": {TPU: "4"}}}
        ],
    }
    status: dict[str, Any] = {"conditions": conditions or []}
    if admitted_to is not None:
        status["conditions"].append({"type": "QuotaReserved", "status": "True", "reason": "QuotaReserved"})
        status["admission"] = {
            "clusterQueue": admitted_to[0],
            "podSetAssignments": [
                {
                    "name": "workers",
                    "count": pods,
                    "flavors": {TPU: admitted_to[1]},
                    "resourceUsage": {TPU: str(pods * 4)},
                }
            ],
        }
    return {
        "apiVersion": KQ,
        "kind": "Workload",
        "metadata": {"name": name, "namespace": ns},
        "spec": {
            "queueName": "team-a-queue",
            "priorityClassRef": {"group": "kueue.x-k8s.io", "kind": "WorkloadPriorityClass", "name": "guaranteed"},
            "active": True,
            "podSets": [{"name": "workers", "count": pods, "template": {"spec": pod}}],
        },
        "status": status,
    }


def tpu7x_nodes(count: int) -> list[dict[str, Any]]:
    """Dynamic-mode tpu7x hosts, 4 chips each."""
    allocatable = {"cpu": "208", "memory": "720Gi", "ephemeral-storage": "200Gi", TPU: "4", "pods": "110"}
    return [
        {
            "apiVersion": "v1",
            "kind": "Node",
            "metadata": {
                "name": f"gke-tpu7x-{i}",
                "labels": {ACC: "tpu7x", "kubernetes.io/hostname": f"gke-tpu7x-{i}"},
            },
            "spec": {"taints": [{"key": TPU, "value": "present", "effect": "NoSchedule"}]},
            "status": {"allocatable": allocatable, "capacity": allocatable},
        }
        for i in range(count)
    ]


def tpu7x_pool(pool: str, hosts: int, topology: str = "4x4x4") -> list[dict[str, Any]]:
    """A dynamic-mode node pool of ``topology`` with ``hosts`` of its hosts listed (the rest under repair)."""
    nodes = tpu7x_nodes(hosts)
    for i, node in enumerate(nodes):
        node["metadata"]["name"] = f"{pool}-{i}"
        node["metadata"]["labels"].update(
            {"kubernetes.io/hostname": f"{pool}-{i}", "cloud.google.com/gke-nodepool": pool, TOPO: topology}
        )
    return nodes


def rfc_queues() -> list[dict[str, Any]]:
    """RFC-0033's dynamic-mode queues as its queue section writes them: flavors tpu7x (topology-aware) and
    cpu-standard (no topologyName, no labels), ClusterQueues team-a and team-b in cohort tpu-pool (tpu7x:
    256 chips, borrowingLimit 128; cpu-standard: 0 chips), no Cohort object, LocalQueue team-a-queue."""
    objects: list[dict[str, Any]] = [
        namespace("kubemaker"),
        {"apiVersion": KQ, "kind": "ResourceFlavor", "metadata": {"name": "tpu7x"}, "spec": tpu7x_flavor_spec()},
        {"apiVersion": KQ, "kind": "ResourceFlavor", "metadata": {"name": "cpu-standard"}, "spec": {}},
        local_queue("kubemaker", "team-a"),
    ]
    for team in ("team-a", "team-b"):
        spec = {
            "cohortName": "tpu-pool",
            "namespaceSelector": {"matchLabels": {TIER: "production"}},
            "resourceGroups": [
                {"coveredResources": [TPU, "cpu", "memory", "ephemeral-storage"], "flavors": team_flavor_quotas()}
            ],
        }
        objects.append({"apiVersion": KQ, "kind": "ClusterQueue", "metadata": {"name": team}, "spec": spec})
    return objects


def cpu_queue(ns: str, flavors: dict[str, str]) -> list[dict[str, Any]]:
    """A queue with no cohort over CPU flavors (name -> its ``type`` node label), 2 cpu each."""
    objects: list[dict[str, Any]] = [namespace(ns), local_queue(ns, ns)]
    entries = []
    for name, label in flavors.items():
        objects.append(
            {
                "apiVersion": KQ,
                "kind": "ResourceFlavor",
                "metadata": {"name": name},
                "spec": {"nodeLabels": {"type": label}},
            }
        )
        entries.append({"name": name, "resources": [{"name": "cpu", "nominalQuota": "2"}]})
    spec = {
        "namespaceSelector": {"matchLabels": {TIER: "production"}},
        "resourceGroups": [{"coveredResources": ["cpu"], "flavors": entries}],
    }
    objects.append({"apiVersion": KQ, "kind": "ClusterQueue", "metadata": {"name": ns}, "spec": spec})
    return objects


def cpu_workload(ns: str, name: str, cpu: str, flavor: str) -> dict[str, Any]:
    """A Workload holding ``cpu`` of ``flavor`` in ClusterQueue ``ns``."""
    pod = {"containers": [{"name": "c", "image": "python:3.12", "resources": {"requests": {"cpu": cpu}}}]}
    return {
        "apiVersion": KQ,
        "kind": "Workload",
        "metadata": {"name": name, "namespace": ns},
        "spec": {"queueName": "team-a-queue", "podSets": [{"name": "main", "count": 1, "template": {"spec": pod}}]},
        "status": {
            "conditions": [{"type": "QuotaReserved", "status": "True", "reason": "QuotaReserved"}],
            "admission": {
                "clusterQueue": ns,
                "podSetAssignments": [
                    {"name": "main", "count": 1, "flavors": {"cpu": flavor}, "resourceUsage": {"cpu": cpu}}
                ],
            },
        },
    }


def cpu_job(ns: str, *podsets: tuple[str, str, dict[str, str]]) -> dict[str, Any]:
    """A JobSet of CPU podSets, one pod each: (name, cpu, nodeSelector)."""
    obj = jobset().namespace(ns).obj()
    template = obj["spec"]["replicatedJobs"][0]
    jobs = []
    for name, cpu, selector in podsets:
        job = copy.deepcopy(template)
        job["name"], job["replicas"] = name, 1
        job["template"]["spec"]["parallelism"] = job["template"]["spec"]["completions"] = 1
        container = {"name": "main", "image": "python:3.12", "resources": {"requests": {"cpu": cpu}}}
        job["template"]["spec"]["template"] = {"spec": {"nodeSelector": selector, "containers": [container]}}
        jobs.append(job)
    obj["spec"]["replicatedJobs"] = jobs
    return obj


def static_job(ns: str, replicas: int, guaranteed: bool = False) -> dict[str, Any]:
    """RFC-0033 4.6 ③ in ``ns``: ``replicas`` 4x4x4 slices of 64 chips."""
    built = jobset().namespace(ns).replicas(replicas)
    return (built.priority("guaranteed") if guaranteed else built).obj()


def dynamic_job(ns: str, replicas: int, guaranteed: bool = False) -> dict[str, Any]:
    built = jobset("rfc-4.3.1-dynamic").namespace(ns).replicas(replicas)
    return (built.priority("guaranteed") if guaranteed else built).obj()


# ---------------------------------------------------------------- the cases


@dataclass
class Case:
    id: str
    mode: str
    objects: list[dict[str, Any]]
    #: (JobSet, the cluster rules that must deny it, text their messages must hold[, rule -> text its skip must hold])
    jobs: list[tuple[Any, ...]] = field(default_factory=list)
    #: kinds the state lacks: absent from the file, 404 from the server's API
    unknown: frozenset[str] = frozenset()
    #: its objects would change other cases' answers (nodes are cluster-wide): a server of its own
    own_server: bool = False

    def skips(self, index: int) -> dict[str, str]:
        job = self.jobs[index]
        return job[3] if len(job) > 3 else {}


def _rfc_without_cohort_objects() -> list[dict[str, Any]]:
    """RFC-0033's own setup: ClusterQueues name cohort tpu-pool, no Cohort object exists."""
    objects = [d.data for d in load_documents([str(FIXTURES / "cluster")])]
    kept = [o for o in objects if o["kind"] not in ("Cohort", "Node")]
    return [*kept, {"apiVersion": KQ, "kind": "CohortList", "items": []}]


CASES = [
    Case(
        "reserved-then-spot",
        "static",
        [
            namespace("why-a"),
            flavor("why-a-reserved", {ACC: "tpu7x", TOPO: "4x4x4", "cloud.google.com/reservation-name": "res-1"}),
            flavor("why-a-spot", {ACC: "tpu7x", TOPO: "4x4x4", "cloud.google.com/gke-spot": "true"}),
            cluster_queue("why-a", [("why-a-reserved", 64, None), ("why-a-spot", 512, None)]),
            local_queue("why-a", "why-a"),
        ],
        [
            (static_job("why-a", 4), set(), []),  # 256 chips: never on reserved (64), so on spot
            (
                static_job("why-a", 16),  # 1,024 chips: on neither
                {"exceeds-queue-capacity"},
                [
                    "needs 1024 google.com/tpu of flavor 'why-a-reserved'",
                    "no later flavor either (why-a-spot at most 512)",
                ],
            ),
        ],
    ),
    Case(
        "other-accelerator-first",
        "dynamic",
        [
            namespace("why-b"),
            flavor("why-b-v6e", {ACC: "tpu-v6e-slice"}),
            flavor("why-b-tpu7x", {ACC: "tpu7x"}),
            cluster_queue("why-b", [("why-b-v6e", 1024, None), ("why-b-tpu7x", 256, None)]),
            local_queue("why-b", "why-b"),
            *tpu7x_nodes(64),
        ],
        [
            (dynamic_job("why-b", 4), set(), []),  # 256 tpu7x chips: the v6e flavor does not match
            (
                dynamic_job("why-b", 8),
                {"exceeds-queue-capacity", "exceeds-node-capacity"},
                [
                    "flavor 'why-b-tpu7x'",
                    "passed over: why-b-v6e has cloud.google.com/gke-tpu-accelerator=tpu-v6e-slice",
                ],
            ),
        ],
    ),
    Case(
        "extra-flavor-label",
        "static",
        [
            namespace("why-c"),
            flavor("why-c-4x4x4", {ACC: "tpu7x", TOPO: "4x4x4", "example.com/pool-group": "pretrain"}),
            cluster_queue("why-c", [("why-c-4x4x4", 256, None)]),
            local_queue("why-c", "why-c"),
        ],
        [(static_job("why-c", 2), set(), [])],
    ),
    Case(
        "nested-cohorts",
        "static",
        [
            namespace("why-d"),
            flavor("why-d-4x4x4", {ACC: "tpu7x", TOPO: "4x4x4"}),
            cohort("why-d-root"),
            cohort("why-d-left", parent="why-d-root"),
            cohort("why-d-right", parent="why-d-root", quota=("why-d-4x4x4", 256)),
            cluster_queue("why-d", [("why-d-4x4x4", 64, None)], cohort="why-d-left"),
            cluster_queue("why-d-other", [("why-d-4x4x4", 256, None)], cohort="why-d-right"),
            local_queue("why-d", "why-d"),
        ],
        [
            (static_job("why-d", 8), set(), []),  # 512 of the 576 the tree up to the root holds
            (
                static_job("why-d", 10),
                {"exceeds-queue-capacity"},
                ["never hold more than 576 (nominal 64 + 512 the rest of cohort why-d-left (tree up to why-d-root)"],
            ),
        ],
    ),
    Case(
        "pending-never-fits",
        "static",
        [
            namespace("why-e"),
            flavor("why-e-4x4x4", {ACC: "tpu7x", TOPO: "4x4x4"}),
            cluster_queue("why-e", [("why-e-4x4x4", 256, None)]),
            local_queue("why-e", "why-e"),
            workload("why-e", "holds-64", 16, "4x4x4", admitted_to=("why-e", "why-e-4x4x4")),
            workload("why-e", "waits-1024", 256, "4x4x4"),  # over nominal on its own: never admitted
            workload(  # whatever reason Kueue gives, it is still pending and fits: it counts
                "why-e",
                "inadmissible-128",
                32,
                "4x4x4",
                [{"type": "QuotaReserved", "status": "False", "reason": "Inadmissible", "message": "stopped"}],
            ),
        ],
        [
            (static_job("why-e", 1, guaranteed=True), set(), []),  # 64 ≤ 256 − 64 − 128
            (
                static_job("why-e", 2, guaranteed=True),
                {"guaranteed-balance-exceeded"},
                ["64 guaranteed chips left: nominal 256 − in use 64 − pending 128"],
            ),
        ],
    ),
    Case(
        "implicit-cohorts",
        "static",
        _rfc_without_cohort_objects(),
        [
            (static_job("kubemaker", 6), set(), []),  # 384 = nominal 256 + borrowing limit 128
            (
                static_job("kubemaker", 8),
                {"exceeds-queue-capacity"},
                ["never hold more than 384 (nominal 256 + borrowing limit 128 (cohort tpu-pool could lend 320)"],
            ),
        ],
    ),
    Case(
        "tpu7x-nodes-hold-256",
        "dynamic",
        [
            namespace("why-g"),
            flavor("why-g-tpu7x", {ACC: "tpu7x"}),
            cluster_queue("why-g", [("why-g-tpu7x", 1024, None)]),
            local_queue("why-g", "why-g"),
            *tpu7x_nodes(64),
        ],
        [
            (dynamic_job("why-g", 4), set(), []),
            (
                dynamic_job("why-g", 6),
                {"exceeds-node-capacity"},
                ["needs 384 google.com/tpu, but all tpu7x nodes of the cluster together hold 256"],
            ),
        ],
    ),
    # RFC-0033's own queues, the Cohorts not captured (a kubectl List of none says nothing): team-a holds between
    # its nominal 256 and nominal + borrowingLimit 384 on tpu7x, and a TPU podSet is never given cpu-standard
    # (no topologyName), so the cohort's unknowns there decide nothing. Quota is the point: no Nodes.
    Case(
        "rfc-cohorts-unknown",
        "dynamic",
        [
            *rfc_queues(),
            *(workload("kubemaker", f"holds-64-{i}", 16, "4x4x4", admitted_to=("team-a", "tpu7x")) for i in range(3)),
        ],
        [
            (
                dynamic_job("kubemaker", 10),  # 640 chips: Kueue never admits it
                {"exceeds-queue-capacity"},
                [
                    "needs 640 google.com/tpu of flavor 'tpu7x', but ClusterQueue 'team-a' can never hold more than "
                    "384 (nominal 256 + borrowing limit 128, cohort tpu-pool unknown) (passed over: cpu-standard "
                    "does not support topology-aware scheduling, which this podSet asks for)"
                ],
            ),
            (dynamic_job("kubemaker", 8), {"exceeds-queue-capacity"}, ["needs 512 google.com/tpu of flavor 'tpu7x'"]),
            (dynamic_job("kubemaker", 4), set(), []),  # 256: within the nominal, certain
            (  # 384: within the upper bound, beyond what is certain: the Cohorts decide
                dynamic_job("kubemaker", 6),
                set(),
                [],
                {
                    "exceeds-queue-capacity": "podSet 'workers': flavor 'tpu7x' would need 384 google.com/tpu, more "
                    "than ClusterQueue 'team-a' certainly holds (256, at most 384: nominal 256 + borrowing limit 128, "
                    "cohort tpu-pool unknown) — decided by Cohorts: "
                },
            ),
            (  # 192 guaranteed chips in use: whichever flavor Kueue picks, 128 more is beyond the nominal there
                dynamic_job("kubemaker", 2, guaranteed=True),
                {"guaranteed-balance-exceeded"},
                [
                    "needs 128 chips of flavor 'tpu7x', but ClusterQueue 'team-a' has 64 guaranteed chips left: "
                    "nominal 256 − in use 192 − pending 0"
                ],
            ),
            (dynamic_job("kubemaker", 1, guaranteed=True), set(), []),  # 64 of the 64 left
        ],
        unknown=frozenset({"Cohorts", "Nodes"}),
    ),
    # The same queues, no Workloads either: usage can only lower the balance, so the nominal bounds it.
    Case(
        "rfc-workloads-unknown",
        "dynamic",
        rfc_queues(),
        [
            (
                dynamic_job("kubemaker", 6, guaranteed=True),  # 384 guaranteed chips > 256 nominal
                {"guaranteed-balance-exceeded"},
                [
                    "needs 384 chips of flavor 'tpu7x', but ClusterQueue 'team-a' has at most 256 guaranteed chips "
                    "left, its nominal: what its guaranteed Workloads hold and wait for can only lower it (Workloads: "
                ],
            ),
            (
                dynamic_job("kubemaker", 2, guaranteed=True),  # 128 <= 256: the Workloads decide
                set(),
                [],
                {"guaranteed-balance-exceeded": "— decided by Workloads: "},
            ),
        ],
        unknown=frozenset({"Cohorts", "Nodes", "Workloads"}),
    ),
    # Several podSets: "a" (2 cpu, any flavor) and "b" (1 cpu, type=one) over one and two, 2 cpu each. Another
    # Workload holds 1 cpu of one: Kueue tries one for "a", would need preemption, takes two (TryNextFlavor),
    # and "b" fits one. A greedy assignment at usage zero ("a" -> one, then "b" cannot fit) refused it.
    Case(
        "several-podsets",
        "static",
        [
            *cpu_queue("why-h", {"why-h-one": "one", "why-h-two": "two"}),
            cpu_workload("why-h", "holds-1", "1", "why-h-one"),
        ],
        [
            (cpu_job("why-h", ("a", "2", {}), ("b", "1", {"type": "one"})), set(), []),
            (
                cpu_job("why-h", ("a", "2", {"type": "one"}), ("b", "1", {"type": "one"})),  # both only on one
                {"exceeds-queue-capacity"},
                [
                    "the podSets 'a' (why-h-one), 'b' (why-h-one) each fit a flavor of ClusterQueue 'why-h' on their "
                    "own, but no choice of flavors holds them together: flavor 'why-h-one' can hold at most 2 cpu "
                    "(nominal 2, no cohort to borrow from) of the 3 the podSets that could take it ask for"
                ],
            ),
        ],
    ),
    # Incremental provisioning: a 4x4x4 pool comes up without its bad host and is completed after repair. Four
    # pools, one with 15 of its 16 hosts: 252 chips listed, 256 once repaired.
    Case(
        "host-under-repair",
        "dynamic",
        [
            namespace("why-i"),
            flavor("why-i-tpu7x", {ACC: "tpu7x"}),
            cluster_queue("why-i", [("why-i-tpu7x", 1024, None)]),
            local_queue("why-i", "why-i"),
            *tpu7x_pool("why-i-pool-0", 15),
            *(node for i in (1, 2, 3) for node in tpu7x_pool(f"why-i-pool-{i}", 16)),
        ],
        [
            (dynamic_job("why-i", 4), set(), []),  # 256: fits the repaired pools, so it waits
            (
                dynamic_job("why-i", 5),
                {"exceeds-node-capacity"},
                [
                    "needs 320 google.com/tpu, but all tpu7x nodes of the cluster together hold 256 (each node pool "
                    "counted at the size its topology declares"
                ],
            ),
        ],
        own_server=True,
    ),
]
JOBS = [(case, i) for case in CASES for i in range(len(case.jobs))]


def _check_ids() -> list[str]:
    return [f"{case.id}-{i}" for case, i in JOBS]


def expect(decision_rules: set[str], messages: list[str], case: Case, index: int, warnings: list[str]) -> None:
    _, rules, snippets = case.jobs[index][:3]
    assert decision_rules == rules, messages
    for snippet in snippets:
        assert any(snippet in message for message in messages), (snippet, messages)
    for rule, snippet in case.skips(index).items():
        skipped = [w for w in warnings if w.startswith(f"[{rule}] skipped")]
        assert skipped and all(snippet in w for w in skipped), (snippet, warnings)


# ---------------------------------------------------------------- through check


@pytest.mark.parametrize(("case", "index"), JOBS, ids=_check_ids())
def test_check_decides_like_kueue(case: Case, index: int, tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    state = tmp_path / "state.yaml"
    kinds = {kind.name: kind for kind in k.KINDS}
    listed = [  # a typed list says "none" of a kind the case knows but has no object of
        {"apiVersion": kind.api_version, "kind": f"{kind.kind}List", "items": []}
        for name, kind in kinds.items()
        if name not in case.unknown and not any(o["kind"] == kind.kind for o in case.objects)
    ]
    kept = [o for o in case.objects if o["kind"] not in {kinds[name].kind for name in case.unknown}]
    state.write_text(yaml.safe_dump_all([*kept, *listed]))
    config = tmp_path / "policy.yaml"
    config.write_text(yaml.safe_dump(POLICIES[case.mode]))
    manifest = tmp_path / "job.yaml"
    manifest.write_text(yaml.safe_dump(case.jobs[index][0]))
    code = main(["check", str(manifest), "--config", str(config), "--cluster-state", str(state), "--output", "json"])
    document = json.loads(capsys.readouterr().out)
    result = document["results"][0]
    violations = [v for v in result["violations"] if v["rule"] in CLUSTER_RULES]
    expect({v["rule"] for v in violations}, [v["message"] for v in violations], case, index, result["warnings"])
    if case.unknown:  # a skip in a file's state: one note for the run says how to give what is missing
        skips = [w for w in result["warnings"] if "skipped: cluster state" in w]
        assert all("tpu-admission snapshot" in note for note in document.get("notes", [])) and (
            bool(document.get("notes")) == bool(skips)
        )
    assert code == (1 if case.jobs[index][1] else 0), result


# ---------------------------------------------------------------- through the server


@pytest.fixture(scope="module")
def why_client(cert_files: certs.CertificateFiles) -> Iterator[httpx.Client]:
    """Our own client, closed before the servers stop (uvicorn waits for open keep-alive connections)."""
    with httpx.Client(verify=ssl.create_default_context(cafile=str(cert_files.ca)), timeout=10) as http:
        yield http


def _server_of(case: Case) -> tuple[str, str, frozenset[str]]:
    """Cases of one mode share an API server, unless they leave other kinds unknown or need their own."""
    return case.mode, case.id if case.own_server else "", case.unknown


@pytest.fixture(scope="module")
def live(
    tmp_path_factory: pytest.TempPathFactory, tls: TlsSettings, why_client: httpx.Client
) -> Iterator[dict[tuple[str, str, frozenset[str]], RunningServer]]:
    servers: dict[tuple[str, str, frozenset[str]], RunningServer] = {}
    stack: list[tuple[FakeApiServer, WatchCache, RunningServer]] = []
    for key in dict.fromkeys(_server_of(case) for case in CASES):
        mode, _, unknown = key
        api = FakeApiServer()
        api.errors = dict.fromkeys(unknown, 404)
        seen: set[tuple[str, str, str]] = set()
        for case in CASES:
            if _server_of(case) != key:
                continue
            for obj in case.objects:
                kind = k.BY_KIND.get(obj["kind"])
                identity = (
                    (obj["kind"], obj["metadata"].get("namespace", ""), obj["metadata"]["name"])
                    if kind
                    else ("", "", "")
                )
                if kind is not None and identity not in seen:  # typed lists and unread kinds are file-only
                    seen.add(identity)
                    api.put(kind, obj)
        api.start()
        policy = Policy.model_validate(POLICIES[mode])
        kubeconfig = write_kubeconfig(tmp_path_factory.mktemp("kube") / "config", api.port)
        cache = start_watch_cache(str(kubeconfig), policy, FAST)
        known = ALL - unknown
        wait_until(lambda cache=cache, known=known: not cache.snapshot().unavailable(known), what="initial sync")
        wait_until(
            lambda cache=cache, unknown=unknown: set(cache.snapshot().unavailable(unknown)) == unknown, what="404s"
        )
        server = RunningServer(ServerState(policy=policy, cluster=cache), tls).start()
        servers[key] = server
        stack.append((api, cache, server))
    yield servers
    why_client.close()
    for api, cache, server in stack:
        server.stop()
        cache.stop()
        api.stop()


@pytest.mark.parametrize(("case", "index"), JOBS, ids=_check_ids())
def test_the_server_decides_like_kueue(
    case: Case, index: int, live: dict[tuple[str, str, frozenset[str]], RunningServer], why_client: httpx.Client
) -> None:
    server = live[_server_of(case)]
    response = why_client.post(server.url + "/validate", json=review(case.jobs[index][0]))
    assert response.status_code == 200
    answer = response.json()["response"]
    lines = answer["status"]["message"].splitlines() if not answer["allowed"] else []
    rules = {line[1 : line.index("]")] for line in lines if line.startswith("[")}
    assert answer["allowed"] is not bool(case.jobs[index][1]), lines
    expect(rules & CLUSTER_RULES, lines, case, index, answer.get("warnings", []))


def test_a_borrowing_limit_bounds_the_queue_when_cohorts_are_unknown(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """No Cohort kind in the file at all: team-a's borrowingLimits still bound it (384), and its nominal is
    certain (256). cpu-standard, whose cohort share is unknown and unbounded, is never a TPU podSet's flavor
    (no topologyName), so it leaves nothing undecided."""
    objects = [o for o in _rfc_without_cohort_objects() if o["kind"] != "CohortList"]
    state = tmp_path / "state.yaml"
    state.write_text(yaml.safe_dump_all(objects))
    config = tmp_path / "policy.yaml"
    config.write_text(yaml.safe_dump(POLICIES["static"]))
    manifest = tmp_path / "job.yaml"

    def check(job: dict[str, Any]) -> tuple[int, dict[str, Any]]:
        manifest.write_text(yaml.safe_dump(job))
        argv = ["check", str(manifest), "--config", str(config), "--cluster-state", str(state), "--output", "json"]
        code = main(argv)
        return code, json.loads(capsys.readouterr().out)["results"][0]

    code, result = check(static_job("kubemaker", 8))
    [violation] = result["violations"]
    assert violation["rule"] == "exceeds-queue-capacity" and code == 1
    assert (
        "never hold more than 384 (nominal 256 + borrowing limit 128, cohort tpu-pool unknown)" in violation["message"]
    )
    # guaranteed, within the nominal: certain on quota, and 64 of the 64 left in the balance: nothing to skip
    code, result = check(static_job("kubemaker", 1, guaranteed=True))
    quota = [w for w in result["warnings"] if w.startswith(("[exceeds-queue-capacity]", "[guaranteed-balance"))]
    assert (code, result["violations"], quota) == (0, [], [])  # (Nodes are not in the file: their rules skip)
    # 128 guaranteed chips, 64 left: whichever flavor Kueue picks, beyond the balance
    code, result = check(static_job("kubemaker", 2, guaranteed=True))
    assert [v["rule"] for v in result["violations"]] == ["guaranteed-balance-exceeded"] and code == 1
    assert "64 guaranteed chips left: nominal 256 − in use 128 − pending 64" in result["violations"][0]["message"]
