"""Every name the package uses is defined where it is used: a function that reads a name imported only in another
function fails at run time, on the one path a test may not take (`rloo-studio preview` with no probes printed a
NameError after its table). ruff's undefined-name check reads the whole package in about a second."""
import subprocess
import sys
from pathlib import Path

PACKAGE = Path(__file__).resolve().parents[2] / "rloo_studio"


def _undefined(path: Path) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, "-m", "ruff", "check", "--isolated", "--no-cache", "--select", "F821,F822,F823",
                           "--output-format", "concise", str(path)], capture_output=True, text=True, timeout=120)


def test_no_name_is_used_that_is_not_defined():
    checked = _undefined(PACKAGE)
    assert checked.returncode == 0, checked.stdout + checked.stderr


def test_the_check_finds_an_undefined_name(tmp_path):
    (tmp_path / "m.py").write_text("def f():\n    from os import sep\n\n\ndef g():\n    return sep\n")
    checked = _undefined(tmp_path)
    assert checked.returncode != 0 and "sep" in checked.stdout
