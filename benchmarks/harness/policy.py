"""Address policies: which resolved addresses the connector may connect to.

`AllowAll` is the command line's default; `RuleSetPolicy` is the object the app and `--guard` fill.
"""

from __future__ import annotations

import ipaddress
from collections.abc import Iterable
from dataclasses import dataclass, field
from typing import Protocol

IPAddress = ipaddress.IPv4Address | ipaddress.IPv6Address
IPNetwork = ipaddress.IPv4Network | ipaddress.IPv6Network


class AddressPolicy(Protocol):
    """Decides, per resolved address, whether a connection may be opened."""

    def refusal(self, *, host: str, address: IPAddress, port: int) -> str | None:
        """Return None to allow the connection, or a human-readable reason to refuse it."""
        ...


class AllowAll:
    """Allows every address: the default for a user benchmarking from their own shell."""

    def refusal(self, *, host: str, address: IPAddress, port: int) -> str | None:
        return None


# The initial strict rules, until the hardening issue brings the instance's own: anything that
# is not a routable public address is refused.
_CATEGORY_CHECKS: dict[str, str] = {
    "loopback": "is_loopback",
    "private": "is_private",
    "link-local": "is_link_local",
    "multicast": "is_multicast",
    "reserved": "is_reserved",
    "unspecified": "is_unspecified",
}


@dataclass
class RuleSetPolicy:
    """Refuses addresses in `denied_networks` or in one of `refused_categories`.

    `allowed_networks` wins over both (for example a lab subnet an administrator trusts);
    `allowed_ports`, when not empty, restricts ports. Categories are the names of
    `_CATEGORY_CHECKS`; IPv4-mapped IPv6 addresses are judged as the IPv4 address they carry.
    """

    refused_categories: frozenset[str] = frozenset(_CATEGORY_CHECKS)
    denied_networks: list[IPNetwork] = field(default_factory=list)
    allowed_networks: list[IPNetwork] = field(default_factory=list)
    allowed_ports: frozenset[int] = frozenset()

    def refusal(self, *, host: str, address: IPAddress, port: int) -> str | None:
        if isinstance(address, ipaddress.IPv6Address) and address.ipv4_mapped is not None:
            address = address.ipv4_mapped
        if self.allowed_ports and port not in self.allowed_ports:
            return f"port {port} is not allowed"
        if _in_any(address, self.allowed_networks):
            return None
        if _in_any(address, self.denied_networks):
            return f"{address} ({host}) is in a denied network"
        for category in sorted(self.refused_categories):
            if getattr(address, _CATEGORY_CHECKS[category]):
                return f"{address} ({host}) is a {category} address"
        return None


def _in_any(address: IPAddress, networks: Iterable[IPNetwork]) -> bool:
    return any(address.version == net.version and address in net for net in networks)


def guard_policy() -> RuleSetPolicy:
    """The rules `--guard` turns on: refuse loopback, private, link-local, multicast, reserved."""
    return RuleSetPolicy()
