"""The Model & hardware tab: the detected device, the preset picker, the model and how to load and train it.

Turns its widgets into the `model` and `lora` sections of the RunConfig (`apply`) and back
(`values_from`). `wire` connects the page load (the form's draft, restored exactly: form.initial_form), the preset
picker, the live memory estimate and Shrink to fit to the whole form, because a preset and the estimate concern every
settings tab. What Shrink to fit changed stays said under the estimate, with *Undo*, for as long as the settings hold
it: some of it (gradient accumulation) has no field of its own.
"""

from __future__ import annotations

import json
from typing import TYPE_CHECKING

import gradio as gr

from .. import runs
from ..workers import jobs
from ..batching import prompts_needed
from ..config import FAST_GENERATION, FOUR_BIT_NEEDS_LORA, LoraConfig, RunConfig, apply_overrides
from ..errors import StudioError
from ..presets import Preset, get_preset
from ..machine.vram import Estimate, shrink_to_fit
from . import text
from .data_tab import NO_ANSWER, builtins_follow
from .judge_panel import rubric_template_for
from .rewards_tab import receives_markdown, unshown_note
from .text import page_words, preset_notes_for
from .workspace import DRAFT_CONFIG

if TYPE_CHECKING:
    from .form import PageForm

POPULAR_MODELS = (
    "demo", "Qwen/Qwen3-0.6B", "Qwen/Qwen3-1.7B", "Qwen/Qwen3-4B", "Qwen/Qwen2.5-0.5B-Instruct",
    "Qwen/Qwen2.5-1.5B-Instruct", "unsloth/Llama-3.2-1B-Instruct", "unsloth/Llama-3.2-3B-Instruct", "google/gemma-3-1b-it",
)


def preset_label(preset: Preset) -> str:
    return f"{preset.name} — {preset.title}"


class ModelTab:
    def __init__(self, presets: list[Preset], default_preset: str):
        self.presets = presets
        gr.Markdown("### Your hardware")
        self.device = gr.Markdown(text.DEVICE_DETECTING, elem_id="device-info")
        with gr.Row():
            self.preset = gr.Dropdown([(preset_label(p), p.name) for p in presets], value=default_preset, label=text.PRESET,
                                      info=text.PRESET_INFO, elem_id="preset", scale=3)
            self.apply_preset = gr.Button("Use this preset", elem_id="apply-preset", scale=1)
        self.preset_notes = gr.Markdown(elem_id="preset-notes")
        gr.Markdown("### The model")
        self.name = gr.Dropdown(list(POPULAR_MODELS), value="demo", allow_custom_value=True, label=text.MODEL,
                                info=text.MODEL_INFO, elem_id="model-name")
        with gr.Row():
            self.precision = gr.Radio(list(text.PRECISION_CHOICES), value=text.PRECISION_CHOICES[2], label=text.PRECISION,
                                      info=text.PRECISION_INFO, elem_id="precision")
            self.method = gr.Radio(list(text.METHOD_CHOICES), value=text.METHOD_CHOICES[1], label=text.METHOD,
                                   info=text.METHOD_INFO, elem_id="method")
        with gr.Row(visible=False) as self.lora_row:
            self.lora_r = gr.Number(16, label=text.LORA_R, info=text.LORA_R_INFO, precision=0, minimum=1)
            self.lora_alpha = gr.Number(32, label=text.LORA_ALPHA, info=text.LORA_ALPHA_INFO, precision=0, minimum=1)
            self.lora_dropout = gr.Number(0.0, label=text.LORA_DROPOUT, info=text.LORA_DROPOUT_INFO, minimum=0, maximum=1)
            self.lora_targets = gr.Textbox("all-linear", label=text.LORA_TARGETS, info=text.LORA_TARGETS_INFO)
        with gr.Row():
            self.estimate = gr.Markdown(text.ESTIMATE_PENDING, elem_id="memory-estimate")
            self.shrink = gr.Button(text.SHRINK, elem_id="shrink-to-fit", scale=0, min_width=160)
        with gr.Row(visible=False, equal_height=True) as self.shrunk_row:  # what Shrink to fit changed, while it holds
            self.shrunk = gr.Markdown(elem_id="shrink-changed")
            self.undo_shrink = gr.Button(text.SHRINK_UNDO, elem_id="shrink-undo", scale=0, min_width=160)
        self.loaded_preset = gr.State(None)  # the preset menu's choice the page loads with (set after the form: see wire)
        with gr.Accordion("Advanced", open=False):
            with gr.Row():
                self.max_seq = gr.Number(1024, label=text.MAX_SEQ, info=text.MAX_SEQ_INFO, precision=0, minimum=16)
                self.backend = gr.Dropdown(["auto", "unsloth", "transformers"], value="auto", label=text.BACKEND, info=text.BACKEND_INFO)
                self.grad_ckpt = gr.Checkbox(True, label=text.GRAD_CKPT, info=text.GRAD_CKPT_INFO)
                self.fast_generation = gr.Dropdown(list(FAST_GENERATION), value="auto", label=text.FAST_GENERATION,
                                                   info=text.FAST_GENERATION_INFO, elem_id="fast-generation")

    # ---- wiring ----------------------------------------------------------------------------------

    def wire(self, demo: gr.Blocks, form: "PageForm") -> None:
        estimate_inputs = [form.base] + form.inputs

        def update_estimate(state, *values):
            cfg, problems = form.config_from(state, list(values))
            if cfg is None:
                return form.problems_markdown(problems)
            est, name = form.estimate_for(cfg)
            return estimate_markdown(est, name)

        def shrink(state, *values):
            *values, train_rows = values
            cfg, problems = form.config_from(state, list(values))
            device_gib, bf16, name, on_cpu = form.device_of()
            if cfg is None:
                return [state, form.problems_markdown(problems)] + list(values)
            if device_gib is None:
                return [state, "Neither a GPU nor this computer's memory could be read, so there is nothing to shrink to: the "
                               "estimate shows what a GPU would need."] + list(values)
            changes, est = shrink_to_fit(cfg, device_gib, bf16, on_cpu)
            if not changes:
                return [state, nothing_to_shrink(est, name)] + list(values)
            new = RunConfig.from_dict(apply_overrides(cfg.to_dict(), [f"{k}={json.dumps(v)}" for k, v in changes.items()]),
                                      base_dir=cfg.base_dir)
            listed = "; ".join(f"{text.setting_words(k)} to {text.value_words(k, v)}" for k, v in changes.items())
            verdict = "now fits in memory" if est and est.verdict == "fits" else "still does not fit — choose a smaller model"
            message = f"**Changed:** {listed} → {verdict}.{unfilled_line(new, train_rows)}\n\n" + estimate_markdown(est, name)
            new_state = form.state_of(new)
            # What each setting was, for Undo and for the line that says what changed (kept in the state: it outlives a
            # reload).
            new_state["shrunk"] = {"changes": {k: [setting(cfg, k), v] for k, v in changes.items()}}
            return [new_state, message] + with_settings(form, values, form.values_from(new))

        def undo(state, *values):
            """Put back the settings Shrink to fit changed, each as it was; every other setting as the person has it now
            (an edit made after Shrink to fit is theirs: the whole tab put back undid it)."""
            changed = (state or {}).get("shrunk", {}).get("changes")
            if not changed:
                return [state, gr.skip()] + list(values)
            cfg, problems = form.config_from(state, list(values))
            if cfg is None:
                return [state, form.problems_markdown(problems)] + list(values)
            # A setting edited since is the person's own: it stays, and the message says so.
            back = {k: was for k, (was, set_to) in changed.items() if setting(cfg, k) == set_to}
            kept = [k for k in changed if k not in back]
            old = RunConfig.from_dict(apply_overrides(cfg.to_dict(), [f"{k}={json.dumps(was)}" for k, was in back.items()]),
                                      base_dir=cfg.base_dir)
            new_state = {k: v for k, v in form.state_of(old).items() if k != "shrunk"}
            said = "Shrink to fit undone: the settings it changed are as before." + (
                " Kept as you set them since: " + "; ".join(f"{text.setting_words(k)} {text.value_words(k, setting(cfg, k))}"
                                                            for k in kept) + "." if kept else "")
            return [new_state, said] + with_settings(form, values, form.values_from(old))

        train, judge = form.train_tab.fields, form.rewards_tab.judge
        # What the estimate depends on outside this tab: the batch, the lengths, the reference model, a local judge's copy.
        # Through the form's one change event (derived.py): its last run reads the form as it ends up.
        estimate_triggers = self.inputs + [train[k] for k in ("num_generations", "per_device_train_batch_size", "max_completion_length", "beta")] \
            + [judge.use, judge.rubric, judge.source, judge.folder]
        form.derived.on(estimate_triggers, update_estimate, inputs=estimate_inputs, outputs=self.estimate)
        form.derived.on([self.method], lambda m: gr.update(visible=m == text.METHOD_CHOICES[0]), inputs=[self.method],
                        outputs=self.lora_row)
        self.shrink.click(shrink, inputs=estimate_inputs + [form.data_rows], outputs=[form.base, self.estimate] + form.inputs, api_name="shrink_to_fit")
        self.undo_shrink.click(undo, inputs=estimate_inputs, outputs=[form.base, self.estimate] + form.inputs,
                               api_name="undo_shrink_to_fit").then(update_estimate, inputs=estimate_inputs, outputs=self.estimate,
                                                                   api_visibility="private")
        form.derived.on([form.base], shrunk_markdown, inputs=[form.base], outputs=[self.shrunk_row, self.shrunk])
        # The form's draft, on every change of any field (the code editor keeps its own): what a reload shows.
        code = form.inputs[form.code_index]
        draft_triggers = [self.preset, form.base, form.columns, form.data_rows] + [c for c in form.inputs if c is not code]
        form.derived.on(draft_triggers, form.save_draft, inputs=[self.preset, form.base, form.columns, form.data_rows] + form.inputs,
                        outputs=[])

        # The page load: hardware, the form, the run to watch (a reload re-attaches to whatever trains).
        def on_load():
            loaded = form.initial_form()
            hw_now = form.hw.get()
            device = hw_now.summary().replace("\n", "  \n")
            if not hw_now.has_gpu:
                device += "  \nWithout a GPU, the **cpu-demo** preset (the bundled model and data, offline) is the one that finishes in minutes."
            active = jobs.active_run(form.runs_dir)
            latest = active or next((r.path for r in runs.list_runs(form.runs_dir)), None)
            # The preset menu shows the preset the form was loaded from or last set to, never one the form is not.
            from_menu = f" The preset menu shows the one you last chose: **{loaded.preset}**." if loaded.preset and \
                loaded.origin == "your last settings" else ""
            notes = f"The form shows {loaded.origin}.{from_menu}\n\n{method_note(loaded.config)}"
            unshown = unshown_note(loaded.state)
            if unshown:
                notes += "\n\n" + unshown
            return ([device, loaded.state, str(latest) if latest else None, notes] + loaded.values
                    + [loaded.columns, loaded.data_rows, loaded.preset])

        def after_load(preset, columns, prompt_column, answer_column, rubric, rubric_template):
            """What the load's own event cannot send without changing its endpoint's answer: the preset menu, the column
            menus' choices and the reward panel's columns from the last data preview, the judge's rubric-template menu."""
            menu = rubric_template_for(rubric, rubric_template)
            if not columns:
                return preset, gr.skip(), gr.skip(), gr.skip(), menu
            return (preset, gr.update(choices=columns, value=prompt_column), gr.update(choices=columns + [NO_ANSWER], value=answer_column),
                    receives_markdown(columns, prompt_column), menu)

        data, judge = form.data_tab, form.rewards_tab.judge
        demo.load(on_load, outputs=[self.device, form.base, form.watched, self.preset_notes] + form.inputs
                  + [form.columns, form.data_rows, self.loaded_preset], api_name="load_form").then(
            after_load, inputs=[self.loaded_preset, form.columns, data.prompt_column, data.answer_column, judge.rubric, judge.rubric_template],
            outputs=[self.preset, data.prompt_column, data.answer_column, form.rewards_tab.receives, judge.rubric_template],
            api_visibility="private").then(
            # A draft saved before the builtins followed the Data tab's answer column may show another: one column again.
            builtins_follow, inputs=[data.answer_column, form.rewards_tab.builtins], outputs=form.rewards_tab.builtins,
            api_visibility="private").then(
            update_estimate, inputs=estimate_inputs, outputs=self.estimate, api_visibility="private")
        self.estimate_api = gr.Button(visible=False)
        self.estimate_api.click(update_estimate, inputs=estimate_inputs, outputs=self.estimate, api_name="estimate")

        def apply_preset(name: str, state: dict, *values):
            """A preset sets the model, memory and training settings; the data and rewards stay the person's."""
            if not name:
                raise gr.Error("Choose a preset in the menu first.")
            try:
                preset = get_preset(name)
                cfg = preset.load()
            except StudioError as exc:
                raise gr.Error(exc.message()) from None
            cfg.output.run_name = None  # derived from the person's data and model at Start, never the preset's name
            new_state = form.state_of(cfg)
            for key in ("data", "rewards"):  # the preset's hidden keys for these must not come back either
                if key in (state.get("config") or {}):
                    new_state["config"][key] = state["config"][key]
            new_values = with_settings(form, values, form.values_from(cfg))  # the data and rewards tabs as the person left them
            merged, _problems = form.config_from(new_state, new_values)
            if merged is not None:
                form.workspace.write(DRAFT_CONFIG, merged.to_yaml())
            theirs = f"`{cfg.data.source}` and its rewards" if cfg.data.source else "its data and rewards"
            kept_note = (f"\n\nYour data and rewards are kept (this preset was tested with {theirs}: choose them in the Data and "
                         "Rewards tabs if you want them).")
            notes = (f"**{preset.name}** — {preset.title}\n\n{method_note(cfg)}" + (f"\n\n```\n{preset.notes}\n```" if preset.notes else "")
                     + kept_note)
            return [new_state, notes] + new_values

        self.apply_preset.click(apply_preset, inputs=[self.preset, form.base] + form.inputs, outputs=[form.base, self.preset_notes] + form.inputs,
                                api_name="apply_preset").then(update_estimate, inputs=estimate_inputs, outputs=self.estimate,
                                                              api_visibility="private")

        # A local folder chosen after a preset is not downloaded: the preset's note then names the folder. Through the
        # form's one change event (derived.py): the model field has no second change handler of its own.
        # Its "What to train" line follows the form's choice: a person who picks LoRA after the demo's preset read
        # "What to train: Full fine-tuning" above a form that said LoRA.
        def notes_now(notes, model, method, r):
            notes = preset_notes_for(notes, model)
            return notes if not isinstance(notes, str) else with_method(notes, method == text.METHOD_CHOICES[0], r)

        watched = [self.name, self.method, self.lora_r]
        form.derived.on(watched, notes_now, inputs=[self.preset_notes] + watched, outputs=self.preset_notes)

    # ---- the form ----------------------------------------------------------------------------------

    @property
    def inputs(self) -> list:
        return [self.name, self.precision, self.method, self.lora_r, self.lora_alpha, self.lora_dropout, self.lora_targets,
                self.max_seq, self.backend, self.grad_ckpt, self.fast_generation]

    @staticmethod
    def apply(cfg: dict, values: list) -> list[str]:
        """Write the widget values into the config dict's `model` and `lora` sections; returns problems: an emptied
        number field (the combinations the config refuses, such as 4-bit without LoRA, are the config check's)."""
        name, precision, method, r, alpha, dropout, targets, max_seq, backend, grad_ckpt, fast = values
        # An emptied number is said, not replaced by a default the page does not show (as the Train tab does).
        numbers = [(text.MAX_SEQ, max_seq)] + ([(text.LORA_R, r), (text.LORA_ALPHA, alpha), (text.LORA_DROPOUT, dropout)]
                                               if method == text.METHOD_CHOICES[0] else [])
        empty = [f"Model: “{label}” is empty" for label, value in numbers if value is None or value == ""]
        model = cfg.setdefault("model", {})
        model["name_or_path"] = (name or "").strip() or "demo"
        model["load_in_4bit"] = precision == text.PRECISION_CHOICES[0]
        model["dtype"] = "float32" if precision == text.PRECISION_CHOICES[2] else ("auto" if model["load_in_4bit"] else model.get("dtype") if model.get("dtype") in ("bfloat16", "float16") else "auto")
        model["max_seq_length"] = int(max_seq or 1024)
        model["backend"] = backend or "auto"
        model["gradient_checkpointing"] = bool(grad_ckpt)
        model["fast_generation"] = fast or "auto"
        if method == text.METHOD_CHOICES[0]:
            target = (targets or "all-linear").strip()
            cfg["lora"] = {"r": int(r or 16), "alpha": int(alpha or 32), "dropout": float(dropout or 0.0),
                           "target_modules": target if target == "all-linear" else [t.strip() for t in target.split(",") if t.strip()]}
        else:
            cfg.pop("lora", None)  # no section = full fine-tuning (`lora: null` would mean LoRA with defaults)
        return empty

    @staticmethod
    def values_from(cfg: RunConfig) -> list:
        m, lora = cfg.model, cfg.lora
        if m.load_in_4bit:
            precision = text.PRECISION_CHOICES[0]
        elif m.dtype == "float32":
            precision = text.PRECISION_CHOICES[2]
        else:
            precision = text.PRECISION_CHOICES[1]
        shown = lora or LoraConfig()
        targets = shown.target_modules if isinstance(shown.target_modules, str) else ", ".join(shown.target_modules)
        return [m.name_or_path, precision, text.METHOD_CHOICES[0] if lora else text.METHOD_CHOICES[1], shown.r, shown.alpha,
                shown.dropout, targets, m.max_seq_length, m.backend, m.gradient_checkpointing, m.fast_generation]


def setting(cfg: RunConfig, key: str):
    """The value of a `section.key` setting as training uses it (an rloo key the config leaves out: its effective value)."""
    section, _, name = key.partition(".")
    if section == "rloo":
        return cfg.rloo_value(name)
    holder = getattr(cfg, section, None)
    return getattr(holder, name, None) if holder is not None else None


def with_settings(form: "PageForm", values: list, new_values: list) -> list:
    """`new_values` for the Model and Train tabs, `values` (as the person left them) for Data and Rewards: a change of the
    model, memory or training settings must not reset the rest of the form to what a config holds."""
    sizes = form.sizes
    data_at, train_at = sizes[0], sum(sizes[:3])
    return list(new_values[:data_at]) + list(values[data_at:train_at]) + list(new_values[train_at:])


def shrunk_markdown(state: dict | None) -> tuple:
    """(row visibility, line) saying what Shrink to fit changed, from → to, while the settings hold it; hidden otherwise."""
    shrunk = (state or {}).get("shrunk")
    if not shrunk:
        return gr.update(visible=False), ""
    changed = [f"{text.setting_words(key)} {text.value_words(key, old)} → {text.value_words(key, new)}"
               for key, (old, new) in shrunk["changes"].items()]
    return gr.update(visible=True), "**Shrink to fit changed:** " + "; ".join(changed) + ". *Undo* puts them back."


def estimate_markdown(est: Estimate | None, device: str | None) -> str:
    """The estimate as the tab shows it: verdict first, then the breakdown and what dominates."""
    if est is None:
        return text.ESTIMATE_UNKNOWN
    icon = {"fits": "⚠️" if est.beyond_free else "✅", "tight": "⚠️", "exceeds": "⛔"}.get(est.verdict or "", "ℹ️")
    if est.verdict and est.on_cpu:
        # No GPU: the run trains on the CPU, in RAM; other programs need some of it too.
        words = {"fits": "fits in", "tight": "tight in", "exceeds": "more than"}.get(est.verdict, est.verdict)
        head = (f"{icon} **Estimated peak memory: {est.total_gib:.1f} GiB — {words}** {device} (no GPU here: "
                "training runs on the CPU, in RAM)")
        if est.beyond_free:
            line = est.free_line()
            head += f"\n\n⚠️ **But {line.split(':', 1)[0]}**:{line.split(':', 1)[1]}."
    elif est.verdict:
        head = f"{icon} **Estimated peak GPU memory: {est.total_gib:.1f} GiB — {est.verdict}** on {device}"
        head += f"\n\n{text.ESTIMATE_GPU_CHECKED}"
    else:
        head = f"{icon} **Estimated peak GPU memory: {est.total_gib:.1f} GiB** (no GPU here: this is what a GPU would need)"
    # Settings that cannot train are said under the head on any machine, where they are chosen, not first at Start.
    head += "".join(f"\n\n⛔ {page_words(n)}" for n in est.notes if n == FOUR_BIT_NEEDS_LORA)
    if not est.verdict:  # no GPU here: the breakdown of a GPU's memory is no one's concern on this machine
        return head
    # Each part under the page's label, the estimator's name in brackets; its own table and lines behind "details".
    rows = "\n".join(f"| {text.memory_part(name)} | {gib:.2f} |" for name, gib in est.parts.items())
    others = [n for n in est.notes if n != FOUR_BIT_NEEDS_LORA]
    notes = "\n".join(f"- {text.memory_note(n)}" for n in others)
    advice = ("\n\n" + text.SHRINK_ADVICE_RAM if est.on_cpu and est.verdict in ("exceeds", "tight")
              else "\n\n" + text.SHRINK_ADVICE if est.verdict == "exceeds" else "")
    technical = "\n".join(f"- {n}" for n in others)
    details = (f"\n\n<details><summary>details</summary>\n\nThe estimate as `rloo-studio estimate` prints it:\n\n```\n"
               f"{est.table()}\n```\n\n{technical}\n\n</details>")
    return f"{head}{advice}\n\n| part | GiB |\n|---|---|\n{rows}\n\n{notes}{details}"


def unfilled_line(cfg: RunConfig, train_rows) -> str:
    """After Shrink to fit: when the data the Data tab counted cannot fill one generation batch of `cfg` (the Train tab's
    ⛔ line says it too, with a batch that does), that memory fitting is not a run that trains; "" otherwise."""
    if not isinstance(train_rows, int) or train_rows <= 0:
        return ""
    needed = prompts_needed(cfg.batch_plan())
    if train_rows >= needed:
        return ""
    return (f"\n\n⛔ **But no step can be made:** one generation batch needs {needed} prompts and the data has {train_rows} "
            "training rows, so training would finish at step 0. Lower the batch: the Train tab says to what.")


def nothing_to_shrink(est: Estimate | None, device: str | None) -> str:
    """Shrink to fit's answer when it changes nothing: the settings already fit, with the numbers (or nothing is left to
    shrink), then the estimate."""
    if est is None or est.device_gib is None:
        return estimate_markdown(est, device)
    where = "in this computer's memory (training runs on the CPU, in RAM)" if est.on_cpu else f"on {device}"
    if est.verdict == "fits":
        head = (f"✅ **Nothing to shrink: these settings already fit — about {est.total_gib:.1f} GiB of "
                f"{est.device_gib:.1f} GiB {where}.**")
    else:
        head = (f"⛔ **Nothing left to shrink: about {est.total_gib:.1f} GiB of {est.device_gib:.1f} GiB {where}, even with the "
                "smallest settings Shrink to fit tries.** Choose a smaller model.")
    return f"{head}\n\n{estimate_markdown(est, device)}"


def method_note(cfg: RunConfig) -> str:
    """Why the settings train what they train: a preset's choice between LoRA and the whole model, said in words."""
    return _method_words(cfg.lora is not None, cfg.lora.r if cfg.lora is not None else None)


def _method_words(lora: bool, r) -> str:
    if not lora:
        return (f"**{text.METHOD}: {text.METHOD_CHOICES[1]}** — every weight is trained. Right for a tiny model such as the "
                "bundled demo, where it learns more than an adapter in the same time; for real models choose "
                f"“{text.METHOD_CHOICES[0]}”: training every weight needs several times the memory.")
    rank = f" (LoRA rank {r:g})" if isinstance(r, (int, float)) else ""
    return (f"**{text.METHOD}: {text.METHOD_CHOICES[0]}** — small added matrices are trained, the adapter's size{rank}; "
            "the model's own weights stay as they are: far less memory than training every weight.")


def with_method(notes: str, lora: bool, r) -> str:
    """The notes with their "What to train" paragraph (`method_note`'s) saying the form's choice now; notes without one
    are left as they are."""
    start = notes.find(f"**{text.METHOD}: ")
    if start < 0:
        return notes
    end = notes.find("\n\n", start)
    return notes[:start] + _method_words(lora, r) + (notes[end:] if end >= 0 else "")
