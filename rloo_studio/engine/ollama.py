"""The Ollama Modelfile written next to an exported GGUF file.

One job: from the model's Jinja chat template, end tokens and training system prompt, write the text
of a `Modelfile` so that `ollama create NAME -f Modelfile` gives a model that chats as it was trained.
Pure text: no model is loaded here.

Ollama templates are Go templates (`{{ range .Messages }}…{{ .Role }}…{{ .Content }}…{{ end }}`),
not Jinja, so the chat template is translated, not copied. Arbitrary Jinja cannot be translated;
the common shapes can, recognised by their turn markers:

* ChatML (Qwen, SmolLM, the bundled demo model): `<|im_start|>ROLE\\nCONTENT<|im_end|>\\n`
* Llama 3: `<|start_header_id|>ROLE<|end_header_id|>\\n\\nCONTENT<|eot_id|>`
* Gemma: `<start_of_turn>ROLE\\nCONTENT<end_of_turn>\\n`, the assistant's role named `model`

For any other template the Modelfile has no TEMPLATE line and says so in a comment: Ollama then
uses its own guess from the template stored in the GGUF file, which may or may not be right.
"""

from __future__ import annotations

import re

# Each shape: the markers that identify it, its Go template, and the text that ends a turn (a stop token).
SHAPES = {
    "chatml": {
        "markers": ("<|im_start|>", "<|im_end|>"),
        "template": ("{{- range .Messages }}<|im_start|>{{ .Role }}\n{{ .Content }}<|im_end|>\n"
                     "{{ end }}<|im_start|>assistant\n"),
        "stop": "<|im_end|>",
    },
    "llama3": {
        "markers": ("<|start_header_id|>", "<|end_header_id|>", "<|eot_id|>"),
        "template": ("{{- range .Messages }}<|start_header_id|>{{ .Role }}<|end_header_id|>\n\n{{ .Content }}<|eot_id|>"
                     "{{ end }}<|start_header_id|>assistant<|end_header_id|>\n\n"),
        "stop": "<|eot_id|>",
    },
    "gemma": {
        # Gemma has no system role: like its own template, the system text opens the first user turn.
        "markers": ("<start_of_turn>", "<end_of_turn>"),
        "template": ('{{- range $i, $m := .Messages }}'
                     '{{ if eq $m.Role "system" }}<start_of_turn>user\n{{ $m.Content }}\n\n'
                     '{{ else if eq $m.Role "user" }}'
                     '{{ if not (and (eq $i 1) (eq (index $.Messages 0).Role "system")) }}<start_of_turn>user\n{{ end }}'
                     '{{ $m.Content }}<end_of_turn>\n'
                     '{{ else }}<start_of_turn>model\n{{ $m.Content }}<end_of_turn>\n'
                     '{{ end }}{{ end }}<start_of_turn>model\n'),
        "stop": "<end_of_turn>",
    },
}


def template_shape(chat_template: str | None) -> str | None:
    """The name of the shape the Jinja template has, or None when it is none of the known ones."""
    if not chat_template:
        return None
    for name, shape in SHAPES.items():
        if all(marker in chat_template for marker in shape["markers"]):
            return name
    return None


def default_system_prompt(chat_template: str | None) -> str | None:
    """A system text the Jinja template puts in by itself when a chat has none (SmolLM2 does), else None.

    Ollama's template only sees the messages it is given, so that text must become the Modelfile's SYSTEM.
    """
    match = re.search(r"<\|im_start\|>system\n([^{}<]+?)<\|im_end\|>", chat_template or "")
    return match.group(1) if match else None


def _quote(text: str) -> str:
    # Modelfile values in triple quotes may span lines; a triple quote inside would end them early.
    return '"""' + text.replace('"""', '\\"\\"\\"') + '"""'


def modelfile(gguf_file: str, chat_template: str | None, stop_tokens: list[str], system_prompt: str | None,
              model_name: str) -> tuple[str, str | None]:
    """The Modelfile's text and the template shape used (None: not translated)."""
    shape = template_shape(chat_template)
    lines = [f"# Ollama model file for {gguf_file}, written by RLOO Studio.",
             f"# Create the model:  ollama create {model_name} -f Modelfile",
             f"# Then chat:         ollama run {model_name}",
             f"FROM ./{gguf_file}", ""]
    if shape:
        lines += [f"# The chat template, translated from the model's Jinja template ({shape} shape) to Ollama's Go template syntax.",
                  f"TEMPLATE {_quote(SHAPES[shape]['template'])}", ""]
    elif chat_template:
        lines += ["# The model's chat template has a shape RLOO Studio cannot translate to Ollama's syntax (known: ChatML,",
                  "# Llama 3, Gemma). Without a TEMPLATE line Ollama guesses one from the template stored in the GGUF file;",
                  "# check the replies, and write a TEMPLATE yourself if they look wrong (https://github.com/ollama/ollama/blob/main/docs/modelfile.md).", ""]
    else:
        lines += ["# The model has no chat template: Ollama passes the prompt as it is.", ""]
    stops = list(dict.fromkeys(([SHAPES[shape]["stop"]] if shape else []) + [t for t in stop_tokens if t]))
    for token in stops:
        needs_quotes = any(c in token for c in ' "')
        lines.append(f"PARAMETER stop {_quote(token) if needs_quotes else token}")
    if system_prompt:
        lines += ["", "# The system prompt the model was trained with.", f"SYSTEM {_quote(system_prompt)}"]
    elif shape and default_system_prompt(chat_template):
        lines += ["", "# The model's own default system prompt (its chat template adds it when a chat has none).",
                  f"SYSTEM {_quote(default_system_prompt(chat_template))}"]
    return "\n".join(lines).rstrip() + "\n", shape
