"""Builtin reward library, written to TRL's reward-function contract.

Every builtin is a factory: it takes keyword parameters, checks them, and returns a
function ``reward(completions, **kwargs) -> list[float | None]`` whose ``__name__`` is the
builtin's name, so TRL logs it under that name. ``None`` means "not applicable".

This module stops there: it does not load user reward code, does not weigh or combine
rewards, and knows nothing about tokenizers beyond what is handed in as parameters
(``think_end_token_id``; ``prompt_opens_think``, from `rewards.thinking`) or by TRL (``completion_ids``).
It imports nothing from the package: the exported training script carries a copy of it.

``prompt_opens_think``: the run's chat template ends its prompts inside ``<think>`` (a thinking
template), so each completion starts inside the thought, without the tag. The builtins that read
the tags then read ``<think>`` + completion (`seen_completion`), the text as the model continued it: a
completion cut off mid-thought is an unclosed thought, with no answer, as it would be had the
model written the tag. One parameter per builtin, filled in by the caller (`build_rewards`), so
TRL's completions themselves stay as TRL makes them.

Over 500 lines because each builtin carries its >>> examples and parameter checks, and all share one reading of a
completion (its thinking, its final answer, its numbers).
"""

from __future__ import annotations

import inspect
import json
import math
import re
from collections.abc import Callable, Iterable, Sequence
from typing import Any

RewardFunc = Callable[..., list[float | None]]

# Keyword arguments TRL passes besides the dataset columns; not offered as columns in errors.
_TRL_KWARGS = frozenset(
    {"prompts", "completions", "completion_ids", "trainer_state", "log_extra", "log_metric"}
)
NUMBER_MODES = ("auto", "last", "hash", "boxed")

# A number not glued to a word ("x2", "v1"): optional minus (ASCII or U+2212), then either
# comma-grouped thousands or plain digits, then optional decimals; or a bare ".5".
_NUMBER_RE = re.compile(
    r"(?<![\w.])[-\u2212]?(?:\d{1,3}(?:,\d{3})+(?!\d)|\d+)(?:\.\d+)?|(?<![\w.])[-\u2212]?\.\d+"
)
_BOXED_RE = re.compile(r"\\boxed\s*\{")
_FRACTION_RE = re.compile(r"(-?)\\[dt]?frac\{([^{}]+)\}\{([^{}]+)\}|(-?[\d.,]+)\s*/\s*([\d.,]+)")
_FENCED_RE = re.compile(r"```[ \t]*(?:json)?[ \t]*\n?(.*?)```", re.DOTALL | re.IGNORECASE)
# Characters normalize_answer peels off both ends: ASCII/Unicode quotes, sentence
# punctuation and markdown emphasis, which models add around otherwise equal answers.
_SURROUNDING_PUNCT = " \t\n\"'`.,;:!?*_\u201c\u201d\u2018\u2019"


def completion_text(completion: Any) -> str:
    """Text of one completion: a string as is, or the assistant content of a message list."""
    if isinstance(completion, str):
        return completion
    messages = [completion] if isinstance(completion, dict) else completion
    if not isinstance(messages, (list, tuple)):
        raise TypeError(
            f"a completion must be a string or a list of messages, "
            f"got {type(completion).__name__}"
        )
    parts = []
    for message in messages:
        if not isinstance(message, dict) or message.get("role") != "assistant":
            continue
        content = message.get("content")
        if isinstance(content, str):
            parts.append(content)
        elif isinstance(content, list):  # multimodal style: [{"type": "text", "text": ...}]
            texts = [b if isinstance(b, str) else b.get("text") for b in content
                     if isinstance(b, str) or (isinstance(b, dict) and b.get("type") == "text")]
            parts.append("".join(str(t) for t in texts if t))
    # Separate assistant turns (tool-calling rollouts) so words of two turns never fuse.
    return "\n".join(parts)


THINK_START, THINK_END = "<think>", "</think>"


def seen_completion(text: str, opened: bool) -> str:
    """A completion's text as the model continued it: after ``<think>`` when the prompt opened the thought
    (``opened``), unless the completion opens one itself.

    >>> seen_completion("6*7=42", True), seen_completion("6*7=42", False), seen_completion("<think>x</think>4", True)
    ('<think>6*7=42', '6*7=42', '<think>x</think>4')
    """
    return THINK_START + text if opened and not text.lstrip().startswith(THINK_START) else text


def _read(completion: Any, prompt_opens_think: bool) -> str:
    """A completion's text as the builtins read it: `completion_text`, after ``<think>`` when the prompt opened it."""
    return seen_completion(completion_text(completion), prompt_opens_think)


def split_thinking(text: str, *, streaming: bool = False) -> tuple[str | None, str]:
    """(thinking, answer) split at the first ``</think>``; thinking is None when there is none.

    ``streaming``: the text is read as it is shown (a chat reply still being written, a completion in the
    Train tab's table), so a thought opened and not closed is the thinking so far, and the answer is empty.
    Rewards score finished completions, where an unclosed thought is no answer at all (see `final_answer`).
    """
    if "</think>" not in text:
        if streaming and text.lstrip().startswith("<think>"):
            return text.lstrip()[len("<think>"):].strip(), ""
        return None, text.strip()
    head, _, tail = text.partition("</think>")
    head = head.lstrip()
    if head.startswith("<think>"):
        head = head[len("<think>"):]
    return head.strip(), tail.strip()


def final_answer(text: str) -> str | None:
    """The answer part of a completion, or None when it has none: a thought opened and never closed.

    A completion cut off by the token budget inside ``<think>`` holds only reasoning; numbers or
    words in it are not the model's answer and must earn no answer credit (thinking presets set
    ``mask_truncated_completions`` too, so TRL also leaves such completions out of the loss).

    >>> final_answer("<think>9*2=18"), final_answer("<think>9*2</think>18"), final_answer("18")
    (None, '18', '18')
    """
    if "<think>" in text and "</think>" not in text:
        return None
    return split_thinking(text)[1]


def _to_float(token: str) -> float | None:
    try:
        return float(token.replace(",", "").replace("\u2212", "-"))
    except ValueError:
        return None


def _last_boxed(text: str) -> str | None:
    """Content of the last ``\\boxed{...}`` with balanced braces, or None."""
    starts = [m.end() for m in _BOXED_RE.finditer(text)]
    if not starts:
        return None
    depth, start = 1, starts[-1]
    for pos in range(start, len(text)):
        depth += {"{": 1, "}": -1}.get(text[pos], 0)
        if depth == 0:
            return text[start:pos]
    return None


def _boxed_number(content: str) -> float | None:
    """A whole fraction (``\\frac{a}{b}`` or ``a/b``) is divided out; else the last number."""
    cleaned = content.replace("$", "").replace("\\left", "").replace("\\right", "").strip()
    fraction = _FRACTION_RE.fullmatch(cleaned)
    if fraction:
        sign, num, den = fraction.group(1), fraction.group(2), fraction.group(3)
        if num is None:
            sign, num, den = "", fraction.group(4), fraction.group(5)
        numerator, denominator = _to_float(num.strip()), _to_float(den.strip())
        if numerator is not None and denominator:
            return (-1.0 if sign else 1.0) * numerator / denominator
    numbers = _NUMBER_RE.findall(cleaned)
    return _to_float(numbers[-1]) if numbers else None


def extract_number(text: str, mode: str = "auto") -> float | None:
    """Pull one number out of ``text``; None when there is none.

    ``mode``: "last" (last number), "hash" (first number after the last ``####``),
    "boxed" (last ``\\boxed{...}``), "auto" (boxed if present, else hash, else last).

    >>> extract_number("so 1,234 - 5 = 1,229.5 apples"), extract_number(r"\\boxed{-3}")
    (1229.5, -3.0)
    """
    if mode not in NUMBER_MODES:
        raise ValueError(f"unknown number mode {mode!r}; use one of {', '.join(NUMBER_MODES)}")
    if mode == "auto":
        # A present \boxed{} / #### is the model's declared answer even if it holds no number.
        mode = "boxed" if _BOXED_RE.search(text) else "hash" if "####" in text else "last"
    if mode == "boxed":
        content = _last_boxed(text)
        return None if content is None else _boxed_number(content)
    if mode == "hash":
        marker = text.rfind("####")
        found = _NUMBER_RE.search(text, marker + 4) if marker >= 0 else None
        return _to_float(found.group()) if found else None
    numbers = _NUMBER_RE.findall(text)
    return _to_float(numbers[-1]) if numbers else None


def normalize_answer(text: str) -> str:
    """Lowercase, collapse whitespace and peel surrounding quotes/punctuation off ``text``."""
    return " ".join(str(text).lower().split()).strip(_SURROUNDING_PUNCT)


def _named(func: Callable, name: str) -> RewardFunc:
    """Give the closure the builtin's name, which TRL uses as the metric key."""
    func.__name__ = func.__qualname__ = name
    return func


def _column(kwargs: dict[str, Any], column: str, reward_name: str, count: int) -> Sequence[Any]:
    """The dataset column ``column`` from TRL's kwargs, with an actionable error if absent."""
    if column not in kwargs:
        available = sorted(key for key in kwargs if key not in _TRL_KWARGS)
        raise KeyError(
            f"{reward_name}: the dataset has no column named {column!r}; columns passed: "
            f"{', '.join(available) or '(none)'}. Point answer_column at one of them."
        )
    values = kwargs[column]
    if len(values) != count:
        raise ValueError(
            f"{reward_name}: column {column!r} has {len(values)} values for {count} completions"
        )
    return values


def _token_ids(kwargs: dict[str, Any], reward_name: str, count: int) -> Sequence[Sequence[int]]:
    """``completion_ids`` from TRL's kwargs; token-based rewards cannot work without them."""
    if kwargs.get("completion_ids") is None:
        raise KeyError(
            f"{reward_name} counts tokens and needs completion_ids (one list of token ids per "
            "completion), which training passes to reward functions; "
            "pass completion_ids=... when calling it directly"
        )
    return _column(kwargs, "completion_ids", reward_name, count)


def _check_int(name: str, value: Any, reward_name: str, minimum: int = 0) -> None:
    if isinstance(value, bool) or not isinstance(value, int) or value < minimum:
        raise ValueError(f"{reward_name}: {name} must be an integer >= {minimum}, got {value!r}")


def _check_number(name: str, value: Any, reward_name: str, minimum: float | None = 0.0) -> None:
    ok = isinstance(value, (int, float)) and not isinstance(value, bool) and math.isfinite(value)
    if not ok or (minimum is not None and value < minimum):
        bound = f" >= {minimum}" if minimum is not None else ""
        raise ValueError(f"{reward_name}: {name} must be a finite number{bound}, got {value!r}")


def _check_band(min_tokens: Any, max_tokens: Any, reward_name: str) -> None:
    _check_int("min_tokens", min_tokens, reward_name)
    _check_int("max_tokens", max_tokens, reward_name, minimum=1)
    if min_tokens > max_tokens:
        raise ValueError(
            f"{reward_name}: min_tokens ({min_tokens}) exceeds max_tokens ({max_tokens}); swap them"
        )


def _check_column_name(value: Any, reward_name: str) -> None:
    if not isinstance(value, str) or not value:
        raise ValueError(f"{reward_name}: answer_column must be a non-empty name, got {value!r}")


def _string_tuple(name: str, value: Any, reward_name: str) -> tuple[str, ...]:
    """Accept one string or an iterable of non-empty strings."""
    items = (value,) if isinstance(value, str) else None
    if items is None and isinstance(value, Iterable):
        items = tuple(value)
    if items is None or not all(isinstance(item, str) and item for item in items):
        raise ValueError(
            f"{reward_name}: {name} must be a string or a list of non-empty strings, got {value!r}"
        )
    return items


def _band_score(length: int, low: int, high: int) -> float:
    """1.0 inside [low, high]; a linear ramp from 0 below it, a linear decay to 0 above it."""
    if length < low:
        return length / low
    if length > high:
        return max(0.0, 1.0 - (length - high) / high)
    return 1.0


def _parse_reference(value: Any) -> float | None:
    """Reference answer as a float: numbers as is, strings like "1,234" or "#### 42" parsed."""
    if isinstance(value, bool) or value is None:
        return None
    if isinstance(value, (int, float)):
        return float(value) if math.isfinite(value) else None
    text = str(value).strip()
    plain = _to_float(text)
    return plain if plain is not None and math.isfinite(plain) else extract_number(text, "auto")


def no_reference(value: Any) -> bool:
    """No reference to compare with: missing, an empty cell ("" from a CSV, blanks) or NaN (an empty cell of a table)."""
    return value is None or (isinstance(value, str) and not value.strip()) or (isinstance(value, float) and math.isnan(value))


def numeric_answer(
    answer_column: str = "answer", mode: str = "auto", tolerance: float = 1e-6, prompt_opens_think: bool = False
) -> RewardFunc:
    """1.0 when the number in the answer equals the reference column within ``tolerance``, else 0.0.

    The answer is the text after ``</think>`` (all text without one); its number is found with
    ``extract_number(text, mode)``. A thought opened with ``<think>`` and never closed (cut off by
    the token budget) has no answer and scores 0.0. The reference (int, float, or a string such as
    "1,234" or "#### 42") comes from dataset column ``answer_column``; an unparsable reference gives None.
    With ``prompt_opens_think`` (see the module docstring), a completion without ``</think>`` was cut off mid-thought: 0.0.

    >>> numeric_answer()(["<think>6*7</think>It is 42.", "41", "<think>6*7=42"], answer=["#### 42", 42, 42])
    [1.0, 0.0, 0.0]
    >>> numeric_answer(prompt_opens_think=True)(["6*7</think>It is 42.", "6*7=42"], answer=[42, 42])
    [1.0, 0.0]
    """
    _check_column_name(answer_column, "numeric_answer")
    if mode not in NUMBER_MODES:
        raise ValueError(f"numeric_answer: mode must be one of {NUMBER_MODES}, got {mode!r}")
    _check_number("tolerance", tolerance, "numeric_answer")

    def reward(completions: list[Any], **kwargs: Any) -> list[float | None]:
        references = _column(kwargs, answer_column, "numeric_answer", len(completions))
        scores: list[float | None] = []
        for completion, reference in zip(completions, references):
            expected = _parse_reference(reference)
            if expected is None:
                scores.append(None)
                continue
            answer = final_answer(_read(completion, prompt_opens_think))
            got = extract_number(answer, mode) if answer is not None else None
            scores.append(1.0 if got is not None and abs(got - expected) <= tolerance else 0.0)
        return scores

    return _named(reward, "numeric_answer")


def exact_match(answer_column: str = "answer", normalize: bool = True, prompt_opens_think: bool = False) -> RewardFunc:
    """1.0 when the answer text equals the reference column, else 0.0; no score (None) where the reference cell is empty.

    The answer is the text after ``</think>``; an unclosed ``<think>`` means no answer (0.0). With ``normalize`` both sides go through
    ``normalize_answer`` (case, whitespace, surrounding quotes and punctuation are ignored).

    >>> chat = [{"role": "assistant", "content": "Paris."}]
    >>> exact_match()([chat, "Lyon"], answer=["paris", "Paris"])
    [1.0, 0.0]
    """
    _check_column_name(answer_column, "exact_match")

    def reward(completions: list[Any], **kwargs: Any) -> list[float | None]:
        references = _column(kwargs, answer_column, "exact_match", len(completions))
        prepare = normalize_answer if normalize else str.strip
        scores: list[float | None] = []
        for completion, reference in zip(completions, references):
            if no_reference(reference):  # else a blank reply would match an empty cell
                scores.append(None)
                continue
            answer = final_answer(_read(completion, prompt_opens_think))
            scores.append(1.0 if answer is not None and prepare(answer) == prepare(str(reference)) else 0.0)
        return scores

    return _named(reward, "exact_match")


def regex_format(pattern: str, full_match: bool = False, ignore_case: bool = False,
                 prompt_opens_think: bool = False) -> RewardFunc:
    """1.0 when the completion text matches regular expression ``pattern``, else 0.0.

    By default the pattern may match anywhere (``re.search``); with ``full_match`` it must
    match the whole text, and ``.`` then also matches newlines. ``ignore_case`` ignores case. With
    ``prompt_opens_think`` the text starts with the ``<think>`` the prompt opened.

    >>> regex_format(r"Answer: \\d+")(["Answer: 7", "no idea"])
    [1.0, 0.0]
    """
    if not isinstance(pattern, str) or not pattern:
        raise ValueError(f"regex_format: pattern must be a non-empty regex string, got {pattern!r}")
    flags = (re.IGNORECASE if ignore_case else 0) | (re.DOTALL if full_match else 0)
    try:
        compiled = re.compile(pattern, flags)
    except re.error as error:
        raise ValueError(
            f"regex_format: pattern {pattern!r} is not a valid regular expression ({error}); fix it"
        ) from None
    matches = compiled.fullmatch if full_match else compiled.search

    def reward(completions: list[Any], **kwargs: Any) -> list[float | None]:
        return [1.0 if matches(_read(completion, prompt_opens_think)) else 0.0 for completion in completions]

    return _named(reward, "regex_format")


def think_format(prompt_opens_think: bool = False) -> RewardFunc:
    """1.0 for ``<think>reasoning</think>answer``, 0.5 for a partial shape, 0.0 otherwise.

    Full marks need an opening ``<think>`` (leading whitespace allowed), non-empty reasoning,
    exactly one ``</think>``, no ``<think>`` after it and a non-empty answer. A single
    ``</think>`` with an empty answer, empty reasoning or no opening tag earns 0.5. With
    ``prompt_opens_think`` (a chat template that puts ``<think>`` in the prompt) the opening tag is the prompt's.

    >>> think_format()(["<think>2+2=4</think>4", "4</think>", "4"])
    [1.0, 0.5, 0.0]
    >>> think_format(prompt_opens_think=True)(["2+2=4</think>4", "2+2=4"])
    [1.0, 0.0]
    """

    def reward(completions: list[Any], **kwargs: Any) -> list[float | None]:
        scores: list[float | None] = []
        for completion in completions:
            text = _read(completion, prompt_opens_think)
            if text.count("</think>") != 1 or "<think>" in text.partition("</think>")[2]:
                scores.append(0.0)
                continue
            thinking, answer = split_thinking(text)
            opened = text.lstrip().startswith("<think>")
            scores.append(1.0 if opened and thinking and answer else 0.5)
        return scores

    return _named(reward, "think_format")


def think_length(
    think_end_token_id: int,
    min_tokens: int = 16,
    max_tokens: int = 256,
    missing_close_penalty: float = -1.0,
) -> RewardFunc:
    """Rewards reasoning whose token count lies in [``min_tokens``, ``max_tokens``].

    The reasoning length is the number of tokens before the first ``think_end_token_id``
    (the id of ``</think>``) in ``completion_ids``, counting an opening ``<think>`` token if
    the model generated one. Inside the band: 1.0; shorter: n / min_tokens; longer:
    max(0, 1 - (n - max_tokens) / max_tokens); no ``</think>`` at all: ``missing_close_penalty``.

    >>> reward = think_length(9, min_tokens=2, max_tokens=4)
    >>> reward(["a", "b", "c"], completion_ids=[[1, 2, 9], [9], [1, 2]])
    [1.0, 0.0, -1.0]
    """
    token_id = think_end_token_id
    if isinstance(token_id, bool) or not isinstance(token_id, int) or token_id < 0:
        raise ValueError(
            "think_length needs the token id of </think>; the tokenizer has no such token: "
            f"got think_end_token_id={think_end_token_id!r}. Use a model whose tokenizer has "
            "</think> as one token, or use think_format / length_band instead."
        )
    _check_band(min_tokens, max_tokens, "think_length")
    _check_number("missing_close_penalty", missing_close_penalty, "think_length", minimum=None)

    def reward(completions: list[Any], **kwargs: Any) -> list[float | None]:
        scores: list[float | None] = []
        for ids in _token_ids(kwargs, "think_length", len(completions)):
            # int() so tensors of ids compare like plain lists.
            close = next((pos for pos, token in enumerate(ids) if int(token) == token_id), None)
            if close is None:
                scores.append(float(missing_close_penalty))
            else:
                scores.append(_band_score(close, min_tokens, max_tokens))
        return scores

    return _named(reward, "think_length")


def length_band(min_tokens: int = 0, max_tokens: int = 512, unit: str = "tokens") -> RewardFunc:
    """Rewards completions whose whole length lies in [``min_tokens``, ``max_tokens``].

    Length is counted in tokens (``completion_ids``) or, with ``unit="chars"``, in characters
    of the completion text. Inside the band: 1.0; shorter: len / min_tokens; longer:
    max(0, 1 - (len - max_tokens) / max_tokens).

    >>> length_band(2, 4, unit="chars")(["abc", "a", "abcdef"])
    [1.0, 0.5, 0.5]
    """
    if unit not in ("tokens", "chars"):
        raise ValueError(f"length_band: unit must be 'tokens' or 'chars', got {unit!r}")
    _check_band(min_tokens, max_tokens, "length_band")

    def reward(completions: list[Any], **kwargs: Any) -> list[float | None]:
        if unit == "chars":
            lengths = [len(completion_text(completion)) for completion in completions]
        else:
            lengths = [len(ids) for ids in _token_ids(kwargs, "length_band", len(completions))]
        return [_band_score(length, min_tokens, max_tokens) for length in lengths]

    return _named(reward, "length_band")


def length_penalty(target_tokens: int = 256, per_token: float = 0.001) -> RewardFunc:
    """``-per_token`` for every completion token beyond ``target_tokens``; 0.0 within target.

    >>> reward = length_penalty(target_tokens=2, per_token=0.5)
    >>> reward(["a", "b"], completion_ids=[[1, 2], [1, 2, 3, 4]])
    [0.0, -1.0]
    """
    _check_int("target_tokens", target_tokens, "length_penalty")
    _check_number("per_token", per_token, "length_penalty")

    def reward(completions: list[Any], **kwargs: Any) -> list[float | None]:
        all_ids = _token_ids(kwargs, "length_penalty", len(completions))
        excesses = [max(0, len(ids) - target_tokens) for ids in all_ids]
        return [-(per_token * excess) if excess else 0.0 for excess in excesses]

    return _named(reward, "length_penalty")


def keywords(
    include: str | Iterable[str] = (),
    exclude: str | Iterable[str] = (),
    case_sensitive: bool = False,
    answer_only: bool = False,
    prompt_opens_think: bool = False,
) -> RewardFunc:
    """Fraction of ``include`` words present minus the number of ``exclude`` words present.

    Words and phrases match whole (``cat`` does not match ``concatenate``). An empty
    ``include`` counts as 1.0. With ``answer_only`` only the text after ``</think>`` is searched, and
    a thought opened and never closed (no answer) scores 0.0.

    >>> reward = keywords(include=["because", "therefore"], exclude="lol")
    >>> reward(["because x", "lol, because therefore"])
    [0.5, 0.0]
    """
    wanted = _string_tuple("include", include, "keywords")
    banned = _string_tuple("exclude", exclude, "keywords")
    if not wanted and not banned:
        raise ValueError("keywords: include and exclude are both empty; give at least one word")
    flags = 0 if case_sensitive else re.IGNORECASE
    # Lookarounds instead of \b so keywords that start or end with punctuation still match.
    to_regex = lambda word: re.compile(rf"(?<!\w){re.escape(word)}(?!\w)", flags)  # noqa: E731
    wanted_res, banned_res = [to_regex(w) for w in wanted], [to_regex(w) for w in banned]

    def reward(completions: list[Any], **kwargs: Any) -> list[float | None]:
        scores: list[float | None] = []
        for completion in completions:
            # The prompt's <think> matters only for where the answer starts; the words searched are the completion's.
            text = _read(completion, prompt_opens_think) if answer_only else completion_text(completion)
            if answer_only:
                text = final_answer(text)
                if text is None:
                    scores.append(0.0)
                    continue
            hits = sum(1 for regex in wanted_res if regex.search(text))
            found = hits / len(wanted_res) if wanted_res else 1.0
            scores.append(found - sum(1 for regex in banned_res if regex.search(text)))
        return scores

    return _named(reward, "keywords")


def _parse_json(text: str) -> tuple[bool, Any]:
    """(parsed?, value) for the text itself, else for any ```json fenced block``` in it."""
    for candidate in [text.strip(), *(block.strip() for block in _FENCED_RE.findall(text))]:
        try:
            return True, json.loads(candidate)
        except ValueError:
            continue
    return False, None


def valid_json(required_keys: str | Iterable[str] = (), answer_only: bool = True,
               prompt_opens_think: bool = False) -> RewardFunc:
    """1.0 for a JSON object or array holding every ``required_keys`` key, 0.5 if keys are missing, 0.0 if not JSON.

    The text may be bare JSON or sit inside a fenced ```json block```. Without ``required_keys`` any
    object or array counts. A bare number, string, true/false or null is JSON but no structure: 0.0 (a
    small model's "95" is not what a JSON reward is for). ``answer_only`` skips the ``<think>`` part (a
    thought never closed has no answer: 0.0).

    >>> reward = valid_json(required_keys=["name"])
    >>> reward(['{"name": "a"}', '```json\\n{"x": 1}\\n```', "nope"])
    [1.0, 0.5, 0.0]
    """
    keys = _string_tuple("required_keys", required_keys, "valid_json")

    def reward(completions: list[Any], **kwargs: Any) -> list[float | None]:
        scores: list[float | None] = []
        for completion in completions:
            text = _read(completion, prompt_opens_think)
            answer = final_answer(text) if answer_only else completion_text(completion)
            parsed, value = _parse_json(answer) if answer is not None else (False, None)
            if not parsed or not isinstance(value, (dict, list)):
                scores.append(0.0)
            elif keys and not (isinstance(value, dict) and all(key in value for key in keys)):
                scores.append(0.5)
            else:
                scores.append(1.0)
        return scores

    return _named(reward, "valid_json")


BUILTIN_REWARDS: dict[str, Callable[..., Callable]] = {
    "numeric_answer": numeric_answer,
    "exact_match": exact_match,
    "regex_format": regex_format,
    "think_format": think_format,
    "think_length": think_length,
    "length_band": length_band,
    "length_penalty": length_penalty,
    "keywords": keywords,
    "valid_json": valid_json,
}

# Factories whose `think_end_token_id` is filled in from the tokenizer by the caller.
NEEDS_THINK_END_TOKEN_ID = frozenset({"think_length"})
# Factories whose `prompt_opens_think` is filled in by the caller (`rewards.thinking.prompt_opens_think`): the ones that
# read the think tags. think_length counts tokens up to </think>, the same whoever opened the thought.
NEEDS_PROMPT_OPENS_THINK = frozenset({"numeric_answer", "exact_match", "regex_format", "think_format", "keywords", "valid_json"})


def describe_builtin(name: str) -> str:
    """First paragraph of the builtin factory's docstring, on one line."""
    if name not in BUILTIN_REWARDS:
        raise KeyError(f"no builtin reward named {name!r}; builtins: {', '.join(BUILTIN_REWARDS)}")
    first_paragraph = inspect.cleandoc(BUILTIN_REWARDS[name].__doc__ or "").split("\n\n")[0]
    return " ".join(first_paragraph.split())
