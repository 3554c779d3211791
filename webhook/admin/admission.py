"""One Kueue object on the webhook (``/validate-kueue``): the admin guard's decision.

The rules and their actions are ``lint-queues``' (``webhook.admin.judging.judge``); what
differs is where the cluster comes from and three choices an admission webhook needs:

- the object is judged against the watch cache with itself in place of the cached one
  (``judged_set`` + ``ObjectSet.replaced``), so a ``kubectl edit`` that raises one
  team's nominal past the cluster's chips is refused;
- the rules Kueue's own webhook refuses (``KUEUE_REFUSES``) are not run: Kueue answers
  them with its own message, and running them twice only doubles the denial;
- an UPDATE is refused only for what it breaks. A rule that already refused the old
  object (the same cluster, the old object in place) warns instead, as Kyverno's
  ``allowExistingViolations`` does: otherwise a cluster that is already over its chips
  (a node pool was removed) would refuse every edit of every ClusterQueue, the one that
  cuts quota included.

A kind the guard does not judge, a DELETE and a CONNECT are allowed unchanged. What the
webhook is sent is bounded (the body limit); what it answers is too (``limits``).
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any, Final

from webhook.admin import AdminContext, AdminRule
from webhook.admin.catalog import KUEUE_REFUSES
from webhook.admin.judging import findings_of, plan, settle
from webhook.admin.kueueobjects import CLUSTER_QUEUE, COHORT, RESOURCE_FLAVOR, KueueObject, Skipped, read_document
from webhook.admin.live import CACHED, Live, judged_set
from webhook.admin.objectset import ObjectSet
from webhook.cluster.snapshot import Snapshot
from webhook.cluster.view import ClusterState
from webhook.engine.decision import Decision
from webhook.kueue.clusterqueue import parse_cluster_queue
from webhook.kueue.cohort import parse_cohort
from webhook.kueue.resourceflavor import parse_flavor
from webhook.objects.sources import Document
from webhook.policy.config import Policy
from webhook.policy.findings import Action

#: where a finding on the request's object says it came from
SOURCE: Final = "request"


@dataclass(frozen=True, slots=True)
class KueueRequest:
    """What the guard reads of an admission request (the wire layer decodes it)."""

    operation: str
    namespace: str
    object: Any
    old_object: Any = None


def served_plan(policy: Policy) -> list[tuple[AdminRule, Action]]:
    """The admin rules the webhook runs: the policy's, less those Kueue's own webhook refuses."""
    return [(rule, action) for rule, action in plan(policy) if rule.id not in KUEUE_REFUSES]


def decide_kueue(request: KueueRequest, policy: Policy, cluster: ClusterState | None) -> Decision:
    """The decision on one Kueue object against the cluster's snapshot now; ``cluster`` ``None``
    (or a view that is not the watch cache's snapshot): no cluster, every kind unknown."""
    if request.operation not in ("CREATE", "UPDATE"):
        return Decision()
    read = _read(request.object, request.namespace, policy)
    if not isinstance(read, KueueObject) or not read.kind.judged:
        return Decision()  # another kind (the matchConditions keep them away): nothing to say
    snapshot = cluster.snapshot() if cluster is not None else None
    cached = judged_set(snapshot) if isinstance(snapshot, Snapshot) else _NO_CLUSTER
    steps = served_plan(policy)
    found = findings_of(read, _context(policy, cached, read), steps)
    refusing = {f.rule for f in found.findings if f.action is Action.DENY}
    refused_before: frozenset[str] = frozenset()
    if request.operation == "UPDATE" and refusing:
        old = _read(request.old_object, request.namespace, policy)
        if isinstance(old, KueueObject) and old.kind is read.kind:
            # the old object is judged by the refusing rules only: the others cannot change the answer
            again = [(rule, action) for rule, action in steps if rule.id in refusing]
            before = findings_of(old, _context(policy, cached, old), again)
            refused_before = frozenset(f.rule for f in before.findings if f.action is Action.DENY)
    return settle(found, read, policy, refused_before)


#: the judged set of a webhook without a cluster: every kind unknown, and why
_NO_CLUSTER: Final = Live(
    ObjectSet(
        reasons={kind.plural: "the server runs without a cluster (no --kubeconfig, not in a pod)" for kind, _ in CACHED}
    ),
    (),
    {},
    {},
    {},
)


def _context(policy: Policy, cached: Live, obj: KueueObject) -> AdminContext:
    """What the rules read: the cache with ``obj`` in place, the parsed views shared where ``obj`` leaves them be."""
    queues, cohorts, flavors = cached.queues, cached.cohorts, cached.flavors
    if obj.kind is CLUSTER_QUEUE:
        queues = {**queues, obj.name: parse_cluster_queue(obj.data)}
    elif obj.kind is COHORT:
        cohorts = {**cohorts, obj.name: parse_cohort(obj.data)}
    elif obj.kind is RESOURCE_FLAVOR:
        flavors = {**flavors, obj.name: parse_flavor(obj.data)}
    return AdminContext(
        policy,
        cached.objects.replaced(obj),
        node_infos=cached.nodes,
        queue_infos=queues,
        cohort_infos=cohorts,
        flavor_infos=flavors,
    )


def _read(data: Any, namespace: str, policy: Policy) -> KueueObject | Skipped:
    """The request's object through the one reader; a namespaced object gets the request's namespace."""
    if isinstance(data, Mapping) and namespace:
        metadata = data.get("metadata")
        if isinstance(metadata, Mapping) and not metadata.get("namespace"):
            data = {**data, "metadata": {**metadata, "namespace": namespace}}
    read = read_document(Document(SOURCE, 0, data), "input", policy)
    return read if isinstance(read, (KueueObject, Skipped)) else Skipped("a list, not one object")
