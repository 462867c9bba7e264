"""web/addresses.py: which addresses a crawl may connect to, and the setting that allows others."""

from __future__ import annotations

import pytest

from helppuff_crawl.web.addresses import (
    LOOPBACK_NETWORKS,
    AddressPolicy,
    Refusal,
    address_kind,
    is_loopback_host,
    loopback_allowance,
)


@pytest.mark.parametrize(("address", "kind"), [
    ("127.0.0.1", "loopback"), ("127.0.0.2", "loopback"), ("::1", "loopback"),
    ("10.0.0.5", "private"), ("172.16.0.1", "private"), ("172.31.255.254", "private"), ("192.168.1.1", "private"),
    ("fc00::1", "private"), ("fd12:3456::1", "private"),
    ("169.254.169.254", "link-local"), ("169.254.0.1", "link-local"), ("fe80::1", "link-local"),
    ("0.0.0.0", "unspecified"), ("::", "unspecified"),
    ("224.0.0.1", "multicast"), ("239.255.255.250", "multicast"), ("ff02::1", "multicast"),
    ("240.0.0.1", "reserved"), ("255.255.255.255", "reserved"),
    ("100.64.0.1", "shared"),
    ("192.0.2.10", "non-public"), ("198.18.0.1", "non-public"), ("2001:db8::1", "non-public"),
    ("0.1.2.3", "non-public"),
    # IPv6 that leads to IPv4: judged by where it leads.
    ("::ffff:127.0.0.1", "loopback"), ("::ffff:169.254.169.254", "link-local"), ("64:ff9b::a00:5", "private"),
    ("64:ff9b::7f00:1", "loopback"), ("2002:7f00:1::", "loopback"), ("2002:a9fe:a9fe::1", "link-local"),
    # Public.
    ("93.184.215.14", ""), ("1.1.1.1", ""), ("172.32.0.1", ""), ("2606:4700:4700::1111", ""),
    ("::ffff:8.8.8.8", ""), ("64:ff9b::808:808", ""),
])
def test_address_kinds(address: str, kind: str) -> None:
    assert address_kind(address) == kind


def test_the_default_policy_refuses_every_non_public_address_and_names_it() -> None:
    policy = AddressPolicy.from_setting(False)
    assert policy.host_refusal("127.0.0.2", []) == Refusal("loopback", "127.0.0.2 is a loopback address")
    assert policy.host_refusal("[::1]", []) == Refusal("loopback", "::1 is a loopback address")
    assert policy.host_refusal("169.254.169.254", []).reason == "169.254.169.254 is a link-local address"
    assert policy.host_refusal("10.1.2.3", []).reason == "10.1.2.3 is a private address"
    assert policy.host_refusal("acme.com.au", ["93.184.215.14"]) is None
    assert policy.host_refusal("93.184.215.14", []) is None


def test_every_address_of_a_name_is_checked() -> None:
    policy = AddressPolicy.from_setting(False)
    refusal = policy.host_refusal("intranet.acme.com.au", ["93.184.215.14", "10.0.0.5"])
    assert refusal == Refusal("private", "intranet.acme.com.au resolves to 10.0.0.5, a private address")
    assert policy.host_refusal("acme.com.au", ["93.184.215.14", "2606:4700:4700::1111"]) is None


@pytest.mark.parametrize("value", [True, "true", "1", "yes", "on", " True "])
def test_true_allows_every_address(value: object) -> None:
    policy = AddressPolicy.from_setting(value)
    assert policy.allow_all
    assert policy.host_refusal("127.0.0.2", []) is None and policy.host_refusal("169.254.169.254", []) is None


@pytest.mark.parametrize("value", [False, "false", "0", "no", "off", "", None, []])
def test_false_allows_only_public_addresses(value: object) -> None:
    policy = AddressPolicy.from_setting(value)
    assert policy == AddressPolicy()
    assert policy.refusal("127.0.0.1") == "loopback" and policy.refusal("1.1.1.1") == ""


def test_a_list_allows_those_addresses_and_networks_only() -> None:
    policy = AddressPolicy.from_setting("127.0.0.1, 10.1.0.0/16")
    assert policy.allows("127.0.0.1") and policy.allows("10.1.2.3") and policy.allows("1.1.1.1")
    assert policy.refusal("127.0.0.2") == "loopback" and policy.refusal("10.2.0.1") == "private"
    assert policy.allows("::ffff:127.0.0.1")  # the same address, spelt as IPv6
    assert AddressPolicy.from_setting(["::1", "127.0.0.0/8"]).allows("127.9.9.9")
    loopback = AddressPolicy.from_setting(LOOPBACK_NETWORKS)
    assert loopback.allows("127.0.0.2") and loopback.allows("::1")
    assert loopback.refusal("169.254.169.254") == "link-local" and loopback.refusal("192.168.0.1") == "private"


@pytest.mark.parametrize("value", ["maybe", "127.0.0.1,intranet", "10.0.0.0/33"])
def test_a_bad_value_names_the_setting(value: str) -> None:
    with pytest.raises(ValueError, match="HELPPUFF_ALLOW_PRIVATE_ADDRESSES: expected true, false, or addresses"):
        AddressPolicy.from_setting(value)


@pytest.mark.parametrize(("host", "loopback"), [
    ("127.0.0.1", True), ("127.8.0.1", True), ("::1", True), ("[::1]", True), ("localhost", True),
    ("LOCALHOST.", True), ("10.0.0.1", False), ("acme.com.au", False), ("localhost.acme.com.au", False),
    ("169.254.169.254", False),
])
def test_loopback_hosts(host: str, loopback: bool) -> None:
    assert is_loopback_host(host) is loopback


def test_a_start_url_on_loopback_allows_loopback_only() -> None:
    assert loopback_allowance("http://127.0.0.1:8765") == {"HELPPUFF_ALLOW_PRIVATE_ADDRESSES": "127.0.0.0/8,::1"}
    assert loopback_allowance("http://localhost:3000/shop") == {"HELPPUFF_ALLOW_PRIVATE_ADDRESSES": "127.0.0.0/8,::1"}
    assert loopback_allowance("http://[::1]:8000") == {"HELPPUFF_ALLOW_PRIVATE_ADDRESSES": "127.0.0.0/8,::1"}
    assert loopback_allowance("https://acme.com.au") == {}
    assert loopback_allowance("http://192.168.1.20") == {}
