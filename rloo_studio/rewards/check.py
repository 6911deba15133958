"""Checking reward source in a child process: it runs the person's code, so the app's process never does.

`check_source(source, columns)` starts `python -m rloo_studio.rewards.check`, which loads the
code with the same loader the training worker uses (syntax, module-level errors, signatures
against TRL's arguments and the dataset's columns) and answers with one JSON line. A time limit
covers code that hangs at import; `sys.exit` or a crash in it ends only the child, and whatever the code
started (a background process) ends with the child (`procs.json_child`); where the system has one, the child runs in
the reward sandbox (sandbox.py).
"""

from __future__ import annotations

import json
import sys

from .. import sandbox
from ..procs import json_child
from ..runs import REWARDS_FILE

CHECK_TIMEOUT_S = 30


def check_source(source: str, columns: list[str] | tuple[str, ...] = (), timeout_s: float = CHECK_TIMEOUT_S) -> dict:
    """{"functions": [names], "problems": [messages]} for the reward code; never raises."""
    from .user import public_function_names
    from ..errors import RewardError

    try:
        names = public_function_names(source, REWARDS_FILE)  # a syntax error is found here, without running anything
    except RewardError as exc:
        return {"functions": [], "problems": [exc.message()]}
    box = sandbox.box()  # the person's code: in the reward sandbox where the system has one
    try:
        child = json_child("rloo_studio.rewards.check", {"source": source, "columns": list(columns)}, timeout_s, wrap=box.prefix)
    finally:
        box.close()
    if child.timed_out:
        return {"functions": names, "problems": [f"loading the reward code took longer than {timeout_s:.0f} s.\nWhy: code at the top "
                                                 "level of the file (outside any function) runs when it is loaded, and something there "
                                                 "does not finish.\nWhat to do: move slow work into the functions, or remove the loop."]}
    if child.answer is None:
        return {"functions": names, "problems": [f"the reward code ended the checking process (exit code {child.returncode}).\nWhy: code "
                                                 "at the top level of the file called exit or crashed the interpreter.\nWhat to do: "
                                                 "remove that call from the top level."]}
    return child.answer


def _main() -> None:
    from ..errors import RewardError
    from .user import load_reward_source, public_function_names

    from .boxed import memory_limit_gib

    sandbox.limit_memory(memory_limit_gib())  # before the person's code runs: as the preview's and training's children
    request = json.loads(sys.stdin.read())
    result = {"functions": [], "problems": []}
    real_stdout = sys.stdout
    sys.stdout = sys.stderr  # prints in the user's code must not corrupt the JSON answer
    try:
        result["functions"] = public_function_names(request["source"], REWARDS_FILE)
        if result["functions"]:
            load_reward_source(request["source"], REWARDS_FILE, extra_args=tuple(request.get("columns") or ()))
        else:
            result["problems"].append("no reward function found.\nWhy: only top-level `def` functions whose names do not start "
                                      "with `_` are reward functions.\nWhat to do: add e.g. `def my_reward(completions, **kwargs):`.")
    except RewardError as exc:
        result["problems"].append(exc.message())
    except BaseException as exc:  # noqa: BLE001 - anything the code throws is reported, not raised
        result["problems"].append(f"{type(exc).__name__}: {exc}")
    finally:
        sys.stdout = real_stdout
    print(json.dumps(result), flush=True)


if __name__ == "__main__":
    _main()
