"""``tpu-admission serve-advisor``: simulate, explain and the quota picture as an aggregated
API server, a process apart from the admission webhook."""

from __future__ import annotations

import argparse
import logging
import os
from pathlib import Path
from typing import Any, Final

from webhook.cli.arguments import EXIT_USAGE_LINE, UsageError, subparser

EXIT_OK: Final = 0


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

    from webhook.admin.catalog import load_policy
    from webhook.advisor.access import SubjectAccessReviews
    from webhook.advisor.server import build_advisor, trust_bundle
    from webhook.advisor.workqueue import WorkQueue
    from webhook.cli.serve import check_kubeconfig, check_ports, listen, setup_logging, start_cluster
    from webhook.cluster.client import ClusterConfigError, load_configuration
    from webhook.serving import certs
    from webhook.serving.app import ServerState
    from webhook.serving.runner import TlsSettings, loop_factory, run_server

    policy = load_policy(args.config)
    if args.max_waiting < 0 or args.deadline_seconds <= 0:
        raise UsageError("--max-waiting must be 0 or more and --deadline-seconds more than 0")
    if args.requestheader_allowed_name and not args.requestheader_client_ca_file:
        raise UsageError("--requestheader-allowed-name needs --requestheader-client-ca-file")
    check_ports(args.port, None)
    if args.kubeconfig:
        check_kubeconfig(args.kubeconfig)
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
        sock = listen(args.host, args.port, "--port")
        setup_logging(args.log_level)
        log = logging.getLogger("tpu_admission.advisor")
        if generated:
            log.info("generated a self-signed CA and serving certificate in %s (CA: %s)", args.cert_dir, files.ca)
        cluster = start_cluster(args, policy)
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


HELP: Final = f"""\
Serve simulate, explain and the quota picture as an aggregated Kubernetes API
(advisor.tpu-admission.antgroup.com/v1alpha1, behind an APIService): a process of its own
with its own watch cache, apart from the admission webhook. The API server authenticates
callers and checks RBAC; the advisor believes the caller it names (X-Remote-User, ...)
only over a client certificate of the requestheader client CA, read from
kube-system/extension-apiserver-authentication unless given by flags.

examples:
  tpu-admission serve-advisor --host 0.0.0.0 --cert-dir /etc/tpu-admission/tls
  tpu-admission serve-advisor --kubeconfig ~/.kube/config --requestheader-client-ca-file front-proxy-ca.crt

exit codes:
  0  stopped (SIGTERM or Ctrl-C)
{EXIT_USAGE_LINE};
     also front-proxy settings that cannot be read, TLS files that cannot be used, or an
     address that cannot be listened on. Nothing is served then
"""


def add_parser(commands: Any) -> None:
    """The ``serve-advisor`` subcommand's parser."""
    advisor = subparser(commands, "serve-advisor", "run simulate, explain and quota as an aggregated API server", HELP)
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
