"""model.share_prefill: where a run shares prefills (engine/prefill.py `decide`), and the setting as a person writes it.
No model is loaded: the decision is stated from what the trainer was built with."""

from __future__ import annotations

import pytest
import yaml

from rloo_studio.config import RunConfig
from rloo_studio.engine.prefill import decide


def test_auto_shares_on_a_cpu_only_where_generation_stays_plain_generates():
    assert decide("auto", cuda=False).used
    assert not decide("off", cuda=False).used and "model.share_prefill is off" in decide("off", cuda=False).why
    gpu = decide("auto", cuda=True)
    assert not gpu.used and "GPU" in gpu.why and "model.share_prefill: on" in gpu.why
    assert decide("on", cuda=True).used and "not yet checked on a GPU" in decide("on", cuda=True).why
    for setting in ("auto", "on"):  # never where `generate` is not what samples, or samples per row at random
        vllm = decide(setting, cuda=True, use_vllm=True)
        assert not vllm.used and "vLLM" in vllm.why
        assert not decide(setting, cuda=False, continuous_batching=True).used
        dropout = decide(setting, cuda=False, dropout="model.layers.0.mlp.dropout")
        assert not dropout.used and "model.layers.0.mlp.dropout" in dropout.why
    assert decide("auto", cuda=False).line().startswith("prefill sharing: on — ")


@pytest.mark.parametrize("written, read", [("off", "off"), ("on", "on"), ("auto", "auto"), ("'off'", "off")])
def test_the_setting_reads_as_written_in_yaml_and_on_the_command_line(tmp_path, written, read):
    # YAML 1.1 reads a bare off/on as a boolean: the setting still gets its word.
    config = tmp_path / "config.yaml"
    config.write_text(f"model:\n  share_prefill: {written}\n  fast_generation: {written}\n")
    cfg = RunConfig.load(config)
    assert (cfg.model.share_prefill, cfg.model.fast_generation) == (read, read)
    assert RunConfig.load(tmp_path / "config.yaml", [f"model.share_prefill={written}"]).model.share_prefill == read
    assert RunConfig.from_dict(yaml.safe_load(cfg.to_yaml())).model.share_prefill == read  # and from the run's config.yaml


def test_a_wrong_word_names_the_setting_and_its_words():
    problems = RunConfig.from_dict({"model": {"share_prefill": "always"}}).validate()
    assert any("model.share_prefill" in p and "always" in p and "auto" in p for p in problems), problems
