"""What the page shows reads as the page's own words: no terminal codes in a log, integer steps on chart axes, no
config keys or library words in the messages the page builds (the command line keeps config words)."""

from __future__ import annotations

from rloo_studio.ui import run_view


def test_the_log_has_no_terminal_codes():
    """A log line in the page once showed `\\x1b[A` and a redrawn progress bar: cursor moves, line erases and colours
    are terminal instructions, not text."""
    raw = ("\x1b[32m[rloo-studio]\x1b[0m loading the model\n"
           "Loading weights:  50%|\x1b[34m█████     \x1b[0m| 1/2 [00:01<00:01,  1.2s/it]\x1b[A\x1b[2K\r"
           "Loading weights: 100%|██████████| 2/2 [00:02<00:00,  1.1s/it]\x1b[A\n"
           "\x1b]0;title\x07step one done\x1b[K\n")
    shown = run_view.readable_log(raw)
    assert "\x1b" not in shown and "\x07" not in shown and "[A" not in shown and "it]" not in shown, repr(shown)
    assert shown.splitlines() == ["[rloo-studio] loading the model", "Loading weights:", "step one done"], repr(shown)


# Words the page's messages never use outside a "details" fold: library internals, config keys, temporary folders.
FORBIDDEN = ("TRL", "/tmp/", "rloo-preview-", "pass@1", "sign test", "LoRA layers", "rloo.", "lora.", "model.", "data.",
             "1 epochs", "1 times")


def _clean(words: str) -> list[str]:
    """The forbidden words found in `words`, the part behind a details fold left out."""
    shown = words.split("<details>")[0]
    return [w for w in FORBIDDEN if w in shown]


def test_compare_runs_names_settings_by_their_page_labels(tmp_path):
    import yaml

    from rloo_studio.ui import compare_runs

    folders = []
    for name, rate, k in (("a", 1e-5, 4), ("b", 2e-5, 8)):
        folder = tmp_path / name
        folder.mkdir()
        (folder / "config.yaml").write_text(yaml.safe_dump({"model": {"name_or_path": "demo"}, "lora": {"r": 8 if name == "a" else 16},
                                                            "rloo": {"learning_rate": rate, "num_generations": k}}))
        folders.append(folder)
    headers, rows = compare_runs.config_differences(folders)
    settings = [row[0] for row in rows]
    assert len(settings) == 3 and not [s for s in settings if _clean(s)], settings
    assert "“Completions per prompt (k)”" in settings or any("Completions per prompt" in s for s in settings), settings


def test_the_epochs_line_is_grammatical_at_one():
    from rloo_studio.batching import epochs_words

    assert epochs_words(1.0) == "1 epoch (each prompt seen about once)"
    assert epochs_words(1.4) == "1 epoch (each prompt seen about once)"
    assert epochs_words(2.0) == "2 epochs (each prompt seen about 2 times)"
    assert epochs_words(0.5) == "0.5 epochs (50 % of the prompts seen once)"


def test_a_reward_error_in_the_preview_names_no_temporary_folder(tmp_path):
    """The preview runs the editor's code from a temporary folder: its error said `/tmp/rloo-preview-…/rewards.py:3`."""
    from rloo_studio.rewards.user import describe_call_error, load_reward_source

    folder = tmp_path / "rloo-preview-abc123"
    folder.mkdir()
    filename = str(folder / "rewards.py")
    source = "def my_reward(completions, **kwargs):\n    x = None\n    return [x[0] for _ in completions]\n"
    function = load_reward_source(source, filename)["my_reward"]
    try:
        function(["a"])
    except TypeError as exc:
        said = describe_call_error(exc, "my_reward", filename)
    assert "rewards.py:3 in my_reward" in said, said
    assert not _clean(said) and str(tmp_path) not in said, said


def test_chart_steps_are_whole_numbers_on_the_axis():
    """A 4-step run's chart read 1.0, 1.2, 1.4 … (and a single step "1.000000"): on a continuous axis the chart picks
    fractional ticks when few steps span it. Up to FEW_STEPS steps, each step is one labelled place on the axis, in
    step order (not text order: 10 after 9); past that, the steps span enough that every tick is a whole number."""
    import pandas as pd

    def frame(steps):
        return pd.DataFrame({"step": [float(s) for s in steps for _ in range(2)], "value": [0.5] * (2 * len(steps)),
                             "series": ["total (weighted)", "numeric_answer"] * len(steps)})

    few = run_view.plot_update(frame([1, 2, 3, 4]))
    assert list(few["value"]["step"].unique()) == ["1", "2", "3", "4"] and few["sort"] == ["1", "2", "3", "4"]
    one = run_view.plot_update(frame([1]))
    assert list(one["value"]["step"].unique()) == ["1"] and one["sort"] == ["1"]
    twelve = run_view.plot_update(frame(range(1, 13)))
    assert twelve["sort"] == [str(s) for s in range(1, 13)]  # "10" after "9", as steps go
    many = run_view.plot_update(frame(range(1, run_view.FEW_STEPS + 2)))
    assert many["sort"] is None and many["value"]["step"].max() - many["value"]["step"].min() >= run_view.FEW_STEPS
    # Every value the same (Evaluate: mean reward 1.000 on both sides): an axis around it, not one tick "1.000000".
    assert run_view.y_range(frame([1, 2]).assign(value=1.0)) == [0.95, 1.05]
    empty = run_view.plot_update(None)["value"]  # an empty chart, never None: a chart sent None leaves the page
    assert empty is not None and empty.empty and list(empty.columns) == ["step", "value", "series"]


def test_health_alerts_in_the_page_name_settings_by_label_only(tmp_path):
    """The length alert's advice read 'Raise “max completion length” (rloo.max_completion_length) (e.g. 128)': the page
    says the label; the config key in brackets is for the command line, which keeps it."""
    import json

    from rloo_studio import runs
    from rloo_studio.runs import alerts

    facts = alerts.RunFacts(["correct"], [1.0], max_completion_length=64)
    rows = [{"step": i + 1, "completions/clipped_ratio": c} for i, c in enumerate([0.0, 0.1, 0.0, 0.3, 0.6, 0.8, 0.9])]
    [alert] = [a for a in alerts.find_alerts(rows, facts) if a.kind == alerts.LENGTH_LIMIT]
    assert "(rloo.max_completion_length)" in alert.line()  # the command line's words
    (tmp_path / runs.ALERTS_FILE).write_text(json.dumps(alert.record("began")) + "\n")
    shown = run_view.alerts_html(tmp_path)
    assert "max completion length" in shown and "e.g. 128" in shown, shown
    assert not _clean(shown), (_clean(shown), shown)


def test_the_chat_badges_say_what_was_checked_in_plain_words():
    """The Chat badge read 'adapter OFF (checked: 0 of 210 LoRA layers active)'."""
    from rloo_studio.engine.chat_model import AdapterState

    base = AdapterState("base", None, 210, 0).badge()
    tuned = AdapterState("tuned", "final", 210, 210).badge()
    odd = AdapterState("tuned", "final", 210, 12).badge()
    assert base == "base model · adapter OFF (checked: none of its 210 adapter layers took part)"
    assert tuned == "tuned · adapter `final` ON (checked: all 210 adapter layers took part)"
    assert odd.startswith("NOT VERIFIED: 12 of 210 adapter layers took part")
    assert not [b for b in (base, tuned, odd) if _clean(b)]


def test_reward_code_errors_speak_of_training_not_the_library(tmp_path):
    """A reward's errors reach the Rewards tab: they say what training passes and needs, not what "TRL" does, and
    name the code's file without the preview's temporary folder."""
    from rloo_studio.errors import StudioError
    from rloo_studio.rewards.runtime import check_reward_values
    from rloo_studio.rewards.user import load_reward_source

    filename = str(tmp_path / "rloo-preview-abc" / "rewards.py")
    said = []
    for source in ("def r(completions, /):\n    return []\n", "def r(prompts):\n    return []\n",
                   "def r(completions):\n    return []\n"):
        try:
            load_reward_source(source, filename, extra_args=("prompt", "answer"))
        except StudioError as exc:
            said.append(exc.message())
    for values in ("1.0", [1.0]):
        try:
            check_reward_values(values, "r", 2)
        except StudioError as exc:
            said.append(exc.message())
    assert len(said) == 5, said
    assert not [(s, _clean(s)) for s in said if _clean(s)], said


def test_a_preset_note_does_not_promise_a_download_for_a_local_folder(tmp_path):
    """After a preset, choosing a local model folder left its note saying it downloads the model."""
    from rloo_studio.ui.text import preset_notes_for

    notes = ("**cpu-small-real** — a real instruct model\n\n```\nTier: CPU (no GPU needed). Downloads "
             "HuggingFaceTB/SmolLM2-135M-Instruct (270 MB) once; 20 steps.\nRun:  rloo-studio train presets/cpu-small-real.yaml\n```")
    folder = tmp_path / "smol"
    folder.mkdir()
    local = preset_notes_for(notes, str(folder))
    assert "Downloads" not in local and f"the local folder `{folder}`" in local and "20 steps" in local, local
    assert preset_notes_for(local, "HuggingFaceTB/SmolLM2-135M-Instruct") == notes  # back to the hub id: back to the note
    assert preset_notes_for(notes, "HuggingFaceTB/SmolLM2-135M-Instruct") == notes
    gpu = "```\nRun:  rloo-studio train presets/gpu-8gb.yaml      (downloads the model and GSM8K once; then works offline)\n```"
    shown = preset_notes_for(gpu, str(folder))
    assert "downloads the model" not in shown and "GSM8K once" in shown and f"`{folder}`" in shown, shown
    assert preset_notes_for(shown, "Qwen/Qwen3-1.7B") == gpu
