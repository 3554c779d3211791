"""``tpu-admission serve``: the HTTPS admission webhook server."""

from __future__ import annotations

import argparse
import logging
import os
import sys
from pathlib import Path
from typing import TYPE_CHECKING, Any, Final

from webhook.cli.arguments import EXIT_USAGE_LINE, UsageError, subparser

if TYPE_CHECKING:
    from webhook.cluster.view import ClusterState
    from webhook.policy.config import Policy


def run_serve(args: argparse.Namespace) -> int:
    import asyncio  # here, not at the top: every other command starts without it

    from webhook.admin.catalog import load_policy
    from webhook.serving import certs
    from webhook.serving.app import ServerState
    from webhook.serving.listener import ensure_open_files
    from webhook.serving.runner import TlsSettings, build_server, loop_factory, run_server

    # Refuse a bad policy, bad flags, an unusable --cert-dir, --kubeconfig or address
    # before anything is announced or started (exit 2, naming it).
    policy = load_policy(args.config)
    if args.client_allowed_name and not args.client_ca:
        raise UsageError("--client-allowed-name needs --client-ca (the CA that signs those client certificates)")
    check_ports(args.port, args.metrics_port)
    if args.kubeconfig:
        check_kubeconfig(args.kubeconfig)
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
    sock = listen(args.host, args.port, "--port")
    metrics_sock = None
    if args.metrics_port is not None:
        try:
            metrics_sock = listen(args.host, args.metrics_port, "--metrics-port")
        except UsageError:
            sock.close()
            raise
    setup_logging(args.log_level)
    log = logging.getLogger("tpu_admission.serving")
    if raised is not None:
        log.info("%s", raised)
    if generated:
        log.info("generated a self-signed CA and serving certificate in %s (CA: %s)", args.cert_dir, files.ca)
    cluster = start_cluster(args, policy)
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
    return 0


def _in_use(exc: OSError) -> bool:
    import errno

    return exc.errno == errno.EADDRINUSE


def check_ports(port: int, metrics_port: int | None) -> None:
    """``--port`` and ``--metrics-port``: TCP ports, and not the same one."""
    for flag, value in (("--port", port), ("--metrics-port", metrics_port)):
        if value is not None and not 0 <= value <= 65535:
            raise UsageError(f"{flag} {value} is not a TCP port: give 1 to 65535 (or 0 for any free one)")
    if metrics_port is not None and metrics_port == port and port != 0:
        raise UsageError(f"--metrics-port {metrics_port} is the --port too: give /metrics a port of its own")


def check_kubeconfig(path: str) -> None:
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


def listen(host: str, port: int, flag: str) -> Any:
    """A socket listening on ``host:port``, or a ``UsageError`` naming ``flag``."""
    from webhook.serving.listener import listen_socket

    try:
        return listen_socket(host, port)
    except OSError as exc:
        raise UsageError(
            f"cannot listen on {host}:{port} ({flag}): {exc.strerror or exc}"
            + (f"; another process holds the port: stop it or choose another {flag}" if _in_use(exc) else "")
        ) from None


def start_cluster(args: argparse.Namespace, policy: Policy) -> ClusterState | None:
    """The watch cache when a cluster is configured (``--kubeconfig`` or in a pod)."""
    if not args.kubeconfig and not os.environ.get("KUBERNETES_SERVICE_HOST"):
        return None
    from webhook.cluster.watch import start_watch_cache

    return start_watch_cache(args.kubeconfig, policy)


def setup_logging(level: str) -> None:
    """JSON lines on stderr, one per decision plus the server's own messages.

    Buffered (``webhook.serving.logsink``): a request appends its encoded line and a background
    thread writes the batch every 0.1 s, so a request never waits for a write.
    """
    # The logging HOWTO's "Optimization" switches: no thread or process fields; the JSON
    # lines do not carry them.
    logging.logThreads = False
    logging.logProcesses = False
    logging.logMultiprocessing = False
    from webhook.serving import logsink

    logsink.install(logsink.BufferedJsonHandler(sys.stderr), level)


HELP: Final = f"""\
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


def add_parser(commands: Any) -> None:
    """The ``serve`` subcommand's parser."""
    serve = subparser(commands, "serve", "run the HTTPS admission webhook server", HELP)
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
