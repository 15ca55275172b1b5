"""The guard of `harnessctl serve` (docs/PROTOCOL-SERVE.md section 24): the token and the Host names."""

from __future__ import annotations

import pytest

from harnessctl.serve.guard import Guard


@pytest.mark.parametrize("host", ["127.0.0.1:8080", "localhost:8080", "LocalHost:8080", "[::1]:8080"])
def test_a_loopback_server_answers_to_its_address_and_localhost(host):
    assert Guard("127.0.0.1", 8080).host_ok(host)


@pytest.mark.parametrize("host", ["evil.example:8080", "127.0.0.1.nip.io:8080", "evil.example", "localhost.:8080",
                                  ":8080", "", None, "[evil.example]:8080", "127.0.0.1:80:80"])
def test_a_name_another_dns_may_rebind_is_refused(host):
    assert not Guard("127.0.0.1", 8080).host_ok(host)


@pytest.mark.parametrize("host", ["127.0.0.1:9090", "localhost:9090", "[::1]:9090", "127.0.0.1", "localhost", "[::1]"])
def test_any_port_is_accepted_as_a_tunnel_or_a_forward_changes_it(host):
    """The port guards nothing against rebinding (told by the name) and a forward changes it legitimately."""
    assert Guard("127.0.0.1", 8080).host_ok(host)


@pytest.mark.parametrize("host", ["evil.example:8080", None])
def test_a_refused_host_says_what_to_do_and_never_holds_the_token(host):
    guard = Guard("127.0.0.1", 8080)
    reason = guard.host_refused(host)
    assert reason is not None and "URL harnessctl serve printed" in reason and guard.token not in reason


def test_a_refusal_names_the_names_the_server_answers_to():
    assert "an IP address or localhost," in str(Guard("127.0.0.1", 8080).host_refused("evil.example:1"))
    assert "an IP address or box.lan," in str(Guard("box.lan", 8080).host_refused("evil.example:1"))
    assert "an IP address," in str(Guard("10.1.2.3", 8080).host_refused("evil.example:1"))


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
