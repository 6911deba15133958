"""The prompt <-> reward check: what each reward looks for in a completion, and whether the prompts ask for it.

RLOO learns only from prompt groups whose completions score differently. A reward that looks for a format (an
`<answer>` tag, `\\boxed{}`, `####`, a JSON object with some keys) gives every completion the same score when the
model never writes that format, and it rarely does unless the system prompt or the prompts ask for it. This module
reads what each reward looks for — from a builtin's parameters, or from the string literals of a user's reward file
(tags, `\\boxed`, `####`, and the keys read from what `json.loads` returned) — and checks whether the system prompt
or any of the prompts mention it (case-insensitively). For each format nobody asks for it suggests a sentence to add
to the system prompt. Given sampled completions (the reward preview) it also counts how many already write the
format: a model that writes it unasked (the demo model writes `<think>` on its own) is noted, not warned about, and
one that almost never writes it brings the offer of the format warm-up (`warmup_offer`, the one rule the reward
preview and the difficulty scan read).

It only reads: it never runs the person's code (the source is parsed, not imported) and never refuses a run; the
pre-flight check prints its warnings and the reward preview returns them in its result. A reward it cannot read
(a file that does not parse, a judge, a reward model) is left out, not guessed at.
"""

from __future__ import annotations

import ast
import re
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Sequence

from ..config import RewardSpec
from .builtin import completion_text, valid_json

# Keyword arguments TRL passes besides the dataset columns, and the keys of a chat message: reading these is not
# looking for a format.
_TRL_NAMES = {"prompts", "completions", "completion_ids", "trainer_state", "log_extra", "log_metric", "kwargs"}
_MESSAGE_KEYS = {"role", "content", "type", "text"}
_TAG_RE = re.compile(r"</?([A-Za-z][\w-]*)\s*>")
_BOXED_RE = re.compile(r"\\+boxed")
_HASH = "####"
# Tags of markup a reward may strip or quote rather than ask for; a reward looking for <br> is not asking for a format.
_NOT_FORMAT_TAGS = {"br", "p", "b", "i", "s", "unk", "pad", "eos", "bos"}

# At most this share of the sampled completions writing a format a reward looks for is "almost none": the groups then
# tie at one reward, RLOO learns from (nearly) no group, and the format warm-up is offered. One in twenty: a format
# written by a few completions already gives some groups spread, and RLOO can learn it from them.
FORMAT_RARE_SHARE = 0.05


@dataclass(frozen=True)
class Ask:
    """One format a reward looks for: `looks_for` in words, how a prompt asks for it (`asked_by`: every regex must
    match, case-insensitively), how a completion shows it (`written`), and the sentence to add when nobody asks."""
    reward: str
    looks_for: str
    asked_by: tuple[str, ...]
    written: Any  # (text) -> bool
    suggestion: str


def _tag_ask(reward: str, tag: str) -> Ask:
    pattern = re.compile(rf"</?{re.escape(tag)}\s*>", re.IGNORECASE)
    if tag.lower() == "think":
        sentence = "First think step by step between <think> and </think>, then give the answer."
    elif tag.lower() == "answer":
        sentence = "Put your final answer between <answer> and </answer>."
    else:
        sentence = f"Put the {tag} part of your reply between <{tag}> and </{tag}>."
    return Ask(reward, f"<{tag}>…</{tag}>", (pattern.pattern,), lambda text: bool(pattern.search(text)), sentence)


def _boxed_ask(reward: str) -> Ask:
    return Ask(reward, r"\boxed{…}", (r"\\?boxed",), lambda text: bool(re.search(r"\\boxed\s*\{", text)),
               r"Put your final answer in \boxed{}, e.g. \boxed{42}.")


def _hash_ask(reward: str) -> Ask:
    return Ask(reward, "#### before the answer", (re.escape(_HASH),), lambda text: _HASH in text,
               "End your reply with the final answer after ####, e.g. #### 42.")


def _json_ask(reward: str, keys: Sequence[str]) -> Ask:
    keys = list(dict.fromkeys(keys))
    if keys:
        named = ", ".join(f'"{k}"' for k in keys)
        check = valid_json(required_keys=keys)
        return Ask(reward, f"a JSON object with the keys {named}",
                   (r"\bjson\b", *(rf"(?<!\w){re.escape(k)}(?!\w)" for k in keys)),
                   lambda text: check([text])[0] == 1.0, f"Reply with a JSON object only, with the keys {named}.")
    check = valid_json()
    return Ask(reward, "a JSON object or array", (r"\bjson\b",), lambda text: check([text])[0] == 1.0,
               "Reply with a JSON object only.")


def _builtin_asks(spec: RewardSpec) -> list[Ask]:
    params, label = spec.params or {}, spec.label()
    if spec.name in ("think_format", "think_length"):
        return [_tag_ask(label, "think")]
    if spec.name == "numeric_answer":
        mode = params.get("mode", "auto")  # auto and last take any number: no format is needed
        return [_boxed_ask(label)] if mode == "boxed" else [_hash_ask(label)] if mode == "hash" else []
    if spec.name == "valid_json":
        keys = params.get("required_keys") or ()
        return [_json_ask(label, [keys] if isinstance(keys, str) else [str(k) for k in keys])]
    if spec.name == "regex_format" and isinstance(params.get("pattern"), str):
        return _literal_asks(label, [params["pattern"]])
    return []


# String methods whose argument a reward cuts away or cuts at (`c.split("</think>")[-1]`: the reply after any thinking):
# such a literal is not something the reward looks for, and it scores replies without it as well.
_CUTTING_METHODS = {"split", "rsplit", "partition", "rpartition", "replace", "removeprefix", "removesuffix", "strip",
                    "lstrip", "rstrip"}


def _literal_asks(label: str, strings: Sequence[str]) -> list[Ask]:
    """Tags, \\boxed and #### named in a reward's string literals (a regex pattern included)."""
    tags = list(dict.fromkeys(m.group(1) for s in strings for m in _TAG_RE.finditer(s)
                              if m.group(1).lower() not in _NOT_FORMAT_TAGS))
    asks = [_tag_ask(label, tag) for tag in tags]
    if any(_BOXED_RE.search(s) for s in strings):
        asks.append(_boxed_ask(label))
    if any(_HASH in s for s in strings):
        asks.append(_hash_ask(label))
    return asks


def _code_nodes(tree: ast.Module, function: str | None) -> list[ast.AST]:
    """The named function, the module-level functions it calls and the module-level names it reads (where patterns
    are compiled once), followed as far as they go; the whole file when no function is named."""
    if not function:
        return [tree]
    defined: dict[str, list[ast.AST]] = {}
    for node in tree.body:
        if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)):
            defined.setdefault(node.name, []).append(node)
        elif isinstance(node, (ast.Assign, ast.AnnAssign)):
            targets = node.targets if isinstance(node, ast.Assign) else [node.target]
            for target in targets:
                for name in ast.walk(target):
                    if isinstance(name, ast.Name):
                        defined.setdefault(name.id, []).append(node)
    nodes, todo, seen = [], [function], set()
    while todo:
        name = todo.pop()
        if name in seen:
            continue
        seen.add(name)
        for node in defined.get(name, []):
            if node not in nodes:
                nodes.append(node)
                todo.extend(n.id for n in ast.walk(node) if isinstance(n, ast.Name))
    return nodes


def _read_keys(nodes: list[ast.AST], columns: set[str]) -> list[str]:
    """String keys the code reads from a mapping (x["k"], x.get("k"), "k" in x), less columns and message keys."""
    keys = []
    for root in nodes:
        for node in ast.walk(root):
            found = None
            if isinstance(node, ast.Subscript) and isinstance(node.slice, ast.Constant):
                if not (isinstance(node.value, ast.Name) and node.value.id == "kwargs"):
                    found = node.slice.value
            elif (isinstance(node, ast.Call) and isinstance(node.func, ast.Attribute) and node.func.attr == "get"
                  and node.args and isinstance(node.args[0], ast.Constant)
                  and not (isinstance(node.func.value, ast.Name) and node.func.value.id == "kwargs")):
                found = node.args[0].value
            elif (isinstance(node, ast.Compare) and isinstance(node.left, ast.Constant)
                  and any(isinstance(op, ast.In) for op in node.ops)
                  and not any(isinstance(c, ast.Name) and c.id == "kwargs" for c in node.comparators)):
                found = node.left.value
            if isinstance(found, str) and found not in _MESSAGE_KEYS and found not in columns:
                keys.append(found)
    return keys


def _code_columns(nodes: list[ast.AST]) -> set[str]:
    """Dataset columns the code reads: its parameters besides TRL's, and kwargs["c"] / kwargs.get("c")."""
    columns = set()
    for root in nodes:
        for node in ast.walk(root):
            if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef)):
                columns |= {a.arg for a in node.args.args + node.args.kwonlyargs} - _TRL_NAMES
            elif (isinstance(node, ast.Subscript) and isinstance(node.value, ast.Name) and node.value.id == "kwargs"
                  and isinstance(node.slice, ast.Constant)):
                columns.add(node.slice.value)
            elif (isinstance(node, ast.Call) and isinstance(node.func, ast.Attribute) and node.func.attr == "get"
                  and isinstance(node.func.value, ast.Name) and node.func.value.id == "kwargs" and node.args
                  and isinstance(node.args[0], ast.Constant)):
                columns.add(node.args[0].value)
    return {c for c in columns if isinstance(c, str)}


def _calls_json_loads(nodes: list[ast.AST]) -> bool:
    for root in nodes:
        for node in ast.walk(root):
            if isinstance(node, ast.Call):
                f = node.func
                if (isinstance(f, ast.Attribute) and f.attr == "loads") or (isinstance(f, ast.Name) and f.id == "loads"):
                    return True
    return False


def _user_asks(spec: RewardSpec, base_dir: str | Path) -> list[Ask]:
    path = Path(spec.file)
    path = path if path.is_absolute() else Path(base_dir) / path
    try:
        tree = ast.parse(path.read_text(encoding="utf-8"))
    except (OSError, SyntaxError, ValueError):
        return []  # the pre-flight check reports a missing or broken file; nothing to read here
    nodes = _code_nodes(tree, spec.function)
    cutting = {id(a) for root in nodes for n in ast.walk(root) if isinstance(n, ast.Call)
               and isinstance(n.func, ast.Attribute) and n.func.attr in _CUTTING_METHODS for a in n.args}
    strings = [n.value for root in nodes for n in ast.walk(root)
               if isinstance(n, ast.Constant) and isinstance(n.value, str) and id(n) not in cutting]
    label = spec.label()
    asks = _literal_asks(label, strings)
    if _calls_json_loads(nodes):
        asks.append(_json_ask(label, _read_keys(nodes, _code_columns(nodes))))
    return asks


def reward_asks(specs: Sequence[RewardSpec], base_dir: str | Path = ".") -> list[Ask]:
    """Every format the rewards look for, one entry per reward and format. Judges and reward models are left out:
    what they look for is in their rubric or their weights, not in a pattern."""
    asks: list[Ask] = []
    for spec in specs:
        if spec.name:
            asks.extend(_builtin_asks(spec))
        elif spec.file:
            asks.extend(_user_asks(spec, base_dir))
    return asks


def _mentions(ask: Ask, text: str) -> bool:
    return all(re.search(p, text, re.IGNORECASE) for p in ask.asked_by)


def prompt_text(prompt: Any) -> str:
    """A prompt's words: the text itself, or every message's content of a chat prompt (the system message too)."""
    if isinstance(prompt, list):
        return "\n".join(str(m.get("content", "")) for m in prompt if isinstance(m, dict))
    return "" if prompt is None else str(prompt)


def check_asks(specs: Sequence[RewardSpec], base_dir: str | Path, system_prompt: str | None, prompts: Sequence[Any],
               completions: Sequence[Any] | None = None) -> list[dict]:
    """One finding per format the rewards look for: whether `system_prompt` or any of `prompts` asks for it, where,
    and (given sampled `completions`) how many write it. A finding nobody asks for carries a `warning` unless at
    least half the completions write the format anyway, which gives a `note` instead; both in config words."""
    texts = [prompt_text(p) for p in prompts]
    written = [completion_text(c) for c in completions] if completions is not None else None
    found = []
    for ask in reward_asks(specs, base_dir):
        in_system = bool(system_prompt) and _mentions(ask, system_prompt)
        asking = sum(_mentions(ask, t) for t in texts)
        where = "the system prompt" if in_system else f"{asking} of {len(texts)} prompts" if asking else None
        matched = sum(bool(ask.written(t)) for t in written) if written is not None else None
        finding = {"reward": ask.reward, "looks_for": ask.looks_for, "asked": where is not None, "asked_where": where,
                   "prompts": len(texts), "matched": matched, "completions": len(written) if written is not None else None,
                   "suggestion": ask.suggestion, "warning": None, "note": None}
        if where is None:
            nobody = (f"`{ask.reward}` looks for {ask.looks_for}, but neither data.system_prompt nor any of the "
                      f"{len(texts)} prompts checked asks for it")
            if written is not None and written and matched * 2 >= len(written):
                finding["note"] = f"{nobody}; {matched} of {len(written)} sampled completions write it anyway."
            else:
                seen = (f"; {matched} of {len(written)} sampled completions write it" if written else
                        " (unless the model writes it on its own: `rloo-studio preview` counts the completions that do)")
                finding["warning"] = (f"{nobody}{seen}. A model that never writes it scores the same on every completion "
                                      f"and RLOO learns nothing. Add to data.system_prompt: \"{ask.suggestion}\"")
        found.append(finding)
    return found


def warnings_from(findings: Sequence[dict]) -> list[str]:
    return [f["warning"] for f in findings if f.get("warning")]


MOSTLY_NO_SIGNAL = 0.5  # above this share of prompts whose completions all tie, most of a step teaches nothing


def warmup_offer(formats: list[dict], no_signal_share: float | None = None) -> str | None:
    """The one rule that offers the format warm-up, in the page's words: when at most FORMAT_RARE_SHARE of the sampled
    completions write a format a reward looks for, a sentence saying so, why it matters and what to do; else None.
    Why it matters follows the same completions' learnability (`no_signal_share`, the share of prompts whose
    completions all tie): most tie, and RLOO has nearly nothing to learn from; few tie (the other rewards tell them
    apart), and the format's reward alone teaches nothing yet.

    `formats`: rewards.asks.check_asks findings counted on sampled completions (reward, looks_for, matched,
    completions), from the reward preview or the scan (`format_counts`). The counts are in the sentence: on a few
    completions "almost none" is a rough measure, and the person sees how rough."""
    found = rare_format(formats)
    if found is None:
        return None
    first, also = found
    why = (f"Until some do, `{first['reward']}` gives them all the same score and teaches nothing (your other rewards "
           "still tell the completions apart)." if no_signal_share is not None and no_signal_share <= MOSTLY_NO_SIGNAL else
           "Without it every prompt's completions tie at the same reward and RLOO has (nearly) nothing to learn from.")
    return (f"**A format warm-up could help:** only {first['matched']} of {first['completions']} sampled completions write "
            f"`{first['looks_for']}`, which `{first['reward']}` looks for{also}. {why} Tick **Warm up the format first** in the Train "
            "tab's *Format warm-up* (opened for you): a few dozen supervised steps on replies in that format, then RLOO.")


def rare_format(formats: list[dict]) -> tuple[dict, str] | None:
    """warmup_offer's rule: the format fewest completions write, among those at most FORMAT_RARE_SHARE write, and how
    many others are as rare (words); None when no format is that rare."""
    rare = [f for f in formats if f.get("completions") and f.get("matched") is not None
            and f["matched"] <= FORMAT_RARE_SHARE * f["completions"]]
    if not rare:
        return None
    first = min(rare, key=lambda f: f["matched"] / f["completions"])
    others = len(rare) - 1
    return first, (f" (and {others} other format{'s' if others > 1 else ''} almost none writes)" if others else "")
