"""The exported model card says what the merged folder holds: a LoRA update merged into the base, or, for a run that
trained the whole model, no adapter at all (found walking the app: a full fine-tuning run's card spoke of LoRA)."""

from rloo_studio.engine.export import _usage


def test_the_merged_usage_names_the_adapter_only_where_there_was_one():
    assert "LoRA update merged in" in _usage("merged", "base", dtype="float32", lora=True)
    whole = _usage("merged", "base", dtype="float32", lora=False)
    assert "LoRA" not in whole and "there was no adapter" in whole
