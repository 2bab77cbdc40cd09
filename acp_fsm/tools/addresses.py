"""Which hosts are the user's own machine or network: the rule fetch_url holds every hop to.

A host is read as the connection will use it: an address in any spelling the system's resolver
takes for a number (`127.1`, `2130706433`, `0x7f.1`, `[::ffff:127.0.0.1]`) is that address; any
other host is a name, decided by the addresses it resolves to. One function decides for both
(`refusal`): an address of this machine or its network (`local_address`) may be reached only
by the host the user was asked about, whatever hop it comes on.
"""

from __future__ import annotations

import ipaddress
import re
import socket

IPAddress = ipaddress.IPv4Address | ipaddress.IPv6Address

# Names of the user's own machine or network by their domain (RFC 6761, 6762, 8375; common use).
LOCAL_SUFFIXES = (".localhost", ".local", ".internal", ".lan", ".home.arpa")
# A name as the HTTP client holds it (a name of other letters is already IDNA's `xn--` form):
# letters, digits, hyphens and underscores, in labels between dots.
_NAME = re.compile(r"[A-Za-z0-9_-]+(\.[A-Za-z0-9_-]+)*\.?")
# IPv4 addresses carried inside IPv6 ones that reach them: NAT64's well-known prefix (RFC 6052).
_NAT64 = ipaddress.IPv6Network("64:ff9b::/96")


def numeric_address(host: str) -> IPAddress | None:
    """The address a URL's host is, when the system's resolver reads it as one (brackets of
    an IPv6 address allowed); None for a name. No lookup is made."""
    host = host.removeprefix("[").removesuffix("]")
    try:
        return ipaddress.ip_address(host)
    except ValueError:
        pass
    try:  # the spellings inet_aton accepts: 127.1, 2130706433, 0x7f.0.0.1, 0177.0.0.1
        found = socket.getaddrinfo(host, None, flags=socket.AI_NUMERICHOST)
    except (OSError, UnicodeError, ValueError):
        return None
    return ipaddress.ip_address(found[0][4][0])


def local_address(address: IPAddress) -> bool:
    """Whether `address` is this machine or a network of the user's (loopback, private,
    link-local, carrier-grade NAT as Tailscale uses it), or no address of the internet."""
    if isinstance(address, ipaddress.IPv6Address):
        embedded = address.ipv4_mapped or address.sixtofour
        if embedded is None and address in _NAT64:
            embedded = ipaddress.IPv4Address(int(address) & 0xFFFFFFFF)
        if embedded is not None:
            return local_address(embedded)
        if address.is_site_local:
            return True
    # Not global: loopback, private, link-local, 100.64.0.0/10, documentation, unspecified...
    return not address.is_global or address.is_multicast or address.is_reserved


def host_key(host: str) -> str:
    """What tells two spellings of one host apart or not: its address when it is one, else
    the name in lower case without a trailing dot."""
    address = numeric_address(host)
    return str(address) if address is not None else host.lower().rstrip(".")


def local_host(host: str) -> bool:
    """Whether a URL's host names the user's own machine or network without a lookup: a local
    address, `localhost`, a name of a local domain, or a name without a dot."""
    address = numeric_address(host)
    if address is not None:
        return local_address(address)
    name = host_key(host)
    return name == "localhost" or name.endswith(LOCAL_SUFFIXES) or "." not in name


def not_a_host(host: str) -> bool:
    """A host that is neither an address nor a name: digits and dots that make no address
    (`1.2.3.4.5`, `127.0.0.1.`: HTTP clients take it for one and hand it to the system's full
    lookup, which no guard sees), or characters no name has (a NUL, a space)."""
    if numeric_address(host) is not None:
        return False
    return host.replace(".", "").isdigit() or not _NAME.fullmatch(host)


def refusal(host: str, address: IPAddress, allowed: str | None) -> str | None:
    """Why a connection to `address` for the URL's host `host` may not be made, or None: an
    address of this machine or its network is reached only through the host the user was
    asked about (`allowed`, its `host_key`), by any hop."""
    if not local_address(address) or host_key(host) == allowed:
        return None
    if numeric_address(host) is None:
        where = f"{host} resolves to {address}"
    else:
        where = host if host.strip("[]") == str(address) else f"{host} is {address}"
    return f"{where}, an address of this machine or its network"
