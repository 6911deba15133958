"""The checks every request to the app passes before any route: Host, Origin and the launch token.

Loopback is not a wall: a web page the person visits can reach 127.0.0.1 — by DNS rebinding (its
own name re-resolved to 127.0.0.1, so the browser sends `Host: attacker.example`) or by plain
cross-site requests (`Origin: https://attacker.example`) — and other users of a shared machine
can connect too. Since the app runs reward code that arrives through its API, each request must
1. name this app as its Host: loopback names, the bind address or an `--allowed-host` (else 403);
2. when it carries an Origin, come from the app's own page: same host and port as its Host (else 403);
3. carry the launch token: `Authorization: Bearer TOKEN`, the cookie set from `?token=`, or
   `?token=` itself, which then sets that cookie (HttpOnly, SameSite=Strict) for the page's own
   requests (else 401, with a page that says how to get the link again).

`Wall` is plain ASGI middleware (no gradio import), so it sees HTTP, server-sent events and
websockets alike; the rules are in `Policy`, which tests can call directly.
"""

from __future__ import annotations

import hmac
import html
from dataclasses import dataclass
from urllib.parse import parse_qsl, urlsplit

LOOPBACK_HOSTS = frozenset({"localhost", "127.0.0.1", "::1"})
WILDCARD_BINDS = frozenset({"0.0.0.0", "::", ""})
# Gradio's launch() asks this route of its own server, without our token, and refuses to start
# when it fails; it only runs the app's startup events once, so it may skip the token check
# (Host and Origin still apply).
TOKENLESS_ROUTES = frozenset({("GET", "/gradio_api/startup-events")})


def split_host(value: str) -> tuple[str, str | None]:
    """`Host`/netloc → (name, port): lower-case, IPv6 brackets and a trailing dot removed."""
    value = value.strip().lower()
    port = None
    if value.startswith("["):
        name, _, rest = value[1:].partition("]")
        if rest.startswith(":"):
            port = rest[1:]
    elif value.count(":") == 1:
        name, _, port = value.partition(":")
    else:
        name = value  # a bare IPv6 address has several colons and no port
    return name.rstrip("."), port or None


def allowed_hosts(bind_host: str, extra: tuple[str, ...] | list[str] = ()) -> frozenset[str]:
    """The names this app answers to: loopback, the address it is bound to, and `--allowed-host` values."""
    names = set(LOOPBACK_HOSTS)
    if bind_host not in WILDCARD_BINDS:
        bracketed = f"[{bind_host}]" if ":" in bind_host and not bind_host.startswith("[") else bind_host  # IPv6
        names.add(split_host(bracketed)[0])
    for name in extra:
        names.add(split_host(name)[0])
    return frozenset(names)


def cookie_name(port: int) -> str:
    # Cookies are shared by all ports of a host, so two apps on one machine need different names.
    return f"rloo_studio_token_{port}"


@dataclass
class Refusal:
    status: int
    reason: str  # one line, shown as it is
    page: str | None = None  # HTML for a browser opening the page


@dataclass
class Policy:
    """What the app accepts. `hosts` may grow after launch (a share link's host is known only then)."""

    hosts: set[str]
    port: int
    token: str | None
    relink_command: str = "rloo-studio ui --print-url"

    def _token_in(self, headers: dict[str, list[str]], query: str) -> tuple[bool, bool]:
        """(token given, came from ?token=) for this request."""
        assert self.token is not None
        for value in headers.get("authorization", []):
            scheme, _, given = value.partition(" ")
            if scheme.lower() == "bearer" and hmac.compare_digest(given.strip().encode(), self.token.encode()):
                return True, False
        name = cookie_name(self.port)
        for value in headers.get("cookie", []):
            for part in value.split(";"):
                key, _, given = part.strip().partition("=")
                if key == name and hmac.compare_digest(given.encode(), self.token.encode()):
                    return True, False
        for key, given in parse_qsl(query, keep_blank_values=True):
            if key == "token" and hmac.compare_digest(given.encode(), self.token.encode()):
                return True, True
        return False, False

    def check(self, method: str, path: str, query: str, headers: dict[str, list[str]]) -> tuple[Refusal | None, bool]:
        """(why the request is refused or None, whether to set the token cookie on the response)."""
        hosts = headers.get("host", [])
        if len(hosts) != 1:
            return Refusal(403, "RLOO Studio refused this request: it must name exactly one Host."), False
        host, host_port = split_host(hosts[0])
        if host not in self.hosts:
            names = ", ".join(sorted(f"[{h}]" if ":" in h else h for h in self.hosts))
            return Refusal(403, f"RLOO Studio refused this request: it was addressed to host '{host}', but this app "
                                f"answers only to {names} (a web page may be reaching it through DNS rebinding); "
                                f"if you meant to use that name, start the app with --allowed-host {host or 'NAME'}."), False
        for origin in headers.get("origin", []):
            parts = urlsplit(origin.strip())
            try:
                origin_name, origin_port = split_host(parts.netloc) if parts.scheme in ("http", "https") else ("", None)
            except ValueError:
                origin_name, origin_port = "", None
            if (origin_name, origin_port) != (host, host_port):
                own = f"{host}:{host_port}" if host_port else host
                return Refusal(403, f"RLOO Studio refused this request: it came from a page at {origin.strip()}, "
                                    f"not from the app's own page at {own}."), False
        if self.token is None or (method, path) in TOKENLESS_ROUTES:
            return None, False
        ok, from_query = self._token_in(headers, query)
        if ok:
            return None, from_query
        reason = (f"RLOO Studio needs its launch token: open the link printed when it started (it ends in "
                  f"?token=...), or send 'Authorization: Bearer TOKEN'; `{self.relink_command}` prints the link again.")
        return Refusal(401, reason, self.token_page()), False

    def token_page(self) -> str:
        command = html.escape(self.relink_command)
        return f"""<!doctype html>
<html lang="en"><head><meta charset="utf-8"><title>RLOO Studio: open the app's link</title>
<style>body{{font-family:system-ui,sans-serif;max-width:40em;margin:4em auto;line-height:1.5;padding:0 1em}}
code{{background:#f2f2f2;padding:0 .3em}}</style></head>
<body><h1>Open RLOO Studio with its link</h1>
<p>This page needs the link that was printed when RLOO Studio started. It looks like
<code>http://127.0.0.1:{self.port}/?token=...</code>. The token keeps other web pages and other
users of this computer from running code through the app.</p>
<p>To print the link again, run this in the folder where you started RLOO Studio:</p>
<p><code>{command}</code></p>
<form method="get" action="/"><label>Or paste the token here: <input name="token" autocomplete="off" size="46"></label>
<button type="submit">Open</button></form>
</body></html>
"""


def _headers(scope) -> dict[str, list[str]]:
    found: dict[str, list[str]] = {}
    for key, value in scope.get("headers", []):
        found.setdefault(key.decode("latin-1").lower(), []).append(value.decode("latin-1"))
    return found


class Wall:
    """ASGI middleware applying a `Policy` to every HTTP and websocket request."""

    def __init__(self, app, policy: Policy):
        self.app = app
        self.policy = policy

    async def __call__(self, scope, receive, send):
        if scope["type"] not in ("http", "websocket"):
            await self.app(scope, receive, send)
            return
        headers = _headers(scope)
        method = scope.get("method", "GET") if scope["type"] == "http" else "WEBSOCKET"
        query = scope.get("query_string", b"").decode("latin-1")
        refusal, set_cookie = self.policy.check(method, scope.get("path", "/"), query, headers)
        if refusal is not None:
            if scope["type"] == "websocket":
                await receive()  # websocket.connect
                await send({"type": "websocket.close", "code": 1008, "reason": refusal.reason[:120]})
                return
            await self._refuse(refusal, headers, send)
            return
        if not set_cookie:
            await self.app(scope, receive, send)
            return
        cookie = (f"{cookie_name(self.policy.port)}={self.policy.token}; Path=/; HttpOnly; SameSite=Strict").encode("latin-1")

        async def send_with_cookie(message):
            if message["type"] == "http.response.start":
                message = {**message, "headers": [*message.get("headers", []), (b"set-cookie", cookie)]}
            await send(message)

        await self.app(scope, receive, send_with_cookie)

    @staticmethod
    async def _refuse(refusal: Refusal, headers: dict[str, list[str]], send) -> None:
        wants_page = refusal.page is not None and any("text/html" in v for v in headers.get("accept", []))
        body = (refusal.page if wants_page else refusal.reason + "\n").encode("utf-8")
        response_headers = [
            (b"content-type", b"text/html; charset=utf-8" if wants_page else b"text/plain; charset=utf-8"),
            (b"content-length", str(len(body)).encode()),
            (b"cache-control", b"no-store"),
        ]
        if refusal.status == 401:
            response_headers.append((b"www-authenticate", b'Bearer realm="RLOO Studio"'))
        await send({"type": "http.response.start", "status": refusal.status, "headers": response_headers})
        await send({"type": "http.response.body", "body": body})
