"""Rule families. Each rule's check is a small pure function ``(workload, context) -> findings``.

A rule is one declaration in its family module: a ``Rule`` with its ID, title, kinds,
modes, default action, its wordings (``Message``) and its CEL export (``VapExport``),
beside the check that uses them. The catalog (``webhook.rules.catalog``) only collects
the families' ``RULES`` in the order the engine runs them. The types they share live here.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Final, Generic, Literal, TypeVar

import msgspec

from webhook.cluster.view import ClusterView
from webhook.kube.fieldpaths import FieldPath
from webhook.kueue.podset import PodSetDemand
from webhook.objects.kinds import ALL as ALL_KINDS
from webhook.objects.kinds import JOB, JOBSET
from webhook.objects.request import UserInfo
from webhook.policy.config import Mode, Policy, TierPolicy, TpuPolicy
from webhook.policy.findings import Action, Finding
from webhook.quota.podsets import demands_of
from webhook.rules.cel import Expr, Validation, cat, per_job, template_parts, validation

if TYPE_CHECKING:
    from webhook.objects.workload import Workload

#: ``submitted`` rules judge what the user wrote and run only where the webhook sees the
#: object as submitted (the mutating path); ``final`` rules judge fields no other
#: admission plugin changes and also run on the validating path.
Subject = Literal["submitted", "final"]


#: ``RuleContext.tpu`` until ``__post_init__`` sets the policy's own
_UNSET_TPU: Final = TpuPolicy()


class RuleContext(msgspec.Struct):
    """Everything a rule may read besides the workload. Built once per request; rules only read it.

    A msgspec struct, as the request's other records (``webhook.objects.workload``): it is
    built in C, where a dataclass's ``__init__`` ran some fifty bytecodes per request. The
    fields after ``namespace_labels`` are the policy's and the cluster's, set by ``__post_init__``
    (what the constructor is given for them is replaced).
    """

    policy: Policy
    tier_name: str | None
    #: the request's tier (the policy's own, frozen)
    tier: TierPolicy | None
    operation: str
    user: UserInfo
    #: labels after the default-label patch (what Kueue will see)
    effective_labels: dict[str, str]
    #: on UPDATE, the label keys that changed; ``None`` on CREATE (all are in scope)
    changed_labels: frozenset[str] | None = None
    #: on UPDATE, the object before the change (parsed)
    old: Workload | None = None
    #: the cluster's snapshot the whole request reads (``webhook.cluster.snapshot``)
    cluster: ClusterView | None = None
    #: the namespace's labels when the caller gave them (CLI ``--namespace-labels``): they beat the cache
    namespace_labels: Mapping[str, str] | None = None
    #: ``policy.tpu`` (frozen)
    tpu: TpuPolicy = _UNSET_TPU
    #: ``policy.queueLabel`` and ``policy.priorityLabel``
    queue_label: str = ""
    priority_label: str = ""
    #: the static topologies a node selector may name: the policy's and, with cluster
    #: state, those the node pools advertise
    static_topologies: frozenset[str] = frozenset()
    #: filled by a rule that found what decides it unknown (a cluster rule: part of its state;
    #: ``queue-not-permitted``: the submitter): the engine turns it into a "skipped" warning
    #: (unknown is not zero)
    unknown: list[str] = msgspec.field(default_factory=list)
    #: the judged workload's podSets as Kueue's quota reads them, once per request (``demands``)
    _demands: tuple[Workload, list[PodSetDemand]] | None = None

    def __post_init__(self) -> None:
        policy, cluster = self.policy, self.cluster
        self.tpu = policy.tpu
        self.queue_label = policy.queue_label
        self.priority_label = policy.priority_label
        known = policy.static_topology_set
        if cluster is not None:
            learned = cluster.static_topologies()
            self.static_topologies = known | learned if learned and not learned <= known else known
        else:
            self.static_topologies = known

    def label_in_scope(self, key: str) -> bool:
        return self.changed_labels is None or key in self.changed_labels

    def demands(self, workload: Workload) -> list[PodSetDemand]:
        """``workload``'s podSets as Kueue's quota reads them: several cluster rules ask, worked out once.

        A JobSet's or Job's TPU podSet is read as asking for a topology even before it carries
        the annotation: the placement rules refuse it without one (``tas-annotation-missing``,
        ``slice-topology-missing``), so the quota rules judge the job as it will be once fixed
        rather than add a quota finding the fix makes untrue.
        """
        if self._demands is None or self._demands[0] is not workload:
            self._demands = (workload, demands_of(workload, topology_required=workload.kind in JOBS))
        return self._demands[1]


Check = Callable[["Workload", RuleContext], Iterable[Finding]]

#: what a rule's check judges and what it may read besides: a job rule judges a
#: ``Workload`` with a ``RuleContext`` (the defaults, so ``Rule`` alone is a job rule); the
#: admin guard's rules judge a Kueue object against the set of objects it belongs to
#: (``webhook.admin``)
#: (type-variable defaults, PEP 696, are typing_extensions' before Python 3.13: the type
#: checker reads them; at run time a plain TypeVar is all ``Generic`` needs)
if TYPE_CHECKING:
    from typing_extensions import TypeVar as DefaultedTypeVar

    SubjectT = DefaultedTypeVar("SubjectT", default="Workload")
    ContextT = DefaultedTypeVar("ContextT", default=RuleContext)
else:
    SubjectT = TypeVar("SubjectT")
    ContextT = TypeVar("ContextT")

#: RFC-0033's kinds: a Job's TPU pods follow the JobSet rules; a Deployment has no suspend
#: and (a resident service) no TPU slice. Rules with no ``kinds`` apply to all three.
JOBS: Final = frozenset({JOBSET, JOB})
#: what only a JobSet has: its exclusive-topology annotation, the Slice name it makes,
#: several slices per podSet
JOBSET_ONLY: Final = frozenset({JOBSET})
DYNAMIC: Final[frozenset[Mode]] = frozenset({"dynamic"})
STATIC: Final[frozenset[Mode]] = frozenset({"static"})


@dataclass(frozen=True, slots=True)
class Message:
    """How a rule words one kind of finding: what is wrong, then how to fix it.

    Both are ``str.format`` templates over named fields. The check fills them with the
    values it found; the CEL export fills them with CEL expressions (``cel.Expr``), so the
    webhook and the ValidatingAdmissionPolicy say the same words.
    """

    problem: str
    fix: str


@dataclass(frozen=True, slots=True)
class VapExport:
    """How ``tpu-admission export vap`` carries a rule into the ValidatingAdmissionPolicy."""

    #: for an exported rule, what it leaves to the webhook (empty: nothing); otherwise why not
    note: str = ""
    #: the rule's CEL validations under a policy; ``None``: not exported
    validations: Callable[[Policy], Iterable[Validation]] | None = None

    @property
    def exported(self) -> bool:
        return self.validations is not None


@dataclass(frozen=True, slots=True, eq=False)
class Rule(Generic[SubjectT, ContextT]):
    """One rule, declared once: its ID, what it judges, how it words a finding, its CEL export."""

    id: str
    title: str
    family: str
    check: Callable[[SubjectT, ContextT], Iterable[Finding]]
    #: the rule's wordings by name; ``""`` is the usual one
    messages: Mapping[str, Message]
    vap: VapExport
    modes: frozenset[Mode] = frozenset({"static", "dynamic"})
    subject: Subject = "final"
    default_action: Action = Action.DENY
    on_update: bool = False
    #: cluster-state kinds the rule reads; empty for structural rules
    requires: frozenset[str] = field(default_factory=frozenset)
    #: the object kinds it applies to (``webhook.objects.kinds``: JobSet, Job, Deployment;
    #: for an admin rule, the Kueue kinds of ``webhook.admin.kueueobjects``)
    kinds: frozenset[str] = ALL_KINDS
    #: one sentence: why the rule exists (shown in the README's rule table)
    why: str = ""

    def finding(self, path: FieldPath, wording: str = "", /, **fields: object) -> Finding:
        """A finding at ``path`` in the wording named ``wording``, its fields filled in."""
        message = self.messages[wording]
        return Finding(self.id, path, message.problem.format(**fields), message.fix.format(**fields))

    def cel_item(self, path: Sequence[str | Expr], wording: str = "", /, **fields: object) -> str:
        """The CEL text of one finding line, ``<path>: <problem>; <fix>``, as ``finding`` words it."""
        return cat(*path, ": ", *self.cel_parts(wording, **fields))

    def cel_parts(self, wording: str = "", /, **fields: object) -> list[str | Expr]:
        """``<problem>; <fix>`` of one wording as pieces for ``cel.cat``."""
        message = self.messages[wording]
        return [*template_parts(message.problem, fields), "; ", *template_parts(message.fix, fields)]

    def cel_problem(self, wording: str = "", /, **fields: object) -> list[str | Expr]:
        """One wording's problem as CEL pieces for ``cat``, to let CEL pick the wording (``cel.choose``)."""
        return template_parts(self.messages[wording].problem, fields)

    def cel_fix(self, wording: str = "", /, **fields: object) -> list[str | Expr]:
        """One wording's fix as CEL pieces for ``cat``, to let CEL pick the wording (``cel.choose``)."""
        return template_parts(self.messages[wording].fix, fields)

    def validation(self, policy: Policy, expression: str, summary: str, message_expression: str = "") -> Validation:
        """This rule's validation: ``summary`` is the static message (after ``[id] ``)."""
        return validation(
            policy, self.id, self.default_action, expression, f"[{self.id}] {summary}", message_expression
        )

    def per_job(self, policy: Policy, jobs: str, bad: str, item: str, summary: str) -> Validation:
        """A validation judged per replicatedJob of ``jobs``: ``item`` is one failing ``j``'s line."""
        expression, message = per_job(self.id, jobs, bad, item)
        return self.validation(policy, expression, summary, message)
