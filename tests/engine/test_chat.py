"""The side-by-side chat's inference worker: fair base vs tuned, streaming, checkpoints, restarts.

The run here has adapters with random non-zero weights (a trained tiny adapter may not change
greedy output), so "adapter on" and "adapter off" must differ; the base side is compared with a
fresh load of the base model in another process, token for token.
"""

from __future__ import annotations

import json
import os
import shutil
import signal
import sys

import pytest
from helpers import ROOT, run_code
from helpers.app import warm_children

from rloo_studio.errors import StudioError
from rloo_studio.protocol import Done, Reply, TextDelta
from rloo_studio.workers.inference import InferenceWorker

pytestmark = pytest.mark.slow

GREEDY = {"temperature": 0.0, "top_p": 1.0, "max_new_tokens": 16, "seed": 0}
SAMPLED = {"temperature": 1.0, "top_p": 0.9, "max_new_tokens": 16, "seed": 7}
MESSAGES = [{"role": "user", "content": "What is 12 + 7?"}]


@pytest.fixture(scope="module", autouse=True)
def _workers_from_the_warm_starter():
    """The workers here are forked from the tests' warm starter (helpers/app.py, `warm_children`): the same worker
    module with its imports done before the fork. tests/ui/test_app_chat.py covers the product's own process start."""
    with warm_children():
        yield


@pytest.fixture(scope="module")
def chat_run(tmp_path_factory, adapter_run):
    """A run directory with a final adapter and one checkpoint, each with different random weights."""
    return adapter_run(tmp_path_factory.mktemp("runs") / "20260101-000000-chat")


@pytest.fixture(scope="module")
def worker(tmp_path_factory):
    """One worker for the module, as in the app: it keeps its model between requests."""
    w = InferenceWorker(log_path=tmp_path_factory.mktemp("worker") / "inference.log")
    yield w
    w.shutdown()


@pytest.fixture
def own_worker(tmp_path):
    w = InferenceWorker(log_path=tmp_path / "inference.log")
    yield w
    w.shutdown()


def _chat(worker, run_dir, checkpoint="final", sampling=GREEDY, messages=MESSAGES, system_prompt="Answer briefly."):
    events = list(worker.chat(run_dir, checkpoint, messages, sampling, system_prompt=system_prompt))
    replies = {e.side: e for e in events if isinstance(e, Reply)}
    streamed = {side: "".join(e.delta for e in events if isinstance(e, TextDelta) and e.side == side) for side in replies}
    return replies, streamed, events


# Fresh generations already computed in this module, by their inputs: several tests compare against the same
# one (the base model, greedy), and each costs a process that imports transformers.
_FRESH: dict[str, list[int]] = {}


def _fresh_generation(model_dir, adapter_dir, sampling, system_prompt="Answer briefly.") -> list[int]:
    """What a fresh process generates for MESSAGES: plain transformers (+ PEFT when adapter_dir)."""
    key = json.dumps([str(model_dir), str(adapter_dir), sampling, system_prompt], sort_keys=True)
    if key not in _FRESH:
        _FRESH[key] = _generate_in_a_fresh_process(model_dir, adapter_dir, sampling, system_prompt)
    return list(_FRESH[key])


def _generate_in_a_fresh_process(model_dir, adapter_dir, sampling, system_prompt) -> list[int]:
    code = f"""
import json, torch
from transformers import AutoModelForCausalLM, AutoTokenizer
tok = AutoTokenizer.from_pretrained({str(model_dir)!r})
model = AutoModelForCausalLM.from_pretrained({str(model_dir)!r})
if {str(adapter_dir) if adapter_dir else None!r}:
    from peft import PeftModel
    model = PeftModel.from_pretrained(model, {str(adapter_dir)!r})
model.eval()
messages = [{{"role": "system", "content": {system_prompt!r}}}] + {MESSAGES!r}
text = tok.apply_chat_template(messages, tokenize=False, add_generation_prompt=True)
enc = tok(text, return_tensors="pt", add_special_tokens=False)
s = {sampling!r}
# TRL's sampling settings for a config that sets none (top_k 0, repetition_penalty 1.0), written out.
kw = dict(do_sample=True, temperature=s["temperature"], top_p=s["top_p"], top_k=0, repetition_penalty=1.0) if s["temperature"] > 0 else dict(do_sample=False)
torch.manual_seed(s["seed"])
out = model.generate(**enc, max_new_tokens=s["max_new_tokens"], pad_token_id=tok.pad_token_id, eos_token_id=tok.eos_token_id, **kw)
ids = out[0, enc["input_ids"].shape[1]:].tolist()
cut = next((i + 1 for i, t in enumerate(ids) if t == tok.eos_token_id), len(ids))
print(json.dumps(ids[:cut]))
"""
    result = run_code(code, stack="plain", timeout=300)
    assert result.returncode == 0, result.stderr[-2000:]
    return json.loads(result.stdout.strip().splitlines()[-1])


def test_base_and_tuned_come_from_different_adapter_states_and_base_equals_a_fresh_base(chat_run, worker, tiny_model_dir):
    replies, streamed, events = _chat(worker, chat_run)
    base, tuned = replies["base"], replies["tuned"]
    # The badge data is read from the LoRA layers while generating.
    assert base.adapter_state["verified"] and tuned.adapter_state["verified"]
    assert base.adapter_state["active_layers"] == 0
    assert tuned.adapter_state["active_layers"] == tuned.adapter_state["lora_layers"] == 14  # 7 projections x 2 layers
    assert "adapter OFF" in base.adapter_state["badge"] and "ON" in tuned.adapter_state["badge"]
    assert base.token_ids != tuned.token_ids
    # Fairness: base is exactly a fresh load of the base model; tuned is exactly base + the run's adapter.
    assert base.token_ids == _fresh_generation(tiny_model_dir, None, GREEDY)
    assert tuned.token_ids == _fresh_generation(tiny_model_dir, chat_run / "adapter", GREEDY)
    # Streaming: the deltas add up to the reply, in more than one piece.
    for side in ("base", "tuned"):
        assert streamed[side] == replies[side].text
        assert sum(1 for e in events if isinstance(e, TextDelta) and e.side == side) > 1
    assert isinstance(events[-1], Done)


def test_same_seed_and_sampling_settings_on_both_sides(chat_run, worker, tiny_model_dir):
    first, _, _ = _chat(worker, chat_run, sampling=SAMPLED)
    again, _, _ = _chat(worker, chat_run, sampling=SAMPLED)
    assert first["base"].token_ids == again["base"].token_ids
    assert first["tuned"].token_ids == again["tuned"].token_ids
    assert first["base"].token_ids == _fresh_generation(tiny_model_dir, None, SAMPLED)


def test_greedy_decoding_ignores_temperature_and_seed(chat_run, worker, tiny_model_dir):
    """The chat's "greedy" option: at temperature 1 and any seed, the most likely tokens, as temperature 0 gives them."""
    greedy_hot = {**SAMPLED, "greedy": True}
    first, _, _ = _chat(worker, chat_run, sampling=greedy_hot)
    other_seed, _, _ = _chat(worker, chat_run, sampling={**greedy_hot, "seed": 8})
    sampled, _, _ = _chat(worker, chat_run, sampling=SAMPLED)
    for side in ("base", "tuned"):
        assert first[side].token_ids == other_seed[side].token_ids
    assert first["base"].token_ids == _fresh_generation(tiny_model_dir, None, GREEDY)
    assert first["base"].token_ids != sampled["base"].token_ids  # the premise: sampling at temperature 1 differs here


def test_checkpoints_share_one_base_model(chat_run, worker, tiny_model_dir):
    final, _, _ = _chat(worker, chat_run, "final")
    ckpt, _, _ = _chat(worker, chat_run, "checkpoint-1")
    assert ckpt["tuned"].adapter_state["adapter"].endswith("checkpoint-1")
    assert ckpt["base"].token_ids == final["base"].token_ids
    assert ckpt["tuned"].token_ids == _fresh_generation(tiny_model_dir, chat_run / "checkpoints" / "checkpoint-1", GREEDY)
    assert ckpt["tuned"].token_ids != final["tuned"].token_ids
    status = worker.status()
    loads_before = status["base_loads"]
    _chat(worker, chat_run, "final")
    status = worker.status()
    assert status["base_loads"] == loads_before and len(status["adapters"]) == 2  # switching loads no second base model


SWITCH = """
import json, shutil, sys
from pathlib import Path
import peft, torch
from transformers import AutoModelForCausalLM
from rloo_studio.engine.adapters import AdapterSwitch

model_dir, run, tmp = sys.argv[1], Path(sys.argv[2]), Path(sys.argv[3])
final, ckpt = run / "adapter", run / "checkpoints" / "checkpoint-1"
ids = torch.tensor([[5, 6, 7, 8, 9]])
def out(model):
    with torch.no_grad():
        return model(input_ids=ids).logits[0, -1]
fresh = {name: out(peft.PeftModel.from_pretrained(AutoModelForCausalLM.from_pretrained(model_dir), str(folder)).eval())
         for name, folder in (("final", final), ("checkpoint-1", ckpt))}
same = lambda logits, name: bool(torch.allclose(logits, fresh[name], atol=1e-5))  # noqa: E731
result = {}
# As the chat holds them: every adapter kept, switched by name; rewritten weights loaded again when their version changes.
held = AdapterSwitch(peft, AutoModelForCausalLM.from_pretrained(model_dir))
result["held"] = [same(out(held.use(final, "run.1/final", "v1")), "final"), same(out(held.use(ckpt, "run.1/checkpoint-1", "v1")), "checkpoint-1"),
                  same(out(held.use(final, "run.1/final", "v1")), "final")]
moving = tmp / "moving"
shutil.copytree(final, moving)
first = same(out(held.use(moving, "moving", "v1")), "final")
shutil.rmtree(moving)
shutil.copytree(ckpt, moving)
result["rewritten"] = [first, same(out(held.use(moving, "moving", "v1")), "final"), same(out(held.use(moving, "moving", "v2")), "checkpoint-1")]
result["held_names"] = sorted(held.model.peft_config)
# As the evaluation visits them: one adapter in memory at a time.
visiting = AdapterSwitch(peft, AutoModelForCausalLM.from_pretrained(model_dir), keep=False)
result["visiting"] = [same(out(visiting.use(final, "final")), "final"), same(out(visiting.use(ckpt, "checkpoint-1")), "checkpoint-1")]
result["visiting_names"] = sorted(visiting.model.peft_config)
print(json.dumps(result))
"""


def test_one_adapter_switch_for_the_chat_and_the_evaluation(chat_run, tiny_model_dir, tmp_path):
    """engine.adapters, as both callers use it: each adapter generates as a fresh PeftModel of its folder would; the chat's
    keeps every adapter (reloading rewritten weights only when their version changed), the evaluation's one at a time."""
    done = run_code(SWITCH, tiny_model_dir, chat_run, tmp_path, stack="plain", timeout=300, cwd=ROOT)
    assert done.returncode == 0, done.stderr[-2000:]
    result = json.loads(done.stdout.strip().splitlines()[-1])
    assert result["held"] == [True, True, True]
    assert result["held_names"] == ["moving", "run_1/checkpoint-1", "run_1/final"]  # dots replaced; dashes and the slash kept
    assert result["rewritten"] == [True, True, True]  # v1 again: still the first weights; v2: the rewritten ones
    assert result["visiting"] == [True, True] and result["visiting_names"] == ["checkpoint-1"]


def test_unknown_checkpoint_and_bad_settings_are_explained(chat_run, worker):
    with pytest.raises(StudioError, match="has no adapter for 'checkpoint-99'") as info:
        _chat(worker, chat_run, "checkpoint-99")
    assert "final, checkpoint-1" in str(info.value)
    with pytest.raises(StudioError, match="top-p 0 must be above 0"):
        _chat(worker, chat_run, sampling={**GREEDY, "top_p": 0})
    replies, _, _ = _chat(worker, chat_run)  # the worker is still usable
    assert set(replies) == {"base", "tuned"}


def test_a_killed_worker_restarts_and_reloads(chat_run, own_worker):
    before, _, _ = _chat(own_worker, chat_run)
    os.kill(own_worker.pid, signal.SIGKILL)
    after, _, _ = _chat(own_worker, chat_run)
    assert after["tuned"].token_ids == before["tuned"].token_ids
    assert own_worker.restarts == 1


def test_out_of_memory_while_generating_is_explained_and_the_worker_restarts(chat_run, tmp_path):
    # A worker whose first generation raises CUDA's out-of-memory error (as torch raises it).
    code = ("import torch, rloo_studio.engine.chat_model as inf\n"
            "real = inf.ChatModel.reply\n"
            "def reply(self, *a, **k):\n"
            "    raise torch.OutOfMemoryError('CUDA out of memory. Tried to allocate 2.00 GiB')\n"
            "inf.ChatModel.reply = reply\n"
            "from rloo_studio.engine.inference_worker import main\n"
            "raise SystemExit(main())\n")
    flaky = InferenceWorker(log_path=tmp_path / "inference.log", command=[sys.executable, "-c", code])
    try:
        with pytest.raises(StudioError) as info:
            _chat(flaky, chat_run)
        message = str(info.value)
        assert "out of memory while generating" in message and "lower the max tokens" in message
        assert not flaky.alive  # it exited to give its memory back
        flaky.command = InferenceWorker().command  # the next start is a healthy worker
        replies, _, _ = _chat(flaky, chat_run)
        assert replies["tuned"].adapter_state["verified"] and flaky.restarts == 1
    finally:
        flaky.shutdown()


def test_a_fully_fine_tuned_run_compares_two_models_and_names_their_folders(chat_run, tmp_path, tiny_model_dir, worker):
    # Full fine-tuning leaves no adapter to switch: the run's model/ is a second model (here: the random adapter merged in).
    run_dir = shutil.copytree(chat_run, tmp_path / "runs" / "20260101-000002-full")
    code = ("from transformers import AutoModelForCausalLM, AutoTokenizer; from peft import PeftModel; "
            f"m = PeftModel.from_pretrained(AutoModelForCausalLM.from_pretrained({str(tiny_model_dir)!r}), {str(run_dir / 'adapter')!r}); "
            f"m.merge_and_unload().save_pretrained({str(run_dir / 'model')!r}); "
            f"AutoTokenizer.from_pretrained({str(tiny_model_dir)!r}).save_pretrained({str(run_dir / 'model')!r})")
    run_code(code, stack="plain", check=True, timeout=300)
    shutil.rmtree(run_dir / "adapter")
    shutil.rmtree(run_dir / "checkpoints")
    replies, _, _ = _chat(worker, run_dir)
    base, tuned = replies["base"].adapter_state, replies["tuned"].adapter_state
    assert base["kind"] == tuned["kind"] == "full" and base["verified"] and tuned["verified"]
    assert base["weights"] == str(tiny_model_dir.resolve()) and tuned["weights"] == str((run_dir / "model").resolve())
    assert "weights from `model`" not in base["badge"] and f"weights from `{run_dir.name}/model`" in tuned["badge"]
    assert replies["base"].token_ids == _fresh_generation(tiny_model_dir, None, GREEDY)
    assert replies["tuned"].token_ids == _fresh_generation(run_dir / "model", None, GREEDY)
    assert replies["base"].token_ids != replies["tuned"].token_ids


def test_max_new_tokens_is_the_chats_even_where_the_run_sets_its_own(chat_run, tmp_path, worker):
    """A run whose `rloo.generation_kwargs` set max_new_tokens (TRL lets them override the completion length) replied
    with that many tokens whatever the chat's Max new tokens said, while the page said the chat's."""
    import yaml

    run_dir = shutil.copytree(chat_run, tmp_path / "runs" / "20260101-000003-kwargs")
    config = yaml.safe_load((run_dir / "config.yaml").read_text())
    config.setdefault("rloo", {})["generation_kwargs"] = {"max_new_tokens": 16}
    (run_dir / "config.yaml").write_text(yaml.safe_dump(config))
    replies, _, _ = _chat(worker, run_dir, sampling={**GREEDY, "max_new_tokens": 2})
    for side in ("base", "tuned"):  # random adapters emit no end token this early (test_app_chat's premise)
        assert replies[side].tokens == 2 and replies[side].cut_off and replies[side].max_new_tokens == 2, replies[side]


def test_a_reply_says_when_its_prompt_opened_the_thought(chat_run, tmp_path, tiny_model_dir, worker):
    """A thinking template ends the prompt inside `<think>`: the reply starts inside the thought without a tag, and the
    chat must read it so (ui/chat_tab.py) rather than show the reasoning as the reply."""
    import yaml

    from rloo_studio.demo.tinymodel import THINKING_CHAT_TEMPLATE

    model = shutil.copytree(tiny_model_dir, tmp_path / "thinking-model")
    (model / "chat_template.jinja").write_text(THINKING_CHAT_TEMPLATE)  # what the tokenizer loads as its template
    run_dir = shutil.copytree(chat_run, tmp_path / "runs" / "20260101-000004-thinking")
    config = yaml.safe_load((run_dir / "config.yaml").read_text())
    config["model"]["name_or_path"] = str(model)
    (run_dir / "config.yaml").write_text(yaml.safe_dump(config))
    opened, _, _ = _chat(worker, run_dir, sampling={**GREEDY, "max_new_tokens": 4})
    plain, _, _ = _chat(worker, chat_run, sampling={**GREEDY, "max_new_tokens": 4})
    assert [opened[side].prompt_opens_think for side in ("base", "tuned")] == [True, True]
    assert [plain[side].prompt_opens_think for side in ("base", "tuned")] == [False, False]
