"""``tpu-admission certs generate|ca-bundle`` as an admin runs them (``main(argv)``), and the
certificate they make as the API server would check it (over real TLS, by Service name)."""

from __future__ import annotations

import base64
import json
import socket
import ssl
import stat
from pathlib import Path

import pytest
from cryptography import x509
from cryptography.x509.oid import ExtendedKeyUsageOID
from support import run_cli, running_server

from webhook.policy.config import Policy
from webhook.serving import certs
from webhook.serving.runner import TlsSettings

SERVICE_NAME = "tpu-admission.tpu-admission.svc"


cli = run_cli


def handshake(port: int, context: ssl.SSLContext, hostname: str) -> dict[str, object]:
    """A TLS handshake as a verifying client; returns the verified peer certificate."""
    with (
        socket.create_connection(("127.0.0.1", port)) as raw,
        context.wrap_socket(raw, server_hostname=hostname) as tls,
    ):
        return dict(tls.getpeercert() or {})


def san(cert: x509.Certificate) -> list[str]:
    return cert.extensions.get_extension_for_class(x509.SubjectAlternativeName).value.get_values_for_type(x509.DNSName)


def test_generate_writes_files_and_a_matching_secret(tmp_path: Path) -> None:
    out = tmp_path / "tls"
    proc = cli("certs", "generate", "--out", str(out), "--secret-manifest", "-", "--dns-name", "webhook.example")
    assert proc.returncode == 0, proc.stderr
    secret = json.loads(proc.stdout)
    assert (secret["kind"], secret["type"]) == ("Secret", "kubernetes.io/tls")
    assert secret["metadata"] == {"name": "tpu-admission-tls", "namespace": "tpu-admission"}
    for name in ("ca.crt", "tls.crt", "tls.key"):
        assert base64.b64decode(secret["data"][name]) == (out / name).read_bytes()
    assert stat.S_IMODE((out / "tls.key").stat().st_mode) == 0o600

    ca = x509.load_pem_x509_certificate((out / "ca.crt").read_bytes())
    serving = x509.load_pem_x509_certificate((out / "tls.crt").read_bytes())
    serving.verify_directly_issued_by(ca)
    assert ca.extensions.get_extension_for_class(x509.BasicConstraints).value.ca is True
    assert serving.extensions.get_extension_for_class(x509.BasicConstraints).value.ca is False
    usages = serving.extensions.get_extension_for_class(x509.ExtendedKeyUsage).value
    assert list(usages) == [ExtendedKeyUsageOID.SERVER_AUTH]
    assert san(serving) == [
        SERVICE_NAME,
        f"{SERVICE_NAME}.cluster.local",
        "tpu-admission.tpu-admission",
        "tpu-admission",
        "webhook.example",
    ]


def test_generate_for_another_service_and_namespace(tmp_path: Path) -> None:
    proc = cli("certs", "generate", "--service", "adm", "--namespace", "ops", "--secret-manifest", "-")
    assert proc.returncode == 0, proc.stderr
    secret = json.loads(proc.stdout)
    assert secret["metadata"]["namespace"] == "ops"
    serving = x509.load_pem_x509_certificate(base64.b64decode(secret["data"]["tls.crt"]))
    assert "adm.ops.svc" in san(serving)


def test_ca_bundle_prints_the_base64_ca(tmp_path: Path) -> None:
    assert cli("certs", "generate", "--out", str(tmp_path)).returncode == 0
    proc = cli("certs", "ca-bundle", "--cert-dir", str(tmp_path))
    assert proc.returncode == 0, proc.stderr
    assert base64.b64decode(proc.stdout.strip()) == (tmp_path / "ca.crt").read_bytes()
    proc = cli("certs", "ca-bundle", "--ca", str(tmp_path / "missing.crt"))
    assert proc.returncode == 2 and "cannot read the CA certificate" in proc.stderr


def test_previous_ca_is_kept_in_the_bundle_once(tmp_path: Path) -> None:
    """Rotation: the new ca.crt trusts the new CA and the one in use, and only that one."""
    first, second = tmp_path / "first", tmp_path / "second"
    assert cli("certs", "generate", "--out", str(first)).returncode == 0
    assert cli("certs", "generate", "--out", str(second), "--previous-ca", str(first / "ca.crt")).returncode == 0
    third = tmp_path / "third"
    assert cli("certs", "generate", "--out", str(third), "--previous-ca", str(second / "ca.crt")).returncode == 0
    bundle = x509.load_pem_x509_certificates((third / "ca.crt").read_bytes())
    previous = x509.load_pem_x509_certificates((second / "ca.crt").read_bytes())
    assert len(bundle) == 2 and bundle[1] == previous[0]
    x509.load_pem_x509_certificate((third / "tls.crt").read_bytes()).verify_directly_issued_by(bundle[0])
    # Both the old and the new serving certificate verify against the new bundle.
    for directory in (second, third):
        context = ssl.create_default_context(cadata=(third / "ca.crt").read_text())
        with running_server(Policy(), TlsSettings(directory / "tls.crt", directory / "tls.key")) as server:
            assert handshake(server.port, context, SERVICE_NAME)


def test_previous_ca_must_be_a_certificate(tmp_path: Path) -> None:
    (tmp_path / "junk.crt").write_text("not a certificate")
    proc = cli("certs", "generate", "--out", str(tmp_path / "x"), "--previous-ca", str(tmp_path / "junk.crt"))
    assert proc.returncode == 2 and "--previous-ca" in proc.stderr
    assert not (tmp_path / "x").exists()


def test_generate_needs_an_output(tmp_path: Path) -> None:
    proc = cli("certs", "generate")
    assert proc.returncode == 2 and "--out DIR and/or --secret-manifest" in proc.stderr


def test_the_api_server_would_accept_the_serving_certificate(tmp_path: Path) -> None:
    """Verify as the API server does: against the caBundle, by the Service's DNS name."""
    assert cli("certs", "generate", "--out", str(tmp_path)).returncode == 0
    bundle = cli("certs", "ca-bundle", "--cert-dir", str(tmp_path)).stdout.strip()
    context = ssl.create_default_context(cadata=base64.b64decode(bundle).decode())
    with running_server(Policy(), TlsSettings(tmp_path / "tls.crt", tmp_path / "tls.key")) as server:
        assert handshake(server.port, context, SERVICE_NAME)
        with pytest.raises(ssl.SSLCertVerificationError):
            handshake(server.port, context, "other.tpu-admission.svc")


def test_serve_refuses_allowed_names_without_a_client_ca(tmp_path: Path) -> None:
    proc = cli("serve", "--cert-dir", str(tmp_path), "--client-allowed-name", "kube-apiserver", "--port", "0")
    assert proc.returncode == 2 and "--client-ca" in proc.stderr


def test_issue_makes_client_certificates_for_mtls() -> None:
    ca_pem, ca_key = certs.new_ca("client-ca")
    cert_pem, _ = certs.issue(ca_pem, ca_key, ["kube-apiserver"], client=True)
    cert = x509.load_pem_x509_certificate(cert_pem)
    cert.verify_directly_issued_by(x509.load_pem_x509_certificate(ca_pem))
    assert list(cert.extensions.get_extension_for_class(x509.ExtendedKeyUsage).value) == [
        ExtendedKeyUsageOID.CLIENT_AUTH
    ]
