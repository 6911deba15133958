"""A reward model reads what TRL 1.15 gives one: the chat-templated text tokenised once (one BOS), right-padded,
with the pad id set on the model's config so the classification head pools each row's last real token.

The reward model is a tiny Llama sequence classifier whose tokenizer adds BOS to plain text, whose chat template
writes BOS itself (as Llama 3's does), and which has no pad token (as many reward models). Everything runs in a
child process so this one never imports the model libraries.
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from helpers import run_code

pytestmark = pytest.mark.slow

ROOT = Path(__file__).resolve().parents[2]

CHILD = r'''
import json, sys
from rloo_studio.engine.stack import import_training_stack
stack = import_training_stack("transformers")
import torch, transformers
from tokenizers import processors
from trl.data_utils import apply_chat_template
from rloo_studio.demo import tinymodel
from rloo_studio.rewards.model_reward import reward_model_function, reward_model_inputs, reward_model_texts

folder = sys.argv[1]
tok = tinymodel.build_char_tokenizer()
tok.add_special_tokens({"bos_token": "<s>"})
bos = tok.convert_tokens_to_ids("<s>")
tok.backend_tokenizer.post_processor = processors.TemplateProcessing(single="<s> $A", special_tokens=[("<s>", bos)])
tok.chat_template = ("{{ bos_token }}{% for m in messages %}<|im_start|>{{ m['role'] }}\n{{ m['content'] }}<|im_end|>\n{% endfor %}"
                     "{% if enable_thinking is defined and enable_thinking is false %}nothink{% endif %}")
tok.pad_token = None
torch.manual_seed(0)
config = transformers.LlamaConfig(vocab_size=len(tok), hidden_size=32, intermediate_size=64, num_hidden_layers=1,
                                  num_attention_heads=2, num_key_value_heads=1, num_labels=1, pad_token_id=None)
transformers.LlamaForSequenceClassification(config).save_pretrained(folder)
tok.save_pretrained(folder)

kwargs = {"enable_thinking": False}
fn = reward_model_function(folder, chat_template_kwargs=kwargs)
prompt = [{"role": "user", "content": "What is 2 + 3?"}]
completions = [[{"role": "assistant", "content": "5"}], [{"role": "assistant", "content": "It is five, I think."}]]
scores = fn(prompts=[prompt, prompt], completions=completions)
alone = [fn(prompts=[prompt], completions=[c])[0] for c in completions]
tok = fn.state["tok"]
texts = reward_model_texts([prompt, prompt], completions, tok, kwargs)
trl_texts = [apply_chat_template({"messages": prompt + c}, tok, **kwargs)["text"] for c in completions]
inputs = reward_model_inputs(texts, tok)
rows = [[t for t, m in zip(r, mr) if m] for r, mr in zip(inputs["input_ids"].tolist(), inputs["attention_mask"].tolist())]
plain = reward_model_texts(["Q: 2+3?"], ["5"], tok)
plain_ids = reward_model_inputs(plain, tok)["input_ids"].tolist()
print(json.dumps({"scores": scores, "alone": alone, "texts": texts, "trl_texts": trl_texts, "rows": rows, "bos": bos,
                  "pad_token_id": tok.pad_token_id, "eos_token_id": tok.eos_token_id,
                  "config_pad": fn.state["model"].config.pad_token_id, "padded_right": inputs["attention_mask"][0].tolist(),
                  "plain": plain, "plain_ids": plain_ids}))
'''


@pytest.fixture(scope="module")
def probe(tmp_path_factory) -> dict:
    folder = tmp_path_factory.mktemp("reward-model")
    done = run_code(CHILD, folder, stack="transformers", timeout=600, cwd=ROOT)
    assert done.returncode == 0, done.stderr[-3000:]
    return json.loads(done.stdout.strip().splitlines()[-1])


def test_chat_text_is_trls_with_the_runs_chat_template_kwargs(probe):
    assert probe["texts"] == probe["trl_texts"]
    assert all(t.endswith("nothink") for t in probe["texts"])


def test_the_templated_text_gets_one_bos_not_two(probe):
    for row in probe["rows"]:
        assert row[0] == probe["bos"] and row.count(probe["bos"]) == 1
    # Plain text is prompt + completion, tokenised without added special tokens (as TRL does).
    assert probe["plain"] == ["Q: 2+3?5"] and probe["bos"] not in probe["plain_ids"][0]


def test_the_pad_id_is_set_so_a_padded_batch_scores_as_each_row_alone(probe):
    assert probe["pad_token_id"] == probe["eos_token_id"] == probe["config_pad"]
    assert probe["padded_right"][-1] == 0  # the shorter row is padded on the right
    assert probe["scores"] == pytest.approx(probe["alone"], abs=1e-5)
