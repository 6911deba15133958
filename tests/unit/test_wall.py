"""Unit tests for rloo_studio.web.wall's rules (the served app is tested in tests/reliability/test_localhost_wall.py)."""

from __future__ import annotations

import pytest

from rloo_studio.web.wall import Policy, allowed_hosts, split_host

TOKEN = "unit-token"


def _check(policy: Policy, host: str | list[str] | None = "127.0.0.1:7860", method="POST", path="/gradio_api/upload",
           query="", **headers):
    found = {k.replace("_", "-"): [v] for k, v in headers.items()}
    if host is not None:
        found["host"] = host if isinstance(host, list) else [host]
    return policy.check(method, path, query, found)


def _policy(token=TOKEN, bind="127.0.0.1", extra=()):
    return Policy(hosts=set(allowed_hosts(bind, extra)), port=7860, token=token)


@pytest.mark.parametrize("value, expected", [
    ("localhost:7860", ("localhost", "7860")), ("LOCALHOST.:7860", ("localhost", "7860")), ("127.0.0.1", ("127.0.0.1", None)),
    ("[::1]:7860", ("::1", "7860")), ("[::1]", ("::1", None)), ("::1", ("::1", None)), ("example.com.", ("example.com", None)),
])
def test_split_host(value, expected):
    assert split_host(value) == expected


def test_loopback_bind_answers_to_loopback_names_only():
    assert allowed_hosts("127.0.0.1") == {"localhost", "127.0.0.1", "::1"}
    assert allowed_hosts("::1") == {"localhost", "127.0.0.1", "::1"}


def test_other_binds_add_the_bind_address_and_the_allowed_hosts():
    assert allowed_hosts("192.168.1.20", ["studio.lan", "Box.Example.:443"]) == {
        "localhost", "127.0.0.1", "::1", "192.168.1.20", "studio.lan", "box.example"}
    assert allowed_hosts("0.0.0.0") == {"localhost", "127.0.0.1", "::1"}  # no name means "all interfaces"
    assert "fe80::1" in allowed_hosts("fe80::1")


@pytest.mark.parametrize("host", ["localhost:7860", "localhost.:7860", "127.0.0.1", "[::1]:7860", "LocalHost:1"])
def test_loopback_spellings_pass(host):
    assert _check(_policy(), host, authorization=f"Bearer {TOKEN}") == (None, False)


@pytest.mark.parametrize("host", ["rebind.attacker.example:7860", "127.0.0.1.nip.io:7860", "localhost.attacker.example",
                                  "", "0.0.0.0:7860", ["127.0.0.1:7860", "evil.example:7860"]])
def test_other_hosts_are_refused_even_with_the_token(host):
    refusal, _ = _check(_policy(), host, authorization=f"Bearer {TOKEN}")
    assert refusal is not None and refusal.status == 403 and "\n" not in refusal.reason


def test_a_request_without_a_host_is_refused():
    refusal, _ = _check(_policy(), None, authorization=f"Bearer {TOKEN}")
    assert refusal.status == 403 and "exactly one Host" in refusal.reason


@pytest.mark.parametrize("origin", ["https://evil.example", "null", "http://localhost:7860", "http://127.0.0.1:3000",
                                    "http://127.0.0.1", "https://127.0.0.1.evil.example:7860", "file://"])
def test_an_origin_other_than_the_apps_own_is_refused(origin):
    refusal, _ = _check(_policy(), "127.0.0.1:7860", origin=origin, authorization=f"Bearer {TOKEN}")
    assert refusal is not None and refusal.status == 403 and origin in refusal.reason


def test_the_apps_own_origin_passes():
    assert _check(_policy(), "127.0.0.1:7860", origin="http://127.0.0.1:7860", authorization=f"Bearer {TOKEN}")[0] is None
    assert _check(_policy(), "localhost.:7860", origin="http://localhost:7860", authorization=f"Bearer {TOKEN}")[0] is None


def test_the_token_comes_in_the_authorization_header_only():
    policy = _policy()
    assert _check(policy, authorization=f"bearer {TOKEN}") == (None, False)
    # A cookie reaches every port of the host (another user's server on 127.0.0.1:OTHER receives it), and a query
    # string is written into logs and histories: neither opens the app.
    assert _check(policy, cookie=f"other=1; rloo_studio_token_7860={TOKEN}")[0].status == 401
    assert _check(policy, method="GET", path="/config", query=f"token={TOKEN}")[0].status == 401


@pytest.mark.parametrize("headers", [
    {}, {"authorization": "Bearer wrong"}, {"authorization": f"Basic {TOKEN}"}, {"cookie": f"rloo_studio_token_7861={TOKEN}"},
    {"cookie": f"rloo_studio_token_7860={TOKEN}"},
])
def test_without_the_right_token_the_request_is_refused_with_the_relink_command(headers):
    refusal, shell = _check(_policy(), **headers)
    assert refusal.status == 401 and not shell
    assert "rloo-studio ui --print-url" in refusal.reason and "rloo-studio ui --print-url" in refusal.page


def test_opening_the_page_without_the_header_gets_the_page_shell_which_holds_nothing_of_the_app():
    """A browser cannot add a header to a navigation, so the page itself is opened without one: it gets the shell,
    whose script takes the token from the link (or from this tab's storage) and asks for the app with the header."""
    policy = _policy()
    for method, query in (("GET", ""), ("GET", f"token={TOKEN}"), ("GET", "token=wrong"), ("HEAD", "")):
        assert _check(policy, method=method, path="/", query=query) == (None, True)
    assert _check(policy, method="GET", path="/", authorization=f"Bearer {TOKEN}") == (None, False)
    assert _check(policy, method="GET", path="/", authorization="Bearer wrong")[0].status == 401
    assert _check(policy, method="POST", path="/")[0].status == 401
    assert _check(policy, "evil.example:7860", method="GET", path="/")[0].status == 403
    shell = policy.shell_page()
    assert "sessionStorage" in shell and "Authorization" in shell and "replaceState" in shell
    assert "gradio_config" not in shell and TOKEN not in shell


def test_gradios_own_code_and_styles_need_no_token_and_nothing_else_does():
    policy = _policy()
    for path in ("/assets/index-abc.js", "/static/fonts/x.woff2", "/favicon.ico", "/theme.css", "/gradio_api/theme.css"):
        assert _check(policy, method="GET", path=path) == (None, False), path
    for method, path in (("POST", "/assets/index-abc.js"), ("GET", "/gradio_api/file=/tmp/x.txt"), ("GET", "/config"),
                         ("GET", "/assets/../config"), ("GET", "/gradio_api/info")):
        assert _check(policy, method=method, path=path)[0].status == 401, path


def test_without_a_token_host_and_origin_still_apply():
    policy = _policy(token=None)
    assert _check(policy) == (None, False)
    assert _check(policy, "evil.example:7860")[0].status == 403
    assert _check(policy, origin="https://evil.example")[0].status == 403


def test_gradios_own_startup_call_needs_no_token_but_the_right_host():
    policy = _policy()
    assert _check(policy, method="GET", path="/gradio_api/startup-events") == (None, False)
    assert _check(policy, "evil.example", method="GET", path="/gradio_api/startup-events")[0].status == 403
    assert _check(policy, method="POST", path="/gradio_api/startup-events")[0].status == 401


# ---- the middleware on raw ASGI messages --------------------------------------------------------------

def _run_asgi(scope_type: str, headers: dict[str, str], query: str = "", path: str = "/") -> tuple[list[dict], bool]:
    """(messages the middleware sent, whether the app behind it was reached)."""
    import asyncio

    from rloo_studio.web.wall import Wall

    reached = []

    async def inner(scope, receive, send):
        reached.append(scope["path"])
        await send({"type": "http.response.start", "status": 200, "headers": []})
        await send({"type": "http.response.body", "body": b"ok"})

    sent: list[dict] = []

    async def receive():
        return {"type": "websocket.connect"} if scope_type == "websocket" else {"type": "http.request", "body": b""}

    async def send(message):
        sent.append(message)

    scope = {"type": scope_type, "path": path, "query_string": query.encode(), "method": "GET",
             "headers": [(k.lower().encode(), v.encode()) for k, v in headers.items()]}
    asyncio.run(Wall(inner, _policy())(scope, receive, send))
    return sent, bool(reached)


def test_a_websocket_from_another_page_is_closed_before_it_opens():
    sent, reached = _run_asgi("websocket", {"Host": "127.0.0.1:7860", "Origin": "https://evil.example",
                                            "Authorization": f"Bearer {TOKEN}"})
    assert not reached and sent[0]["type"] == "websocket.close" and sent[0]["code"] == 1008


def test_no_response_sets_a_cookie_and_every_response_forbids_framing():
    sent, reached = _run_asgi("http", {"Host": "127.0.0.1:7860"}, query=f"token={TOKEN}")
    assert not reached and sent[0]["status"] == 200  # the page shell, answered by the wall itself
    assert b"sessionStorage" in sent[1]["body"]
    for headers in ({"Host": "127.0.0.1:7860", "Authorization": f"Bearer {TOKEN}"}, {"Host": "127.0.0.1:7860"},
                    {"Host": "evil.example"}):
        sent, _ = _run_asgi("http", headers, path="/config")
        found = dict(sent[0]["headers"])
        assert b"set-cookie" not in found
        assert found[b"x-frame-options"] == b"DENY" and found[b"content-security-policy"] == b"frame-ancestors 'none'"
        assert found[b"referrer-policy"] == b"no-referrer"


# ---- logins: attempts per client are limited -------------------------------------------------------------------

def test_login_attempts_back_off_per_client_and_a_right_login_clears_them():
    from rloo_studio.web.wall import LoginThrottle

    now = [1000.0]
    throttle = LoginThrottle(clock=lambda: now[0])
    for _ in range(LoginThrottle.FREE_TRIES):
        assert throttle.wait_s("127.0.0.1") == 0
        throttle.failed("127.0.0.1")
    assert throttle.wait_s("127.0.0.1") == 1.0 and throttle.wait_s("10.0.0.2") == 0  # another client is not held
    now[0] += 1.0
    assert throttle.wait_s("127.0.0.1") == 0
    throttle.failed("127.0.0.1")
    assert throttle.wait_s("127.0.0.1") == 2.0  # each further failure doubles the wait
    for _ in range(30):
        throttle.failed("127.0.0.1")
    assert throttle.wait_s("127.0.0.1") == LoginThrottle.MAX_WAIT_S
    now[0] += LoginThrottle.MAX_WAIT_S
    throttle.succeeded("127.0.0.1")
    assert throttle.wait_s("127.0.0.1") == 0


def test_a_login_held_back_is_answered_429_without_reaching_the_app():
    import asyncio

    from rloo_studio.web.wall import LoginThrottle, Wall

    now = [0.0]
    policy = _policy()
    policy.throttle = LoginThrottle(clock=lambda: now[0])
    statuses = []

    async def login(scope, receive, send):  # Gradio's /login: 400 for a wrong password
        statuses.append("reached")
        await send({"type": "http.response.start", "status": 400, "headers": []})
        await send({"type": "http.response.body", "body": b"Incorrect credentials."})

    async def attempt():
        sent = []

        async def receive():
            return {"type": "http.request", "body": b""}

        async def send(message):
            sent.append(message)

        scope = {"type": "http", "path": "/login", "query_string": b"", "method": "POST", "client": ("127.0.0.1", 5555),
                 "headers": [(b"host", b"127.0.0.1:7860"), (b"authorization", f"Bearer {TOKEN}".encode())]}
        await Wall(login, policy)(scope, receive, send)
        return sent

    answers = [asyncio.run(attempt()) for _ in range(100)]
    assert len(statuses) == LoginThrottle.FREE_TRIES
    held = answers[-1]
    assert held[0]["status"] == 429 and dict(held[0]["headers"])[b"retry-after"] == b"1"
    assert b"too many wrong logins" in held[1]["body"]


def test_the_login_is_compared_in_constant_time_for_the_name_and_the_password(monkeypatch):
    import hmac

    from rloo_studio.web import wall

    compared = []
    real = hmac.compare_digest
    monkeypatch.setattr(wall.hmac, "compare_digest", lambda a, b: compared.append((a, b)) or real(a, b))
    check = wall.login_check(("ada", "s3cret"))
    assert check("ada", "s3cret") is True
    assert check("ada", "wrong") is False and check("bob", "s3cret") is False and check("", "") is False
    # Both parts are compared every time, a wrong name included: how long a check takes says nothing about either.
    assert len(compared) == 8
