"""Unit tests for rloo_studio.web.serve's exposure rule (no server is started)."""

import json

import pytest

from rloo_studio.errors import StudioError
from rloo_studio.web.serve import check_exposure, is_loopback


@pytest.mark.parametrize("host", ["127.0.0.1", "localhost", "::1", "127.0.0.2"])
def test_is_loopback_true(host):
    assert is_loopback(host) is True


@pytest.mark.parametrize("host", ["0.0.0.0", "192.168.1.20", "10.0.0.5", "::", "example.com", "", "not an address"])
def test_is_loopback_false(host):
    assert is_loopback(host) is False


@pytest.mark.parametrize("host", ["127.0.0.1", "localhost", "::1"])
def test_loopback_needs_no_login(host):
    assert check_exposure(host, None) is None
    assert check_exposure(host, "") is None


@pytest.mark.parametrize("host", ["0.0.0.0", "192.168.1.20", "::"])
def test_other_addresses_without_login_are_refused(host):
    with pytest.raises(StudioError) as info:
        check_exposure(host, None)
    err = info.value
    assert err.what == f"refusing to serve RLOO Studio on address {host} without a login"
    assert "arbitrary Python" in err.why
    assert "--auth USER:PASSWORD" in err.fix
    assert "--host 127.0.0.1" in err.fix
    assert "What to do:" in err.message()


@pytest.mark.parametrize("host", ["0.0.0.0", "192.168.1.20"])
def test_other_addresses_with_login_are_allowed(host):
    assert check_exposure(host, "alice:s3cret") == ("alice", "s3cret")


def test_password_may_contain_colons():
    assert check_exposure("0.0.0.0", "bob:pa:ss") == ("bob", "pa:ss")


@pytest.mark.parametrize("auth", ["alice", "alice:", ":s3cret", ":"])
def test_malformed_auth(auth):
    with pytest.raises(StudioError) as info:
        check_exposure("127.0.0.1", auth)
    assert info.value.what == "the login (--auth-file, RLOO_STUDIO_AUTH or --auth) must look like USER:PASSWORD"
    assert "separated by a colon" in info.value.fix


@pytest.mark.parametrize("host, share", [("0.0.0.0", False), ("192.168.1.20", False), ("127.0.0.1", True)])
def test_no_token_beyond_this_machine_is_refused_even_with_a_login(host, share):
    with pytest.raises(StudioError) as info:
        check_exposure(host, "alice:s3cret", share=share, no_token=True)
    assert "--no-token" in info.value.what and "drop --no-token" in info.value.fix
    assert check_exposure("127.0.0.1", None, no_token=True) is None


def test_share_without_login_is_refused_even_on_loopback():
    with pytest.raises(StudioError) as info:
        check_exposure("127.0.0.1", None, share=True)
    assert info.value.what == "refusing to serve RLOO Studio on a public share link without a login"
    assert check_exposure("127.0.0.1", "u:p", share=True) == ("u", "p")


# ---- the launch token and its saved link ----------------------------------------------------------

def test_each_launch_gets_a_new_random_token_unless_one_is_given():
    from rloo_studio.web.serve import launch_token

    first, second = launch_token(environ={}), launch_token(environ={})
    assert first != second and len(first) >= 40
    known = "a-known-token-for-scripts-0123456789"
    assert launch_token(environ={"RLOO_STUDIO_TOKEN": f" {known} "}) == known
    assert launch_token(no_token=True, environ={"RLOO_STUDIO_TOKEN": known}) is None


@pytest.mark.parametrize("value", ["1", "known-token", "aaaaaaaaaaaaaaaaaaaaaaaaa", "0123456789012345678901234567890123456"])
def test_a_token_from_the_environment_must_hold_128_bits(value):
    from rloo_studio.web.serve import launch_token

    with pytest.raises(StudioError) as info:
        launch_token(environ={"RLOO_STUDIO_TOKEN": value})
    assert "too short to be guessed by nobody" in info.value.what and "128 bits" in info.value.why
    assert "python -c" in info.value.fix and "token_urlsafe" in info.value.fix  # a value that fits


@pytest.mark.parametrize("value", ["", "   ", "two words"])
def test_an_unusable_token_from_the_environment_is_explained(value):
    from rloo_studio.web.serve import launch_token

    with pytest.raises(StudioError) as info:
        launch_token(environ={"RLOO_STUDIO_TOKEN": value})
    assert "RLOO_STUDIO_TOKEN is set but" in info.value.what and "unset RLOO_STUDIO_TOKEN" in info.value.fix


def test_the_link_is_saved_for_this_user_only_and_read_back_while_the_app_runs(tmp_path):
    import stat

    from rloo_studio.web.serve import app_url, forget_launch, saved_launches, save_launch

    url = app_url("127.0.0.1", 7860, "tok/en")
    assert url == "http://127.0.0.1:7860/?token=tok%2Fen"
    assert app_url("localhost", 7861, None) == "http://127.0.0.1:7861/"
    assert app_url("::1", 7861, "t") == "http://[::1]:7861/?token=t"
    path = save_launch(tmp_path / "runs", 7860, url)
    assert stat.S_IMODE(path.stat().st_mode) == 0o600 and stat.S_IMODE(path.parent.stat().st_mode) == 0o700
    assert [e["url"] for e in saved_launches(tmp_path / "runs")] == [url]
    # A link left behind by an app that has ended is not offered.
    stale = save_launch(tmp_path / "runs", 7861, "http://127.0.0.1:7861/?token=old")
    entry = json.loads(stale.read_text())
    stale.write_text(json.dumps({**entry, "pid": _dead_pid()}))
    assert [e["url"] for e in saved_launches(tmp_path / "runs")] == [url]
    forget_launch(path)
    assert saved_launches(tmp_path / "runs") == [] and saved_launches(tmp_path / "nowhere") == []


def _dead_pid() -> int:
    import subprocess
    import sys

    proc = subprocess.run([sys.executable, "-c", "import os; print(os.getpid())"], capture_output=True, text=True, check=True)
    return int(proc.stdout)


# ---- the login from a file --------------------------------------------------------------------------------------

def test_the_login_file_is_read_only_when_this_user_alone_can_read_it(tmp_path):
    import os

    from rloo_studio.web.serve import read_auth_file

    path = tmp_path / "login.txt"
    path.write_text("ada:pa:ss\n")
    os.chmod(path, 0o600)
    assert read_auth_file(path) == "ada:pa:ss"
    os.chmod(path, 0o644)
    with pytest.raises(StudioError) as info:
        read_auth_file(path)
    assert "other users can read" in info.value.what and f"chmod 600 {path}" in info.value.fix
    with pytest.raises(StudioError) as info:
        read_auth_file(tmp_path / "missing.txt")
    assert "cannot read the login file" in info.value.what
