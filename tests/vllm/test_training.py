"""GRPO with `train.use_vllm=true` on CPU, vLLM colocated in the training process (TRL's
colocate mode runs on vLLM's CPU build). Server mode cannot run here: see the README."""

import itertools
import time
from pathlib import Path

import pytest

from tests.vllm.conftest import NO_VLLM, WHY

pytestmark = [pytest.mark.vllm, pytest.mark.skipif(NO_VLLM, reason=WHY)]

RATIO_TOLERANCE = 0.08
"""TRL's mean importance-sampling ratio exp(logp_train - logp_vllm) of a step: within 1 ± this.
vLLM's CPU build computes in bf16 (its `auto` dtype for float32 weights), training in fp32:
measured 0.9988, 1.0489, 0.9716 over three steps (AVX2), 1.0058, 0.9835, 0.998 (AVX512-BF16, where
vLLM packs its weights for oneDNN and TRL's own sync failed: "'Parameter' object has no attribute
'weight_loader'"; `vllm_backend.reload_in_place` syncs them)."""
LOGP_TOLERANCE = 0.02
"""TRL's mean |logp_train - logp_vllm| per token of a step, in nats (measured 0.002–0.010)."""
PROBE_TOLERANCE = 0.025
"""vLLM's log-probs of a fixed greedy reply against the training model's, per token, in nats,
right after each weight sync (measured up to 0.038: bf16 against fp32, hence twice this)."""


@pytest.fixture(scope="module")
def warm(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A briefly warmed-up tiny model: it plays legal moves often enough for rewards to differ.
    Heads of 32 dimensions: vLLM's CPU attention has no kernel for 16 ("Unsupported CPU
    attention configuration: head_dim=16")."""
    from ttt_lab.config.load import load
    from ttt_lab.config.schema import ModelConfig
    from ttt_lab.players.tiny import build_tiny
    from ttt_lab.train.sft import run_sft

    home = tmp_path_factory.mktemp("vllm-train")
    base = build_tiny(home / "tiny", ModelConfig(hidden_size=64, num_layers=1, num_heads=2, intermediate_size=128),
                      seed=0)
    cfg = load(["~experiment", "env.think=off", "player.max_new_tokens=6", "env.max_model_turns=5",
                "train.sft.teacher_p_random=0.0", "train.sft.num_games=120", "train.sft.batch_size=16",
                "train.sft.epochs=10", "train.sft.learning_rate=1e-2", "tracking.enabled=false", f"home={home}"]).cfg
    run_sft(cfg, str(base), home / "sft")
    return home / "sft"


def _probe(trainer, prompt: list[int]) -> tuple[list[int], list[float], list[float]]:
    """vLLM's greedy reply to `prompt` with its log-probs, and the training model's log-probs
    of the same tokens."""
    import torch
    from vllm import SamplingParams, TokensPrompt

    out = trainer.vllm_generation.llm.generate([TokensPrompt(prompt_token_ids=prompt)],
                                               SamplingParams(temperature=0.0, max_tokens=6, logprobs=0),
                                               use_tqdm=False)[0].outputs[0]
    ids = list(out.token_ids)
    vllm_lps = [lp[t].logprob for lp, t in zip(out.logprobs, ids, strict=True)]
    model = trainer.accelerator.unwrap_model(trainer.model)
    with torch.no_grad():
        logits = model(input_ids=torch.tensor([prompt + ids])).logits[0].float()
    logp = torch.log_softmax(logits, dim=-1)
    train_lps = [float(logp[len(prompt) + i - 1, t]) for i, t in enumerate(ids)]
    return ids, vllm_lps, train_lps


def test_colocated_vllm_plays_the_rollouts_and_receives_every_update(warm: Path, tmp_path: Path,
                                                                      monkeypatch: pytest.MonkeyPatch) -> None:
    from transformers import TrainerCallback

    from ttt_lab.config.load import load
    from ttt_lab.engine import vllm_backend
    from ttt_lab.train import grpo

    cfg = load(["experiment=smoke", f"home={tmp_path}", "tracking.enabled=false", "train.use_vllm=true",
                "train.vllm_mode=colocate", "steps=3", "batch_size=16", "num_generations=4", "temperature=1.5",
                "lr=5e-2", "player.max_new_tokens=6", "env.max_model_turns=5"]).cfg
    turns, probes, logs, dtypes = [0], [], [], set()
    real_turn, real_make = vllm_backend.VLLMBackend.turn, grpo.make_rollout_func

    def turn(self, *a, **k):
        turns[0] += 1
        return real_turn(self, *a, **k)

    def make(*a, **k):
        rollout = real_make(*a, **k)

        def spy(prompts, trainer):  # TRL has just pushed the current weights to vLLM
            prompt = trainer.processing_class.apply_chat_template(
                [{"role": "user", "content": "New game. You play X and move first."}], add_generation_prompt=True,
                tokenize=True, return_dict=True)["input_ids"]
            probes.append(_probe(trainer, list(prompt)))
            dtypes.add(str(trainer.vllm_generation.llm.llm_engine.model_config.dtype))
            return rollout(prompts, trainer)

        return spy

    class Logs(TrainerCallback):
        def on_log(self, args, state, control, logs=None, **kw):
            collected.append(dict(logs or {}))

    collected = logs
    monkeypatch.setattr(vllm_backend.VLLMBackend, "turn", turn)
    monkeypatch.setattr(grpo, "make_rollout_func", make)
    t = time.perf_counter()
    info = grpo.run_rl_phase(cfg, cfg.train.phases[0], 0, str(warm), tmp_path / "rl", callbacks=[Logs()], resume=False)
    with_vllm = time.perf_counter() - t
    monkeypatch.undo()
    plain = load(["experiment=smoke", f"home={tmp_path}", "tracking.enabled=false", "steps=3", "batch_size=16",
                  "num_generations=4", "temperature=1.5", "lr=5e-2", "player.max_new_tokens=6",
                  "env.max_model_turns=5"]).cfg
    t = time.perf_counter()
    grpo.run_rl_phase(plain, plain.train.phases[0], 0, str(warm), tmp_path / "rl-hf", resume=False)
    print(f"3 GRPO steps of 16 games: {with_vllm:.1f} s with colocated vLLM (its start included), "
          f"{time.perf_counter() - t:.1f} s with the KV-cache engine")

    assert info["steps"] == 3 and turns[0] >= 3  # every step's replies came from vLLM
    means = [(s["sampling/importance_sampling_ratio/mean"], s["sampling/sampling_logp_difference/mean"])
             for s in logs if "sampling/importance_sampling_ratio/mean" in s]
    assert len(means) == 3, logs
    assert all(abs(r - 1) <= RATIO_TOLERANCE and d <= LOGP_TOLERANCE for r, d in means), means
    assert dtypes == {"torch.bfloat16"}, dtypes  # what vLLM's CPU build chose (see LOGP_TOLERANCE)
    assert len(probes) == 3
    for _, vllm_lps, train_lps in probes:  # at each generation vLLM computes with the training weights
        assert max(abs(a - b) for a, b in zip(vllm_lps, train_lps, strict=True)) <= 2 * PROBE_TOLERANCE, probes
    changed = [p[0] != q[0] or max(abs(a - b) for a, b in zip(p[1], q[1], strict=True)) > 10 * PROBE_TOLERANCE
               for p, q in itertools.pairwise(probes)]
    assert all(changed), probes  # each update changed what vLLM computes: the weights reached it
    print(f"importance ratio (mean per step): {[round(r, 4) for r, _ in means]}; mean |logp diff|: "
          f"{[round(d, 4) for _, d in means]}")


def test_server_mode_without_a_gpu_is_one_clear_error(tmp_path: Path) -> None:
    from ttt_lab.config.load import load
    from ttt_lab.train.runtime import TrainError, check_vllm

    with pytest.raises(TrainError, match="vllm_mode=server needs a CUDA GPU"):
        check_vllm(load(["train.use_vllm=true", "train.vllm_mode=server", f"home={tmp_path}"]).cfg)
    check_vllm(load(["train.use_vllm=true", "train.vllm_mode=colocate", f"home={tmp_path}"]).cfg)
