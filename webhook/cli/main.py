"""``tpu-admission``: ``serve``, ``serve-advisor`` (simulate, explain and quota as an
aggregated API), ``check`` (the CI dry run), ``lint-queues`` (the admin guard),
``certs``, ``config``, ``export``, ``rules``.

One ``run_*`` function and one ``_add_*`` parser builder per subcommand; ``SUBCOMMANDS``
lists the builders, so a new subcommand is one function and one line there. The help
texts are plain text (argparse prints them as written) with examples and exit codes.
"""

from __future__ import annotations

import argparse
import base64
import contextlib
import json
import logging
import os
import sys
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any

from webhook import __version__
from webhook.admin.catalog import load_policy
from webhook.cli import lint_queues, simulate
from webhook.cli.arguments import EXIT_USAGE_LINE, Parser, add_judging_flags, add_submitter_flags, submitter, subparser
from webhook.cli.audit import add_audit
from webhook.cli.explain import add_explain, add_quota
from webhook.cli.formatters import FORMATTERS
from webhook.cli.report import EXIT_DENIED, EXIT_OK, EXIT_USAGE, CheckResult, Report
from webhook.cluster.export import run_snapshot
from webhook.cluster.state import ClusterState
from webhook.engine.decision import AdmissionFacts, decide
from webhook.kube.typos import did_you_mean
from webhook.objects.kinds import kind_of_document, likely_meant
from webhook.objects.sources import SourceError, named, read_documents
from webhook.policy.config import ConfigError, Policy
from webhook.rules import Rule
from webhook.rules.catalog import RULES, markdown_table
from webhook.serving import certs, logsink
from webhook.serving.logsink import BufferedJsonHandler

__all__ = ["EXIT_DENIED", "EXIT_OK", "EXIT_USAGE", "build_parser", "main"]
#: a process killed by SIGPIPE exits 128 + 13 in a shell; we end the same way, quietly
EXIT_BROKEN_PIPE = 141


class UsageError(Exception):
    """Bad flags or input: exit 2 with the message."""


def _parse_labels(text: str) -> dict[str, str]:
    labels: dict[str, str] = {}
    for item in filter(None, (part.strip() for part in text.split(","))):
        key, sep, value = item.partition("=")
        if not sep or not key:
            raise UsageError(f"--namespace-labels: {item!r} is not key=value")
        labels[key] = value
    return labels


def _load_cluster_state(paths: list[str], policy: Policy) -> ClusterState:
    from webhook.cluster.statefiles import load_state_files

    try:
        return load_state_files(paths, policy)
    except SourceError as exc:
        raise UsageError(f"--cluster-state: {exc}") from None


def run_check(args: argparse.Namespace) -> int:
    policy = load_policy(args.config)
    mode_source = "--mode" if args.mode else "config" if "mode" in policy.model_fields_set else "default"
    if args.mode:
        policy = policy.model_copy(update={"mode": args.mode})
    if args.tier is not None and args.tier not in policy.tiers:
        meant = did_you_mean(args.tier, policy.tiers)
        hint = f"; did you mean {meant!r}?" if meant else ""
        raise UsageError(f"--tier {args.tier!r} is not a configured tier ({', '.join(policy.tiers)}){hint}")
    labels = _parse_labels(args.namespace_labels) if args.namespace_labels is not None else None
    cluster = _load_cluster_state(args.cluster_state, policy) if args.cluster_state else None
    user = submitter(args)
    left_out: list[str] = []
    documents, errors = read_documents(args.paths, left_out)

    report = Report(errors=errors, mode=policy.mode, mode_source=mode_source, strict=args.strict, left_out=left_out)
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
        namespace = str(metadata.get("namespace") or "default")  # kubectl's default namespace
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
        report.results.append(CheckResult(document, kind, namespace, name, decision, mode=policy.mode))
    if errors and args.output not in ("text", "github"):
        # stdout is likely a file for a machine; the person reading the job log sees why it failed
        for error in errors:
            print(f"tpu-admission: {error}", file=sys.stderr)
    _emit(FORMATTERS[args.output](report))
    return report.exit_code()


def _yaml_type(data: Any) -> str:
    if isinstance(data, list):
        return "a YAML list"
    return {bool: "a YAML boolean", str: "a YAML string"}.get(type(data), f"a YAML {type(data).__name__}")


def _emit(text: str) -> None:
    """Print and flush now, so a closed pipe surfaces here, where ``main`` handles it."""
    sys.stdout.write(text + "\n")
    sys.stdout.flush()


def run_serve(args: argparse.Namespace) -> int:
    import asyncio  # here, not at the top: every other command starts without it

    from webhook.serving.app import ServerState
    from webhook.serving.listener import ensure_open_files
    from webhook.serving.runner import TlsSettings, build_server, loop_factory, run_server

    # Refuse a bad policy, bad flags, an unusable --cert-dir, --kubeconfig or address
    # before anything is announced or started (exit 2, naming it).
    policy = load_policy(args.config)
    if args.client_allowed_name and not args.client_ca:
        raise UsageError("--client-allowed-name needs --client-ca (the CA that signs those client certificates)")
    _check_ports(args.port, args.metrics_port)
    if args.kubeconfig:
        _check_kubeconfig(args.kubeconfig)
    raised = ensure_open_files(policy.server)  # room for server.maxConnections, or a ConfigError saying why not
    try:
        files, generated = certs.ensure(Path(args.cert_dir), policy.server.service_dns_names)
    except certs.CertDirError as exc:
        raise UsageError(f"--cert-dir: {exc}") from None
    tls = TlsSettings(
        cert=files.cert,
        key=files.key,
        min_version=args.tls_min_version,
        client_ca=Path(args.client_ca) if args.client_ca else None,
        client_names=tuple(args.client_allowed_name or ()),
    )
    sock = _listen(args.host, args.port, "--port")
    metrics_sock = None
    if args.metrics_port is not None:
        try:
            metrics_sock = _listen(args.host, args.metrics_port, "--metrics-port")
        except UsageError:
            sock.close()
            raise
    _setup_logging(args.log_level)
    log = logging.getLogger("tpu_admission.serving")
    if raised is not None:
        log.info("%s", raised)
    if generated:
        log.info("generated a self-signed CA and serving certificate in %s (CA: %s)", args.cert_dir, files.ca)
    cluster = _start_cluster(args, policy)
    state = ServerState(policy=policy, cluster=cluster)
    try:
        server, reloader = build_server(
            state, args.host, args.port, tls, drain_seconds=args.drain_seconds, metrics_port=args.metrics_port,
            sock=sock, metrics_sock=metrics_sock,
        )  # fmt: skip
    except OSError as exc:  # ssl.SSLError is one: a key that does not match, a CA that is no PEM
        sock.close()
        if metrics_sock is not None:
            metrics_sock.close()
        stop = getattr(cluster, "stop", None)
        if stop is not None:
            stop()
        which = f"--client-ca {args.client_ca} or " if args.client_ca else ""
        raise UsageError(f"the TLS files ({which}{files.cert}, {files.key}) cannot be used: {exc}") from None
    log.info(
        "serving mode=%s on https://%s:%d (cluster state: %s)",
        policy.mode,
        args.host,
        sock.getsockname()[1],
        "watch cache" if cluster is not None else "none, structural rules only",
    )
    with asyncio.Runner(loop_factory=loop_factory()) as runner:
        runner.run(run_server(server, reloader))
    return EXIT_OK


def _front_proxy(args: argparse.Namespace, api_client: Any) -> tuple[Any, bytes]:
    """The requestheader settings and the cluster's client CA: from the flags, else from
    the ``extension-apiserver-authentication`` ConfigMap the API server publishes."""
    from webhook.advisor.frontproxy import CONFIGMAP_NAME, FrontProxy, read_configmap

    if args.requestheader_client_ca_file:
        try:
            front_ca = Path(args.requestheader_client_ca_file).read_bytes()
            client_ca = Path(args.client_ca_file).read_bytes() if args.client_ca_file else b""
            return FrontProxy.from_pem(front_ca, args.requestheader_allowed_name or ()), client_ca
        except OSError as exc:
            raise UsageError(f"{exc.filename}: cannot read it: {exc.strerror}") from None
        except ValueError as exc:
            raise UsageError(f"--requestheader-client-ca-file {args.requestheader_client_ca_file}: {exc}") from None
    if api_client is None:
        raise UsageError("no cluster to read the front-proxy settings from: give --requestheader-client-ca-file")
    try:
        data = read_configmap(api_client)
    except Exception as exc:  # the API server's own words: forbidden, not found, unreachable
        raise UsageError(f"kube-system/{CONFIGMAP_NAME} cannot be read: {exc}") from None
    try:
        return FrontProxy.from_configmap(data), data.get("client-ca-file", "").encode()
    except ValueError as exc:
        raise UsageError(f"kube-system/{CONFIGMAP_NAME}: {exc}") from None


def run_serve_advisor(args: argparse.Namespace) -> int:
    import asyncio
    import tempfile

    from cryptography.hazmat.primitives import serialization
    from kubernetes import client

    from webhook.advisor.access import SubjectAccessReviews
    from webhook.advisor.server import build_advisor, trust_bundle
    from webhook.advisor.workqueue import WorkQueue
    from webhook.cluster.client import ClusterConfigError, load_configuration
    from webhook.serving.app import ServerState
    from webhook.serving.runner import TlsSettings, loop_factory, run_server

    policy = load_policy(args.config)
    if args.max_waiting < 0 or args.deadline_seconds <= 0:
        raise UsageError("--max-waiting must be 0 or more and --deadline-seconds more than 0")
    if args.requestheader_allowed_name and not args.requestheader_client_ca_file:
        raise UsageError("--requestheader-allowed-name needs --requestheader-client-ca-file")
    _check_ports(args.port, None)
    if args.kubeconfig:
        _check_kubeconfig(args.kubeconfig)
    api_client = None
    if args.kubeconfig or os.environ.get("KUBERNETES_SERVICE_HOST"):
        try:
            api_client = client.ApiClient(load_configuration(args.kubeconfig))
        except ClusterConfigError as exc:
            raise UsageError(str(exc)) from None
    front_proxy, client_ca = _front_proxy(args, api_client)
    try:
        files, generated = certs.ensure(Path(args.cert_dir), policy.server.service_dns_names)
    except certs.CertDirError as exc:
        raise UsageError(f"--cert-dir: {exc}") from None
    with tempfile.TemporaryDirectory(prefix="tpu-admission-advisor-") as directory:
        front_ca = b"".join(ca.public_bytes(serialization.Encoding.PEM) for ca in front_proxy.client_ca)
        bundle = trust_bundle(Path(directory), front_ca, client_ca)
        tls = TlsSettings(cert=files.cert, key=files.key, min_version=args.tls_min_version, client_ca=bundle)
        sock = _listen(args.host, args.port, "--port")
        _setup_logging(args.log_level)
        log = logging.getLogger("tpu_admission.advisor")
        if generated:
            log.info("generated a self-signed CA and serving certificate in %s (CA: %s)", args.cert_dir, files.ca)
        cluster = _start_cluster(args, policy)
        state = ServerState(policy=policy, cluster=cluster)
        authorizer = SubjectAccessReviews(api_client)
        work = WorkQueue(args.max_waiting, args.deadline_seconds)
        try:
            server, reloader, _ = build_advisor(
                state, args.host, args.port, tls, front_proxy, authorizer, work, sock=sock,
                drain_seconds=args.drain_seconds,
            )  # fmt: skip
        except OSError as exc:
            sock.close()
            stop = getattr(cluster, "stop", None)
            if stop is not None:
                stop()
            raise UsageError(f"the TLS files ({files.cert}, {files.key}) cannot be used: {exc}") from None
        log.info("serving the advisor on https://%s:%d", args.host, sock.getsockname()[1])
        try:
            with asyncio.Runner(loop_factory=loop_factory()) as runner:
                runner.run(run_server(server, reloader))
        finally:
            work.close()
    return EXIT_OK


def _in_use(exc: OSError) -> bool:
    import errno

    return exc.errno == errno.EADDRINUSE


def _check_ports(port: int, metrics_port: int | None) -> None:
    """``--port`` and ``--metrics-port``: TCP ports, and not the same one."""
    for flag, value in (("--port", port), ("--metrics-port", metrics_port)):
        if value is not None and not 0 <= value <= 65535:
            raise UsageError(f"{flag} {value} is not a TCP port: give 1 to 65535 (or 0 for any free one)")
    if metrics_port is not None and metrics_port == port and port != 0:
        raise UsageError(f"--metrics-port {metrics_port} is the --port too: give /metrics a port of its own")


def _check_kubeconfig(path: str) -> None:
    """``--kubeconfig`` names a file that can be read and loaded: a typo must not leave a
    webhook that quietly skips every cluster rule."""
    from webhook.cluster.client import ClusterConfigError, load_configuration

    try:
        with open(path, "rb"):
            pass
    except OSError as exc:
        raise UsageError(f"--kubeconfig {path} cannot be read: {exc.strerror or exc}") from None
    try:
        load_configuration(path)
    except ClusterConfigError as exc:
        raise UsageError(f"--kubeconfig {path} cannot be used: {exc}") from None


def _listen(host: str, port: int, flag: str) -> Any:
    """A socket listening on ``host:port``, or a ``UsageError`` naming ``flag``."""
    from webhook.serving.listener import listen_socket

    try:
        return listen_socket(host, port)
    except OSError as exc:
        raise UsageError(
            f"cannot listen on {host}:{port} ({flag}): {exc.strerror or exc}"
            + (f"; another process holds the port: stop it or choose another {flag}" if _in_use(exc) else "")
        ) from None


def _start_cluster(args: argparse.Namespace, policy: Policy) -> ClusterState | None:
    """The watch cache when a cluster is configured (``--kubeconfig`` or in a pod)."""
    if not args.kubeconfig and not os.environ.get("KUBERNETES_SERVICE_HOST"):
        return None
    from webhook.cluster.watch import start_watch_cache

    return start_watch_cache(args.kubeconfig, policy)


def run_certs_generate(args: argparse.Namespace) -> int:
    if not args.out and not args.secret_manifest:
        raise UsageError(
            "certs generate: nothing to write: give --out DIR and/or --secret-manifest FILE (- for stdout)"
        )
    names = certs.service_names(args.service, args.namespace) + list(args.dns_name or [])
    ca_pem, cert_pem, key_pem = certs.generate(names, days=args.days)
    if args.previous_ca:
        try:
            ca_pem = certs.bundle(ca_pem, Path(args.previous_ca).read_bytes())
        except OSError as exc:
            raise UsageError(f"--previous-ca {args.previous_ca}: cannot read it: {exc.strerror}") from None
        except ValueError as exc:
            raise UsageError(f"--previous-ca {args.previous_ca}: {exc}") from None
    if args.secret_manifest:
        secret = {
            "apiVersion": "v1",
            "kind": "Secret",
            "type": "kubernetes.io/tls",
            "metadata": {"name": args.secret_name, "namespace": args.namespace},
            "data": {
                "ca.crt": base64.b64encode(ca_pem).decode(),
                "tls.crt": base64.b64encode(cert_pem).decode(),
                "tls.key": base64.b64encode(key_pem).decode(),
            },
        }
        text = json.dumps(secret, indent=2)
        if args.secret_manifest == "-":
            print(text)
        else:
            target = Path(args.secret_manifest)
            try:
                target.write_text(text + "\n", encoding="utf-8")
            except OSError as exc:
                raise UsageError(
                    f"--secret-manifest {target}: cannot write it: {certs.os_problem(target, exc)}"
                ) from None
    if args.out:
        try:
            files = certs.write(Path(args.out), ca_pem, cert_pem, key_pem)
        except OSError as exc:
            raise UsageError(f"--out {args.out}: cannot write there: {certs.os_problem(Path(args.out), exc)}") from None
        print(f"wrote {files.ca}, {files.cert}, {files.key} for {', '.join(names)}", file=sys.stderr)
    return EXIT_OK


def run_certs_ca_bundle(args: argparse.Namespace) -> int:
    from cryptography import x509

    path = Path(args.ca) if args.ca else Path(args.cert_dir) / certs.CA_FILE
    try:
        data = path.read_bytes()
    except OSError as exc:
        raise UsageError(f"{path}: cannot read the CA certificate: {exc.strerror}") from None
    try:
        # every certificate the file holds (after a rotation, the new CA and the previous one)
        x509.load_pem_x509_certificates(data)
    except ValueError:
        raise UsageError(
            f"{path}: not a PEM certificate (a caBundle is the CA's -----BEGIN CERTIFICATE----- text, "
            "e.g. the ca.crt certs generate wrote)"
        ) from None
    print(base64.b64encode(data).decode())
    return EXIT_OK


def run_config(args: argparse.Namespace) -> int:
    """Print the effective policy (the defaults, or FILE validated and filled in)."""
    import yaml

    policy = load_policy(args.config)
    print(yaml.safe_dump(policy.model_dump(by_alias=True, mode="json"), sort_keys=False), end="")
    return EXIT_OK


def _validation_actions(text: str, known: Sequence[str]) -> list[str]:
    """``--validation-actions``: the binding's actions, each named as Kubernetes spells it, no
    action twice (the API server refuses a duplicate), Deny not with Warn; a typo gets a did-you-mean."""
    actions = [part.strip() for part in text.split(",")]
    for action in actions:
        if action not in known:
            meant = did_you_mean(action, known)
            hint = f"; did you mean {meant!r}?" if meant else f"; use {', '.join(known)}"
            raise UsageError(f"--validation-actions: {action!r} is not a validation action{hint}")
    if len(set(actions)) < len(actions):
        raise UsageError(f"--validation-actions: {text!r} names an action twice; name each once")
    if "Deny" in actions and "Warn" in actions:
        raise UsageError(
            "--validation-actions: Deny and Warn do not go together (Deny already tells the user); "
            "use Deny, or Warn,Audit"
        )
    return actions


def run_export_vap(args: argparse.Namespace) -> int:
    from webhook.export import vap

    actions = _validation_actions(args.validation_actions, vap.VALIDATION_ACTIONS)
    try:
        print(vap.render(load_policy(args.config), actions), end="")
    except ValueError as exc:
        raise UsageError(f"--validation-actions: {exc}") from None
    return EXIT_OK


def run_export_map(args: argparse.Namespace) -> int:
    from webhook.export import mutating_policy

    print(mutating_policy.render(load_policy(args.config)), end="")
    return EXIT_OK


def run_rules(args: argparse.Namespace) -> int:
    from webhook.admin import catalog as admin

    if args.format == "markdown":
        print(markdown_table())
    elif args.format == "admin-markdown":
        print(admin.markdown_table())
    else:
        catalog: tuple[Rule[Any, Any], ...] = (*RULES, *admin.ADMIN_RULES)
        for rule in catalog:
            print(f"{rule.id:38} {rule.default_action.value:5} {rule.title}")
    return EXIT_OK


def _setup_logging(level: str) -> None:
    """JSON lines on stderr, one per decision plus the server's own messages.

    Buffered (``webhook.serving.logsink``): a request appends its encoded line and a background
    thread writes the batch every 0.1 s, so a request never waits for a write.
    """
    # The logging HOWTO's "Optimization" switches: no thread or process fields; the JSON
    # lines do not carry them.
    logging.logThreads = False
    logging.logProcesses = False
    logging.logMultiprocessing = False
    logsink.install(BufferedJsonHandler(sys.stderr), level)


_MAIN_HELP = """\
Admission webhook for JobSets on a Kueue-managed GKE TPU (tpu7x) cluster, and the
same checks as a CI dry run.

examples:
  tpu-admission serve
  tpu-admission check manifests/ --mode dynamic --output github
  tpu-admission lint-queues kueue/ --cluster-state cluster-state.yaml
  tpu-admission explain jobset/llm-pretrain-a3f8 -n kubemaker
  tpu-admission config --config policy.yaml
  tpu-admission export vap --config policy.yaml
  tpu-admission snapshot -o cluster-state.yaml
  tpu-admission rules --format markdown
  tpu-admission COMMAND --help        more on one command
"""

_SERVE_HELP = f"""\
Serve /mutate and /validate (optionally /mutate/<tier>, /validate/<tier>) over HTTPS,
the admin guard's /validate-kueue, plus /healthz, /readyz and /metrics (simulate,
explain and quota over HTTP are the advisor's: serve-advisor). With no flags: the RFC-0033 default policy, a
self-signed CA and serving certificate generated into ./certs, no cluster (structural
rules only; cluster rules need --kubeconfig or an in-cluster service account).

examples:
  tpu-admission serve
  tpu-admission serve --host 0.0.0.0 --config /etc/tpu-admission/policy.yaml --drain-seconds 5
  tpu-admission serve --kubeconfig ~/.kube/config --log-level debug

exit codes:
  0  stopped (SIGTERM or Ctrl-C)
{EXIT_USAGE_LINE};
     also a --cert-dir or TLS file that cannot be used, a --kubeconfig that cannot
     be read or loaded, an address that cannot be listened on (a port in use or out
     of range, --metrics-port the same as --port), or server.maxConnections over what
     the open-files limit allows. Nothing is served then
"""

_SERVE_ADVISOR_HELP = f"""\
Serve simulate, explain and the quota picture as an aggregated Kubernetes API
(advisor.tpu-admission.antgroup.com/v1alpha1, behind an APIService): a process of its own
with its own watch cache, apart from the admission webhook. The API server authenticates
callers and checks RBAC; the advisor believes the caller it names (X-Remote-User, ...)
only over a client certificate of the requestheader client CA, read from
kube-system/extension-apiserver-authentication unless given by flags.

examples:
  tpu-admission serve-advisor --host 0.0.0.0 --cert-dir /etc/tpu-admission/tls
  tpu-admission serve-advisor --kubeconfig ~/.kube/config \\
      --requestheader-client-ca-file front-proxy-ca.crt --requestheader-allowed-name front-proxy-client

exit codes:
  0  stopped (SIGTERM or Ctrl-C)
{EXIT_USAGE_LINE};
     also front-proxy settings that cannot be read, TLS files that cannot be used, or an
     address that cannot be listened on. Nothing is served then
"""

_CHECK_HELP = f"""\
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
  tpu-admission check job.yaml --tier production --output json
  kubectl get localqueues,clusterqueues,namespaces -A -o yaml > state.yaml
  tpu-admission check jobs/ --cluster-state state.yaml nodes.yaml
  tpu-admission check jobs/ --strict --output sarif > tpu-admission.sarif
  tpu-admission check jobs/ --output junit > tpu-admission.xml
  tpu-admission check jobs/ --config policy.yaml --user alice --group team-a

Who submits (--user, --group) decides queue-not-permitted when the policy sets
queuePermissions; where the name or groups left out could permit the job, that rule
is skipped with a warning naming the flag.

exit codes:
  0  everything admitted (with --strict: and no warnings, and something was checked)
  1  something denied (with --strict: also any warning, a skipped document that looks
     like a mistake (a misspelt kind or apiVersion, a YAML list or scalar), or nothing
     checked)
{EXIT_USAGE_LINE}
     (every other file is still judged and reported first)
"""

_CERTS_HELP = """\
Certificates for the webhook's Service: a CA and serving certificate, and the caBundle
the webhook configurations need.

examples:
  tpu-admission certs generate --out certs/ --secret-manifest secret.json
  tpu-admission certs generate --out new/ --previous-ca certs/ca.crt
  tpu-admission certs ca-bundle --cert-dir certs/

exit codes:
  0  written or printed
  2  bad usage (generate: neither --out nor --secret-manifest), a file that cannot be
     read or written, or (ca-bundle) a CA file that is not a PEM certificate
"""

_GENERATE_USAGE = """\
%(prog)s (--out DIR | --secret-manifest FILE)... [--service NAME]
       [--namespace NS] [--dns-name NAME]... [--days DAYS] [--secret-name NAME]
       [--previous-ca FILE]
"""

_CONFIG_HELP = """\
Validate a policy file and print the effective policy: every key, with the file's
values filled in over the RFC-0033 defaults. With no --config: the defaults.

examples:
  tpu-admission config > policy.yaml
  tpu-admission config --config policy.yaml

exit codes:
  0  the policy is valid (printed)
  2  the file cannot be read or is invalid; the message names the key
"""

_EXPORT_HELP = f"""\
Print the policy as admission policies the API server evaluates itself (multi-document
YAML on stdout): "vap" exports the structural rules as a ValidatingAdmissionPolicy and
its binding, "map" the tiers' default labels as a MutatingAdmissionPolicy and its
binding (Kubernetes 1.36 or later). Re-run the export when the policy changes.

examples:
  tpu-admission export vap --config policy.yaml | kubectl apply -f -
  tpu-admission export vap --validation-actions Warn,Audit > vap.yaml
  tpu-admission export map | kubectl apply -f -

exit codes:
  0  printed
{EXIT_USAGE_LINE}
"""

_SNAPSHOT_HELP = """\
Write the cluster state the cluster-aware rules read (Namespaces, Nodes, and Kueue's
LocalQueues, ClusterQueues, Cohorts, ResourceFlavors, Workloads) and what the admin guard
reads besides (WorkloadPriorityClasses, Topologies, AdmissionChecks, Kueue's ConfigMap
and controller Deployment) as one typed list per kind, empty lists included, so that
`check --cluster-state FILE` and `lint-queues --cluster-state FILE` judge against the
real cluster: a kind the file holds is known, even when empty; a kind it lacks is unknown.

examples:
  tpu-admission snapshot --kubeconfig ~/.kube/config -o cluster-state.yaml
  tpu-admission check jobs/ --cluster-state cluster-state.yaml
  tpu-admission lint-queues queues/ --cluster-state cluster-state.yaml

The cluster is found as kubectl finds it: --kubeconfig, else $KUBECONFIG, else
~/.kube/config, else the in-cluster config in a pod. The file is written whole or not
at all (a temporary file beside it, renamed at the end).

exit codes:
  0  every kind was listed and written
  1  some kind could not be listed (named on stderr: forbidden, CRD absent); the
     others were written
  2  no cluster configuration could be loaded, the API server could not be reached or
     refused the credentials, or the file cannot be written; nothing was written
"""

_RULES_HELP = """\
List the rule catalog: ID, default action and title (the job rules, then the admin
guard's, which lint-queues runs), or the README's Markdown table of the job rules, or
docs/admin-guard.md's table of the admin rules.

examples:
  tpu-admission rules
  tpu-admission rules --format markdown
  tpu-admission rules --format admin-markdown

exit codes:
  0  printed
  2  bad usage (an unknown --format)
"""


def _days(text: str) -> int:
    """``--days``: a whole number of days a certificate is valid, checked before anything is made."""
    try:
        return certs.check_days(int(text))
    except ValueError as exc:
        if not text.strip().lstrip("+-").isdigit():
            raise argparse.ArgumentTypeError(f"{text!r} is not a whole number of days") from None
        raise argparse.ArgumentTypeError(str(exc)) from None


def _add_serve(commands: Any) -> None:
    serve = subparser(commands, "serve", "run the HTTPS admission webhook server", _SERVE_HELP)
    serve.add_argument("--host", default="127.0.0.1", help="address to listen on (in a pod: 0.0.0.0)")
    serve.add_argument("--port", type=int, default=8443, help="HTTPS port to listen on (default: 8443; 0: any free)")
    serve.add_argument(
        "--cert-dir",
        default="certs",
        help="tls.crt and tls.key are read from here; without them (and without a ca.crt) a self-signed "
        "pair is generated, with ca.crt (default: certs)",
    )
    serve.add_argument("--config", help="policy config YAML (default: RFC-0033 defaults)")
    serve.add_argument("--kubeconfig", help="watch this cluster (in a pod the in-cluster config is used)")
    serve.add_argument(
        "--tls-min-version", choices=["1.2", "1.3"], default="1.2", help="oldest TLS version accepted (default: 1.2)"
    )
    serve.add_argument("--client-ca", help="require client certificates signed by this CA (mTLS)")
    serve.add_argument(
        "--client-allowed-name",
        action="append",
        metavar="NAME",
        help="with --client-ca: accept only client certificates with this CN or DNS name (repeatable)",
    )
    serve.add_argument("--drain-seconds", type=float, default=0.0, help="on SIGTERM, keep serving this long")
    serve.add_argument(
        "--metrics-port",
        type=int,
        help="serve /metrics on this plain-HTTP port (same host) instead of the HTTPS port, for the scraper only",
    )
    serve.add_argument(
        "--log-level", default="info", choices=["debug", "info", "warning", "error"], help="default: info"
    )
    serve.set_defaults(run=run_serve)


def _add_serve_advisor(commands: Any) -> None:
    advisor = subparser(
        commands, "serve-advisor", "run simulate, explain and quota as an aggregated API server", _SERVE_ADVISOR_HELP
    )
    advisor.add_argument("--host", default="127.0.0.1", help="address to listen on (in a pod: 0.0.0.0)")
    advisor.add_argument("--port", type=int, default=8443, help="HTTPS port to listen on (default: 8443; 0: any free)")
    advisor.add_argument(
        "--cert-dir", default="certs", help="tls.crt and tls.key are read from here (as for serve; default: certs)"
    )
    advisor.add_argument("--config", help="policy config YAML (default: RFC-0033 defaults)")
    advisor.add_argument("--kubeconfig", help="watch this cluster (in a pod the in-cluster config is used)")
    advisor.add_argument(
        "--tls-min-version", choices=["1.2", "1.3"], default="1.2", help="oldest TLS version accepted (default: 1.2)"
    )
    advisor.add_argument(
        "--requestheader-client-ca-file",
        help="the CA of the API server's front-proxy client certificate (default: read from "
        "kube-system/extension-apiserver-authentication)",
    )
    advisor.add_argument(
        "--requestheader-allowed-name",
        action="append",
        metavar="NAME",
        help="with --requestheader-client-ca-file: the front-proxy certificate's common name must be one of these",
    )
    advisor.add_argument("--client-ca-file", help="the cluster's client CA, also accepted at the TLS layer")
    advisor.add_argument(
        "--max-waiting", type=int, default=8, help="requests that may wait for the worker; more get 429 (default: 8)"
    )
    advisor.add_argument(
        "--deadline-seconds", type=float, default=30.0, help="a request's answer deadline (default: 30)"
    )
    advisor.add_argument("--drain-seconds", type=float, default=0.0, help="on SIGTERM, keep serving this long")
    advisor.add_argument(
        "--log-level", default="info", choices=["debug", "info", "warning", "error"], help="default: info"
    )
    advisor.set_defaults(run=run_serve_advisor)


def _add_check(commands: Any) -> None:
    check = subparser(commands, "check", "check manifests as the webhook would (CI dry run)", _CHECK_HELP)
    add_judging_flags(
        check,
        config="policy config YAML",
        cluster_state="kubectl get -o yaml or tpu-admission snapshot output: files or directories",
        strict="fail (exit 1) on warnings too: an unknown tier, skipped cluster checks, warn-level findings, "
        "a skipped document that looks like a mistake, nothing checked",
    )
    check.add_argument("--tier", help="treat every namespace as this tier")
    check.add_argument("--namespace-labels", help="the namespace's labels, k=v,...")
    add_submitter_flags(check)
    check.set_defaults(run=run_check)


def _add_snapshot(commands: Any) -> None:
    snapshot = subparser(commands, "snapshot", "write a --cluster-state file from a live cluster", _SNAPSHOT_HELP)
    snapshot.add_argument(
        "--kubeconfig",
        metavar="FILE",
        help="the cluster (default, as kubectl: $KUBECONFIG, else ~/.kube/config, else the in-cluster config)",
    )
    snapshot.add_argument("-o", "--output", help="the file to write (default: stdout)")
    snapshot.add_argument(
        "--config", help="policy config YAML: its kueue section names Kueue's ConfigMap and controller"
    )
    snapshot.set_defaults(run=lambda args: run_snapshot(args.kubeconfig, args.output, load_policy(args.config)))


def _add_certs(commands: Any) -> None:
    cert_cmd = subparser(commands, "certs", "certificate helpers for admins", _CERTS_HELP)
    cert_sub = cert_cmd.add_subparsers(dest="certs_command", required=True, metavar="COMMAND")
    generate = subparser(cert_sub, "generate", "a CA and a serving certificate for a Service", _CERTS_HELP)
    # Where the files go is what must be said (one or both); the names have defaults.
    generate.usage = _GENERATE_USAGE
    generate.add_argument(
        "--service",
        metavar="NAME",
        default="tpu-admission",
        help="the webhook's Service name, for the DNS names (default: %(default)s)",
    )
    generate.add_argument(
        "--namespace",
        metavar="NS",
        default="tpu-admission",
        help="the Service's namespace, for the DNS names and the Secret (default: %(default)s)",
    )
    generate.add_argument("--dns-name", action="append", metavar="NAME", help="another name for the certificate")
    generate.add_argument(
        "--days",
        type=_days,
        default=365,
        help=f"how long the CA and certificate are valid, {certs.MIN_DAYS} to {certs.MAX_DAYS} (default: 365)",
    )
    generate.add_argument(
        "--out", metavar="DIR", help="write ca.crt, tls.crt, tls.key here (this, --secret-manifest, or both)"
    )
    generate.add_argument(
        "--secret-manifest",
        metavar="FILE",
        help="write a kubernetes.io/tls Secret manifest (- for stdout) (this, --out, or both)",
    )
    generate.add_argument(
        "--secret-name", metavar="NAME", default="tpu-admission-tls", help="the Secret's name (default: %(default)s)"
    )
    generate.add_argument(
        "--previous-ca",
        metavar="FILE",
        help="on rotation: the CA in use now; ca.crt (the caBundle) then trusts both until pods reload",
    )
    generate.set_defaults(run=run_certs_generate)
    bundle = subparser(cert_sub, "ca-bundle", "print the base64 caBundle for the webhook configurations", _CERTS_HELP)
    bundle.add_argument("--cert-dir", default="certs", help="read CERT_DIR/ca.crt (default: certs)")
    bundle.add_argument("--ca", help="the CA certificate file (default: CERT_DIR/ca.crt)")
    bundle.set_defaults(run=run_certs_ca_bundle)


def _add_config(commands: Any) -> None:
    config = subparser(commands, "config", "validate a policy file and print the effective policy", _CONFIG_HELP)
    config.add_argument("--config", help="policy config YAML (default: print the RFC-0033 defaults)")
    config.set_defaults(run=run_config)


def _add_export(commands: Any) -> None:
    export = subparser(commands, "export", "export the policy for the API server itself", _EXPORT_HELP)
    export_sub = export.add_subparsers(dest="export_command", required=True, metavar="FORMAT")
    export_vap = subparser(
        export_sub, "vap", "the structural rules as a ValidatingAdmissionPolicy (YAML)", _EXPORT_HELP
    )
    export_vap.add_argument("--config", help="policy config YAML (default: RFC-0033 defaults)")
    export_vap.add_argument("--validation-actions", default="Deny", help="the binding's actions: Deny, or Warn,Audit")
    export_vap.set_defaults(run=run_export_vap)
    export_map = subparser(export_sub, "map", "the default labels as a MutatingAdmissionPolicy (YAML)", _EXPORT_HELP)
    export_map.add_argument("--config", help="policy config YAML (default: RFC-0033 defaults)")
    export_map.set_defaults(run=run_export_map)


def _add_rules(commands: Any) -> None:
    rules = subparser(commands, "rules", "list the rule catalog", _RULES_HELP)
    rules.add_argument(
        "--format",
        choices=["text", "markdown", "admin-markdown"],
        default="text",
        help="text: one line per rule; markdown: the README's table; admin-markdown: docs/admin-guard.md's "
        "(default: text)",
    )
    rules.set_defaults(run=run_rules)


#: every subcommand's parser builder, in the order ``--help`` lists them
SUBCOMMANDS: tuple[Callable[[Any], None], ...] = (
    _add_serve,
    _add_serve_advisor,
    _add_check,
    add_audit,
    add_explain,
    add_quota,
    simulate.add_parser,
    lint_queues.add_parser,
    _add_snapshot,
    _add_certs,
    _add_config,
    _add_export,
    _add_rules,
)


def build_parser() -> argparse.ArgumentParser:
    parser = Parser(prog="tpu-admission", description=_MAIN_HELP, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--version", action="version", version=f"%(prog)s {__version__}")
    commands = parser.add_subparsers(dest="command", required=True, metavar="COMMAND")
    for add in SUBCOMMANDS:
        add(commands)
    return parser


def main(argv: Sequence[str] | None = None) -> int:
    parser = build_parser()
    try:
        args = parser.parse_args(argv)
        code = int(args.run(args))
        sys.stdout.flush()  # a closed pipe surfaces here, not in the interpreter's exit
        return code
    except (ConfigError, UsageError) as exc:
        print(f"tpu-admission: {exc}", file=sys.stderr)
        return EXIT_USAGE
    except KeyboardInterrupt:
        return 130
    except BrokenPipeError:
        # The reader went away (`check ... | head`): no traceback, and no second error
        # when the interpreter flushes stdout at exit (the Python docs' recipe).
        with contextlib.suppress(OSError):
            devnull = os.open(os.devnull, os.O_WRONLY)
            os.dup2(devnull, sys.stdout.fileno())
        return EXIT_BROKEN_PIPE
