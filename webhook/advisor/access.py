"""What a caller may read beyond the namespace it asked about, and the answers cut to it.

The API server's RBAC check covers the request itself (an explanation or a simulation in
one namespace). An answer can still name Workloads and jobs of other namespaces: the
Workload that preempted this one, the holders of the quota a job waits for. For each
other namespace an answer names, the advisor asks the API server (a SubjectAccessReview)
whether the caller may read explanations there; where it may not, the names are replaced
by ``HIDDEN``. Other teams' usage (the ClusterQueues of the cohort that hold what a job
waits for) is the quota picture's, a permission of its own (``list quotas``): without it
their names become ``OTHER_QUEUE``. An unknown answer hides: a name is shown only on a yes.
"""

from __future__ import annotations

import logging
import re
from collections.abc import Callable, Iterable
from typing import Any, Final, Protocol

from webhook.advisor.frontproxy import Caller

#: the advisor's API group and version (the APIService's)
GROUP: Final = "advisor.tpu-admission.antgroup.com"
VERSION: Final = "v1alpha1"
#: what a name the caller may not read is replaced by
HIDDEN: Final = "(a Workload of another namespace)"
#: what another team's ClusterQueue is called for a caller who may not see the quota picture
OTHER_QUEUE: Final = "(another team's ClusterQueue)"
#: at most this many other namespaces are asked about per answer; the rest are hidden
MAX_REVIEWS: Final = 16

log = logging.getLogger("tpu_admission.advisor")

#: ``[Kind/]namespace/name``: how answers name a Workload (``ns/name``) or a job
#: (``Kind/ns/name``). A namespace is a DNS label with a letter in it, so neither
#: ``google.com/tpu`` nor ``256/512`` is one.
_REFERENCE: Final = re.compile(
    r"(?<![-A-Za-z0-9./])(?:[A-Z][A-Za-z]*/)?((?=[-a-z0-9]*[a-z])[a-z0-9](?:[-a-z0-9]{0,61}[a-z0-9])?)/([a-z0-9](?:[-a-z0-9.]*[a-z0-9])?)"
)


class Authorizer(Protocol):
    def may_read(self, caller: Caller, namespace: str) -> bool:
        """Whether ``caller`` may get explanations in ``namespace``; ``False`` when that is not known."""
        ...

    def may_see_quota(self, caller: Caller) -> bool:
        """Whether ``caller`` may list the cohort-wide quota picture; ``False`` when that is not known."""
        ...


class SubjectAccessReviews:
    """Asks the API server, with the advisor's own credentials (``system:auth-delegator``)."""

    def __init__(self, api_client: Any, timeout: float = 5.0) -> None:
        from kubernetes import client

        self._api = client.AuthorizationV1Api(api_client)
        self._timeout = timeout

    def may_read(self, caller: Caller, namespace: str) -> bool:
        return self._review(caller, {"resource": "explanations", "verb": "get", "namespace": namespace})

    def may_see_quota(self, caller: Caller) -> bool:
        return self._review(caller, {"resource": "quotas", "verb": "list"})

    def _review(self, caller: Caller, attributes: dict[str, str]) -> bool:
        body: Any = {
            "apiVersion": "authorization.k8s.io/v1",
            "kind": "SubjectAccessReview",
            "spec": {
                "user": caller.user,
                "groups": list(caller.groups),
                "extra": {key: list(values) for key, values in caller.extra.items()},
                "resourceAttributes": {"group": GROUP, "version": VERSION, **attributes},
            },
        }
        try:
            review = self._api.create_subject_access_review(body, _request_timeout=self._timeout)
        except Exception as exc:  # unknown is no: the names stay hidden
            log.warning("a SubjectAccessReview for %s (%s) failed (%s): names hidden", caller.user, attributes, exc)
            return False
        status = review.status
        return bool(status is not None and status.allowed and not status.denied)


def _strings(value: Any) -> Iterable[str]:
    if isinstance(value, str):
        yield value
    elif isinstance(value, dict):
        for item in value.values():
            yield from _strings(item)
    elif isinstance(value, list):
        for item in value:
            yield from _strings(item)


def _rewrite(value: Any, change: Callable[[str], str]) -> Any:
    if isinstance(value, str):
        return change(value)
    if isinstance(value, dict):
        return {key: _rewrite(item, change) for key, item in value.items()}
    if isinstance(value, list):
        return [_rewrite(item, change) for item in value]
    return value


def named_namespaces(answer: Any) -> set[str]:
    """The namespaces of the Workload and job references in ``answer``'s strings."""
    return {match.group(1) for text in _strings(answer) for match in _REFERENCE.finditer(text)}


def other_queues(answer: Any) -> set[str]:
    """The ClusterQueues of other teams that the §12 results in ``answer`` (a simulation, or
    an explanation's) name as holders of what they wait for."""
    found: set[str] = set()
    if isinstance(answer, list):
        for item in answer:
            found |= other_queues(item)
    elif isinstance(answer, dict):
        holders = answer.get("holders")
        if isinstance(holders, dict):
            own = answer.get("clusterQueue")
            queues = holders.get("clusterQueues") or ()
            found |= {q["name"] for q in queues if isinstance(q, dict) and isinstance(q.get("name"), str)} - {own}
        for value in answer.values():
            found |= other_queues(value)
    return found


def redact(answer: Any, own: str, caller: Caller, authorizer: Authorizer, queues: Iterable[str] = ()) -> Any:
    """``answer`` with every reference into a namespace other than ``own`` that ``caller``
    may not read replaced by ``HIDDEN``, and the ClusterQueues ``queues`` (other teams')
    by ``OTHER_QUEUE`` unless it may see the quota picture (in JSON values; keys are never
    names)."""
    others = sorted(named_namespaces(answer) - {own})
    allowed = {ns for ns in others[:MAX_REVIEWS] if authorizer.may_read(caller, ns)}
    hidden = set(others) - allowed
    teams = sorted(set(queues), key=len, reverse=True)
    if teams and authorizer.may_see_quota(caller):
        teams = []
    if not hidden and not teams:
        return answer
    team = (
        re.compile("|".join(rf"(?<![-A-Za-z0-9./]){re.escape(q)}(?![-A-Za-z0-9/])" for q in teams)) if teams else None
    )

    def change(text: str) -> str:
        text = _REFERENCE.sub(lambda m: HIDDEN if m.group(1) in hidden else m.group(0), text)
        return team.sub(OTHER_QUEUE, text) if team is not None else text

    return _rewrite(answer, change)
