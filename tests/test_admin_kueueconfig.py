"""Kueue's Configuration as Kueue reads it: strict decoding, start-up validation, feature gates."""

from __future__ import annotations

import time
from typing import Any

import pytest
import yaml

from webhook.admin.kueueconfig import (
    cli_gates,
    decode,
    frameworks,
    gate_enabled,
    parse_gates,
    seconds,
    validate,
    version_below,
)

#: Kueue v0.19.2's shipped config/components/manager/controller_manager_config.yaml (its
#: uncommented part), the configuration every install starts from: it must read clean.
KUEUE_DEFAULT = """\
apiVersion: config.kueue.x-k8s.io/v1beta2
kind: Configuration
health:
  healthProbeBindAddress: :8081
metrics:
  bindAddress: :8443
webhook:
  port: 9443
leaderElection:
  leaderElect: true
  resourceName: c1f6bfd2.kueue.x-k8s.io
controller:
  groupKindConcurrency:
    Job.batch: 5
    Pod: 5
    Workload.kueue.x-k8s.io: 10
    LocalQueue.kueue.x-k8s.io: 5
    Cohort.kueue.x-k8s.io: 1
    ClusterQueue.kueue.x-k8s.io: 5
    ResourceFlavor.kueue.x-k8s.io: 1
clientConnection:
  qps: 300
  burst: 500
integrations:
  frameworks:
  - "batch/job"
  - "kubeflow.org/mpijob"
  - "ray.io/rayjob"
  - "ray.io/raycluster"
  - "ray.io/rayservice"
  - "jobset.x-k8s.io/jobset"
  - "workload.codeflare.dev/appwrapper"
  - "trainer.kubeflow.org/trainjob"
  - "pod"
  - "deployment"
  - "statefulset"
  - "leaderworkerset.x-k8s.io/leaderworkerset"
"""


def test_kueues_own_default_configuration_reads_clean() -> None:
    config = yaml.safe_load(KUEUE_DEFAULT)
    assert decode(config) == [] and validate(config, None) == []


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        ("10m", 600.0),
        ("1h30m", 5400.0),
        ("-5s", -5.0),
        ("0", 0.0),
        ("1.5h", 5400.0),
        ("10", None),
        ("10 minutes", None),
    ],
)
def test_durations_as_go_parses_them(text: str, expected: float | None) -> None:
    assert seconds(text) == expected


def _problems(config: dict[str, Any]) -> list[tuple[str, str]]:
    return [(str(p.path), p.wording) for p in [*decode(config), *validate(config, None)]]


def test_decoding_names_each_field_it_refuses() -> None:
    config = {
        "apiVersion": "config.kueue.x-k8s.io/v1beta2",
        "kind": "Configuration",
        "fairSharing": {"enable": True, "preemptionStrategies": ["LessThanInitialShare"]},
        "waitForPodsReady": {"timeout": 600, "blockAdmision": False},
        "featureGates": {"TopologyAwareScheduling": "true"},
        "controller": {"groupKindConcurrency": {"Job.batch": 1.5}},
        "integrations": {"frameworks": "batch/job"},
    }
    assert _problems(config) == [
        ("fairSharing.enable", "removed-field"),
        ("waitForPodsReady.timeout", "wrong-type"),
        ("waitForPodsReady.blockAdmision", "unknown-field"),
        ('featureGates["TopologyAwareScheduling"]', "wrong-type"),
        ('controller.groupKindConcurrency["Job.batch"]', "wrong-type"),
        ("integrations.frameworks", "wrong-type"),
    ]


def test_validation_restates_kueues_start_up_checks() -> None:
    config = {
        "apiVersion": "config.kueue.x-k8s.io/v1beta2",
        "kind": "Configuration",
        "waitForPodsReady": {"timeout": "-1m", "requeuingStrategy": {"timestamp": "Now", "backoffLimitCount": -1}},
        "integrations": {"frameworks": ["batch/job", "batch/job", "kubeflow.org/pytorch"]},
        "fairSharing": {},
        "managedJobsNamespaceSelector": {"matchExpressions": [{"key": "x", "operator": "Exists", "values": ["a"]}]},
        "visibilityServer": {"bindPort": 70000},
        "featureGates": {"TopologyAwareSchedulin": True},
    }
    assert _problems(config) == [
        ("waitForPodsReady.timeout", "invalid"),
        ("waitForPodsReady.requeuingStrategy.timestamp", "invalid"),
        ("waitForPodsReady.requeuingStrategy.backoffLimitCount", "invalid"),
        ("integrations.frameworks[1]", "invalid"),
        ("integrations.frameworks[2]", "invalid"),
        ("fairSharing.preemptionStrategies", "invalid"),
        ("managedJobsNamespaceSelector.matchExpressions[0].values", "invalid"),
        ("visibilityServer.bindPort", "invalid"),
        ('featureGates["TopologyAwareSchedulin"]', "invalid"),
    ]
    assert validate({"kind": "Configuration"}, None)[0].detail.startswith("is missing: use config.kueue.x-k8s.io")


def test_the_managed_namespaces_must_leave_out_kueues_own() -> None:
    base = {"apiVersion": "config.kueue.x-k8s.io/v1beta2", "kind": "Configuration"}
    selector = {"matchExpressions": [{"key": "kubernetes.io/metadata.name", "operator": "NotIn", "values": ["x"]}]}
    details = [p.detail for p in validate({**base, "managedJobsNamespaceSelector": selector}, None)]
    assert details == [
        "matches the 'kube-system' namespace, which Kueue refuses to manage",
        "matches the 'kueue-system' namespace, which Kueue refuses to manage",
    ]
    own = [p.detail for p in validate({**base, "namespace": "x", "managedJobsNamespaceSelector": selector}, None)]
    assert own == ["matches the 'kube-system' namespace, which Kueue refuses to manage"]


def test_frameworks_default_to_batch_job() -> None:
    assert frameworks({}) == ["batch/job"] and frameworks({"integrations": {"frameworks": ["pod"]}}) == ["pod"]


def test_feature_gates_on_the_command_line_and_in_the_configuration() -> None:
    assert parse_gates("A=true, B=false") == {"A": "true", "B": "false"}
    assert cli_gates(["--zap-log-level=2", "--feature-gates=A=true"]) == "A=true"
    assert cli_gates(["--feature-gates", "A=true"]) == "A=true" and cli_gates(["--v=2"]) is None
    assert gate_enabled({"featureGates": {"A": True}}, None, "A")
    assert not gate_enabled({"featureGates": {"A": True}}, "B=true", "A")  # the command line wins
    both = validate(
        {"apiVersion": "config.kueue.x-k8s.io/v1beta2", "kind": "Configuration", "featureGates": {}}, "A=true"
    )
    assert [p.detail for p in both] == [
        "is set while the controller's Deployment also passes --feature-gates (gates in both places)"
    ]


@pytest.mark.parametrize(
    ("image", "below"),
    [
        ("registry.k8s.io/kueue/kueue:v0.19.2", True),
        ("registry.k8s.io/kueue/kueue:v0.20.0", False),
        ("registry.k8s.io/kueue/kueue:v1.0.0", False),
        ("localhost:5000/kueue", None),
        ("kueue@sha256:abc", None),
    ],
)
def test_kueues_version_from_its_image(image: str, below: bool | None) -> None:
    assert version_below(image, "v0.20") is below


def test_a_megabyte_of_unknown_names_is_judged_in_bounded_time() -> None:
    """Kueue's ConfigMap holds up to a megabyte: 50,000 unknown feature gates and 50,000 unknown
    fields are each a problem, but only the first ``HINTED`` get a "did you mean" (each costs a
    pass over every known name; the answer shows a few dozen findings)."""
    gates = {f"Gate{i:07d}": True for i in range(50_000)}  # as long as many gates: each compared with them all
    config = {"apiVersion": "config.kueue.x-k8s.io/v1beta2", "kind": "Configuration", "featureGates": gates}
    config |= {f"field{i:05d}": "x" for i in range(50_000)}
    started = time.perf_counter()
    problems = [*decode(config), *validate(config, None)]
    assert time.perf_counter() - started < 2
    assert len(problems) == 100_000
    gated = {"featureGates": {"PartialAdmision": True}}
    [problem] = [p for p in validate(gated, None) if str(p.path).startswith("featureGates")]
    assert problem.detail == "'PartialAdmision' is not a feature gate Kueue has (did you mean 'PartialAdmission'?)"
    long = "x" * 100_000
    [problem] = [p for p in validate({"featureGates": {long: True}}, None) if str(p.path).startswith("featureGates")]
    assert len(problem.detail) < 200
