"""Helpers shared by the tests: the repository root, data and reward code for workspaces, running the CLI,
making runs with known adapters, folders built once per session (`built_once`). Imported as `from helpers import ...` (tests/ is on the test path);
fixtures stay in conftest.py, which imports these.
"""

from __future__ import annotations

import functools
import json
import os
import shutil
import subprocess
import sys
from pathlib import Path

from filelock import FileLock

from helpers import warm

ROOT = Path(__file__).resolve().parents[2]

ADDITION_ROWS = [{"prompt": f"What is {a} + {b}?", "answer": str(a + b)} for a in range(3, 40, 3) for b in (2, 5, 7)]

USER_REWARDS = '''
def short_answer(completions, **kwargs):
    """1.0 for completions under 12 characters."""
    texts = [c[0]["content"] if isinstance(c, list) else c for c in completions]
    return [1.0 if len(t) < 12 else 0.0 for t in texts]
'''


# A reward that also touches the run's STOP file when it scores the completions of a chosen step: a stop
# request at an exact step, the way the app's Stop button makes one (the reward values do not change).
STOPPING_REWARDS = '''
import os
from pathlib import Path

def length(completions, trainer_state=None, **kwargs):
    """The completion's length in characters / 10: it differs within a group, so every step moves the adapter."""
    if os.environ.get("STOP_FILE") and trainer_state.global_step + 1 == int(os.environ["STOP_AT"]):
        Path(os.environ["STOP_FILE"]).touch()
    texts = [c[0]["content"] if isinstance(c, list) else c for c in completions]
    return [len(t) / 10 for t in texts]
'''


# What `model.backend: auto` resolves to with this project's packages, on CPU as on GPU: Unsloth imports and is
# used. Tests that train through `auto` assert it from the run's status.json, so that a silent fall-back to
# transformers + PEFT (Unsloth failing to import, or imported too late) fails them instead of passing unnoticed.
AUTO_BACKEND = "unsloth"


def assert_trained_with(run_dir: Path, backend: str = AUTO_BACKEND) -> None:
    """The run in `run_dir` recorded `backend` as the one it trained with."""
    status = json.loads((Path(run_dir) / "status.json").read_text())
    log = Path(run_dir) / "train.log"
    said = [line for line in log.read_text().splitlines() if "backend:" in line] if log.exists() else []
    assert status.get("backend") == backend, f"trained with {status.get('backend')!r}, not {backend!r}: {said}"


@functools.cache
def cuda_available() -> bool:
    """Whether torch sees a CUDA GPU, asked in a child process (this one never imports torch before unsloth).

    Without the NVIDIA driver (its /proc entry, its device files, or WSL's GPU device) torch cannot see one, and the
    answer is known without the child's torch import (~2 s of CPU, once per GPU test module and test process)."""
    if not (Path("/proc/driver/nvidia").exists() or any(Path("/dev").glob("nvidia*")) or Path("/dev/dxg").exists()):
        return False
    probe = subprocess.run([sys.executable, "-c", "import torch; print(torch.cuda.is_available())"], capture_output=True, text=True)
    return probe.stdout.strip() == "True"


def cli_stack(args, cwd) -> str:
    """Which warm starter (helpers/warm.py) forks `rloo-studio ARGS`: `train` imports the stack of its config's
    model.backend (auto: Unsloth); the other commands generate with plain transformers + PEFT, or load no model."""
    import yaml

    args = [str(a) for a in args]
    if not args or args[0] != "train":
        return "transformers"
    chosen = [a.split("=", 1)[1] for a in args if a.startswith("model.backend=")]
    if not chosen:
        try:
            config = Path(cwd, args[args.index("--resume") + 1], "config.yaml") if "--resume" in args else \
                next(Path(cwd, a) for a in args[1:] if not a.startswith("-") and "=" not in a)
            chosen = [((yaml.safe_load(config.read_text()) or {}).get("model") or {}).get("backend", "auto")]
        except Exception:  # no config named, no such file, not YAML: the command's own check says so, on any backend
            chosen = []
    return "transformers" if chosen and chosen[-1] == "transformers" else "unsloth"


def run_cli(*args, cwd, timeout=600, env=None, fresh=False, stack=None) -> subprocess.CompletedProcess:
    """Run `rloo-studio ARGS` in its own process (as a person would) and capture its output.

    The process is forked from a warm starter (helpers/warm.py: the stack already imported, `stack` or the command's
    own, see `cli_stack`) unless `fresh` or the environment asks for a fresh interpreter; it runs the same
    `python -m rloo_studio.cli ARGS` either way.
    """
    return warm.run_python(args, module="rloo_studio.cli", cwd=cwd, timeout=timeout, env=dict(os.environ, **(env or {})),
                           fresh=fresh, stack=stack or cli_stack(args, cwd))


def popen_cli(*args, cwd, env=None, fresh=False, stack=None, **popen) -> "subprocess.Popen | warm.WarmProcess":
    """`rloo-studio ARGS` started like subprocess.Popen(..., **popen), forked from a warm starter as `run_cli` is."""
    return warm.popen_module("rloo_studio.cli", args, cwd=cwd, env=dict(os.environ, **(env or {})), fresh=fresh,
                             stack=stack or cli_stack(args, cwd), **popen)


def run_code(code: str, *args, stack, cwd=None, timeout=600, env=None, check=False) -> subprocess.CompletedProcess:
    """`python -c CODE ARGS` in its own process, output captured (text), forked from the `stack` starter (see
    helpers/warm.py's STARTERS; "plain" for a person's own script without the product), or fresh if `stack` is None."""
    return warm.run_python(args, code=code, cwd=cwd, timeout=timeout, env=dict(os.environ, **(env or {})),
                           stack=stack, check=check)


def run_benchmark(name: str, args: list[str], results: Path, monkeypatch, capsys) -> str:
    """`python benchmarks/NAME.py ARGS` with its results written to `results`: the script's `main()` in this test
    process, its Python children (`rloo-studio ...`, `python -c ...`) forked from the warm starters; what it printed
    to stdout comes back. A script that ends with `sys.exit(message or 1)` fails the calling test with that.

    The script's own code runs unchanged; its children are the same commands, only their imports happened before the
    fork (helpers/warm.py). Without this, a dry run paid ~10 s of CPU for each child's imports. The scripts' modules
    (benchmarks/*.py) each get their `subprocess` replaced for the call; any other command starts as it would."""
    import importlib

    monkeypatch.syspath_prepend(str(ROOT / "benchmarks"))
    module = importlib.import_module(name)

    def run(argv, *, cwd=None, timeout=None, check=False, capture_output=False, text=False, **kwargs):
        argv = [str(a) for a in argv]
        if len(argv) >= 3 and argv[0] == sys.executable and argv[1] in ("-m", "-c") and not kwargs \
                and (argv[1] == "-c" or argv[2] == "rloo_studio.cli"):
            cwd = cwd or os.getcwd()
            if argv[1] == "-m":
                done = warm.run_python(argv[3:], module=argv[2], cwd=cwd, timeout=timeout, stack=cli_stack(argv[3:], cwd))
            else:
                done = warm.run_python(argv[3:], code=argv[2], cwd=cwd, timeout=timeout, stack="plain")
            if check:
                done.check_returncode()
            return done
        return subprocess.run(argv, cwd=cwd, timeout=timeout, check=check, capture_output=capture_output, text=text,
                              **kwargs)

    shim = warm.subprocess_with(subprocess.Popen)
    shim.run = run
    for loaded in list(sys.modules.values()):
        if str(getattr(loaded, "__file__", "") or "").startswith(str(ROOT / "benchmarks")) and hasattr(loaded, "subprocess"):
            monkeypatch.setattr(loaded, "subprocess", shim)
    monkeypatch.setattr(sys.modules["_common"], "RESULTS", results)
    monkeypatch.setattr(sys, "argv", [str(ROOT / "benchmarks" / f"{name}.py"), *args])
    capsys.readouterr()
    try:
        module.main()
    except SystemExit as exc:
        if exc.code not in (None, 0):
            raise AssertionError(f"benchmarks/{name}.py {' '.join(args)} exited with {exc.code!r}:\n"
                                 f"{capsys.readouterr().err[-3000:]}") from None
    return capsys.readouterr().out


class WouldTrain(BaseException):
    """`cli_in_process` was asked to run a command that got past the pre-flight check. (Not an Exception, so that
    the command's own `except Exception` cannot turn it into an exit code.)"""


def cli_in_process(*args, cwd, env=None) -> subprocess.CompletedProcess:
    """Run `rloo-studio ARGS` inside this test process, for commands that must stop before training.

    The same `cli.main` as `run_cli`, without a fresh interpreter (the pre-flight check needs neither torch nor
    TRL, so a process would mostly cost its own start). Its exit code, stdout and stderr come back as `run_cli`'s
    do. A command that gets as far as importing the training stack raises `WouldTrain` instead: this process
    must not train (nor import transformers before unsloth), and such a case belongs in `run_cli`. The exit-code
    and no-traceback contract of a real process stays covered by the tests that use `run_cli`.
    """
    import contextlib
    import io

    from rloo_studio import cli
    from rloo_studio.engine import stack

    def would_train(*_a, **_k):
        raise WouldTrain(f"`rloo-studio {' '.join(map(str, args))}` passed the pre-flight check: run it with run_cli")

    out, err = io.StringIO(), io.StringIO()
    saved_cwd, saved_env, saved_import = os.getcwd(), dict(os.environ), stack.import_training_stack
    os.chdir(cwd)
    os.environ.update(env or {})
    stack.import_training_stack = would_train
    try:
        with contextlib.redirect_stdout(out), contextlib.redirect_stderr(err):
            try:
                code = cli.main([str(a) for a in args])
            except SystemExit as exc:  # argparse's usage errors
                code = exc.code if isinstance(exc.code, int) else 1
    finally:
        stack.import_training_stack = saved_import
        os.environ.clear()
        os.environ.update(saved_env)
        os.chdir(saved_cwd)
    return subprocess.CompletedProcess(["rloo-studio", *map(str, args)], code, out.getvalue(), err.getvalue())


def only_run_dir(runs_root: Path) -> Path:
    found = [p for p in Path(runs_root).iterdir() if p.is_dir()]
    assert len(found) == 1, f"expected one run directory in {runs_root}, found {found}"
    return found[0]


def make_adapter_run(run_dir: Path, model_dir: Path, system_prompt: str | None = "Answer briefly.") -> Path:
    """A finished run directory whose final adapter and checkpoint-1 have random non-zero LoRA weights.

    A few steps of real training may leave greedy outputs unchanged; these adapters change them
    for sure, so "adapter on" and "adapter off" can be told apart.
    """
    import yaml

    run_dir.mkdir(parents=True, exist_ok=True)
    config = {
        "model": {"name_or_path": str(model_dir), "max_seq_length": 128},
        "lora": {"r": 8, "alpha": 16},
        "data": {"source": "demo", "system_prompt": system_prompt},
        "rewards": [{"name": "numeric_answer"}],
        "rloo": {"num_generations": 4, "per_device_train_batch_size": 8, "max_completion_length": 16, "max_steps": 2},
    }
    (run_dir / "config.yaml").write_text(yaml.safe_dump(config))
    (run_dir / "status.json").write_text(json.dumps({"state": "finished", "step": 2, "max_steps": 2, "model": str(model_dir)}))
    code = ("from rloo_studio.demo.tinymodel import save_random_adapter as s; "
            f"s({str(model_dir)!r}, {str(run_dir / 'adapter')!r}, seed=1); "
            f"s({str(model_dir)!r}, {str(run_dir / 'checkpoints' / 'checkpoint-1')!r}, seed=2)")
    run_code(code, stack="plain", check=True, timeout=300, cwd=ROOT)
    (run_dir / "checkpoints" / "checkpoint-1" / "trainer_state.json").write_text("{}")
    return run_dir


def built_once(tmp_path_factory, name: str, build) -> Path:
    """The folder `name`, made by `build(folder)` once for the whole test session, whatever the test processes.

    With pytest-xdist each test process has its own session, so a session fixture alone would build once per
    process: the folder lives beside the processes' own temp folders instead, and a file lock lets the first
    process build it while the others wait. `build` must leave the folder complete or raise.
    """
    base = tmp_path_factory.getbasetemp()
    shared = base.parent if os.environ.get("PYTEST_XDIST_WORKER") else base
    folder, done = shared / name, shared / f"{name}.done"
    with FileLock(str(shared / f"{name}.lock")):
        if not done.exists():
            shutil.rmtree(folder, ignore_errors=True)  # a build that failed in another process
            folder.mkdir()
            build(folder)
            done.touch()
    return folder
