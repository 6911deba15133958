"""The exported train.py cannot import RLOO Studio, so engine/script_template.py keeps its own copy of a few of the
engine's functions. A copy that drifts from the engine's would make the script train differently from the run."""

from __future__ import annotations

import ast
import inspect
import textwrap

from rloo_studio.engine import trainer_args
from rloo_studio.paths import PROJECT_ROOT


def _body(source: str, name: str) -> str:
    """The function `name` in `source`, its docstring left out (the copy may word it for the script's reader)."""
    node = next(n for n in ast.walk(ast.parse(textwrap.dedent(source))) if isinstance(n, ast.FunctionDef) and n.name == name)
    if node.body and isinstance(node.body[0], ast.Expr) and isinstance(getattr(node.body[0], "value", None), ast.Constant):
        node.body = node.body[1:]
    return ast.dump(node)


def test_the_scripts_fp32_cast_of_lora_adapters_is_the_engines():
    script = (PROJECT_ROOT / "rloo_studio" / "engine" / "script_template.py").read_text(encoding="utf-8")
    assert _body(script, "keep_adapters_in_fp32") == _body(inspect.getsource(trainer_args.keep_adapters_in_fp32), "keep_adapters_in_fp32")
