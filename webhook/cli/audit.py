"""``tpu-admission audit``: judge the JobSets, Jobs and Deployments that exist now.

From a live cluster (``--kubeconfig``; in a pod the in-cluster config; else
``$KUBECONFIG`` or ``~/.kube/config``) or from state files (``--cluster-state``: the
objects and the cluster state in the same ``kubectl get -o yaml`` or ``snapshot``
files), with the same engine, policy and cluster state as the server, each object
judged *as stored*:

- the fields other writers set on a stored object are removed first
  (``webhook.objects.stored``: ``spec.suspend``, and in dynamic mode the pod templates'
  ``kueue.x-k8s.io/podset-*`` annotations), so the rules about them do not judge there;
  every other rule does, on the object as stored;
- the object's own Workloads are left out of the state it is judged against
  (``webhook.cluster.own``), so a running job is not refused for the quota it holds;
- a Job of an audited JobSet is not judged again (its JobSet was): its controller
  reference names that JobSet and its name is one the JobSet controller gives
  (``webhook.cluster.own.JobSetJobs``; a Job that only claims an owner is judged on its
  own). An object in a namespace without a tier is not judged (the webhook is not called
  for it); both are counted in the text summary;
- the judgement is ``check``'s: ``decide`` on the mutating path of a CREATE, the tier
  from the namespace's labels in the state (``webhook.policy.tiers``).

So an object's verdict is what ``check --cluster-state`` says of it as its user wrote it,
against the same state less its own Workloads. Exit 0: nothing would be denied; 1:
something would (with ``--strict``: or warned), or nothing was judged (unless
``--allow-empty``); 2: bad usage, an input that cannot be read, or a cluster that cannot
be reached or listed.
"""

from __future__ import annotations

import argparse
import sys
from collections.abc import Iterator
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any, Final

from webhook.cli.arguments import (
    add_allow_empty,
    add_cluster_flags,
    add_cluster_state,
    add_namespace_flags,
    add_output,
    judging_policy,
    subparser,
)
from webhook.cli.terminal import VERDICTS, emit_text, progress

if TYPE_CHECKING:
    from webhook.cli.report import Report
    from webhook.cluster.own import JobSetJobs, OwnedWorkloads
    from webhook.cluster.store import ClusterStore
    from webhook.objects.sources import Document
    from webhook.policy.config import Policy

EXIT_USAGE: Final = 2

#: where a live object's results say it came from (a file's objects name the file and line)
LIVE_SOURCE: Final = "cluster"
OUTPUTS: Final = ("text", "json", "yaml", "policyreport", "junit", "sarif")


class AuditError(Exception):
    """The audit cannot run: bad usage, an unreadable input, an unreachable cluster (exit 2)."""


@dataclass(slots=True)
class Audit:
    report: Report
    #: Jobs whose controller is a JobSet: judged with their JobSet
    owned_jobs: int = 0
    #: objects in namespaces without a tier: the webhook is not called for them
    unmanaged: int = 0
    #: namespaces audited (``--namespace``), empty for all
    namespaces: list[str] = field(default_factory=list)
    #: the JobSets audited so far: their Jobs are judged with them
    jobsets: JobSetJobs = field(default_factory=lambda: _jobset_jobs())

    def summary_line(self) -> str:
        text = self.report.summary_line()
        extra = []
        if self.owned_jobs:
            extra.append(f"{self.owned_jobs} JobSet-owned Job(s) judged with their JobSet")
        if self.unmanaged:
            extra.append(f"{self.unmanaged} object(s) in namespaces without a tier")
        return text + (f"; not judged: {', '.join(extra)}" if extra else "")


def _jobset_jobs() -> JobSetJobs:
    from webhook.cluster.own import JobSetJobs

    return JobSetJobs()


def judge(
    document: Document, obj: Any, policy: Policy, store: ClusterStore, owners: OwnedWorkloads, audit: Audit
) -> None:
    """Judge one stored object and add its result to ``audit`` (or count why it was not judged)."""
    from webhook.cli.policyreport import AuditResult
    from webhook.cluster.own import WithoutWorkloads
    from webhook.engine.decision import AdmissionFacts, decide
    from webhook.objects.kinds import JOB, JOBSET, kind_of_document
    from webhook.objects.sources import named
    from webhook.objects.stored import as_written

    kind = kind_of_document(obj)
    if kind is None:
        return
    if kind == JOBSET:
        audit.jobsets.add(obj)
    elif kind == JOB and audit.jobsets.owns(obj):
        audit.owned_jobs += 1
        return
    metadata = obj.get("metadata") if isinstance(obj.get("metadata"), dict) else {}
    name = named(metadata.get("name") or metadata.get("generateName") or "")
    namespace = str(metadata.get("namespace") or "default")  # as check reads a manifest without one
    uid = str(metadata.get("uid") or "")
    as_written(obj, kind, policy.mode)
    own = owners.of(kind, namespace, name, uid)
    cluster = WithoutWorkloads(store, own) if own else store
    facts = AdmissionFacts(operation="CREATE", stage="mutate", namespace=namespace, kind=kind)
    decision = decide(obj, facts, policy, cluster)
    if decision.tier is None and not decision.warnings:
        audit.unmanaged += 1
        return
    audit.report.results.append(
        AuditResult(
            document,
            str(obj.get("kind")),
            namespace,
            name,
            decision,
            mode=policy.mode,
            api_version=str(obj.get("apiVersion") or ""),
            uid=uid,
        )
    )


# ---------------------------------------------------------------- sources


def from_files(paths: list[str], policy: Policy) -> tuple[ClusterStore, OwnedWorkloads, Iterator[Document]]:
    """The state and the objects to judge, both from the files (``SourceError`` if one cannot be read)."""
    from webhook.cluster.own import OwnedWorkloads
    from webhook.cluster.statefiles import state_from_objects
    from webhook.objects.kinds import JOBSET, kind_of_document
    from webhook.objects.sources import load_documents

    documents = load_documents(paths, heads=True)
    # JobSets first: a Job is judged with its JobSet only once that JobSet has been seen
    judged = sorted(
        (d for d in documents if kind_of_document(d.data) is not None), key=lambda d: kind_of_document(d.data) != JOBSET
    )
    state = [d.data for d in documents if kind_of_document(d.data) is None]
    del documents
    owners = OwnedWorkloads()
    for obj in state:
        if isinstance(obj, dict) and obj.get("kind") == "Workload":  # a WorkloadList's items come one by one
            owners.add(obj)
    store = state_from_objects(state, policy)
    return store, owners, iter(judged)


def _live_documents(objects: Iterator[dict[str, Any]]) -> Iterator[Document]:
    from webhook.objects.sources import Document

    for obj in objects:
        yield Document(LIVE_SOURCE, 0, obj)


def _selected(document: Document, namespaces: list[str]) -> bool:
    if not namespaces:
        return True
    metadata = document.data.get("metadata") if isinstance(document.data, dict) else None
    namespace = metadata.get("namespace") if isinstance(metadata, dict) else None
    return str(namespace or "default") in namespaces


def _audit_files(paths: list[str], policy: Policy, audit: Audit) -> None:
    from webhook.objects.sources import SourceError

    try:
        store, owners, documents = from_files(paths, policy)
    except SourceError as exc:
        raise AuditError(f"--cluster-state: {exc}") from None
    for document in documents:
        if _selected(document, audit.namespaces):
            judge(document, document.data, policy, store, owners, audit)


def _audit_cluster(kubeconfig: str | None, context: str | None, policy: Policy, audit: Audit) -> Any:
    """Audit the live cluster; the API client, still open (for ``--apply``)."""
    from kubernetes import client

    from webhook.cluster.client import ClusterConfigError, load_configuration
    from webhook.cluster.listing import ListError, judged_objects, load_state

    try:
        configuration = load_configuration(kubeconfig, context)
    except ClusterConfigError as exc:
        raise AuditError(str(exc)) from None
    api_client = client.ApiClient(configuration)
    try:
        with progress(f"listing the cluster at {configuration.host}"):
            store, owners = load_state(api_client, policy)
        with progress(f"judging the jobs of the cluster at {configuration.host}"):
            for document in _live_documents(judged_objects(api_client, audit.namespaces)):
                judge(document, document.data, policy, store, owners, audit)
                document.data = None  # judged: the object goes, its result stays
    except ListError as exc:
        api_client.close()  # type: ignore[no-untyped-call]
        raise AuditError(f"the cluster at {configuration.host} could not be listed: {exc}") from None
    return api_client


def run(args: argparse.Namespace) -> tuple[Audit, Any]:
    """The audit itself; the API client too in live mode (for ``--apply``), else ``None``."""
    from webhook.cli.report import Report

    policy, mode_source = judging_policy(args)
    namespaces = [] if args.all_namespaces else list(dict.fromkeys(args.namespace or ()))
    report = Report(mode=policy.mode, mode_source=mode_source, strict=args.strict, allow_empty=args.allow_empty)
    audit = Audit(report, namespaces=namespaces)
    if args.cluster_state:
        _audit_files(args.cluster_state, policy, audit)
        return audit, None
    return audit, _audit_cluster(args.kubeconfig, args.context, policy, audit)


def text(audit: Audit) -> str:
    """One block per judged object (``check``'s lines), then the summary."""
    from webhook.cli.formatters import verdict_lines

    blocks = []
    for result in audit.report.results:
        decision = result.decision
        assert decision is not None
        where = f" ({result.document.source}:{result.document.line})" if result.document.line else ""
        verdict = "admitted" if decision.allowed else "would be DENIED"
        head = f"{result.kind} {result.namespace}/{result.name}{where}: {verdict}"
        note = " (what the mutating path adds on create)"
        blocks.append("\n".join(verdict_lines(head, decision, result.mode, note)))
    blocks.append(f"tpu-admission audit: {audit.summary_line()}")
    return "\n".join(blocks)


def run_audit(args: argparse.Namespace) -> int:
    from webhook.cli.formatters import FORMATTERS
    from webhook.cli.policyreport import MANAGED_BY, policy_reports, policyreport

    if args.apply and args.output != "policyreport":
        print("tpu-admission audit: --apply writes PolicyReports: give --output policyreport", file=sys.stderr)
        return EXIT_USAGE
    if args.apply and args.cluster_state:
        print("tpu-admission audit: --apply writes to a live cluster, not with --cluster-state", file=sys.stderr)
        return EXIT_USAGE
    try:
        audit, api_client = run(args)
    except AuditError as exc:
        print(f"tpu-admission audit: {exc}", file=sys.stderr)
        return EXIT_USAGE
    try:
        if args.apply:
            from webhook.cluster.listing import ListError
            from webhook.cluster.reports import apply_reports

            try:
                applied = apply_reports(
                    api_client, policy_reports(audit.report.results), "=".join(MANAGED_BY), audit.namespaces
                )
            except ListError as exc:
                print(f"tpu-admission audit: {exc}", file=sys.stderr)
                return EXIT_USAGE
            output = f"tpu-admission audit: {applied.line()}\ntpu-admission audit: {audit.summary_line()}"
        elif args.output == "text":
            emit_text(text(audit), VERDICTS)
            return audit.report.exit_code()
        elif args.output == "policyreport":
            output = policyreport(audit.report)
        else:
            output = FORMATTERS[args.output](audit.report)
    finally:
        if api_client is not None:
            api_client.close()
    sys.stdout.write(output + "\n")
    sys.stdout.flush()
    return audit.report.exit_code()


_HELP: Final = """\
Judge the JobSets, batch/v1 Jobs and apps/v1 Deployments that exist now, as the webhook
would judge them on create: from the cluster (in a pod: the in-cluster config; else
--kubeconfig, $KUBECONFIG, ~/.kube/config) or found in --cluster-state files, with the
same policy and cluster state as the server. Each is judged as stored: spec.suspend
(Kueue's) and, in dynamic mode, the pod templates' kueue.x-k8s.io/podset-* annotations
(the Slice Provisioner's) are not judged; every other rule is. An object's own Workloads
are not counted against its own quota; a JobSet's Jobs are judged with their JobSet.
Use it before a rule goes from warn to deny, after a policy or quota change, and as a
periodic report (docs/audit.md).

examples:
  tpu-admission audit --config policy.yaml
  tpu-admission audit -n kubemaker -o json
  tpu-admission audit --context prod -A
  tpu-admission audit --output policyreport | kubectl apply -f -
  tpu-admission audit --output policyreport --apply       (in the CronJob overlay)
  tpu-admission snapshot > state.yaml
  kubectl get jobsets,jobs,deployments -A -o yaml > objects.yaml
  tpu-admission audit --cluster-state state.yaml --cluster-state objects.yaml --mode dynamic

exit codes:
  0  something was judged and nothing would be denied (with --strict: and no warnings);
     with --allow-empty, also nothing judged
  1  something would be denied (with --strict: also any warning), or nothing was judged
     (no such namespace, no jobs) without --allow-empty
  2  bad usage, an invalid policy config, a file that cannot be read, or a cluster that
     cannot be reached or listed
"""


def add_audit(commands: Any) -> None:
    """The ``audit`` subcommand's parser (``webhook.cli.main.COMMANDS``)."""
    audit = subparser(commands, "audit", "judge the JobSets, Jobs and Deployments that exist now", _HELP)
    source = audit.add_mutually_exclusive_group()
    add_cluster_flags(source, context=audit)
    add_cluster_state(source, "judge the JobSets/Jobs/Deployments in these files or directories against their state")
    audit.add_argument("--config", help="policy config YAML (the server's)")
    audit.add_argument("--mode", choices=["static", "dynamic"], help="override the config's mode")
    add_namespace_flags(audit, what="audit only this namespace")
    add_output(audit, OUTPUTS)
    audit.add_argument(
        "--strict", action="store_true", help="fail (exit 1) on warnings too, and when nothing was judged"
    )
    add_allow_empty(audit, "judged")
    audit.add_argument(
        "--apply",
        action="store_true",
        help="with --output policyreport: write the PolicyReports into the cluster (server-side apply) and "
        "delete the ones this audit wrote before that are stale, instead of printing them",
    )
    audit.set_defaults(run=run_audit)
