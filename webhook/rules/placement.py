"""TPU placement per TPU podSet (SPEC §4, dynamic and static tables).

Dynamic mode: the user declares the slice with the slice-topology annotation and the
Slice Provisioner does the rest. Static mode: the user selects a fixed-topology node
pool and writes Kueue's TAS annotations by hand (RFC-0033 4.6 ③).
"""

from __future__ import annotations

import re
from collections.abc import Iterator
from typing import Final

from webhook.kube.fieldpaths import METADATA
from webhook.kube.topology import TopologyError, parse_topology, super_slice_problems
from webhook.objects.workload import PodSet, Workload
from webhook.policy.config import Policy
from webhook.policy.findings import Finding
from webhook.rules import RuleContext

REQUIRED_TOPOLOGY: Final = "kueue.x-k8s.io/podset-required-topology"
SLICE_REQUIRED_TOPOLOGY: Final = "kueue.x-k8s.io/podset-slice-required-topology"
SLICE_SIZE: Final = "kueue.x-k8s.io/podset-slice-size"
#: Kueue reads podset-slice-size with Go's ``strconv.ParseInt(s, 10, 32)``: an optional
#: sign and ASCII digits, nothing around them (``str.isdigit`` also accepts "²"); the
#: exported policy's CEL (RE2) reads the same (webhook/export/vap/).
_SLICE_SIZE_NUMBER: Final = re.compile(r"[+-]?[0-9]+")
#: why a podset-slice-size that is not such a number is refused (the exported policy says the same)
SLICE_SIZE_NOT_INTEGER: Final = (
    "is not a plain integer (Kueue parses it as a base-10 int32, no spaces or units, and its "
    'webhook refuses anything else: "must be a numeric value")'
)


def _slice_pair(level: str) -> str:
    return f'{SLICE_REQUIRED_TOPOLOGY}: {level} and {SLICE_SIZE}: "<hosts per slice>"'


# ---------------------------------------------------------------- both modes


def accelerator_selector_missing(workload: Workload, ctx: RuleContext) -> Iterator[Finding]:
    tpu = ctx.tpu
    for podset in workload.tpu_podsets:
        value = podset.node_selector.get(tpu.accelerator_label)
        if value == tpu.accelerator_value:
            continue
        problem = (
            f"TPU podSet {podset.name!r} does not select {tpu.accelerator_label}"
            if value is None
            else f"TPU podSet {podset.name!r} selects accelerator {value!r}, not {tpu.accelerator_value!r}"
        )
        yield Finding(
            "accelerator-selector-missing",
            podset.node_selector_path.key(tpu.accelerator_label),
            problem,
            f"set nodeSelector {tpu.accelerator_label}: {tpu.accelerator_value}",
        )


# ---------------------------------------------------------------- dynamic mode


def slice_topology_missing(workload: Workload, ctx: RuleContext) -> Iterator[Finding]:
    annotation = ctx.tpu.slice_topology_annotation
    for podset in workload.tpu_podsets:
        if annotation not in podset.annotations:
            yield Finding(
                "slice-topology-missing",
                podset.annotations_path.key(annotation),
                f"TPU podSet {podset.name!r} has no slice topology, so Kueue would later report only "
                "'quota insufficient'",
                f"add the pod template annotation {annotation}, e.g. 4x4x4",
            )


def allowed_topologies_text(policy: Policy) -> str:
    """What ``slice-topology-invalid`` says is allowed (the exported policy says the same)."""
    limits = policy.super_slice
    text = (
        f"super-slice AxBxC non-decreasing, each a multiple of {limits.dimension_multiple}, "
        f"at least {limits.min_topology}, at most {limits.max_chips} chips and "
        f"{limits.max_sub_blocks} sub-blocks of {limits.sub_block_chips} chips"
    )
    if policy.sub_slicing:
        text += f", or sub-slice {', '.join(policy.sub_slice_topologies)}"
    return text


def slice_topology_invalid(workload: Workload, ctx: RuleContext) -> Iterator[Finding]:
    annotation = ctx.tpu.slice_topology_annotation
    sub_slices = set(ctx.policy.sub_slice_topologies)
    for podset in workload.tpu_podsets:
        value = podset.annotations.get(annotation)
        if value is None or value in sub_slices:
            continue
        try:
            problems = super_slice_problems(parse_topology(value), ctx.policy.super_slice)
        except TopologyError as exc:
            problems = (str(exc),)
        if problems:
            yield Finding(
                "slice-topology-invalid",
                podset.annotations_path.key(annotation),
                f"slice topology {value!r} is not allowed: {', '.join(problems)}",
                f"use an allowed value: {allowed_topologies_text(ctx.policy)}",
            )


def sub_slicing_disabled(workload: Workload, ctx: RuleContext) -> Iterator[Finding]:
    if ctx.policy.sub_slicing:
        return
    annotation = ctx.tpu.slice_topology_annotation
    for podset in workload.tpu_podsets:
        value = podset.annotations.get(annotation)
        if value in ctx.policy.sub_slice_topologies:
            yield Finding(
                "sub-slicing-disabled",
                podset.annotations_path.key(annotation),
                f"{value} is a sub-slice and sub-slicing is not enabled on this cluster",
                f"use a super-slice of at least {ctx.policy.super_slice.min_topology}",
            )


def static_topology_selector_forbidden(workload: Workload, ctx: RuleContext) -> Iterator[Finding]:
    tpu = ctx.tpu
    for podset in workload.tpu_podsets:
        if tpu.topology_label in podset.node_selector:
            yield Finding(
                "static-topology-selector-forbidden",
                podset.node_selector_path.key(tpu.topology_label),
                "with dynamic slicing nodes have no fixed topology, so this selector matches nothing useful",
                f"remove it (the {tpu.slice_topology_annotation} annotation sets the slice size)",
            )


def slice_name(workload: Workload, podset: PodSet, ctx: RuleContext) -> int:
    """Length of ``{ns}-jobset-{name}-{hash}-{replicatedJob}-{index}`` at the largest index."""
    last_index = max(podset.replicas - 1, 0)
    return (
        len(workload.namespace)
        + len("-jobset-")
        + workload.name_length
        + 1
        + ctx.policy.slice_name_hash_length
        + 1
        + len(podset.name)
        + 1
        + len(str(last_index))
    )


def slice_name_too_long(workload: Workload, ctx: RuleContext) -> Iterator[Finding]:
    budget = ctx.policy.slice_name_budget
    for podset in workload.tpu_podsets:
        length = slice_name(workload, podset, ctx)
        if length <= budget:
            continue
        longest = workload.name_length - (length - budget)
        fix = (
            f"shorten metadata.name to at most {longest} characters, or the replicatedJob name"
            if longest > 0
            else "shorten the replicatedJob name (or the namespace): no JobSet name fits"
        )
        yield Finding(
            "slice-name-too-long",
            METADATA.child("name"),
            f"the Slice name for replicatedJob {podset.name!r} (index {max(podset.replicas - 1, 0)}) "
            f"would be {length} characters, over the budget of {budget}",
            fix,
        )


# ---------------------------------------------------------------- static mode


def static_topology_selector_missing(workload: Workload, ctx: RuleContext) -> Iterator[Finding]:
    label = ctx.tpu.topology_label
    for podset in workload.tpu_podsets:
        if label not in podset.node_selector:
            yield Finding(
                "static-topology-selector-missing",
                podset.node_selector_path.key(label),
                f"TPU podSet {podset.name!r} does not say which static node pool topology it needs",
                f"set nodeSelector {label} to one of: {', '.join(sorted(ctx.static_topologies))}",
            )


def static_topology_unknown(workload: Workload, ctx: RuleContext) -> Iterator[Finding]:
    label = ctx.tpu.topology_label
    known = ctx.static_topologies
    for podset in workload.tpu_podsets:
        value = podset.node_selector.get(label)
        if value is not None and value not in known:
            yield Finding(
                "static-topology-unknown",
                podset.node_selector_path.key(label),
                f"no static node pool has topology {value!r}",
                f"use one of: {', '.join(sorted(known))}",
            )


def tas_annotation_missing(workload: Workload, ctx: RuleContext) -> Iterator[Finding]:
    level = ctx.policy.static_slice_level
    for podset in workload.tpu_podsets:
        notes = podset.annotations
        present = [key for key in (REQUIRED_TOPOLOGY, SLICE_REQUIRED_TOPOLOGY, SLICE_SIZE) if key in notes]
        for key in (REQUIRED_TOPOLOGY, SLICE_REQUIRED_TOPOLOGY):
            if key in notes and notes[key] != level:
                yield Finding(
                    "tas-annotation-missing",
                    podset.annotations_path.key(key),
                    f"topology level {notes[key]!r} is not the static slice level",
                    f"set it to {level} (one node pool is one static slice)",
                )
        if present:
            continue  # pairing and multi-slice misuse have rules of their own
        single = f"add {REQUIRED_TOPOLOGY}: {level}"
        fix = f"add {_slice_pair(level)}" if podset.replicas > 1 else single
        yield Finding(
            "tas-annotation-missing",
            podset.annotations_path,
            f"TPU podSet {podset.name!r} has no topology-aware scheduling annotation, so Kueue "
            "cannot keep each slice inside one node pool",
            fix,
        )


def tas_annotation_unpaired(workload: Workload, ctx: RuleContext) -> Iterator[Finding]:
    for podset in workload.tpu_podsets:
        has_level = SLICE_REQUIRED_TOPOLOGY in podset.annotations
        has_size = SLICE_SIZE in podset.annotations
        if has_level == has_size:
            continue
        missing, present = (SLICE_SIZE, SLICE_REQUIRED_TOPOLOGY) if has_level else (SLICE_REQUIRED_TOPOLOGY, SLICE_SIZE)
        yield Finding(
            "tas-annotation-unpaired",
            podset.annotations_path.key(missing),
            f"{present} is set without {missing}, and the two only work as a pair",
            f"add {missing}",
        )


def tas_required_topology_multislice(workload: Workload, ctx: RuleContext) -> Iterator[Finding]:
    for podset in workload.tpu_podsets:
        if podset.replicas > 1 and REQUIRED_TOPOLOGY in podset.annotations:
            yield Finding(
                "tas-required-topology-multislice",
                podset.annotations_path.key(REQUIRED_TOPOLOGY),
                f"replicas is {podset.replicas}, so this asks all {podset.replicas} slices into "
                "one node pool, which can never be satisfied: the job would pend forever",
                f"replace it with {_slice_pair(ctx.policy.static_slice_level)}",
            )


def tas_slice_size_mismatch(workload: Workload, ctx: RuleContext) -> Iterator[Finding]:
    for podset in workload.tpu_podsets:
        raw = podset.annotations.get(SLICE_SIZE)
        topology_text = podset.node_selector.get(ctx.tpu.topology_label)
        if raw is None or topology_text is None or topology_text not in ctx.static_topologies:
            continue
        try:
            hosts = parse_topology(topology_text).chips // ctx.tpu.chips_per_host
        except TopologyError:
            continue
        size = kueue_integer(raw)
        if size == hosts:
            continue
        why = SLICE_SIZE_NOT_INTEGER if size is None else f"is not the {hosts} hosts of a {topology_text} slice"
        yield Finding(
            "tas-slice-size-mismatch",
            podset.annotations_path.key(SLICE_SIZE),
            f"slice size {raw!r} {why}",
            f'set it to "{hosts}"',
        )


def kueue_integer(raw: str) -> int | None:
    """The annotation's number as Kueue's parse reads it; ``None`` when it is not written as one.

    Out of int32 range Kueue refuses it too; such a number is never a slice's host count,
    so the rule reports it as the wrong count.
    """
    return int(raw) if _SLICE_SIZE_NUMBER.fullmatch(raw) else None


def slice_topology_ignored(workload: Workload, ctx: RuleContext) -> Iterator[Finding]:
    annotation = ctx.tpu.slice_topology_annotation
    for podset in workload.podsets:
        if annotation in podset.annotations:
            yield Finding(
                "slice-topology-ignored",
                podset.annotations_path.key(annotation),
                "the cluster runs static node pools and nothing translates this annotation",
                f"remove it (select the pool with nodeSelector {ctx.tpu.topology_label})",
            )
