"""The guard of `harnessctl serve` (docs/PROTOCOL.md section 24): the token and the Host names."""

from __future__ import annotations

import pytest

from harnessctl.serve.guard import Guard


@pytest.mark.parametrize("host", ["127.0.0.1:8080", "localhost:8080", "LocalHost:8080", "[::1]:8080"])
def test_a_loopback_server_answers_to_its_address_and_localhost(host):
    assert Guard("127.0.0.1", 8080).host_ok(host)


@pytest.mark.parametrize("host", ["evil.example:8080", "127.0.0.1.nip.io:8080", "127.0.0.1:8081", "127.0.0.1",
                                  ":8080", "", None, "[::1]"])
def test_a_name_another_dns_may_rebind_or_another_port_is_refused(host):
    assert not Guard("127.0.0.1", 8080).host_ok(host)


def test_a_host_header_without_port_means_port_80():
    assert Guard("127.0.0.1", 80).host_ok("localhost")


def test_localhost_is_refused_when_serving_beyond_loopback():
    guard = Guard("10.1.2.3", 8080)
    assert guard.host_ok("10.1.2.3:8080") and not guard.host_ok("localhost:8080")


def test_the_token_must_match_exactly():
    guard = Guard("127.0.0.1", 8080)
    assert guard.token_ok(guard.token)
    assert not guard.token_ok(None) and not guard.token_ok("") and not guard.token_ok(guard.token[:-1])
    assert not guard.token_ok(guard.token + "\udcff")


def test_each_serve_has_a_new_token_in_its_url():
    first, second = Guard("127.0.0.1", 8080), Guard("127.0.0.1", 8080)
    assert first.token != second.token and len(first.token) >= 40
    assert first.url() == "http://127.0.0.1:8080/?token=" + first.token
    assert Guard("::1", 8080).url().startswith("http://[::1]:8080/?token=")
