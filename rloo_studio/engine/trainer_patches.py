"""Changes to how TRL's RLOOTrainer computes, each giving the same numbers as TRL's own code, only faster.

* `use_torch_logprobs_on_cpu`: TRL 1.15 computes the completion tokens' log-probabilities with a fused LM head
  whose Triton kernel needs a GPU; on a CPU it only runs in Triton's Python interpreter (TRITON_INTERPRET=1),
  one thread, about 9 times slower per step than the Unsloth CPU path. On CPU tensors the same quantities are
  computed here with torch (the same arithmetic: log-softmax at the target, entropy and the other per-token
  statistics, with the logits recomputed in the backward pass as TRL's kernel does); GPU tensors still go to TRL.
  Unsloth replaces that kernel with its own when it is imported, so this is installed on the transformers
  backend only.

* `skip_needless_old_logprobs`: after generating, TRL runs the policy once more without gradients over every
  completion, for the "old" log-probabilities of its importance ratio, and then again, with gradients, to train.
  When the weights cannot change in between (`num_iterations` 1 and one generation batch per optimizer step), no
  dropout makes the two passes differ, and β is 0 (no KL term reads the old values), both passes give the same
  numbers: the ratio is exp(0) = 1 and the old pass only costs time (a quarter of a `cpu-small-real` step). It is
  then skipped, and the training pass's own log-probabilities, detached, stand in for the old ones. Otherwise TRL
  runs unchanged, and the training log says why the pass is kept. β is checked at every generation: once it is
  raised mid-run (`alerts.on_hacking: raise_beta`), the pass runs again.

* `share_prefills`: TRL's batch holds every prompt k times, and `generate` computes each row's prompt (the prefill)
  once per row. While TRL generates, the model's `generate` computes each distinct prompt's prefill once and shares
  its cached keys and values with the prompt's k rows (engine/prefill.py says how, and why the completions are the
  same token for token); the rest of TRL's generation step is unchanged.

Each change is checked against TRL's own result to float tolerance (tests/engine/test_trainer_patches.py; the
prefill sharing in tests/engine/test_prefill.py).
"""

from __future__ import annotations

# Rows of the LM head's output computed at once: bounds the logits held in memory to ROWS x vocabulary floats
# (1024 x 49152 x 4 bytes = 200 MB for SmolLM2) in the forward pass and again in the backward pass.
TORCH_LOGPROB_ROWS = 1024
_OUTPUTS = ("entropy", "log_sum_sq_probs", "mean_logits", "is_top1")


def _transformed_logits(torch, hidden, weight, bias, scale, softcap, inv_t, compute_dtype):
    """The logits TRL's kernel works on: the head's projection, times logit_scale, soft-capped, over the temperature."""
    z = hidden.to(compute_dtype) @ weight.to(compute_dtype).t()
    if bias is not None:
        z = z + bias.to(compute_dtype)
    z = z.float() * scale
    if softcap is not None:
        z = softcap * torch.tanh(z / softcap)
    return z * inv_t


def torch_logprob_function(torch, trl_function):
    """A stand-in for trl.trainer.utils._ChunkedLogProbFunction: torch on the CPU, `trl_function` elsewhere.

    Same call and same five results (log_probs, entropy, log_sum_sq_probs, mean_logits, is_top1; those not asked
    for in `outputs` are None) as TRL's kernel; log_probs and entropy carry gradients to the hidden states, the
    head's weight and its bias."""
    from torch.utils.checkpoint import checkpoint

    class TorchLogProbs:
        _rloo_studio_torch_logprobs = True
        function = trl_function

        @staticmethod
        def apply(hidden, weight, bias, targets, temperature, chunk_size, final_logit_softcapping=None,
                  logit_scale=1.0, outputs=_OUTPUTS):
            if hidden.device.type != "cpu":
                return trl_function.apply(hidden, weight, bias, targets, temperature, chunk_size,
                                          final_logit_softcapping, logit_scale, outputs)
            compute_dtype = torch.get_autocast_dtype("cpu") if torch.is_autocast_enabled("cpu") else hidden.dtype
            softcap, inv_t = final_logit_softcapping or None, 1.0 / temperature
            want_entropy = "entropy" in outputs

            def differentiable(h, w, b, t):
                # Recomputed in the backward pass (checkpoint): the rows' logits are not kept between the passes.
                z = _transformed_logits(torch, h, w, b, logit_scale, softcap, inv_t, compute_dtype)
                log_z = torch.logsumexp(z, dim=-1)
                log_probs = z.gather(-1, t.unsqueeze(-1)).squeeze(-1) - log_z
                if not want_entropy:
                    return log_probs, None
                entropy = log_z - (torch.softmax(z, dim=-1) * z).sum(-1)
                return log_probs, entropy

            grad = torch.is_grad_enabled() and (hidden.requires_grad or weight.requires_grad
                                                or (bias is not None and bias.requires_grad))
            parts = {name: [] for name in ("log_probs", *_OUTPUTS)}
            for start in range(0, hidden.shape[0], TORCH_LOGPROB_ROWS):
                h, t = hidden[start:start + TORCH_LOGPROB_ROWS], targets[start:start + TORCH_LOGPROB_ROWS]
                if grad:
                    log_probs, entropy = checkpoint(differentiable, h, weight, bias, t, use_reentrant=False)
                else:
                    log_probs, entropy = differentiable(h, weight, bias, t)
                parts["log_probs"].append(log_probs)
                parts["entropy"].append(entropy)
                if any(name in outputs for name in _OUTPUTS[1:]):
                    with torch.no_grad():  # statistics TRL logs, without gradients (non-differentiable there too)
                        z = _transformed_logits(torch, h, weight, bias, logit_scale, softcap, inv_t, compute_dtype)
                        if "log_sum_sq_probs" in outputs:
                            parts["log_sum_sq_probs"].append(torch.logsumexp(2 * z, -1) - 2 * torch.logsumexp(z, -1))
                        if "mean_logits" in outputs:
                            parts["mean_logits"].append(z.sum(-1) / z.shape[-1])
                        if "is_top1" in outputs:  # the target is the first of the largest logits, as TRL counts it
                            parts["is_top1"].append(z.argmax(-1) == t)
            if hidden.shape[0] == 0:
                empty = hidden.new_zeros((0,), dtype=torch.float32) + hidden.sum() * 0  # stays connected to the model
                return (empty, empty if want_entropy else None, *(empty.detach() if n in outputs else None for n in _OUTPUTS[1:]))
            return tuple(torch.cat(parts[name]) if (name == "log_probs" or name in outputs) else None
                         for name in ("log_probs", *_OUTPUTS))

    return TorchLogProbs


def use_torch_logprobs_on_cpu(torch) -> bool:
    """Route TRL's fused LM-head log-probabilities through torch for CPU tensors (see the module docstring).

    Returns whether it was installed now (False when it already was)."""
    import trl.trainer.utils as trl_utils

    current = getattr(trl_utils, "_ChunkedLogProbFunction", None)
    if current is None or getattr(current, "_rloo_studio_torch_logprobs", False):
        return False
    trl_utils._ChunkedLogProbFunction = torch_logprob_function(torch, current)
    return True


def old_logprobs_needed(trainer, torch) -> str | None:
    """Why TRL's no-grad "old" log-prob pass gives other numbers than the training pass (None: it gives the same)."""
    args = trainer.args
    if getattr(trainer, "beta", 0.0) != 0.0:
        return f"beta is {trainer.beta}: the KL term reads the old log-probabilities"
    if getattr(trainer, "num_iterations", 1) != 1:
        return f"num_iterations is {trainer.num_iterations}: later passes train on weights that moved since generation"
    if args.steps_per_generation != args.gradient_accumulation_steps:
        return (f"steps_per_generation ({args.steps_per_generation}) differs from gradient_accumulation_steps "
                f"({args.gradient_accumulation_steps}): one generation batch spans several optimizer steps")
    if getattr(args, "use_vllm", False) or getattr(trainer, "use_vllm", False):
        return "use_vllm: completions come from another engine"
    dropout = active_dropout(trainer.model, torch)
    if dropout is not None:
        return f"dropout is on ({dropout}): the two passes differ at random"
    return None


def active_dropout(model, torch) -> str | None:
    """The first dropout that is on in `model` (a module's, or its config's), None when none is."""
    active = [name for name, module in model.named_modules()
              if isinstance(module, torch.nn.modules.dropout._DropoutNd) and module.p > 0]
    config = getattr(model, "config", None)
    config_dropout = {k: v for k, v in (vars(config).items() if config is not None else ())
                      if "dropout" in k and isinstance(v, (int, float)) and v > 0}
    return (active or list(config_dropout) or [None])[0]


def skip_needless_old_logprobs(trainer, torch) -> str | None:
    """Skip TRL's old log-prob pass where it cannot change anything (see the module docstring), on this trainer.

    Returns None when it is skipped, else why it is kept. Only training steps change; evaluation runs TRL's code."""
    reason = old_logprobs_needed(trainer, torch)
    if reason is not None:
        return reason
    logprobs, generate_and_score, compute_loss = (trainer._get_per_token_logps_and_entropies,
                                                  trainer._generate_and_score_completions, trainer._compute_loss)
    inside = {"generation": False}
    # Whether the batch being trained on was generated with the old pass skipped. β is read at each generation, not
    # once: `alerts.on_hacking: raise_beta` raises it mid-run, and from then on TRL's KL term reads the old pass and
    # its reference pass goes through the same log-prob function; placeholders there made the KL exactly 0.
    skipped = {"last": False}

    def generate_and_score_completions(*args, **kwargs):
        # With beta 0 the only log-prob call of a training generation is the old pass.
        inside["generation"] = skipped["last"] = trainer.model.training and trainer.beta == 0.0
        try:
            return generate_and_score(*args, **kwargs)
        finally:
            inside["generation"] = False

    def get_per_token_logps_and_entropies(model, input_ids, attention_mask, logits_to_keep, *args, **kwargs):
        if inside["generation"]:
            # Placeholders of the pass's shape: `_compute_loss` replaces the old log-probabilities before it reads them.
            return torch.zeros(input_ids.shape[0], logits_to_keep, device=input_ids.device), None, None
        per_token, entropies, aux = logprobs(model, input_ids, attention_mask, logits_to_keep, *args, **kwargs)
        if filling["inputs"] is not None:
            inputs = filling["inputs"]
            # The same masked sum `_compute_loss` takes of these values, detached: the ratio is exactly 1.
            inputs["old_logps"] = (per_token.detach() * inputs["completion_mask"]).sum(1)
        return per_token, entropies, aux

    filling: dict = {"inputs": None}

    def compute_loss_(model, inputs, *args, **kwargs):
        # (the other conditions of the skip hold for the whole run, so this batch is the last generation's)
        filling["inputs"] = inputs if trainer.model.training and skipped["last"] else None
        try:
            return compute_loss(model, inputs, *args, **kwargs)
        finally:
            filling["inputs"] = None

    trainer._generate_and_score_completions = generate_and_score_completions
    trainer._get_per_token_logps_and_entropies = get_per_token_logps_and_entropies
    trainer._compute_loss = compute_loss_
    return None


def share_prefills(trainer, torch, setting: str, cuda: bool):
    """Compute each distinct prompt's prefill once in this trainer's generation, where `setting`
    (model.share_prefill) and the trainer allow it (engine/prefill.py `decide`). Returns the `Sharing`: used or not,
    why, and its counts.

    TRL 1.15 generates in `_generate_single_turn` (trl/trainer/rloo_trainer.py, "Regular generation path", lines
    1308-1337; Unsloth's copy of the trainer has the same lines): it left-pads the prompts' token ids and calls
    `unwrapped_model.generate(**generate_inputs, generation_config=self.generation_config)`, the model being
    `accelerator.unwrap_model(model_wrapped)` outside DeepSpeed. That method is wrapped on this trainer object, and
    while it runs, that model's `generate` is `prefill.shared_generate`: the same arguments, the same tensor back
    (rows in TRL's order), so the EOS mask and the token lists after it stay TRL's own. vLLM, continuous batching and
    multimodal prompts go to TRL's code untouched."""
    from . import prefill

    args = trainer.args
    sharing = prefill.decide(setting, cuda, use_vllm=bool(getattr(args, "use_vllm", False)),
                             continuous_batching=bool(getattr(args, "use_transformers_continuous_batching", False)),
                             dropout=active_dropout(trainer.model, torch))
    if not sharing.used:
        return sharing
    original = trainer._generate_single_turn

    def generate_single_turn(prompt_ids, images, multimodal_fields, *more, **kwargs):
        if (images is not None or multimodal_fields or getattr(trainer, "use_vllm", False)
                or getattr(trainer, "use_transformers_continuous_batching", False)):
            return original(prompt_ids, images, multimodal_fields, *more, **kwargs)
        model = trainer.accelerator.unwrap_model(trainer.model_wrapped)
        with prefill.sharing_on(model, torch, sharing.counts):
            return original(prompt_ids, images, multimodal_fields, *more, **kwargs)

    trainer._generate_single_turn = generate_single_turn
    return sharing
