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
_SKEW = dt.timedelta(minutes=5)  # tolerate clock skew between nodes
#: a certificate's validity in days: at least one (0 would be expired on arrival), at most a century
MIN_DAYS, MAX_DAYS = 1, 36500


class CertDirError(Exception):
    """A certificate directory cannot be used as asked; the message says why and what to do."""


def check_days(days: int) -> int:
    if not MIN_DAYS <= days <= MAX_DAYS:
        raise ValueError(
            f"a certificate must be valid for {MIN_DAYS} to {MAX_DAYS} days, got {days} "
            "(0 or fewer would be expired the moment it is written)"
        )
    return days


def os_problem(path: Path, exc: OSError) -> str:
    """What is wrong with ``path`` in words: the ancestor that is a file, else the OS's reason."""
    for parent in [path, *path.parents]:
        if parent.is_file() and parent != path:
            return f"{parent} is a file, not a directory"
    return str(exc.strerror or exc)


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


def new_ca(common_name: str = "tpu-admission-ca", days: int = 365) -> tuple[bytes, bytes]:
    """Return ``(ca_pem, ca_key_pem)`` for a fresh self-signed CA."""
    check_days(days)
    now = dt.datetime.now(dt.UTC)
    ca_key = ec.generate_private_key(ec.SECP256R1())
    ca = (
        x509.CertificateBuilder()
        .subject_name(_name(common_name))
        .issuer_name(_name(common_name))
        .public_key(ca_key.public_key())
        .serial_number(x509.random_serial_number())
        .not_valid_before(now - _SKEW)
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
    return ca.public_bytes(serialization.Encoding.PEM), _pem_key(ca_key)


def issue(
    ca_pem: bytes, ca_key_pem: bytes, names: list[str], days: int = 365, *, client: bool = False
) -> tuple[bytes, bytes]:
    """Return ``(cert_pem, key_pem)`` signed by the CA: a serving certificate for ``names``
    (DNS names or IP addresses), or with ``client`` a client certificate whose common name
    is ``names[0]`` (for mTLS tests and API server client configs)."""
    check_days(days)
    ca = x509.load_pem_x509_certificate(ca_pem)
    ca_key = serialization.load_pem_private_key(ca_key_pem, password=None)
    if not isinstance(ca_key, ec.EllipticCurvePrivateKey):
        raise ValueError("the CA key must be an ECDSA key")
    now = dt.datetime.now(dt.UTC)
    key = ec.generate_private_key(ec.SECP256R1())
    alt_names: list[x509.GeneralName] = []
    for name in dict.fromkeys(names):  # keep order, drop repeats
        try:
            alt_names.append(x509.IPAddress(ipaddress.ip_address(name)))
        except ValueError:
            alt_names.append(x509.DNSName(name))
    usage = ExtendedKeyUsageOID.CLIENT_AUTH if client else ExtendedKeyUsageOID.SERVER_AUTH
    cert = (
        x509.CertificateBuilder()
        .subject_name(_name(names[0]))
        .issuer_name(ca.subject)
        .public_key(key.public_key())
        .serial_number(x509.random_serial_number())
        .not_valid_before(now - _SKEW)
        .not_valid_after(now + dt.timedelta(days=days))
        .add_extension(x509.SubjectAlternativeName(alt_names), critical=False)
        .add_extension(x509.BasicConstraints(ca=False, path_length=None), critical=True)
        .add_extension(x509.ExtendedKeyUsage([usage]), critical=False)
        .add_extension(x509.AuthorityKeyIdentifier.from_issuer_public_key(ca_key.public_key()), critical=False)
        .sign(ca_key, hashes.SHA256())
    )
    return cert.public_bytes(serialization.Encoding.PEM), _pem_key(key)


def generate(
    dns_names: list[str], days: int = 365, ca_common_name: str = "tpu-admission-ca"
) -> tuple[bytes, bytes, bytes]:
    """Return ``(ca_pem, cert_pem, key_pem)`` for a fresh CA and a serving cert it signed.

    The CA's key is discarded: rotation makes a new CA (see ``bundle``) rather than
    keeping a signing key on disk.
    """
    ca_pem, ca_key_pem = new_ca(ca_common_name, days)
    cert_pem, key_pem = issue(ca_pem, ca_key_pem, dns_names, days)
    return ca_pem, cert_pem, key_pem


def bundle(ca_pem: bytes, previous_pem: bytes) -> bytes:
    """``ca_pem`` followed by the first certificate of ``previous_pem``.

    Used on rotation: the caBundle then trusts both the new CA and the one that signed
    the certificate the running pods still serve until they reload. Taking only the
    first certificate of the previous bundle keeps it from growing on every rotation.
    """
    try:
        previous = x509.load_pem_x509_certificates(previous_pem)[0]
    except ValueError as exc:
        raise ValueError(f"not a PEM certificate: {exc}") from None
    return ca_pem + previous.public_bytes(serialization.Encoding.PEM)


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

    Returns the files and whether they were generated now. Generated only where none of
    the three files it writes is there yet, so that no file of the user's is ever
    replaced: a directory holding ``tls.crt`` without ``tls.key`` (or the reverse), or a
    ``ca.crt`` of its own, is a ``CertDirError`` naming what is missing, as is a directory
    that cannot be made. Other files (this repository's ``certs/README.md``) are left as
    they are.
    """
    files = CertificateFiles(directory / CA_FILE, directory / CERT_FILE, directory / KEY_FILE)
    try:
        has_cert, has_key = files.cert.exists(), files.key.exists()
        if has_cert and has_key:
            return files, False
        if has_cert or has_key:
            present, missing = (files.cert, files.key) if has_cert else (files.key, files.cert)
            what = "its private key" if has_cert else "the certificate for this key"
            raise CertDirError(
                f"{directory} holds {present.name} but no {missing.name}: put {what} there as {missing.name}, "
                "or give an empty or new --cert-dir to have a self-signed pair generated"
            )
        if directory.exists() and not directory.is_dir():
            raise CertDirError(f"{directory} is a file, not a directory")
        if files.ca.exists():
            raise CertDirError(
                f"{directory} holds {CA_FILE} but neither {CERT_FILE} nor {KEY_FILE}: a self-signed pair is "
                f"generated only where none of {CA_FILE}, {CERT_FILE}, {KEY_FILE} is (none of your files is "
                f"replaced); put {CERT_FILE} and {KEY_FILE} there, or give another --cert-dir"
            )
        names = [*LOCAL_NAMES, *extra_names]
        return write(directory, *generate(names)), True
    except OSError as exc:
        raise CertDirError(f"{directory} cannot be used: {os_problem(directory, exc)}") from None
