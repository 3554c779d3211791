"""Forbidden fields (SPEC §4, second table): things Kueue or the Slice Provisioner own.

All four judge what the user wrote, so they run only on the mutating path, where the
object is as submitted: Kueue's webhook sets ``spec.suspend`` and the Slice
Provisioner's injects ``podset-*`` annotations later in the chain.
"""

from __future__ import annotations

from collections.abc import Iterator
from typing import Final

from webhook.kube.fieldpaths import ANNOTATIONS, SPEC
from webhook.objects.workload import Workload
from webhook.policy.findings import Finding
from webhook.rules import RuleContext

EXCLUSIVE_TOPOLOGY: Final = "alpha.jobset.sigs.k8s.io/exclusive-topology"
PODSET_ANNOTATION_PREFIX: Final = "kueue.x-k8s.io/podset-"


def suspend_forbidden(workload: Workload, ctx: RuleContext) -> Iterator[Finding]:
    path = SPEC.child("suspend")
    if ctx.operation == "CREATE":
        if workload.suspend_set:
            yield Finding(
                "suspend-forbidden",
                path,
                f"spec.suspend is set ({str(workload.suspend).lower()}), but Kueue suspends and resumes the job itself",
                "remove spec.suspend",
            )
        return
    if ctx.old is None or ctx.old.suspended == workload.suspended:
        return
    if ctx.user.username in ctx.policy.suspend_allowed_users:
        return
    yield Finding(
        "suspend-forbidden",
        path,
        f"user {ctx.user.username!r} changed spec.suspend from {str(ctx.old.suspended).lower()} "
        f"to {str(workload.suspended).lower()}: only Kueue's controller may (a manual flip "
        "breaks its state machine)",
        f"leave spec.suspend to Kueue (to stop a job, delete the {workload.kind})",
    )


def pod_priority_class_forbidden(workload: Workload, ctx: RuleContext) -> Iterator[Finding]:
    for podset in workload.podsets:
        if podset.priority_class_name:
            yield Finding(
                "pod-priority-class-forbidden",
                podset.pod_spec_path.child("priorityClassName"),
                f"pod priorityClassName {podset.priority_class_name!r} triggers kubelet-level "
                "preemption and can outrank Kueue's guaranteed class",
                f"remove it and express priority with the {ctx.priority_label} label",
            )


def exclusive_topology_forbidden(workload: Workload, ctx: RuleContext) -> Iterator[Finding]:
    fix = "remove the annotation (Kueue's topology-aware scheduling places the slices)"
    problem = "exclusive placement conflicts with sub-slices sharing a cube"
    if EXCLUSIVE_TOPOLOGY in workload.annotations:
        yield Finding("exclusive-topology-forbidden", ANNOTATIONS.key(EXCLUSIVE_TOPOLOGY), problem, fix)
    for podset in workload.podsets:
        if EXCLUSIVE_TOPOLOGY in podset.job_annotations:
            path = podset.path.child("template", "metadata", "annotations").key(EXCLUSIVE_TOPOLOGY)
            yield Finding("exclusive-topology-forbidden", path, problem, fix)
        if EXCLUSIVE_TOPOLOGY in podset.annotations:
            path = podset.annotations_path.key(EXCLUSIVE_TOPOLOGY)
            yield Finding("exclusive-topology-forbidden", path, problem, fix)


def podset_annotation_forbidden(workload: Workload, ctx: RuleContext) -> Iterator[Finding]:
    annotation = ctx.tpu.slice_topology_annotation
    for podset in workload.podsets:
        for key in podset.annotations:
            if key.startswith(PODSET_ANNOTATION_PREFIX):
                yield Finding(
                    "podset-annotation-forbidden",
                    podset.annotations_path.key(key),
                    "the Slice Provisioner derives the podset-* annotations in dynamic mode",
                    f"remove it and declare the slice with {annotation}",
                )
