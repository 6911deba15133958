"""Reward files and the personal library: rewards a person keeps, shares and uses across projects.

A reward file is one self-contained `.py` file in TRL's reward contract that also carries, as a module-level
`REWARD = {...}` dict literal, its header: name, description, the dataset columns it needs, tags, parameters (the
values its code reads from `REWARD["parameters"]`), default weights per function, and its pinned examples (prompt,
completion, columns, the expected total's range) — the tests travel with the reward. The header is read with
`ast.literal_eval`, never by running the file; `parse` checks everything that needs no running (size, syntax,
header, functions, weights, columns); `examples_request` and `examples_report` are the two ends of checking the pinned
examples, which `workers.scorer.check_examples` scores in the scoring child between them, the same road the Rewards
tab's pinned checks take. The content hash (`content_hash`)
names a version: a run records the hash of every reward file it trained with (`record_run_rewards`, rewards.json).

The library is a folder of such files under the user's data folder (`library_dir`; RLOO_STUDIO_REWARDS_DIR
overrides it), with the bundled templates (templates.py) listed beside them: list, search, save (import),
duplicate, delete. Nothing here executes reward code in this process.

Over 500 lines because a reward file is one format read, written, listed and checked here: its header's parsing and
its rendering stay side by side, and the library's operations are a few lines each on top of them.
"""

from __future__ import annotations

import ast
import hashlib
import json
import os
import sys
from dataclasses import dataclass
from pathlib import Path

from ..errors import RewardError
from ..protocol import ScoreRequest, WrittenShape
from ..runs import REWARDS_FILE, slugify, write_json_atomic

HEADER = "REWARD"
FORMAT = 1
MAX_FILE_BYTES = 256 * 1024  # a reward is code and a few examples; a bigger file is data or something else
LIBRARY_ENV = "RLOO_STUDIO_REWARDS_DIR"
RUN_RECORD_FILE = "rewards.json"  # in a run folder: which reward files (and versions) trained it
BUNDLED = "bundled"  # where a bundled template is listed from
REQUIRED_KEYS = {"name": str, "description": str, "columns": list, "tags": list, "parameters": dict, "weights": dict,
                 "examples": list}
OPTIONAL_KEYS = {"format": int, "rules": dict}
EXAMPLE_KEYS = ("prompt", "completion", "columns", "total")
# What TRL passes to every reward function besides the dataset columns (rewards.user.TRL_REWARD_ARGS).
_TRL_ARGS = {"prompts", "completions", "completion_ids", "trainer_state", "log_extra", "log_metric"}
HEADER_EXAMPLE = ('REWARD = {"name": "my reward", "description": "what it rewards", "columns": ["answer"], "tags": [], '
                  '"parameters": {}, "weights": {"my_reward": 1.0}, "examples": [{"prompt": "2+2?", "completion": "4", '
                  '"columns": {"answer": "4"}, "total": [1.0, 1.0]}]}')


@dataclass
class RewardFile:
    """A reward file read and checked (`parse`): its header's fields, its source text and where it came from."""
    name: str
    description: str
    columns: list[str]
    tags: list[str]
    parameters: dict
    weights: dict[str, float]
    examples: list[dict]
    source: str
    functions: list[str]
    rules: dict | None = None
    path: str | None = None
    origin: str = "file"  # "library", BUNDLED or "file"

    @property
    def hash(self) -> str:
        return content_hash(self.source)

    def summary(self) -> dict:
        """What `rloo-studio rewards list --json` prints for it."""
        return {"name": self.name, "description": self.description, "columns": self.columns, "tags": self.tags,
                "functions": self.functions, "weights": self.weights, "examples": len(self.examples), "hash": self.hash,
                "origin": self.origin, "path": self.path, "rule_built": self.rules is not None}


def content_hash(source: str) -> str:
    """The version of a reward file: sha256 of its text (line endings made \\n, so a copy on Windows hashes alike)."""
    text = source.replace("\r\n", "\n")
    return "sha256:" + hashlib.sha256(text.encode("utf-8")).hexdigest()


def short_hash(full: str) -> str:
    return full.split(":", 1)[-1][:12]


def library_dir() -> Path:
    """The personal library folder: RLOO_STUDIO_REWARDS_DIR, else the platform's per-user data folder."""
    if os.environ.get(LIBRARY_ENV):
        return Path(os.environ[LIBRARY_ENV]).expanduser()
    home = Path.home()
    if sys.platform == "win32":
        base = Path(os.environ.get("APPDATA") or home / "AppData" / "Roaming")
    elif sys.platform == "darwin":
        base = home / "Library" / "Application Support"
    else:
        base = Path(os.environ.get("XDG_DATA_HOME") or home / ".local" / "share")
    return base / "rloo-studio" / "rewards"


# ---- reading and writing ------------------------------------------------------------------------

def _header_node(tree: ast.Module) -> ast.Assign | None:
    for node in tree.body:
        if isinstance(node, ast.Assign) and any(isinstance(t, ast.Name) and t.id == HEADER for t in node.targets):
            return node
    return None


def _refuse(filename: str, what: str, why: str, fix: str) -> RewardError:
    return RewardError(f"{filename} is not a usable reward file: {what}", why, fix)


def read_header(source: str, filename: str = "reward.py") -> dict:
    """The file's `REWARD = {...}` header as a dict, read without running the file."""
    from .user import _parse

    tree = _parse(source, filename)  # a syntax error: RewardError with the line
    node = _header_node(tree)
    if node is None:
        raise _refuse(filename, f"it has no `{HEADER} = {{...}}` header",
                      "a reward file carries its name, columns, weights and pinned examples in a dict literal at the top "
                      "level, so they travel with the code",
                      f"add one after the imports, e.g. {HEADER_EXAMPLE}")
    try:
        header = ast.literal_eval(node.value)
    except (ValueError, TypeError, SyntaxError, MemoryError, RecursionError):
        raise _refuse(filename, f"its `{HEADER}` header (line {node.lineno}) is not a plain literal",
                      "the header is read without running the file, so it may hold only strings, numbers, lists, dicts, "
                      "True/False/None — no names, calls or f-strings", "write the values out") from None
    if not isinstance(header, dict):
        raise _refuse(filename, f"its `{HEADER}` (line {node.lineno}) is a {type(header).__name__}, not a dict",
                      "the header is a dict of name, description, columns, ...", f"write it as {HEADER_EXAMPLE}")
    return header


def _number(value) -> bool:
    return isinstance(value, (int, float)) and not isinstance(value, bool)


def _header_problems(header: dict, functions: list[str], signatures: dict[str, list[str]]) -> list[str]:
    problems = []
    for key, kind in REQUIRED_KEYS.items():
        if key not in header:
            problems.append(f"the header has no `{key}`")
        elif not isinstance(header[key], kind):
            problems.append(f"the header's `{key}` is a {type(header[key]).__name__}, not a {kind.__name__}")
    for key, kind in OPTIONAL_KEYS.items():
        if key in header and not isinstance(header[key], kind):
            problems.append(f"the header's `{key}` is a {type(header[key]).__name__}, not a {kind.__name__}")
    unknown = [k for k in header if k not in REQUIRED_KEYS and k not in OPTIONAL_KEYS]
    if unknown:
        problems.append(f"the header has unknown key(s) {', '.join(map(str, unknown))} "
                        f"(known: {', '.join([*REQUIRED_KEYS, *OPTIONAL_KEYS])})")
    if problems:
        return problems
    if header.get("format", FORMAT) > FORMAT:
        problems.append(f"the header's format {header['format']} is newer than this version reads ({FORMAT})")
    if not header["name"].strip():
        problems.append("the header's `name` is empty")
    columns = header["columns"]
    if not all(isinstance(c, str) and c for c in columns) or not all(isinstance(t, str) for t in header["tags"]):
        problems.append("the header's `columns` and `tags` must be lists of words")
    if not functions:
        problems.append("the file defines no public reward function (a top-level `def` whose name does not start with _)")
    for fn, args in signatures.items():
        missing = [a for a in args if a not in _TRL_ARGS and a not in columns]
        if missing:
            problems.append(f"function `{fn}` takes {', '.join(missing)}, which the header's `columns` do not list "
                            f"(add {', '.join(repr(m) for m in missing)} to `columns`)")
    weights = header["weights"]
    for fn in weights:
        if fn not in functions:
            problems.append(f"the header's `weights` name `{fn}`, which the file does not define (its functions: {', '.join(functions)})")
        elif not _number(weights[fn]):
            problems.append(f"the weight of `{fn}` is {weights[fn]!r}, not a number")
    unweighted = [fn for fn in functions if fn not in weights]
    if unweighted:
        problems.append(f"the header's `weights` give no weight to {', '.join(unweighted)} "
                        f"(e.g. {', '.join(f'{fn!r}: 1.0' for fn in unweighted)})")
    examples = header["examples"]
    if not examples:
        problems.append("the header has no pinned examples: a reward file brings its tests, which importing runs")
    for i, ex in enumerate(examples):
        where = f"examples[{i}]"
        if not isinstance(ex, dict):
            problems.append(f"{where} is not a dict of {', '.join(EXAMPLE_KEYS)}")
            continue
        bad = [k for k in ex if k not in EXAMPLE_KEYS]
        if bad:
            problems.append(f"{where} has unknown key(s) {', '.join(map(str, bad))} (known: {', '.join(EXAMPLE_KEYS)})")
        if not isinstance(ex.get("prompt"), str) or not isinstance(ex.get("completion"), str):
            problems.append(f"{where} needs a `prompt` and a `completion`, both text")
        row = ex.get("columns", {})
        if not isinstance(row, dict):
            problems.append(f"{where}'s `columns` is not a dict of column: value")
        else:
            lacking = [c for c in columns if c not in row]
            if lacking:
                problems.append(f"{where} gives no value for column(s) {', '.join(lacking)}, which the reward needs")
        total = ex.get("total")
        if not (isinstance(total, list) and len(total) == 2 and all(t is None or _number(t) for t in total)):
            problems.append(f"{where}'s `total` is {total!r}: give the expected total's range as [low, high] (None: open)")
        elif None not in total and total[0] > total[1]:
            problems.append(f"{where}'s `total` range {total} is empty (low above high)")
    return problems


def _required_args(fn: ast.FunctionDef | ast.AsyncFunctionDef) -> list[str]:
    """The arguments a function cannot be called without: TRL's own, or dataset columns (one with a default is optional)."""
    args = fn.args.posonlyargs + fn.args.args
    return [a.arg for a in args[:len(args) - len(fn.args.defaults)]] + \
        [a.arg for a, default in zip(fn.args.kwonlyargs, fn.args.kw_defaults) if default is None]


def parse(source: str, filename: str = "reward.py", path: str | None = None, origin: str = "file") -> RewardFile:
    """Check a reward file's text without running it; raises RewardError naming every problem."""
    from .user import _parse

    size = len(source.encode("utf-8"))
    if size > MAX_FILE_BYTES:
        raise _refuse(filename, f"it is {size / 1024:.0f} KiB, over the {MAX_FILE_BYTES // 1024} KiB limit",
                      "a reward file holds code and a few pinned examples; a bigger one likely holds data or is not a reward",
                      "keep data in the dataset (the reward gets it through its columns) and trim the file")
    header = read_header(source, filename)
    tree = _parse(source, filename)
    defs = [n for n in tree.body if isinstance(n, (ast.FunctionDef, ast.AsyncFunctionDef)) and not n.name.startswith("_")]
    functions = [n.name for n in defs]
    signatures = {n.name: _required_args(n) for n in defs}
    problems = _header_problems(header, functions, signatures)
    if problems:
        raise _refuse(filename, "\n  - " + "\n  - ".join(problems),
                      "the header says what the reward needs and how to test it; the app trusts it only when it matches the code",
                      "fix the header (see docs/rewards.md, Reward files)")
    return RewardFile(name=header["name"].strip(), description=header["description"], columns=list(header["columns"]),
                      tags=list(header["tags"]), parameters=dict(header["parameters"]),
                      weights={k: float(v) for k, v in header["weights"].items()}, examples=list(header["examples"]),
                      source=source, functions=functions, rules=header.get("rules"), path=path, origin=origin)


def read(path: str | Path, origin: str = "file") -> RewardFile:
    """`parse` a reward file on disk (a file over MAX_FILE_BYTES is refused before it is read)."""
    path = Path(path)
    if not path.is_file():
        raise RewardError(f"reward file not found: {path}", "", "give the path of a .py reward file")
    if path.stat().st_size > MAX_FILE_BYTES:
        raise _refuse(str(path), f"it is {path.stat().st_size / 1024:.0f} KiB, over the {MAX_FILE_BYTES // 1024} KiB limit",
                      "a reward file holds code and a few pinned examples; a bigger one likely holds data or is not a reward",
                      "keep data in the dataset (the reward gets it through its columns) and trim the file")
    try:
        source = path.read_text(encoding="utf-8")
    except UnicodeDecodeError:
        raise _refuse(str(path), "it is not UTF-8 text", "Python source is UTF-8", "save it as UTF-8") from None
    return parse(source, str(path), str(path), origin)


def render(header: dict, code: str) -> str:
    """A reward file's text: a docstring from the header's name and description, the code's imports, the header,
    then the rest of the code (after the imports, so the file stays lint-clean)."""
    header = {"format": FORMAT, **header}
    lines = code.strip("\n").splitlines()
    tree = ast.parse(code.strip("\n"))
    imports_end = 0
    for node in tree.body:
        if not isinstance(node, (ast.Import, ast.ImportFrom)):
            break
        imports_end = node.end_lineno or imports_end
    literal = python_literal(header)
    assert ast.literal_eval(literal) == header  # the header must read back as written
    blocks = [_docstring(header)]
    if imports_end:
        blocks.append("\n".join(lines[:imports_end]))
    blocks.append(f"{HEADER} = {literal}")
    rest = "\n".join(lines[imports_end:]).strip("\n")
    return "\n\n".join(blocks) + ("\n\n\n" + rest if rest else "") + "\n"


def python_literal(value, indent: int = 0, width: int = 110) -> str:
    """`value` as a readable Python literal: a container on one line when it fits, else one item per line."""
    flat = repr(value)
    if not isinstance(value, (dict, list)) or not value or len(flat) + indent <= width:
        return flat
    pad = " " * (indent + 4)
    if isinstance(value, dict):
        items = [f"{pad}{k!r}: {python_literal(v, indent + 4, width)}," for k, v in value.items()]
        return "{\n" + "\n".join(items) + "\n" + " " * indent + "}"
    items = [f"{pad}{python_literal(v, indent + 4, width)}," for v in value]
    return "[\n" + "\n".join(items) + "\n" + " " * indent + "]"


def _docstring(header: dict) -> str:
    text = f"{header['name']}: {header['description']}".replace("\\", "\\\\").replace('"""', '\\"\\"\\"')
    return f'"""{text}\n\nA reward file: plain Python in TRL\'s reward contract; the {HEADER} dict below is its header."""'


def from_code(source: str, name: str, description: str = "", tags=(), examples=(), weights: dict | None = None) -> str:
    """A reward file made of reward code (the editor's, a plain rewards.py): a header with `name`, the columns its
    functions take (arguments without a default that TRL does not pass), weights (1.0 for any not given) and the
    pinned `examples`. The code's own module docstring gives the description when none is given. Code that already
    has a header keeps it, with these fields changed. Check the result with `parse`."""
    from .user import _parse

    tree = _parse(source, "reward.py")
    if _header_node(tree) is not None:
        changes = {"name": name, "tags": list(tags), "examples": list(examples)} | ({"description": description} if description else {})
        return with_header(source, **changes | ({"weights": weights} if weights else {}))
    lines = source.strip("\n").splitlines()
    first = tree.body[0] if tree.body else None
    if isinstance(first, ast.Expr) and isinstance(first.value, ast.Constant) and isinstance(first.value.value, str):
        description = description or first.value.value.strip().splitlines()[0]
        source_lines = source.splitlines()
        lines = source_lines[:first.lineno - 1] + source_lines[first.end_lineno:]  # the header's docstring replaces it
    functions = [n for n in tree.body if isinstance(n, (ast.FunctionDef, ast.AsyncFunctionDef)) and not n.name.startswith("_")]
    columns = []
    for fn in functions:
        columns += [a for a in _required_args(fn) if a not in _TRL_ARGS and a not in columns]
    header = {"name": name, "description": description, "columns": columns, "tags": list(tags), "parameters": {},
              "weights": {fn.name: float((weights or {}).get(fn.name, 1.0)) for fn in functions}, "examples": list(examples)}
    return render(header, "\n".join(lines))


def with_header(source: str, **changes) -> str:
    """The file's text with header fields changed (e.g. a new name for a duplicate); the code is left as it is."""
    from .user import _parse

    header = {**read_header(source), **changes}
    tree = _parse(source, "reward.py")
    node = _header_node(tree)
    lines = source.splitlines(keepends=True)
    literal = python_literal(header)
    text = "".join(lines[:node.lineno - 1]) + f"{HEADER} = {literal}\n" + "".join(lines[node.end_lineno:])
    first = tree.body[0]
    if isinstance(first, ast.Expr) and isinstance(first.value, ast.Constant) and isinstance(first.value.value, str):
        lines = text.splitlines(keepends=True)  # the docstring (above the header) says the new name too
        text = "".join(lines[:first.lineno - 1]) + _docstring(header) + "\n" + "".join(lines[first.end_lineno:])
    return text


# ---- the library --------------------------------------------------------------------------------

def template_file(name: str) -> str:
    """Bundled template `name` (rewards/templates.py) as a reward file: its code under a header with the function's own
    first docstring line as description, the columns its function takes, weight 1.0, and the template's tags and
    pinned examples (templates.TEMPLATE_HEADERS)."""
    from ..data import TRL_REWARD_ARGS
    from .templates import TEMPLATE_HEADERS, template

    code = template(name)
    functions = [n for n in ast.parse(code).body if isinstance(n, ast.FunctionDef) and not n.name.startswith("_")]
    columns = [a.arg for f in functions for a in f.args.args if a.arg not in TRL_REWARD_ARGS]
    description = (ast.get_docstring(functions[0]) or name).splitlines()[0]
    header = {"name": name, "description": description, "columns": list(dict.fromkeys(columns)), **TEMPLATE_HEADERS[name],
              "parameters": {}, "weights": {f.name: 1.0 for f in functions}}
    return render({k: header[k] for k in ("name", "description", "columns", "tags", "parameters", "weights", "examples")}, code)


def bundled() -> list[RewardFile]:
    """The bundled templates as reward files (they are listed beside the library, never stored in it)."""
    from .templates import TEMPLATE_HEADERS

    return [parse(template_file(name), f"{name}.py", None, BUNDLED) for name in TEMPLATE_HEADERS]


def entries(folder: str | Path | None = None, with_bundled: bool = True) -> tuple[list[RewardFile], list[str]]:
    """(the library's reward files, problems with files in it that could not be read), bundled templates last."""
    folder = Path(folder) if folder else library_dir()
    found, problems = [], []
    for path in sorted(folder.glob("*.py")) if folder.is_dir() else []:
        try:
            found.append(read(path, "library"))
        except RewardError as exc:
            problems.append(exc.what)
    return found + (bundled() if with_bundled else []), problems


def search(query: str, folder: str | Path | None = None) -> list[RewardFile]:
    """Library entries whose name, description, tags, columns or function names contain every word of `query`."""
    words = query.casefold().split()
    listed, _ = entries(folder)

    def text(r: RewardFile) -> str:
        return " ".join([r.name, r.description, *r.tags, *r.columns, *r.functions]).casefold()

    return [r for r in listed if all(w in text(r) for w in words)]


def find(name: str, folder: str | Path | None = None) -> RewardFile:
    """The library entry (or bundled template) called `name`; raises RewardError naming the ones there are."""
    listed, _ = entries(folder)
    for r in listed:
        if r.name == name or (r.path and Path(r.path).stem == name):
            return r
    from ..config import did_you_mean

    names = [r.name for r in listed]
    raise RewardError(f"no reward called {name!r} in the library{did_you_mean(name, names)}",
                      f"the library ({folder or library_dir()}) and the bundled templates hold: {', '.join(names) or 'nothing'}",
                      "see `rloo-studio rewards list`, or import a reward file with `rloo-studio rewards import FILE`")


def _target(name: str, folder: Path) -> Path:
    return folder / f"{slugify(name, 48) if slugify(name, 48) != 'run' else 'reward'}.py"


def save(reward: RewardFile, folder: str | Path | None = None, replace: bool = False) -> Path:
    """Store a checked reward file in the library under its name; refuses to overwrite another unless `replace`."""
    folder = Path(folder) if folder else library_dir()
    listed, _ = entries(folder, with_bundled=False)
    same = next((r for r in listed if r.name == reward.name), None)
    if same is not None and not replace and same.hash != reward.hash:
        raise RewardError(f"the library already has a reward called {reward.name!r} (version {short_hash(same.hash)})",
                          "a name stands for one reward, so runs and people know which one they mean",
                          "pass --replace to replace it, or import it under another name (`rloo-studio rewards duplicate`)")
    target = Path(same.path) if same is not None else _target(reward.name, folder)
    n = 2
    while same is None and target.exists():  # another reward's name made the same file name
        target, n = folder / f"{_target(reward.name, folder).stem}-{n}.py", n + 1
    folder.mkdir(parents=True, exist_ok=True)
    from ..runs import write_text_atomic

    write_text_atomic(target, reward.source)
    return target


def duplicate(name: str, new_name: str, folder: str | Path | None = None) -> Path:
    """Copy a library entry (or a bundled template) under a new name, into the library."""
    original = find(name, folder)
    if any(r.name == new_name for r in entries(folder)[0]):
        raise RewardError(f"the library already has a reward called {new_name!r}", "each name stands for one reward",
                          "pick another name")
    return save(parse(with_header(original.source, name=new_name), f"{new_name}.py"), folder)


def delete(name: str, folder: str | Path | None = None) -> Path:
    """Remove a library entry; bundled templates cannot be deleted. Runs keep their own copies."""
    entry = find(name, folder)
    if entry.origin != "library":
        raise RewardError(f"{name!r} is a bundled template", "bundled templates come with RLOO Studio and are not stored in "
                          "the library", "duplicate it to make your own copy; that one you can delete")
    Path(entry.path).unlink()
    return Path(entry.path)


# ---- checking ----------------------------------------------------------------------------------

def column_problems(reward: RewardFile, dataset_columns: list[str]) -> list[str]:
    """The columns the reward needs that the data lacks."""
    from ..config import did_you_mean

    return [f"the reward needs the column `{c}`, which the data lacks{did_you_mean(c, dataset_columns)} "
            f"(its columns: {', '.join(dataset_columns)})" for c in reward.columns if c not in dataset_columns]


def examples_request(reward: RewardFile, cfg=None) -> ScoreRequest:
    """The scoring request of the pinned examples: each a one-completion group, scored with the file's functions and
    default weights; with a run config, shaped as its training shapes the data (chat or plain) with its tokenizer."""
    from ..config import RewardSpec

    request = ScoreRequest(
        groups=[{"prompt": ex["prompt"], "row": dict(ex.get("columns") or {}), "completions": [ex["completion"]]}
                for ex in reward.examples],
        num_generations=1, probes=False, source=reward.source,
        rewards=[dict(RewardSpec(file=REWARDS_FILE, function=fn, weight=reward.weights[fn]).__dict__) for fn in reward.functions])
    if cfg is not None:
        from .preview import tokenizer_source

        request.written = WrittenShape(prompt_format=cfg.data.prompt_format, system_prompt=cfg.data.system_prompt)
        request.chat_template_kwargs = cfg.chat_template_kwargs()
        request.tokenizer = tokenizer_source(cfg.model.name_or_path, cfg.base_dir)
    return request


def example_verdicts(reward: RewardFile, result: dict) -> list[dict]:
    """Per pinned example: its total, whether it lies in the expected range, and why not. A function that raised
    fails the example (its None would otherwise drop out of the total and hide the error)."""
    raised = {n: f["errors"][0]["error"] for n, f in result.get("functions", {}).items() if f.get("errors")}
    verdicts = []
    for ex, row in zip(reward.examples, result.get("rows", [])):
        low, high = ex["total"]
        total = row["total"]
        broken = [n for n in raised if row["rewards"].get(n) is None]
        why = "; ".join(f"`{n}` raised {raised[n]}" for n in broken)
        if not why and total is None:
            why = "every function returned None"
        elif not why and ((low is not None and total < low) or (high is not None and total > high)):
            why = f"the total {total:g} lies outside the expected {low}..{high}"
        verdicts.append({"completion": ex["completion"], "total": total, "expected": [low, high], "rewards": row["rewards"],
                         "ok": not why, "why": why})
    return verdicts


def examples_report(reward: RewardFile, result: dict, cfg=None) -> dict:
    """The pinned examples' report from the scoring child's `result` for `examples_request(reward, cfg)` (scored by
    workers.scorer.check_examples): {"verdicts", "passed", "problems", "tokens"}. Without a run config,
    `completion_ids` are one id per character (no tokenizer is at hand): said in "tokens"."""
    if result.get("problems"):
        return {"verdicts": [], "passed": False, "problems": result["problems"], "tokens": None}
    verdicts = example_verdicts(reward, result)
    tokens = ("the run's tokenizer" if cfg is not None else
              "one per character (no config given: rewards that count tokens see characters)")
    return {"verdicts": verdicts, "passed": all(v["ok"] for v in verdicts), "problems": [], "tokens": tokens}


# ---- runs --------------------------------------------------------------------------------------

def run_record(copies: list[tuple[str | Path, str | Path]]) -> dict:
    """rewards.json's content: for each reward file a run trained with (where it came from, the run's copy), the copy's
    content hash and, for a reward file with a header, its name and whether it came from the library: read from the
    library's folder, or a copy of one of its versions (the app's runs copy the code editor's text, where the page's
    *Use* puts a library reward)."""
    files = []
    library = library_dir().resolve()
    versions = None  # the library's content hashes, read once, when a copy did not come from its folder
    for origin, copy in copies:
        copy = Path(copy)
        if not copy.is_file() or any(f["file"] == copy.name for f in files):
            continue  # one entry per file, though several functions of it may be used
        source = copy.read_text(encoding="utf-8", errors="replace")
        entry = {"file": copy.name, "from": str(origin), "hash": content_hash(source), "name": None, "library": False}
        try:
            entry["name"] = read_header(source, copy.name).get("name")
        except RewardError:
            pass  # a plain reward file without a header: its hash still names the version
        entry["library"] = Path(origin).resolve().parent == library
        if not entry["library"]:
            versions = versions if versions is not None else {r.hash for r in entries(with_bundled=False)[0]}
            entry["library"] = entry["hash"] in versions
        files.append(entry)
    return {"files": files}


def record_run_rewards(run_dir: str | Path, copies: list[tuple[str | Path, str | Path]]) -> None:
    """Write rewards.json into the run folder (see `run_record`)."""
    write_json_atomic(Path(run_dir) / RUN_RECORD_FILE, run_record(copies))


def read_run_record(run_dir: str | Path) -> dict | None:
    path = Path(run_dir) / RUN_RECORD_FILE
    try:
        return json.loads(path.read_text(encoding="utf-8"))
    except (OSError, ValueError):
        return None
