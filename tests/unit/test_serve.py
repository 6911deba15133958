"""Unit tests for rloo_studio.serve's exposure rule (no server is started)."""

import pytest

from rloo_studio.errors import StudioError
from rloo_studio.serve import check_exposure, is_loopback


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
    assert info.value.what == "--auth must look like USER:PASSWORD"
    assert "separated by a colon" in info.value.fix


def test_share_without_login_is_refused_even_on_loopback():
    with pytest.raises(StudioError) as info:
        check_exposure("127.0.0.1", None, share=True)
    assert info.value.what == "refusing to serve RLOO Studio on a public share link without a login"
    assert check_exposure("127.0.0.1", "u:p", share=True) == ("u", "p")
