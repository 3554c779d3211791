"""What ``tpu-admission lint-queues`` costs on a big cluster: 1,000 ClusterQueues, 5,000 Nodes.

    python bench/lint_queues.py [--queues 1000] [--nodes 5000] [--rounds 3]

Writes RFC-0033-shaped objects into a temporary directory (per team a ClusterQueue like
4.2's ``team-a`` and its LocalQueue in ``kubemaker``, the global flavors, priorities,
Topology and slice check, 4.1's Configuration) and a state file of Namespaces and
``--nodes`` tpu7x hosts with every partition label, then times two runs:

- **clean**: Σ nominal fits the chips, nothing is refused;
- **over**: Σ nominal is above the chips, so every queue carries a cross-object finding
  (1,000 findings with their totals, rendered as JSON).

Each is timed as a whole process (``python -m webhook lint-queues``, start-up included)
and in process by stage: read (parse the files), assemble (input ∪ state), lint (every
rule), render (``--output json``). Medians of ``--rounds``.
"""

from __future__ import annotations

import argparse
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

import yaml

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

KQ = "kueue.x-k8s.io/v1beta2"
TIER = "scheduling.antgroup.com/kueue-tier"
PARTITIONS = {"4x4x4": 16, "2x4x4": 8, "2x2x4": 4, "2x2x2": 2, "2x2x1": 1}
LEVELS = [
    "cloud.google.com/gce-topology-block",
    *(f"cloud.google.com/gke-tpu-partition-{g}-id" for g in PARTITIONS),
    "kubernetes.io/hostname",
]


def _queue(name: str, chips: int, tier: str = "production") -> dict[str, Any]:
    def flavor(flavor: str, tpu: int, cpu: str, memory: str, storage: str) -> dict[str, Any]:
        return {
            "name": flavor,
            "resources": [
                {"name": "google.com/tpu", "nominalQuota": tpu},
                {"name": "cpu", "nominalQuota": cpu},
                {"name": "memory", "nominalQuota": memory},
                {"name": "ephemeral-storage", "nominalQuota": storage},
            ],
        }

    return {
        "apiVersion": KQ,
        "kind": "ClusterQueue",
        "metadata": {"name": name},
        "spec": {
            "cohortName": "tpu-pool",
            "namespaceSelector": {"matchLabels": {TIER: tier}},
            "resourceGroups": [
                {
                    "coveredResources": ["google.com/tpu", "cpu", "memory", "ephemeral-storage"],
                    "flavors": [
                        flavor("tpu7x", chips, "100000", "100000Gi", "100000Gi"),
                        flavor("cpu-standard", 0, "2000", "8000Gi", "4000Gi"),
                    ],
                }
            ],
            "admissionChecksStrategy": {"admissionChecks": [{"name": "tpu7x-slice", "onFlavors": ["tpu7x"]}]},
            "preemption": {"reclaimWithinCohort": "LowerPriority", "withinClusterQueue": "LowerPriority"},
        },
    }


def queues(count: int, chips: int) -> list[dict[str, Any]]:
    objects: list[dict[str, Any]] = [
        {"apiVersion": KQ, "kind": "WorkloadPriorityClass", "metadata": {"name": n}, "value": v}
        for n, v in (("guaranteed", 1000), ("best-effort", 100), ("default", 10))
    ]
    objects += [
        {"apiVersion": KQ, "kind": "Topology", "metadata": {"name": "tpu7x-topology"},
         "spec": {"levels": [{"nodeLabel": level} for level in LEVELS]}},
        {"apiVersion": KQ, "kind": "ResourceFlavor", "metadata": {"name": "tpu7x"},
         "spec": {"nodeLabels": {"cloud.google.com/gke-tpu-accelerator": "tpu7x"}, "topologyName": "tpu7x-topology",
                  "tolerations": [{"key": "google.com/tpu", "operator": "Exists", "effect": "NoSchedule"}]}},
        {"apiVersion": KQ, "kind": "ResourceFlavor", "metadata": {"name": "cpu-standard"}},
        {"apiVersion": KQ, "kind": "AdmissionCheck", "metadata": {"name": "tpu7x-slice"},
         "spec": {"controllerName": "accelerator.gke.io/slice"}},
    ]  # fmt: skip
    for index in range(count - 1):
        team = f"team-{index:04d}"
        objects.append(_queue(team, chips))
        objects.append(
            {"apiVersion": KQ, "kind": "LocalQueue", "metadata": {"name": f"{team}-queue", "namespace": "kubemaker"},
             "spec": {"clusterQueue": team}}
        )  # fmt: skip
    objects.append(_queue("dev", chips, "dev"))
    for namespace in ("default", "falcon-jobs"):
        objects.append(
            {"apiVersion": KQ, "kind": "LocalQueue", "metadata": {"name": "default", "namespace": namespace},
             "spec": {"clusterQueue": "dev"}}
        )  # fmt: skip
    config = (ROOT / "tests" / "fixtures" / "kueue" / "rfc-4.1-configuration.yaml").read_text()
    objects.append(yaml.safe_load(config))
    return objects


def state(nodes: int) -> list[dict[str, Any]]:
    namespaces = [
        {"apiVersion": "v1", "kind": "Namespace",
         "metadata": {"name": name, "labels": {"kubernetes.io/metadata.name": name, **({TIER: tier} if tier else {})}}}
        for name, tier in (("kubemaker", "production"), ("default", "dev"), ("falcon-jobs", "dev"),
                           ("kube-system", ""), ("kueue-system", ""))
    ]  # fmt: skip
    items = []
    for index in range(nodes):
        cube, host = divmod(index, 16)
        labels = {
            "kubernetes.io/hostname": f"gke-tpu7x-{index}",
            "cloud.google.com/gke-nodepool": f"tpu7x-cube-{cube}",
            "cloud.google.com/gke-tpu-accelerator": "tpu7x",
            "cloud.google.com/gce-topology-block": f"block-{cube // 4}",
        }
        for geometry, hosts in PARTITIONS.items():
            labels[f"cloud.google.com/gke-tpu-partition-{geometry}-id"] = f"c{cube}-{host // hosts}"
        items.append(
            {"apiVersion": "v1", "kind": "Node", "metadata": {"name": f"gke-tpu7x-{index}", "labels": labels},
             "spec": {"taints": [{"key": "google.com/tpu", "value": "present", "effect": "NoSchedule"}]},
             "status": {"allocatable": {"cpu": "208", "memory": "720Gi", "ephemeral-storage": "200Gi",
                                        "google.com/tpu": "4", "pods": "110"}}}
        )  # fmt: skip
    return [
        {"apiVersion": "v1", "kind": "NamespaceList", "items": namespaces},
        {"apiVersion": "v1", "kind": "NodeList", "items": items},
    ]


def _dump(path: Path, objects: list[dict[str, Any]]) -> Path:
    path.write_text(yaml.dump_all(objects, Dumper=yaml.CSafeDumper, sort_keys=False))
    return path


def _staged(inputs: Path, cluster: Path) -> tuple[dict[str, float], int]:
    """One in-process run, seconds per stage, and how many findings it made."""
    from webhook.admin.judging import lint
    from webhook.admin.objectset import assemble
    from webhook.cli.formatters import FORMATTERS
    from webhook.cli.report import CheckResult, Report
    from webhook.kube.manifestyaml import FastManifestLoader
    from webhook.objects.sources import read_documents
    from webhook.rules.catalog import load_policy

    policy = load_policy(None).model_copy(update={"mode": "dynamic"})
    times: dict[str, float] = {}
    start = time.perf_counter()
    documents, errors = read_documents([str(inputs)], loader=FastManifestLoader)
    state_documents, state_errors = read_documents([str(cluster)], loader=FastManifestLoader)
    assert not errors and not state_errors
    times["read"] = time.perf_counter() - start
    start = time.perf_counter()
    objects, entries = assemble(documents, state_documents, policy)
    times["assemble"] = time.perf_counter() - start
    start = time.perf_counter()
    judged = lint(objects, entries, policy)
    times["lint"] = time.perf_counter() - start
    start = time.perf_counter()
    report = Report(mode="dynamic", command="lint-queues")
    for item in judged:
        report.results.append(CheckResult(item.entry.document, "", "", "", item.decision, item.skipped, "dynamic"))
    FORMATTERS["json"](report)
    times["render"] = time.perf_counter() - start
    findings = sum(len(item.decision.findings) for item in judged if item.decision is not None)
    return times, findings


def _process(inputs: Path, cluster: Path) -> tuple[float, int]:
    argv = [sys.executable, "-m", "webhook", "lint-queues", str(inputs), "--cluster-state", str(cluster),
            "--mode", "dynamic", "--output", "json"]  # fmt: skip
    start = time.perf_counter()
    done = subprocess.run(argv, cwd=ROOT, capture_output=True, check=False)
    return time.perf_counter() - start, done.returncode


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--queues", type=int, default=1000)
    parser.add_argument("--nodes", type=int, default=5000)
    parser.add_argument("--rounds", type=int, default=3)
    args = parser.parse_args()
    chips = args.nodes * 4
    with tempfile.TemporaryDirectory() as tmp:
        work = Path(tmp)
        cluster = _dump(work / "state.yaml", state(args.nodes))
        scenarios = {
            "clean": _dump(work / "clean.yaml", queues(args.queues, chips // args.queues)),
            "over": _dump(work / "over.yaml", queues(args.queues, chips // args.queues + 4)),
        }
        sizes = scenarios["clean"].stat().st_size // 1024, cluster.stat().st_size // 1024
        print(f"{args.queues} ClusterQueues, {args.nodes} Nodes: {sizes[0]} KiB input, {sizes[1]} KiB state")
        print("| run | findings | exit | process (s) | read | assemble | lint | render |")
        print("| --- | ---: | ---: | ---: | ---: | ---: | ---: | ---: |")
        for name, inputs in scenarios.items():
            staged = [_staged(inputs, cluster) for _ in range(args.rounds)]
            processes = [_process(inputs, cluster) for _ in range(args.rounds)]
            median = {stage: statistics.median(t[stage] for t, _ in staged) for stage in staged[0][0]}
            wall = statistics.median(p for p, _ in processes)
            print(
                f"| {name} | {staged[0][1]} | {processes[0][1]} | {wall:.2f} | {median['read']:.2f} | "
                f"{median['assemble']:.3f} | {median['lint']:.3f} | {median['render']:.3f} |"
            )
    return 0


if __name__ == "__main__":
    sys.exit(main())
