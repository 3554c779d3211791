"""``tpu-admission certs``: the webhook Service's CA and serving certificate, and the caBundle."""

from __future__ import annotations

import argparse
import base64
import json
import os
import sys
from pathlib import Path
from typing import Any, Final

from webhook.cli.arguments import UsageError, subparser


def run_certs_generate(args: argparse.Namespace) -> int:
    from webhook.serving import certs

    if not args.out and not args.secret_manifest:
        raise UsageError(
            "certs generate: nothing to write: give --out DIR and/or --secret-manifest FILE (- for stdout)"
        )
    if args.out and not args.force:
        held = [name for name in (certs.CA_FILE, certs.KEY_FILE) if (Path(args.out) / name).exists()]
        if held:
            # a second run would replace the CA every webhook configuration trusts, and its key
            raise UsageError(
                f"--out {args.out} already holds {' and '.join(held)}: give --force to replace them, or rotate "
                "into another directory with --previous-ca"
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
                _write_private(target, text + "\n")
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
    return 0


def _write_private(target: Path, text: str) -> None:
    """Write a file that holds a private key: readable by its owner only (0600), as ``tls.key``."""
    descriptor = os.open(target, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o600)
    with os.fdopen(descriptor, "w", encoding="utf-8") as handle:
        os.fchmod(handle.fileno(), 0o600)  # an existing file keeps its mode through O_CREAT
        handle.write(text)


def run_certs_ca_bundle(args: argparse.Namespace) -> int:
    from cryptography import x509

    from webhook.serving import certs

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
    return 0


HELP: Final = """\
Certificates for the webhook's Service: a CA and serving certificate, and the caBundle
the webhook configurations need.

examples:
  tpu-admission certs generate --out certs/ --secret-manifest secret.json
  tpu-admission certs generate --out new/ --previous-ca certs/ca.crt
  tpu-admission certs ca-bundle --cert-dir certs/

exit codes:
  0  written or printed
  2  bad usage (generate: neither --out nor --secret-manifest, or an --out that already
     holds a CA or key without --force), a file that cannot be read or written, or
     (ca-bundle) a CA file that is not a PEM certificate
"""

_GENERATE_USAGE = """\
%(prog)s (--out DIR | --secret-manifest FILE)... [--service NAME]
       [--namespace NS] [--dns-name NAME]... [--days DAYS] [--secret-name NAME]
       [--previous-ca FILE] [--force]
"""


def _days(text: str) -> int:
    """``--days``: a whole number of days a certificate is valid, checked before anything is made."""
    from webhook.serving import certs

    try:
        return certs.check_days(int(text))
    except ValueError as exc:
        if not text.strip().lstrip("+-").isdigit():
            raise argparse.ArgumentTypeError(f"{text!r} is not a whole number of days") from None
        raise argparse.ArgumentTypeError(str(exc)) from None


def add_parser(commands: Any) -> None:
    """The ``certs`` subcommand's parsers."""
    from webhook.serving import certs

    cert_cmd = subparser(commands, "certs", "certificate helpers for admins", HELP)
    cert_sub = cert_cmd.add_subparsers(dest="certs_command", required=True, metavar="COMMAND")
    generate = subparser(cert_sub, "generate", "a CA and a serving certificate for a Service", HELP)
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
        help="write a kubernetes.io/tls Secret manifest (- for stdout), readable by its owner only (0600), "
        "as it holds the key (this, --out, or both)",
    )
    generate.add_argument(
        "--force", action="store_true", help="replace a CA and key --out DIR already holds (default: refuse)"
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
    bundle = subparser(cert_sub, "ca-bundle", "print the base64 caBundle for the webhook configurations", HELP)
    bundle.add_argument("--cert-dir", default="certs", help="read CERT_DIR/ca.crt (default: certs)")
    bundle.add_argument("--ca", help="the CA certificate file (default: CERT_DIR/ca.crt)")
    bundle.set_defaults(run=run_certs_ca_bundle)
