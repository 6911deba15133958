"""The Ollama Modelfile: which chat templates are translated, and what is written when one is not."""

from __future__ import annotations

import json
import os
import shutil
import subprocess

import pytest
from helpers import ROOT

from rloo_studio.engine.ollama import SHAPES, modelfile, template_shape

DEMO_TEMPLATE = (ROOT / "assets" / "demo-model" / "chat_template.jinja").read_text()
# Abridged from the published templates of each family (the turn markers are what matters).
LLAMA3 = ("{{- bos_token }}{% for message in messages %}<|start_header_id|>{{ message['role'] }}<|end_header_id|>\n\n"
          "{{ message['content'] | trim }}<|eot_id|>{% endfor %}{% if add_generation_prompt %}"
          "<|start_header_id|>assistant<|end_header_id|>\n\n{% endif %}")
GEMMA = ("{{ bos_token }}{% for message in messages %}{% if message['role'] == 'assistant' %}{% set role = 'model' %}"
         "{% else %}{% set role = message['role'] %}{% endif %}<start_of_turn>{{ role }}\n{{ message['content'] | trim }}"
         "<end_of_turn>\n{% endfor %}{% if add_generation_prompt %}<start_of_turn>model\n{% endif %}")
MISTRAL = "{% for message in messages %}{% if message['role'] == 'user' %}[INST] {{ message['content'] }} [/INST]{% endif %}{% endfor %}"


def test_shapes_are_recognised_by_their_turn_markers():
    assert template_shape(DEMO_TEMPLATE) == "chatml"
    assert template_shape(LLAMA3) == "llama3"
    assert template_shape(GEMMA) == "gemma"
    assert template_shape(MISTRAL) is None and template_shape(None) is None and template_shape("") is None


def test_chatml_modelfile():
    text, shape = modelfile("m-rloo-f16.gguf", DEMO_TEMPLATE, ["<|im_end|>", "<|endoftext|>"], "Answer briefly.", "my-run")
    assert shape == "chatml"
    assert text.splitlines()[:4] == ["# Ollama model file for m-rloo-f16.gguf, written by RLOO Studio.",
                                     "# Create the model:  ollama create my-run -f Modelfile",
                                     "# Then chat:         ollama run my-run", "FROM ./m-rloo-f16.gguf"]
    assert f'TEMPLATE """{SHAPES["chatml"]["template"]}"""' in text
    # The end-of-turn marker once (it is also the EOS token), then the other end token.
    assert [line for line in text.splitlines() if line.startswith("PARAMETER")] == ["PARAMETER stop <|im_end|>", "PARAMETER stop <|endoftext|>"]
    assert text.endswith('SYSTEM """Answer briefly."""\n')


def test_llama3_and_gemma_modelfiles_stop_at_their_end_of_turn():
    text, _ = modelfile("x.gguf", LLAMA3, ["<|eot_id|>"], None, "x")
    assert "<|start_header_id|>{{ .Role }}<|end_header_id|>\n\n{{ .Content }}<|eot_id|>" in text
    assert text.count("PARAMETER stop") == 1 and "PARAMETER stop <|eot_id|>" in text and "SYSTEM" not in text
    text, _ = modelfile("x.gguf", GEMMA, ["<eos>"], "Be kind.", "x")
    assert "<start_of_turn>model\\n" not in text and "<start_of_turn>model\n{{ $m.Content }}<end_of_turn>" in text
    assert "PARAMETER stop <end_of_turn>" in text and "PARAMETER stop <eos>" in text and 'SYSTEM """Be kind."""' in text


def test_unknown_or_missing_template_is_said_not_guessed():
    text, shape = modelfile("x.gguf", MISTRAL, ["</s>"], None, "x")
    assert shape is None and not [line for line in text.splitlines() if line.startswith("TEMPLATE")]
    assert "cannot translate to Ollama's syntax (known: ChatML," in text and "Ollama guesses one" in text
    assert "PARAMETER stop </s>" in text
    text, shape = modelfile("x.gguf", None, [], None, "x")
    assert shape is None and "The model has no chat template" in text and "PARAMETER" not in text


def test_system_prompt_and_stop_tokens_are_quoted_safely():
    text, _ = modelfile("x.gguf", DEMO_TEMPLATE, ["end here"], 'Say """hi""" and\nstop.', "x")
    assert 'SYSTEM """Say \\"\\"\\"hi\\"\\"\\" and\nstop."""' in text
    assert 'PARAMETER stop """end here"""' in text


# Rendering the translated templates with Go's own text/template (the engine Ollama uses), when Go is installed,
# and comparing with the Jinja template rendered as transformers does: the translation is checked, not assumed.
GO_RENDER = r'''
package main

import (
	"encoding/json"
	"os"
	"text/template"
)

type Message struct{ Role, Content string }

func main() {
	var in struct {
		Template string
		Messages []Message
	}
	if err := json.NewDecoder(os.Stdin).Decode(&in); err != nil {
		panic(err)
	}
	t := template.Must(template.New("t").Parse(in.Template))
	if err := t.Execute(os.Stdout, map[string]any{"Messages": in.Messages}); err != nil {
		panic(err)
	}
}
'''
# Gemma's published template puts the system text at the start of the first user turn.
GEMMA_WITH_SYSTEM = (
    "{{ bos_token }}{%- if messages[0]['role'] == 'system' -%}{%- set first_user_prefix = messages[0]['content'] + '\n\n' -%}"
    "{%- set loop_messages = messages[1:] -%}{%- else -%}{%- set first_user_prefix = '' -%}{%- set loop_messages = messages -%}"
    "{%- endif -%}{%- for message in loop_messages -%}{%- if message['role'] == 'assistant' -%}{%- set role = 'model' -%}"
    "{%- else -%}{%- set role = message['role'] -%}{%- endif -%}"
    "{{ '<start_of_turn>' + role + '\n' + (first_user_prefix if loop.first else '') }}{{ message['content'] | trim }}"
    "{{ '<end_of_turn>\n' }}{%- endfor -%}{%- if add_generation_prompt -%}{{ '<start_of_turn>model\n' }}{%- endif -%}")


@pytest.mark.skipif(shutil.which("go") is None, reason="Go is not installed (apt-get install golang-go)")
@pytest.mark.parametrize("shape,jinja", [("chatml", DEMO_TEMPLATE), ("llama3", LLAMA3), ("gemma", GEMMA_WITH_SYSTEM)])
def test_translated_templates_render_like_the_jinja_ones(shape, jinja, tmp_path):
    import jinja2

    program = tmp_path / "render.go"
    program.write_text(GO_RENDER)
    conversations = [
        [{"role": "user", "content": "What is 2 + 3?"}],
        [{"role": "system", "content": "Answer briefly."}, {"role": "user", "content": "What is 2 + 3?"},
         {"role": "assistant", "content": "5"}, {"role": "user", "content": "And 4 + 4?"}],
    ]
    for messages in conversations:
        expected = jinja2.Environment().from_string(jinja).render(messages=messages, add_generation_prompt=True, bos_token="")
        done = subprocess.run(["go", "run", str(program)], input=json.dumps({"Template": SHAPES[shape]["template"], "Messages": [
            {"Role": m["role"], "Content": m["content"]} for m in messages]}), capture_output=True, text=True, timeout=300,
            env={**os.environ, "GOCACHE": str(tmp_path / "go-cache"), "GOFLAGS": "-mod=mod"})
        assert done.returncode == 0, done.stderr
        assert done.stdout == expected, (shape, messages)


SMOLLM2 = ("{% for message in messages %}{% if loop.first and messages[0]['role'] != 'system' %}{{ '<|im_start|>system\n"
           "You are a helpful AI assistant named SmolLM, trained by Hugging Face<|im_end|>\n' }}{% endif %}"
           "{{'<|im_start|>' + message['role'] + '\n' + message['content'] + '<|im_end|>' + '\n'}}{% endfor %}"
           "{% if add_generation_prompt %}{{ '<|im_start|>assistant\n' }}{% endif %}")


def test_a_template_default_system_prompt_becomes_the_modelfile_system():
    """SmolLM2's template adds its own system text when a chat has none; Ollama's template cannot, so SYSTEM carries it."""
    text, shape = modelfile("x.gguf", SMOLLM2, ["<|im_end|>"], None, "x")
    assert shape == "chatml"
    assert text.endswith('SYSTEM """You are a helpful AI assistant named SmolLM, trained by Hugging Face"""\n')
    text, _ = modelfile("x.gguf", SMOLLM2, ["<|im_end|>"], "Answer briefly.", "x")  # the training prompt wins
    assert 'SYSTEM """Answer briefly."""' in text and "SmolLM" not in text
    text, _ = modelfile("x.gguf", DEMO_TEMPLATE, ["<|im_end|>"], None, "x")  # the demo template has none
    assert "SYSTEM" not in text
