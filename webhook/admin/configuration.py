"""Kueue's Configuration and its controller's feature gates (RFC-0033 4.1).

The Configuration is read once, when the controller starts: a mistake applies cleanly
and breaks Kueue at its next restart (``CrashLoopBackOff``), or silently changes what
Kueue manages. The decoding and start-up checks are restated in ``kueueconfig``; these
rules word them, and judge the choices RFC-0033 makes (纳管范围, the integrations,
waitForPodsReady, the priority-defaulting gate).
"""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any, Final

from webhook.admin import NOT_EXPORTED, AdminContext, AdminRule
from webhook.admin.kueueconfig import (
    FEATURE_GATES,
    cli_gates,
    decode,
    duplicates,
    frameworks,
    gate_enabled,
    parse_gates,
    validate,
    version_below,
)
from webhook.admin.kueueobjects import CONFIGURATION, CONTROLLER, KueueObject, container_images
from webhook.kube.fieldpaths import ROOT, SPEC, FieldPath
from webhook.kube.scheduling import describe_selector, selector_matches
from webhook.kube.typos import did_you_mean
from webhook.policy.findings import Action, Finding
from webhook.rules import Message, Rule

FAMILY: Final = "configuration"
CONFIG: Final = frozenset({CONFIGURATION.kind})
BOTH: Final = frozenset({CONFIGURATION.kind, CONTROLLER.kind})
CRASH: Final = "the controller would CrashLoopBackOff at its next restart (the ConfigMap is read only at start)"


def _controller(ctx: AdminContext) -> KueueObject | None:
    found = ctx.objects.of(CONTROLLER)
    return found[0] if found else None


def _configuration(ctx: AdminContext) -> KueueObject | None:
    found = ctx.objects.of(CONFIGURATION)
    return found[0] if found else None


def _gates_arg(deployment: KueueObject) -> tuple[FieldPath, str] | None:
    """Where the controller's ``--feature-gates`` is written, and its value."""
    template = deployment.spec.get("template")
    pod = template.get("spec") if isinstance(template, dict) else None
    containers = pod.get("containers") if isinstance(pod, dict) else None
    for c, container in enumerate(containers if isinstance(containers, list) else []):
        if not isinstance(container, dict):
            continue
        for key in ("args", "command"):
            raw = container.get(key)
            values = [str(a) for a in raw] if isinstance(raw, list) else []
            for i, arg in enumerate(values):
                value = cli_gates(values[i : i + 2]) if arg.startswith("--feature-gates") else None
                if value is not None:
                    path = SPEC.child("template", "spec", "containers").index(c).child(key).index(i)
                    return path, value
    return None


# ---------------------------------------------------------------- config-rejected-by-kueue


def _rejected(obj: KueueObject, ctx: AdminContext) -> Iterator[Finding]:
    if obj.kind is CONTROLLER:
        yield from _rejected_gates(obj, ctx)
        return
    if obj.unreadable:
        where = ROOT.child("data").key(ctx.policy.kueue.config_key) if obj.carrier is not None else ROOT
        yield CONFIG_REJECTED_BY_KUEUE.finding(where, "unreadable", problem=obj.unreadable, crash=CRASH)
        return
    controller = _controller(ctx)
    gates = _gates_arg(controller) if controller is not None else None
    node = obj.document.node if obj.document is not None else None
    for problem in [*duplicates(node), *decode(obj.data), *validate(obj.data, gates[1] if gates else None)]:
        yield CONFIG_REJECTED_BY_KUEUE.finding(
            problem.path,
            problem.wording,
            field=str(problem.path),
            detail=f" ({problem.detail})" if problem.detail and problem.wording == "unknown-field" else problem.detail,
            crash=CRASH,
        )


def _rejected_gates(obj: KueueObject, ctx: AdminContext) -> Iterator[Finding]:
    found = _gates_arg(obj)
    if found is None:
        return
    path, value = found
    for name in parse_gates(value):
        if name not in FEATURE_GATES:
            meant = did_you_mean(name, FEATURE_GATES)
            yield CONFIG_REJECTED_BY_KUEUE.finding(
                path,
                "gate",
                gate=name,
                hint=f" (did you mean {meant!r}?)" if meant else "",
                crash="the controller would exit at start",
            )
    config = _configuration(ctx)
    if config is not None and value.strip() and isinstance(config.data.get("featureGates"), dict):
        yield CONFIG_REJECTED_BY_KUEUE.finding(path, "both", crash="the controller would exit at start")


CONFIG_REJECTED_BY_KUEUE: Final[AdminRule] = Rule(
    "config-rejected-by-kueue",
    "Configuration Kueue refuses at start",
    FAMILY,
    _rejected,
    {
        "unreadable": Message("Kueue cannot read its Configuration: {problem}", "fix it: {crash}"),
        "unknown-field": Message(
            "Kueue decodes its Configuration strictly, and {field} is not a field of config.kueue.x-k8s.io/v1beta2"
            "{detail}",
            "remove or rename it: {crash}",
        ),
        "removed-field": Message(
            "{field} is not a field of config.kueue.x-k8s.io/v1beta2, and Kueue decodes strictly ({detail})",
            "remove it: {crash}",
        ),
        "duplicate": Message(
            "{field} is written twice: YAML keeps the last, and Kueue's strict decoder refuses the duplicate",
            "keep one of them: {crash}",
        ),
        "wrong-type": Message("{field} {detail}, and Kueue decodes its Configuration strictly", "fix it: {crash}"),
        "invalid": Message("{field} {detail}: Kueue's start-up validation refuses it", "fix it: {crash}"),
        "gate": Message(
            "--feature-gates names {gate!r}, which is not a feature gate of Kueue{hint}", "fix the name: {crash}"
        ),
        "both": Message(
            "--feature-gates is passed while the Configuration sets featureGates too: Kueue refuses gates in both "
            "places",
            "keep one of the two: {crash}",
        ),
    },
    NOT_EXPORTED,
    kinds=BOTH,
    why="an unknown field or refused value in the Configuration crash-loops Kueue at its next restart (RFC-0033 4.1)",
)


# ---------------------------------------------------------------- config-scope


def _scope(obj: KueueObject, ctx: AdminContext) -> Iterator[Finding]:
    if obj.unreadable:
        return
    config = obj.data
    label = ctx.policy.tier_label
    if config.get("manageJobsWithoutQueueName") is True:
        yield CONFIG_SCOPE.finding(ROOT.child("manageJobsWithoutQueueName"), "unqueued")
    selector = config.get("managedJobsNamespaceSelector")
    path = ROOT.child("managedJobsNamespaceSelector")
    if not isinstance(selector, dict):
        yield CONFIG_SCOPE.finding(path, "absent", label=label)
        return
    missed = [tier for tier in ctx.policy.tiers if not selector_matches(selector, {label: tier})]
    unlabelled = selector_matches(selector, {"kubernetes.io/metadata.name": "some-namespace"})
    if missed or unlabelled:
        reasons = []
        if missed:
            reasons.append(f"it leaves out the {' and '.join(missed)} tier")
        if unlabelled:
            reasons.append("it takes in namespaces without the tier label")
        yield CONFIG_SCOPE.finding(
            path, "selector", selector=describe_selector(selector), reasons=" and ".join(reasons), label=label
        )


CONFIG_SCOPE: Final[AdminRule] = Rule(
    "config-scope",
    "Kueue manages more, or less, than the tiers",
    FAMILY,
    _scope,
    {
        "unqueued": Message(
            "manageJobsWithoutQueueName is true: Kueue suspends every job without a queue label, the production "
            "namespaces' system components included, and they never run",
            "set it to false (RFC-0033 4.1 纳管范围)",
        ),
        "absent": Message(
            "managedJobsNamespaceSelector is not set: Kueue's default takes in every namespace but kube-system and "
            "kueue-system, so the deployment integration's pod webhook sits on every pod creation of the cluster",
            "set it to matchExpressions: [{{key: {label}, operator: Exists}}]",
        ),
        "selector": Message(
            "managedJobsNamespaceSelector {selector} is not the tier label: {reasons}",
            "set it to matchExpressions: [{{key: {label}, operator: Exists}}]",
        ),
    },
    NOT_EXPORTED,
    kinds=CONFIG,
    why="Kueue must manage exactly the tiered namespaces, and only labelled jobs in them (RFC-0033 4.1 纳管范围)",
)


# ---------------------------------------------------------------- config-integrations


def _integrations(obj: KueueObject, ctx: AdminContext) -> Iterator[Finding]:
    if obj.unreadable:
        return
    enabled = frameworks(obj.data)
    missing = [name for name in ctx.policy.kueue.required_frameworks if name not in enabled]
    if missing:
        listed = "integrations" in obj.data
        yield CONFIG_INTEGRATIONS.finding(
            FieldPath(("integrations", "frameworks")) if listed else ROOT.child("integrations"),
            missing=", ".join(missing),
            enabled=", ".join(enabled),
            required=", ".join(ctx.policy.kueue.required_frameworks),
        )


CONFIG_INTEGRATIONS: Final[AdminRule] = Rule(
    "config-integrations",
    "Integrations RFC-0033 needs are not enabled",
    FAMILY,
    _integrations,
    {
        "": Message(
            "integrations.frameworks lacks {missing} (enabled: {enabled}): those objects bypass Kueue, so they run "
            "outside every quota and are never preempted",
            "list {required} in integrations.frameworks",
        )
    },
    NOT_EXPORTED,
    kinds=CONFIG,
    why="JobSets, Jobs and Deployments all go through Kueue (RFC-0033 4.1)",
)


# ---------------------------------------------------------------- config-wait-for-pods-ready


def _wait_for_pods_ready(obj: KueueObject, ctx: AdminContext) -> Iterator[Finding]:
    if obj.unreadable:
        return
    block: Any = obj.data.get("waitForPodsReady")
    if not isinstance(block, dict):
        yield CONFIG_WAIT_FOR_PODS_READY.finding(ROOT.child("waitForPodsReady"), "absent")
    elif block.get("blockAdmission") is True:
        yield CONFIG_WAIT_FOR_PODS_READY.finding(FieldPath(("waitForPodsReady", "blockAdmission")), "blocking")


CONFIG_WAIT_FOR_PODS_READY: Final[AdminRule] = Rule(
    "config-wait-for-pods-ready",
    "waitForPodsReady absent or blocking admission",
    FAMILY,
    _wait_for_pods_ready,
    {
        "absent": Message(
            "waitForPodsReady is not set: a job whose slice fails at run time keeps its quota with pods that never "
            "become ready, and nothing evicts and requeues it",
            "set waitForPodsReady: {{timeout: 10m, blockAdmission: false, recoveryTimeout: 5m}} (RFC-0033 4.1)",
        ),
        "blocking": Message(
            "waitForPodsReady.blockAdmission is true: one job whose pods are slow to become ready holds back the "
            "admission of every other job",
            "set blockAdmission: false (RFC-0033 4.1)",
        ),
    },
    NOT_EXPORTED,
    default_action=Action.WARN,
    kinds=CONFIG,
    why="slice failures at run time are recovered by waitForPodsReady, without blocking other admissions (4.1)",
)


# ---------------------------------------------------------------- config-wpc-defaulting-gate


def _defaulting_gate(obj: KueueObject, ctx: AdminContext) -> Iterator[Finding]:
    kueue = ctx.policy.kueue
    gate = kueue.priority_defaulting_gate
    controller = obj if obj.kind is CONTROLLER else _controller(ctx)
    config = obj if obj.kind is CONFIGURATION else _configuration(ctx)
    data = config.data if config is not None and not config.unreadable else {}
    if controller is None:
        if not gate_enabled(data, None, gate):
            ctx.unknown.append(
                f"Kueue's version and --feature-gates: add its Deployment ({CONTROLLER.get}) to --cluster-state"
            )
        return
    images = container_images(controller)
    below = next(
        (b for b in (version_below(i, kueue.priority_defaulting_default_since) for i in images) if b is not None), None
    )
    if below is None:
        ctx.unknown.append(
            f"Kueue's version: no image tag of the form vX.Y.Z in {', '.join(images) or 'the Deployment'}"
        )
        return
    found = _gates_arg(controller)
    if not below or gate_enabled(data, found[1] if found else None, gate):
        return
    if config is None and found is None:
        ctx.unknown.append("the Configuration's featureGates: add Kueue's ConfigMap to --cluster-state")
        return
    path = found[0] if obj.kind is CONTROLLER and found else ROOT.child("featureGates")
    if obj.kind is CONTROLLER and not found:
        path = SPEC.child("template", "spec", "containers")
    yield CONFIG_WPC_DEFAULTING_GATE.finding(
        path, gate=gate, image=images[0], since=kueue.priority_defaulting_default_since
    )


CONFIG_WPC_DEFAULTING_GATE: Final[AdminRule] = Rule(
    "config-wpc-defaulting-gate",
    "Priority-class defaulting gate off on a Kueue that needs it",
    FAMILY,
    _defaulting_gate,
    {
        "": Message(
            "Kueue {image} predates {since} and neither --feature-gates nor featureGates turns on {gate}: a dev job "
            "without a priority label gets no default WorkloadPriorityClass and takes its pods' PriorityClass, "
            "which can outrank guaranteed",
            "add --feature-gates={gate}=true to the controller's args, or featureGates: {{{gate}: true}} to the "
            "Configuration (one of the two, not both)",
        )
    },
    NOT_EXPORTED,
    default_action=Action.WARN,
    kinds=BOTH,
    why="免标签投递 needs Kueue to default the priority class, behind a gate before v0.20 (RFC-0033 4.1)",
)

RULES: Final[tuple[AdminRule, ...]] = (
    CONFIG_REJECTED_BY_KUEUE,
    CONFIG_SCOPE,
    CONFIG_INTEGRATIONS,
    CONFIG_WAIT_FOR_PODS_READY,
    CONFIG_WPC_DEFAULTING_GATE,
)
