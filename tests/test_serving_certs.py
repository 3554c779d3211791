"""``tpu-admission certs generate|ca-bundle`` as an admin runs them (``main(argv)``), and the
certificate they make as the API server would check it (over real TLS, by Service name)."""

from __future__ import annotations

import base64
import json
import socket
import ssl
import stat
import subprocess
import sys
from pathlib import Path

import pytest
from cryptography import x509
from cryptography.x509.oid import ExtendedKeyUsageOID
from support import run_cli, running_server

from webhook.policy.config import Policy
from webhook.serving import certs
from webhook.serving.tls import TlsSettings

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


def test_generate_twice_into_one_directory_keeps_the_ca_unless_forced(tmp_path: Path) -> None:
    """A second run would silently replace the CA every webhook configuration trusts, and its key."""
    out = tmp_path / "tls"
    assert cli("certs", "generate", "--out", str(out)).returncode == 0
    kept = {name: (out / name).read_bytes() for name in ("ca.crt", "tls.crt", "tls.key")}
    again = cli("certs", "generate", "--out", str(out))
    assert (again.returncode, again.stdout) == (2, "")
    assert again.stderr == (
        f"tpu-admission: --out {out} already holds ca.crt and tls.key: give --force to replace them, or rotate "
        "into another directory with --previous-ca\n"
    )
    assert {name: (out / name).read_bytes() for name in kept} == kept
    forced = cli("certs", "generate", "--out", str(out), "--force")
    assert forced.returncode == 0 and (out / "ca.crt").read_bytes() != kept["ca.crt"]


def test_the_secret_manifest_is_readable_by_its_owner_only(tmp_path: Path) -> None:
    """It holds the private key, as tls.key does: 0600, also when it replaces a file that was 0644."""
    manifest = tmp_path / "secret.json"
    assert cli("certs", "generate", "--secret-manifest", str(manifest)).returncode == 0
    assert stat.S_IMODE(manifest.stat().st_mode) == 0o600
    manifest.chmod(0o644)
    assert cli("certs", "generate", "--secret-manifest", str(manifest)).returncode == 0
    assert stat.S_IMODE(manifest.stat().st_mode) == 0o600
    assert json.loads(manifest.read_text())["data"]["tls.key"]


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


def serve_refused(*args: str) -> subprocess.CompletedProcess[str]:
    """``tpu-admission serve ARGS`` in a process of its own: one that is not refused (the bug)
    would serve, so it ends by a timeout rather than hang the test run."""
    command = [sys.executable, "-m", "webhook", "serve", "--port", "0", *args]
    return subprocess.run(command, capture_output=True, text=True, timeout=30, check=False)


@pytest.mark.parametrize("days", ["-5", "0", "36501", "soon"])
def test_days_outside_one_to_a_century_is_a_usage_error_and_nothing_is_written(tmp_path: Path, days: str) -> None:
    """``--days -5`` was a traceback, and ``--days 0`` wrote a certificate expired on arrival (exit 0)."""
    proc = cli("certs", "generate", "--out", str(tmp_path / "tls"), "--days", days)
    assert proc.returncode == 2 and "Traceback" not in proc.stderr
    assert "argument --days:" in proc.stderr
    assert not (tmp_path / "tls").exists()
    with pytest.raises(ValueError, match="valid for 1 to 36500 days"):
        certs.generate(["localhost"], days=int(days) if days != "soon" else 0)


def test_an_output_path_under_a_regular_file_is_a_usage_error(tmp_path: Path) -> None:
    (tmp_path / "file").write_text("")
    for args in (["--out", str(tmp_path / "file" / "certs")], ["--secret-manifest", str(tmp_path / "file" / "s.json")]):
        proc = cli("certs", "generate", *args)
        assert proc.returncode == 2 and "Traceback" not in proc.stderr
        assert f"{tmp_path / 'file'} is a file, not a directory" in proc.stderr
    served = serve_refused("--cert-dir", str(tmp_path / "file" / "certs"))
    assert served.returncode == 2
    assert served.stderr == (
        f"tpu-admission: --cert-dir: {tmp_path / 'file' / 'certs'} cannot be used: {tmp_path / 'file'} is a file, "
        "not a directory\n"
    )


@pytest.mark.parametrize("present", ["tls.crt", "tls.key", "ca.crt"])
def test_serve_never_replaces_a_file_it_would_write(tmp_path: Path, present: str) -> None:
    """A --cert-dir holding tls.crt but no tls.key had its tls.crt replaced by a self-signed one."""
    (tmp_path / present).write_bytes(b"the user's own file")
    proc = serve_refused("--cert-dir", str(tmp_path))
    assert proc.returncode == 2
    missing = {"tls.crt": "tls.key", "tls.key": "tls.crt"}.get(present)
    if missing:
        assert f"{tmp_path} holds {present} but no {missing}: put " in proc.stderr
    else:
        assert (
            "generated only where none of ca.crt, tls.crt, tls.key is (none of your files is replaced)" in proc.stderr
        )
    assert sorted(p.name for p in tmp_path.iterdir()) == [present]
    assert (tmp_path / present).read_bytes() == b"the user's own file"


def test_the_repositorys_certs_folder_takes_a_generated_pair(tmp_path: Path) -> None:
    """The quick start's ``tpu-admission serve`` on a fresh clone: ``certs/`` holds its README
    (tracked, so the folder exists), which a stricter "empty directories only" rule refused."""
    shipped = Path(__file__).resolve().parents[1] / "certs"
    folder = tmp_path / "certs"
    folder.mkdir()
    tracked = [p for p in shipped.iterdir() if p.suffix not in (".crt", ".key", ".pem")]
    assert [p.name for p in tracked] == ["README.md"]
    for path in tracked:
        (folder / path.name).write_bytes(path.read_bytes())
    files, generated = certs.ensure(folder)
    assert generated
    assert sorted(p.name for p in folder.iterdir()) == ["README.md", "ca.crt", "tls.crt", "tls.key"]
    assert (folder / "README.md").read_bytes() == (shipped / "README.md").read_bytes()
    assert certs.ensure(folder) == (files, False)


def test_serve_generates_into_a_new_or_empty_directory_and_reuses_what_it_generated(tmp_path: Path) -> None:
    for directory in (tmp_path / "new" / "certs", tmp_path / "empty"):
        if directory.name == "empty":
            directory.mkdir()
        files, generated = certs.ensure(directory)
        assert generated and sorted(p.name for p in directory.iterdir()) == ["ca.crt", "tls.crt", "tls.key"]
        first = files.cert.read_bytes()
        assert certs.ensure(directory) == (files, False) and files.cert.read_bytes() == first


def test_serve_with_tls_files_it_cannot_use_is_a_usage_error(tmp_path: Path) -> None:
    assert cli("certs", "generate", "--out", str(tmp_path / "a")).returncode == 0
    assert cli("certs", "generate", "--out", str(tmp_path / "b")).returncode == 0
    missing_ca = serve_refused("--cert-dir", str(tmp_path / "a"), "--client-ca", str(tmp_path / "none.crt"))
    assert missing_ca.returncode == 2 and "Traceback" not in missing_ca.stderr
    assert f"--client-ca {tmp_path / 'none.crt'} or" in missing_ca.stderr and "No such file" in missing_ca.stderr
    (tmp_path / "a" / "tls.key").write_bytes((tmp_path / "b" / "tls.key").read_bytes())  # not the cert's key
    mismatched = serve_refused("--cert-dir", str(tmp_path / "a"))
    assert mismatched.returncode == 2 and "cannot be used: [X509: KEY_VALUES_MISMATCH]" in mismatched.stderr
