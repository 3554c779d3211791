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
from typing import Any, Final

from webhook.admin.catalog import load_policy
from webhook.cli.arguments import EXIT_USAGE_LINE, add_cluster_state, add_submitter_flags, submitter, subparser
from webhook.cluster import kinds as k
from webhook.cluster.snapshot import Snapshot
from webhook.engine.simulating import NotSimulated, result_json, result_text, simulate_submitted
from webhook.kube.typos import did_you_mean
from webhook.objects.apivalidation import printable
from webhook.objects.sources import Document, SourceError, read_documents
from webhook.policy.config import Policy
from webhook.simulate.live import LiveSimulator, starts_now
from webhook.simulate.result import Result

EXIT_STARTS, EXIT_WAITS, EXIT_USAGE = 0, 1, 2
#: the kinds a live state is listed with: the cluster rules' and what the simulator reads besides
LISTED_KINDS: Final = (*k.KINDS, k.KUEUE_CONFIG, k.WORKLOAD_PRIORITY_CLASSES)


class SimulateError(Exception):
    """Bad usage or an input that cannot be read (exit 2)."""


def _snapshot(args: argparse.Namespace, policy: Policy) -> Snapshot:
    if args.cluster_state:
        from webhook.cluster.statefiles import load_state_files

        try:
            return load_state_files(args.cluster_state, policy).snapshot()
        except SourceError as exc:
            raise SimulateError(f"--cluster-state: {exc}") from None
    from kubernetes import client

    from webhook.cluster.client import ClusterConfigError, load_configuration
    from webhook.cluster.listing import ListError, load_state

    try:
        configuration = load_configuration(args.kubeconfig)
    except ClusterConfigError as exc:
        raise SimulateError(str(exc)) from None
    api_client = client.ApiClient(configuration)
    try:
        store, _ = load_state(api_client, policy, kinds=LISTED_KINDS)
    except ListError as exc:
        raise SimulateError(f"the cluster at {configuration.host} could not be listed: {exc}") from None
    finally:
        api_client.close()  # type: ignore[no-untyped-call]
    return store.snapshot()


def simulate_document(document: Document, simulator: LiveSimulator, args: argparse.Namespace) -> Result | str:
    """One document's answer, or why it is not simulated (an error line)."""
    where = f"{document.source}:{document.line}" if document.line else document.source
    try:
        return simulate_submitted(document.data, simulator, user=submitter(args), tier=args.tier, source=where)
    except NotSimulated as exc:
        return f"{printable(where)}: {exc}"


def run_simulate(args: argparse.Namespace) -> int:
    policy = load_policy(args.config)
    if args.mode:
        policy = policy.model_copy(update={"mode": args.mode})
    try:
        if args.tier is not None and args.tier not in policy.tiers:
            meant = did_you_mean(args.tier, policy.tiers)
            hint = f"; did you mean {meant!r}?" if meant else ""
            raise SimulateError(f"--tier {args.tier!r} is not a configured tier ({', '.join(policy.tiers)}){hint}")
        snapshot = _snapshot(args, policy)
    except SimulateError as exc:
        print(f"tpu-admission simulate: {exc}", file=sys.stderr)
        return EXIT_USAGE
    documents, read_errors = read_documents(args.paths)
    errors = [printable(str(e)) for e in read_errors]
    unreadable = bool(errors)
    simulator = LiveSimulator(snapshot, policy)
    results: list[Result] = []
    for document in documents:
        answer = simulate_document(document, simulator, args)
        if isinstance(answer, str):
            errors.append(answer)
        else:
            results.append(answer)
    if args.output == "json":
        output = json.dumps({"results": [result_json(r) for r in results], "errors": errors}, indent=2)
    else:
        blocks = [result_text(r) for r in results] + [f"error: {e}" for e in errors]
        started = sum(1 for r in results if starts_now(r))
        blocks.append(f"tpu-admission simulate: {started} of {len(results)} would start now")
        output = "\n".join(blocks)
    sys.stdout.write(output + "\n")
    sys.stdout.flush()
    if errors and args.output == "json":
        for error in errors:
            print(f"tpu-admission simulate: {error}", file=sys.stderr)
    if unreadable:
        return EXIT_USAGE
    return EXIT_STARTS if results and not errors and all(starts_now(r) for r in results) else EXIT_WAITS


HELP: Final = f"""\
Say what Kueue would do with each job if it were submitted now: start it (admit), start
it after preempting named Workloads (preempt), keep it waiting behind what (wait), never
admit it as it is (never), or that the state cannot tell (unknown). One scheduling
attempt of Kueue's scheduler against the state, nothing written. Reads JobSets, batch/v1
Jobs, apps/v1 Deployments (one Workload per pod: says how many pods start now) and
kueue.x-k8s.io/v1beta2 Workloads; a job gets the labels the webhook would add on create.
Fair sharing is on when the state holds Kueue's Configuration (ConfigMap
kueue-system/kueue-manager-config) with a fairSharing block (docs/simulate.md).

examples:
  tpu-admission snapshot -o state.yaml
  tpu-admission simulate job.yaml --cluster-state state.yaml
  tpu-admission simulate jobs/ --kubeconfig ~/.kube/config --output json

exit codes:
  0  every object would start now (admit or preempt)
  1  some object would not start now (wait, never, unknown), or is not a job or Workload
{EXIT_USAGE_LINE}
"""


def add_parser(commands: Any) -> None:
    """The ``simulate`` subcommand's parser (``webhook.cli.main.SUBCOMMANDS``)."""
    parser = subparser(commands, "simulate", "what Kueue would do with these jobs if submitted now", HELP)
    parser.add_argument("paths", nargs="+", metavar="PATH", help="files, directories, or - for stdin")
    source = parser.add_mutually_exclusive_group(required=True)
    add_cluster_state(source, "the cluster state to simulate against (as check --cluster-state reads it)")
    source.add_argument("--kubeconfig", metavar="FILE", help="list the state from this cluster (as audit does)")
    parser.add_argument("--config", help="policy config YAML (the server's)")
    parser.add_argument("--mode", choices=["static", "dynamic"], help="override the config's mode")
    parser.add_argument("--tier", help="treat every namespace as this tier")
    add_submitter_flags(parser)
    parser.add_argument("--output", choices=["text", "json"], default="text", help="report format (default: text)")
    parser.set_defaults(run=run_simulate)
