"""Readable reward-function templates for the editor: one per builtin, plus composite examples.

Each template is complete, self-contained Python in TRL's contract that a person can paste into
the editor and change. They do what the builtins in `builtin.py` do, written for reading rather
than for every edge case (the builtins stay the reference implementations). Each is also a library
entry (`library.template_file`): a reward file whose header gives its tags and pinned examples, which a
test scores. Pure text: nothing here is executed by the app's process.
"""

from __future__ import annotations


TEMPLATES: dict[str, str] = {
    "answer match (exact text)": '''
def answer_match(completions, answer, **kwargs):
    """1.0 when the text after </think> equals the `answer` column (ignoring case and spaces)."""
    # A chat template that opens <think> in the prompt (DeepSeek-R1 distills, QwQ, Qwen3-Thinking-2507) leaves the tag out
    # of the completion: there, a completion without </think> was cut off mid-thought and holds no answer (the builtins
    # read it so; see "Thinking templates" in docs/rewards.md).
    scores = []
    for completion, reference in zip(completions, answer):
        text = completion[0]["content"] if isinstance(completion, list) else completion
        final = text.split("</think>")[-1].strip().lower()
        scores.append(1.0 if final == str(reference).strip().lower() else 0.0)
    return scores
''',
    "numeric answer": '''
import re

def numeric_answer_match(completions, answer, **kwargs):
    """1.0 when the last number after </think> equals the number in the `answer` column."""
    # A chat template that opens <think> in the prompt (DeepSeek-R1 distills, QwQ, Qwen3-Thinking-2507) leaves the tag out
    # of the completion: there, a completion without </think> was cut off mid-thought and holds no answer (the builtins
    # read it so; see "Thinking templates" in docs/rewards.md).
    def last_number(text):
        found = re.findall(r"-?\\d[\\d,]*\\.?\\d*", text)
        return float(found[-1].replace(",", "")) if found else None

    scores = []
    for completion, reference in zip(completions, answer):
        text = completion[0]["content"] if isinstance(completion, list) else completion
        got, want = last_number(text.split("</think>")[-1]), last_number(str(reference))
        scores.append(1.0 if got is not None and want is not None and abs(got - want) < 1e-6 else 0.0)
    return scores
''',
    "format (regular expression)": '''
import re

FORMAT = re.compile(r"^<think>.+?</think>\\s*\\S.*$", re.DOTALL)

def follows_format(completions, **kwargs):
    """1.0 when the whole completion matches FORMAT: a thought, then an answer."""
    texts = [c[0]["content"] if isinstance(c, list) else c for c in completions]
    return [1.0 if FORMAT.match(t.strip()) else 0.0 for t in texts]
''',
    "think, then answer": '''
def think_then_answer(completions, **kwargs):
    """1.0 for exactly one <think>...</think> block followed by a non-empty answer; 0.5 without the answer."""
    scores = []
    for completion in completions:
        text = completion[0]["content"] if isinstance(completion, list) else completion
        opened, closed = text.count("<think>"), text.count("</think>")
        if closed != 1 or opened > 1:
            scores.append(0.0)
        else:
            scores.append(1.0 if text.split("</think>", 1)[1].strip() else 0.5)
    return scores
''',
    "thinking length in tokens (finds </think> by token)": '''
def thinking_budget(completions, completion_ids, **kwargs):
    """1.0 when the thought is 16-256 tokens long; -1.0 when it never ends (no </think> token).

    Counts tokens, not characters: it looks for the id of the </think> token in completion_ids.
    THINK_END_ID is the tokenizer's id for "</think>" (Qwen3: 151668); the demo model's is shown
    by `rloo-studio rewards`, or: AutoTokenizer.from_pretrained(MODEL).convert_tokens_to_ids("</think>").
    """
    THINK_END_ID = 151668
    low, high = 16, 256
    scores = []
    for ids in completion_ids:
        if THINK_END_ID not in ids:
            scores.append(-1.0)
            continue
        length = ids.index(THINK_END_ID)
        if low <= length <= high:
            scores.append(1.0)
        else:
            distance = low - length if length < low else length - high
            scores.append(max(0.0, 1.0 - distance / high))
    return scores
''',
    "length band": '''
def length_in_band(completions, completion_ids, **kwargs):
    """1.0 for completions of 20-300 tokens, falling off linearly outside."""
    low, high = 20, 300
    scores = []
    for ids in completion_ids:
        n = len(ids)
        if low <= n <= high:
            scores.append(1.0)
        else:
            scores.append(max(0.0, 1.0 - (low - n if n < low else n - high) / high))
    return scores
''',
    "keywords": '''
INCLUDE = ["because", "therefore"]
EXCLUDE = ["as an AI"]

def keyword_score(completions, **kwargs):
    """Share of INCLUDE words present, minus one for each EXCLUDE word present."""
    scores = []
    for completion in completions:
        text = (completion[0]["content"] if isinstance(completion, list) else completion).lower()
        found = sum(1 for w in INCLUDE if w.lower() in text) / max(1, len(INCLUDE))
        scores.append(found - sum(1 for w in EXCLUDE if w.lower() in text))
    return scores
''',
    "valid JSON": '''
import json

REQUIRED_KEYS = ["name", "age"]

def valid_json(completions, **kwargs):
    """1.0 for a JSON object (after </think>) with every required key; 0.5 without them; 0.0 when not JSON."""
    scores = []
    for completion in completions:
        text = (completion[0]["content"] if isinstance(completion, list) else completion).split("</think>")[-1].strip()
        try:
            data = json.loads(text)
        except ValueError:
            scores.append(0.0)
            continue
        ok = isinstance(data, dict) and all(k in data for k in REQUIRED_KEYS)
        scores.append(1.0 if ok else 0.5)
    return scores
''',
    "composite: correct AND well-formed": '''
import re

def correct_and_formatted(completions, answer, **kwargs):
    """Full credit only for a correct number after a proper thought; partial credit for either alone.

    Graded rewards teach more than 0/1 ones: a group where nobody is right still ranks the tidy tries higher.
    """
    scores = []
    for completion, reference in zip(completions, answer):
        text = completion[0]["content"] if isinstance(completion, list) else completion
        formatted = text.count("</think>") == 1 and text.strip().startswith("<think>")
        numbers = re.findall(r"-?\\d+", text.split("</think>")[-1])
        correct = bool(numbers) and numbers[-1] == str(reference).strip().split()[-1]
        scores.append(1.0 if correct and formatted else 0.6 if correct else 0.2 if formatted else 0.0)
    return scores
''',
    "composite: shorter correct answers win": '''
def concise_and_correct(completions, answer, completion_ids, **kwargs):
    """1.0 for a correct answer, minus 0.001 per token beyond 200: among right answers, the shorter wins."""
    scores = []
    for completion, reference, ids in zip(completions, answer, completion_ids):
        text = completion[0]["content"] if isinstance(completion, list) else completion
        correct = str(reference).strip() in text.split("</think>")[-1]
        scores.append((1.0 - 0.001 * max(0, len(ids) - 200)) if correct else 0.0)
    return scores
''',
}


def template(name: str) -> str:
    return TEMPLATES[name].strip("\n") + "\n"


def _ex(prompt: str, completion: str, low: float | None, high: float | None, **columns) -> dict:
    return {"prompt": prompt, "completion": completion, "columns": columns, "total": [low, high]}


SUM = "Ana has 47 apples and gets 28 more. How many now?"
# Each template as a library entry: its tags and pinned examples (the header's other fields come from its code).
# The examples hold whatever the tokenizer: none depends on how a text splits into tokens except through a range
# wide enough for one id per character and a real tokenizer alike.
TEMPLATE_HEADERS: dict[str, dict] = {
    "answer match (exact text)": {"tags": ["correctness"], "examples": [
        _ex("Capital of France?", "<think>easy</think> Paris", 1.0, 1.0, answer="paris"),
        _ex("Capital of France?", "<think>hm</think>Lyon", 0.0, 0.0, answer="paris")]},
    "numeric answer": {"tags": ["correctness", "math"], "examples": [
        _ex(SUM, "<think>47+28</think>It is 75.", 1.0, 1.0, answer="75"),
        _ex("How many grams in a kilogram?", "<think>k</think>1,000", 1.0, 1.0, answer="1000"),
        _ex(SUM, "<think>47+28</think>74", 0.0, 0.0, answer="75")]},
    "format (regular expression)": {"tags": ["format", "thinking"], "examples": [
        _ex(SUM, "<think>47+28</think> 75", 1.0, 1.0), _ex(SUM, "75", 0.0, 0.0)]},
    "think, then answer": {"tags": ["format", "thinking"], "examples": [
        _ex(SUM, "<think>47+28</think>75", 1.0, 1.0), _ex(SUM, "<think>47+28</think>", 0.5, 0.5),
        _ex(SUM, "75", 0.0, 0.0)]},
    "thinking length in tokens (finds </think> by token)": {"tags": ["length", "thinking"], "examples": [
        _ex(SUM, "I keep thinking and never stop", -1.0, -1.0)]},
    "length band": {"tags": ["length"], "examples": [
        _ex(SUM, "", 0.9, 0.95)]},  # 0 or 1 id (the end token): 1 - 20/300 or 1 - 19/300
    "keywords": {"tags": ["style"], "examples": [
        _ex("Why?", "It rains because it is cold, therefore wet.", 1.0, 1.0),
        _ex("Why?", "As an AI I cannot say.", -1.0, -1.0)]},
    "valid JSON": {"tags": ["format", "json"], "examples": [
        _ex("Describe Ana as JSON.", '{"name": "Ana", "age": 7}', 1.0, 1.0),
        _ex("Describe Ana as JSON.", '{"name": "Ana"}', 0.5, 0.5),
        _ex("Describe Ana as JSON.", "Ana is seven.", 0.0, 0.0)]},
    "composite: correct AND well-formed": {"tags": ["correctness", "format", "math"], "examples": [
        _ex(SUM, "<think>47+28</think>75", 1.0, 1.0, answer="75"),
        _ex(SUM, "75", 0.6, 0.6, answer="75"),
        _ex(SUM, "<think>47+28</think>74", 0.2, 0.2, answer="75")]},
    "composite: shorter correct answers win": {"tags": ["correctness", "length"], "examples": [
        _ex(SUM, "<think>47+28</think>75", 1.0, 1.0, answer="75"),
        _ex(SUM, "<think>47+28</think>74", 0.0, 0.0, answer="75")]},
}
