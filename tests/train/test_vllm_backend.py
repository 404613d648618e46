"""The vLLM backend on CPU: vLLM itself needs a GPU (benchmarks/gpu_check.sh runs it), so here
a stand-in with `VLLMGeneration.generate`'s contract samples from the same tiny model, and the
tests check what the backend owes TRL: the history it sends, the replies it plays, the log-probs."""

import inspect

import torch

from ttt_lab.engine.rollout import Sampling, play_rollouts
from ttt_lab.env.dataset import make_dataset
from ttt_lab.env.settings import DatasetConfig, EnvConfig
from ttt_lab.game.opponents import MinimaxOpponent


class StandIn:
    """`generate(prompts, images, num_generations)` -> (prompt_ids, completion_ids, logprobs, token_ids),
    logprobs as one-element lists per token, stopping at eos or `max_tokens` like vLLM."""

    def __init__(self, model, eos: int, max_tokens: int) -> None:
        self.model, self.eos, self.max_tokens = model, eos, max_tokens
        self.sent: list[list[list[int]]] = []
        self.gen = torch.Generator().manual_seed(0)

    @torch.no_grad()
    def generate(self, prompts, images, num_generations, profiler=None):
        assert images is None and num_generations == 1
        self.sent.append([list(p) for p in prompts])
        out, lps = [], []
        for p in prompts:
            ids, lp = list(p), []
            for _ in range(self.max_tokens + 3):  # a sloppy server may write past the cap
                logp = torch.log_softmax(self.model(input_ids=torch.tensor([ids])).logits[0, -1], -1)
                t = int(torch.multinomial(logp.exp(), 1, generator=self.gen))
                ids.append(t)
                lp.append([float(logp[t])])
                if t == self.eos:
                    break
            out.append(ids[len(p):])
            lps.append(lp)
        return prompts, out, lps, None


def test_trl_vllm_generation_still_has_the_contract_we_use() -> None:
    from trl import GRPOTrainer
    from trl.generation.vllm_generation import VLLMGeneration

    assert list(inspect.signature(VLLMGeneration.generate).parameters)[:4] == [
        "self", "prompts", "images", "num_generations"]
    src = inspect.getsource(GRPOTrainer._generate)
    assert src.index("self.vllm_generation.sync_weights()") < src.index("self.rollout_func(prompts, self)")


def test_vllm_backend_sends_each_game_its_whole_history_and_plays_its_replies(sft_run) -> None:
    from transformers import AutoModelForCausalLM, AutoTokenizer

    model, tok = AutoModelForCausalLM.from_pretrained(sft_run[0]), AutoTokenizer.from_pretrained(sft_run[0])
    engine = StandIn(model, tok.eos_token_id, max_tokens=6)
    examples = make_dataset(DatasetConfig(size=8, model_symbol="alternate", p_min=0.0, p_max=1.0), 7)
    rollouts = play_rollouts(model, tok, examples, EnvConfig(max_model_turns=5), MinimaxOpponent(p_random=0.5),
                             Sampling(temperature=1.0, max_new_tokens=6), vllm=engine)
    assert len(engine.sent) >= 2, "several turns"
    whole = [r.prompt_ids + r.completion_ids for r in rollouts]
    for batch in engine.sent:
        for sent in batch:
            assert any(w[: len(sent)] == sent for w in whole), "vLLM saw exactly what training will see"
    for r in rollouts:
        assert len(r.logprobs) == len(r.completion_ids) == len(r.env_mask)
        written = [i for i, m in enumerate(r.env_mask) if m]
        with torch.no_grad():
            logp = torch.log_softmax(model(input_ids=torch.tensor([r.prompt_ids + r.completion_ids])).logits[0], -1)
        start = len(r.prompt_ids)
        expected = [float(logp[start + i - 1, r.completion_ids[i]]) for i in written]
        torch.testing.assert_close(torch.tensor([r.logprobs[i] for i in written]), torch.tensor(expected),
                                   atol=1e-4, rtol=1e-4)
        replies = [m["content"] for m in r.record.messages if m["role"] == "assistant"]
        assert len(replies) == sum(1 for i in written if i == 0 or not r.env_mask[i - 1])
        assert all(len(ids) <= 6 for ids in _segments(r))


def _segments(r) -> list[list[int]]:
    out, cur = [], []
    for t, m in zip(r.completion_ids, r.env_mask, strict=True):
        if m:
            cur.append(t)
        elif cur:
            out.append(cur)
            cur = []
    return [*out, cur] if cur else out


def test_trl_receives_the_per_turn_cap_and_the_vllm_server_from_the_schema(tmp_path) -> None:
    """What TRL's GRPOConfig holds (not our helper's arguments): vLLM on, its mode and URL,
    replies capped per turn at player.max_new_tokens, and the phase's schema values."""
    from ttt_lab.train.trainer_args import grpo_args

    from .conftest import cfg_for

    cfg = cfg_for(tmp_path, "train.use_vllm=true", "train.vllm_mode=server", "player.max_new_tokens=6",
                  "train.vllm_server_base_url=http://10.0.0.5:8000", "train.phases.0.epsilon_high=5.0",
                  "train.phases.0.lr_scheduler=linear")
    args = grpo_args(cfg, cfg.train.phases[0], 4, tmp_path, 60)
    assert args.use_vllm and args.vllm_mode == "server" and args.vllm_server_base_url == "http://10.0.0.5:8000"
    assert args.generation_kwargs == {"max_tokens": 6} and args.max_completion_length == 60
    assert args.epsilon_high == 5.0 and args.lr_scheduler_type == "linear" and args.beta == 0.0
    assert not grpo_args(cfg_for(tmp_path), cfg.train.phases[0], 4, tmp_path, 60).use_vllm


def test_rollout_func_generates_with_the_trainers_vllm_and_returns_its_logprobs(sft_run, tmp_path) -> None:
    from ttt_lab.train.checkpoints import load_model
    from ttt_lab.train.grpo_rollout import make_rollout_func
    from ttt_lab.train.phase_data import phase_dataset

    from .conftest import cfg_for

    cfg = cfg_for(tmp_path, "train.use_vllm=true")
    phase = cfg.train.phases[0]
    model, tok = load_model(str(sft_run[0]), cfg)
    engine = StandIn(model, tok.eos_token_id, max_tokens=6)

    class Trainer:
        processing_class = tok
        vllm_generation = engine

        class accelerator:
            @staticmethod
            def unwrap_model(m):
                return m

    Trainer.model = model
    out = make_rollout_func(cfg, phase, phase_dataset(cfg, phase, 0, 1), 6)(["game 0"] * 4, Trainer)
    assert engine.sent and len(out["logprobs"]) == 4
    for ids, lps, mask in zip(out["completion_ids"], out["logprobs"], out["env_mask"], strict=True):
        assert len(ids) == len(lps) == len(mask)
        assert all(lp <= 0 for lp, m in zip(lps, mask, strict=True) if m)
