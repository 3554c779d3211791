"""Forbidden fields: things Kueue or the Slice Provisioner own.

All four judge what the user wrote, so they run only on the mutating path, where the
object is as submitted: Kueue's webhook sets ``spec.suspend`` and the Slice
Provisioner's injects ``podset-*`` annotations later in the chain.
"""

from __future__ import annotations

from collections.abc import Iterator
from typing import Final

from webhook.kube.fieldpaths import ANNOTATIONS, SPEC
from webhook.objects.kinds import JOB
from webhook.objects.workload import Workload
from webhook.policy.config import Policy
from webhook.policy.findings import Finding
from webhook.rules import DYNAMIC, JOBS, JOBSET_ONLY, Message, Rule, RuleContext, VapExport
from webhook.rules.cel import (
    ANN,
    JOB_ANN,
    JOB_PATH,
    POD_ANNOTATIONS_PATH,
    POD_SPEC_PATH,
    Expr,
    Validation,
    items,
    lit,
)
from webhook.rules.cel import (
    JOBS as CEL_JOBS,
)

FAMILY: Final = "forbidden"
EXCLUSIVE_TOPOLOGY: Final = "alpha.jobset.sigs.k8s.io/exclusive-topology"
PODSET_ANNOTATION_PREFIX: Final = "kueue.x-k8s.io/podset-"


# ------------------------------------------------------------------ suspend-forbidden


#: (a FieldPath is immutable: built once, not on every request that has nothing to report)
_SUSPEND: Final = SPEC.child("suspend")


def _user_set_suspend(workload: Workload) -> bool:
    """Whether a created object's ``spec.suspend`` is known to be its user's.

    The API server defaults a batch/v1 Job's absent ``spec.suspend`` to false before any
    webhook is called, so on a Job false is what every create carries: only true is
    known to be written. A JobSet's schema defaults nothing there."""
    if workload.kind == JOB:
        return workload.suspend is True
    return workload.suspend_set


def _suspend(workload: Workload, ctx: RuleContext) -> Iterator[Finding]:
    path = _SUSPEND
    if ctx.operation == "CREATE":
        if _user_set_suspend(workload):
            yield SUSPEND_FORBIDDEN.finding(path, value=str(workload.suspend).lower())
        return
    if ctx.old is None or ctx.old.suspended == workload.suspended:
        return
    if ctx.user.username in ctx.policy.suspend_allowed_users:
        return
    yield SUSPEND_FORBIDDEN.finding(
        path,
        "flipped",
        user=ctx.user.username,
        old=str(ctx.old.suspended).lower(),
        new=str(workload.suspended).lower(),
        kind=workload.kind,
    )


def _suspend_cel(policy: Policy) -> Iterator[Validation]:
    # Narrowed: Kueue's webhook sets spec.suspend: true on every job it manages, so only
    # false can be known to be the user's (see the rule's VAP note), and on a JobSet only:
    # the API server defaults a Job's to false.
    line = SUSPEND_FORBIDDEN.finding(_SUSPEND, value="false").line()
    yield SUSPEND_FORBIDDEN.validation(
        policy,
        f"object.kind == '{JOB}' || object.?spec.?suspend.orValue(true) != false",
        line.removeprefix(f"[{SUSPEND_FORBIDDEN.id}] "),
    )


SUSPEND_FORBIDDEN: Final = Rule(
    "suspend-forbidden",
    "spec.suspend set by hand",
    FAMILY,
    _suspend,
    {
        "": Message(
            "spec.suspend is set ({value}), but Kueue suspends and resumes the job itself", "remove spec.suspend"
        ),
        "flipped": Message(
            "user {user!r} changed spec.suspend from {old} to {new}: only Kueue's controller may (a manual flip "
            "breaks its state machine)",
            "leave spec.suspend to Kueue (to stop a job, delete the {kind})",
        ),
    },
    VapExport(
        "narrowed to a JobSet's spec.suspend: false; Kueue's webhook sets true itself, so a VAP cannot tell a "
        "user's true, and the API server defaults a Job's to false",
        _suspend_cel,
    ),
    subject="submitted",
    on_update=True,
    kinds=JOBS,
    why="Kueue suspends and resumes jobs; a manual flip breaks its state machine",
)


# ------------------------------------------------------------------ pod-priority-class-forbidden


def _pod_priority_class(workload: Workload, ctx: RuleContext) -> Iterator[Finding]:
    for podset in workload.podsets:
        if podset.priority_class_name:
            yield POD_PRIORITY_CLASS_FORBIDDEN.finding(
                podset.pod_spec_path.child("priorityClassName"),
                value=podset.priority_class_name,
                label=ctx.priority_label,
            )


def _pod_priority_class_cel(policy: Policy) -> Iterator[Validation]:
    pcn = "j.template.?spec.?template.?spec.?priorityClassName.orValue('')"
    item = POD_PRIORITY_CLASS_FORBIDDEN.cel_item(
        [POD_SPEC_PATH, ".priorityClassName"], value=Expr(pcn), label=policy.priority_label
    )
    yield POD_PRIORITY_CLASS_FORBIDDEN.per_job(
        policy, CEL_JOBS, f"{pcn} != ''", item, "a pod template sets priorityClassName"
    )


POD_PRIORITY_CLASS_FORBIDDEN: Final = Rule(
    "pod-priority-class-forbidden",
    "Pod priorityClassName set",
    FAMILY,
    _pod_priority_class,
    {
        "": Message(
            "pod priorityClassName {value!r} triggers kubelet-level preemption and can outrank Kueue's "
            "guaranteed class",
            "remove it and express priority with the {label} label",
        )
    },
    VapExport("no other webhook sets a JobSet's pod priorityClassName", _pod_priority_class_cel),
    subject="submitted",
    why="native pod priority preempts at the kubelet and can outrank guaranteed through Kueue's fallback",
)


# ------------------------------------------------------------------ exclusive-topology-forbidden


def _exclusive_topology(workload: Workload, ctx: RuleContext) -> Iterator[Finding]:
    rule = EXCLUSIVE_TOPOLOGY_FORBIDDEN
    if EXCLUSIVE_TOPOLOGY in workload.annotations:
        yield rule.finding(ANNOTATIONS.key(EXCLUSIVE_TOPOLOGY))
    for podset in workload.podsets:
        if EXCLUSIVE_TOPOLOGY in podset.job_annotations:
            yield rule.finding(podset.path.child("template", "metadata", "annotations").key(EXCLUSIVE_TOPOLOGY))
        if EXCLUSIVE_TOPOLOGY in podset.annotations:
            yield rule.finding(podset.annotations_path.key(EXCLUSIVE_TOPOLOGY))


def _exclusive_topology_cel(policy: Policy) -> Iterator[Validation]:
    if policy.mode != "dynamic":
        return
    rule = EXCLUSIVE_TOPOLOGY_FORBIDDEN
    ex = lit(EXCLUSIVE_TOPOLOGY)
    key = f'["{EXCLUSIVE_TOPOLOGY}"]'
    root_bad = f"{ex} in object.metadata.?annotations.orValue({{}})"
    job_bad = f"({ex} in {JOB_ANN} || {ex} in {ANN})"
    item = items(
        rule.id,
        (f"{ex} in {JOB_ANN}", rule.cel_item([JOB_PATH, f".template.metadata.annotations{key}"])),
        (f"{ex} in {ANN}", rule.cel_item([POD_ANNOTATIONS_PATH, key])),
    )
    root_line = rule.cel_item([f"metadata.annotations{key}"])
    lines = f"[{root_bad} ? {root_line} : ''] + {CEL_JOBS}.filter(j, {job_bad}).map(j, {item})"
    yield rule.validation(
        policy,
        f"!({root_bad}) && !{CEL_JOBS}.exists(j, {job_bad})",
        f"the {EXCLUSIVE_TOPOLOGY} annotation is set",
        f"'[{rule.id}] ' + ({lines}).filter(s, s != '').join('; [{rule.id}] ')",
    )


EXCLUSIVE_TOPOLOGY_FORBIDDEN: Final = Rule(
    "exclusive-topology-forbidden",
    "Exclusive topology annotation",
    FAMILY,
    _exclusive_topology,
    {
        "": Message(
            "exclusive placement conflicts with sub-slices sharing a cube",
            "remove the annotation (Kueue's topology-aware scheduling places the slices)",
        )
    },
    VapExport("no other webhook adds the annotation", _exclusive_topology_cel),
    modes=DYNAMIC,
    subject="submitted",
    kinds=JOBSET_ONLY,
    why="exclusive placement conflicts with sub-slices sharing a cube",
)


# ------------------------------------------------------------------ podset-annotation-forbidden


def _podset_annotation(workload: Workload, ctx: RuleContext) -> Iterator[Finding]:
    annotation = ctx.tpu.slice_topology_annotation
    for podset in workload.podsets:
        for key in podset.annotations:
            if key.startswith(PODSET_ANNOTATION_PREFIX):
                yield PODSET_ANNOTATION_FORBIDDEN.finding(podset.annotations_path.key(key), annotation=annotation)


PODSET_ANNOTATION_FORBIDDEN: Final = Rule(
    "podset-annotation-forbidden",
    "podset-* annotation written by hand",
    FAMILY,
    _podset_annotation,
    {
        "": Message(
            "the Slice Provisioner derives the podset-* annotations in dynamic mode",
            "remove it and declare the slice with {annotation}",
        )
    },
    VapExport("the Slice Provisioner's webhook injects podset-* annotations before a VAP runs"),
    modes=DYNAMIC,
    subject="submitted",
    kinds=JOBS,
    why="the Slice Provisioner derives them from the slice-topology annotation",
)

RULES: Final = (
    SUSPEND_FORBIDDEN,
    POD_PRIORITY_CLASS_FORBIDDEN,
    EXCLUSIVE_TOPOLOGY_FORBIDDEN,
    PODSET_ANNOTATION_FORBIDDEN,
)
