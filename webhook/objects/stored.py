"""A stored object back to what its user wrote, as far as the rules can tell (``audit``).

``audit`` judges JobSets, Jobs and Deployments as the API server stores them. Most of
what the rules read there is still the user's (labels, pod templates, requests, a pod
``priorityClassName``), but two fields that ``submitted`` rules refuse are written by
others after admission, on every object they manage:

- ``spec.suspend`` of a JobSet or a Job: Kueue's webhook sets it to true on create and
  its controller flips it when it admits or evicts the job; the API server defaults a
  Job's to false. (``suspend-forbidden``.) A Deployment has none.
- the ``kueue.x-k8s.io/podset-*`` annotations on a pod template (every replicatedJob's
  ``template.spec.template.metadata.annotations`` of a JobSet, ``spec.template.metadata
  .annotations`` of a Job): in dynamic mode the Slice Provisioner's webhook derives them
  from the slice-topology annotation (``podset-annotation-forbidden``). In static mode
  nobody else writes them: there they are the user's topology-aware-scheduling request,
  which the placement rules require, and they are kept.

``as_written`` removes exactly those, so the rules about them find nothing on a stored
object and every other rule judges the rest as stored. Everything else other writers
add is left: status, ``metadata.uid`` and the like no rule reads; the labels this
webhook's own mutating path added were admitted with the object (judging them is
judging the labels the job runs with); and the node selectors and tolerations Kueue
merges into an admitted job's pod templates from its flavor cannot be told from the
user's, so they are judged as stored (docs/audit.md says what that can hide).
"""

from __future__ import annotations

from typing import Any, Final

from webhook.objects.kinds import DEPLOYMENT, JOBSET

PODSET_ANNOTATION_PREFIX: Final = "kueue.x-k8s.io/podset-"


def _at(value: Any, *keys: str) -> dict[str, Any] | None:
    """The mapping at ``keys`` under ``value``, or None where a step is missing or not a mapping."""
    for key in keys:
        if not isinstance(value, dict):
            return None
        value = value.get(key)
    return value if isinstance(value, dict) else None


def _drop_podset_annotations(pod_template: Any) -> None:
    annotations = _at(pod_template, "metadata", "annotations")
    if annotations is None:
        return
    for key in [key for key in annotations if isinstance(key, str) and key.startswith(PODSET_ANNOTATION_PREFIX)]:
        del annotations[key]


def _pod_templates(kind: str, spec: dict[str, Any]) -> list[Any]:
    if kind != JOBSET:
        return [spec.get("template")]
    jobs = spec.get("replicatedJobs")
    return [_at(job, "template", "spec", "template") for job in (jobs if isinstance(jobs, list) else ())]


def as_written(obj: Any, kind: str, mode: str) -> Any:
    """``obj`` (a stored object of the judged ``kind``) without what others wrote on it; changed in place."""
    spec = _at(obj, "spec")
    if spec is None or kind == DEPLOYMENT:
        return obj
    spec.pop("suspend", None)
    if mode == "dynamic":
        for template in _pod_templates(kind, spec):
            _drop_podset_annotations(template)
    return obj
