"""Forbidden fields as CEL: ``spec.suspend``, pod ``priorityClassName``, exclusive topology.

The CEL side of ``webhook/rules/forbidden.py``.
"""

from __future__ import annotations

from webhook.export.celtext import (
    ANN,
    JOB_ANN,
    JOB_PATH,
    JOBS,
    POD_ANNOTATIONS_PATH,
    POD_SPEC_PATH,
    cat,
    items,
    lit,
    per_job,
    shown,
)
from webhook.export.vap.common import Validation, validation
from webhook.policy.config import Policy
from webhook.rules.forbidden import EXCLUSIVE_TOPOLOGY


def forbidden_rules(policy: Policy) -> list[Validation]:
    out: list[Validation] = []
    rule = "suspend-forbidden"
    # Narrowed: Kueue's webhook sets spec.suspend: true on every job it manages, so only
    # false can be known to be the user's (catalog.VAP_EXPORT).
    out.append(
        validation(
            policy,
            rule,
            "object.?spec.?suspend.orValue(true) != false",
            f"[{rule}] spec.suspend: spec.suspend is set (false), but Kueue suspends and resumes the job "
            "itself; remove spec.suspend",
        )
    )
    rule = "pod-priority-class-forbidden"
    pcn = "j.template.?spec.?template.?spec.?priorityClassName.orValue('')"
    expression, message = per_job(
        rule,
        JOBS,
        f"{pcn} != ''",
        cat(
            POD_SPEC_PATH,
            ".priorityClassName: pod priorityClassName ",
            shown(pcn),
            " triggers kubelet-level preemption and can outrank Kueue's guaranteed class; "
            f"remove it and express priority with the {policy.priority_label} label",
        ),
    )
    out.append(validation(policy, rule, expression, f"[{rule}] a pod template sets priorityClassName", message))
    if policy.mode == "dynamic":
        rule = "exclusive-topology-forbidden"
        ex = lit(EXCLUSIVE_TOPOLOGY)
        tail = (
            "exclusive placement conflicts with sub-slices sharing a cube; "
            "remove the annotation (Kueue's topology-aware scheduling places the slices)"
        )
        root_bad = f"{ex} in object.metadata.?annotations.orValue({{}})"
        job_bad = f"({ex} in {JOB_ANN} || {ex} in {ANN})"
        item = items(
            rule,
            (f"{ex} in {JOB_ANN}", cat(JOB_PATH, f'.template.metadata.annotations["{EXCLUSIVE_TOPOLOGY}"]: {tail}')),
            (f"{ex} in {ANN}", cat(POD_ANNOTATIONS_PATH, f'["{EXCLUSIVE_TOPOLOGY}"]: {tail}')),
        )
        root_line = lit(f'metadata.annotations["{EXCLUSIVE_TOPOLOGY}"]: {tail}')
        lines = f"[{root_bad} ? {root_line} : ''] + {JOBS}.filter(j, {job_bad}).map(j, {item})"
        out.append(
            validation(
                policy,
                rule,
                f"!({root_bad}) && !{JOBS}.exists(j, {job_bad})",
                f"[{rule}] the {EXCLUSIVE_TOPOLOGY} annotation is set",
                f"'[{rule}] ' + ({lines}).filter(s, s != '').join('; [{rule}] ')",
            )
        )
    return out
