"""The cluster fixtures (tests/fixtures/cluster) as objects, as a state read from files, and as API server contents."""

from __future__ import annotations

from typing import Any

from cluster_apiserver import FakeApiServer
from support import CLUSTER_RULES, FIXTURES

from webhook.cluster import kinds as k
from webhook.cluster.statefiles import state_from_objects
from webhook.cluster.watch import WatchSettings
from webhook.engine.decision import Decision
from webhook.objects.sources import load_documents
from webhook.policy.config import Policy

POLICY = Policy()
#: watch settings that page and back off quickly enough for tests
FAST = WatchSettings(page_size=2, watch_seconds=10, backoff_initial=0.05, backoff_max=0.2)
#: every kind the cache watches
ALL = frozenset(kind.name for kind in k.KINDS)
OBJECTS: list[dict[str, Any]] = [d.data for d in load_documents([str(FIXTURES / "cluster")])]
#: the fixtures as a state read from files (what ``check --cluster-state`` judges against)
STATE = state_from_objects(OBJECTS, POLICY)


def load(api: FakeApiServer) -> FakeApiServer:
    """``api`` holding the fixtures of every kind the cache watches."""
    for obj in OBJECTS:
        if obj["kind"] in k.BY_KIND:  # the fixtures also hold kinds no rule reads (WorkloadPriorityClass)
            api.put(k.BY_KIND[obj["kind"]], obj)
    return api


def team_a_workload(name: str, chips: int) -> dict[str, Any]:
    """A kueue.x-k8s.io Workload of the fixtures' namespace kubemaker, for LocalQueue team-a-queue, asking
    ``chips`` TPU chips of 4x4x4 (four a pod) at the guaranteed priority 1000."""
    return {
        "apiVersion": "kueue.x-k8s.io/v1beta2",
        "kind": "Workload",
        "metadata": {"name": name, "namespace": "kubemaker", "creationTimestamp": "2030-01-01T00:00:00Z"},
        "spec": {
            "queueName": "team-a-queue",
            "priority": 1000,
            "podSets": [
                {
                    "name": "workers",
                    "count": chips // 4,
                    # what Kueue writes from a static job's slice annotations
                    "topologyRequest": {
                        "podSetSliceRequiredTopology": "cloud.google.com/gke-nodepool",
                        "podSetSliceSize": 16,
                    },
                    "template": {
                        "spec": {
                            "nodeSelector": {"cloud.google.com/gke-tpu-topology": "4x4x4"},
                            "containers": [{"name": "c", "resources": {"requests": {"google.com/tpu": "4"}}}],
                        }
                    },
                }
            ],
        },
    }


def cluster_findings(decision: Decision) -> dict[str, list[str]]:
    """The cluster rules' finding lines by rule (each "<what is wrong>; <how to fix>", one "; " apart)."""
    out: dict[str, list[str]] = {}
    for finding in decision.findings:
        if finding.rule in CLUSTER_RULES:
            assert "; " not in finding.problem and "; " not in finding.fix, finding.line()
            out.setdefault(finding.rule, []).append(finding.line())
    return out
