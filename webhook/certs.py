"""A CA and a serving certificate for the webhook, made with ``cryptography``.

The API server verifies the webhook against ``caBundle`` (the CA) and the Service DNS
name (``<service>.<namespace>.svc``), so the serving certificate carries those names plus
localhost for local runs. ECDSA P-256: quick to generate and accepted by the API server.
"""

from __future__ import annotations

import datetime as dt
import ipaddress
import os
from dataclasses import dataclass
from pathlib import Path

from cryptography import x509
from cryptography.hazmat.primitives import hashes, serialization
from cryptography.hazmat.primitives.asymmetric import ec
from cryptography.x509.oid import ExtendedKeyUsageOID, NameOID

CA_FILE = "ca.crt"
CERT_FILE = "tls.crt"
KEY_FILE = "tls.key"
LOCAL_NAMES = ("localhost", "127.0.0.1", "::1")


@dataclass(frozen=True)
class CertificateFiles:
    ca: Path
    cert: Path
    key: Path


def _name(common_name: str) -> x509.Name:
    return x509.Name([x509.NameAttribute(NameOID.COMMON_NAME, common_name)])


def _pem_key(key: ec.EllipticCurvePrivateKey) -> bytes:
    return key.private_bytes(
        serialization.Encoding.PEM, serialization.PrivateFormat.PKCS8, serialization.NoEncryption()
    )


def generate(
    dns_names: list[str], days: int = 365, ca_common_name: str = "tpu-admission-ca"
) -> tuple[bytes, bytes, bytes]:
    """Return ``(ca_pem, cert_pem, key_pem)`` for a fresh CA and a serving cert it signed."""
    now = dt.datetime.now(dt.UTC)
    not_before = now - dt.timedelta(minutes=5)  # tolerate clock skew between nodes
    ca_key = ec.generate_private_key(ec.SECP256R1())
    ca = (
        x509.CertificateBuilder()
        .subject_name(_name(ca_common_name))
        .issuer_name(_name(ca_common_name))
        .public_key(ca_key.public_key())
        .serial_number(x509.random_serial_number())
        .not_valid_before(not_before)
        .not_valid_after(now + dt.timedelta(days=days))
        .add_extension(x509.BasicConstraints(ca=True, path_length=0), critical=True)
        .add_extension(
            x509.KeyUsage(
                digital_signature=True,
                key_cert_sign=True,
                crl_sign=True,
                content_commitment=False,
                key_encipherment=False,
                data_encipherment=False,
                key_agreement=False,
                encipher_only=False,
                decipher_only=False,
            ),
            critical=True,
        )
        .add_extension(x509.SubjectKeyIdentifier.from_public_key(ca_key.public_key()), critical=False)
        .sign(ca_key, hashes.SHA256())
    )
    key = ec.generate_private_key(ec.SECP256R1())
    alt_names: list[x509.GeneralName] = []
    for name in dict.fromkeys(dns_names):  # keep order, drop repeats
        try:
            alt_names.append(x509.IPAddress(ipaddress.ip_address(name)))
        except ValueError:
            alt_names.append(x509.DNSName(name))
    cert = (
        x509.CertificateBuilder()
        .subject_name(_name(dns_names[0]))
        .issuer_name(ca.subject)
        .public_key(key.public_key())
        .serial_number(x509.random_serial_number())
        .not_valid_before(not_before)
        .not_valid_after(now + dt.timedelta(days=days))
        .add_extension(x509.SubjectAlternativeName(alt_names), critical=False)
        .add_extension(x509.BasicConstraints(ca=False, path_length=None), critical=True)
        .add_extension(x509.ExtendedKeyUsage([ExtendedKeyUsageOID.SERVER_AUTH]), critical=False)
        .add_extension(
            x509.AuthorityKeyIdentifier.from_issuer_public_key(ca_key.public_key()), critical=False
        )
        .sign(ca_key, hashes.SHA256())
    )
    return (
        ca.public_bytes(serialization.Encoding.PEM),
        cert.public_bytes(serialization.Encoding.PEM),
        _pem_key(key),
    )


def service_names(service: str, namespace: str) -> list[str]:
    """The names the API server may use to reach ``service`` in ``namespace``."""
    return [
        f"{service}.{namespace}.svc",
        f"{service}.{namespace}.svc.cluster.local",
        f"{service}.{namespace}",
        service,
    ]


def write(directory: Path, ca_pem: bytes, cert_pem: bytes, key_pem: bytes) -> CertificateFiles:
    """Write the three files; the key is created 0600 and files are replaced atomically."""
    directory.mkdir(parents=True, exist_ok=True)
    files = CertificateFiles(directory / CA_FILE, directory / CERT_FILE, directory / KEY_FILE)
    for path, data, mode in (
        (files.ca, ca_pem, 0o644),
        (files.key, key_pem, 0o600),
        (files.cert, cert_pem, 0o644),
    ):
        temporary = path.with_name(f".{path.name}.tmp")
        fd = os.open(temporary, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, mode)
        with os.fdopen(fd, "wb") as handle:
            handle.write(data)
        os.replace(temporary, path)
    return files


def ensure(directory: Path, extra_names: tuple[str, ...] = ()) -> tuple[CertificateFiles, bool]:
    """Use the certificate in ``directory`` if there is one, else generate one there.

    Returns the files and whether they were generated now.
    """
    files = CertificateFiles(directory / CA_FILE, directory / CERT_FILE, directory / KEY_FILE)
    if files.cert.exists() and files.key.exists():
        return files, False
    names = [*LOCAL_NAMES, *extra_names]
    return write(directory, *generate(names)), True
