"""``tpu-admission simulate``: what Kueue would do with these jobs if they were submitted now.

The state is a ``Snapshot`` built exactly as ``check --cluster-state`` builds it
(``webhook.cluster.statefiles``), or listed from a live cluster as ``audit`` lists it
(``webhook.cluster.listing``), with Kueue's Configuration and the WorkloadPriorityClasses
too; the simulator reads that snapshot as the server does (``webhook.simulate.live``).
A JobSet, Job or Deployment gets the labels the webhook's mutating call would add on
create (the tier's default queue and priority class), and when the webhook would deny
it, the answer says so (``never``, reason ``Denied``): it would not be created at all.
"""

from __future__ import annotations

import argparse
import json
import sys
from typing import TYPE_CHECKING, Any, Final

from webhook.cli.arguments import (
    EXIT_USAGE_LINE,
    UsageError,
    add_allow_empty,
    add_cluster_flags,
    add_cluster_state,
    add_output,
    add_paths,
    add_submitter_flags,
    judging_policy,
    read_paths,
    submitter,
    subparser,
)
from webhook.cli.terminal import OUTCOMES, emit_text, progress

if TYPE_CHECKING:
    from webhook.cluster.snapshot import Snapshot
    from webhook.objects.sources import Document
    from webhook.policy.config import Policy
    from webhook.simulate.live import LiveSimulator
    from webhook.simulate.result import Result

EXIT_STARTS, EXIT_WAITS, EXIT_USAGE = 0, 1, 2


class SimulateError(Exception):
    """Bad usage or an input that cannot be read (exit 2)."""


def _snapshot(args: argparse.Namespace, policy: Policy) -> Snapshot:
    from webhook.objects.sources import SourceError

    if args.cluster_state:
        from webhook.cluster.statefiles import load_state_files

        try:
            return load_state_files(args.cluster_state, policy).snapshot()
        except SourceError as exc:
            raise SimulateError(f"--cluster-state: {exc}") from None
    from kubernetes import client

    from webhook.cluster import kinds as k
    from webhook.cluster.client import ClusterConfigError, load_configuration
    from webhook.cluster.listing import ListError, load_state

    try:
        configuration = load_configuration(args.kubeconfig, args.context)
    except ClusterConfigError as exc:
        raise SimulateError(f"{exc}; or give the state as --cluster-state FILE") from None
    api_client = client.ApiClient(configuration)
    try:
        with progress(f"listing the cluster at {configuration.host}"):
            store, _ = load_state(api_client, policy, kinds=k.SIMULATED)
    except ListError as exc:
        raise SimulateError(f"the cluster at {configuration.host} could not be listed: {exc}") from None
    finally:
        api_client.close()  # type: ignore[no-untyped-call]
    return store.snapshot()


def simulate_document(document: Document, simulator: LiveSimulator, args: argparse.Namespace) -> Result | str:
    """One document's answer, or why it is not simulated (an error line)."""
    from webhook.advisor.submitted import NotSimulated, simulate_submitted
    from webhook.objects.apivalidation import printable

    where = _where(document)
    try:
        return simulate_submitted(document.data, simulator, user=submitter(args), tier=args.tier, source=where)
    except NotSimulated as exc:
        return f"{printable(where)}: {exc}"


def _where(document: Document) -> str:
    return f"{document.source}:{document.line}" if document.line else document.source


def skipped_kind(document: Document) -> str | None:
    """Why ``check`` would skip this document (a kind it does not judge, not a likely typo of one), else ``None``.

    A Node or a Cohort beside the jobs in a folder is not a mistake: it is left out, as ``check`` leaves it.
    """
    from webhook.advisor.submitted import is_workload
    from webhook.objects.kinds import kind_of_document, likely_meant

    data = document.data
    if not isinstance(data, dict) or is_workload(data) or kind_of_document(data) is not None or likely_meant(data):
        return None
    return f"not a JobSet, Job, Deployment or Workload ({data.get('apiVersion') or 'no apiVersion'} {data.get('kind')})"


def _json(result: Result, document: Document) -> dict[str, Any]:
    """``Result.to_json`` with the file and line as ``check``'s JSON gives them (``source``, ``line``)."""
    from webhook.advisor.submitted import result_json
    from webhook.objects.apivalidation import printable

    answer = result_json(result)
    return {
        "source": printable(document.source),
        "line": document.line,
        **{k: v for k, v in answer.items() if k != "source"},
    }


def _skipped_json(document: Document, reason: str) -> dict[str, Any]:
    data = document.data
    metadata = data.get("metadata") if isinstance(data.get("metadata"), dict) else {}
    return {
        "source": document.source,
        "line": document.line,
        "kind": str(data.get("kind") or ""),
        "namespace": str(metadata.get("namespace") or ""),
        "name": str(metadata.get("name") or ""),
        "skipped": reason,
    }


def _text(result: Result, document: Document, wide: bool = False) -> str:
    """``Result.text`` with where the object was read at the end of its first line."""
    from webhook.advisor.submitted import result_text
    from webhook.objects.apivalidation import printable

    first, newline, rest = result_text(result, wide).partition("\n")
    return f"{first}  ({printable(_where(document))}){newline}{rest}"


def run_simulate(args: argparse.Namespace) -> int:
    from webhook.kube.typos import did_you_mean
    from webhook.objects.apivalidation import printable, printable_json
    from webhook.objects.sources import read_documents
    from webhook.simulate.live import LiveSimulator, starts_now

    paths = read_paths(args)
    if args.cluster_state and (args.kubeconfig or args.context):
        raise UsageError("simulate: --cluster-state is the state; --kubeconfig and --context read a cluster: give one")
    policy, _ = judging_policy(args)
    try:
        if args.tier is not None and args.tier not in policy.tiers:
            meant = did_you_mean(args.tier, policy.tiers)
            hint = f"; did you mean {meant!r}?" if meant else ""
            raise SimulateError(f"--tier {args.tier!r} is not a configured tier ({', '.join(policy.tiers)}){hint}")
        snapshot = _snapshot(args, policy)
    except SimulateError as exc:
        print(f"tpu-admission simulate: {exc}", file=sys.stderr)
        return EXIT_USAGE
    documents, read_errors = read_documents(paths)
    errors = [printable(str(e)) for e in read_errors]
    unreadable = bool(errors)
    simulator = LiveSimulator(snapshot, policy)
    results: list[tuple[Result, Document]] = []
    skipped: list[tuple[Document, str]] = []
    with progress(f"simulating {len(documents)} object(s)"):
        for document in documents:
            reason = skipped_kind(document)
            if reason is not None:
                skipped.append((document, reason))
                continue
            answer = simulate_document(document, simulator, args)
            if isinstance(answer, str):
                errors.append(answer)
            else:
                results.append((answer, document))
    if args.output in ("json", "yaml"):
        answers: dict[str, Any] = {"results": [_json(r, d) for r, d in results], "errors": errors}
        if skipped:
            answers["skipped"] = [printable_json(_skipped_json(d, why)) for d, why in skipped]
        output = json.dumps(answers, indent=2) if args.output == "json" else _yaml(answers)
    else:
        blocks = [_text(r, d, args.output == "wide") for r, d in results]
        blocks += [printable(f"{_where(d)}: skipped ({why})") for d, why in skipped]
        blocks += [f"error: {e}" for e in errors]
        started = sum(1 for r, _ in results if starts_now(r))
        left = f"; {len(skipped)} skipped" if skipped else ""
        blocks.append(f"tpu-admission simulate: {started} of {len(results)} would start now{left}")
        output = "\n".join(blocks)
    if args.output in ("text", "wide"):
        emit_text(output, OUTCOMES)
    else:
        sys.stdout.write(output + "\n")
        sys.stdout.flush()
    if errors and args.output not in ("text", "wide"):
        for error in errors:
            print(f"tpu-admission simulate: {error}", file=sys.stderr)
    if unreadable:
        return EXIT_USAGE
    if not results and not errors:
        return EXIT_STARTS if args.allow_empty else EXIT_WAITS
    return EXIT_STARTS if results and not errors and all(starts_now(r) for r, _ in results) else EXIT_WAITS


def _yaml(document: Any) -> str:
    import yaml

    return str(yaml.safe_dump(document, sort_keys=False)).rstrip("\n")


HELP: Final = f"""\
Say what Kueue would do with each job if it were submitted now: start it (admit), start
it after preempting named Workloads (preempt), keep it waiting behind what (wait), never
admit it as it is (never), or that the state cannot tell (unknown). One scheduling
attempt of Kueue's scheduler against the state, nothing written. Reads JobSets, batch/v1
Jobs, apps/v1 Deployments (one Workload per pod: says how many pods start now) and
kueue.x-k8s.io/v1beta2 Workloads; a job gets the labels the webhook would add on create.
Fair sharing is on when the state holds Kueue's Configuration (ConfigMap
kueue-system/kueue-manager-config) with a fairSharing block (docs/simulate.md).

The state is --cluster-state files, or else the cluster, found as kubectl finds it
(--kubeconfig, $KUBECONFIG, ~/.kube/config, in a pod the in-cluster config; --context
picks a kubeconfig context).

examples:
  tpu-admission simulate -f job.yaml
  tpu-admission snapshot > state.yaml
  tpu-admission simulate job.yaml --cluster-state state.yaml
  tpu-admission simulate jobs/ --context prod -o json
  tpu-admission simulate job.yaml --cluster-state state.yaml -o wide

A wait or never answer leads with the outcome, its reason, the file:line and why; -o wide
adds its podSets, who holds the quota or node pools, and the notes.

Other kinds (a Node, a Cohort beside the jobs) are skipped, as check skips them; a
likely typo of a kind (kind: Jobset) is an error with a did-you-mean.

exit codes:
  0  every object would start now (admit or preempt); with --allow-empty, also none read
  1  some object would not start now (wait, never, unknown), a kind looks misspelt, or
     there was no job or Workload to simulate (without --allow-empty)
{EXIT_USAGE_LINE}
"""


def add_parser(commands: Any) -> None:
    """The ``simulate`` subcommand's parser ."""
    parser = subparser(commands, "simulate", "what Kueue would do with these jobs if submitted now", HELP)
    add_paths(parser)
    add_cluster_state(parser, "the cluster state to simulate against (as check --cluster-state reads it)")
    add_cluster_flags(parser)
    parser.add_argument("--config", help="policy config YAML (the server's)")
    parser.add_argument("--mode", choices=["static", "dynamic"], help="override the config's mode")
    parser.add_argument("--tier", help="treat every namespace as this tier")
    add_submitter_flags(parser)
    add_allow_empty(parser, "simulated")
    add_output(
        parser,
        ("text", "wide", "json", "yaml"),
        what="text: the short answer; wide: a wait's or never's podSets, quota holders and notes too",
    )
    parser.set_defaults(run=run_simulate)
