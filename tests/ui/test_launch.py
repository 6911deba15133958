"""`python launch.py` / `rloo-studio ui`: loopback by default, no model library in the app's process,
refusal to be exposed without a login, and a login that guards every route."""

from __future__ import annotations

import json
import subprocess
import sys
import time
import urllib.error
import urllib.request

import pytest

from helpers.app import BEARER, free_port, served_app
from helpers import ROOT, run_cli


def _get(url: str, headers: dict | None = None, data: bytes | None = None) -> tuple[int, str]:
    """(status, text) of a GET, or of a POST of `data`."""
    try:
        with urllib.request.urlopen(urllib.request.Request(url, headers=headers or {}, data=data), timeout=10) as resp:
            return resp.status, resp.read().decode(errors="replace")
    except urllib.error.HTTPError as exc:
        return exc.code, exc.read().decode(errors="replace")


def test_refuses_all_interfaces_without_auth(tmp_path):
    result = run_cli("ui", "--host", "0.0.0.0", cwd=tmp_path)
    assert result.returncode == 2
    assert "refusing to serve RLOO Studio on address 0.0.0.0 without a login" in result.stderr
    assert "arbitrary Python" in result.stderr and "--auth" in result.stderr


def test_refuses_a_share_link_without_auth(tmp_path):
    result = run_cli("ui", "--share", cwd=tmp_path)
    assert result.returncode == 2
    assert "refusing to serve RLOO Studio on a public share link without a login" in result.stderr


def test_a_malformed_login_is_explained(tmp_path):
    result = run_cli("ui", "--host", "0.0.0.0", "--auth", "justaname", cwd=tmp_path)
    assert result.returncode == 2 and "login (--auth-file, RLOO_STUDIO_AUTH or --auth) must look like USER:PASSWORD" in result.stderr


def test_no_token_beyond_loopback_is_refused_even_with_a_login(tmp_path):
    env = {"RLOO_STUDIO_AUTH": "ada:s3cret"}
    for args in (("--host", "0.0.0.0", "--no-token"), ("--host", "0.0.0.0", "--no-token", "--auth", "ada:s3cret")):
        result = run_cli("ui", *args, cwd=tmp_path, env=env)
        assert result.returncode == 2, result.stderr
        assert "refusing to serve RLOO Studio on address 0.0.0.0 with --no-token" in result.stderr
        assert "drop --no-token" in result.stderr


def test_the_login_file_must_be_private(tmp_path):
    login = tmp_path / "login.txt"
    login.write_text("ada:s3cret\n")
    login.chmod(0o644)
    result = run_cli("ui", "--host", "0.0.0.0", "--auth-file", login, cwd=tmp_path)
    assert result.returncode == 2 and "other users can read or change the login file" in result.stderr
    assert f"chmod 600 {login}" in result.stderr


def test_launch_serves_the_app_on_loopback_quickly_without_model_libraries(tmp_path):
    port = free_port()
    # Once the server answers (401 without the token counts), report which model libraries are loaded.
    code = ("import sys, threading, time, urllib.request, urllib.error\n"
            "def report():\n"
            "    while True:\n"
            "        try: urllib.request.urlopen(f'http://127.0.0.1:{sys.argv[1]}/', timeout=5); break\n"
            "        except urllib.error.HTTPError: break\n"
            "        except OSError: time.sleep(0.3)\n"
            "    print('HEAVY', [m for m in ('torch', 'transformers', 'trl', 'unsloth', 'peft') if m in sys.modules], flush=True)\n"
            "threading.Thread(target=report, daemon=True).start()\n"
            "from rloo_studio.cli import main; main(['ui', '--port', sys.argv[1], '--runs-dir', sys.argv[2]])")
    started = time.time()
    proc = subprocess.Popen([sys.executable, "-c", code, str(port), str(tmp_path / "runs")], cwd=ROOT,
                            stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True)
    try:
        first = proc.stdout.readline()
        assert first.strip().startswith(f"RLOO Studio is running at http://127.0.0.1:{port}/?token="), first
        link = first.split()[5]  # the printed link, with this launch's token
        body = None
        while time.time() - started < 90 and body is None:
            try:
                body = urllib.request.urlopen(link, timeout=5).read().decode()
            except OSError:
                time.sleep(0.3)
        assert body is not None and "RLOO Studio" in body
        line = ""
        while "HEAVY" not in line:
            line = proc.stdout.readline()
            assert line, "the app exited early"
        assert line.strip() == "HEAVY []"  # the hardware probe imported torch in its own process, not here
    finally:
        proc.terminate()
        proc.wait(timeout=30)


def test_with_a_login_every_route_needs_it(runs_dir):
    # The launch token is sent throughout, so what refuses here is the login, on top of the token. Each route is asked
    # as the page asks it (an upload is a POST), without and then with the login: 401, then the route's own answer.
    boundary = "rloo-studio-test"
    upload = (f"--{boundary}\r\nContent-Disposition: form-data; name=\"files\"; filename=\"a.txt\"\r\n"
              f"Content-Type: text/plain\r\n\r\nhello\r\n--{boundary}--\r\n").encode()
    with served_app(runs_dir, auth=("ada", "s3cret")) as url:
        status, body = _get(url, BEARER)
        assert status == 200 and "REINFORCE Leave-One-Out" not in body  # the page shell, without the app's content
        data = "username=ada&password=s3cret".encode()
        req = urllib.request.Request(url + "login", data=data, headers={"Content-Type": "application/x-www-form-urlencoded", **BEARER})
        with urllib.request.urlopen(req, timeout=10) as resp:
            cookie = "; ".join(c.split(";")[0] for c in resp.headers.get_all("set-cookie"))
        logged_in = {"Cookie": cookie, **BEARER}
        multipart = {"Content-Type": f"multipart/form-data; boundary={boundary}"}
        assert _get(url + "gradio_api/upload", {**BEARER, **multipart}, upload)[0] == 401
        status, body = _get(url + "gradio_api/upload", {**logged_in, **multipart}, upload)
        assert status == 200, body
        [uploaded] = json.loads(body)
        for route, answer in (("config", '"title":"RLOO Studio"'), ("gradio_api/info", '"named_endpoints"'),
                              ("gradio_api/queue/status", '"queue_size"'), (f"gradio_api/file={uploaded}", "hello")):
            status, body = _get(url + route, BEARER)
            assert (status, json.loads(body)["detail"]["error"]) == (401, "Not authenticated"), route
            status, body = _get(url + route, logged_in)
            assert status == 200 and answer in body, (route, status, body[:200])
        bad = urllib.request.Request(url + "login", data=b"username=ada&password=wrong",
                                     headers={"Content-Type": "application/x-www-form-urlencoded", **BEARER})
        try:
            urllib.request.urlopen(bad, timeout=10)
            raise AssertionError("a wrong password was accepted")
        except urllib.error.HTTPError as exc:
            assert (exc.code, json.loads(exc.read())["detail"]) == (400, "Incorrect credentials.")


def test_the_page_paces_its_animation_frames_before_gradio_loads(runs_dir):
    """The frame pacing script (ui/frame_pacing.py) is the first thing in the page's <head>, before Gradio's modules
    take their reference to requestAnimationFrame; other answers are untouched. (tests/browser/test_own_csv.py
    counts the frames the loaded page draws.)"""
    from rloo_studio.ui.frame_pacing import SCRIPT

    with served_app(runs_dir) as url:
        with urllib.request.urlopen(urllib.request.Request(url, headers=BEARER), timeout=10) as resp:
            length, page = int(resp.headers["content-length"]), resp.read()
        assert length == len(page) and page.count(SCRIPT.encode()) == 1
        html = page.decode()
        assert html.index("<head>") + len("<head>") == html.index(SCRIPT) < html.index('<script type="module"')
        status, config = _get(url + "config", BEARER)
        assert status == 200 and "requestAnimationFrame" not in config and json.loads(config)["title"] == "RLOO Studio"


@pytest.mark.parametrize("patch", ["component_lookup.ComponentLookup", "status_updates.StatusUpdates"])
def test_gradios_page_is_served_with_its_cpu_fixes(runs_dir, patch):
    """Two of Gradio's page functions cost the browser most of its CPU per event: the `core` asset walks the whole
    component tree for each component it updates (ui/component_lookup.py), and the `Blocks` asset sends every loading
    status again at every status change (ui/status_updates.py). The app serves each asset with its function replaced.
    The installed Gradio's asset holds the function word for word (if a new Gradio changes it, this says so); other
    assets are untouched."""
    import importlib
    from pathlib import Path

    import gradio

    module, name = patch.split(".")
    fix = getattr(importlib.import_module(f"rloo_studio.ui.{module}"), name)
    assets = Path(gradio.__file__).parent / "templates" / "frontend" / "assets"
    found = [p for p in assets.glob("*.js") if fix.gradio in p.read_text(encoding="utf-8")]
    assert len(found) == 1, f"Gradio {gradio.__version__}'s page no longer holds the function {module}.py replaces"
    assert fix.asset.fullmatch("/assets/" + found[0].name)
    other = next(p for p in assets.glob("index-*.js"))
    import brotli

    with served_app(runs_dir) as url:
        # As a browser asks for it: compressed (Gradio compresses outside the app's middleware, after the rewrite).
        asked = urllib.request.Request(url + "assets/" + found[0].name, headers={**BEARER, "Accept-Encoding": "br"})
        with urllib.request.urlopen(asked, timeout=10) as resp:
            headers, sent = resp.headers, resp.read()
        assert headers["content-encoding"] == "br" and int(headers["content-length"]) == len(sent)
        served = brotli.decompress(sent).decode()
        assert fix.gradio not in served and served.count(fix.patched) == 1
        assert served == found[0].read_text(encoding="utf-8").replace(fix.gradio, fix.patched)
        # The file's validators are not sent with what is not the file: a browser asks again rather than keep an old one.
        assert headers["cache-control"] == "no-cache" and headers["etag"] is None and headers["last-modified"] is None
        with urllib.request.urlopen(urllib.request.Request(url + "assets/" + found[0].name, headers=BEARER), timeout=10) as resp:
            length, plain = int(resp.headers["content-length"]), resp.read().decode()
        assert plain == served and length == len(plain.encode())
        with urllib.request.urlopen(urllib.request.Request(url + "assets/" + other.name, headers=BEARER), timeout=10) as resp:
            assert resp.read() == other.read_bytes()


def test_wrong_logins_are_held_back_and_the_right_one_waits_too(runs_dir):
    """Issue 40: 100 wrong tries in 0.2 s, and the right one then worked. Now, after a few wrong ones, the next tries
    are answered 429 without reaching the login check, the right one included, until the wait is over."""
    from rloo_studio.web.wall import LoginThrottle

    def login(password: str):
        req = urllib.request.Request(url + "login", data=f"username=ada&password={password}".encode(),
                                     headers={"Content-Type": "application/x-www-form-urlencoded", **BEARER})
        try:
            with urllib.request.urlopen(req, timeout=10) as resp:
                return resp.status, resp.headers
        except urllib.error.HTTPError as exc:
            return exc.code, exc.headers

    with served_app(runs_dir, auth=("ada", "s3cret")) as url:
        answers = [login(f"guess{i}") for i in range(100)]
        statuses = [status for status, _ in answers]
        # The first FREE_TRIES reach the check; then a wait of 1 s, 2 s, 4 s... after each one let through.
        assert statuses[:LoginThrottle.FREE_TRIES] == [400] * LoginThrottle.FREE_TRIES
        assert statuses.count(400) < LoginThrottle.FREE_TRIES + 8 and statuses.count(429) > 80, statuses
        status, headers = login("s3cret")
        assert status == 429 and int(headers["Retry-After"]) >= 1
