"""Loading a person's reward functions from Python source: the one loader the preview and the worker share.

A reward file is ordinary Python. Every public top-level function defined in it (not imported
into it, not starting with `_`) is a reward function, or only the ones named. Each must follow
TRL's contract: accept `completions` and `**kwargs` (or name every argument it uses) and return
one float or None per completion. This module reports problems as `RewardError` with file:line;
it does not sandbox the code (it runs with the user's rights, like any script they run).
"""

from __future__ import annotations

import ast
import hashlib
import inspect
import linecache
import sys
import traceback
import types
from pathlib import Path
from typing import Callable

from ..config import did_you_mean
from ..data import TRL_REWARD_ARGS, reward_columns, unpassed_columns
from ..errors import RewardError


def public_function_names(source: str, filename: str = "<rewards>") -> list[str]:
    """Names of the public top-level functions `source` defines (syntax errors raise RewardError)."""
    tree = _parse(source, filename)
    return [n.name for n in tree.body if isinstance(n, (ast.FunctionDef, ast.AsyncFunctionDef)) and not n.name.startswith("_")]


def _parse(source: str, filename: str) -> ast.Module:
    try:
        return ast.parse(source, filename=filename)
    except SyntaxError as exc:
        where = f"{Path(filename).name}:{exc.lineno}" + (f":{exc.offset}" if exc.offset else "")
        line = (exc.text or "").rstrip("\n")
        raise RewardError(
            f"reward code has a syntax error at {where}: {exc.msg}" + (f"\n    {line}" if line.strip() else ""),
            "Python could not parse the file",
            f"fix line {exc.lineno} of {Path(filename).name}",
        ) from None


def load_reward_source(source: str, filename: str = "<rewards>", names: list[str] | None = None,
                       extra_args: tuple[str, ...] = ()) -> dict[str, Callable]:
    """Execute reward source and return {name: function} for the public functions (or `names`).

    `extra_args` are the data's columns (all of them; `data.reward_columns` says which reach rewards): a
    function without **kwargs must accept those as well or TRL's call would fail mid-training, and one
    that requires a parameter no column provides is refused.
    """
    tree = _parse(source, filename)
    defined = [n.name for n in tree.body if isinstance(n, (ast.FunctionDef, ast.AsyncFunctionDef)) and not n.name.startswith("_")]
    wanted = list(names) if names else defined
    missing = [n for n in wanted if n not in defined]
    if missing:
        raise RewardError(
            f"{Path(filename).name} has no function named {', '.join(missing)}",
            f"the functions it defines are: {', '.join(defined) or 'none'}",
            "fix the `function:` name in the config or define the function in the file",
        )
    if not wanted:
        raise RewardError(
            f"{Path(filename).name} defines no public reward function",
            "only top-level `def` functions whose names do not start with `_` count",
            "add e.g. `def my_reward(completions, **kwargs): return [1.0 for _ in completions]`",
        )

    # Tracebacks read lines through linecache: register this exact source under its name, so error
    # messages quote the code as written (also for editor text that never touched the disk).
    linecache.cache[filename] = (len(source), None, source.splitlines(True), filename)
    digest = hashlib.sha1(f"{filename}\0{source}".encode()).hexdigest()[:12]
    module = types.ModuleType(f"rloo_user_rewards_{digest}")
    module.__file__ = filename
    # Registered so that dataclasses, pickling and tracebacks inside the code behave as in a real module.
    sys.modules[module.__name__] = module
    try:
        exec(compile(tree, filename, "exec"), module.__dict__)
    except BaseException as exc:  # SystemExit too: reward code must not end the process that loads it
        sys.modules.pop(module.__name__, None)
        raise RewardError(
            f"reward code failed while being loaded: {type(exc).__name__}: {exc}",
            _user_frames(exc, filename),
            _hint_for(exc),
        ) from None

    functions = {}
    for name in wanted:
        fn = module.__dict__.get(name)
        if not callable(fn):
            raise RewardError(f"{Path(filename).name}: `{name}` is not a function after the file ran", "something rebinds that name", "rename one of them")
        check_signature(fn, name, filename, extra_args)
        functions[name] = fn
    return functions


def load_reward_file(path: str | Path, names: list[str] | None = None, extra_args: tuple[str, ...] = ()) -> dict[str, Callable]:
    path = Path(path)
    if not path.is_file():
        raise RewardError(f"reward file not found: {path}", "the path is relative to the config file's folder", "fix `file:` in the rewards section")
    try:
        source = path.read_text(encoding="utf-8")
    except UnicodeDecodeError:
        raise RewardError(f"reward file {path} is not UTF-8 text", "Python source must be UTF-8", "save it as UTF-8") from None
    return load_reward_source(source, str(path), names, extra_args)


def check_signature(fn: Callable, name: str, filename: str, extra_args: tuple[str, ...] = ()) -> None:
    """Refuse functions TRL could not call: no `completions` parameter, or missing **kwargs for the rest."""
    try:
        sig = inspect.signature(fn)
    except (TypeError, ValueError):
        return
    params = sig.parameters
    has_var_kw = any(p.kind is p.VAR_KEYWORD for p in params.values())
    line = getattr(getattr(fn, "__code__", None), "co_firstlineno", "?")
    if "completions" not in params and not has_var_kw:
        raise RewardError(
            f"{Path(filename).name}:{line}: reward function `{name}` has no `completions` parameter",
            "training calls reward functions with keyword arguments prompts=, completions=, completion_ids=, ... and one per dataset column",
            f"write it as `def {name}(completions, **kwargs):`, or, if it is a helper, rename it `_{name}` "
            "(names starting with _ are not rewards)",
        )
    required_positional = [p.name for p in params.values()
                           if p.kind in (p.POSITIONAL_ONLY,) and p.default is p.empty]
    if required_positional:
        raise RewardError(f"{Path(filename).name}:{line}: `{name}` has positional-only parameters {required_positional}",
                          "training passes every argument by keyword", f"write it as `def {name}(completions, **kwargs):`")
    columns = reward_columns(extra_args)
    passed = set(TRL_REWARD_ARGS) | set(columns)
    never_passed = [p.name for p in params.values() if p.kind in (p.POSITIONAL_OR_KEYWORD, p.KEYWORD_ONLY)
                    and p.default is p.empty and p.name not in passed]
    if never_passed and extra_args:
        kept = unpassed_columns(extra_args)
        notes = "".join(f"; the column `{c}` {kept[c]}" for c in never_passed if c in kept)
        raise RewardError(
            f"{Path(filename).name}:{line}: reward function `{name}` needs {', '.join(never_passed)}, which no column of the data provides"
            f"{did_you_mean(never_passed[0], columns)}",
            f"every reward receives {', '.join(TRL_REWARD_ARGS)} and each of the data's columns by its name{notes}",
            f"rename the parameter to one of the data's columns ({', '.join(columns) or 'none'}), or add a column "
            f"`{never_passed[0]}` to the data",
        )
    if not has_var_kw:
        unaccepted = sorted(passed - set(params))
        if unaccepted:
            raise RewardError(
                f"{Path(filename).name}:{line}: reward function `{name}` does not accept {', '.join(unaccepted)}",
                "training passes these keyword arguments to every reward function",
                f"add `**kwargs` to its parameters: `def {name}(completions, ..., **kwargs):`",
            )


def _user_frames(exc: BaseException, filename: str) -> str:
    """The traceback lines that point into the user's file, in its own line numbering."""
    frames = [f for f in traceback.extract_tb(exc.__traceback__) if f.filename == filename]
    if not frames:
        return "the error happened outside the reward file"
    # The file's name only: the preview runs the editor's code from a temporary folder, whose path means nothing to a person.
    return "; ".join(f"{Path(filename).name}:{f.lineno} in {f.name}: {(f.line or '').strip()}" for f in frames[-3:])


def missing_module_fix(exc: BaseException) -> str | None:
    """What to do when reward code imports a module that is not installed (at load time or inside a call):
    install it into the environment the app and its runs use (this Python's), else None."""
    if not isinstance(exc, ModuleNotFoundError) or not exc.name:
        return None
    top = exc.name.split(".")[0]
    return (f"install the missing module into the app's environment (`{sys.executable} -m pip install {top}`; a few packages "
            f"have another install name, e.g. scikit-learn for sklearn), or remove the import")


def _hint_for(exc: BaseException) -> str:
    if isinstance(exc, ModuleNotFoundError):
        return missing_module_fix(exc) or "remove the import"
    if isinstance(exc, SystemExit):
        return "do not call sys.exit()/exit() in reward code; return values instead"
    return "fix the code at the line shown"


def describe_call_error(exc: BaseException, function_name: str, filename: str | None) -> str:
    """Where inside the user's file a reward call failed (for error messages)."""
    if getattr(exc, "studio_where", None):  # raised again from the reward sandbox (rewards/boxed.py), which found it
        return exc.studio_where
    if filename:
        return _user_frames(exc, filename)
    tb = traceback.extract_tb(exc.__traceback__)
    return f"{Path(tb[-1].filename).name}:{tb[-1].lineno}" if tb else function_name
