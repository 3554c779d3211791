"""``tpu-admission check``: judge manifests exactly as the webhook's mutating path would on
CREATE, without a cluster (the CI dry run)."""

from __future__ import annotations

import argparse
from typing import TYPE_CHECKING, Any, Final

from webhook.cli.arguments import (
    EXIT_USAGE_LINE,
    UsageError,
    add_judging_flags,
    add_submitter_flags,
    judging_policy,
    read_paths,
    submitter,
    subparser,
)
from webhook.cli.terminal import progress

if TYPE_CHECKING:
    from webhook.cli.report import Report
    from webhook.cluster.store import ClusterStore
    from webhook.objects.sources import Document
    from webhook.policy.config import Policy


def _parse_labels(text: str) -> dict[str, str]:
    labels: dict[str, str] = {}
    for item in filter(None, (part.strip() for part in text.split(","))):
        key, sep, value = item.partition("=")
        if not sep or not key:
            raise UsageError(f"--namespace-labels: {item!r} is not key=value")
        labels[key] = value
    return labels


def _load_cluster_state(paths: list[str], policy: Policy) -> ClusterStore:
    from webhook.cluster.statefiles import load_state_files
    from webhook.objects.sources import SourceError

    try:
        return load_state_files(paths, policy)
    except SourceError as exc:
        raise UsageError(f"--cluster-state: {exc}") from None


def run_check(args: argparse.Namespace) -> int:
    from webhook.cli.formatters import emit_report
    from webhook.cli.report import Report
    from webhook.kube.typos import did_you_mean
    from webhook.objects.sources import read_documents

    paths = read_paths(args)
    policy, mode_source = judging_policy(args)
    if args.tier is not None and args.tier not in policy.tiers:
        meant = did_you_mean(args.tier, policy.tiers)
        hint = f"; did you mean {meant!r}?" if meant else ""
        raise UsageError(f"--tier {args.tier!r} is not a configured tier ({', '.join(policy.tiers)}){hint}")
    labels = _parse_labels(args.namespace_labels) if args.namespace_labels is not None else None
    cluster = None
    if args.cluster_state:
        with progress("reading the cluster state"):
            cluster = _load_cluster_state(args.cluster_state, policy)
    left_out: list[str] = []
    documents, errors = read_documents(paths, left_out)

    report = Report(
        errors=errors,
        mode=policy.mode,
        mode_source=mode_source,
        strict=args.strict,
        left_out=left_out,
        allow_empty=args.allow_empty,
    )
    with progress(f"checking {len(documents)} document(s)"):
        _judge(documents, args, policy, cluster, labels, report)
    if cluster is not None:
        report.notes += _state_notes(cluster, report)
    return emit_report(report, args.output, [str(error) for error in errors])


def _judge(
    documents: list[Document],
    args: argparse.Namespace,
    policy: Policy,
    cluster: ClusterStore | None,
    labels: dict[str, str] | None,
    report: Report,
) -> None:
    """Judge each document as the mutating call would on CREATE, into ``report``."""
    from webhook.cli.nearmiss import near_misses
    from webhook.cli.report import CheckResult
    from webhook.engine.decision import AdmissionFacts, decide
    from webhook.objects.kinds import kind_of_document, likely_meant
    from webhook.objects.sources import named

    user = submitter(args)
    for document in documents:
        data: Any = document.data
        if not isinstance(data, dict):  # kubectl refuses these: no kind, no object
            reason = f"{_yaml_type(data)}, not a Kubernetes object (a mapping with apiVersion and kind)"
            report.results.append(CheckResult(document, "", "", "", None, reason, policy.mode, mistake=True))
            continue
        kind = str(data.get("kind", ""))
        api_version = str(data.get("apiVersion", ""))
        metadata = data.get("metadata")
        metadata = metadata if isinstance(metadata, dict) else {}
        name = named(metadata.get("name") or metadata.get("generateName") or "")
        judged = kind_of_document(data)
        if judged is None:
            # Only a namespace it names: a skipped kind may be cluster-scoped (a Namespace, a ClusterQueue).
            namespace = str(metadata.get("namespace") or "")
            reason = f"not a JobSet, Job or Deployment ({api_version or 'no apiVersion'} {kind or 'no kind'})"
            meant = likely_meant(data)
            reason += f"; {meant}" if meant else ""
            report.results.append(
                CheckResult(document, kind, namespace, name, None, reason, policy.mode, mistake=meant is not None)
            )
            continue
        namespace = str(metadata.get("namespace") or args.namespace or "default")  # as kubectl apply -n reads it
        facts = AdmissionFacts(
            operation="CREATE",
            stage="mutate",
            namespace=namespace,
            tier_override=args.tier,
            namespace_labels=labels,
            kind=judged,
            user=user,
        )
        decision = decide(data, facts, policy, cluster)
        hints = near_misses(data, judged, policy)
        report.results.append(CheckResult(document, kind, namespace, name, decision, mode=policy.mode, hints=hints))


def _state_notes(cluster: ClusterStore, report: Report) -> list[str]:
    """What would decide the kinds the state lacks, once, when a rule was skipped for want of them."""
    from webhook.cluster.statefiles import ABSENT, absent_kinds, state_note

    warnings = [warning for result in report.checked for warning in result.strict_warnings if ABSENT in warning]
    kinds = [kind for kind in absent_kinds(cluster) if any(f"{kind.name}: {ABSENT}" in w for w in warnings)]
    return [state_note(kinds)] if kinds else []


def _yaml_type(data: Any) -> str:
    if isinstance(data, list):
        return "a YAML list"
    return {bool: "a YAML boolean", str: "a YAML string"}.get(type(data), f"a YAML {type(data).__name__}")


HELP: Final = f"""\
Judge manifests exactly as the webhook's mutating path would on CREATE, without a
cluster: YAML or JSON, multi-document, lists expanded (kind: List, and typed lists such
as JobSetList as a list call answers), - for stdin. Directories are read recursively:
files ending in .yaml, .yml or .json (the case counts, as for kubectl apply -R); the
files left out are named (hidden ones aside), and such a name on a broken or looping
link or a FIFO is an error. JobSets, Jobs and
Deployments are judged; other documents are reported as skipped, with "did you mean"
when the kind, apiVersion or namespace is one edit from a known one. A file that
cannot be read is reported as an error and every other file is still judged.

examples:
  tpu-admission check jobs/ --mode dynamic
  tpu-admission check -f job.yaml --tier production -o json
  tpu-admission snapshot > state.yaml
  tpu-admission check --cluster-state state.yaml jobs/
  tpu-admission check jobs/ --cluster-state state.yaml --cluster-state more-nodes.yaml
  tpu-admission check jobs/ --strict -o sarif > tpu-admission.sarif
  tpu-admission check jobs/ -o junit > tpu-admission.xml
  tpu-admission check jobs/ --config policy.yaml --user alice --group team-a

The cluster state: tpu-admission snapshot writes every kind the cluster rules read,
empty ones included. A kubectl get -o yaml List cannot say a kind has none: a kind the
state lacks is unknown, and the rules that read it are skipped with a warning (which
--strict fails on), with one note per run on what would decide them.

Who submits (--user, --group) decides whether the policy's queuePermissions let them
submit to the queue; where the name or groups left out could permit the job, that rule
is skipped with a warning naming the flag.

exit codes:
  0  something was checked and everything admitted (with --strict: and no warnings);
     with --allow-empty, also nothing checked
  1  something denied (with --strict: also any warning, a skipped document that looks
     like a mistake (a misspelt kind or apiVersion, a YAML list or scalar)), or nothing
     checked (no JobSet, Job or Deployment) without --allow-empty
{EXIT_USAGE_LINE}
     (every other file is still judged and reported first)
"""


def add_parser(commands: Any) -> None:
    """The ``check`` subcommand's parser."""
    check = subparser(commands, "check", "check manifests as the webhook would (CI dry run)", HELP)
    add_judging_flags(
        check,
        config="policy config YAML",
        cluster_state="kubectl get -o yaml or tpu-admission snapshot output: files or directories",
        strict="fail (exit 1) on warnings too: an unknown tier, skipped cluster checks, warn-level findings, "
        "a skipped document that looks like a mistake, nothing checked",
    )
    check.add_argument("--tier", help="treat every namespace as this tier")
    check.add_argument(
        "-n", "--namespace", metavar="NS", help="the namespace of documents that name none (default: default)"
    )
    check.add_argument("--namespace-labels", help="the namespace's labels, k=v,...")
    add_submitter_flags(check)
    check.set_defaults(run=run_check)
