"""Workload → findings + patch: the one decision shared by the server and ``check``.

``decide`` is a pure function of the object, the request facts, the policy and
(optionally) cluster state. The HTTP layer and the CLI only translate to and from it.
"""

from __future__ import annotations

from collections.abc import Callable, Hashable, Mapping
from decimal import localcontext
from typing import Any, Final, Literal, NamedTuple, get_args

import msgspec

from webhook.cluster.snapshot import Snapshot
from webhook.cluster.view import ClusterState, ClusterView
from webhook.engine.patches import JsonPatch, default_labels, label_patch
from webhook.kube.quantity import CONTEXT
from webhook.objects.kinds import JOBSET
from webhook.objects.readers import (
    made_by_jobset_controller,
    outside_kueue_warning,
    read_workload,
    runs_outside_kueue,
)
from webhook.objects.request import UserInfo
from webhook.objects.workload import MALFORMED, Workload
from webhook.policy.config import Policy
from webhook.policy.findings import Action, Finding
from webhook.policy.tiers import resolve_tier
from webhook.rules import Rule, RuleContext
from webhook.rules.catalog import RULES
from webhook.rules.cluster import FAMILY as CLUSTER_FAMILY
from webhook.rules.cluster import recall_key

Stage = Literal["mutate", "validate"]

#: where the validating call of an admitted CREATE gets its ``[simulate]`` line: (snapshot, job,
#: its labels with the tier's defaults, policy, the job's shape key) -> the line, or ``None`` for
#: none. The server's reads only what is already worked out (``webhook.serving.simulateline``);
#: ``webhook.simulate.live.warning_line`` works it out. Without one, no line.
SimulateLine = Callable[[Snapshot, Workload, Mapping[str, str], Policy, Hashable | None], str | None]


class AdmissionFacts(msgspec.Struct):
    """What the engine needs to know about a request besides the object (made per request)."""

    operation: str = "CREATE"
    stage: Stage = "mutate"
    namespace: str = ""
    user: UserInfo = msgspec.field(default_factory=UserInfo)
    #: on UPDATE, the object before the change, as ``decide`` takes the object
    old_object: Any = None
    #: tier from the request path (``/validate/<tier>``)
    path_tier: str | None = None
    #: CLI ``--tier``: beats everything
    tier_override: str | None = None
    #: CLI ``--namespace-labels``: beats the cluster state
    namespace_labels: Mapping[str, str] | None = None
    #: the object's kind (``webhook.objects.kinds``: JobSet, Job, Deployment)
    kind: str = JOBSET


class Decision(msgspec.Struct):
    allowed: bool = True
    findings: list[Finding] = []
    warnings: list[str] = []
    patch: JsonPatch = []
    tier: str | None = None
    #: rules skipped because the cluster state they need is unknown
    skipped: list[str] = []
    #: rules whose findings a policy exception turned into warnings (one entry per finding)
    excepted: list[str] = []
    #: denying findings beyond ``limits.maxFindings``, counted but not listed
    omitted: int = 0
    #: the longest line the answer carries (``limits.maxLineChars``)
    max_line: int = 2048
    #: on CREATE, the labels the mutating call adds (the tier's default queue and priority class):
    #: with the object's own, what Kueue will see
    added: dict[str, str] = {}

    @property
    def violations(self) -> list[Finding]:
        return [f for f in self.findings if f.action is Action.DENY]

    def rule_ids(self) -> list[str]:
        """The rules that found something, each once, sorted (the decision log's ``rules``)."""
        return sorted({f.rule for f in self.findings}) if self.findings else []

    def deny_message(self) -> str:
        lines = [clip(f.line(), self.max_line) for f in self.violations]
        if self.omitted:
            lines.append(f"... and {self.omitted} more")
        return "\n".join(lines)


def clip(line: str, limit: int) -> str:
    """``line`` cut to ``limit`` characters: a finding that quotes a huge value stays one short line."""
    if len(line) <= limit:
        return line
    return f"{line[: limit - 40]}... ({len(line) - limit + 40} more characters)"


def bound(decision: Decision, policy: Policy, unrecorded: int = 0, unrecorded_action: Action | None = None) -> None:
    """At most ``maxFindings`` denying and as many warning lines, each at most ``maxLineChars``.

    However many findings an object produces, the answer (and the decision log and
    metrics, which read the same findings) stays a few tens of kilobytes. The admin guard's
    decisions end here too. The warn-level findings' lines are written here, after what
    the decision already says (skipped checks).
    """
    limits = policy.limits
    violations = decision.violations
    warned = [f for f in decision.findings if f.action is Action.WARN]
    more_denied = max(0, len(violations) - limits.max_findings)
    more_warned = max(0, len(warned) - limits.max_findings)
    if more_denied or more_warned:
        warned = warned[: limits.max_findings]
        decision.findings = violations[: limits.max_findings] + warned
    if unrecorded_action is Action.DENY:
        more_denied += unrecorded
    elif unrecorded_action is Action.WARN:
        more_warned += unrecorded
    decision.omitted = more_denied
    for finding in warned:
        decision.warnings.append(clip(finding.line(), limits.max_line_chars))
    if more_warned:
        decision.warnings.append(f"... and {more_warned} more")


Plan = tuple[tuple[Rule, Action], ...]
#: Which rules a request runs. ``all``: a CREATE as submitted (the mutating path), and an
#: UPDATE of an object that was never judged (it ran outside Kueue). ``final``: a CREATE
#: on the validating path, where other mutating webhooks have written the user's fields.
#: ``changes``: any other UPDATE, judged only for what the rules marked ``on_update``.
Scope = Literal["all", "final", "changes"]


class Steps(NamedTuple):
    """The rules a request runs, with their actions, in catalog order: the cluster family's apart
    (the catalog lists them last), whose findings are worked out once per snapshot and job shape."""

    #: the rules that read the object and the request alone
    structural: Plan
    #: the cluster family's
    cluster: Plan
    #: every kind the plan's rules require (the cluster family's only)
    required: frozenset[str]


def _applicable(mode: str, scope: Scope, kind: str, clustered: bool) -> tuple[Rule, ...]:
    """The catalog's rules a request of this mode, scope and kind runs, in catalog order."""
    rules = []
    for rule in RULES:
        if mode not in rule.modes or kind not in rule.kinds:
            continue
        if rule.requires and not clustered:
            continue  # structural-only mode: no cluster configured
        if scope == "final" and rule.subject == "submitted":
            # On CREATE other mutating webhooks (Kueue's, the Slice Provisioner's) run
            # before the validating path; on UPDATE they do not, and the validating
            # configuration is where UPDATE is registered.
            continue
        if scope == "changes" and not rule.on_update:
            continue
        rules.append(rule)
    return tuple(rules)


def _steps(rules: tuple[Rule, ...], actions: Mapping[str, Action]) -> Steps:
    """``rules`` with their actions (``actions``: the policy's own, by rule ID), the ones turned off
    left out."""
    plan = tuple(
        (rule, action) for rule in rules if (action := actions.get(rule.id, rule.default_action)) is not Action.OFF
    )
    required = frozenset().union(*(rule.requires for rule, _ in plan if rule.requires))
    structural = tuple(step for step in plan if step[0].family != CLUSTER_FAMILY)
    return Steps(structural, tuple(step for step in plan if step[0].family == CLUSTER_FAMILY), required)


class _Applicable(NamedTuple):
    """The rules one (mode, scope, kind, clustered) runs, each with its ID and default action, and
    their plan under those defaults."""

    rules: tuple[tuple[Rule, str, Action], ...]
    default: Steps


def _applicable_entry(mode: str, scope: Scope, kind: str, clustered: bool) -> _Applicable:
    rules = _applicable(mode, scope, kind, clustered)
    return _Applicable(tuple((rule, rule.id, rule.default_action) for rule in rules), _steps(rules, {}))


#: every (mode, scope, kind, clustered) the catalog's rules name: the catalog is fixed, so this is
#: a constant table made at import
_APPLICABLE: Final[Mapping[tuple[str, str, str, bool], _Applicable]] = {
    (mode, scope, kind, clustered): _applicable_entry(mode, scope, kind, clustered)
    for mode in sorted({mode for rule in RULES for mode in rule.modes})
    for scope in get_args(Scope)
    for kind in sorted({kind for rule in RULES for kind in rule.kinds})
    for clustered in (False, True)
}


def _plan(policy: Policy, scope: Scope, kind: str, clustered: bool) -> Steps:
    """The rules that apply under ``policy``, with its actions: the table's plan, its actions
    replaced by the policy's own where it sets them."""
    entry = _APPLICABLE.get((policy.mode, scope, kind, clustered))
    actions = policy.rules
    if entry is None:
        return _steps(_applicable(policy.mode, scope, kind, clustered), actions)
    default = entry.default
    if not actions:
        return default
    off = Action.OFF
    plan = tuple(
        (rule, action)
        for rule, rule_id, fallback in entry.rules
        if (action := actions.get(rule_id, fallback)) is not off
    )
    if len(plan) == len(entry.rules) == len(default.structural) + len(default.cluster):
        # the same rules run: only their actions moved
        return Steps(plan[: len(default.structural)], plan[len(default.structural) :], default.required)
    return _steps(tuple(rule for rule, _ in plan), {rule.id: action for rule, action in plan})


def _apply_exceptions(decision: Decision, policy: Policy, namespace: str, name: str) -> None:
    """Findings an admin excepted for this object warn instead, naming the reason.

    Applied here, not in the HTTP layer or the CLI, so the server and ``check`` can
    never disagree about an exception.
    """
    for finding in decision.findings:
        exception = policy.exception_for(finding.rule, namespace, name)
        if exception is not None:
            finding.action, finding.excepted = Action.WARN, exception.reason  # fresh per request
            decision.excepted.append(finding.rule)


def _skip(decision: Decision, rule_id: str, reasons: list[str], cluster: bool = True) -> None:
    """A rule not judged because what decides it is unknown: a warning, never a pass.

    A cluster rule's reasons name the kinds it could not read; any other rule's reasons
    say in full what is unknown (``queue-not-permitted``: the submitter).
    """
    decision.skipped.append(rule_id)
    why = f"cluster state unknown ({'; '.join(reasons)})" if cluster else "; ".join(reasons)
    decision.warnings.append(f"[{rule_id}] skipped: {why}")


#: a cluster rule that said something: its ID, its findings (with their actions) and the notes on
#: what it could not know (a skip)
Outcome = tuple[str, tuple[Finding, ...], tuple[str, ...]]


def _missing(rule: Rule, unread: dict[str, str]) -> list[str]:
    """The kinds ``rule`` requires that cannot be read, each with why."""
    return [f"{kind}: {why}" for kind, why in sorted(unread.items()) if kind in rule.requires]


def _cluster_outcomes(
    steps: Steps, scope: Scope, workload: Workload, ctx: RuleContext, shape: Hashable | None
) -> tuple[Outcome, ...]:
    """The cluster family's outcomes, in catalog order, of the rules that said something (most jobs:
    none): worked out once per snapshot and job shape."""
    cluster = ctx.cluster

    def make() -> tuple[Outcome, ...]:
        # Which kinds cannot be read is asked once, for every cluster rule of the request.
        unread = cluster.unavailable(steps.required) if cluster is not None else {}
        out: list[Outcome] = []
        for rule, action in steps.cluster:
            missing = _missing(rule, unread) if unread and rule.requires else []
            if missing:
                out.append((rule.id, (), tuple(missing)))
                continue
            findings = tuple(rule.check(workload, ctx))
            for finding in findings:
                finding.action = action  # made here, not yet shared
            if findings or ctx.unknown:
                out.append((rule.id, findings, tuple(ctx.unknown)))
            ctx.unknown.clear()
        return tuple(out)

    if cluster is None or shape is None:
        return make()
    # Jobs of one shape read the same of one snapshot (``recall_key``), and under the snapshot's
    # policy the scope and the kind (in the key) make the plan and its actions: one answer per snapshot.
    return cluster.remember(("cluster rules", scope, shape), make)  # type: ignore[no-any-return]


def _shape(workload: Workload, ctx: RuleContext) -> Hashable | None:
    """The job's shape as the snapshot's memos key it (``recall_key``); ``None``: not memoized."""
    view = ctx.cluster
    return recall_key(workload, ctx) if view is not None and view.policy is ctx.policy else None


def _run(
    steps: Steps, scope: Scope, workload: Workload, ctx: RuleContext, decision: Decision, shape: Hashable | None
) -> None:
    """Each step in catalog order, its findings with its action; every rule in the quantities'
    decimal context (quota and node fit sum and multiply), where every value the parser gives stays exact."""
    findings = decision.findings
    with localcontext(CONTEXT):
        for rule, action in steps.structural:
            for finding in rule.check(workload, ctx):
                finding.action = action  # a fresh finding each request: set in place
                findings.append(finding)
            if ctx.unknown:  # a structural rule whose subject is unknown (queue-not-permitted: the submitter)
                _skip(decision, rule.id, ctx.unknown, cluster=False)
                ctx.unknown.clear()
        if steps.cluster:  # the only rules that read the cluster (``tests/test_rules.py`` holds it)
            for rule_id, made, notes in _cluster_outcomes(steps, scope, workload, ctx, shape):
                # a memoized finding is shared by the requests of its shape: each gets a copy
                findings.extend(msgspec.structs.replace(finding) for finding in made)
                if notes:
                    _skip(decision, rule_id, list(notes))


def decide(
    obj: Any,
    facts: AdmissionFacts,
    policy: Policy,
    cluster: ClusterState | None = None,
    simulate_line: SimulateLine | None = None,
) -> Decision:
    """Judge ``obj``, the object decoded (plain JSON, or what YAML gives a manifest: ``read_workload``);
    ``simulate_line`` gives the ``[simulate]`` line (``SimulateLine``)."""
    return judge(read_workload(facts.kind, obj, policy, facts.namespace), facts, policy, cluster, simulate_line)


def judge(
    workload: Workload,
    facts: AdmissionFacts,
    policy: Policy,
    cluster: ClusterState | None = None,
    simulate_line: SimulateLine | None = None,
) -> Decision:
    """``decide`` for an object already read: a caller that reads the job for more than its
    decision (``simulate``) reads it once."""
    if made_by_jobset_controller(workload, facts.user, policy):
        # A JobSet's own Job, sent by the JobSet controller: judged as part of its JobSet
        # already, and Kueue manages it through the JobSet. Admitted as it is, without a word.
        return Decision()
    labels = facts.namespace_labels
    view: ClusterView | None = cluster.snapshot() if cluster is not None else None
    if labels is None and view is not None and facts.tier_override is None and facts.path_tier is None:
        labels = view.namespace_labels(facts.namespace)
    resolution = resolve_tier(
        policy,
        facts.namespace,
        override=facts.tier_override,
        path_tier=facts.path_tier,
        namespace_labels=labels,
    )
    decision = Decision(tier=resolution.tier)
    if resolution.warning:
        decision.warnings.append(resolution.warning)
    if resolution.tier is None or facts.operation not in ("CREATE", "UPDATE"):
        return decision  # unmanaged namespace, or an operation we do not judge
    tier = policy.tiers[resolution.tier]

    creating = facts.operation == "CREATE"
    old: Workload | None = None
    changed: frozenset[str] | None = None
    added: dict[str, str] = {}
    scope: Scope
    if creating:
        added = decision.added = default_labels(workload, tier, policy)
        scope = "all" if facts.stage == "mutate" else "final"
    else:
        old = read_workload(facts.kind, facts.old_object, policy, facts.namespace)
        if runs_outside_kueue(old, tier, policy):
            # Admitted unjudged (RFC-0033 4.1): no rule has ever seen this object, so the
            # update that takes it out of that (a TPU request, a queue label) is judged in
            # full, as its CREATE would have been. An unjudged old object proves nothing.
            scope = "all"
        else:
            # The rest was judged when it was created: an UPDATE answers for what changed.
            keys = (policy.queue_label, policy.priority_label)
            changed = frozenset(k for k in keys if old.labels.get(k) != workload.labels.get(k))
            scope = "changes"
    if runs_outside_kueue(workload, tier, policy) and (old is None or policy.queue_label not in old.labels):
        decision.warnings.append(outside_kueue_warning(workload, resolution.tier, policy))
        return decision

    ctx = RuleContext(
        policy=policy,
        tier_name=resolution.tier,
        tier=tier,
        operation=facts.operation,
        user=facts.user,
        effective_labels={**workload.labels, **added},
        changed_labels=changed,
        old=old,
        cluster=view,
        namespace_labels=facts.namespace_labels,
    )
    shape = _shape(workload, ctx)
    _run(_plan(policy, scope, facts.kind, view is not None), scope, workload, ctx, decision, shape)

    decision.max_line = policy.limits.max_line_chars
    if decision.findings:  # most requests have none: nothing to except, count or bound
        if policy.exceptions:
            _apply_exceptions(decision, policy, facts.namespace, workload.name)
        decision.allowed = not any(f.action is Action.DENY for f in decision.findings)
        malformed = next((f.action for f in decision.findings if f.rule == MALFORMED), None)
        bound(decision, policy, workload.malformed_unrecorded, malformed)
    if decision.allowed and creating and facts.stage == "mutate":
        decision.patch = label_patch(workload, added)
    elif (
        simulate_line is not None
        and decision.allowed
        and creating
        and policy.simulate == "warn"
        and isinstance(view, Snapshot)
    ):
        _simulate(decision, simulate_line, view, workload, ctx.effective_labels, policy, shape)
    return decision


def _simulate(
    decision: Decision,
    simulate_line: SimulateLine,
    snapshot: Snapshot,
    workload: Workload,
    labels: Mapping[str, str],
    policy: Policy,
    shape: Hashable | None,
) -> None:
    """The validating call's ``[simulate]`` line: what Kueue would do with the job now. It never
    denies; a job the simulator cannot read, or an ``unknown`` answer, adds nothing."""
    if workload.malformed:
        return
    line = simulate_line(snapshot, workload, labels, policy, shape)
    if line is not None:
        decision.warnings.append(clip(line, policy.limits.max_line_chars))
