"""What crosses a pipe between the app and a child process, as typed records (stdlib only).

The app and its children (`procs.Child`) talk JSON; this module is the one place that says what
each message holds, so that neither side builds or reads one by hand:

- `ScoreRequest`: what the scoring child (`rewards.preview`) scores. Every road to the preview
  table builds one: completions sampled by the model (`rewards.preview.scoring_request`), pasted
  ones (the same, from a completions file), and written ones such as pinned examples
  (`ScoreRequest.written`, shaped as training shapes the data's rows).
- `ScoreResult`: what the scoring child answers (the table, the summaries, the findings), or the
  problems that kept it from scoring.

`to_dict` gives the JSON form; `from_dict` reads it back and refuses a key it does not know (a
misspelt key would otherwise be dropped without a word and the child would score something else).
"""

from __future__ import annotations

from dataclasses import asdict, dataclass, field, fields
from typing import Any, TypedDict


class PromptGroup(TypedDict, total=False):
    """One prompt and its completions: `prompt` (text, or chat messages once shaped), `row` (the data row's columns,
    which reach the rewards by name), `completions` (k texts), `completion_ids` (the sampled ids, end token included;
    absent for written text, whose ids the child computes with the tokenizer)."""
    prompt: Any
    row: dict
    completions: list[str]
    completion_ids: list[list[int]]


@dataclass
class WrittenShape:
    """How hand-written prompts are shaped before scoring, as training shapes the data's (the config's data section)."""
    prompt_format: str = "auto"
    system_prompt: str | None = None


def _known(cls, data: dict, what: str) -> dict:
    names = {f.name for f in fields(cls)}
    unknown = sorted(set(data) - names)
    if unknown:
        raise ValueError(f"{what} has unknown keys {unknown}; it takes {sorted(names)}")
    return data


@dataclass
class ScoreRequest:
    """Completions to score with a run's rewards (see rewards.preview for what each reaches the rewards as).

    `rewards`: RewardSpec fields as dicts; `source`: the editor's reward code (`file: rewards.py` finds it), if any;
    `base_dir`: where relative reward files are found. `beta`, `normalize_advantages` and `reward_clip_range` are the
    run's effective values (the table clamps totals as training does and says what training adds to advantages).
    `written`: set for hand-written text (pinned examples): shape its prompts as training would and score each
    completion on its own when a function raises. `probes`: run the hack probes (sampled previews only)."""
    groups: list[PromptGroup]
    num_generations: int
    rewards: list[dict]
    base_dir: str = "."
    source: str | None = None
    conversational: bool = False
    tokenizer: str | None = None
    think_end_token_id: int | None = None
    prompt_opens_think: bool | None = None
    prompt_column: str | None = None
    columns: list[str] = field(default_factory=list)
    chat_template_kwargs: dict | None = None
    beta: float | None = None
    normalize_advantages: bool | None = None
    reward_clip_range: Any = None
    system_prompt: str | None = None
    written: WrittenShape | None = None
    probes: bool = True

    def to_dict(self) -> dict:
        return asdict(self)

    @classmethod
    def from_dict(cls, data: dict) -> "ScoreRequest":
        data = dict(_known(cls, data, "a score request"))
        if isinstance(data.get("written"), dict):
            data["written"] = WrittenShape(**_known(WrittenShape, data["written"], "a score request's `written`"))
        return cls(**data)

    @classmethod
    def of(cls, request: "ScoreRequest | dict") -> "ScoreRequest":
        """`request` as a ScoreRequest (its JSON form is read with `from_dict`)."""
        return request if isinstance(request, cls) else cls.from_dict(request)


@dataclass
class ScoreResult:
    """The scoring child's answer. Per completion (`rows`): every function's reward, the judge's reasons, the weighted
    total, the leave-one-out baseline and advantage; per function (`functions`): mean, std, min, max, None count,
    errors, weight; `learnability` (groups with no signal), `warnings`, `advantage_note`, the hack `probes` and which
    functions they `probed`, the judges' `agreement` and `judge_checks`, when the tokenizer was loaded
    (`tokenizer_loaded`), what the rewards look for that the prompts do not ask (`asks`). `problems`: why nothing was
    scored (then the rest is empty). `seconds`: the whole request's time, set by the parent."""
    functions: dict = field(default_factory=dict)
    rows: list[dict] = field(default_factory=list)
    learnability: dict = field(default_factory=dict)
    warnings: list[str] = field(default_factory=list)
    advantage_note: str = ""
    probes: list[dict] = field(default_factory=list)
    probed: list[str] = field(default_factory=list)
    agreement: list[dict] = field(default_factory=list)
    judge_checks: list[dict] = field(default_factory=list)
    tokenizer_loaded: str | None = None
    asks: Any = None
    problems: list[str] = field(default_factory=list)
    seconds: float | None = None

    def to_dict(self) -> dict:
        """The JSON form; a failed request's holds only `problems` (and `seconds`), which is what its readers test."""
        if self.problems:
            return {"problems": list(self.problems), **({"seconds": self.seconds} if self.seconds is not None else {})}
        data = asdict(self)
        del data["problems"]
        if self.seconds is None:
            del data["seconds"]
        return data

    @classmethod
    def from_dict(cls, data: dict) -> "ScoreResult":
        return cls(**_known(cls, data, "a score result"))

    @classmethod
    def failed(cls, problem: str, seconds: float | None = None) -> "ScoreResult":
        return cls(problems=[problem], seconds=seconds)
