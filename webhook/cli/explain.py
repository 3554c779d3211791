"""``tpu-admission explain`` and ``tpu-admission quota``: why a job is not running, and the
cohort tree's quota, from ``--cluster-state`` files or a live cluster (``--kubeconfig``).

Both read the state the way the server's watch cache holds it (a ``ClusterStore`` and
its snapshot) and answer through the same code as the advisor's explanations
(``webhook.explain.lookup``). ``explain`` also reads the job itself when it can: from
the files when they hold it (a JobSet, Job or Deployment document, e.g. ``kubectl get
jobsets -o yaml``), from the cluster by name; then the job's own status decides as well
(ready replicas, its end), and a job without a Workload is NotManaged. Without the job
document the job is found through its Workloads' owner references.

Exit codes (SPEC §13): 0 found and explained; 1 not found; 2 bad usage, an input that
cannot be read, or state that cannot say (the Workloads, for explain; the ClusterQueues,
for quota).
"""

from __future__ import annotations

import argparse
import datetime
import json
import sys
from collections.abc import Mapping
from typing import TYPE_CHECKING, Any, Final

from webhook.cli.arguments import UsageError, add_cluster_flags, add_cluster_state, add_output, subparser
from webhook.cli.terminal import emit_text, progress, width

if TYPE_CHECKING:
    from collections.abc import Callable

    from webhook.cluster.snapshot import Snapshot
    from webhook.explain.explainer import Explanation
    from webhook.quota.picture import Amounts, FlavorAmounts, QuotaPicture

    #: whether a (flavor, resource) table is shown
    Keep = Callable[[str, str], bool]

EXIT_OK, EXIT_NOT_FOUND, EXIT_USAGE = 0, 1, 2
#: (kind, namespace, name) -> the job as stored
Jobs = dict[tuple[str, str, str], dict[str, Any]]


class State:
    """What was read: the snapshot, the jobs, and the job kinds read at all (a job of a kind
    read and missing is not found; of a kind not read, it is looked for through its Workloads)."""

    def __init__(self, snapshot: Snapshot, jobs: Jobs, read: set[str]) -> None:
        self.snapshot, self.jobs, self.read = snapshot, jobs, read


class StateError(Exception):
    """The state cannot be read (exit 2); the message says which input and why."""


def _key(obj: Mapping[str, Any], kind: str) -> tuple[str, str, str]:
    metadata = obj.get("metadata") if isinstance(obj.get("metadata"), dict) else {}
    assert isinstance(metadata, dict)
    return kind, str(metadata.get("namespace") or "default"), str(metadata.get("name") or "")


def state_from_files(paths: list[str]) -> State:
    """The snapshot of the files' state, and the jobs they hold (``StateError`` when unreadable)."""
    from webhook.cluster.statefiles import state_from_objects
    from webhook.explain.jobstatus import POD
    from webhook.objects.kinds import kind_of_document
    from webhook.objects.sources import SourceError, load_documents
    from webhook.policy.config import Policy

    try:
        documents = load_documents(paths, lines=False, heads=True)
    except SourceError as exc:
        raise StateError(f"--cluster-state: {exc}") from None
    jobs: Jobs = {}
    state: list[dict[str, Any]] = []
    for document in documents:  # lists come as their items (and a typed list's head, for the store)
        obj = document.data
        if not isinstance(obj, dict):
            continue
        kind = kind_of_document(obj) or (POD if (obj.get("apiVersion"), obj.get("kind")) == ("v1", POD) else None)
        if kind is not None:
            jobs[_key(obj, kind)] = obj
        else:
            state.append(obj)
    return State(state_from_objects(state, Policy()).snapshot(), jobs, {key[0] for key in jobs})


def state_from_cluster(kubeconfig: str | None, job: tuple[str, str, str] | None, context: str | None = None) -> State:
    """The live cluster's state (listed as ``audit`` lists it) and, when asked, the one job, read by name."""
    from kubernetes import client

    from webhook.cluster import kinds as k
    from webhook.cluster.client import ClusterConfigError, load_configuration
    from webhook.cluster.listing import JUDGED_KINDS, ListError, job_call, list_objects, load_state
    from webhook.explain.workloads import WORKLOAD
    from webhook.policy.config import Policy

    try:
        configuration = load_configuration(kubeconfig, context)
    except ClusterConfigError as exc:
        raise StateError(str(exc)) from None
    api_client = client.ApiClient(configuration)
    jobs: Jobs = {}
    read: set[str] = set()
    try:
        with progress(f"listing the cluster at {configuration.host}"):
            store, _ = load_state(api_client, Policy(), kinds=k.SIMULATED)
        if job is not None and job[0] != WORKLOAD:
            kind, namespace, name = job
            listed = next(each for each in JUDGED_KINDS if each.kind == kind)
            try:
                for obj in list_objects(job_call(api_client, listed, namespace, name), listed):
                    jobs[_key(obj, kind)] = obj
                read.add(kind)
            except Exception as exc:  # the kind is not served or may not be read: found through the Workloads
                if getattr(exc, "status", None) not in (403, 404):
                    raise ListError(listed.name, str(exc), getattr(exc, "status", None)) from exc
    except ListError as exc:
        raise StateError(f"the cluster at {configuration.host} could not be listed: {exc}") from None
    finally:
        api_client.close()  # type: ignore[no-untyped-call]
    return State(store.snapshot(), jobs, read)


def _load(args: argparse.Namespace, job: tuple[str, str, str] | None) -> State:
    if args.cluster_state:
        return state_from_files(args.cluster_state)
    return state_from_cluster(args.kubeconfig, job, args.context)


def _fail(command: str, message: str, code: int, output: str) -> int:
    from webhook.explain.result import document as explain_document

    if output in ("json", "yaml"):
        sys.stdout.write(_render(explain_document([], [message]), output) + "\n")
    print(f"tpu-admission {command}: {message}", file=sys.stderr)
    return code


def _now() -> datetime.datetime:
    return datetime.datetime.now(datetime.UTC)


def _render(document: Any, output: str) -> str:
    """A JSON document as ``-o json`` or ``-o yaml`` prints it."""
    if output == "json":
        return json.dumps(document, indent=2)
    import yaml

    return str(yaml.safe_dump(document, sort_keys=False)).rstrip("\n")


def narrowed(picture: QuotaPicture, keep: Keep, queues: set[str] | None = None) -> QuotaPicture:
    """``picture`` with only the (flavor, resource) pairs ``keep`` keeps (and, given ``queues``,
    only those ClusterQueues): what a short answer shows, the rest being behind ``-o wide``."""
    from dataclasses import replace

    def kept(flavors: FlavorAmounts) -> FlavorAmounts:
        pairs = {f: {r: a for r, a in resources.items() if keep(f, r)} for f, resources in flavors.items()}
        return {flavor: resources for flavor, resources in pairs.items() if resources}

    return replace(
        picture,
        cluster_queues={
            name: replace(queue, flavors=kept(queue.flavors))
            for name, queue in picture.cluster_queues.items()
            if queues is None or name in queues
        },
        cohorts={name: replace(cohort, flavors=kept(cohort.flavors)) for name, cohort in picture.cohorts.items()},
    )


def _amounts(picture: QuotaPicture) -> dict[tuple[str, str], list[Amounts]]:
    """Every queue's and cohort's amounts, by (flavor, resource)."""
    found: dict[tuple[str, str], list[Amounts]] = {}
    every: list[FlavorAmounts] = [q.flavors for q in picture.cluster_queues.values()]
    every += [c.flavors for c in picture.cohorts.values()]
    for flavors in every:
        for flavor, resources in flavors.items():
            for resource, amounts in resources.items():
                found.setdefault((flavor, resource), []).append(amounts)
    return found


def _busy(amounts: Amounts) -> bool:
    return any((amounts.in_use, amounts.pending, amounts.borrowed, amounts.lent))


def _asked(snapshot: Snapshot, explanation: Explanation) -> set[str]:
    """The resources the job's Workload asks for (its pod templates' requests and limits)."""
    namespace, _, name = (explanation.workload or "").partition("/")
    record = snapshot.records.get((namespace, name)) if name else None
    document = record.document() if record is not None else None
    spec = document.get("spec") if isinstance(document, dict) else None
    asked: set[str] = set()
    for pod_set in (spec or {}).get("podSets") or ():
        pod = ((pod_set or {}).get("template") or {}).get("spec") or {}
        for container in [*(pod.get("containers") or ()), *(pod.get("initContainers") or ())]:
            resources = (container or {}).get("resources") or {}
            for section in ("requests", "limits"):
                asked.update((resources.get(section) or {}).keys())
    return asked


def short_explanation(snapshot: Snapshot, explanation: Explanation) -> tuple[Explanation, int]:
    """The explanation with the quota tables a person reads first: the resources the job asks
    for, where some team uses, borrows, lends or waits for them; and how many were left out."""
    from dataclasses import replace

    picture = explanation.quota
    if picture is None:
        return explanation, 0
    asked = _asked(snapshot, explanation)
    everything = _amounts(picture)
    shown = {
        pair
        for pair, amounts in everything.items()
        if (not asked or pair[1] in asked) and any(_busy(each) for each in amounts)
    }
    own = picture.cluster_queues.get(explanation.cluster_queue or "")
    mine = {(f, r) for f, resources in (own.flavors if own else {}).items() for r in resources}
    hidden = len(mine - shown)
    return replace(explanation, quota=narrowed(picture, lambda f, r: (f, r) in shown)), hidden


#: an RFC 3339 time as Kubernetes writes it (seconds, UTC)
_TIME = r"\b(\d{4}-\d{2}-\d{2}T\d{2}:\d{2}:\d{2}Z)\b"


def ago(when: str, now: datetime.datetime) -> str:
    """How long before ``now`` ``when`` (RFC 3339) was, as kubectl's AGE column says it: 45s, 12m, 3h, 4d."""
    then = datetime.datetime.strptime(when, "%Y-%m-%dT%H:%M:%SZ").replace(tzinfo=datetime.UTC)
    seconds = int((now - then).total_seconds())
    if seconds < 0:
        return "in the future"
    for unit, size in (("d", 86400), ("h", 3600), ("m", 60)):
        if seconds >= 2 * size or (unit == "m" and seconds >= size):
            return f"{seconds // size}{unit} ago"
    return f"{seconds}s ago"


def with_ages(explanation: Explanation, now: datetime.datetime) -> Explanation:
    """The explanation with each time it states followed by how long ago that was, for a person."""
    import re
    from dataclasses import replace

    def aged(text: str) -> str:
        return re.sub(_TIME, lambda m: f"{m.group(1)} ({ago(m.group(1), now)})", text)

    decided = explanation.decided
    since = aged(decided.since) if decided.since else decided.since
    return replace(explanation, decided=replace(decided, since=since), points=tuple(map(aged, explanation.points)))


def run_explain(args: argparse.Namespace) -> int:
    from webhook.explain.explainer import ExplainError, explain
    from webhook.explain.lookup import (
        BadTarget,
        NotFound,
        NotSynced,
        parse_target,
        request_from_snapshot,
        stored_simulator,
    )
    from webhook.explain.result import document as explain_document
    from webhook.explain.text import render_explanation

    try:
        kind, name = parse_target(args.target)
    except BadTarget as exc:
        return _fail("explain", str(exc), EXIT_USAGE, args.output)
    namespace = args.namespace or "default"
    try:
        state = _load(args, (kind, namespace, name))
        jobs = state.jobs if kind in state.read else None
        snapshot = state.snapshot
        request = request_from_snapshot(snapshot, kind, namespace, name, jobs, stored_simulator(snapshot), state.jobs)
        explanation = explain(request)
    except StateError as exc:
        return _fail("explain", str(exc), EXIT_USAGE, args.output)
    except NotFound as exc:
        return _fail("explain", str(exc), EXIT_NOT_FOUND, args.output)
    except (NotSynced, ExplainError) as exc:
        return _fail("explain", str(exc), EXIT_USAGE, args.output)
    if args.output in ("json", "yaml"):
        output = _render(explain_document([explanation.result()]), args.output)
    elif args.output == "wide":
        output = render_explanation(with_ages(explanation, _now()), width())
    else:
        short, hidden = short_explanation(snapshot, with_ages(explanation, _now()))
        output = render_explanation(short, width()).rstrip("\n")
        if hidden:
            output += f"\n  ({hidden} more quota table(s), of resources it does not ask for or nobody uses: -o wide)"
    if args.output in ("json", "yaml"):
        sys.stdout.write(output.rstrip("\n") + "\n")
    else:
        emit_text(output.rstrip("\n"))
    return EXIT_OK


def run_quota(args: argparse.Namespace) -> int:
    from webhook.advisor.quotatree import quota_document, render_quota
    from webhook.cluster import kinds as k

    try:
        snapshot = _load(args, None).snapshot
    except StateError as exc:
        return _fail("quota", str(exc), EXIT_USAGE, "text")
    reason = snapshot.unread.get(k.CLUSTER_QUEUES.name)
    if reason is not None:
        print(f"tpu-admission quota: ClusterQueues cannot be read: {reason}", file=sys.stderr)
        return EXIT_USAGE
    picture = _filtered(snapshot.quota_picture(), args)
    if args.output in ("json", "yaml"):
        output = _render(quota_document(picture), args.output)
    else:
        everything = _amounts(picture)
        shown = {pair for pair, amounts in everything.items() if args.output == "wide" or _first(pair, amounts)}
        output = render_quota(narrowed(picture, lambda f, r: (f, r) in shown), width()).rstrip("\n")
        if len(shown) < len(everything):
            output += f"\n({len(everything) - len(shown)} more table(s), idle or of zeros: -o wide or --resource)"
        emit_text(output)
        return EXIT_OK
    sys.stdout.write(output.rstrip("\n") + "\n")
    return EXIT_OK


def _first(pair: tuple[str, str], amounts: list[Amounts]) -> bool:
    """Whether ``quota``'s short answer shows a table: the TPU chips' wherever there is quota for
    them, any other resource's only where some queue uses, borrows, lends or waits for it."""
    from webhook.policy.config import TpuPolicy

    if pair[1] == TpuPolicy().resource_name:
        return any(bool(each.nominal) or _busy(each) for each in amounts)
    return any(_busy(each) for each in amounts)


def _filtered(picture: QuotaPicture, args: argparse.Namespace) -> QuotaPicture:
    """``quota``'s filters: ``--flavor``, ``--resource``, ``--cohort`` (its whole tree) and ``--cluster-queue``."""
    from webhook.kube.typos import did_you_mean

    def known(flag: str, value: str | None, names: set[str]) -> None:
        if value is not None and value not in names:
            meant = did_you_mean(value, sorted(names))
            hint = f"; did you mean {meant!r}?" if meant else f" (known: {', '.join(sorted(names)) or 'none'})"
            raise UsageError(f"quota: {flag} {value!r} is not in the state{hint}")

    pairs = set(_amounts(picture))
    known("--flavor", args.flavor, {flavor for flavor, _ in pairs})
    known("--resource", args.resource, {resource for _, resource in pairs})
    known(
        "--cohort", args.cohort, set(picture.cohorts) | {q.cohort for q in picture.cluster_queues.values() if q.cohort}
    )
    known("--cluster-queue", args.cluster_queue, set(picture.cluster_queues))
    queues: set[str] | None = None
    if args.cohort is not None:
        queues = {queue.name for queue in picture.queues_under(args.cohort)}
    if args.cluster_queue is not None:
        queues = {args.cluster_queue} & (queues if queues is not None else {args.cluster_queue})
    return narrowed(
        picture,
        lambda f, r: args.flavor in (None, f) and args.resource in (None, r),
        queues,
    )


_EXPLAIN_HELP: Final = """\
Why a JobSet, Job, Deployment or Workload is not running, and until when: its state in
RFC-0033's words (Queued, ProvisioningSlice, Starting, Running, Preempted, Finished,
Failed, Deactivated, NotManaged) with since when, why (Kueue's reason; for a preempted
job, by whom), and its team's and cohort's quota as bars. Its Workload is found by the
label kueue.x-k8s.io/job-uid, never by name. Reads --cluster-state files (the job's own
document too, when they hold it) or the cluster (--kubeconfig, $KUBECONFIG,
~/.kube/config). Kinds as kubectl names them: jobset(s), job(s), deploy(ment)(s),
workload(s), kwl. Details: docs/explain.md.

Text is the short answer: the quota tables of the resources the job asks for where some
team uses, borrows, lends or waits for them (-o wide shows every table), and each time
followed by how long ago it was (3h ago); JSON and YAML give the times alone.

examples:
  tpu-admission explain jobset/llm-pretrain-a3f8 -n kubemaker
  tpu-admission explain jobset/llm-pretrain-a3f8 -n kubemaker -o wide
  tpu-admission explain workload/jobset-llm-pretrain-a3f8-4f9d2 -n kubemaker -o json
  tpu-admission snapshot > state.yaml
  kubectl get jobsets -n kubemaker -o yaml > jobs.yaml
  tpu-admission explain jobset/llm-pretrain-a3f8 -n kubemaker --cluster-state state.yaml --cluster-state jobs.yaml

exit codes:
  0  found and explained
  1  not found (no such object, or no Workload names it and the job itself was not read)
  2  bad usage, an input that cannot be read, or Workloads that cannot be read
"""

_QUOTA_HELP: Final = """\
The cohort tree with every ClusterQueue's nominal quota, usage, borrowing, lending and
pending requests per flavor and resource, as bars (text) or numbers (json): what a team
admin reads to judge a quota split. Reads --cluster-state files or the cluster
(--kubeconfig, $KUBECONFIG, ~/.kube/config). Details: docs/explain.md.

Text shows the TPU chips' tables and, of the other resources, those some queue uses,
borrows, lends or waits for; -o wide shows every table.

examples:
  tpu-admission quota
  tpu-admission quota --resource google.com/tpu --cohort tpu-pool
  tpu-admission quota --cluster-state state.yaml -o json
  tpu-admission quota --context prod

exit codes:
  0  the tree was printed
  2  bad usage, an input that cannot be read, or ClusterQueues that cannot be read
"""


def _add_source(parser: argparse.ArgumentParser) -> None:
    source = parser.add_mutually_exclusive_group()
    add_cluster_flags(source, context=parser)
    add_cluster_state(source, "read the state (and jobs) from these files or directories")
    add_output(parser, ("text", "wide", "json", "yaml"), what="text: the short answer; wide: every quota table")


def add_explain(commands: Any) -> None:
    """The ``explain`` subcommand's parser ."""
    parser = subparser(commands, "explain", "why a job is not running, and until when", _EXPLAIN_HELP)
    parser.add_argument("target", metavar="KIND/NAME", help="e.g. jobset/llm-pretrain-a3f8, workload/NAME")
    parser.add_argument("--namespace", "-n", metavar="NS", help="the object's namespace (default: default)")
    _add_source(parser)
    parser.set_defaults(run=run_explain)


def add_quota(commands: Any) -> None:
    """The ``quota`` subcommand's parser ."""
    parser = subparser(commands, "quota", "the cohort tree's quota, usage, borrowing and lending", _QUOTA_HELP)
    _add_source(parser)
    parser.add_argument("--flavor", metavar="NAME", help="only this ResourceFlavor")
    parser.add_argument("--resource", metavar="NAME", help="only this resource (e.g. google.com/tpu)")
    parser.add_argument("--cohort", metavar="NAME", help="only this cohort's tree")
    parser.add_argument("--cluster-queue", metavar="NAME", help="only this ClusterQueue")
    parser.set_defaults(run=run_quota)
