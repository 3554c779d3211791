"""One submitted object through the webhook and then the simulator: what ``simulate`` and
the advisor's simulations answer.

A JobSet, Job or Deployment is first judged as its CREATE would be (``decide`` on the
mutating call, the tier from ``--tier`` or the namespace): if the webhook would deny it,
it would never be created, and the answer says so (``never``, reason ``Denied``, every
denial). Otherwise it gets the labels the mutating call adds (the tier's default queue and
priority class) and goes to the simulator; a ``kueue.x-k8s.io`` Workload goes to the
simulator as it is.

Before either, what the API server would refuse (``webhook.objects.apivalidation``: names,
counts, quantities) is refused as it would be: such an object is never created. Every
message quotes the input through ``printable``, so no answer echoes a control character.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any, Final

from webhook.cluster import kinds as k
from webhook.cluster.snapshot import Snapshot
from webhook.engine.decision import AdmissionFacts, judge
from webhook.objects.apivalidation import printable, printable_json, printable_lines, refusals
from webhook.objects.kinds import kind_of_document, likely_meant
from webhook.objects.readers import read_workload
from webhook.objects.request import UserInfo
from webhook.simulate.live import LiveSimulator, simulate_object, simulate_workload
from webhook.simulate.result import NEVER, Result

WORKLOAD_GROUP: Final = "kueue.x-k8s.io"
#: the reason of a job the webhook itself would refuse (not Kueue's: it never gets that far)
DENIED: Final = "Denied"


class NotSimulated(ValueError):
    """The object is not one the simulator reads; the message says what it is and what would be
    (made printable: it may quote the input)."""

    def __init__(self, message: str) -> None:
        super().__init__(printable(message))


#: the kinds a simulation reads whose first list must be in before it can answer
SIMULATED_KINDS: Final = (
    k.WORKLOADS,
    k.CLUSTER_QUEUES,
    k.LOCAL_QUEUES,
    k.RESOURCE_FLAVORS,
    k.WORKLOAD_PRIORITY_CLASSES,
)


def not_synced(snapshot: Snapshot) -> str | None:
    """Why ``snapshot`` cannot be simulated against yet (as ``explain`` refuses): the Workloads
    cannot be read, or a kind the simulator reads has not had its first list; ``None`` when it can.
    A kind the cluster lacks or the policy does not watch is no reason: the answer then says
    what it does not know (``unknown``)."""
    reason = snapshot.unread.get(k.WORKLOADS.name)
    if reason is not None:
        return f"Workloads cannot be read now: {reason}; retry once the watch has synced"
    for kind in SIMULATED_KINDS:
        reason = snapshot.unread.get(kind.name)
        if reason is not None and reason.startswith("not synced"):
            return f"{kind.name} cannot be read now: {reason}; retry once the watch has synced"
    return None


def result_json(result: Result) -> dict[str, Any]:
    """SPEC §12's JSON of ``result`` as the CLI and the advisor's simulations write it: no string in it
    carries a control or bidirectional-format character raw (``printable``)."""
    answer: dict[str, Any] = printable_json(result.to_json())
    return answer


def result_text(result: Result, wide: bool = True) -> str:
    """``result``'s text as the CLI writes it, each line ``printable`` (``wide``: see ``Result.text``)."""
    return printable_lines(result.text(wide))


def is_workload(data: Mapping[str, Any]) -> bool:
    return data.get("kind") == "Workload" and str(data.get("apiVersion", "")).startswith(WORKLOAD_GROUP + "/")


def simulate_submitted(
    data: Any,
    simulator: LiveSimulator,
    *,
    user: UserInfo | None = None,
    tier: str | None = None,
    source: str = "",
) -> Result:
    """What Kueue would do with ``data`` submitted now; ``NotSimulated`` when it is not a job or Workload."""
    if not isinstance(data, dict):
        raise NotSimulated("not a Kubernetes object (a mapping with apiVersion and kind)")
    metadata = data.get("metadata") if isinstance(data.get("metadata"), dict) else {}
    namespace = str((metadata or {}).get("namespace") or "default")
    source = printable(source)
    if is_workload(data) or kind_of_document(data) is not None:
        refused = refusals(data)
        if refused:
            raise NotSimulated(f"the API server would refuse it: {'; '.join(refused)}")
    if is_workload(data):
        return simulate_object(simulator, data, source, namespace)
    kind = kind_of_document(data)
    if kind is None:
        meant = likely_meant(data)
        found = f"{data.get('apiVersion') or 'no apiVersion'} {data.get('kind') or 'no kind'}"
        raise NotSimulated(
            f"not a JobSet, Job, Deployment or kueue.x-k8s.io Workload ({found})" + (f"; {meant}" if meant else "")
        )
    policy, snapshot = simulator.policy, simulator.snapshot
    facts = AdmissionFacts(
        operation="CREATE", stage="mutate", namespace=namespace, tier_override=tier, kind=kind, user=user or UserInfo()
    )
    workload = read_workload(kind, data, policy, namespace)
    decision = judge(workload, facts, policy, snapshot)
    if not decision.allowed:
        name = str((metadata or {}).get("name") or "")
        # every violation, one a line, as check and the webhook's own denial list them
        message = "the webhook would deny it: " + "\n  ".join(decision.deny_message().splitlines())
        return Result(NEVER, DENIED, "", message, source=source, kind=kind, namespace=namespace, name=name)
    if workload.malformed:
        raise NotSimulated(f"{kind} {workload.name}: {workload.malformed[0].message}")
    # with the labels the mutating call adds (the tier's default queue and priority class)
    return simulate_workload(simulator, workload, {**workload.labels, **decision.added}, source)
