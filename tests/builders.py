"""Object builders for tests, in the style of Kueue's test wrappers (``MakeClusterQueue(...).Obj()``).

Each builder starts from one of the fixture objects (RFC-0033's examples) and changes it
through named methods, so a test says what it changes (``.replicas(3).priority("guaranteed")``)
instead of spelling a path into the object. ``obj()`` hands the object out; every builder
works on its own copy of the fixture.
"""

from __future__ import annotations

from typing import Any, Self

from support import load_deployment, load_job, load_jobset

TPU = "google.com/tpu"
QUEUE_LABEL = "kueue.x-k8s.io/queue-name"
PRIORITY_LABEL = "kueue.x-k8s.io/priority-class"
TOPOLOGY_LABEL = "cloud.google.com/gke-tpu-topology"
SLICE_TOPOLOGY = "cloud.google.com/gke-tpu-slice-topology"


class MetadataBuilder:
    """What every Kubernetes object has: a name, a namespace, labels."""

    def __init__(self, obj: dict[str, Any]) -> None:
        self._obj = obj

    def obj(self) -> dict[str, Any]:
        return self._obj

    def name(self, name: str) -> Self:
        self._obj["metadata"]["name"] = name
        return self

    def namespace(self, namespace: str) -> Self:
        self._obj["metadata"]["namespace"] = namespace
        return self

    def label(self, key: str, value: str | None) -> Self:
        """Set a label, or remove it with ``None``."""
        labels = self._obj["metadata"].setdefault("labels", {})
        if value is None:
            labels.pop(key, None)
        else:
            labels[key] = value
        return self


class _ObjectBuilder(MetadataBuilder):
    """What every judged kind has: metadata, labels, and one or more pod templates."""

    def queue(self, name: str | None) -> Self:
        return self.label(QUEUE_LABEL, name)

    def priority(self, name: str | None) -> Self:
        return self.label(PRIORITY_LABEL, name)

    def _pod(self, job: int) -> dict[str, Any]:
        raise NotImplementedError

    def pod_spec(self, job: int = 0) -> dict[str, Any]:
        """The pod spec itself, for a change no method names."""
        spec: dict[str, Any] = self._pod(job).setdefault("spec", {})
        return spec

    def node_selector(self, key: str, value: str | None, job: int = 0) -> Self:
        """Set a nodeSelector entry, or remove it with ``None``."""
        selector = self.pod_spec(job).setdefault("nodeSelector", {})
        if value is None:
            selector.pop(key, None)
        else:
            selector[key] = value
        return self

    def pod_annotation(self, key: str, value: str | None, job: int = 0) -> Self:
        annotations = self._pod(job).setdefault("metadata", {}).setdefault("annotations", {})
        if value is None:
            annotations.pop(key, None)
        else:
            annotations[key] = value
        return self

    def request(self, resource: str, value: Any, job: int = 0, container: int = 0, kind: str = "requests") -> Self:
        """Set a container's request (``kind="limits"``: its limit), or remove it with ``None``."""
        resources = self.pod_spec(job)["containers"][container].setdefault("resources", {})
        values = resources.setdefault(kind, {})
        if value is None:
            values.pop(resource, None)
        else:
            values[resource] = value
        return self

    def init_containers(self, containers: list[dict[str, Any]], job: int = 0) -> Self:
        self.pod_spec(job)["initContainers"] = containers
        return self

    def tolerations(self, tolerations: list[dict[str, Any]], job: int = 0) -> Self:
        self.pod_spec(job)["tolerations"] = tolerations
        return self

    def required_affinity(self, key: str, operator: str, values: list[str], job: int = 0) -> Self:
        """A required node affinity of one term with one expression."""
        term = {"matchExpressions": [{"key": key, "operator": operator, "values": values}]}
        required = {"requiredDuringSchedulingIgnoredDuringExecution": {"nodeSelectorTerms": [term]}}
        self.pod_spec(job)["affinity"] = {"nodeAffinity": required}
        return self

    def pod_priority_class(self, name: str, job: int = 0) -> Self:
        self.pod_spec(job)["priorityClassName"] = name
        return self


class JobSetBuilder(_ObjectBuilder):
    def _job(self, job: int) -> dict[str, Any]:
        replicated: dict[str, Any] = self._obj["spec"]["replicatedJobs"][job]
        return replicated

    def _pod(self, job: int) -> dict[str, Any]:
        pod: dict[str, Any] = self._job(job)["template"]["spec"]["template"]
        return pod

    def replicas(self, count: int, job: int = 0) -> Self:
        self._job(job)["replicas"] = count
        return self

    def parallelism(self, count: int, job: int = 0) -> Self:
        self._job(job)["template"]["spec"]["parallelism"] = count
        return self

    def suspend(self, value: bool) -> Self:
        self._obj["spec"]["suspend"] = value
        return self


class JobBuilder(_ObjectBuilder):
    def _pod(self, job: int) -> dict[str, Any]:
        pod: dict[str, Any] = self._obj["spec"]["template"]
        return pod

    def parallelism(self, count: int) -> Self:
        self._obj["spec"]["parallelism"] = count
        return self

    def suspend(self, value: bool) -> Self:
        self._obj["spec"]["suspend"] = value
        return self


class DeploymentBuilder(_ObjectBuilder):
    def _pod(self, job: int) -> dict[str, Any]:
        pod: dict[str, Any] = self._obj["spec"]["template"]
        return pod

    def replicas(self, count: int) -> Self:
        self._obj["spec"]["replicas"] = count
        return self


def jobset(fixture: str = "rfc-4.6-static") -> JobSetBuilder:
    """A JobSet from ``tests/fixtures/jobsets/<fixture>.yaml``."""
    return JobSetBuilder(load_jobset(fixture))


def job(fixture: str = "rfc-job-static") -> JobBuilder:
    """A batch/v1 Job from ``tests/fixtures/jobs/<fixture>.yaml``."""
    return JobBuilder(load_job(fixture))


def deployment(fixture: str = "service-deployment") -> DeploymentBuilder:
    """An apps/v1 Deployment from ``tests/fixtures/deployments/<fixture>.yaml``."""
    return DeploymentBuilder(load_deployment(fixture))


#: the label ``audit --apply`` puts on the reports it owns
MANAGED_BY = {"app.kubernetes.io/managed-by": "tpu-admission"}


def policy_report(name: str, namespace: str = "", labels: dict[str, str] | None = MANAGED_BY) -> dict[str, Any]:
    """A one-result PolicyReport (namespaced) or ClusterPolicyReport, as ``audit --apply`` writes them."""
    metadata: dict[str, Any] = {"name": name}
    if namespace:
        metadata["namespace"] = namespace
    if labels:
        metadata["labels"] = labels
    return {
        "apiVersion": "wgpolicyk8s.io/v1alpha2",
        "kind": "PolicyReport" if namespace else "ClusterPolicyReport",
        "metadata": metadata,
        "summary": {"pass": 1},
        "results": [{"policy": "tpu-admission", "result": "pass"}],
    }
