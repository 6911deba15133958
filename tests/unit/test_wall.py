"""Unit tests for rloo_studio.wall's rules (the served app is tested in tests/reliability/test_localhost_wall.py)."""

from __future__ import annotations

import pytest

from rloo_studio.wall import Policy, allowed_hosts, split_host

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


def test_the_token_may_come_as_bearer_cookie_or_query_and_only_the_query_sets_the_cookie():
    policy = _policy()
    assert _check(policy, authorization=f"bearer {TOKEN}") == (None, False)
    assert _check(policy, cookie=f"other=1; rloo_studio_token_7860={TOKEN}") == (None, False)
    assert _check(policy, method="GET", path="/", query=f"__theme=dark&token={TOKEN}") == (None, True)


@pytest.mark.parametrize("headers", [
    {}, {"authorization": "Bearer wrong"}, {"authorization": f"Basic {TOKEN}"}, {"cookie": f"rloo_studio_token_7861={TOKEN}"},
    {"cookie": "rloo_studio_token_7860=wrong"},
])
def test_without_the_right_token_the_request_is_refused_with_the_relink_command(headers):
    refusal, set_cookie = _check(_policy(), **headers)
    assert refusal.status == 401 and not set_cookie
    assert "rloo-studio ui --print-url" in refusal.reason and "rloo-studio ui --print-url" in refusal.page
    assert _check(_policy(), query="token=wrong")[0].status == 401


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

def _run_asgi(scope_type: str, headers: dict[str, str], query: str = "") -> tuple[list[dict], bool]:
    """(messages the middleware sent, whether the app behind it was reached)."""
    import asyncio

    from rloo_studio.wall import Wall

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

    scope = {"type": scope_type, "path": "/", "query_string": query.encode(), "method": "GET",
             "headers": [(k.lower().encode(), v.encode()) for k, v in headers.items()]}
    asyncio.run(Wall(inner, _policy())(scope, receive, send))
    return sent, bool(reached)


def test_a_websocket_from_another_page_is_closed_before_it_opens():
    sent, reached = _run_asgi("websocket", {"Host": "127.0.0.1:7860", "Origin": "https://evil.example",
                                            "Authorization": f"Bearer {TOKEN}"})
    assert not reached and sent[0]["type"] == "websocket.close" and sent[0]["code"] == 1008


def test_the_query_token_sets_the_cookie_on_the_apps_response():
    sent, reached = _run_asgi("http", {"Host": "127.0.0.1:7860"}, query=f"token={TOKEN}")
    assert reached and sent[0]["status"] == 200
    assert (b"set-cookie", f"rloo_studio_token_7860={TOKEN}; Path=/; HttpOnly; SameSite=Strict".encode()) in sent[0]["headers"]
    sent, reached = _run_asgi("http", {"Host": "127.0.0.1:7860", "Accept": "text/html"})
    assert not reached and sent[0]["status"] == 401 and b"rloo-studio ui --print-url" in sent[1]["body"]
