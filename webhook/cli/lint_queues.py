"""``tpu-admission lint-queues``: the admin guard for the GitOps quota pipeline.

Reads Kueue's objects (ClusterQueues, LocalQueues, Cohorts, ResourceFlavors,
WorkloadPriorityClasses, Topologies, AdmissionChecks, Kueue's Configuration and its
controller Deployment) as ``check`` reads manifests, judges them together with the
cluster state (``--cluster-state``; the input wins by kind, namespace and name), and
reports in ``check``'s formats with ``check``'s exit codes.
"""

from __future__ import annotations

import argparse
from typing import TYPE_CHECKING, Any

from webhook.cli.arguments import EXIT_USAGE_LINE, add_judging_flags, judging_policy, read_paths, subparser
from webhook.cli.terminal import progress

if TYPE_CHECKING:
    from webhook.admin.objectset import InputEntry
    from webhook.cli.report import CheckResult
    from webhook.policy.config import Policy

HELP = f"""\
Judge Kueue's own configuration before it reaches the cluster: ClusterQueues,
LocalQueues, Cohorts, ResourceFlavors, WorkloadPriorityClasses, Topologies,
AdmissionChecks, Kueue's Configuration (the kueue-manager-config ConfigMap, or a bare
config.kueue.x-k8s.io Configuration) and the kueue-controller-manager Deployment's
--feature-gates. Inputs are read as check reads them (YAML or JSON, multi-document,
lists expanded, - for stdin, directories recursively); other kinds are reported as
skipped. The objects are judged together with --cluster-state (what kubectl get -o
yaml or tpu-admission snapshot print), an input object replacing the state's of the
same kind, namespace and name, so a change is judged against the live cluster. A rule
that needs a kind nobody supplied is skipped with a note saying what to add; an empty
typed list (NodeList with no items) is a known zero.

examples:
  tpu-admission lint-queues kueue/ --mode dynamic
  kubectl get nodes,namespaces -o yaml > cluster.yaml
  tpu-admission lint-queues kueue/ --cluster-state cluster.yaml -o github
  tpu-admission lint-queues kueue/ --cluster-state snapshot.yaml --strict -o sarif > kueue.sarif
  tpu-admission lint-queues team-c.yaml --cluster-state live-queues.yaml -o json

exit codes:
  0  something judged and nothing refused (with --strict: and no warnings or skipped
     rules); with --allow-empty, also nothing judged
  1  something refused (with --strict: also any warning, a skipped rule, a skipped
     document that looks like a mistake), or nothing judged without --allow-empty
{EXIT_USAGE_LINE}
     (every other file is still judged and reported first)
"""


def add_parser(commands: Any) -> None:
    parser = subparser(
        commands, "lint-queues", "refuse a Kueue configuration that breaks the quota model (GitOps pipeline)", HELP
    )
    add_judging_flags(
        parser,
        config="policy config YAML (tiers, mode, the kueue: section, rule actions)",
        cluster_state="the live objects (kubectl get -o yaml, or tpu-admission snapshot): files or directories",
        strict="fail (exit 1) on warnings too: warn-level findings, skipped rules, a skipped document that looks "
        "like a mistake, nothing judged",
    )
    parser.set_defaults(run=run_lint_queues)


def _result(judged_entry: InputEntry, decision: Any, skipped: str, policy: Policy) -> CheckResult:
    from webhook.admin.kueueobjects import KueueObject, Skipped
    from webhook.cli.report import CheckResult

    read = judged_entry.read
    # a Configuration's own document maps its fields to lines inside the ConfigMap
    document = read.document if isinstance(read, KueueObject) and read.document else judged_entry.document
    data = document.data if isinstance(document.data, dict) else {}
    raw = data.get("metadata")
    metadata: dict[str, Any] = raw if isinstance(raw, dict) else {}
    kind = str(data.get("kind") or "")
    namespace, name = str(metadata.get("namespace") or ""), str(metadata.get("name") or "")
    if isinstance(read, KueueObject):
        kind, namespace, name = read.kind.kind, read.namespace, read.name
        if read.carrier is not None:
            kind, namespace, name = "ConfigMap", policy.kueue.namespace, policy.kueue.config_map
    mistake = isinstance(read, Skipped) and read.mistake
    return CheckResult(document, kind, namespace, name, decision, skipped, policy.mode, mistake=mistake)


def run_lint_queues(args: argparse.Namespace) -> int:
    from webhook.admin.catalog import ADMIN_RULES
    from webhook.admin.judging import lint
    from webhook.admin.objectset import assemble
    from webhook.cli.formatters import emit_report
    from webhook.cli.report import Report
    from webhook.kube.manifestyaml import FastManifestLoader
    from webhook.objects.sources import read_documents

    paths = read_paths(args)
    policy, mode_source = judging_policy(args)
    left_out: list[str] = []
    # libyaml's C parser: the state and inputs of a whole cluster are large
    documents, errors = read_documents(paths, left_out, loader=FastManifestLoader, heads=True)
    state_documents, state_errors = read_documents(
        args.cluster_state or [], loader=FastManifestLoader, lines=False, heads=True
    )
    for error in state_errors:
        error.problem = f"--cluster-state: {error.problem}"
    errors += state_errors
    objects, entries = assemble(documents, state_documents, policy)
    report = Report(
        errors=errors,
        mode=policy.mode,
        mode_source=mode_source,
        strict=args.strict,
        left_out=left_out,
        command="lint-queues",
        catalog=ADMIN_RULES,
        allow_empty=args.allow_empty,
    )
    with progress(f"judging {len(entries)} object(s)"):
        for judged in lint(objects, entries, policy):
            report.results.append(_result(judged.entry, judged.decision, judged.skipped, policy))
    return emit_report(report, args.output, [f"{error.source}: {error.problem}" for error in errors])
