"""Loopback is not a wall: requests that a web page or another user could send are refused by the served app.

Against a real served app over HTTP, with explicit Host, Origin, Authorization and Cookie headers:
a DNS-rebinding Host, a cross-site Origin (a CORS preflight included), a missing launch token and
the token in a cookie or an address are each refused (403/401) for the page, the API, uploads,
files and queue joins, and reward code sent that way never runs; the same call from 127.0.0.1 with
the token in its header does run. Opening the page answers the shell, which holds nothing of the
app; no answer sets a cookie or may be framed. Then the real clients: gradio_client with the token,
Chromium opening the printed link while a server on another loopback port records and replays what
the browser sends it, and the command line: the printed link, `--print-url`, `--inbrowser`,
SIGTERM, `--no-token`."""

from __future__ import annotations

import http.client
import json
import os
import re
import stat
import subprocess
import sys
import tempfile
import threading
import time
import uuid
from contextlib import contextmanager
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path

import pytest

from helpers import ROOT, run_cli

from helpers.app import BEARER, TOKEN, connect, free_port, page_url, served_app
from helpers.browser import CHROMIUM, CHROMIUM_ARGS, NEEDS_CHROMIUM, open_tab

REBIND = "rebind.attacker.example"
EMPTY_TABLE = {"headers": ["use", "function", "weight"], "data": []}


def send(port: int, method: str, path: str, headers: dict | None = None, body: bytes | None = None):
    """One request with exactly these headers (Host defaults to 127.0.0.1:PORT): (status, headers, text)."""
    conn = http.client.HTTPConnection("127.0.0.1", port, timeout=60)
    try:
        conn.putrequest(method, path, skip_host=True, skip_accept_encoding=True)
        for key, value in {"Host": f"127.0.0.1:{port}", **(headers or {})}.items():
            conn.putheader(key, value)
        if body is not None:
            conn.putheader("Content-Length", str(len(body)))
        conn.endheaders(body)
        resp = conn.getresponse()
        return resp.status, resp.headers, resp.read().decode(errors="replace")
    finally:
        conn.close()


def call_body(code: str) -> bytes:
    return json.dumps({"data": [code, EMPTY_TABLE]}).encode()


def upload_body() -> tuple[bytes, str]:
    boundary = uuid.uuid4().hex
    body = (f"--{boundary}\r\nContent-Disposition: form-data; name=\"files\"; filename=\"rewards.py\"\r\n"
            f"Content-Type: text/x-python\r\n\r\nprint('uploaded')\n\r\n--{boundary}--\r\n").encode()
    return body, f"multipart/form-data; boundary={boundary}"


def queue_join_body(code: str, fn_index: int = 0) -> bytes:
    return json.dumps({"data": [code, EMPTY_TABLE], "fn_index": fn_index, "session_hash": uuid.uuid4().hex}).encode()


def check_rewards_index(port: int) -> int:
    """The queue's index for the page's "Check" button (the /check_rewards call)."""
    config = json.loads(send(port, "GET", "/config", BEARER)[2])
    found = [d["id"] for d in config["dependencies"] if d.get("api_name") == "check_rewards"]
    assert len(found) == 1, found
    return found[0]


def marker_code(marker: Path, label: str) -> str:
    """Reward code that, when the app runs it, appends LABEL to the marker file."""
    return (f"open({str(marker)!r}, 'a').write({label!r} + '\\n')\n"
            "def brevity(completions, **kwargs):\n    return [1.0 for _ in completions]\n")


@pytest.fixture(scope="module")
def app(tmp_path_factory):
    """(port, runs_dir) of one app served for this module, with the helpers' known token."""
    runs_dir = tmp_path_factory.mktemp("wall") / "runs"
    with served_app(runs_dir) as url:
        yield int(url.rstrip("/").rsplit(":", 1)[1]), runs_dir


def _uploaded_file(port: int) -> str:
    """A file the app itself serves (uploaded with the token), to ask for under a foreign Host."""
    body, ctype = upload_body()
    status, _, text = send(port, "POST", "/gradio_api/upload", {"Content-Type": ctype, **BEARER}, body)
    assert status == 200, (status, text)
    return json.loads(text)[0]


def test_a_foreign_host_is_refused_for_the_page_the_api_uploads_and_files(app):
    port, _ = app
    served_file = _uploaded_file(port)
    assert send(port, "GET", f"/gradio_api/file={served_file}", BEARER)[0] == 200  # reachable with the right Host
    body, ctype = upload_body()
    requests = [("GET", "/", {}, None), ("GET", "/config", {}, None), ("GET", "/gradio_api/info", {}, None),
                ("POST", "/gradio_api/call/check_rewards", {"Content-Type": "application/json"}, call_body("x = 1\n")),
                ("POST", "/gradio_api/upload", {"Content-Type": ctype}, body),
                ("GET", f"/gradio_api/file={served_file}", {}, None)]
    for host in (f"{REBIND}:{port}", REBIND, f"127.0.0.1.{REBIND}:{port}", f"localhost.{REBIND}"):
        for method, path, headers, data in requests:
            # The token is sent too: the Host alone is reason to refuse.
            status, _, text = send(port, method, path, {"Host": host, **headers, **BEARER}, data)
            assert status == 403, (host, path, status, text[:200])
            assert f"addressed to host '{host.split(':')[0]}'" in text and text.count("\n") == 1, text


@pytest.mark.parametrize("host", ["localhost:{port}", "localhost.:{port}", "LOCALHOST:{port}", "127.0.0.1", "[::1]:{port}"])
def test_every_spelling_of_loopback_is_served(app, host):
    port, _ = app
    status, _, text = send(port, "GET", "/config", {"Host": host.format(port=port), **BEARER})
    assert status == 200 and json.loads(text)["title"] == "RLOO Studio"


@pytest.mark.parametrize("origin", ["https://evil.example", "null", "http://localhost:{port}", "http://127.0.0.1:{other}"])
def test_a_foreign_origin_is_refused_for_a_call_an_upload_and_a_queue_join(app, origin):
    port, _ = app
    origin = origin.format(port=port, other=port + 1)
    body, ctype = upload_body()
    for path, ctype_, data in (("/gradio_api/call/check_rewards", "application/json", call_body("x = 1\n")),
                               ("/gradio_api/upload", ctype, body),
                               ("/gradio_api/queue/join", "application/json", queue_join_body("x = 1\n"))):
        status, _, text = send(port, "POST", path, {"Origin": origin, "Content-Type": ctype_, **BEARER}, data)
        assert status == 403, (origin, path, status, text[:200])
        assert f"came from a page at {origin}" in text


def test_the_apps_own_origin_is_accepted(app):
    port, _ = app
    status, _, text = send(port, "POST", "/gradio_api/call/check_rewards",
                           {"Origin": f"http://127.0.0.1:{port}", "Content-Type": "application/json", **BEARER}, call_body("x = 1\n"))
    assert status == 200 and "event_id" in json.loads(text)


def _call_and_wait(port: int, code: str, headers: dict) -> str:
    """Call /check_rewards over the HTTP API and read its result stream to the end."""
    status, _, text = send(port, "POST", "/gradio_api/call/check_rewards", {"Content-Type": "application/json", **headers},
                           call_body(code))
    assert status == 200, (status, text)
    event_id = json.loads(text)["event_id"]
    status, _, stream = send(port, "GET", f"/gradio_api/call/check_rewards/{event_id}", headers)
    assert status == 200 and "event: complete" in stream, stream[-500:]
    return stream


@pytest.mark.usefixtures("outside_the_sandbox")  # the marker file shows whether code ran: a write the sandbox refuses
def test_reward_code_sent_past_the_wall_never_runs_and_with_the_token_it_does(app, tmp_path):
    port, _ = app
    marker = tmp_path / "marker.txt"
    fn_index = check_rewards_index(port)
    attempts = {
        "dns-rebinding": {"Host": f"{REBIND}:{port}", "Origin": f"http://{REBIND}:{port}"},
        "dns-rebinding-with-token": {"Host": f"{REBIND}:{port}", "Origin": f"http://{REBIND}:{port}", **BEARER},
        "cross-site-with-token": {"Origin": "https://evil.example", **BEARER},
        "no-token": {},
        "wrong-token": {"Authorization": "Bearer not-the-token"},
        "cookie-of-another-port": {"Cookie": f"rloo_studio_token_{port + 1}={TOKEN}"},
        # Cookies are scoped to a host, not a port: a server on another loopback port receives this one too.
        "cookie-of-this-port": {"Cookie": f"rloo_studio_token_{port}={TOKEN}"},
        "token-in-a-header-of-its-own": {"X-Token": TOKEN},
    }
    for label, headers in attempts.items():
        for path, data in (("/gradio_api/call/check_rewards", call_body(marker_code(marker, label))),
                           ("/gradio_api/queue/join", queue_join_body(marker_code(marker, label), fn_index))):
            status, _, text = send(port, "POST", path, {"Content-Type": "application/json", **headers}, data)
            assert status in (401, 403), (label, path, status, text[:300])
    # The queue runs calls in order: had any attempt above been let in, it would have run by now.
    stream = _call_and_wait(port, marker_code(marker, "allowed"), BEARER)
    assert "1 function found" in stream
    assert marker.read_text().splitlines() == ["allowed"]


def test_the_link_answers_the_page_shell_and_no_answer_sets_a_cookie_or_may_be_framed(app):
    port, _ = app
    for query in (f"?token={TOKEN}", "", "?token=wrong"):
        status, headers, page = send(port, "GET", f"/{query}", {"Accept": "text/html"})
        # The shell: nothing of the app (its config, its values) until the page asks again with the header.
        assert status == 200 and "set-cookie" not in headers, (query, status)
        assert "sessionStorage" in page and "gradio_config" not in page and TOKEN not in page
        assert headers["x-frame-options"] == "DENY" and headers["content-security-policy"] == "frame-ancestors 'none'"
        assert headers["referrer-policy"] == "no-referrer"
    status, headers, page = send(port, "GET", "/", {"Accept": "text/html", **BEARER})
    assert status == 200 and "window.gradio_config" in page and "set-cookie" not in headers
    assert headers["x-frame-options"] == "DENY" and headers["content-security-policy"] == "frame-ancestors 'none'"
    assert send(port, "GET", f"/config?token={TOKEN}")[0] == 401  # a token in the address opens only the shell
    status, headers, text = send(port, "GET", "/gradio_api/info")
    assert status == 401 and headers["www-authenticate"].startswith("Bearer") and text.count("\n") == 1
    status, headers, page = send(port, "GET", "/config", {"Accept": "text/html,application/xhtml+xml"})
    assert status == 401 and "Open RLOO Studio with its link" in page and "rloo-studio ui --print-url" in page


def test_a_cors_preflight_meets_the_wall_first(app):
    port, _ = app
    for host in (f"[::1]:{port}", f"127.0.0.1:{port}", f"localhost:{port}"):
        status, headers, text = send(port, "OPTIONS", "/gradio_api/queue/join", {
            "Host": host, "Origin": "https://evil.example", "Access-Control-Request-Method": "POST",
            "Access-Control-Request-Headers": "content-type"})
        assert status == 403 and "came from a page at https://evil.example" in text, (host, status, text)
        assert "access-control-allow-origin" not in headers and "access-control-allow-credentials" not in headers


def test_what_the_app_does_not_use_is_off_and_uploads_land_in_a_private_folder(app):
    port, _ = app
    for path in ("/monitoring", "/monitoring/summary", "/gradio_api/runs"):
        status, _, text = send(port, "GET", path, BEARER)
        assert status in (403, 404), (path, status, text[:200])
    served_file = Path(_uploaded_file(port))
    assert not served_file.is_relative_to(Path(tempfile.gettempdir()) / "gradio")
    folder = Path(os.environ["GRADIO_TEMP_DIR"])
    assert served_file.is_relative_to(folder) and stat.S_IMODE(folder.stat().st_mode) == 0o700


@pytest.mark.usefixtures("outside_the_sandbox")  # the marker file shows whether code ran: a write the sandbox refuses
def test_gradio_client_works_with_the_token_and_not_without(app, tmp_path):
    from gradio_client import Client

    port, _ = app
    url = f"http://127.0.0.1:{port}/"
    marker = tmp_path / "marker.txt"
    message, _ = connect(url).predict(marker_code(marker, "client"), EMPTY_TABLE, api_name="/check_rewards")
    assert "1 function found: `brevity`" in message and marker.read_text() == "client\n"
    with pytest.raises(Exception, match="credentials were not provided"):  # gradio_client's words for a 401
        Client(url, verbose=False)


# ---- a real browser ---------------------------------------------------------------------------------

@contextmanager
def other_server(app_port: int):
    """Another user's server on another loopback port: it writes down every request the person's browser sends it, and
    its page tries to frame the app. Yields (its address, the requests: (path, headers))."""
    seen: list[tuple[str, dict]] = []

    class Handler(BaseHTTPRequestHandler):
        def do_GET(self):
            seen.append((self.path, {k.lower(): v for k, v in self.headers.items()}))
            body = (f"<!doctype html><title>another server</title><h1>Something else</h1>"
                    f"<iframe id=framed src='http://127.0.0.1:{app_port}/' onload=\"document.title='framed'\"></iframe>").encode()
            self.send_response(200)
            self.send_header("Content-Type", "text/html")
            self.send_header("Content-Length", str(len(body)))
            self.end_headers()
            self.wfile.write(body)

        def log_message(self, *args):
            pass

    server = ThreadingHTTPServer(("127.0.0.1", free_port()), Handler)
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    try:
        yield f"http://127.0.0.1:{server.server_address[1]}", seen
    finally:
        server.shutdown()
        server.server_close()


@pytest.mark.slow
@NEEDS_CHROMIUM
@pytest.mark.usefixtures("outside_the_sandbox")  # the marker file shows whether code ran: a write the sandbox refuses
def test_a_server_on_another_loopback_port_gets_nothing_that_runs_code_and_cannot_frame_the_app(runs_dir, tmp_path):
    """Issue 40: the person opens the app's link, then a page of another user's server on 127.0.0.1:OTHER (a link,
    a bookmark). Whatever the browser sends that server (cookies, referrer, addresses), replayed against the app,
    runs nothing; its page cannot frame the app. Meanwhile the app works in its tab, after a reload too."""
    from playwright.sync_api import expect, sync_playwright

    marker = tmp_path / "marker.txt"
    with served_app(runs_dir) as url, sync_playwright() as pw:
        port = int(url.rstrip("/").rsplit(":", 1)[1])
        with other_server(port) as (other, seen):
            browser = pw.chromium.launch(executable_path=CHROMIUM, headless=True, args=CHROMIUM_ARGS)
            try:
                context = browser.new_context(viewport={"width": 1400, "height": 1100})
                page = context.new_page()
                page.set_default_timeout(60_000)
                refused: list[str] = []  # every request of the page that the wall refused (none carries no header)
                page.on("response", lambda r: refused.append(r.url) if r.status in (401, 403) else None)
                page.goto(page_url(url))
                expect(page.locator("#model-name input")).to_have_value("demo", timeout=90_000)
                assert page.url == url  # the token left the address bar (and the history)
                page.reload()
                expect(page.locator("#model-name input")).to_have_value("demo", timeout=90_000)

                # The person opens the other server's page: in this tab's context, in a new tab, and back in the app's tab.
                elsewhere = context.new_page()
                elsewhere.goto(other + "/a-bookmark")
                expect(elsewhere).to_have_title("framed", timeout=60_000)
                framed = [f for f in elsewhere.frames if f is not elsewhere.main_frame]
                assert len(framed) == 1 and framed[0].locator("gradio-app, #opening").count() == 0  # refused, not shown
                page.goto(other + "/from-the-app-tab")
                assert {"/a-bookmark", "/from-the-app-tab"} <= {path for path, _ in seen}  # (and the browser's /favicon.ico)
                assert TOKEN not in json.dumps(seen)
                # Everything it got (each request's cookies, referrer, authorization), replayed against the app as calls
                # that would run code, also with the token the link had in its address: refused, nothing runs.
                replays = [{k: v for k, v in headers.items() if k in ("cookie", "referer", "authorization")} for _, headers in seen]
                calls = [("/gradio_api/call/check_rewards", call_body), ("/gradio_api/queue/join", queue_join_body),
                         (f"/gradio_api/call/check_rewards?token={TOKEN}", call_body)]
                for stolen in replays:
                    for path, body in calls:
                        status, _, text = send(port, "POST", path, {"Content-Type": "application/json", **stolen},
                                               body(marker_code(marker, "stolen")))
                        assert status == 401, (stolen, path, status, text[:300])
                    status, _, page_text = send(port, "GET", "/", {"Accept": "text/html", **stolen})
                    assert "gradio_config" not in page_text  # the page it can fetch is the shell, which holds nothing

                # The app's own tab still works: back to it (its tab keeps the token), an action runs the code once.
                page.go_back()
                expect(page.locator("#model-name input")).to_have_value("demo", timeout=90_000)
                open_tab(page, "3 · Rewards")
                page.locator("#reward-code .cm-content").click()
                page.keyboard.press("Control+A")
                page.keyboard.press("Delete")
                page.keyboard.insert_text(marker_code(marker, "browser"))
                page.locator("#check-code").click()
                expect(page.locator("#code-check")).to_contain_text("1 function found: brevity", timeout=60_000)
                assert set(marker.read_text().splitlines()) == {"browser"}  # leaving the editor checks too: once or twice
                # An uploaded file's link (a navigation, which cannot carry the header) still gives the file.
                data = tmp_path / "prompts.jsonl"
                data.write_text('{"prompt": "1+1?", "answer": "2"}\n')
                open_tab(page, "2 · Data")
                page.get_by_label("A file on this computer").check()
                page.locator("#data-upload input[type=file]").set_input_files(str(data))
                expect(page.locator("#data-path input, #data-path textarea").first).to_have_value(re.compile("prompts.jsonl$"), timeout=60_000)
                with page.expect_download() as download:
                    page.locator("#data-upload a[href*='file=']").first.click()
                assert Path(download.value.path()).read_text() == data.read_text()
                assert refused == []

                # A tab without the link gets the page that says how to get it.
                stranger = browser.new_page()
                stranger.goto(url)
                expect(stranger.locator("h1")).to_have_text("Open RLOO Studio with its link")
                expect(stranger.locator("body")).to_contain_text("rloo-studio ui --print-url")
            finally:
                browser.close()


@pytest.mark.slow
@NEEDS_CHROMIUM
def test_with_a_login_the_page_logs_in_through_the_shell_and_says_when_logins_are_held_back(runs_dir):
    """With --auth the shell writes in Gradio's login page; a right login reloads into the app (the tab keeps the
    token). After the free tries, the page says that logins are held back (Gradio's form alone would show nothing)."""
    from playwright.sync_api import expect, sync_playwright

    from rloo_studio.web.wall import LoginThrottle

    with served_app(runs_dir, auth=("ada", "s3cret")) as url, sync_playwright() as pw:
        browser = pw.chromium.launch(executable_path=CHROMIUM, headless=True, args=CHROMIUM_ARGS)
        try:
            page = browser.new_page(viewport={"width": 1400, "height": 1100})
            page.set_default_timeout(60_000)
            page.goto(page_url(url))
            user, password = page.locator("input[type=text]").first, page.locator("input[type=password]").first
            for i in range(LoginThrottle.FREE_TRIES):
                user.fill("ada")
                password.fill(f"wrong{i}")
                with page.expect_response(lambda r: r.url.endswith("/login")) as answer:
                    page.get_by_role("button", name="Login").click()
                assert answer.value.status == 400
            user.fill("ada")
            password.fill("s3cret")  # the right one, held back all the same: the page says so
            said: list[str] = []  # the alert is modal: dismissed at once, so that the click can end
            page.on("dialog", lambda dialog: (said.append(dialog.message), dialog.dismiss()))
            with page.expect_event("dialog"):
                page.get_by_role("button", name="Login").click(no_wait_after=True)
            assert "too many wrong logins" in said[0] and "try again in" in said[0], said
        finally:
            browser.close()
    with served_app(runs_dir, auth=("ada", "s3cret")) as url, sync_playwright() as pw:
        browser = pw.chromium.launch(executable_path=CHROMIUM, headless=True, args=CHROMIUM_ARGS)
        try:
            page = browser.new_page(viewport={"width": 1400, "height": 1100})
            page.set_default_timeout(60_000)
            page.goto(page_url(url))
            page.locator("input[type=text]").first.fill("ada")
            page.locator("input[type=password]").first.fill("s3cret")
            page.get_by_role("button", name="Login").click()
            expect(page.locator("#model-name input")).to_have_value("demo", timeout=90_000)
            assert page.url == url
        finally:
            browser.close()


# ---- the command line ---------------------------------------------------------------------------------

def _start_cli(tmp_path: Path, *args: str, env: dict | None = None):
    port = free_port()
    full_env = {k: v for k, v in os.environ.items() if k != "RLOO_STUDIO_TOKEN"}
    proc = subprocess.Popen([sys.executable, "-m", "rloo_studio.cli", "ui", "--port", str(port), "--runs-dir",
                             str(tmp_path / "runs"), *args], cwd=ROOT, env={**full_env, **(env or {})},
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    first = proc.stdout.readline()
    assert first.startswith("RLOO Studio is running at "), (first, proc.stderr.read() if proc.poll() is not None else "")
    return proc, port, first.split()[5]


def _wait_served(port: int, proc) -> None:
    while True:
        assert proc.poll() is None, proc.stderr.read()
        try:
            send(port, "HEAD", "/")
            return
        except OSError:
            time.sleep(0.3)


def _stop(proc) -> None:
    proc.terminate()
    proc.wait(timeout=60)


def test_the_printed_link_carries_a_fresh_token_that_only_this_user_can_read_back(tmp_path):
    proc, port, link = _start_cli(tmp_path)
    try:
        _wait_served(port, proc)
        prefix = f"http://127.0.0.1:{port}/?token="
        assert link.startswith(prefix) and len(link) - len(prefix) >= 40
        token = link[len(prefix):]
        assert send(port, "GET", f"/?token={token}")[0] == 200
        assert send(port, "GET", "/config", {"Authorization": f"Bearer {token}"})[0] == 200
        assert send(port, "GET", "/config")[0] == 401
        saved = tmp_path / "runs" / ".studio" / "launch" / f"ui-{port}.json"
        assert stat.S_IMODE(saved.stat().st_mode) == 0o600
        again = run_cli("ui", "--print-url", "--runs-dir", tmp_path / "runs", cwd=tmp_path)
        assert again.returncode == 0 and again.stdout.strip() == link
    finally:
        _stop(proc)
    gone = run_cli("ui", "--print-url", "--runs-dir", tmp_path / "runs", cwd=tmp_path)
    assert gone.returncode == 2 and "no RLOO Studio is running from the runs folder" in gone.stderr


def test_a_known_token_from_the_environment_is_used_and_inbrowser_puts_no_secret_on_the_browsers_command_line(tmp_path):
    opened = tmp_path / "opened.txt"
    # $BROWSER is the command Python's webbrowser module runs; this one writes down the address it was given.
    browser = f"{sys.executable} -c \"import sys; open({str(opened)!r}, 'w').write(sys.argv[1])\" %s"
    token = "a-known-token-for-scripts-0123456789"
    proc, port, link = _start_cli(tmp_path, "--inbrowser", env={"RLOO_STUDIO_TOKEN": token, "BROWSER": browser})
    try:
        assert link == f"http://127.0.0.1:{port}/?token={token}"
        _wait_served(port, proc)
        assert send(port, "GET", "/config", {"Authorization": f"Bearer {token}"})[0] == 200
        while not (opened.exists() and opened.read_text()):
            assert proc.poll() is None, proc.stderr.read()
            time.sleep(0.3)
        argv = opened.read_text()  # what `ps` shows every user of the computer
        assert token not in argv and argv.startswith("file://")
        page = Path(argv[len("file://"):])
        assert stat.S_IMODE(page.stat().st_mode) == 0o600 and link in page.read_text()
    finally:
        _stop(proc)
    assert not page.exists()


def test_the_saved_link_is_removed_when_the_app_is_stopped_with_sigterm(tmp_path):
    proc, port, _ = _start_cli(tmp_path)
    saved = tmp_path / "runs" / ".studio" / "launch" / f"ui-{port}.json"
    try:
        _wait_served(port, proc)
        assert saved.exists()
    finally:
        _stop(proc)  # SIGTERM, as a service manager or `kill` stops it
    assert not saved.exists()


def test_no_token_warns_and_serves_but_still_checks_host_and_origin(tmp_path):
    proc, port, link = _start_cli(tmp_path, "--no-token")
    try:
        assert link == f"http://127.0.0.1:{port}/"
        _wait_served(port, proc)
        assert send(port, "GET", "/config")[0] == 200
        assert send(port, "GET", "/config", {"Host": f"{REBIND}:{port}"})[0] == 403
        assert send(port, "POST", "/gradio_api/upload", {"Origin": "https://evil.example"}, b"")[0] == 403
    finally:
        _stop(proc)
    warning = proc.stderr.read()
    assert "warning: --no-token: any web page you visit and any user of this computer" in warning


def test_the_synchronous_run_route_answers_with_the_route_that_works_not_an_internal_error(app):
    # Gradio's /gradio_api/run/NAME cannot fill an event's session values (the page's settings): it answered 500 to the
    # inputs the API documents. The app says which route to use; /gradio_api/call/NAME answers the same inputs.
    port, _ = app
    status, _, text = send(port, "POST", "/gradio_api/run/check_rewards", {"Content-Type": "application/json", **BEARER},
                           call_body("print('Hello World')"))
    assert status == 404 and "/gradio_api/call/check_rewards" in text and "gradio_client" in text, (status, text)
    assert "no reward function found" in _call_and_wait(port, "print('Hello World')", BEARER)
