import inspect
import json
from pathlib import Path

import pytest
import torch

from ttt_lab.config.load import load
from ttt_lab.errors import InvalidSetting
from ttt_lab.train.checkpoints import load_model
from ttt_lab.train.runtime import TrainError, check_device, check_vllm, quiet

from .conftest import cfg_for

quiet()
torch.set_num_threads(1)

def test_trl_still_offers_the_rollout_hook() -> None:
    """We rely on GRPOTrainer's experimental `rollout_func` and its `env_mask` key: fail loudly if they go."""
    from trl import GRPOTrainer

    assert "rollout_func" in inspect.signature(GRPOTrainer.__init__).parameters
    src = inspect.getsource(GRPOTrainer._generate)
    assert 'extra_fields.pop("env_mask"' in src


def test_sft_loss_falls(sft_run: tuple[Path, dict]) -> None:
    path, info = sft_run
    assert info["kept"] == 120  # an optimal teacher never loses
    assert info["losses"][-1] < 0.7 * info["losses"][0]
    assert (path / "sft_games.jsonl").is_file()
    assert json.loads((path / "done.json").read_text())["steps"] > 0


def test_sft_drops_lost_games(tmp_path: Path) -> None:
    from ttt_lab.train.sft import keep, teacher_games

    cfg = cfg_for(tmp_path, "train.sft.teacher_p_random=1.0", "train.sft.num_games=200")
    records = teacher_games(cfg)
    kept = keep(records, cfg)
    assert any(r.outcome == "loss" for r in records)
    assert kept and all(r.outcome in ("win", "draw") for r in kept)


class StopAt:
    """A trainer callback that interrupts training after `step` steps, like Ctrl-C."""

    def __new__(cls, step: int):
        from transformers import TrainerCallback

        class _Stop(TrainerCallback):
            def on_step_end(self, args, state, control, **kw):
                if state.global_step == step:
                    raise KeyboardInterrupt

        return _Stop()


def weights(path: Path) -> torch.Tensor:
    from transformers import AutoModelForCausalLM

    m = AutoModelForCausalLM.from_pretrained(path)
    return torch.cat([p.detach().flatten() for p in m.parameters()])


def test_grpo_step_changes_weights_and_rewards_arrive(sft_run: tuple[Path, dict], tmp_path: Path) -> None:
    from ttt_lab.train import grpo

    start = sft_run[0]
    cfg = cfg_for(tmp_path, "steps=1", "temperature=1.5")
    seen: dict[str, list] = {}
    original = grpo.reward_functions

    def spy(on_games):
        funcs = original(on_games)

        def wrap(f):
            def inner(completions, **kw):
                seen.setdefault(f.__name__, []).append(kw["game"])
                return f(completions, **kw)

            inner.__name__ = f.__name__
            return inner

        return [wrap(f) for f in funcs]

    grpo.reward_functions = spy
    games: list = []
    try:
        info = grpo.run_rl_phase(cfg, cfg.train.phases[0], 0, str(start), tmp_path / "rl", games=games)
    finally:
        grpo.reward_functions = original
    assert info["steps"] == 1
    assert set(seen) == {"outcome", "format", "invalid"}
    assert all(len(g[0]) == 16 for g in seen.values())
    assert len(games) == 16
    assert len({g.rewards.total for g in games}) > 1
    assert not torch.equal(weights(start), weights(tmp_path / "rl"))
    from ttt_lab.audit.checks import PASS
    from ttt_lab.audit.dataset import audit_dataset, read_saved
    from ttt_lab.train.phase_data import phase_dataset

    saved = read_saved(tmp_path / "rl" / "dataset.jsonl", cfg.dataset)
    assert saved.examples == phase_dataset(cfg, cfg.train.phases[0], 0, 1)
    assert saved.num_generations == cfg.train.phases[0].num_generations
    assert audit_dataset(saved, cfg.audit.dataset).check("batch_order").status == PASS


def test_rollout_func_groups_share_the_opponent(tiny_checkpoint: Path, tmp_path: Path) -> None:
    from ttt_lab.game.board import play
    from ttt_lab.train.grpo_rollout import make_rollout_func
    from ttt_lab.train.phase_data import phase_dataset

    cfg = cfg_for(tmp_path, "dataset.first_player=opponent", "dataset.p_min=0.5", "dataset.p_max=0.5")
    phase = cfg.train.phases[0]
    examples = phase_dataset(cfg, phase, 0, 1)
    model, tok = load_model(str(tiny_checkpoint), cfg)

    class Trainer:
        processing_class = tok

        class accelerator:
            @staticmethod
            def unwrap_model(m):
                return m

    Trainer.model = model
    out = make_rollout_func(cfg, phase, examples, 6)(["game 0"] * 4 + ["game 1"] * 4, Trainer)
    assert len(out["completion_ids"]) == 8 and len(out["env_mask"]) == 8
    for group in (out["game"][:4], out["game"][4:]):
        replies: dict[str, set] = {}
        for rec in group:
            board = "........."
            for by, cell in rec.moves:
                if by == "opponent":
                    replies.setdefault(board, set()).add(cell)
                board = play(board, cell)
        assert replies and all(len(v) == 1 for v in replies.values())


def test_interrupted_phase_resumes_from_its_checkpoint(tiny_checkpoint: Path, tmp_path: Path) -> None:
    from ttt_lab.train import grpo

    cfg = cfg_for(tmp_path, "steps=4")
    out = tmp_path / "rl"
    with pytest.raises(KeyboardInterrupt):
        grpo.run_rl_phase(cfg, cfg.train.phases[0], 0, str(tiny_checkpoint), out, callbacks=[StopAt(2)])
    assert not out.exists()
    assert list((tmp_path / "rl.work" / "trainer").glob("checkpoint-*"))
    info = grpo.run_rl_phase(cfg, cfg.train.phases[0], 0, str(tiny_checkpoint), out)
    assert info["resumed_from"] and info["resumed_from"].endswith(("checkpoint-2", "checkpoint-1"))
    assert info["steps"] == 4
    assert (out / "done.json").is_file()


def test_a_checkpoint_set_aside_is_passed_over_by_every_later_look(tmp_path: Path) -> None:
    """Seen in a 2-process resume: rank 0 set `checkpoint-3` aside, then rank 1's look read the
    folder `checkpoint-3.incomplete` as a step number and crashed; a second interruption would
    do the same to rank 0's next run."""
    import json

    from ttt_lab.train.checkpoints import last_checkpoint

    for step, files in ((2, ("model.safetensors", "optimizer.pt", "scheduler.pt")), (3, ("model.safetensors",))):
        cp = tmp_path / f"checkpoint-{step}"
        cp.mkdir()
        (cp / "trainer_state.json").write_text(json.dumps({"global_step": step}))
        for name in files:
            (cp / name).write_bytes(b"")
    said: list[str] = []
    assert last_checkpoint(tmp_path, said.append) == tmp_path / "checkpoint-2"
    assert (tmp_path / "checkpoint-3.incomplete").is_dir() and len(said) == 1
    assert last_checkpoint(tmp_path, said.append) == tmp_path / "checkpoint-2" and len(said) == 1


def test_resume_skips_a_checkpoint_whose_save_was_cut_short(tiny_checkpoint: Path, tmp_path: Path) -> None:
    """A kill or a full disk during a save leaves a checkpoint without its optimizer or with a
    truncated trainer state: the phase resumes from the complete one before it, or restarts."""
    import shutil

    from ttt_lab.train import grpo

    cfg = cfg_for(tmp_path, "steps=4")
    out, trainer = tmp_path / "rl", tmp_path / "rl.work" / "trainer"
    with pytest.raises(KeyboardInterrupt):
        grpo.run_rl_phase(cfg, cfg.train.phases[0], 0, str(tiny_checkpoint), out, callbacks=[StopAt(2)])
    (good,) = trainer.glob("checkpoint-*")
    cut = trainer / "checkpoint-3"
    shutil.copytree(good, cut)
    (cut / "optimizer.pt").unlink()
    said: list[str] = []
    info = grpo.run_rl_phase(cfg, cfg.train.phases[0], 0, str(tiny_checkpoint), out, say=said.append)
    assert info["resumed_from"].endswith(good.name) and info["steps"] == 4
    assert len(said) == 1 and "checkpoint-3 is incomplete" in said[0]

    shutil.rmtree(out)
    with pytest.raises(KeyboardInterrupt):
        grpo.run_rl_phase(cfg, cfg.train.phases[0], 0, str(tiny_checkpoint), out, callbacks=[StopAt(2)])
    for cp in trainer.glob("checkpoint-*"):
        state = cp / "trainer_state.json"
        state.write_text(state.read_text()[:10])  # a save cut off mid-write
    info = grpo.run_rl_phase(cfg, cfg.train.phases[0], 0, str(tiny_checkpoint), out, say=said.append)
    assert info["resumed_from"] is None and info["steps"] == 4 and "restarting the phase" in said[-1]


def test_bad_training_input_fails_before_work(tiny_checkpoint: Path, tmp_path: Path) -> None:
    with pytest.raises(InvalidSetting, match="multiple of"):
        load(["batch_size=10", "num_generations=4"])
    cfg = cfg_for(tmp_path)
    with pytest.raises(TrainError, match="cannot load the model"):
        load_model(str(tmp_path / "missing"), cfg)
    with pytest.raises(TrainError, match="too small for a move"):
        load_model(str(tiny_checkpoint), cfg_for(tmp_path, "player.max_new_tokens=1"))  # the move and its end
    with pytest.raises(TrainError, match="no CUDA device"):
        check_device(cfg_for(tmp_path, "model.device=cuda"))
    with pytest.raises(TrainError, match="use_vllm"):
        check_vllm(cfg_for(tmp_path, "train.use_vllm=true"))
    from transformers import AutoTokenizer

    bare = tmp_path / "no-template"
    import shutil

    shutil.copytree(tiny_checkpoint, bare)
    tok = AutoTokenizer.from_pretrained(bare)
    tok.chat_template = None
    tok.save_pretrained(bare)
    for f in bare.glob("*.jinja"):
        f.unlink()
    with pytest.raises(TrainError, match="no chat template"):
        load_model(str(bare), cfg)


def test_gradient_checkpointing_only_trades_memory_for_compute(tiny_checkpoint: Path, tmp_path: Path,
                                                               monkeypatch: pytest.MonkeyPatch) -> None:
    """Off by default (TRL's SFT turns it on); on or off, SFT writes the same weights."""
    import trl

    from ttt_lab.train.sft import run_sft

    seen = []
    real = trl.SFTTrainer.__init__

    def spy(self, *a, **kw):
        seen.append(kw["args"].gradient_checkpointing)
        real(self, *a, **kw)

    monkeypatch.setattr(trl.SFTTrainer, "__init__", spy)
    assert cfg_for(tmp_path).train.gradient_checkpointing is False
    out = {}
    for flag in ("true", "false"):
        cfg = cfg_for(tmp_path / flag, "train.sft.num_games=40", "train.sft.epochs=1",
                      f"train.gradient_checkpointing={flag}")
        run_sft(cfg, str(tiny_checkpoint), tmp_path / flag / "sft")
        out[flag] = weights(tmp_path / flag / "sft")
    assert seen == [True, False]
    assert torch.equal(out["true"], out["false"])


def test_the_sft_teacher_plays_the_moves_its_scoring_names(tmp_path: Path) -> None:
    """`train.sft.teacher_scoring=exploit`: every teacher move is one of those that beat random play most
    often, and the teacher wins more of its games than the value-scoring teacher on the same examples."""
    from tests.game.replay import model_moves
    from ttt_lab.game.solver import exploiting
    from ttt_lab.train.sft import teacher_games

    def games(scoring: str) -> list:
        return teacher_games(cfg_for(tmp_path, f"train.sft.teacher_scoring={scoring}", "train.sft.num_games=300"))

    exploit, value = games("exploit"), games("value")
    best = exploiting()
    assert all(cell in best[state] for r in exploit for state, cell in model_moves(r))
    assert sum(r.outcome == "win" for r in exploit) > sum(r.outcome == "win" for r in value)


def test_teacher_trees_join_the_sampled_games(tmp_path: Path) -> None:
    """`train.sft.teacher_trees`: each tree is every game the teacher plays against every reply (both
    sides, no loss among them), after the sampled games; the trees' tie-breaks differ."""
    from ttt_lab.env.tree import play_tree
    from ttt_lab.players.scripted import minimax_player
    from ttt_lab.train.sft import teacher_games

    cfg = cfg_for(tmp_path, "train.sft.teacher_scoring=exploit", "train.sft.num_games=0", "train.sft.teacher_trees=2")
    trees = teacher_games(cfg)
    one = play_tree(minimax_player(scoring="exploit", think=False), cfg.env)
    assert len(trees) > len(one) and all(r.outcome != "loss" for r in trees)
    assert {r.example.seed for r in trees} != {0} and len({r.example.seed for r in trees}) == 2
    mixed = teacher_games(cfg_for(tmp_path, "train.sft.num_games=20", "train.sft.teacher_trees=1"))
    assert len(mixed) > 20 and all(r.example.stratum >= 0 for r in mixed[:20])


def test_a_warm_up_with_no_games_and_no_trees_is_refused() -> None:
    with pytest.raises(InvalidSetting, match=r"train\.sft\.num_games.*teacher_trees"):
        load(["train.sft.num_games=0", "train.sft.teacher_trees=0"])
    load(["train.sft.num_games=0", "train.sft.enabled=false"])


def test_the_warm_up_shows_each_optimizer_step_with_its_loss(tiny_checkpoint: Path, tmp_path: Path) -> None:
    """Where there is no terminal for the bar, one line per SFT step, with the loss logged at it."""
    import logging

    from ttt_lab.train.sft import run_sft

    lines: list[str] = []

    class Keep(logging.Handler):  # on ttt-lab's logger itself: another test may have stopped its propagation
        def emit(self, record: logging.LogRecord) -> None:
            lines.append(record.getMessage())

    logger, keep = logging.getLogger("ttt_lab"), Keep(logging.INFO)
    level = logger.level
    logger.addHandler(keep)
    logger.setLevel(logging.INFO)
    try:
        cfg = cfg_for(tmp_path, "train.sft.num_games=40", "train.sft.epochs=1", "train.sft.logging_steps=1")
        info = run_sft(cfg, str(tiny_checkpoint), tmp_path / "sft")
    finally:
        logger.removeHandler(keep)
        logger.setLevel(level)
    steps = [x for x in lines if x.startswith("SFT warm-up step")]
    assert len(steps) == info["steps"] >= 2
    assert [float(x.rsplit("loss ", 1)[1]) for x in steps] == pytest.approx(info["losses"], abs=5e-4)


def test_a_warm_up_in_smaller_passes_makes_the_same_update(tiny_checkpoint: Path, tmp_path: Path) -> None:
    """train.micro_batch_size splits an SFT update into passes whose gradients accumulate: the
    weights it writes differ from one pass's by float rounding only, far below the update itself."""
    from ttt_lab.train.sft import run_sft

    out = {}
    for micro in (16, 4):
        cfg = cfg_for(tmp_path / str(micro), "train.sft.num_games=32", "train.sft.epochs=1",
                      f"train.micro_batch_size={micro}")
        run_sft(cfg, str(tiny_checkpoint), tmp_path / str(micro) / "sft")
        out[micro] = weights(tmp_path / str(micro) / "sft")
    update = (out[16] - weights(tiny_checkpoint)).norm()
    assert update > 0
    assert (out[4] - out[16]).norm() < 1e-3 * update
