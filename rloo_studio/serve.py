"""The exposure rule and the port: what the app may bind to, checked before anything is served.

Reward code is arbitrary Python run on this machine, so the app binds to 127.0.0.1 and refuses
any other address (or a public share link) unless a login is required. No gradio, no torch here:
the command line checks this before it builds the page.
"""

from __future__ import annotations

import ipaddress
import socket

from .errors import StudioError

LOOPBACK_NAMES = {"localhost", "127.0.0.1", "::1"}


def is_loopback(host: str) -> bool:
    if host in LOOPBACK_NAMES:
        return True
    try:
        return ipaddress.ip_address(host).is_loopback
    except ValueError:
        return False


def check_exposure(host: str, auth: str | None, share: bool = False) -> tuple[str, str] | None:
    """Refuse binding beyond loopback (or sharing) without a login; return (user, password) if given."""
    credentials = None
    if auth:
        user, sep, password = auth.partition(":")
        if not sep or not user or not password:
            raise StudioError("--auth must look like USER:PASSWORD", "", "give both a user name and a password, separated by a colon")
        credentials = (user, password)
    if (share or not is_loopback(host)) and credentials is None:
        where = "a public share link" if share else f"address {host}"
        raise StudioError(
            f"refusing to serve RLOO Studio on {where} without a login",
            "reward code typed into the app runs as arbitrary Python on this machine, so anyone who can reach the page can run programs here",
            "keep the default --host 127.0.0.1, or add --auth USER:PASSWORD (or set RLOO_STUDIO_AUTH)",
        )
    return credentials


def free_port(host: str, start: int, tries: int = 50) -> int:
    for port in range(start, start + tries):
        with socket.socket(socket.AF_INET6 if ":" in host else socket.AF_INET) as sock:
            try:
                sock.bind((host, port))
                return port
            except OSError:
                continue
    raise StudioError(f"no free port between {start} and {start + tries - 1}", "other programs use them", "pass --port with a free port")
