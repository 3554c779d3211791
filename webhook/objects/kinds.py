"""The object kinds the webhook judges: JobSet, batch/v1 Job and apps/v1 Deployment.

RFC-0033 connects all three to Kueue the same way (two labels at creation) and
lists how they differ (last table): a JobSet or a Job is one Workload with a gang, a
Deployment is one Workload per pod, no gang and no ``spec.suspend``. Everything else
(Pods, ConfigMaps, ...) is allowed unchanged. This module only names the kinds; how
each is read is ``webhook.objects.readers.read_workload``.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Final

from webhook.kube.typos import did_you_mean

JOBSET: Final = "JobSet"
JOB: Final = "Job"
DEPLOYMENT: Final = "Deployment"
#: in the order the README's rule table lists them
ORDER: Final[tuple[str, ...]] = (JOBSET, JOB, DEPLOYMENT)
ALL: Final[frozenset[str]] = frozenset(ORDER)


@dataclass(frozen=True, slots=True)
class JudgedKind:
    kind: str
    group: str
    version: str
    #: the plural the webhook configurations register (``rules[].resources``)
    resource: str


JUDGED: Final[dict[str, JudgedKind]] = {
    JOBSET: JudgedKind(JOBSET, "jobset.x-k8s.io", "v1alpha2", "jobsets"),
    JOB: JudgedKind(JOB, "batch", "v1", "jobs"),
    DEPLOYMENT: JudgedKind(DEPLOYMENT, "apps", "v1", "deployments"),
}
_BY_GROUP: Final = {(k.group, k.kind): k.kind for k in JUDGED.values()}


def judged_kind(group: str, kind: str) -> str | None:
    """The kind when an object of ``group``/``kind`` is judged, else ``None``.

    The version is not compared: the webhook configurations use ``matchPolicy:
    Equivalent``, so the API server converts to the registered version first.
    """
    return _BY_GROUP.get((group, kind))


def kind_of_document(data: Any) -> str | None:
    """The judged kind of a manifest (``apiVersion`` + ``kind``), for ``check``."""
    if not isinstance(data, dict):
        return None
    api_version = data.get("apiVersion")
    kind = data.get("kind")
    if not isinstance(api_version, str) or not isinstance(kind, str):
        return None
    group = api_version.rpartition("/")[0]  # "batch/v1" -> "batch"; "v1" -> "" (core)
    return judged_kind(group, kind)


def likely_meant(data: Any) -> str | None:
    """For a manifest that is not judged: ``"did you mean kind: JobSet?"`` when it looks like a
    misspelt JobSet, Job or Deployment, else ``None``.

    The kind is one edit from a judged kind (``Jobset``, ``Deploymnet``), or is one with an
    apiVersion that is core (``v1``), missing, or one edit from the right group. A kind of
    that name from another API group (Volcano's ``batch.volcano.sh`` Job) is no typo.
    """
    if not isinstance(data, dict):
        return None
    kind, api_version = data.get("kind"), data.get("apiVersion")
    if not isinstance(kind, str):
        return None
    group = api_version.rpartition("/")[0] if isinstance(api_version, str) else ""
    meant = kind if kind in JUDGED else did_you_mean(kind, ORDER)
    if meant is None:
        return None
    target = JUDGED[meant]
    if group and group != target.group and did_you_mean(group, (target.group,)) is None:
        return None
    fixes = [f"kind: {meant}"] if meant != kind else []
    if group != target.group or not isinstance(api_version, str) or "/" not in api_version:
        fixes.append(f"apiVersion: {target.group}/{target.version}")
    return f"did you mean {' and '.join(fixes)}?" if fixes else None
