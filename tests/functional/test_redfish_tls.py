"""The redfish driver over real TLS: a BMC certificate signed by a private CA (ca_bundle)."""

from __future__ import annotations

import datetime
import ipaddress
import json
import ssl
import threading
from collections.abc import Iterator
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any

import pytest
from cryptography import x509
from cryptography.hazmat.primitives import hashes, serialization
from cryptography.hazmat.primitives.asymmetric import ec
from cryptography.x509.oid import NameOID

from consolidator.power.bmc_file import load_bmc_file
from consolidator.power.catalog import driver_for
from consolidator.power.driver import BmcConfig, PowerError

SYSTEM = "/redfish/v1/Systems/1"
DOCS: dict[str, dict[str, Any]] = {
    "/redfish/v1/": {"@odata.id": "/redfish/v1/", "@odata.type": "#ServiceRoot.v1_5_0.ServiceRoot",
                     "Id": "RootService", "Name": "TLS BMC", "RedfishVersion": "1.8.0",
                     "UUID": "8b9e3f6a-0000-4000-8000-0000000000aa",
                     "Systems": {"@odata.id": "/redfish/v1/Systems"}},
    SYSTEM: {"@odata.id": SYSTEM, "@odata.type": "#ComputerSystem.v1_10_0.ComputerSystem",
             "Id": "1", "Name": "tls-01", "PowerState": "On",
             "Status": {"State": "Enabled", "Health": "OK"}},
}


def _name(common: str) -> x509.Name:
    return x509.Name([x509.NameAttribute(NameOID.COMMON_NAME, common)])


def _cert(subject: str, key: Any, issuer: str, signer: Any, *, ca: bool) -> x509.Certificate:
    now = datetime.datetime.now(datetime.timezone.utc)
    builder = (x509.CertificateBuilder().subject_name(_name(subject)).issuer_name(_name(issuer))
               .public_key(key.public_key()).serial_number(x509.random_serial_number())
               .not_valid_before(now - datetime.timedelta(minutes=5))
               .not_valid_after(now + datetime.timedelta(days=1))
               .add_extension(x509.BasicConstraints(ca=ca, path_length=None), critical=True)
               .add_extension(x509.SubjectKeyIdentifier.from_public_key(key.public_key()),
                              critical=False)
               .add_extension(x509.AuthorityKeyIdentifier.from_issuer_public_key(
                   signer.public_key()), critical=False))
    if ca:
        builder = builder.add_extension(x509.KeyUsage(
            digital_signature=True, content_commitment=False, key_encipherment=False,
            data_encipherment=False, key_agreement=False, key_cert_sign=True, crl_sign=True,
            encipher_only=False, decipher_only=False), critical=True)
    else:
        builder = builder.add_extension(x509.SubjectAlternativeName(
            [x509.IPAddress(ipaddress.ip_address("127.0.0.1"))]), critical=False)
    return builder.sign(signer, hashes.SHA256())


def _pem(cert: x509.Certificate) -> bytes:
    return cert.public_bytes(serialization.Encoding.PEM)


class _Handler(BaseHTTPRequestHandler):
    def do_GET(self) -> None:  # noqa: N802 - the stdlib's name
        doc = DOCS.get(self.path) or DOCS.get(self.path + "/")
        body = json.dumps(doc or {"error": {"message": "not found"}}).encode()
        self.send_response(200 if doc else 404)
        self.send_header("Content-Type", "application/json")
        self.send_header("Content-Length", str(len(body)))
        self.end_headers()
        self.wfile.write(body)

    def log_message(self, format: str, *args: Any) -> None:  # noqa: A002 - stdlib name
        pass


@pytest.fixture
def tls_bmc(tmp_path: Path) -> Iterator[tuple[str, Path]]:
    """An https Redfish BMC on 127.0.0.1 whose certificate a private CA signed: (url, ca.pem)."""
    ca_key, key = ec.generate_private_key(ec.SECP256R1()), ec.generate_private_key(ec.SECP256R1())
    ca = _cert("test CA", ca_key, "test CA", ca_key, ca=True)
    cert = _cert("127.0.0.1", key, "test CA", ca_key, ca=False)
    (tmp_path / "ca.pem").write_bytes(_pem(ca))
    (tmp_path / "bmc.pem").write_bytes(_pem(cert) + key.private_bytes(
        serialization.Encoding.PEM, serialization.PrivateFormat.PKCS8,
        serialization.NoEncryption()))
    context = ssl.SSLContext(ssl.PROTOCOL_TLS_SERVER)
    context.load_cert_chain(tmp_path / "bmc.pem")
    server = ThreadingHTTPServer(("127.0.0.1", 0), _Handler)
    server.socket = context.wrap_socket(server.socket, server_side=True)
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    try:
        yield f"https://127.0.0.1:{server.server_address[1]}", tmp_path / "ca.pem"
    finally:
        server.shutdown()
        server.server_close()


def test_ca_bundle_verifies_a_privately_signed_bmc(tls_bmc: tuple[str, Path],
                                                   tmp_path: Path) -> None:
    url, ca_pem = tls_bmc
    bmc_yaml = tmp_path / "bmc.yaml"
    bmc_yaml.write_text(f"defaults: {{username: u, password: p, timeout: 5, read_attempts: 1}}\n"
                        f"hosts:\n  tls-01: {{driver: redfish, address: '{url}', "
                        f"system_id: '{SYSTEM}', ca_bundle: ca.pem}}\n")
    bmc_yaml.chmod(0o600)
    config = load_bmc_file(bmc_yaml)["tls-01"]
    assert config.options["ca_bundle"] == str(ca_pem)
    assert driver_for(config).power_state() == "on"


def test_without_the_ca_bundle_the_certificate_is_not_trusted(
        tls_bmc: tuple[str, Path]) -> None:
    url, _ = tls_bmc
    config = BmcConfig(host="tls-01", driver="redfish", address=url, port=None, username="u",
                       password="p", options={"system_id": SYSTEM}, timeout=5)
    with pytest.raises(PowerError, match="TLS certificate not trusted .*ca_bundle") as err:
        driver_for(config).power_state()
    assert "tried" not in str(err.value)  # a TLS failure is not retried
