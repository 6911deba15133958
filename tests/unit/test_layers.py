"""The layer rules of rloo_studio/__init__.py, checked on the source and in fresh processes."""

from __future__ import annotations

import ast
import json
import subprocess
import sys
from pathlib import Path

PACKAGE = Path(__file__).resolve().parents[2] / "rloo_studio"
HEAVY = ("torch", "transformers", "trl", "unsloth", "peft")


def _module_level_imports(path: Path) -> set[str]:
    """Top-level modules imported at module level (not inside functions)."""
    names = set()
    for node in ast.parse(path.read_text()).body:
        if isinstance(node, ast.Import):
            names.update(a.name.split(".")[0] for a in node.names)
        elif isinstance(node, ast.ImportFrom):
            if node.level == 0 and node.module:
                names.add(node.module.split(".")[0])
            elif node.level and node.module:
                names.add("." * node.level + node.module)
    return names


def test_engine_never_imports_gradio_or_ui():
    for path in (PACKAGE / "engine").rglob("*.py"):
        source = path.read_text()
        assert "import gradio" not in source and "from gradio" not in source, path
        assert "rloo_studio.ui" not in source and "from ..ui" not in source, path


def test_light_layers_do_not_import_the_model_stack_at_module_level():
    light = ([PACKAGE / n for n in ("config.py", "errors.py", "runs.py", "cli.py", "serve.py", "wall.py", "data.py", "jobs.py", "presets.py", "hardware.py",
                                          "inference.py", "distributed.py")]
             + list((PACKAGE / "rewards").glob("*.py")) + list((PACKAGE / "ui").glob("*.py")))
    for path in light:
        assert not (_module_level_imports(path) & set(HEAVY)), f"{path.name} imports {_module_level_imports(path) & set(HEAVY)}"


def test_config_imports_only_stdlib_and_yaml():
    imports = {m for m in _module_level_imports(PACKAGE / "config.py") if not m.startswith(".")}
    assert imports <= {"__future__", "copy", "dataclasses", "difflib", "re", "typing", "pathlib", "yaml"}, imports


def test_cli_and_rewards_import_without_torch_in_a_fresh_process():
    code = ("import sys, json; import rloo_studio.cli, rloo_studio.rewards, rloo_studio.engine.preflight, rloo_studio.serve, "
            "rloo_studio.jobs, rloo_studio.presets, rloo_studio.hardware, rloo_studio.data, rloo_studio.rewards.check, "
            "rloo_studio.inference, rloo_studio.distributed, rloo_studio.engine.inference, rloo_studio.engine.inference_worker; "
            f"print(json.dumps([m for m in {HEAVY!r} if m in sys.modules]))")
    result = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=120)
    assert result.returncode == 0, result.stderr
    assert json.loads(result.stdout) == []


def test_ui_imports_no_engine_module():
    for path in (PACKAGE / "ui").glob("*.py"):
        source = path.read_text()
        assert "engine" not in {m.strip(".").split(".")[0] for m in _module_level_imports(path)}, path
        assert "from ..engine" not in source and "rloo_studio.engine" not in source, path
