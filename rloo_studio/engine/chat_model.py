"""Chat generation for the comparison: one loaded base model, a run's adapter switched on or off.

`ChatModel` holds at most one base model in memory and attaches a run's LoRA adapters to it by
name (the final adapter and any checkpoint, through `engine.adapters`), so the *base* side is the
same weights with the adapter disabled — never a second copy, never the tuned model by accident. Every reply carries
an `AdapterState` read from the LoRA layers at generation time (inside the same context that
generates), which is what the app's badge shows; a mismatch with the side asked for is an error,
not a silently wrong answer. Prompts are tokenised with the run's own data settings (chat
template and its kwargs or plain text, system prompt) exactly as training tokenised them, replies
end at the tokens training ends at, the run's generation settings apply (only temperature, top-p
and length come from the chat's controls), and both sides use the same settings and seed.

It knows nothing about processes or pipes (inference_worker does) nor about the UI.
"""

from __future__ import annotations

from dataclasses import asdict, dataclass
from pathlib import Path

from .. import runs
from ..config import RunConfig
from ..errors import StudioError
from ..rewards.builtin import seen_completion, split_thinking
from ..rewards.thinking import ends_inside_thought
from .adapters import AdapterSwitch, adapter_name

FINAL = runs.FINAL
SIDES = ("base", "tuned")


@dataclass
class AdapterState:
    """Which weights produced a reply, read from the model while it generated."""

    side: str              # the side that was asked for
    adapter: str | None    # the adapter (or checkpoint) name that was active; None on the base side
    lora_layers: int       # LoRA layers in the model (0 for a fully fine-tuned run)
    active_layers: int     # of them, layers whose adapter took part (disable_adapters False)
    kind: str = "lora"     # "lora": one model, adapter on/off; "full": a fully fine-tuned run, two models
    weights: str = ""      # the folder the generating model was loaded from
    expected: str = ""     # the folder it should have been loaded from (full fine-tuning)

    @property
    def verified(self) -> bool:
        if self.kind == "full":
            return bool(self.weights) and self.weights == self.expected
        if self.lora_layers == 0:
            return False
        if self.side == "base":
            return self.active_layers == 0
        return self.active_layers == self.lora_layers and self.adapter is not None

    def badge(self) -> str:
        if not self.verified:
            if self.kind == "full":
                return f"NOT VERIFIED: the {self.side} side generated with weights from {self.weights}, expected {self.expected}"
            return f"NOT VERIFIED: {self.active_layers} of {self.lora_layers} adapter layers took part for the {self.side} side"
        if self.kind == "full":
            where = Path(self.weights)
            shown = f"{where.parent.name}/{where.name}" if self.side == "tuned" else where.name
            return (f"{'base model' if self.side == 'base' else 'tuned'} · weights from `{shown}` (checked; this run trained every "
                    "weight, so base and tuned are two copies in memory)")
        if self.side == "base":
            return f"base model · adapter OFF (checked: none of its {self.lora_layers} adapter layers took part)"
        return f"tuned · adapter `{self.adapter}` ON (checked: all {self.lora_layers} adapter layers took part)"

    def as_dict(self) -> dict:
        return {**asdict(self), "verified": self.verified, "badge": self.badge()}


@dataclass
class Sampling:
    temperature: float = 0.7
    top_p: float = 0.95
    max_new_tokens: int = 256
    seed: int = 0
    greedy: bool = False  # always the most likely token, whatever the temperature: the same reply every time

    def check(self) -> None:
        problems = []
        if not 0 <= self.temperature <= 5:
            problems.append(f"temperature {self.temperature} is outside 0–5 (0 means greedy)")
        if not 0 < self.top_p <= 1:
            problems.append(f"top-p {self.top_p} must be above 0 and at most 1")
        if not 1 <= self.max_new_tokens <= 32768:
            problems.append(f"max tokens {self.max_new_tokens} must be between 1 and 32768")
        if problems:
            raise StudioError("; ".join(problems), "these sampling settings cannot be used", "correct them and send again")


def find_weights(run_dir: Path, checkpoint: str):
    """The run's weights called `checkpoint` (`final` or `checkpoint-N`) as a runs.EvalCheckpoint, checked to exist."""
    available = runs.evaluable_checkpoints(run_dir)
    for found in available:
        if found.name == checkpoint:
            return found
    names = [c.name for c in sorted(available, key=lambda c: (c.name != FINAL, -c.step))]
    raise StudioError(f"run {run_dir.name} has no adapter for {checkpoint!r}",
                      "the final weights are written when training finishes or is stopped; checkpoints every save_steps",
                      f"pick one of: {', '.join(names)}" if names else "wait for the run to save a checkpoint or finish")


class _DeltaStreamer:
    """A transformers streamer that reports the newly decoded text after every token."""

    def __init__(self, tokenizer, prompt_len: int, on_text):
        self.tokenizer, self.on_text = tokenizer, on_text
        self.prompt_len = prompt_len
        self.ids: list[int] = []
        self.text = ""
        self._skipped_prompt = False

    def put(self, value):
        if not self._skipped_prompt:  # generate() hands the prompt over first
            self._skipped_prompt = True
            return
        self.ids.extend(int(t) for t in value.reshape(-1).tolist())
        text = self.tokenizer.decode(self.ids, skip_special_tokens=True)
        if text.endswith("\ufffd"):  # half of a multi-byte character: wait for the rest
            return
        if len(text) > len(self.text):
            self.on_text(text[len(self.text):])
        self.text = text

    def end(self):
        pass


class ChatModel:
    """The loaded base model with a run's adapters; `reply` generates one side of a turn.

    A LoRA run is one model in memory (a PeftModel; the adapter is switched off for the base
    side). A fully fine-tuned run has no adapter to switch: its base and tuned weights are two
    models, and the check is which folder the generating model was loaded from.
    """

    def __init__(self):
        self.model = None          # LoRA runs: a PeftModel over the base model; full runs: the base model
        self.adapters: AdapterSwitch | None = None  # LoRA runs: the adapters attached to the base model, every run's
        self.tuned_model = None    # full runs only: the fine-tuned weights
        self.tuned_version: dict[str, str] = {}  # full runs: the tuned model's name -> version
        self.tuned_folder: str | None = None
        self.kind = "lora"
        self.source: str | None = None
        self.tokenizer = None
        self.base_key = None       # what identifies the loaded base (kind, source, quantisation, dtype)
        self.run_dir: Path | None = None
        self.cfg: RunConfig | None = None
        self.adapter_name: str | None = None
        self.base_loads = 0        # how many times a base model was loaded (tests: switching checkpoints loads none)

    def load(self, run_dir: str | Path, checkpoint: str = FINAL, progress=lambda msg: None) -> dict:
        from .model import load_model, resolve_model_source
        from .stack import import_training_stack

        run_dir = Path(run_dir).resolve()
        if not (run_dir / runs.CONFIG_FILE).is_file():
            raise StudioError(f"{run_dir} is not a run directory (no config.yaml)", "", "pick a run from the list")
        cfg = RunConfig.load(run_dir / runs.CONFIG_FILE)
        weights = find_weights(run_dir, checkpoint)
        folder = weights.path
        version = f"{folder}@{runs.weights_stamp(run_dir, checkpoint)}"  # rewritten weights (a resumed run) load again
        kind = "lora" if weights.kind == "adapter" else "full"
        stack = import_training_stack("transformers")  # generation only: plain transformers + PEFT, as eval does
        source = resolve_model_source(cfg.model.name_or_path, run_dir)
        base_key = (kind, source, cfg.model.load_in_4bit and stack.cuda, cfg.model.dtype)
        label = f"{run_dir.name}/{checkpoint}"
        if self.model is None or base_key != self.base_key:
            self.unload()
            progress(f"loading the base model {source}")
            model_cfg = cfg.model
            if model_cfg.load_in_4bit and not stack.cuda:
                model_cfg = type(model_cfg)(**{**model_cfg.__dict__, "load_in_4bit": False})  # 4-bit needs CUDA to be fast
            base = load_model(model_cfg, None, stack, run_dir, for_training=False)
            self.tokenizer, self.base_key, self.kind, self.source = base.tokenizer, base_key, kind, source
            self.base_loads += 1
            if kind == "lora":  # every run's adapters on this base model: switching runs or checkpoints loads no base
                self.adapters = AdapterSwitch(stack.peft, base.model)  # self.model: the PeftModel once one is attached
            else:
                self.model = base.model.eval()
        name = adapter_name(label)
        if kind == "lora":
            if not self.adapters.holds(label, version):
                progress(f"attaching the adapter {checkpoint}")
            self.model = self.adapters.use(folder, label, version)
        elif self.tuned_version.get(name) != version:
            progress(f"loading the tuned weights {checkpoint}")
            self.tuned_model = None  # drop the previous checkpoint's copy before loading the next
            self.tuned_model = stack.transformers.AutoModelForCausalLM.from_pretrained(
                str(folder), dtype=self.model.dtype).to(next(self.model.parameters()).device).eval()
            self.tuned_folder = str(folder)
            self.tuned_version = {name: version}
        self.model.eval()
        self.adapter_name, self.run_dir, self.cfg = name, run_dir, cfg
        return {"run": run_dir.name, "checkpoint": checkpoint, "adapter": name, "base_model": source, "kind": kind,
                "system_prompt": cfg.data.system_prompt or "", "chat_format": self._chat_format()}

    @property
    def loaded(self) -> dict[str, str]:
        """The weights held, name -> version: the attached adapters (LoRA runs) or the tuned model (full runs)."""
        return self.adapters.loaded if self.adapters else self.tuned_version

    def unload(self) -> None:
        self.model = self.adapters = self.tuned_model = self.tuned_folder = self.tokenizer = self.base_key = self.adapter_name = None
        self.tuned_version = {}
        import gc

        gc.collect()
        try:
            import torch

            if torch.cuda.is_available():
                torch.cuda.empty_cache()
        except ImportError:
            pass

    def _chat_format(self) -> bool:
        from ..data import use_chat_format

        return use_chat_format(self.cfg.data, self.tokenizer)

    def prompt_ids(self, messages: list[dict], system_prompt: str | None) -> list[int]:
        """The prompt's token ids, made as training made its prompts' (`generate.prompt_token_ids`: chat template with
        the run's chat_template_kwargs, or plain text with the tokenizer's special tokens)."""
        from ..data import build_prompt
        from .generate import chat_template_kwargs, prompt_token_ids

        data_cfg = type(self.cfg.data)(**{**self.cfg.data.__dict__, "system_prompt": system_prompt or None})
        if self._chat_format():
            prompt = build_prompt(list(messages), data_cfg, chat=True)
        else:
            # Plain-text runs were trained on one prompt string without a conversation: send the
            # latest message alone, in the same form (system prompt, blank line, text).
            last_user = next((m["content"] for m in reversed(messages) if m["role"] == "user"), "")
            prompt = build_prompt(last_user, data_cfg, chat=False)
        return prompt_token_ids([prompt], self.tokenizer, chat_template_kwargs(self.cfg))[0]

    def adapter_state(self, side: str, model=None) -> AdapterState:
        """What the weights about to generate are: LoRA layers on/off, or (full runs) where `model` came from."""
        if self.kind == "full":
            weights = str(getattr(model, "name_or_path", "") or "")
            expected = self.source if side == "base" else self.tuned_folder
            return AdapterState(side=side, adapter=None if side == "base" else self.adapter_name, lora_layers=0, active_layers=0,
                                kind="full", weights=str(Path(weights).resolve()) if weights else "",
                                expected=str(Path(expected).resolve()) if expected else "")
        from peft.tuners.lora import LoraLayer

        layers = [m for m in self.model.modules() if isinstance(m, LoraLayer)]
        active = [m for m in layers if not m.disable_adapters and self.adapter_name in m.active_adapters]
        return AdapterState(side=side, adapter=None if side == "base" else self.adapter_name,
                            lora_layers=len(layers), active_layers=len(active))

    def reply(self, messages: list[dict], side: str, sampling: Sampling, system_prompt: str | None = None,
              on_text=lambda delta: None) -> dict:
        """Generate one reply for `side` (`base`: adapter off; `tuned`: on) and check the adapter state while doing it."""
        import contextlib

        import torch

        if self.model is None:
            raise StudioError("no model is loaded", "the chat loads a run's model before the first message", "pick a run and send again")
        if side not in SIDES:
            raise ValueError(f"side must be one of {SIDES}")
        sampling.check()
        from .generate import cut_at_end, end_token_ids, generation_config, generation_kwargs

        device = next(self.model.parameters()).device
        input_ids = torch.tensor([self.prompt_ids(messages, system_prompt)], device=device)
        enc = {"input_ids": input_ids, "attention_mask": torch.ones_like(input_ids)}
        # The run's generation settings as TRL builds them (top-k, min-p, repetition penalty, end tokens), with the
        # chat's own temperature, top-p and length; greedy (or temperature 0) switches sampling off.
        end_ids = end_token_ids(self.model, self.tokenizer)
        do_sample = not sampling.greedy and sampling.temperature > 0
        kwargs = generation_kwargs(self.cfg, self.tokenizer, end_ids, do_sample=do_sample,
                                   max_new_tokens=sampling.max_new_tokens, temperature=sampling.temperature or None,
                                   top_p=sampling.top_p)
        # The chat's Max new tokens, even where the run's generation_kwargs set their own (as TRL lets them in training):
        # the page says this limit, and a reply is marked cut off by it.
        config = generation_config({**kwargs, "max_new_tokens": sampling.max_new_tokens})
        streamer = _DeltaStreamer(self.tokenizer, input_ids.shape[1], on_text)
        if self.kind == "full":
            model, switch = (self.model if side == "base" else self.tuned_model), contextlib.nullcontext()
        else:
            model = self.model
            switch = self.model.disable_adapter() if side == "base" else contextlib.nullcontext()
        with switch:
            state = self.adapter_state(side, model)  # read inside the context that generates
            if not state.verified:
                raise StudioError(f"the {side} side would not have been generated as asked: {state.badge()}",
                                  "the weights about to generate are not the ones this side must use", "report this; the reply was not shown")
            torch.manual_seed(sampling.seed)  # same seed on both sides: differences come from the weights alone
            with torch.inference_mode():
                out = model.generate(**enc, streamer=streamer, generation_config=config)
        ids = cut_at_end(out[0, input_ids.shape[1]:].tolist(), end_ids)
        text = self.tokenizer.decode(ids, skip_special_tokens=True)
        # A thinking template's prompt opens the thought: the reply starts inside it, without a tag (rewards.thinking).
        opened = ends_inside_thought(self.tokenizer.decode(enc["input_ids"][0].tolist()))
        thinking, answer = split_thinking(seen_completion(text, opened))
        finished = bool(ids) and ids[-1] in end_ids
        # Cut off: the reply used the whole token budget without an end token (TRL's "clipped"), so it did not finish.
        return {"side": side, "text": text, "thinking": thinking, "answer": answer, "token_ids": ids,
                "tokens": len(ids), "finished": finished, "cut_off": not finished and len(ids) >= sampling.max_new_tokens,
                "max_new_tokens": sampling.max_new_tokens, "prompt_opens_think": opened, "adapter_state": state.as_dict(),
                "plain_prompt": not self._chat_format()}  # (prompt_ids sent the latest message alone)
