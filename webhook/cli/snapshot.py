"""``tpu-admission snapshot``: the cluster state the cluster-aware rules read, from a live cluster."""

from __future__ import annotations

import argparse
from typing import Any, Final

from webhook.cli.arguments import UsageError, add_cluster_flags, subparser

HELP: Final = """\
Write the cluster state the cluster-aware rules read (Namespaces, Nodes, and Kueue's
LocalQueues, ClusterQueues, Cohorts, ResourceFlavors, Workloads) and what the admin guard
reads besides (WorkloadPriorityClasses, Topologies, AdmissionChecks, Kueue's ConfigMap
and controller Deployment) as one typed list per kind, empty lists included, so that
`check --cluster-state FILE` and `lint-queues --cluster-state FILE` judge against the
real cluster: a kind the file holds is known, even when empty; a kind it lacks is unknown.

examples:
  tpu-admission snapshot > cluster-state.yaml
  tpu-admission snapshot --context prod --output-file cluster-state.yaml
  tpu-admission check jobs/ --cluster-state cluster-state.yaml
  tpu-admission lint-queues queues/ --cluster-state cluster-state.yaml

The state is printed on stdout unless --output-file names a file; that file is written
whole or not at all (a temporary file beside it, renamed at the end). The older
spelling -o FILE still writes FILE (with a note on stderr); -o is the format, as in
kubectl. The cluster is found as kubectl finds it: --kubeconfig, else $KUBECONFIG (a
list of files), else ~/.kube/config, else the in-cluster config in a pod; --context
picks a kubeconfig context.

exit codes:
  0  every kind was listed and written
  1  some kind could not be listed (named on stderr: forbidden, CRD absent); the
     others were written
  2  no cluster configuration could be loaded, the API server could not be reached or
     refused the credentials, or the file cannot be written; nothing was written
"""


#: the formats ``-o`` takes; any other value is the file of the older ``-o FILE``
FORMATS: Final = ("yaml",)


def run(args: argparse.Namespace) -> int:
    import sys

    from webhook.admin.catalog import load_policy
    from webhook.cluster.export import run_snapshot

    target = args.output_file
    if args.output not in FORMATS:
        # the older spelling, -o FILE, still writes the file
        if target is not None:
            raise UsageError(f"-o {args.output}: not a format ({', '.join(FORMATS)}), and --output-file is given")
        print(
            f"tpu-admission snapshot: -o {args.output}: writing the file; -o is the format now, as in kubectl: "
            f"give --output-file {args.output}",
            file=sys.stderr,
        )
        target = args.output
    from webhook.cli.terminal import progress

    with progress("listing the cluster's state"):
        return run_snapshot(args.kubeconfig, target, load_policy(args.config), args.context)


def add_parser(commands: Any) -> None:
    """The ``snapshot`` subcommand's parser."""
    snapshot = subparser(commands, "snapshot", "print (or write) a --cluster-state file from a live cluster", HELP)
    add_cluster_flags(snapshot)
    snapshot.add_argument(
        "-o", "--output", default="yaml", metavar="FORMAT",
        help="yaml, the only format (default); a file name here is the older -o FILE: use --output-file",
    )  # fmt: skip
    snapshot.add_argument(
        "--output-file", metavar="FILE", help="write this file, whole or not at all (default: stdout; - for stdout)"
    )
    snapshot.add_argument(
        "--config", help="policy config YAML: its kueue section names Kueue's ConfigMap and controller"
    )
    snapshot.set_defaults(run=run)
