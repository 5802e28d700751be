"""The connector: address policy before any connection, TLS hostname checks, no proxies."""

from __future__ import annotations

import datetime
import ipaddress
import socket
import ssl
import time
from pathlib import Path

import pytest
from cryptography import x509
from cryptography.hazmat.primitives import hashes, serialization
from cryptography.hazmat.primitives.asymmetric import ec
from cryptography.x509.oid import NameOID

from benchmarks.harness.connector import (
    checked_addresses,
    default_ssl_context,
    list_models,
    parse_base_url,
    sdk_client,
)
from benchmarks.harness.errors import HarnessError
from benchmarks.harness.policy import AllowAll, RuleSetPolicy, guard_policy
from tests.harness_tests.conftest import send_one
from tests.harness_tests.fault_server import FaultServer, wait_for

PROXY_VARIABLES = ("HTTP_PROXY", "HTTPS_PROXY", "ALL_PROXY", "http_proxy", "https_proxy")


def _settle() -> None:
    time.sleep(0.1)  # a connection in progress would have been accepted by now


def test_the_guard_refuses_loopback_before_connecting(fresh_server: FaultServer) -> None:
    # The listener can count: an allowed request is one connection.
    (allowed,) = send_one(fresh_server.base_url, "ok")
    assert allowed.outcome == "success"
    assert wait_for(lambda: fresh_server.connections == 1)

    (refused,) = send_one(fresh_server.base_url, "ok", policy=guard_policy())
    _settle()
    assert (refused.outcome, refused.error_code) == ("error", "blocked_by_policy")
    assert "loopback" in (refused.error_message or "")
    assert fresh_server.connections == 1
    assert len(fresh_server.requests) == 1


def test_the_sdk_client_goes_through_the_same_policy(fresh_server: FaultServer) -> None:
    with sdk_client(fresh_server.base_url, policy=AllowAll()) as client:
        assert list_models(client) == ["ok"]
    assert wait_for(lambda: fresh_server.connections == 1)

    with (
        sdk_client(fresh_server.base_url, policy=guard_policy()) as client,
        pytest.raises(HarnessError) as caught,
    ):
        list_models(client)
    _settle()
    assert caught.value.code == "blocked_by_policy"
    assert fresh_server.connections == 1


def test_proxy_variables_are_ignored(
    fresh_server: FaultServer, monkeypatch: pytest.MonkeyPatch
) -> None:
    with FaultServer() as proxy:
        # The proxy's listener can count a connection.
        socket.create_connection(("127.0.0.1", proxy.port)).close()
        assert wait_for(lambda: proxy.connections == 1)
        for name in PROXY_VARIABLES:
            monkeypatch.setenv(name, f"http://127.0.0.1:{proxy.port}")
        monkeypatch.delenv("NO_PROXY", raising=False)
        monkeypatch.delenv("no_proxy", raising=False)

        (record,) = send_one(fresh_server.base_url, "ok")
        with sdk_client(fresh_server.base_url, policy=AllowAll()) as client:
            assert list_models(client) == ["ok"]
        _settle()
        assert record.outcome == "success"
        assert proxy.connections == 1
        assert fresh_server.connections == 2


def test_redirects_are_not_followed(fresh_server: FaultServer) -> None:
    (record,) = send_one(fresh_server.base_url, "status:302")
    assert record.error_code == "http_3xx"
    assert len(fresh_server.requests) == 1


def _certificate(tmp_path: Path, hostname: str) -> tuple[Path, Path]:
    key = ec.generate_private_key(ec.SECP256R1())
    name = x509.Name([x509.NameAttribute(NameOID.COMMON_NAME, hostname)])
    now = datetime.datetime.now(datetime.UTC)
    certificate = (
        x509.CertificateBuilder()
        .subject_name(name)
        .issuer_name(name)
        .public_key(key.public_key())
        .serial_number(x509.random_serial_number())
        .not_valid_before(now - datetime.timedelta(minutes=1))
        .not_valid_after(now + datetime.timedelta(days=1))
        .add_extension(x509.SubjectAlternativeName([x509.DNSName(hostname)]), critical=False)
        .add_extension(x509.BasicConstraints(ca=True, path_length=None), critical=True)
        .sign(key, hashes.SHA256())
    )
    cert_path, key_path = tmp_path / f"{hostname}.pem", tmp_path / f"{hostname}.key"
    cert_path.write_bytes(certificate.public_bytes(serialization.Encoding.PEM))
    key_path.write_bytes(
        key.private_bytes(
            serialization.Encoding.PEM,
            serialization.PrivateFormat.PKCS8,
            serialization.NoEncryption(),
        )
    )
    return cert_path, key_path


@pytest.mark.parametrize(("cert_host", "expected"), [("localhost", None), ("wrong.invalid", "tls")])
def test_tls_verifies_the_hostname(tmp_path: Path, cert_host: str, expected: str | None) -> None:
    cert_path, key_path = _certificate(tmp_path, cert_host)
    server_context = ssl.SSLContext(ssl.PROTOCOL_TLS_SERVER)
    server_context.load_cert_chain(cert_path, key_path)
    with FaultServer(ssl_context=server_context) as server:
        base_url = f"https://localhost:{server.port}/v1"
        (record,) = send_one(base_url, "ok", ca_file=str(cert_path))
    assert record.error_code == expected, record.error_message
    if expected is None:
        assert record.outcome == "success"
        assert record.connect_ms is not None


def test_tls_refuses_an_unknown_certificate_authority(tmp_path: Path) -> None:
    cert_path, key_path = _certificate(tmp_path, "localhost")
    server_context = ssl.SSLContext(ssl.PROTOCOL_TLS_SERVER)
    server_context.load_cert_chain(cert_path, key_path)
    with FaultServer(ssl_context=server_context) as server:
        (record,) = send_one(f"https://localhost:{server.port}/v1", "ok")
    assert record.error_code == "tls"
    assert default_ssl_context().check_hostname


@pytest.mark.parametrize(
    "address",
    [
        "127.0.0.1",
        "10.1.2.3",
        "192.168.0.1",
        "169.254.169.254",
        "224.0.0.1",
        "::1",
        "fe80::1",
        "::ffff:127.0.0.1",
        "0.0.0.0",
        "240.0.0.1",
    ],
)
def test_the_initial_strict_rules_refuse_local_addresses(address: str) -> None:
    reason = guard_policy().refusal(host="h", address=ipaddress.ip_address(address), port=80)
    assert reason is not None


def test_the_strict_rules_allow_public_addresses_and_can_be_filled() -> None:
    public = ipaddress.ip_address("93.184.216.34")
    assert guard_policy().refusal(host="h", address=public, port=443) is None
    lab = RuleSetPolicy(allowed_networks=[ipaddress.ip_network("10.0.0.0/8")])
    assert lab.refusal(host="h", address=ipaddress.ip_address("10.1.2.3"), port=80) is None
    denied = RuleSetPolicy(denied_networks=[ipaddress.ip_network("93.184.216.0/24")])
    assert denied.refusal(host="h", address=public, port=443) is not None
    ports = RuleSetPolicy(allowed_ports=frozenset({443}))
    assert ports.refusal(host="h", address=public, port=8080) is not None


def test_a_host_is_connected_only_on_addresses_the_policy_allowed() -> None:
    infos = [(0, 0, 0, "", ("10.0.0.1", 80)), (0, 0, 0, "", ("93.184.216.34", 80))]
    assert [str(a) for a in checked_addresses("h", 80, infos, guard_policy())] == ["93.184.216.34"]
    with pytest.raises(HarnessError) as caught:
        checked_addresses("h", 80, infos[:1], guard_policy())
    assert caught.value.code == "blocked_by_policy"


@pytest.mark.parametrize(
    "url", ["ftp://host/v1", "http:///v1", "http://user:pw@host/v1", "http://host:99999/v1"]
)
def test_bad_base_urls_are_usage_errors(url: str) -> None:
    with pytest.raises(HarnessError) as caught:
        parse_base_url(url)
    assert caught.value.code == "usage"


def test_base_url_parts() -> None:
    origin = parse_base_url("https://api.example.com/v1/")
    assert (origin.host, origin.port, origin.base_path) == ("api.example.com", 443, "/v1")
    assert origin.host_header == "api.example.com"
    assert parse_base_url("http://[::1]:8000/v1").host_header == "[::1]:8000"
