"""A GGUF export refused because the model folder's own files disagree on the end token names the two files and their
values, not the converter (a real GGUF file written with the `gguf` package and read back by `gguf_check.read_back`)."""

from __future__ import annotations

import json

import numpy as np
import pytest

from rloo_studio.engine import gguf_check
from rloo_studio.errors import StudioError


def _gguf(path, eos: int) -> None:
    import gguf

    writer = gguf.GGUFWriter(str(path), "llama")
    writer.add_block_count(2)
    writer.add_file_type(gguf_check.FILE_TYPES["f16"])
    writer.add_tokenizer_model("gpt2")
    writer.add_token_list(["<|endoftext|>", "<|im_start|>", "<|im_end|>", "a", "b"])
    writer.add_eos_token_id(eos)
    writer.add_tensor("token_embd.weight", np.zeros((5, 4), dtype=np.float16))
    writer.write_header_to_file()
    writer.write_kv_data_to_file()
    writer.write_tensors_to_file()
    writer.close()


def _folder(tmp_path, config_eos: int, generation_eos) -> object:
    merged = tmp_path / "merged"
    merged.mkdir()
    (merged / "config.json").write_text(json.dumps({"num_hidden_layers": 2, "eos_token_id": config_eos}))
    (merged / "generation_config.json").write_text(json.dumps({"eos_token_id": generation_eos}))
    (merged / "tokenizer_config.json").write_text(json.dumps({"eos_token": "<|im_end|>", "added_tokens_decoder": {
        "0": {"content": "<|endoftext|>", "special": True}, "2": {"content": "<|im_end|>", "special": True}}}))
    return merged


def test_an_end_token_the_folder_itself_disagrees_on_names_the_files(tmp_path):
    """The converter takes the tokenizer's end token (<|im_end|>, id 2); config.json and generation_config.json say 0."""
    merged = _folder(tmp_path, 0, 0)
    _gguf(tmp_path / "m.gguf", eos=2)
    with pytest.raises(StudioError) as caught:
        gguf_check.read_back(tmp_path / "m.gguf", merged, "f16")
    said = caught.value.message()
    assert "tokenizer_config.json" in said and "'<|im_end|>' (id 2)" in said, said
    assert "config.json" in said and "eos_token_id 0" in said and "generation_config.json" in said, said
    assert "converter" not in said, said
    assert "set eos_token_id to 2" in said, said


def test_a_file_that_disagrees_with_a_consistent_folder_still_blames_the_file(tmp_path):
    merged = _folder(tmp_path, 2, 2)
    _gguf(tmp_path / "m.gguf", eos=0)
    with pytest.raises(StudioError) as caught:
        gguf_check.read_back(tmp_path / "m.gguf", merged, "f16")
    assert "its end-of-sequence token is 0, the merged model's [2]" in caught.value.message()
    _gguf(tmp_path / "ok.gguf", eos=2)
    assert gguf_check.read_back(tmp_path / "ok.gguf", merged, "f16")["eos_token_id"] == 2
