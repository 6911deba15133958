"""Who may reach the app, decided before anything is served: the exposure rule, the port, the launch token, the login.

Reward code is arbitrary Python run on this machine, so the app binds to 127.0.0.1 and refuses
any other address (or a public share link) unless a login is required, and never without the
token there. Loopback alone does not keep out web pages the person visits or other users of the
machine, so each launch also has a random token (`launch_token`; one given in RLOO_STUDIO_TOKEN
must hold 128 bits), saved where only this user can read it (`save_launch`) and printed as part of
the app's link; `rloo-studio ui --print-url` reads it back. No secret goes on a command line, which
`ps` shows to every user: `--inbrowser` starts the browser on a file beside the saved link
(`browser_file`), and the login comes from RLOO_STUDIO_AUTH or a file only this user can read
(`read_auth_file`). The checks each request passes live in `wall.py`. No gradio, no torch here: the
command line uses this before it builds the page."""

from __future__ import annotations

import html
import ipaddress
import json
import math
import os
import secrets
import socket
from pathlib import Path
from urllib.parse import quote

from .. import runs
from ..errors import StudioError
from ..procs import pid_alive

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


def check_exposure(host: str, auth: str | None, share: bool = False, no_token: bool = False) -> tuple[str, str] | None:
    """Refuse binding beyond loopback (or sharing) without a login, or without the token; return (user, password) if given."""
    credentials = None
    if auth:
        user, sep, password = auth.partition(":")
        if not sep or not user or not password:
            raise StudioError("the login (--auth-file, RLOO_STUDIO_AUTH or --auth) must look like USER:PASSWORD",
                              "the login page asks for a user name and a password, and this login lacks one of them",
                              "give both a user name and a password, separated by a colon")
        credentials = (user, password)
    if (share or not is_loopback(host)) and credentials is None:
        where = "a public share link" if share else f"address {host}"
        raise StudioError(
            f"refusing to serve RLOO Studio on {where} without a login",
            "reward code typed into the app runs as arbitrary Python on this machine, so anyone who can reach the page can run programs here",
            "keep the default --host 127.0.0.1, or set the login in RLOO_STUDIO_AUTH=USER:PASSWORD or a file given "
            "with --auth-file (--auth USER:PASSWORD also works, but shows the password to every user in `ps`)",
        )
    if no_token and (share or not is_loopback(host)):
        where = "a public share link" if share else f"address {host}"
        raise StudioError(
            f"refusing to serve RLOO Studio on {where} with --no-token",
            "a login alone is one password that anyone who can reach the address may guess, while the app runs any "
            "Python sent to it; the launch token adds 256 random bits that only the printed link holds",
            "drop --no-token (the link, or `rloo-studio ui --print-url`, gives the token), or keep the default --host 127.0.0.1",
        )
    return credentials


def read_auth_file(path: str | Path) -> str:
    """The USER:PASSWORD in `path` (its first line), refused unless only this user can read the file."""
    path = Path(path).expanduser()
    try:
        info = path.stat()
        text = path.read_text(encoding="utf-8")
    except OSError as exc:
        raise StudioError(f"cannot read the login file {path}", str(exc),
                          "give --auth-file a file holding one line USER:PASSWORD, readable by you alone (chmod 600)") from None
    if os.name == "posix" and (info.st_mode & 0o077 or info.st_uid != os.getuid()):
        raise StudioError(f"other users can read or change the login file {path} (permissions {info.st_mode & 0o777:o})",
                          "the file holds the app's password, and the app runs any Python sent to it by whoever logs in",
                          f"run `chmod 600 {path}` (it must be yours, readable and writable by you alone), then start again")
    return text.splitlines()[0].strip() if text.strip() else ""


def free_port(host: str, start: int, tries: int = 50) -> int:
    for port in range(start, start + tries):
        with socket.socket(socket.AF_INET6 if ":" in host else socket.AF_INET) as sock:
            try:
                sock.bind((host, port))
                return port
            except OSError:
                continue
    raise StudioError(f"no free port between {start} and {start + tries - 1}", "other programs use them", "pass --port with a free port")


MIN_TOKEN_BITS = 128


def token_bits(token: str) -> float:
    """At most how many random bits `token` holds: its length times log2 of the alphabet its kinds of characters come from
    (digits 10, lower case 26, upper case 26, other 32). A random word holds that much; a chosen one holds less."""
    alphabet = sum(size for test, size in ((str.isdigit, 10), (str.islower, 26), (str.isupper, 26)) if any(test(c) for c in token))
    alphabet += 32 if any(not (c.isdigit() or c.islower() or c.isupper()) for c in token) else 0
    return len(token) * math.log2(alphabet) if alphabet > 1 else 0.0


def launch_token(no_token: bool = False, environ: os._Environ | dict = os.environ) -> str | None:
    """The token for this launch: RLOO_STUDIO_TOKEN if set (and long enough), else a new random one; None with --no-token."""
    if no_token:
        return None
    given = environ.get(TOKEN_ENV)
    if given is None:
        return secrets.token_urlsafe(32)  # 256 random bits, URL-safe: fits in ?token= unquoted
    if not given.strip() or any(c.isspace() for c in given.strip()):
        raise StudioError(f"{TOKEN_ENV} is set but {'empty' if not given.strip() else 'contains spaces'}",
                          "the token is sent in links and headers, where it must be one word",
                          f"unset {TOKEN_ENV} to get a random token each launch, or set it to a long random word")
    given = given.strip()
    if token_bits(given) < MIN_TOKEN_BITS:
        raise StudioError(f"{TOKEN_ENV} is too short to be guessed by nobody ({len(given)} characters, at most "
                          f"{token_bits(given):.0f} random bits)",
                          f"the token is all that keeps other users of this computer from running code through the app, "
                          f"so it must hold at least {MIN_TOKEN_BITS} bits",
                          f"unset {TOKEN_ENV} to get a random token each launch, or set it to a random word such as "
                          f"the output of: python -c \"import secrets; print(secrets.token_urlsafe(32))\"")
    return given


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


def browser_file(saved: Path, url: str) -> Path:
    """A page beside the saved link that sends the browser on to `url`: the browser is started with this file's path,
    which holds no secret, since a browser's command line is shown to every user of the computer (`ps`)."""
    path = saved.with_suffix(".open.html")
    target = html.escape(url, quote=True)
    runs.write_text_atomic(path, f"""<!doctype html>
<html lang="en"><head><meta charset="utf-8"><meta name="referrer" content="no-referrer">
<meta http-equiv="refresh" content="0;url={target}"><title>RLOO Studio</title></head>
<body><p><a href="{target}">Open RLOO Studio</a></p></body></html>
""")
    return path


def forget_launch(path: Path) -> None:
    """Remove the saved link and the browser's page beside it."""
    for each in (path, path.with_suffix(".open.html")):
        try:
            each.unlink()
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
