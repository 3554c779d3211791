"""TPU placement in both modes: a TPU podSet selects the TPU node type.

The mode-specific placement rules are families of their own: ``webhook.rules.dynamic``
(the user declares the slice with the slice-topology annotation and the Slice
Provisioner does the rest) and ``webhook.rules.static`` (the user selects a
fixed-topology node pool and writes Kueue's TAS annotations by hand, RFC-0033's static form).
Kueue's TAS annotation names and how Kueue reads them live here, where the rest of the
code imports them.
"""

from __future__ import annotations

import re
from collections.abc import Iterator
from typing import Final

from webhook.objects.workload import Workload
from webhook.policy.config import Policy
from webhook.policy.findings import Finding
from webhook.rules import JOBS, Message, Rule, RuleContext, VapExport
from webhook.rules.cel import NODE_SELECTOR_PATH, SEL, TPU_JOBS, Expr, Validation, cat, choose, lit

FAMILY: Final = "placement"
REQUIRED_TOPOLOGY: Final = "kueue.x-k8s.io/podset-required-topology"
SLICE_REQUIRED_TOPOLOGY: Final = "kueue.x-k8s.io/podset-slice-required-topology"
SLICE_SIZE: Final = "kueue.x-k8s.io/podset-slice-size"
#: Kueue reads podset-slice-size with Go's ``strconv.ParseInt(s, 10, 32)``: an optional
#: sign and ASCII digits, nothing around them (``str.isdigit`` also accepts "²"); the
#: exported policy's CEL (RE2) reads the same (``webhook.rules.static``).
_SLICE_SIZE_NUMBER: Final = re.compile(r"[+-]?[0-9]+")
#: why a podset-slice-size that is not such a number is refused (the exported policy says the same)
SLICE_SIZE_NOT_INTEGER: Final = (
    "is not a plain integer (Kueue parses it as a base-10 int32, no spaces or units, and its "
    'webhook refuses anything else: "must be a numeric value")'
)


def kueue_integer(raw: str) -> int | None:
    """The annotation's number as Kueue's parse reads it; ``None`` when it is not written as one.

    Out of int32 range Kueue refuses it too; such a number is never a slice's host count,
    so the rule reports it as the wrong count.
    """
    return int(raw) if _SLICE_SIZE_NUMBER.fullmatch(raw) else None


# ------------------------------------------------------------------ accelerator-selector-missing


def _accelerator_selector(workload: Workload, ctx: RuleContext) -> Iterator[Finding]:
    tpu = ctx.tpu
    for podset in workload.tpu_podsets:
        value = podset.node_selector.get(tpu.accelerator_label)
        if value == tpu.accelerator_value:
            continue
        yield ACCELERATOR_SELECTOR_MISSING.finding(
            podset.node_selector_path.key(tpu.accelerator_label),
            "" if value is None else "other",
            podset=podset.name,
            label=tpu.accelerator_label,
            found=value,
            accelerator=tpu.accelerator_value,
        )


def _accelerator_selector_cel(policy: Policy) -> Iterator[Validation]:
    rule = ACCELERATOR_SELECTOR_MISSING
    tpu = policy.tpu
    label, accelerator = tpu.accelerator_label, tpu.accelerator_value
    acc = lit(label)
    podset = Expr("j.name")
    problem = choose(
        f"{acc} in {SEL}",
        rule.cel_problem("other", podset=podset, found=Expr(f"{SEL}[{acc}]"), accelerator=accelerator),
        rule.cel_problem("", podset=podset, label=label),
    )
    fix = rule.cel_fix("", label=label, accelerator=accelerator)
    item = cat(NODE_SELECTOR_PATH, f'["{label}"]', ": ", problem, "; ", *fix)
    bad = f"!({acc} in {SEL} && {SEL}[{acc}] == {lit(accelerator)})"
    yield rule.per_job(policy, TPU_JOBS, bad, item, f"a TPU podSet does not select {label}: {accelerator}")


_SELECT_ACCELERATOR: Final = "set nodeSelector {label}: {accelerator}"

ACCELERATOR_SELECTOR_MISSING: Final = Rule(
    "accelerator-selector-missing",
    "tpu7x selector missing",
    FAMILY,
    _accelerator_selector,
    {
        "": Message("TPU podSet {podset!r} does not select {label}", _SELECT_ACCELERATOR),
        "other": Message(
            "TPU podSet {podset!r} selects accelerator {found!r}, not {accelerator!r}", _SELECT_ACCELERATOR
        ),
    },
    VapExport("", _accelerator_selector_cel),
    kinds=JOBS,
    why="without it the podSet may land on non-TPU nodes",
)

RULES: Final[tuple[Rule, ...]] = (ACCELERATOR_SELECTOR_MISSING,)
