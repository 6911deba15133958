"""What crosses a pipe between the app and a child process, as typed records (stdlib only).

The app and its children (`procs.Child`) talk JSON; this module is the one place that says what
each message holds, so that neither side builds or reads one by hand:

- `ScoreRequest`: what the scoring child (`rewards.preview`) scores, sent by `workers.scorer.score`.
  Every road to the preview table builds one: completions sampled by the model (`rewards.preview.scoring_request`), pasted
  ones (the same, from a completions file), and written ones such as pinned examples
  (`ScoreRequest.written`, shaped as training shapes the data's rows).
- `ScoreResult`: what the scoring child answers (the table, the summaries, the findings), or the
  problems that kept it from scoring (the parent's own words when the child was stopped or crashed).
- The inference worker's requests (`LoadRequest`, `ChatRequest`, `PreviewRequest`, `PingRequest`,
  `ShutdownRequest`: one JSON line each, tagged by `op`) and its events (`Ready`, `Progress`, `TextDelta`,
  `Reply`, `Done`, `Failed`: one JSON line each, tagged by `event`), written and read by
  `workers.inference` on the app's side and `engine.inference_worker` on the worker's.
  `inference_request` and `worker_event` read a line's dict back as its type.
- The progress events of the long commands (`EvalPlan`, `EvalSkip`, `EvalSide`, `EvalDone`; `ScanPlan`,
  `ScanProgress`, `ScanDone`; `ExportStep`: tagged by `event`, each command its own kinds), sent by
  `engine.evaluate`, `scan` and the export command, printed by the CLI (`cli.exits.progress_printer`: the JSON form
  with `--events`, else `line()`) and read back by the app's tabs (`workers.commands.event_of`, `command_event`).

`to_dict` gives the JSON form; `from_dict` reads it back and refuses a key it does not know (a
misspelt key would otherwise be dropped without a word and the child would score something else).
What a `Done` event's `result` holds (a loaded adapter's description, the sampled groups, the worker's status)
is the engine's own record, passed on whole.
"""

from __future__ import annotations

from dataclasses import asdict, dataclass, field, fields
from typing import Any, ClassVar, TypedDict


class PromptGroup(TypedDict, total=False):
    """One prompt and its completions: `prompt` (text, or chat messages once shaped), `row` (the data row's columns,
    which reach the rewards by name), `completions` (k texts), `completion_ids` (the sampled ids, end token included;
    absent for written text, whose ids the child computes with the tokenizer), `cut_off` (per completion: it hit the
    token budget before it ended, `rewards.runtime.cut_off`; sampled completions only)."""
    prompt: Any
    row: dict
    completions: list[str]
    completion_ids: list[list[int]]
    cut_off: list[bool]


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
    completion on its own when a function raises. `probes`: run the hack probes (sampled previews only).
    `max_steps`: the run's training steps, what `trainer_state.max_steps` holds in training."""
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
    max_steps: int = 0  # the run's, for `trainer_state.max_steps` (a schedule reward divides by it); 0 when unknown
    mask_truncated_completions: bool = False  # the run's: training leaves cut-off completions out of the loss

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
    total, the leave-one-out baseline and advantage, whether it was `cut_off` (None for written text); per function (`functions`): mean, std, min, max, None count,
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


# ---- the inference worker: requests (app -> worker) and events (worker -> app) -------------------------------------

class _Tagged:
    """A message whose JSON form names its type under `TAG_KEY` (`op` for a request, `event` for an event)."""
    TAG_KEY: ClassVar[str]
    tag: ClassVar[str]

    def to_dict(self) -> dict:
        return {self.TAG_KEY: self.tag, **asdict(self)}

    @classmethod
    def from_dict(cls, data: dict):
        data = dict(data)
        tag = data.pop(cls.TAG_KEY, cls.tag)
        if tag != cls.tag:
            raise ValueError(f"a {cls.tag!r} {cls.TAG_KEY} was expected, not {tag!r}")
        return cls(**_known(cls, data, f"a {cls.tag!r} {cls.TAG_KEY}"))


def _read_tagged(data: dict, kinds: dict[str, type], key: str):
    if not isinstance(data, dict) or data.get(key) not in kinds:
        found = data.get(key) if isinstance(data, dict) else type(data).__name__
        raise ValueError(f"unknown {key} {found!r}; known: {sorted(kinds)}")
    return kinds[data[key]].from_dict(data)


class InferenceRequest(_Tagged):
    TAG_KEY = "op"


@dataclass
class LoadRequest(InferenceRequest):
    """Load a run's weights at `checkpoint` (engine.chat_model.ChatModel.load); answered by progress and done."""
    tag = "load"
    run_dir: str
    checkpoint: str  # a checkpoint's folder name, or runs.FINAL


@dataclass
class ChatRequest(InferenceRequest):
    """Generate each of `sides` in turn for one conversation; answered by text deltas, a reply per side and done.
    `sampling`: engine.chat_model.Sampling's fields."""
    tag = "chat"
    messages: list[dict]
    sampling: dict = field(default_factory=dict)
    system_prompt: str | None = None
    sides: list[str] = field(default_factory=lambda: ["base", "tuned"])


@dataclass
class PreviewRequest(InferenceRequest):
    """Sample a reward preview's completions with the config's (warm) base model: for `rows` (the difficulty scan's,
    in order), else for a typed `prompt` (and its `answer`), else for `num_prompts` prompts picked by `seed`.
    `config`: a RunConfig's dict, read relative to `base_dir`. Answered by progress and done (engine.sampling's
    sample_groups result, the worker's `loads` and `pid`, and `chat_released`)."""
    tag = "preview"
    config: dict
    base_dir: str = "."
    num_prompts: int | None = None
    prompt: str | None = None
    answer: str | None = None
    rows: list[dict] | None = None
    seed: int = 0


@dataclass
class PingRequest(InferenceRequest):
    """What the worker holds: answered by done (loaded adapter, adapters, base model loads, CPU threads)."""
    tag = "ping"


@dataclass
class ShutdownRequest(InferenceRequest):
    """Answered by done; then the worker exits."""
    tag = "shutdown"


INFERENCE_REQUESTS: dict[str, type] = {c.tag: c for c in (LoadRequest, ChatRequest, PreviewRequest, PingRequest,
                                                         ShutdownRequest)}


def inference_request(data: dict) -> InferenceRequest:
    """A request line's dict as its type; ValueError for an unknown `op` or key."""
    return _read_tagged(data, INFERENCE_REQUESTS, "op")


class WorkerEvent(_Tagged):
    TAG_KEY = "event"


@dataclass
class Ready(WorkerEvent):
    """The worker has started and reads requests."""
    tag = "ready"
    pid: int | None = None


@dataclass
class Progress(WorkerEvent):
    """A stage of a load or a preview, in words ("loading the model")."""
    tag = "progress"
    message: str = ""


@dataclass
class TextDelta(WorkerEvent):
    """The next piece of one side's reply, as it is generated."""
    tag = "text"
    side: str
    delta: str


@dataclass
class Reply(WorkerEvent):
    """One side's whole reply: its text (and the thinking / answer parts), token ids, whether it finished or was cut
    off at `max_new_tokens`, whether its prompt ended inside `<think>` (a thinking template: the text starts inside
    the thought, `rewards.thinking`), and the adapter state read while it was generated (engine.chat_model.AdapterState)."""
    tag = "reply"
    side: str
    text: str
    thinking: str = ""
    answer: str = ""
    token_ids: list[int] = field(default_factory=list)
    tokens: int = 0
    finished: bool = False
    cut_off: bool = False
    max_new_tokens: int | None = None
    prompt_opens_think: bool = False
    adapter_state: dict = field(default_factory=dict)
    plain_prompt: bool = False  # the run's prompts are plain text: the message was sent alone, without earlier turns


@dataclass
class Done(WorkerEvent):
    """The end of a request: its `result`, if it has one (see each request), and, for a whole chat turn as the app's
    side reports it, its `seconds`."""
    tag = "done"
    result: dict | None = None
    seconds: float | None = None


@dataclass
class Failed(WorkerEvent):
    """The end of a request that failed: `error` is a StudioError's `as_dict` (errors.StudioError.from_dict reads it);
    `fatal`: the worker exits after it (out of memory), and the next request starts a fresh one."""
    tag = "error"
    error: dict | None = None
    fatal: bool = False


WORKER_EVENTS: dict[str, type] = {c.tag: c for c in (Ready, Progress, TextDelta, Reply, Done, Failed)}


def worker_event(data: dict) -> WorkerEvent:
    """An event line's dict as its type; ValueError for an unknown `event` or key."""
    return _read_tagged(data, WORKER_EVENTS, "event")


# ---- the commands' progress events (`rloo-studio eval|scan|export --events`: one JSON line each on stderr) ----------

class CommandEvent(_Tagged):
    """A step of a long command, tagged by `event`. `--events` prints `to_dict()` as one JSON line; without it the
    command prints `line()`, the same event in one terminal line. Each command has its own kinds (`COMMAND_EVENTS`):
    "plan" and "done" mean one thing to the evaluation and another to the scan."""
    TAG_KEY = "event"

    def line(self) -> str:
        raise NotImplementedError


@dataclass
class EvalPlan(CommandEvent):
    """First: how many held-out prompts, and the checkpoints that will be evaluated (the base side comes on top)."""
    tag = "plan"
    prompts: int
    checkpoints: list[str]

    def line(self) -> str:
        return f"[eval] plan prompts={self.prompts} checkpoints={','.join(self.checkpoints)}"


@dataclass
class EvalSkip(CommandEvent):
    """A checkpoint left out, and why (no weights, a torn file)."""
    tag = "skip"
    name: str
    why: str

    def line(self) -> str:
        return f"[eval] skip {self.name}: {self.why}"


@dataclass
class EvalSide(CommandEvent):
    """One side (base, or a checkpoint; `validation`: its pass on the selection's split) has `done` of its `total`
    completions: at 0 when it starts, then after every generated batch."""
    tag = "side"
    side: str
    validation: bool
    done: int
    total: int

    def line(self) -> str:
        return f"[eval] {'validation ' if self.validation else ''}{self.side} {self.done}/{self.total}"


@dataclass
class EvalDone(CommandEvent):
    """Last: the evaluation's seconds and the eval.json written."""
    tag = "done"
    seconds: float
    file: str

    def line(self) -> str:
        return f"[eval] done seconds={self.seconds} file={self.file}"


@dataclass
class ScanPlan(CommandEvent):
    """First: `prompts` of the `of` training prompts are scanned, `k` completions each, in `batches` batches."""
    tag = "plan"
    prompts: int
    of: int
    k: int
    batches: int

    def line(self) -> str:
        return f"[scan] plan prompts={self.prompts} of={self.of} k={self.k} batches={self.batches}"


@dataclass
class ScanProgress(CommandEvent):
    """After each batch: prompts scanned so far, seconds since the start, and the seconds left at the rate of the
    batches after the first (which also loads the model)."""
    tag = "progress"
    done: int
    total: int
    elapsed_s: float
    eta_s: float | None = None

    def line(self) -> str:
        eta = f" eta={self.eta_s:.0f}s" if self.eta_s is not None else ""
        return f"[scan] {self.done}/{self.total} prompts elapsed={self.elapsed_s:.0f}s{eta}"


@dataclass
class ScanDone(CommandEvent):
    """Last: the scan's seconds and its folder."""
    tag = "done"
    seconds: float
    folder: str

    def line(self) -> str:
        return f"[scan] done seconds={self.seconds} folder={self.folder}"


@dataclass
class ExportStep(CommandEvent):
    """A step of an export in words, as the export says it ("[export] merging the adapter into the base model")."""
    tag = "step"
    text: str

    def line(self) -> str:
        return self.text


EVAL_EVENTS: dict[str, type] = {c.tag: c for c in (EvalPlan, EvalSkip, EvalSide, EvalDone)}
SCAN_EVENTS: dict[str, type] = {c.tag: c for c in (ScanPlan, ScanProgress, ScanDone)}
EXPORT_EVENTS: dict[str, type] = {c.tag: c for c in (ExportStep,)}
COMMAND_EVENTS: dict[str, dict[str, type]] = {"eval": EVAL_EVENTS, "scan": SCAN_EVENTS, "export": EXPORT_EVENTS}


def command_event(command: str, data: dict) -> CommandEvent:
    """An `--events` line's dict from `rloo-studio COMMAND` as its type; ValueError for an unknown `event` or key."""
    return _read_tagged(data, COMMAND_EVENTS[command], "event")
