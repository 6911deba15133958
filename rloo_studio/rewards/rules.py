"""The rule builder: reward blocks as data, and the generator that turns a rule set into a reward file.

A rule set is `{"combine": "sum" | "all" | "any", "blocks": [{"block": ID, "name": ..., "weight": ..., "params":
{...}}]}`. Each block in `BLOCKS` carries a one-line explanation, its parameters with defaults and a worked example
(a reply, the row's columns, the score it gets), which the unit tests score through the generated code, so the
example shown is what the code does. `generate(rules, ...)` writes plain, readable Python in TRL's reward contract:
with `sum` one public function per block (TRL logs each, the header's default weights add them up); with `all` / `any`
the blocks become private helpers and one public function gives the lowest / highest of their scores. A block's
numbers and words are read from the header's `parameters`, so the file says each of them once. Nothing here runs
the code; `library` reads and checks the file it becomes.
"""

from __future__ import annotations

import keyword
import re
from dataclasses import dataclass, field

from ..errors import RewardError

COMBINES = {
    "sum": "each block is its own reward function; the total adds their scores times their weights",
    "all": "one reward function: 1.0 only when every block scores 1.0 (it gives the lowest block score)",
    "any": "one reward function: 1.0 when any block scores 1.0 (it gives the highest block score)",
}
# Names the generated functions use themselves: a column of that name would clash.
RESERVED = {"completions", "completion_ids", "prompts", "trainer_state", "log_extra", "log_metric", "kwargs", "p", "texts",
            "column", "scores"}
JSON_TYPES = ("string", "number", "integer", "boolean", "list", "object", "null")
SCRIPTS = ("latin", "cyrillic", "greek", "arabic", "hebrew", "devanagari", "cjk", "hiragana", "katakana", "hangul", "thai")


@dataclass(frozen=True)
class Block:
    id: str
    title: str
    explanation: str        # one line, shown beside the block
    params: dict            # name -> default; a `column` param names a dataset column (it becomes an argument)
    example: dict           # {"reply", "columns", "params", "score"}: a worked case, checked by the unit tests
    imports: tuple = ()
    uses_ids: bool = False  # reads completion_ids (token counts)
    body: str = ""          # the function's body; `p` is the block's parameters, `texts` the replies' text
    param_help: dict = field(default_factory=dict)


def _block(**kw) -> Block:
    return Block(**kw)


BLOCKS: dict[str, Block] = {b.id: b for b in (
    _block(id="contains", title="Reply contains a column's value",
           explanation="1.0 when the answer (the text after </think>) contains the row's column value, ignoring case, "
                       "spacing and Unicode look-alikes; None when the row's value is empty.",
           params={"column": "answer"},
           example={"reply": "<think>47+28</think>The answer is 75.", "columns": {"answer": "75"}, "params": {}, "score": 1.0},
           body='''
    scores = []
    for text, want in zip(texts, column):
        want = _normalise(want)
        scores.append(None if not want else 1.0 if want in _normalise(_answer_part(text)) else 0.0)
    return scores'''),
    _block(id="number", title="Number within a tolerance of a column",
           explanation="1.0 when the last number of the answer is within `tolerance` of the number in the row's column "
                       "(commas in 1,234 are ignored); None when the column holds no number.",
           params={"column": "answer", "tolerance": 0.0}, imports=("re",),
           example={"reply": "<think>7*6</think>It is 42.0", "columns": {"answer": "42"}, "params": {"tolerance": 0.01},
                    "score": 1.0},
           body='''
    def last_number(value):
        found = re.findall(r"-?\\d[\\d,]*(?:\\.\\d+)?", str(value))
        return float(found[-1].replace(",", "")) if found else None

    scores = []
    for text, want in zip(texts, column):
        want, got = last_number(want), last_number(_answer_part(text))
        scores.append(None if want is None else 1.0 if got is not None and abs(got - want) <= p["tolerance"] + 1e-9 else 0.0)
    return scores'''),
    _block(id="pattern", title="Matches a pattern",
           explanation="1.0 when the reply matches the regular expression `pattern` somewhere (the whole reply with "
                       "`whole`), ignoring case.",
           params={"pattern": r"\d+", "whole": False}, imports=("re",),
           example={"reply": "Final: 12 apples", "columns": {}, "params": {"pattern": r"final: \d+"}, "score": 1.0},
           body='''
    pattern = re.compile(p["pattern"], re.IGNORECASE | re.DOTALL)
    match = pattern.fullmatch if p["whole"] else pattern.search
    return [1.0 if match(text.strip()) else 0.0 for text in texts]'''),
    _block(id="tags", title="Text between tags",
           explanation="1.0 when the reply has non-empty text between `open` and `close` (e.g. <answer>…</answer>) and, "
                       "with a `column`, that text equals the row's value (normalised).",
           params={"open": "<answer>", "close": "</answer>", "column": ""},
           example={"reply": "<answer> Paris </answer>", "columns": {"answer": "paris"}, "params": {"column": "answer"},
                    "score": 1.0},
           body='''
    scores = []
    for i, text in enumerate(texts):
        start = text.rfind(p["open"])
        end = text.find(p["close"], start + len(p["open"])) if start >= 0 else -1
        inside = _normalise(text[start + len(p["open"]):end]) if end >= 0 else ""
        if column is None:
            scores.append(1.0 if inside else 0.0)
        else:
            want = _normalise(column[i])
            scores.append(None if not want else 1.0 if inside == want else 0.0)
    return scores'''),
    _block(id="boxed", title="Inside \\boxed{}",
           explanation="1.0 when the reply has a \\boxed{…} (the last one counts, nested braces allowed) and, with a "
                       "`column`, its content equals the row's value (normalised, spaces ignored).",
           params={"column": ""},
           example={"reply": "so x = \\boxed{\\frac{1}{2}}", "columns": {"answer": "\\frac{1}{2}"},
                    "params": {"column": "answer"}, "score": 1.0},
           body='''
    def last_boxed(text):
        start = text.rfind("\\\\boxed{")
        if start < 0:
            return None
        depth, i = 0, start + len("\\\\boxed")
        for j in range(i, len(text)):
            depth += {"{": 1, "}": -1}.get(text[j], 0)
            if depth == 0:
                return text[i + 1:j]
        return None

    scores = []
    for i, text in enumerate(texts):
        inside = last_boxed(text)
        got = _normalise(inside).replace(" ", "") if inside is not None else None
        if column is None:
            scores.append(1.0 if got else 0.0)
        else:
            want = _normalise(column[i]).replace(" ", "")
            scores.append(None if not want else 1.0 if got == want else 0.0)
    return scores'''),
    _block(id="json", title="Valid JSON with given keys",
           explanation="1.0 when the answer (after </think>, a ```json fence allowed) is a JSON object holding every key "
                       "in `keys`, and each key in `types` with a value of that type (string, number, integer, boolean, "
                       "list, object, null); else 0.0.",
           params={"keys": ["name"], "types": {}}, imports=("json",),
           example={"reply": '```json\n{"name": "Zoë", "age": 7}\n```', "columns": {},
                    "params": {"keys": ["name"], "types": {"age": "integer"}}, "score": 1.0},
           body='''
    kinds = {"string": str, "number": (int, float), "integer": int, "boolean": bool, "list": list, "object": dict,
             "null": type(None)}

    def typed(value, kind):
        # JSON's true and false are not numbers, though Python's bool is an int
        return isinstance(value, kinds[kind]) and (kind == "boolean" or not isinstance(value, bool))

    scores = []
    for text in texts:
        answer = _answer_part(text).strip()
        if answer.startswith("```"):
            answer = answer.strip("`").removeprefix("json").strip()
        try:
            data = json.loads(answer)
        except ValueError:
            data = None
        ok = isinstance(data, dict) and all(k in data for k in p["keys"])
        ok = ok and all(k in data and typed(data[k], kind) for k, kind in p["types"].items())
        scores.append(1.0 if ok else 0.0)
    return scores'''),
    _block(id="length", title="Length in a target band",
           explanation="1.0 when the reply is `low`..`high` words (split at spaces, so a Chinese or Japanese sentence is "
                       "one word; use tokens there) or tokens long, falling off linearly to 0.0 `high` away from the band.",
           params={"unit": "words", "low": 5, "high": 100}, uses_ids=True,
           example={"reply": "one two three", "columns": {}, "params": {"low": 5, "high": 10}, "score": 0.8},
           body='''
    scores = []
    for text, ids in zip(texts, completion_ids or [None] * len(texts)):
        n = len(ids) if p["unit"] == "tokens" and ids is not None else len(text.split())
        distance = p["low"] - n if n < p["low"] else max(0, n - p["high"])
        scores.append(max(0.0, 1.0 - distance / max(1, p["high"])))
    return scores'''),
    _block(id="repetition", title="No repetition",
           explanation="Distinct word n-grams (`n` words in a row) over all of them: 1.0 when nothing repeats (also "
                       "for fewer than `n` words), near 0.0 for a loop; an empty reply scores 0.0.",
           params={"n": 3},
           example={"reply": "yes yes yes yes yes", "columns": {}, "params": {"n": 2}, "score": 0.25},
           body='''
    scores = []
    for text in texts:
        words = _normalise(text).split()
        grams = [tuple(words[i:i + p["n"]]) for i in range(len(words) - p["n"] + 1)]
        scores.append(0.0 if not words else 1.0 if not grams else len(set(grams)) / len(grams))
    return scores'''),
    _block(id="language", title="Written in a script",
           explanation="The share of the reply's letters written in `script` (latin, cyrillic, greek, arabic, hebrew, "
                       "devanagari, cjk, hiragana, katakana, hangul, thai); it tells writing systems apart, not languages "
                       "that share one (English and French are both latin). No letters: 0.0.",
           params={"script": "latin"}, imports=("unicodedata",),
           example={"reply": "Привет мир yes", "columns": {}, "params": {"script": "cyrillic"}, "score": 0.75},
           body='''
    script = p["script"].upper()
    scores = []
    for text in texts:
        letters = [ch for ch in text if ch.isalpha()]
        inside = [ch for ch in letters if unicodedata.name(ch, "").startswith(script)]
        scores.append(len(inside) / len(letters) if letters else 0.0)
    return scores'''),
    _block(id="forbidden", title="No forbidden words",
           explanation="1.0 when none of `words` appears in the reply as a whole word or phrase (ignoring case); 0.0 "
                       "when one does.",
           params={"words": ["as an AI"]}, imports=("re",),
           example={"reply": "As an AI, I cannot.", "columns": {}, "params": {"words": ["as an ai"]}, "score": 0.0},
           body='''
    found = [re.compile(r"(?<!\\w)" + re.escape(_normalise(w)) + r"(?!\\w)") for w in p["words"] if _normalise(w)]
    return [0.0 if any(f.search(_normalise(text)) for f in found) else 1.0 for text in texts]'''),
)}

HELPERS = '''
def _text(completion):
    """The reply's text: for chat prompts TRL passes [{"role": "assistant", "content": ...}]."""
    return completion[0]["content"] if isinstance(completion, list) else str(completion)


def _answer_part(text):
    """The text after the last </think> (all of it when there is none)."""
    return text.split("</think>")[-1]


def _normalise(value):
    """Text compared as a person reads it: Unicode look-alikes folded (NFKC), case folded, spaces collapsed."""
    return " ".join(unicodedata.normalize("NFKC", "" if value is None else str(value)).casefold().split())
'''


def _identifier(name: str, where: str) -> str:
    if not name.isidentifier() or keyword.iskeyword(name) or name.startswith("_"):
        raise RewardError(f"{where}: `{name}` cannot be a function name",
                          "a reward's name becomes its Python function name, which training logs its curve under",
                          "use letters, digits and _ , starting with a letter (e.g. `answer_matches`)")
    return name


def default_name(block_id: str, params: dict) -> str:
    column = params.get("column")
    return f"{block_id}_{column}" if column and re.fullmatch(r"\w+", column) else block_id


def block_params(entry: dict, where: str) -> dict:
    """The block's parameters: its defaults, then the entry's, each checked against the default's type."""
    block = BLOCKS[entry["block"]]
    given = dict(entry.get("params") or {})
    unknown = [k for k in given if k not in block.params]
    if unknown:
        raise RewardError(f"{where}: block `{block.id}` has no parameter {', '.join(unknown)}",
                          f"its parameters are: {', '.join(block.params)}", "remove or rename it")
    params = {**block.params, **given}
    for key, default in block.params.items():
        value = params[key]
        numeric = isinstance(default, (int, float)) and not isinstance(default, bool)
        ok = (isinstance(value, (int, float)) and not isinstance(value, bool)) if numeric else isinstance(value, type(default))
        if isinstance(default, list):
            ok = isinstance(value, list) and all(isinstance(v, str) for v in value)
        if not ok:
            raise RewardError(f"{where}: parameter `{key}` of block `{block.id}` is {value!r}",
                              f"it takes a {type(default).__name__}, like {default!r}", f"set it to e.g. {default!r}")
    if block.id == "pattern":
        try:
            re.compile(params["pattern"])
        except re.error as exc:
            raise RewardError(f"{where}: the pattern {params['pattern']!r} is not a regular expression: {exc}",
                              "Python's `re` could not compile it", "fix the pattern (escape ( ) [ ] . * + ? with \\)") from None
    if block.id == "json":
        bad = {k: v for k, v in params["types"].items() if v not in JSON_TYPES}
        if bad:
            raise RewardError(f"{where}: types {bad} name no JSON type", f"the types are: {', '.join(JSON_TYPES)}",
                              "use one of them for each key, e.g. {age: integer}")
    if block.id == "language" and params["script"].lower() not in SCRIPTS:
        raise RewardError(f"{where}: unknown script {params['script']!r}", f"the scripts are: {', '.join(SCRIPTS)}",
                          "pick one of them")
    if block.id == "length":
        if params["unit"] not in ("words", "tokens"):
            raise RewardError(f"{where}: unit {params['unit']!r}", "length counts words or tokens", "set unit to words or tokens")
        if not 0 <= params["low"] <= params["high"]:
            raise RewardError(f"{where}: the band {params['low']}..{params['high']} is empty", "low must not exceed high",
                              f"e.g. low: {params['high']}, high: {params['low']}" if params["low"] > params["high"] else "use low >= 0")
    if block.id == "repetition" and (not isinstance(params["n"], int) or params["n"] < 1):
        raise RewardError(f"{where}: n = {params['n']!r}", "an n-gram has at least one word", "set n to 2 or 3")
    if params.get("column") in RESERVED:
        raise RewardError(f"{where}: the column `{params['column']}` has a name the reward's code needs",
                          f"training or the generated code already use {', '.join(sorted(RESERVED))}",
                          "rename the column in the data (e.g. `reference`)")
    if "column" in params and params["column"] and not re.fullmatch(r"[A-Za-z_]\w*", params["column"]):
        raise RewardError(f"{where}: the column `{params['column']}` cannot be a Python argument name",
                          "training passes each dataset column to the reward as a keyword argument", "rename the column in the data")
    return params


def normalised_rules(rules: dict) -> dict:
    """The rule set with every block's name, weight and full parameters filled in; raises RewardError on a bad one."""
    combine = rules.get("combine", "sum")
    if combine not in COMBINES:
        raise RewardError(f"the rules' combine is {combine!r}", "; ".join(f"{k}: {v}" for k, v in COMBINES.items()),
                          "set combine to sum, all or any")
    blocks = rules.get("blocks") or []
    if not blocks:
        raise RewardError("the rule set has no blocks", "a reward needs at least one rule", "add a block, e.g. {block: contains}")
    out, names = [], []
    for i, entry in enumerate(blocks):
        where = f"blocks[{i}]"
        if entry.get("block") not in BLOCKS:
            raise RewardError(f"{where}: unknown block {entry.get('block')!r}", f"the blocks are: {', '.join(BLOCKS)}",
                              "pick one of them")
        params = block_params(entry, where)
        name = _identifier(entry.get("name") or default_name(entry["block"], params), where)
        if name in names:
            raise RewardError(f"{where}: two blocks are named `{name}`", "each becomes a function of that name",
                              f"give one another name, e.g. `{name}_2`")
        names.append(name)
        weight = entry.get("weight", 1.0)
        if isinstance(weight, bool) or not isinstance(weight, (int, float)):
            raise RewardError(f"{where}: weight {weight!r}", "a weight is a number", "e.g. weight: 1.0")
        out.append({"block": entry["block"], "name": name, "weight": float(weight), "params": params})
    name = rules.get("name") or ("all_rules" if combine == "all" else "any_rule")
    return {"combine": combine, "name": _identifier(name, "name") if combine != "sum" else None, "blocks": out}


def _docstring(text: str) -> str:
    return text.replace("\\", "\\\\")  # a backslash (\\boxed) written twice: one backslash in the docstring, not an escape


def _columns_of(entry: dict) -> list[str]:
    column = entry["params"].get("column")
    return [column] if column else []


def _function(entry: dict, public: bool) -> tuple[str, list[str]]:
    block = BLOCKS[entry["block"]]
    column = entry["params"].get("column")
    fn = entry["name"] if public else f"_{entry['name']}"
    args = ["completions"] + ([column] if column else []) + (["completion_ids"] if block.uses_ids else [])
    signature = ", ".join(args[:1] + [f"{a}=None" if a == "completion_ids" else a for a in args[1:]]) + ", **kwargs"
    lines = [f"def {fn}({signature}):", f'    """{_docstring(block.title + ": " + block.explanation)}"""']
    if 'p["' in block.body:  # the block's numbers and words, written once, in the header
        lines.append(f'    p = REWARD["parameters"]["{entry["name"]}"]')
    lines.append("    texts = [_text(c) for c in completions]")
    if "column" in block.params and not column:
        lines.append("    column = None  # no column chosen: the block checks the form only")
    elif column:
        lines.append(f"    column = {column}")
    return "\n".join(lines) + block.body + "\n", [column] if column else []


def generate_code(rules: dict) -> tuple[str, dict, dict, list[str]]:
    """(the functions' code, the header's parameters, its weights, the columns) for a normalised rule set."""
    blocks = rules["blocks"]
    imports = sorted({"unicodedata", *(i for e in blocks for i in BLOCKS[e["block"]].imports)})
    parameters = {e["name"]: {k: v for k, v in e["params"].items() if k != "column"} for e in blocks}
    columns = list(dict.fromkeys(c for e in blocks for c in _columns_of(e)))
    parts = ["\n".join(f"import {i}" for i in imports), HELPERS.strip("\n")]
    public = rules["combine"] == "sum"
    for entry in blocks:
        parts.append(_function(entry, public)[0].rstrip("\n"))
    if public:
        weights = {e["name"]: e["weight"] for e in blocks}
    else:
        pick = "min" if rules["combine"] == "all" else "max"
        name = rules["name"]
        calls = ",\n        ".join(f"_{e['name']}(completions, **kwargs)" for e in blocks)
        parts.append(f'''def {name}(completions, **kwargs):
    """{COMBINES[rules["combine"]].split(": ", 1)[1].capitalize()}; a block that cannot score a reply (None) is left out."""
    parts = [
        {calls},
    ]
    scores = []
    for values in zip(*parts):
        known = [v for v in values if v is not None]
        scores.append({pick}(known) if known else None)
    return scores''')
        weights = {name: 1.0}
    return "\n\n\n".join(parts) + "\n", parameters, weights, columns


def build_file(rules: dict, name: str, description: str = "", tags: list | None = None,
               examples: list | None = None) -> str:
    """A complete reward file (header and code) for the rule set; `library.render` writes the header."""
    from .library import render

    normal = normalised_rules(rules)
    code, parameters, weights, columns = generate_code(normal)
    header = {"name": name, "description": description or describe(normal), "columns": columns, "tags": list(tags or []),
              "parameters": parameters, "weights": weights, "examples": list(examples or []),
              # Which block each function is: with `parameters` (the numbers and words) the rule set can be rebuilt.
              "rules": {"combine": normal["combine"], **({"name": normal["name"]} if normal["name"] else {}),
                        "blocks": [{"block": e["block"], "name": e["name"],
                                    **({"column": e["params"]["column"]} if "column" in e["params"] else {})}
                                   for e in normal["blocks"]]}}
    return render(header, code)


def rules_of(header: dict) -> dict | None:
    """The rule set a rule-built file's header was made from (`rules` with `parameters` and `weights`), for the builder
    to reopen it; None for a code reward."""
    rules = header.get("rules")
    if not rules:
        return None
    weights, parameters = header.get("weights") or {}, header.get("parameters") or {}
    blocks = [{"block": b["block"], "name": b["name"], "weight": weights.get(b["name"], 1.0),
               "params": {**parameters.get(b["name"], {}), **({"column": b["column"]} if "column" in b else {})}}
              for b in rules.get("blocks", [])]
    return {"combine": rules.get("combine", "sum"), **({"name": rules["name"]} if rules.get("name") else {}), "blocks": blocks}


def describe(rules: dict) -> str:
    """The rule set in words, one sentence per block."""
    joined = "; ".join(f"{e['name']}: {BLOCKS[e['block']].title.lower()}" for e in rules["blocks"])
    return f"Built with the rule builder ({rules['combine']}): {joined}."


def catalog() -> list[dict]:
    """Every block as the page and `rloo-studio rewards build` describe it: id, title, explanation, parameters, example."""
    return [{"id": b.id, "title": b.title, "explanation": b.explanation, "params": dict(b.params), "example": dict(b.example)}
            for b in BLOCKS.values()]
