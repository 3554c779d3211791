"""``audit --apply``: write the PolicyReports into the cluster, and remove the ones gone stale.

Each report is written by server-side apply (field manager ``tpu-admission``, forced:
the audit owns these objects whole), which creates it or replaces its fields in one
call. Then the reports this audit wrote before (those its label ``selector`` finds:
``app.kubernetes.io/managed-by=tpu-admission``) that this run did not write are deleted:
their namespace has nothing left to judge, or its report needs fewer parts than before.
Reports of other tools are never touched; with ``--namespace`` only those namespaces'
are. ClusterPolicyReports are read only by a run that writes one, which an audit of the
three (namespaced) judged kinds never does. RBAC: ``list``, ``create``, ``patch`` and
``delete`` on ``policyreports.wgpolicyk8s.io`` (the overlay's ClusterRole).
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field
from typing import Any, Final

from webhook.cluster import kinds as k
from webhook.cluster.listing import ListError, describe, list_objects

GROUP: Final = "wgpolicyk8s.io"
VERSION: Final = "v1alpha2"
FIELD_MANAGER: Final = "tpu-admission"
POLICY_REPORTS: Final = k.Kind("PolicyReports", "PolicyReport", GROUP, VERSION, "policyreports", True)
CLUSTER_POLICY_REPORTS: Final = k.Kind(
    "ClusterPolicyReports", "ClusterPolicyReport", GROUP, VERSION, "clusterpolicyreports", False
)


@dataclass(slots=True)
class Applied:
    written: list[str] = field(default_factory=list)
    deleted: list[str] = field(default_factory=list)

    def line(self) -> str:
        text = f"applied {len(self.written)} PolicyReport(s)"
        if self.deleted:
            text += f", deleted {len(self.deleted)} stale one(s) ({', '.join(self.deleted)})"
        return text


def _where(namespace: str, name: str) -> str:
    return f"{namespace}/{name}" if namespace else name


def apply_reports(
    api_client: Any, reports: Iterable[dict[str, Any]], selector: str, namespaces: Sequence[str] = ()
) -> Applied:
    """Write ``reports``; delete this tool's earlier reports that were not written now.

    ``ListError`` (naming the report) when a write, the listing or a delete fails.
    """
    from kubernetes import client

    custom = client.CustomObjectsApi(api_client)
    done = Applied()
    kept: set[tuple[str, str, str]] = set()
    options: dict[str, Any] = {
        "field_manager": FIELD_MANAGER,
        "force": True,
        "_content_type": "application/apply-patch+yaml",
    }
    for report in reports:
        metadata = report["metadata"]
        name, namespace = metadata["name"], metadata.get("namespace", "")
        try:
            if namespace:
                custom.patch_namespaced_custom_object(
                    GROUP, VERSION, namespace, POLICY_REPORTS.plural, name, report, **options
                )
            else:
                custom.patch_cluster_custom_object(
                    GROUP, VERSION, CLUSTER_POLICY_REPORTS.plural, name, report, **options
                )
        except Exception as exc:
            raise ListError(
                f"{report['kind']} {_where(namespace, name)}", f"not written: {describe(exc)}", None
            ) from exc
        kept.add((report["kind"], namespace, name))
        done.written.append(_where(namespace, name))
    wrote_cluster_reports = any(kind == CLUSTER_POLICY_REPORTS.kind for kind, _, _ in kept)
    for kind in (POLICY_REPORTS, CLUSTER_POLICY_REPORTS):
        if kind is CLUSTER_POLICY_REPORTS and (namespaces or not wrote_cluster_reports):
            # The judged kinds are namespaced: an audit writes no ClusterPolicyReport, so it
            # needs no access to them (the overlay grants none); a namespaced one never does.
            continue
        scopes: list[str | None] = list(namespaces) if kind.namespaced and namespaces else [None]
        for scope in scopes:
            try:
                stale = [
                    (str(obj["metadata"].get("namespace") or ""), str(obj["metadata"]["name"]))
                    for obj in list_objects(_lister(custom, kind, scope, selector), kind)
                    if (kind.kind, str(obj["metadata"].get("namespace") or ""), obj["metadata"]["name"]) not in kept
                ]
                for namespace, name in stale:
                    if namespace:
                        custom.delete_namespaced_custom_object(GROUP, VERSION, namespace, kind.plural, name)
                    else:
                        custom.delete_cluster_custom_object(GROUP, VERSION, kind.plural, name)
                    done.deleted.append(_where(namespace, name))
            except Exception as exc:
                if getattr(exc, "status", None) == 404 and kind is CLUSTER_POLICY_REPORTS:
                    continue  # only the namespaced CRD installed: nothing of ours can be there
                raise ListError(kind.name, f"stale reports not removed: {describe(exc)}", None) from exc
    return done


def _lister(custom: Any, kind: k.Kind, namespace: str | None, selector: str) -> Any:
    if namespace is None:
        return lambda **o: custom.list_cluster_custom_object(GROUP, VERSION, kind.plural, label_selector=selector, **o)
    return lambda **o: custom.list_namespaced_custom_object(
        GROUP, VERSION, namespace, kind.plural, label_selector=selector, **o
    )
