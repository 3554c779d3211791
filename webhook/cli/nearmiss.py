"""Near misses in a judged manifest: a label, annotation or field one edit from one that counts.

``cloud.google.com/gke-tpu-slice-topolgy`` is a key like any other to Kubernetes and to
the rules: the job is judged as if the annotation were absent, and the denial names the
key it lacks without seeing the one beside it. ``check`` says "did you mean" for those,
as it does for a misspelt kind. Only keys one edit from a known one are named, so a
field this list does not know is never called a typo.
"""

from __future__ import annotations

from collections.abc import Iterator, Mapping
from typing import Any, Final

from webhook.kube.typos import did_you_mean
from webhook.policy.config import Policy

#: Kueue's pod-template annotations a job sets (TAS and the slice annotations)
KUEUE_ANNOTATIONS: Final = (
    "kueue.x-k8s.io/podset-required-topology",
    "kueue.x-k8s.io/podset-preferred-topology",
    "kueue.x-k8s.io/podset-slice-required-topology",
    "kueue.x-k8s.io/podset-slice-size",
)
#: the fields of the parts of a job the rules read, by where they are
FIELDS: Final[Mapping[str, tuple[str, ...]]] = {
    "metadata": ("name", "namespace", "generateName", "labels", "annotations"),
    "jobset": (
        "replicatedJobs", "network", "successPolicy", "failurePolicy", "startupPolicy", "suspend", "coordinator",
        "managedBy", "ttlSecondsAfterFinished",
    ),
    "replicatedJob": ("name", "groupName", "template", "replicas", "dependsOn"),
    "job": (
        "parallelism", "completions", "completionMode", "template", "backoffLimit", "suspend", "activeDeadlineSeconds",
        "podFailurePolicy", "ttlSecondsAfterFinished", "managedBy",
    ),
    "deployment": ("replicas", "selector", "template", "strategy", "minReadySeconds", "paused"),
    "pod": (
        "containers", "initContainers", "nodeSelector", "tolerations", "affinity", "priorityClassName",
        "schedulerName", "restartPolicy", "serviceAccountName", "volumes", "subdomain", "hostNetwork",
    ),
}  # fmt: skip


def _keys(policy: Policy) -> tuple[str, ...]:
    """The label and annotation keys the rules read."""
    tpu = policy.tpu
    return (
        policy.queue_label,
        policy.priority_label,
        tpu.accelerator_label,
        tpu.topology_label,
        tpu.slice_topology_annotation,
        *KUEUE_ANNOTATIONS,
    )


def _meant_key(key: str, known: tuple[str, ...]) -> str | None:
    """The known key ``key`` is one edit from: whole, or by its name when it has no prefix."""
    if key in known:
        return None
    meant = did_you_mean(key, known)
    if meant is None and "/" not in key:
        names = {name.rpartition("/")[2]: name for name in known}
        by_name = did_you_mean(key, names)
        meant = names[by_name] if by_name is not None else None
    return meant


def _mapping(value: Any) -> Mapping[str, Any]:
    return value if isinstance(value, Mapping) else {}


def _fields(path: str, obj: Mapping[str, Any], where: str) -> Iterator[str]:
    known = FIELDS[where]
    for key in obj:
        meant = did_you_mean(str(key), known) if key not in known else None
        if meant is not None:
            yield f"{path}.{key}: did you mean {meant}?"


def _key_maps(path: str, metadata: Mapping[str, Any]) -> Iterator[tuple[str, Mapping[str, Any]]]:
    for part in ("labels", "annotations"):
        yield f"{path}.{part}", _mapping(metadata.get(part))


def _pod_templates(kind: str, spec: Mapping[str, Any]) -> Iterator[tuple[str, Mapping[str, Any], Mapping[str, Any]]]:
    """(path, template, its owner's spec) of each pod template, with the job's own spec fields' owner."""
    if kind == "JobSet":
        for index, replicated in enumerate(spec.get("replicatedJobs") or ()):
            job = _mapping(_mapping(_mapping(replicated).get("template")).get("spec"))
            yield f"spec.replicatedJobs[{index}].template.spec.template", _mapping(job.get("template")), job
    else:
        yield "spec.template", _mapping(spec.get("template")), spec


def near_misses(obj: Mapping[str, Any], kind: str, policy: Policy) -> list[str]:
    """Each near miss in ``obj`` (a JobSet, Job or Deployment) as ``path: did you mean X?``."""
    keys = _keys(policy)
    hints: list[str] = []
    metadata = _mapping(obj.get("metadata"))
    spec = _mapping(obj.get("spec"))
    maps = list(_key_maps("metadata", metadata))
    hints += _fields("metadata", metadata, "metadata")
    hints += _fields("spec", spec, {"JobSet": "jobset", "Job": "job"}.get(kind, "deployment"))
    if kind == "JobSet":
        for index, replicated in enumerate(spec.get("replicatedJobs") or ()):
            hints += _fields(f"spec.replicatedJobs[{index}]", _mapping(replicated), "replicatedJob")
            job = _mapping(_mapping(_mapping(replicated).get("template")).get("spec"))
            hints += _fields(f"spec.replicatedJobs[{index}].template.spec", job, "job")
    for path, template, _ in _pod_templates(kind, spec):
        template_metadata = _mapping(template.get("metadata"))
        pod = _mapping(template.get("spec"))
        maps += _key_maps(f"{path}.metadata", template_metadata)
        maps.append((f"{path}.spec.nodeSelector", _mapping(pod.get("nodeSelector"))))
        hints += _fields(f"{path}.spec", pod, "pod")
    for path, mapping in maps:
        for key in mapping:
            meant = _meant_key(str(key), keys)
            if meant is not None:
                hints.append(f'{path}["{key}"]: did you mean {meant}?')
    return hints
