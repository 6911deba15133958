"""The checks every request to the app passes before any route: Host, Origin, the launch token, logins, framing.

Loopback is not a wall: a web page the person visits can reach 127.0.0.1 — by DNS rebinding (its
own name re-resolved to 127.0.0.1, so the browser sends `Host: attacker.example`) or by plain
cross-site requests (`Origin: https://attacker.example`) — and other users of a shared machine
can connect too, or run a server on another loopback port that the person opens. Since the app
runs reward code that arrives through its API, each request must
1. name this app as its Host: loopback names, the bind address or an `--allowed-host` (else 403);
2. when it carries an Origin, come from the app's own page: same host and port as its Host (else 403);
3. carry the launch token in `Authorization: Bearer TOKEN` (else 401, with a page that says how to
   get the link again). Never in a cookie: cookies are scoped to a host, not a port, so a server on
   another loopback port receives every cookie of 127.0.0.1. A browser cannot add a header to a
   navigation, so opening the page (`GET /`) without one answers the page shell (`shell_page`):
   its script takes the token from the link's `?token=` (then removes it from the address bar) or
   from this tab's sessionStorage (scoped to this port), adds the header to every request the page
   makes to its own origin, and asks for the app's page with it. Gradio's own code and styles
   (`PUBLIC_PREFIXES`) need no token: a module script or a font cannot carry a header, and they
   hold nothing of the person's.
Logins (`--auth`) are compared in constant time (`login_check`) and held back per client after a
few wrong ones (`LoginThrottle`); every answer forbids framing by another page.

`Wall` is plain ASGI middleware (no gradio import), so it sees HTTP, server-sent events and
websockets alike; it must be the outermost layer (before CORS answers a preflight). The rules are
in `Policy`, which tests can call directly.
"""

from __future__ import annotations

import hmac
import html
import time
from dataclasses import dataclass, field
from urllib.parse import urlsplit

LOOPBACK_HOSTS = frozenset({"localhost", "127.0.0.1", "::1"})
WILDCARD_BINDS = frozenset({"0.0.0.0", "::", ""})
# Gradio's launch() asks this route of its own server, without our token, and refuses to start
# when it fails; it only runs the app's startup events once, so it may skip the token check
# (Host and Origin still apply).
TOKENLESS_ROUTES = frozenset({("GET", "/gradio_api/startup-events")})
# Gradio's synchronous API route: it runs an event without the page's session, whose values (gr.State: the form's
# base settings, the data's columns) the app's events take as inputs, and so answered 500 to the documented inputs.
# Refused with the route that works (/gradio_api/call/NAME, which gradio_client and the page use).
SYNC_RUN_PREFIX = "/gradio_api/run/"


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


# Gradio's own built code, styles, fonts and icons: the page loads them with <script src>, <link> and CSS, which cannot
# carry a header. They are the same for every Gradio app; nothing of the person's is served under them.
PUBLIC_PREFIXES = ("/assets/", "/static/", "/svelte/")
PUBLIC_PATHS = frozenset({"/favicon.ico", "/manifest.json", "/theme.css", "/gradio_api/theme.css", "/robots.txt"})
# The page a person opens: without the header it is answered with the shell (see the module's docstring).
PAGE_PATHS = frozenset({"/"})
LOGIN_PATHS = frozenset({"/login", "/login/"})  # Gradio's login form posts here (with --auth)
# Sent with every answer: no other page may frame the app (a framed app can be clicked through by the page around it),
# and no address of the app (the first one holds ?token=) is sent on as a Referer.
SECURITY_HEADERS = ((b"x-frame-options", b"DENY"), (b"content-security-policy", b"frame-ancestors 'none'"),
                    (b"referrer-policy", b"no-referrer"))
STORAGE_KEY = "rloo-studio-token"  # the page's sessionStorage entry: one tab, one port


def login_check(credentials: tuple[str, str]):
    """Gradio's `auth` callable for one USER:PASSWORD: both parts compared in constant time, every time."""
    user, password = credentials[0].encode(), credentials[1].encode()

    def check(given_user: str, given_password: str) -> bool:
        user_ok = hmac.compare_digest(given_user.encode(), user)
        password_ok = hmac.compare_digest(given_password.encode(), password)
        return user_ok and password_ok

    return check


class LoginThrottle:
    """Wrong logins per client: after `FREE_TRIES` in a row, the next try waits 1 s, then 2, 4, ... up to `MAX_WAIT_S`
    after the last wrong one. A right login clears the count. Clients are told apart by address: on loopback all local
    users share one, so a stranger's guesses also hold the person back (for at most `MAX_WAIT_S`)."""

    FREE_TRIES = 5
    MAX_WAIT_S = 300.0

    def __init__(self, clock=time.monotonic):
        self.clock = clock
        self.failures: dict[str, tuple[int, float]] = {}  # client -> (wrong logins in a row, time of the last)

    def wait_s(self, client: str) -> float:
        count, last = self.failures.get(client, (0, 0.0))
        if count < self.FREE_TRIES:
            return 0.0
        wait = min(self.MAX_WAIT_S, 2.0 ** (count - self.FREE_TRIES))
        return max(0.0, last + wait - self.clock())

    def failed(self, client: str) -> None:
        count, _ = self.failures.get(client, (0, 0.0))
        self.failures[client] = (count + 1, self.clock())

    def succeeded(self, client: str) -> None:
        self.failures.pop(client, None)


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
    throttle: LoginThrottle = field(default_factory=LoginThrottle)

    def _has_token(self, headers: dict[str, list[str]]) -> bool:
        assert self.token is not None
        for value in headers.get("authorization", []):
            scheme, _, given = value.partition(" ")
            if scheme.lower() == "bearer" and hmac.compare_digest(given.strip().encode(), self.token.encode()):
                return True
        return False

    def check(self, method: str, path: str, query: str, headers: dict[str, list[str]]) -> tuple[Refusal | None, bool]:
        """(why the request is refused or None, whether to answer it with the page shell)."""
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
        reading = method in ("GET", "HEAD")
        if reading and (path in PUBLIC_PATHS or (path.startswith(PUBLIC_PREFIXES) and "/.." not in path)):
            return None, False
        if reading and path in PAGE_PATHS and not headers.get("authorization"):
            return None, True
        if self._has_token(headers):
            if path.startswith(SYNC_RUN_PREFIX):
                name = path[len(SYNC_RUN_PREFIX):].strip("/") or "NAME"
                return Refusal(404, f"RLOO Studio does not answer {SYNC_RUN_PREFIX}{name}: Gradio's synchronous route cannot "
                                    "give an event the page's own settings, which every call of this app reads, so it would "
                                    f"fail. Call it as the page does: POST the data to /gradio_api/call/{name}, then GET "
                                    f"/gradio_api/call/{name}/EVENT_ID for the result, or use gradio_client."), False
            return None, False
        reason = (f"RLOO Studio needs its launch token: open the link printed when it started (it ends in "
                  f"?token=...), or send 'Authorization: Bearer TOKEN'; `{self.relink_command}` prints the link again.")
        return Refusal(401, reason, self.token_page()), False

    def shell_page(self) -> str:
        """The page a browser opens: it holds nothing of the app; its script brings the app in with the token."""
        return f"""<!doctype html>
<html lang="en"><head><meta charset="utf-8"><title>RLOO Studio</title>
<style>body{{font-family:system-ui,sans-serif;max-width:40em;margin:4em auto;line-height:1.5;padding:0 1em}}
code{{background:#f2f2f2;padding:0 .3em}}</style></head>
<body><p id="opening">Opening RLOO Studio&hellip;</p>
<div id="relink" hidden>{self._relink_html()}</div>
<noscript>{self._relink_html()}<p>The app needs JavaScript.</p></noscript>
<script>(() => {{
  const key = {STORAGE_KEY!r};
  const address = new URL(location.href);
  const given = address.searchParams.get("token");
  if (given !== null) {{  // the printed link: keep the token in this tab only, and out of the address bar and history
    sessionStorage.setItem(key, given);
    address.searchParams.delete("token");
    history.replaceState(history.state, "", address.pathname + address.search + address.hash);
  }}
  const token = sessionStorage.getItem(key);
  const relink = (note) => {{
    document.getElementById("opening").hidden = true;
    if (note) document.getElementById("relink-note").textContent = note;
    document.getElementById("relink").hidden = false;
  }};
  if (!token) {{ relink(""); return; }}
  const own = (target) => new URL(target, location.href).origin === location.origin;
  const bearer = "Bearer " + token;
  const send = window.fetch.bind(window);
  window.fetch = (input, init) => {{
    const request = input instanceof Request;
    if (!own(request ? input.url : String(input))) return send(input, init);
    const headers = new Headers(init && init.headers !== undefined ? init.headers : (request ? input.headers : undefined));
    if (!headers.has("Authorization")) headers.set("Authorization", bearer);
    const answer = send(input, {{...(init || {{}}), headers}});
    // A login held back (429) is not one Gradio's login form knows: it would show nothing. Say why, and until when.
    answer.then((got) => {{ if (got.status === 429) got.clone().text().then((why) => window.alert(why)); }}, () => {{}});
    return answer;
  }};
  const open = XMLHttpRequest.prototype.open, sendBody = XMLHttpRequest.prototype.send;
  XMLHttpRequest.prototype.open = function (method, target, ...rest) {{
    this.rlooStudioOwn = own(String(target));
    return open.call(this, method, target, ...rest);
  }};
  XMLHttpRequest.prototype.send = function (body) {{
    if (this.rlooStudioOwn) this.setRequestHeader("Authorization", bearer);
    return sendBody.call(this, body);
  }};
  window.fetch(location.pathname + location.search, {{headers: {{Accept: "text/html"}}, cache: "no-store"}}).then(async (answer) => {{
    if (answer.status === 401) {{
      sessionStorage.removeItem(key);
      relink("The token this tab has is not the one of the app running now (it was restarted, or the link was mistyped).");
      return;
    }}
    const page = await answer.text();
    document.open();
    document.write(page);
    document.close();
    // A link to one of the app's files (an uploaded file's name) would be opened without the header and refused:
    // fetched with it instead, and saved as the link's file. (Added after document.open, which drops listeners.)
    document.addEventListener("click", (event) => {{
      const link = event.target instanceof Element ? event.target.closest("a[href]") : null;
      if (!link || !own(link.href) || !new URL(link.href).pathname.includes("/file=")) return;
      event.preventDefault();
      window.fetch(link.href).then((answer) => answer.ok ? answer.blob() : Promise.reject(answer.status)).then((blob) => {{
        const save = document.createElement("a");
        save.href = URL.createObjectURL(blob);
        save.download = link.getAttribute("download") || decodeURIComponent(new URL(link.href).pathname.split("/").pop());
        save.click();
        setTimeout(() => URL.revokeObjectURL(save.href), 60000);
      }});
    }}, true);
  }}, () => relink("The app did not answer: is it still running?"));
}})();</script>
</body></html>
"""

    def _relink_html(self) -> str:
        command = html.escape(self.relink_command)
        return f"""<h1>Open RLOO Studio with its link</h1>
<p id="relink-note"></p>
<p>This page needs the link that was printed when RLOO Studio started. It looks like
<code>http://127.0.0.1:{self.port}/?token=...</code>. The token keeps other web pages and other
users of this computer from running code through the app; each browser tab keeps it until it is closed.</p>
<p>To print the link again, run this in the folder where you started RLOO Studio:</p>
<p><code>{command}</code></p>
<form method="get" action="/"><label>Or paste the token here: <input name="token" autocomplete="off" size="46"></label>
<button type="submit">Open</button></form>"""

    def token_page(self) -> str:
        return f"""<!doctype html>
<html lang="en"><head><meta charset="utf-8"><title>RLOO Studio: open the app's link</title>
<style>body{{font-family:system-ui,sans-serif;max-width:40em;margin:4em auto;line-height:1.5;padding:0 1em}}
code{{background:#f2f2f2;padding:0 .3em}}</style></head>
<body>{self._relink_html()}
</body></html>
"""


def _headers(scope) -> dict[str, list[str]]:
    found: dict[str, list[str]] = {}
    for key, value in scope.get("headers", []):
        found.setdefault(key.decode("latin-1").lower(), []).append(value.decode("latin-1"))
    return found


def _with_security_headers(send):
    async def sending(message):
        if message["type"] == "http.response.start":
            kept = [(k, v) for k, v in message.get("headers", []) if k.lower() not in dict(SECURITY_HEADERS)]
            message = {**message, "headers": [*kept, *SECURITY_HEADERS]}
        await send(message)

    return sending


class Wall:
    """ASGI middleware applying a `Policy` to every HTTP and websocket request; the outermost layer of the app."""

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
        path = scope.get("path", "/")
        refusal, shell = self.policy.check(method, path, query, headers)
        if scope["type"] == "websocket":
            if refusal is not None or shell:
                await receive()  # websocket.connect
                reason = refusal.reason if refusal is not None else "RLOO Studio needs its launch token"
                await send({"type": "websocket.close", "code": 1008, "reason": reason[:120]})
                return
            await self.app(scope, receive, send)
            return
        send = _with_security_headers(send)
        if refusal is not None:
            await self._refuse(refusal, headers, send)
            return
        if shell:
            await self._answer(send, 200, "text/html; charset=utf-8", self.policy.shell_page(), body=method != "HEAD")
            return
        if method == "POST" and path in LOGIN_PATHS:
            await self._login(scope, receive, send)
            return
        await self.app(scope, receive, send)

    async def _login(self, scope, receive, send) -> None:
        """Gradio's login, held back after wrong ones (Gradio answers 200 to a right login, 400 to a wrong one)."""
        throttle = self.policy.throttle
        client = (scope.get("client") or ("?", 0))[0]
        wait = throttle.wait_s(client)
        if wait > 0:
            seconds = max(1, round(wait))
            await self._answer(send, 429, "text/plain; charset=utf-8",
                               f"RLOO Studio refused this login: too many wrong logins from this address; try again in "
                               f"{seconds} s (each further wrong one doubles the wait).\n",
                               extra=[(b"retry-after", str(seconds).encode())])
            return

        async def watching(message):
            if message["type"] == "http.response.start":
                if message["status"] == 200:
                    throttle.succeeded(client)
                elif 400 <= message["status"] < 500:
                    throttle.failed(client)
            await send(message)

        await self.app(scope, receive, watching)

    @staticmethod
    async def _answer(send, status: int, content_type: str, text: str, extra=(), body: bool = True) -> None:
        data = text.encode("utf-8")
        await send({"type": "http.response.start", "status": status, "headers": [
            (b"content-type", content_type.encode()), (b"content-length", str(len(data)).encode()),
            (b"cache-control", b"no-store"), *extra]})
        await send({"type": "http.response.body", "body": data if body else b""})

    @classmethod
    async def _refuse(cls, refusal: Refusal, headers: dict[str, list[str]], send) -> None:
        wants_page = refusal.page is not None and any("text/html" in v for v in headers.get("accept", []))
        extra = [(b"www-authenticate", b'Bearer realm="RLOO Studio"')] if refusal.status == 401 else []
        await cls._answer(send, refusal.status, "text/html; charset=utf-8" if wants_page else "text/plain; charset=utf-8",
                          refusal.page if wants_page else refusal.reason + "\n", extra)
