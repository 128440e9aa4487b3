"""Where an LLM endpoint may point: no loopback, private, link-local (cloud metadata) or otherwise
non-public address, unless LLM_ENDPOINT_ALLOWED_HOSTS lists it (a local model server is a legitimate case).

Workers call an endpoint's base_url with the user's key, from inside the deployment's network: without
this check any user could make them talk to the database host, Redis or 169.254.169.254. The host name is
resolved and every address checked, when the endpoint is saved (apps/llm/forms.py) and again right before
a run's worker builds its client (apps/runs/execution.py), since DNS answers can change.
"""

from __future__ import annotations

import ipaddress
import socket
from urllib.parse import urlsplit

from django.conf import settings

METADATA_ADDRESSES = {ipaddress.ip_address("169.254.169.254"), ipaddress.ip_address("fd00:ec2::254")}
SETTING = "LLM_ENDPOINT_ALLOWED_HOSTS"


class UnsafeEndpoint(ValueError):
    """The base_url resolves to an address workers must not call (a ValueError: runs fail with its text)."""


def _why_not_public(address: ipaddress.IPv4Address | ipaddress.IPv6Address) -> str | None:
    if isinstance(address, ipaddress.IPv6Address) and address.ipv4_mapped:
        address = address.ipv4_mapped
    if address in METADATA_ADDRESSES:
        return "a cloud metadata address"
    if address.is_unspecified:
        return "an unspecified address"
    if address.is_loopback:
        return "a loopback address"
    if address.is_link_local:
        return "a link-local address"
    if address.is_private:
        return "a private address"
    if address.is_multicast:
        return "a multicast address"
    if not address.is_global:
        return "not a public address"
    return None


def _allowed(host: str, addresses: list, allow: list[str]) -> bool:
    for entry in allow:
        entry = entry.strip().lower().strip("[]")
        if not entry:
            continue
        if entry == host:
            return True
        try:
            network = ipaddress.ip_network(entry, strict=False)
        except ValueError:
            continue
        if addresses and all(a in network for a in addresses):
            return True
    return False


def resolve(host: str, port: int) -> list[ipaddress.IPv4Address | ipaddress.IPv6Address]:
    infos = socket.getaddrinfo(host, port, type=socket.SOCK_STREAM)
    return list(dict.fromkeys(ipaddress.ip_address(info[4][0].split("%", 1)[0]) for info in infos))


def check_base_url(url: str, *, allow: list[str] | None = None, unresolvable_ok: bool = False) -> None:
    """Raise UnsafeEndpoint unless every address `url`'s host resolves to is public, or the host (or a
    network holding all its addresses) is in `allow` (default: settings.LLM_ENDPOINT_ALLOWED_HOSTS).

    A name that does not resolve raises too, unless `unresolvable_ok` (saving an endpoint whose DNS is not
    set up yet: it is checked again before every run)."""
    allow = list(getattr(settings, SETTING, []) if allow is None else allow)
    parts = urlsplit(url)
    host = (parts.hostname or "").lower()
    if parts.scheme not in ("http", "https") or not host:
        raise UnsafeEndpoint(f"the endpoint URL {url!r} must be an http(s) URL with a host")
    if host in (entry.strip().lower().strip("[]") for entry in allow):
        return
    try:
        port = parts.port or (443 if parts.scheme == "https" else 80)
    except ValueError:
        raise UnsafeEndpoint(f"the endpoint URL {url!r} has an invalid port") from None
    try:
        addresses = resolve(host, port)
    except (socket.gaierror, UnicodeError, OSError) as exc:
        if unresolvable_ok:
            return
        raise UnsafeEndpoint(f"the endpoint host {host} does not resolve ({exc})") from None
    if _allowed(host, addresses, allow):
        return
    for address in addresses:
        reason = _why_not_public(address)
        if reason:
            shown = host if host == str(address) else f"{host} (resolved to {address})"
            raise UnsafeEndpoint(
                f"the endpoint host {shown} is {reason}; workers do not call such addresses unless the "
                f"{SETTING} setting lists the host, e.g. {SETTING}={host} for a local model server"
            )
