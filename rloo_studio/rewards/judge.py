"""An LLM judge as a reward: a rubric in words, scored by a language model, normalised to 0-1.

A judge entry (`{judge: MODEL, rubric: ..., scale: [0, 10]}` in a config's `rewards`) becomes one
reward function in TRL's contract. For every completion it fills the prompt template with the
rubric, the prompt, the completion's answer (`judged_text`: after `</think>`; a thought that never
closed has none and scores the lowest without a call) and the reference answer (when the dataset has
the mapped answer column), asks the judge model, and reads the score of its verdict, a line
"Score: N" (`parse_score`), and no other number of its reply. A reply without a verdict, or one that
reads the rubric back, scores None ("could not score": beside another reward's score it counts as
0 in the total) and its reason is kept beside the judge's own words (`JudgeReward.last_verdicts`).
`probe_findings` is the judge's own check: degenerate answers (empty, the prompt or the rubric read
back) that it scores highly.

The judge is either a local model (a folder or hub id, loaded once with transformers on first use,
in the training worker: greedy decoding, a few new tokens, its chat template) or an
OpenAI-compatible server the person runs (`{url, model, api_key_env}`): a plain HTTP POST to
`{url}/chat/completions` and nowhere else, with retries, the API key read from the environment at
call time and never written anywhere. Calls are batched, cached by (rubric, prompt, completion)
within a training step, and bounded by the entry's time limit; a judge that cannot be reached, or
that answers without a usable score for a whole batch, stops with an error saying what to do.
This module imports torch and transformers only inside the local judge's loader.

Over 500 lines because a judge is one reward with two backends (a local model, a server) that read the reply, time
out and check themselves alike, and its cost per step is counted from those same calls.
"""

from __future__ import annotations

import json
import math
import os
import re
import string
import time
import urllib.error
import urllib.request
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass
from pathlib import Path
from typing import Callable, Sequence

from ..config import DEFAULT_JUDGE_SCALE, RewardSpec, local_judge_in_4bit
from ..errors import ModelError, RewardError, StudioError
from ..paths import DEMO_MODEL_DIR
from .builtin import THINK_END, completion_text, final_answer, seen_completion

# The judge's prompt. Fields: {rubric}, {prompt}, {completion}, {reference} (the row's reference answer, or
# NO_REFERENCE), {low} and {high} (the scale). An entry's `template:` replaces it; it must keep {completion}.
DEFAULT_TEMPLATE = (
    "You are a strict grader. Grade the answer below by this rubric:\n{rubric}\n\n"
    "Question:\n{prompt}\n\n"
    "Answer to grade:\n{completion}\n\n"
    "Reference answer: {reference}\n\n"
    "Give a score from {low} to {high}. Reply in the form \"Score: N\" followed by one short sentence saying why."
)
TEMPLATE_FIELDS = ("rubric", "prompt", "completion", "reference", "low", "high")
NO_REFERENCE = "(none given)"


@dataclass(frozen=True)
class Rubric:
    text: str
    limits: str  # what this rubric cannot judge, shown beside it


# Three rubrics that work without editing, each with the limit a person should know before trusting it.
RUBRICS: dict[str, Rubric] = {
    "helpful_concise": Rubric(
        "The answer addresses the question directly, is correct as far as you can tell, and has no padding, "
        "repetition or filler. A short complete answer scores high; a long or evasive one scores low.",
        "a judge cannot check facts it does not know; small judges reward confident tone over correctness, and may "
        "give an empty answer high marks (the judge check in the preview says when)."),
    "follows_format": Rubric(
        "The answer follows the format the question asks for (for example a single number, a list, JSON, or a "
        "given number of sentences) exactly. Ignore whether the content is correct; score only the format.",
        "a format a regular expression can check is better scored by a builtin (regex_format): exact and free."),
    "correct_vs_reference": Rubric(
        "The answer reaches the same final result as the reference answer. Wording and working may differ; "
        "a different or missing final result scores the lowest.",
        "needs the answer column mapped; for a number or exact string the builtins numeric_answer/exact_match are exact. "
        "A small judge may answer with the reference's number as its score (asked about \"I don't know.\" with "
        "reference 8, a 135M judge replied \"Score: 8\")."),
}

# A score and one short sentence fit in 32 new tokens; more only makes the judge slower.
JUDGE_MAX_NEW_TOKENS = 32
# The judge's reply is started for it with these words, as a final assistant message to continue: small chat models
# asked for "Score: N" otherwise often restate the question first; started this way they give the number first.
# A local judge always continues it; a server continues it if it treats a final assistant message as a start, else it
# answers on its own (the score is read the same way). The reply kept is what the judge wrote after it.
REPLY_START = "Score:"
LOCAL_BATCH_SIZE = 8
# Server case: attempts per request and the pause before the next (doubled each time); requests in flight at once.
SERVER_ATTEMPTS = 3
SERVER_BACKOFF_S = 0.5
SERVER_CONCURRENCY = 4
# The seconds a judge entry spent judging one generation batch, logged through TRL's `log_metric` as
# `judge/<name>/seconds`: beside each step's `step_time` in metrics.jsonl it gives the judge's share of training time.
SECONDS_METRIC = "judge/{name}/seconds"

_NUMBER = r"[-+]?\d+(?:\.\d+)?"
# The verdict: a line (or a sentence) that says "Score: N" and then stops, or gives its reason after a break ("Score: 7.
# Clear.", "Score: 7/10 - clear", "**Score:** 7", "Score: +1<think>…"). A number that runs on into more words of the same
# clause ("Score: 10 if the answer is a fruit, 0 otherwise.", a rubric read back; "Score: 9 + 8 = 17", the answer read
# back) is no verdict. A tag (`<think>`, `</think>`) is markup, not words: it ends the verdict as a line break does.
_LABEL = r"[*_]*score[*_]*[ \t]*[:=][ \t]*[*_]*[ \t]*"
_SCORED = r"(" + _NUMBER + r")(?:[ \t]*(?:/|out of)[ \t]*" + _NUMBER + r")?[*_]*"
_ENDS = r"[ \t]*$|[ \t]*[.!;,)\u2013\u2014-](?:[ \t]|$)|[ \t]*</?[a-z][^<>\n]*>"
_AT_START = r"(?:^|(?<=[.!?])[ \t]+)"
_VERDICT = re.compile(_AT_START + _LABEL + _SCORED + r"(?=" + _ENDS + r")", re.IGNORECASE | re.MULTILINE)
_LABEL_FIRST = re.compile(r"^[*_\s]*score\b", re.IGNORECASE)
_WORD = re.compile(r"[a-z0-9]+(?:\.[0-9]+)?")
# A reply repeats its instructions when the words after its "Score:" label start with ECHO_WORDS + 1 words that stand
# together, in that order, in the rubric or the template: the judge read a sentence back instead of judging ("Score: 10.
# Anything else: 0." from a rubric "A fruit: 10. Anything else: 0."). A number and two words rarely match by chance; a
# bare "Score: 7" repeats nothing.
ECHO_WORDS = 2
READ_BACK = "the reply repeats"  # how a read-back reply's reason starts (`_repeats`): a batch of them gets its own advice


@dataclass
class Verdict:
    """One completion's judgement: the normalised score (0-1, None when unusable), the raw reply, and why it is None
    (or, with a score and no reply, why the judge was not asked: `NO_ANSWER`)."""
    score: float | None
    reply: str
    problem: str = ""


def as_read(reply: str) -> str:
    """The judge's reply as it reads with the start it was given: REPLY_START before what it wrote after it, unless it
    wrote its own label (a server that answers on its own instead of continuing)."""
    text = (reply or "").strip()
    return text if not text or _LABEL_FIRST.match(text) else f"{REPLY_START} {text}"


def _words(text: str) -> list[str]:
    return _WORD.findall(text.lower())


def _read_back(after_label: str, source: str) -> bool:
    """Whether the first ECHO_WORDS + 1 words of `after_label` stand together, in that order, in `source`."""
    said = _words(after_label)[:ECHO_WORDS + 1]
    known = _words(source)
    return len(said) > ECHO_WORDS and any(known[i:i + len(said)] == said for i in range(len(known) - len(said) + 1))


def _repeats(text: str, rubric: str, template: str) -> str:
    """Why the reply is read back from the judge's instructions ("" when it is not): the words after any of its
    "Score:" labels repeat the rubric or the template."""
    for label in re.finditer(r"\bscore\b[*_]*[ \t]*[:=]?", text, re.IGNORECASE):
        line = text[label.end():].split("\n", 1)[0]
        for what, source in (("the rubric", rubric), ("the prompt template", template)):
            if source and _read_back(line, source):
                said = text[label.start():].split("\n", 1)[0].strip()
                return f"{READ_BACK} {what} instead of judging ({said[:80]!r})"
    return ""


def _why_no_verdict(text: str) -> str:
    """Why `text` (a reply as read, `as_read`) holds no `_VERDICT`, in words: no number after "Score:", a number that
    runs on into more words, or a "Score:" inside a sentence. A label with a number is told of before one without."""
    labels = list(re.finditer(_LABEL, text, re.IGNORECASE))
    scored = [(label, re.match(_SCORED, text[label.end():], re.IGNORECASE)) for label in labels]
    with_number = [(label, number) for label, number in scored if number]
    if not labels:
        return f"the reply has no 'Score:' with a colon before a number (it reads {_shown(text.splitlines()[0].strip(), 80)!r})"
    if not with_number:
        return f"no number follows 'Score:' (it reads {_shown(text.splitlines()[0].strip(), 80)!r})"
    label, number = with_number[0]
    said = number.group(0).strip("*_ \t")
    if not re.match(r"(?:" + _ENDS + r")", text[label.end() + number.end():], re.IGNORECASE | re.MULTILINE):
        after = text[label.end() + number.end():].split("\n", 1)[0].strip()
        return (f"the number after 'Score:' ({said}) runs on into {_shown(after, 30)!r} with no line break or full stop "
                "after it, so it is not read as the judge's score: a verdict ends its line or sentence after the number "
                "('Score: 7' or 'Score: 7. Why.')")
    line = text[text.rfind("\n", 0, label.start()) + 1:label.start() + number.end()].strip()
    return (f"'Score:' stands inside a sentence ({_shown(line, 80)!r}), so it is not read as the judge's score: a verdict "
            "starts its own line or sentence")


def _shown(text: str, limit: int) -> str:
    """`text` cut to `limit` characters, with … where it was cut."""
    return text if len(text) <= limit else text[:limit].rstrip() + "…"


def parse_score(reply: str, low: float, high: float, rubric: str = "", template: str = "") -> tuple[float | None, str]:
    """The score the judge gives as its verdict in `reply` on the scale [low, high], or (None, the reason).

    `reply` is read as the judge wrote it after REPLY_START (`as_read`). The verdict is "Score: N" with nothing after the
    number but "/10" and a line or sentence break or a tag (`_VERDICT`); no other number in the reply is the judge's
    score. A reply that reads back the `rubric` or the `template` (`_repeats`), has no verdict (`_why_no_verdict` says
    why) or two different ones, or scores outside the scale (not clipped: the judge misread the task) gives None.

    >>> parse_score("7/10. Clear.", 0, 10)
    (7.0, '')
    >>> parse_score("10 if the answer is a fruit, 0 otherwise.", 0, 10, rubric="Score 10 if the answer is a fruit, 0 otherwise.")
    (None, "the reply repeats the rubric instead of judging ('Score: 10 if the answer is a fruit, 0 otherwise.')")
    >>> parse_score("Score: 11", 0, 10)
    (None, 'the score 11 is outside the scale 0-10')
    """
    text = as_read(reply)
    if not text:
        return None, "the reply is empty"
    echo = _repeats(text, rubric, template)
    if echo:
        return None, echo
    verdicts = list(_VERDICT.finditer(text))
    if not verdicts:
        return None, _why_no_verdict(text)
    values = sorted({float(m.group(1)) for m in verdicts})
    if len(values) > 1:
        return None, "the reply gives several scores (" + ", ".join(f"{v:g}" for v in values) + ")"
    value = values[0]
    if not (low <= value <= high) or not math.isfinite(value):
        return None, f"the score {value:g} is outside the scale {low:g}-{high:g}"
    return value, ""


def normalise(value: float, low: float, high: float) -> float:
    """A score on [low, high] as 0-1."""
    return (value - low) / (high - low)


def check_template(template: str) -> str | None:
    """What is wrong with a prompt template (an unknown field, a missing {completion}, a stray brace), or None."""
    try:
        fields = [f for _, f, _, _ in string.Formatter().parse(template) if f is not None]
    except ValueError as exc:
        return f"the template is not a valid {{field}} template ({exc}); write a literal brace as {{{{ or }}}}"
    unknown = sorted({f for f in fields if f not in TEMPLATE_FIELDS})
    if unknown:
        return f"the template has unknown field(s) {', '.join('{' + f + '}' for f in unknown)}; the fields are " + \
               ", ".join("{" + f + "}" for f in TEMPLATE_FIELDS)
    if "completion" not in fields:
        return "the template has no {completion} field, so the judge would never see what it grades"
    return None


def prompt_text(prompt) -> str:
    """A prompt as the judge reads it: the text, or a chat's system and user messages one after another."""
    if isinstance(prompt, str):
        return prompt
    if isinstance(prompt, list):
        return "\n".join(str(m.get("content", "")) for m in prompt if isinstance(m, dict) and m.get("role") != "assistant")
    return str(prompt)


# Why a completion whose thought never closed gets the scale's lowest score without a judge call.
NO_ANSWER = "the thinking never closed: there is no answer to judge (the lowest score, as the answer-reading rewards give)"


def judged_text(completion, prompt_opens_think: bool = False) -> str | None:
    """What the judge is shown of a completion: its answer, the text after ``</think>``, as the answer-reading builtins
    read it (the reasoning is not graded, and a judge shown it grades how long the model thinks); None when a thought
    opened (by the completion or, with a thinking template, by the prompt) never closed: there is no answer. A
    completion without think tags is shown as written.

    >>> judged_text("<think>6*7=42</think> 42"), judged_text("6*7=42, so", True), judged_text(" 42 ")
    ('42', None, ' 42 ')
    """
    text = completion_text(completion)
    seen = seen_completion(text, prompt_opens_think)
    return text if "<think>" not in seen and THINK_END not in seen else final_answer(seen)


def render(template: str, rubric: str, prompt, completion, reference, scale: Sequence[float]) -> str:
    """The judge's prompt for one completion (`completion`: what it is shown, `judged_text`'s)."""
    ref = NO_REFERENCE if reference is None or not str(reference).strip() else str(reference)
    return template.format(rubric=rubric, prompt=prompt_text(prompt), completion=completion_text(completion),
                           reference=ref, low=f"{scale[0]:g}", high=f"{scale[1]:g}")


# ---- the two kinds of judge: each turns a list of judge prompts into a list of replies ------------------------------

class LocalJudge:
    """A causal language model loaded once, on first use, on the training device; greedy replies via its chat template,
    each started with REPLY_START."""

    def __init__(self, source: str, max_new_tokens: int = JUDGE_MAX_NEW_TOKENS, batch_size: int = LOCAL_BATCH_SIZE):
        self.source = source
        self.max_new_tokens = max_new_tokens
        self.batch_size = batch_size
        self.state: dict = {}

    def _load(self) -> None:
        import torch
        from transformers import AutoModelForCausalLM, AutoTokenizer

        try:
            tok = AutoTokenizer.from_pretrained(self.source)
            device = "cuda" if torch.cuda.is_available() else "cpu"
            if device == "cuda" and local_judge_in_4bit():
                from transformers import BitsAndBytesConfig

                compute = torch.bfloat16 if torch.cuda.is_bf16_supported() else torch.float16
                quantized = BitsAndBytesConfig(load_in_4bit=True, bnb_4bit_quant_type="nf4", bnb_4bit_use_double_quant=True,
                                               bnb_4bit_compute_dtype=compute)
                # A 4-bit model is placed by device_map at load time (it cannot be moved with .to() afterwards).
                model = AutoModelForCausalLM.from_pretrained(self.source, quantization_config=quantized, dtype=compute,
                                                             device_map={"": torch.cuda.current_device()})
            else:
                # CPUs compute bfloat16 slowly or not at all: float32 there; the model's own dtype on a GPU without bitsandbytes.
                model = AutoModelForCausalLM.from_pretrained(self.source, dtype="auto" if device == "cuda" else torch.float32)
                model = model.to(device)
        except (OSError, ValueError, ImportError) as exc:
            raise ModelError(f"judge model {self.source!r} could not be loaded", str(exc).splitlines()[0],
                             "give `judge:` a local folder or hub id of a causal (chat) language model, or a server "
                             "{url, model}") from None
        if tok.pad_token_id is None:
            tok.pad_token = tok.eos_token
        tok.padding_side = "left"  # generation continues each row from its last real token
        self.state.update(tok=tok, model=model.eval(), device=device, torch=torch)

    def replies(self, prompts: list[str], deadline: float) -> list[tuple[str | None, str]]:
        """(reply, "") for each judge prompt; raises _TimeUp when the deadline passes between batches."""
        if not self.state:
            self._load()
        tok, model, torch = self.state["tok"], self.state["model"], self.state["torch"]
        out: list[tuple[str | None, str]] = []
        for start in range(0, len(prompts), self.batch_size):
            if time.monotonic() > deadline:
                raise _TimeUp(len(out), len(prompts))
            chunk = prompts[start:start + self.batch_size]
            if getattr(tok, "chat_template", None):
                texts = [tok.apply_chat_template([{"role": "user", "content": p}, {"role": "assistant", "content": REPLY_START}],
                                                 tokenize=False, continue_final_message=True) for p in chunk]
            else:
                texts = [p + "\n" + REPLY_START for p in chunk]
            batch = tok(texts, return_tensors="pt", padding=True, add_special_tokens=False).to(self.state["device"])
            with torch.inference_mode():
                generated = model.generate(**batch, do_sample=False, max_new_tokens=self.max_new_tokens,
                                           pad_token_id=tok.pad_token_id, temperature=None, top_p=None, top_k=None)
            new = generated[:, batch["input_ids"].shape[1]:]
            out.extend((t.strip(), "") for t in tok.batch_decode(new, skip_special_tokens=True))
        return out


class ServerJudge:
    """An OpenAI-compatible chat-completions server (Ollama, llama.cpp server, vLLM, LM Studio) at the given URL only."""

    def __init__(self, url: str, model: str, api_key_env: str | None = None, max_new_tokens: int = JUDGE_MAX_NEW_TOKENS):
        self.endpoint = url.rstrip("/") + "/chat/completions"
        self.model = model
        self.api_key_env = api_key_env
        self.max_new_tokens = max_new_tokens

    def _headers(self) -> dict:
        headers = {"Content-Type": "application/json"}
        if self.api_key_env:
            key = os.environ.get(self.api_key_env)
            if not key:
                raise RewardError(f"the judge's API key variable {self.api_key_env} is not set",
                                  "the judge entry says `api_key_env: " + self.api_key_env + "`, and the key is read from "
                                  "the environment when the judge is called (it is never stored in the run folder)",
                                  f"set it before starting (e.g. `export {self.api_key_env}=...`), or remove api_key_env "
                                  "if the server needs no key")
            headers["Authorization"] = f"Bearer {key}"
        return headers

    def _one(self, prompt: str, deadline: float, headers: dict) -> tuple[str | None, str]:
        """(reply, "") or (None, why the server gave none)."""
        body = json.dumps({"model": self.model, "messages": [{"role": "user", "content": prompt},
                                                             {"role": "assistant", "content": REPLY_START}],
                           "temperature": 0, "max_tokens": self.max_new_tokens}).encode()
        problem = ""
        for attempt in range(SERVER_ATTEMPTS):
            left = deadline - time.monotonic()
            if left <= 0:
                return None, problem or "the time limit passed before the request was sent"
            request = urllib.request.Request(self.endpoint, data=body, headers=headers, method="POST")
            try:
                with urllib.request.urlopen(request, timeout=left) as response:
                    data = json.loads(response.read().decode("utf-8", "replace"))
                return str(data["choices"][0]["message"]["content"] or "").strip(), ""
            except urllib.error.HTTPError as exc:
                problem = f"HTTP {exc.code} {exc.reason}"
                if exc.code in (400, 401, 403, 404):  # the request itself is wrong: asking again will not help
                    return None, problem
            except (urllib.error.URLError, TimeoutError, ConnectionError, OSError) as exc:
                problem = str(getattr(exc, "reason", exc)) or type(exc).__name__
            except (ValueError, KeyError, IndexError, TypeError):
                problem = "the answer is not an OpenAI chat-completions response (no choices[0].message.content)"
            pause = SERVER_BACKOFF_S * 2 ** attempt
            if attempt + 1 < SERVER_ATTEMPTS and time.monotonic() + pause < deadline:
                time.sleep(pause)
        return None, problem

    def replies(self, prompts: list[str], deadline: float) -> list[tuple[str | None, str]]:
        """(reply, "") or (None, why the server gave none) for each judge prompt; fails when none is answered."""
        headers = self._headers()
        with ThreadPoolExecutor(max_workers=SERVER_CONCURRENCY) as pool:
            results = list(pool.map(lambda p: self._one(p, deadline, headers), prompts))
        if results and all(reply is None for reply, _ in results):
            raise RewardError(
                f"the judge server at {self.endpoint} did not answer any of {len(results)} requests",
                f"{results[0][1]} (after {SERVER_ATTEMPTS} attempts each, within the time limit)",
                "start the server (e.g. `ollama serve`), check the `url:` (it ends before /chat/completions, e.g. "
                "http://127.0.0.1:11434/v1) and the `model:` name it serves, then run again")
        return results


def server_unreachable(url: str, timeout_s: float = 3.0) -> str | None:
    """Why nothing answers at a judge server's address (refused, no such host, silent), or None when something does.

    One GET of `{url}/models` (the OpenAI listing; any HTTP answer, even an error status, means a server is there),
    so a page can refuse at once instead of spending the retries of every judge call."""
    try:
        with urllib.request.urlopen(url.rstrip("/") + "/models", timeout=timeout_s):
            return None
    except urllib.error.HTTPError:
        return None
    except (urllib.error.URLError, TimeoutError, ConnectionError, OSError, ValueError) as exc:
        return str(getattr(exc, "reason", exc)) or type(exc).__name__


class _TimeUp(Exception):
    def __init__(self, done: int, total: int):
        super().__init__(f"{done} of {total}")
        self.done, self.total = done, total


# ---- the reward function ------------------------------------------------------------------------------------------

class JudgeReward:
    """The reward function of one judge entry, in TRL's contract (`__call__(prompts, completions, **columns)`)."""

    def __init__(self, name: str, judge, rubric: str, scale: Sequence[float], template: str = DEFAULT_TEMPLATE,
                 answer_column: str | None = None, time_limit_s: float = 120.0, prompt_opens_think: bool = False):
        self.__name__ = self.__qualname__ = name
        self.prompt_opens_think = prompt_opens_think  # a thinking template: completions start inside the thought
        self.judge = judge
        self.rubric = rubric
        self.low, self.high = float(scale[0]), float(scale[1])
        self.template = template
        # The template's own words (no rubric, prompt or completion in them): a reply that reads them back is no verdict.
        self.instructions = render(template, "", "", "", None, (self.low, self.high)).replace(NO_REFERENCE, "")
        self.answer_column = answer_column
        self.time_limit_s = float(time_limit_s)
        self.cache: dict[tuple[str, str, str], Verdict] = {}
        self._cache_step = None
        self.last_verdicts: list[Verdict] = []  # the latest batch's verdicts: the judge's words and why a score is None
        self.calls = 0  # judge requests made (cache hits excluded)

    def __call__(self, prompts, completions, **kwargs) -> list[float | None]:
        state = kwargs.get("trainer_state")
        step = getattr(state, "global_step", None)
        if step != self._cache_step:  # the cache lives for one step: a new step brings a changed policy
            self.cache, self._cache_step = {}, step
        references = kwargs.get(self.answer_column) if self.answer_column else None
        keys, todo = [], {}
        for i, (prompt, completion) in enumerate(zip(prompts, completions)):
            answer = judged_text(completion, self.prompt_opens_think)
            key = (self.rubric, prompt_text(prompt), answer)
            keys.append(key)
            if answer is None:  # no answer to judge: no call either
                self.cache[key] = Verdict(0.0, "", NO_ANSWER)
            elif key not in self.cache and key not in todo:
                reference = references[i] if references is not None else None
                todo[key] = render(self.template, self.rubric, prompt, answer, reference, (self.low, self.high))
        started = time.monotonic()
        if todo:
            deadline = started + self.time_limit_s
            try:
                results = self.judge.replies(list(todo.values()), deadline)
            except _TimeUp as up:
                raise RewardError(
                    f"the judge `{self.__name__}` scored only {up.done} of {up.total} completions within its time limit "
                    f"of {self.time_limit_s:g} s", "each batch of completions must be judged within the entry's timeout_s",
                    f"use a smaller or faster judge, fewer completions per step, or a larger `timeout_s` (e.g. timeout_s: "
                    f"{4 * self.time_limit_s:g})") from None
            self.calls += len(results)
            for key, (reply, problem) in zip(todo, results):
                if reply is None:
                    self.cache[key] = Verdict(None, "", f"the judge gave no reply: {problem}")
                    continue
                value, why = parse_score(reply, self.low, self.high, self.rubric, self.instructions)
                self.cache[key] = Verdict(None if value is None else normalise(value, self.low, self.high), reply, why)
        log_metric = kwargs.get("log_metric")
        if callable(log_metric):  # training (TRL passes it); the preview calls without it
            log_metric(SECONDS_METRIC.format(name=self.__name__), time.monotonic() - started)
        self.last_verdicts = [self.cache[k] for k in keys]
        if self.last_verdicts and all(v.score is None for v in self.last_verdicts):
            first = self.last_verdicts[0]
            raise RewardError(
                f"the judge `{self.__name__}` gave no usable score for any of the {len(keys)} completions of this batch",
                f"{first.problem}; its first reply was {first.reply[:200]!r}",
                ("write the rubric as what a good answer is, not as a scoring sentence the judge can copy (\"Score 10 if "
                 "...\"), or use a larger instruction-tuned judge model") if first.problem.startswith(READ_BACK) else
                f"make the template ask plainly for one number from {self.low:g} to {self.high:g} (\"Score: N\"), "
                "or use a larger instruction-tuned judge model")
        return [v.score for v in self.last_verdicts]


# ---- the judge's own check ------------------------------------------------------------------------------------------

# Answers every rubric should score lowest, in words: a judge that gives one of them high marks can be gamed by the policy.
PROBE_KINDS = {"empty": "the empty answer", "prompt read back": "the prompt read back as the answer",
               "rubric read back": "the rubric read back as the answer"}
# The prompts of a preview the probes are asked about (each one judge call per probe kind): enough to show a judge that
# likes an empty answer. A pinned check, run on every edit, asks about its first prompt only: a 135M judge on a busy
# 2-core CPU took 48 s for the six calls of two prompts, its model load included.
PROBE_PROMPTS = 2
# High marks: a normalised score at or above the middle of the scale.
HIGH_MARK = 0.5


def probe_completions(prompt, rubric: str) -> dict[str, str]:
    """The judge's probes for one prompt: the empty answer, the prompt itself, and the rubric itself as the answer."""
    return {"empty": "", "prompt read back": prompt_text(prompt), "rubric read back": rubric}


def probe_findings(fn: "JudgeReward", groups: Sequence[dict], prompts: int = PROBE_PROMPTS) -> dict:
    """The judge's own check on the first `prompts` distinct prompts of `groups` (each `{prompt, row}`): which probe
    answers it gives high marks (HIGH_MARK or more), and `message`, the verdict in words.

    The judge is asked directly (`fn.judge`), so the check leaves the reward's cache, call count and last verdicts as
    the scored completions left them."""
    seen, asked = set(), []
    for g in groups:
        key = prompt_text(g["prompt"])
        if key not in seen and len(seen) < prompts:
            seen.add(key)
            row = g.get("row") or {}
            reference = row.get(fn.answer_column) if fn.answer_column else None
            asked += [(g["prompt"], kind, text, reference) for kind, text in probe_completions(g["prompt"], fn.rubric).items()]
    if not asked:
        return {"judge": fn.__name__, "high": [], "asked": 0, "message": ""}
    prompts = [render(fn.template, fn.rubric, p, text, ref, (fn.low, fn.high)) for p, _, text, ref in asked]
    try:
        replies = fn.judge.replies(prompts, time.monotonic() + fn.time_limit_s)
    except (_TimeUp, StudioError) as exc:
        why = f"{exc.done} of {exc.total} asked within its time limit" if isinstance(exc, _TimeUp) else exc.what
        return {"judge": fn.__name__, "high": [], "asked": 0,
                "message": f"Judge `{fn.__name__}`: its check on empty and read-back answers could not run ({why})."}
    high = []
    for (prompt, kind, _, _), (reply, _) in zip(asked, replies):
        value, _ = parse_score(reply or "", fn.low, fn.high, fn.rubric, fn.instructions)
        if value is not None and normalise(value, fn.low, fn.high) >= HIGH_MARK:
            high.append({"probe": kind, "score": value, "prompt": prompt_text(prompt), "reply": reply})
    scale = f"{fn.low:g}-{fn.high:g}"
    if not high:
        message = (f"Judge `{fn.__name__}` gives low marks or no score to the empty answer, the prompt read back and the "
                   f"rubric read back ({len(seen)} prompt{'s' if len(seen) != 1 else ''}, scale {scale}).")
    else:
        worst = {}
        for h in high:
            worst[h["probe"]] = max(worst.get(h["probe"], h["score"]), h["score"])
        said = ", ".join(f"{words} {worst[kind]:g}" for kind, words in PROBE_KINDS.items() if kind in worst)
        message = (f"Judge `{fn.__name__}` gives high marks to answers that should score lowest: {said} (scale {scale}; "
                   f"e.g. for {high[0]['prompt'][:60]!r}). The policy could learn to answer that way instead: use a larger "
                   "judge, or say in the rubric what an empty or read-back answer scores.")
    return {"judge": fn.__name__, "high": high, "asked": len(asked), "message": message}


def judge_checks(rewards: Sequence, groups: Sequence[dict], prompts: int = PROBE_PROMPTS) -> list[dict]:
    """`probe_findings` for every judge among `rewards` (LoadedReward-like: `.func`); [] without a judge."""
    return [probe_findings(r.func, groups, prompts) for r in rewards if isinstance(r.func, JudgeReward)]


def judge_calls_per_step(specs: Sequence[RewardSpec], plan) -> float:
    """Judge requests per optimiser step: one per newly generated completion (`plan.new_completions_per_step` of a
    batching.BatchPlan), for each judge entry in `specs`.

    Rewards are computed once per generation batch, so a step asks the judge about its new completions only. Identical
    (rubric, prompt, completion) triples within a step are asked once (`JudgeReward.cache`): this is the most a step asks."""
    return calls_per_step(sum(1 for spec in specs if spec.judge is not None), plan)


def calls_per_step(judges: int, plan) -> float:
    """`judge_calls_per_step` for a number of judge entries."""
    return judges * plan.new_completions_per_step


def judge_cost_line(specs: Sequence[RewardSpec], plan) -> str | None:
    """The judge's cost in words, for the estimate; None without a judge entry."""
    return judge_cost_words([spec.judge for spec in specs if spec.judge is not None], plan)


def judge_cost_words(judges: Sequence, plan) -> str | None:
    """`judge_cost_line` for the `judge:` values themselves (a local model's name, or a server's {url, model})."""
    if not judges:
        return None
    each = f", for each of the {len(judges)} judge entries" if len(judges) > 1 else ""
    where = "on the training GPU, between generation and training" if any(not isinstance(j, dict) for j in judges) \
        else "on the judge server"
    return (f"Judge calls per training step: {calls_per_step(len(judges), plan):g} (one per newly generated "
            f"completion{each}; identical completions within a step are asked once). Each call generates up to "
            f"{JUDGE_MAX_NEW_TOKENS} tokens, {where}.")


def judge_seconds(row: dict) -> dict[str, float]:
    """The seconds each judge spent in one metrics row (`SECONDS_METRIC`), by reward name; {} in a row without a judge."""
    prefix, suffix = SECONDS_METRIC.split("{name}")
    return {key[len(prefix):-len(suffix)]: float(value) for key, value in row.items()
            if key.startswith(prefix) and key.endswith(suffix) and isinstance(value, (int, float))}


def judge_seconds_per_step(row: dict, batches: float) -> dict:
    """`row` with each judge's seconds (`SECONDS_METRIC`) made the step's: TRL averages a `log_metric` value over the
    generation batches it was logged in, so with `batches` of them in one step (dynamic sampling's extra batches, or a
    generation batch smaller than a step) the logged number is one batch's. Rows without a judge are returned as they are.

    >>> judge_seconds_per_step({"judge/judge_smol/seconds": 4.0, "step_time": 15.0}, 3)
    {'judge/judge_smol/seconds': 12.0, 'step_time': 15.0}
    """
    seconds = judge_seconds(row)
    if not seconds or batches == 1:
        return row
    return {**row, **{SECONDS_METRIC.format(name=name): value * batches for name, value in seconds.items()}}


def judge_time_share(rows: Sequence[dict]) -> tuple[float, float] | None:
    """(the judges' seconds, the training seconds) over metric rows that log TRL's `step_time`; None without a judge.

    Rewards are computed once per generation batch, inside the training step that generates it, so a row logs the
    judge's seconds only on such a step; summed over the rows, the two give the judge's share of the training time."""
    judged = total = 0.0
    seen = False
    for row in rows:
        if not isinstance(row.get("step_time"), (int, float)):
            continue
        total += float(row["step_time"])
        seconds = judge_seconds(row)
        seen = seen or bool(seconds)
        judged += sum(seconds.values())
    return (judged, total) if seen and total > 0 else None


def judge_share_line(rows: Sequence[dict]) -> str | None:
    """The judge's share of the training time so far in words ("Judge: 41 % of the training time, 12.3 s of 30.0 s a
    step"); None without a judge in these rows."""
    share = judge_time_share(rows)
    if share is None:
        return None
    judged, total = share
    steps = sum(1 for row in rows if isinstance(row.get("step_time"), (int, float)))
    return (f"Judge: {100 * judged / total:.0f} % of the training time ({judged / steps:.1f} s of {total / steps:.1f} s "
            f"a step, over {steps} step{'s' if steps != 1 else ''})")


def judge_name(judge) -> str:
    """The reward's name in logs and metrics: `judge_` and the judge model's name, made an identifier."""
    model = judge.get("model", "") if isinstance(judge, dict) else Path(str(judge)).name
    return "judge_" + (re.sub(r"\W+", "_", str(model)).strip("_") or "model")


def judge_reward_function(spec: RewardSpec, base_dir: str | Path = ".", dataset_columns: Sequence[str] = (),
                          check_only: bool = False, prompt_opens_think: bool = False) -> Callable:
    """The reward function of a `judge:` entry; with `check_only`, checks its template and columns and loads nothing."""
    wrong = spec.judge_problems("judge entry")
    if wrong:
        raise RewardError(f"judge reward: {wrong[0]}", "the entry's judge settings are checked before anything is loaded",
                          "fix the entry (see docs/judge.md)")
    template = spec.template or DEFAULT_TEMPLATE
    problem = check_template(template)
    if problem:
        raise RewardError(f"judge reward: {problem}", "the template is the judge's prompt, filled in for every completion",
                          "fix its `template:`, or remove it to use the default")
    column = spec.params.get("answer_column")
    if column is None and "answer" in dataset_columns:
        column = "answer"  # the column the answer-checking builtins read by default
    if spec.judge is not None and isinstance(spec.judge, dict):
        judge = ServerJudge(spec.judge["url"], spec.judge["model"], spec.judge.get("api_key_env"))
    else:
        local = Path(str(spec.judge)).expanduser()
        local = local if local.is_absolute() else Path(base_dir) / local
        if str(spec.judge) == "demo" and not local.exists():  # the bundled model, as `model.name_or_path: demo` means
            local = DEMO_MODEL_DIR
        judge = LocalJudge(str(local) if local.exists() else str(spec.judge))
    scale = spec.scale or DEFAULT_JUDGE_SCALE
    return JudgeReward(judge_name(spec.judge), judge, spec.rubric, scale, template, column, spec.timeout_s,
                       prompt_opens_think)
