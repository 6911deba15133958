"""The help lines of the RLOO settings that shape the advantages say what TRL 1.15 does with them."""

from __future__ import annotations

from rloo_studio.config import field_help


def test_epsilon_matters_whenever_completions_are_trained_on_after_the_model_changed():
    help_text = field_help("rloo", "epsilon")
    # Also with one pass per batch: steps_per_generation above the accumulation steps spreads one batch over steps.
    assert "steps_per_generation" in help_text and "gradient_accumulation_steps" in help_text
    assert "Only matters with more than one pass per batch." != help_text


def test_beta_and_normalising_say_how_they_enter_the_advantage():
    assert "subtracted from its reward" in field_help("rloo", "beta")
    normalise = field_help("rloo", "normalize_advantages")
    # With beta > 0, prompts tied on reward keep KL-only advantages, which normalising scales to full size.
    assert "beta" in normalise and "noise" in normalise
