"""Who may reach the app, decided before anything is served: the exposure rule, the port and the launch token.

Reward code is arbitrary Python run on this machine, so the app binds to 127.0.0.1 and refuses
any other address (or a public share link) unless a login is required. Loopback alone does not
keep out web pages the person visits or other users of the machine, so each launch also has a
random token (`launch_token`), saved where only this user can read it (`save_launch`) and printed
as part of the app's link; `rloo-studio ui --print-url` reads it back. The checks each request
passes live in `wall.py`. No gradio, no torch here: the command line uses this before it builds
the page.
"""

from __future__ import annotations

import ipaddress
import json
import os
import secrets
import socket
from pathlib import Path
from urllib.parse import quote

from . import runs
from .errors import StudioError
from .procs import pid_alive

TOKEN_ENV = "RLOO_STUDIO_TOKEN"
# Where each running app leaves its link: one file per port, readable by this user only.
LAUNCH_DIR = Path(".studio") / "launch"

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


def launch_token(no_token: bool = False, environ: os._Environ | dict = os.environ) -> str | None:
    """The token for this launch: RLOO_STUDIO_TOKEN if set, else a new random one; None with --no-token."""
    if no_token:
        return None
    given = environ.get(TOKEN_ENV)
    if given is None:
        return secrets.token_urlsafe(32)  # 256 random bits, URL-safe: fits in ?token= unquoted
    if not given.strip() or any(c.isspace() for c in given.strip()):
        raise StudioError(f"{TOKEN_ENV} is set but {'empty' if not given.strip() else 'contains spaces'}",
                          "the token is sent in links and headers, where it must be one word",
                          f"unset {TOKEN_ENV} to get a random token each launch, or set it to a long random word")
    return given.strip()


def url_host(host: str) -> str:
    """The host as it appears in the printed link: this machine's loopback address for loopback and
    all-interfaces binds (the link is opened here), IPv6 addresses in brackets."""
    if host in ("127.0.0.1", "localhost", "0.0.0.0", ""):
        return "127.0.0.1"
    if host == "::":
        return "[::1]"
    return f"[{host}]" if ":" in host and not host.startswith("[") else host


def app_url(host: str, port: int, token: str | None) -> str:
    base = f"http://{url_host(host)}:{port}/"
    return f"{base}?token={quote(token, safe='')}" if token else base


def launch_file(runs_dir: str | Path, port: int) -> Path:
    return Path(runs_dir).expanduser() / LAUNCH_DIR / f"ui-{port}.json"


def save_launch(runs_dir: str | Path, port: int, url: str) -> Path:
    """Write the app's link (with its token) where only this user can read it; return the file."""
    path = launch_file(runs_dir, port)
    path.parent.mkdir(parents=True, exist_ok=True, mode=0o700)
    os.chmod(path.parent, 0o700)
    # The link holds the launch token, so the file must be readable by this user only. runs.write_text_atomic writes
    # through tempfile.mkstemp, which creates its file owner-only (0o600), and renames it over `path`, so the file
    # has that mode from its first byte, also when an older file had wider permissions.
    runs.write_text_atomic(path, json.dumps({"url": url, "port": port, "pid": os.getpid()}))
    return path


def forget_launch(path: Path) -> None:
    try:
        path.unlink()
    except OSError:
        pass


def saved_launches(runs_dir: str | Path) -> list[dict]:
    """The links of the apps running from this runs folder (files of apps that ended are skipped)."""
    folder = Path(runs_dir).expanduser() / LAUNCH_DIR
    found = []
    for path in sorted(folder.glob("ui-*.json")) if folder.is_dir() else []:
        try:
            entry = json.loads(path.read_text(encoding="utf-8"))
        except (OSError, ValueError):
            continue
        if isinstance(entry, dict) and "url" in entry and isinstance(entry.get("pid"), int) and pid_alive(entry["pid"]):
            found.append(entry)
    return found
