"""The lean warm-up (`train.sft.loop=lean`): epochs over the teacher's games with ttt-lab's own
loop (`sft_lean`), the teacher-forced accuracy on the optimal opponent's positions after each
epoch, then DAgger rounds: the model's greedy games against the optimal opponent (and the
teacher's opponent strengths), each reply outside the teacher's best moves relabelled with the
teacher's move, and passes over those mistakes plus the optimal lines."""

from __future__ import annotations

import functools
import time
from collections.abc import Callable, Sequence

from ttt_lab import log
from ttt_lab.config.schema import Config, warm_up_seed
from ttt_lab.config.sft_schema import SftConfig
from ttt_lab.env.record import GameRecord
from ttt_lab.env.settings import DatasetConfig
from ttt_lab.game.seeding import derive_seed
from ttt_lab.game.solver import table
from ttt_lab.train.dagger_tree import examples, forget_examples
from ttt_lab.train.exploiter import meets_goal
from ttt_lab.train.runtime import Runtime
from ttt_lab.train.sft_lean import Encoded, LeanSFT, Schedule, accuracy, encode
from ttt_lab.train.teacher import covering_games, decisions

LOG = log.get("train")
DAGGER_SALT = 0xDA6


def digit_tokens(tokenizer, think: bool = False) -> dict[int, int]:
    """Token id -> cell of the move digit in the reply `<move>N</move>` (the token where the
    nine replies differ)."""
    replies = [tokenizer.encode(f"<move>{c}</move>", add_special_tokens=False) for c in range(9)]
    if len({len(r) for r in replies}) != 1:
        raise ValueError("the move digits do not tokenize alike; the diagnostic cannot find them")
    at = next(j for j in range(len(replies[0])) if len({r[j] for r in replies}) == 9)
    return {r[at]: c for c, r in enumerate(replies)}


class Diagnostic:
    """Teacher-forced accuracy on every position the optimal opponent can lead the teacher to,
    each position read once (a greedy cover of the teacher's optimal lines)."""

    def __init__(self, cfg: Config, tokenizer) -> None:
        from ttt_lab.train.teacher_data import lines_of

        think = cfg.env.think
        games = covering_games(lines_of(cfg), think)
        t, seen = table(), set()
        self.optimal: list[list[set[int] | None]] = []
        for r in games:
            row: list[set[int] | None] = []
            for d in decisions(r, think):
                row.append(None if d.state in seen else set(t.optimal[d.state]))
                seen.add(d.state)
            self.optimal.append(row)
        self.positions = len(seen)
        self.games = [encode(tokenizer, r.messages) for r in games]
        self.digits = digit_tokens(tokenizer)

    def __call__(self, model, bf16: bool) -> dict[str, float]:
        return accuracy(model, self.games, self.digits, self.optimal, bf16=bf16)


def dagger_games(cfg: Config, round_: int) -> list:
    """A round's sampled games: `dagger_games` split evenly over the teacher's strengths other
    than 0 (the optimal opponent's lines are walked exactly instead), each half moving first."""
    from ttt_lab.env.dataset import make_dataset

    s = cfg.train.sft
    strengths = [p for p in s.teacher_strengths if p > 0.0]
    out = []
    for i, p in enumerate(strengths):
        n = s.dagger_games // len(strengths) + (i < s.dagger_games % len(strengths))
        if n:
            ds = DatasetConfig(size=n, p_min=p, p_max=p, num_strata=1, examples_per_batch=n, first_player="alternate",
                               model_symbol=cfg.dataset.model_symbol)
            out += make_dataset(ds, derive_seed(warm_up_seed(cfg), DAGGER_SALT + 97 * round_ + i))
    return out


def exact_vs_optimal(model, tokenizer, cfg: Config, runtime: Runtime):
    """The greedy policy's every line against the optimal opponent (`optimal_walk`)."""
    from ttt_lab.train.optimal_walk import walk

    symbol = cfg.dataset.model_symbol if cfg.dataset.model_symbol in ("X", "O") else "X"
    return walk(model, tokenizer, cfg.env, bf16=runtime.bf16, max_new_tokens=cfg.player.max_new_tokens,
                model_symbol=symbol)


def relabel(records: Sequence[GameRecord], tokenizer, player, cfg: Config) -> tuple[list[Encoded], dict[str, float]]:
    """Each reply outside the teacher's best moves (`train.sft.dagger_mistakes`) or invalid as one
    example: the conversation
    up to it, then the teacher's reply, the loss on that reply only (with `train.sft.dagger_all`,
    the right replies too, as played); the mistakes first."""
    positions = [(r.messages[: d.message], d.state, d.cell) for r in records for d in decisions(r, cfg.env.think)]
    out, corrections, wrong = examples(positions, tokenizer, player, cfg)
    return out, {"turns": len(positions), "mistakes": wrong, "corrections": corrections}


def run_lean(cfg: Config, kept: Sequence[GameRecord], model, tokenizer, runtime: Runtime, player,
             on_step: Callable[[int, float], None] | None = None) -> dict:
    """Train `model` in place; the summary (losses, the accuracy curve, DAgger rounds)."""
    s = cfg.train.sft
    micro = s.micro_batch_size or cfg.train.micro_batch_size
    loop = LeanSFT(model, tokenizer, learning_rate=s.learning_rate, batch_size=s.batch_size, micro_batch_size=micro,
                   bf16=runtime.bf16, seed=warm_up_seed(cfg), head=s.head, share_prefix=s.share_prefix,
                   pack_tokens=s.pack_tokens, order=s.order, attention=s.attention)
    start = time.perf_counter()
    diag = Diagnostic(cfg, tokenizer)
    curve: list[dict] = []

    def measure(label: str) -> None:
        t = time.perf_counter()
        acc = diag(model, runtime.bf16)
        curve.append({"after": label, "step": loop.step, "seconds": round(time.perf_counter() - start, 1),
                      "train_seconds": round(loop.seconds, 1), "tokens": loop.tokens,
                      "move": acc["move"], "optimal": acc["optimal"], "reply": acc["reply"]})
        LOG.info(f"SFT {label}: teacher-forced on the optimal opponent's {diag.positions} positions: move "
                 f"{acc['move']:.1%}, value-keeping {acc['optimal']:.1%}, whole reply {acc['reply']:.1%} "
                 f"(step {loop.step}, {curve[-1]['seconds']:.0f} s, {loop.tokens / max(loop.seconds, 1e-9):.0f} "
                 f"tokens/s training; measured in {time.perf_counter() - t:.0f} s)")

    measure("start")
    data = [encode(tokenizer, r.messages, every_token=not s.assistant_only_loss) for r in kept]
    losses = loop.fit(data, s.epochs, Schedule(s.lr_scheduler, s.warmup_steps), on_step=on_step,
                      on_epoch=lambda e: measure(f"epoch {e + 1}"))
    rounds: list[dict] = []
    rows = Rows(cfg, model, tokenizer, runtime, loop, start)
    if s.dagger_rounds:
        losses += _dagger(cfg, loop, model, tokenizer, runtime, player, measure, rows, rounds, on_step)
        forget_examples()
    return {"losses": losses, "steps": loop.step, "accuracy": curve, "dagger": rounds,
            "train_seconds": round(loop.seconds, 1), "train_tokens": loop.tokens, "positions": diag.positions}


class Rows:
    """The DAgger rounds' rows: the exact rates against the optimal opponent, from a walk of its
    lines (`walk`) or read off a whole-tree walk, which holds those lines (`tree`)."""

    def __init__(self, cfg: Config, model, tokenizer, runtime: Runtime, loop: LeanSFT, start: float) -> None:
        self.cfg, self.model, self.tokenizer, self.runtime = cfg, model, tokenizer, runtime
        self.loop, self.start = loop, start

    def _head(self, label: str, began: float) -> dict:
        return self.now(label) | {"walk_seconds": round(time.perf_counter() - began, 1)}

    def now(self, label: str) -> dict:
        """`label` at the step and the time of the warm-up now."""
        return {"after": label, "step": self.loop.step, "seconds": round(time.perf_counter() - self.start, 1)}

    def walk(self, label: str) -> tuple[dict, list[GameRecord]]:
        """Every line of the optimal opponent walked: the row, and the lines' records."""
        t = time.perf_counter()
        w = exact_vs_optimal(self.model, self.tokenizer, self.cfg, self.runtime)
        row = {**self._head(label, t), **{f"optimal_{k}": round(v, 4) for k, v in w.rates().items()},
               **{f"optimal_{k}_second": round(v, 4) for k, v in w.rates(False).items()},
               "replays_left": w.replays_left, "unwalked": w.unwalked}
        LOG.info(f"SFT {label}: exact against the optimal opponent ({row['optimal_lines']:.0f} lines a side on "
                 f"average): W/D/L {w.rates()['win']:.1%}/{w.rates()['draw']:.1%}/{w.rates()['loss']:.1%}, "
                 f"moving second {w.rates(False)['draw']:.1%} draws, invalid lines {w.rates()['invalid']:.1%} "
                 f"(walked in {row['walk_seconds']:.0f} s"
                 + (f"; {w.replays_left} replays left their line, {w.unwalked} lines unwalked" if w.replays_left
                    else "") + ")")
        return row, w.records

    def tree(self, label: str, counts: dict[str, float], began: float) -> dict:
        """The row of a whole-tree walk begun at `began` (`tree_relabel`'s `counts`)."""
        row = {**self._head(label, began), **{f"optimal_{k}": round(counts[f"tree_optimal_{k}"], 4)
                                             for k in ("win", "draw", "loss", "draw_second")}}
        LOG.info(f"SFT {label}: exact over the whole tree ({counts['turns']:.0f} replies): against the optimal "
                 f"opponent W/D/L {row['optimal_win']:.1%}/{row['optimal_draw']:.1%}/{row['optimal_loss']:.1%}, "
                 f"moving second {row['optimal_draw_second']:.1%} draws; against random "
                 f"{counts['random_win']:.1%}/{counts['random_draw']:.1%}/{counts['random_loss']:.1%}; "
                 f"{counts['invalid_lines']:.0f} lines with an invalid reply (walked in {row['walk_seconds']:.0f} s)")
        return row


def _dagger(cfg: Config, loop: LeanSFT, model, tokenizer, runtime: Runtime, player, measure: Callable[[str], None],
            rows: Rows, rounds: list[dict], on_step: Callable[[int, float], None] | None) -> list[float]:
    """`train.sft.dagger_rounds` rounds: the greedy policy's games (every optimal-opponent line and
    `dagger_games` more, or its whole tree) relabelled by the solver, trained on with the teacher's
    lines (unless `dagger_lines` is off; with `dagger_all`: the latest walk's every position and,
    by `dagger_pool`, the earlier corrections, no lines); each round's row appended to `rounds`;
    the losses."""
    from ttt_lab.train.dagger_tree import KeepBest, levels_met
    from ttt_lab.train.teacher_data import teacher_lines

    s = cfg.train.sft
    losses: list[float] = []
    # the walk holds the optimal opponent's positions as the policy plays them; the teacher's lines
    # would pull its right replies to the teacher's tie-breaks
    lines = [] if s.dagger_all or not s.dagger_lines else [encode(tokenizer, r.messages) for r in teacher_lines(cfg)]
    pool: list[Encoded] = []
    fixes: list[Encoded] = []
    keep = KeepBest(model, s.dagger_tree and s.dagger_keep_best)
    for k in range(s.dagger_rounds):
        label, t = f"DAgger {k + 1} start", time.perf_counter()
        row, records = ({}, []) if s.dagger_tree else rows.walk(label)
        new, counts, where = _relabelled(cfg, k, model, tokenizer, runtime, player, records)
        if s.dagger_tree:  # the tree holds the optimal opponent's lines: its row is read off it
            row = rows.tree(label, counts, t)
        keep.offer(label, counts, row)
        wrong = new[: int(counts["corrections"])]
        earlier = fixes if s.dagger_pool == "all" else []
        if s.dagger_all:  # the latest walk's every position, and the corrections of the rounds before
            pool = new + earlier + (wrong + earlier) * (s.dagger_mistake_weight - 1)
        else:
            pool = earlier + new * s.dagger_mistake_weight
        latest = new + wrong * (s.dagger_mistake_weight - 1) if s.dagger_all else new * s.dagger_mistake_weight
        passes = _passes(s, pool, latest, lines)
        fixes += wrong if s.dagger_all else new * s.dagger_mistake_weight
        row |= {"round": k + 1, **counts, "pool": len(pool), "play_seconds": round(time.perf_counter() - t, 1)}
        LOG.info(f"DAgger round {k + 1}: {counts['mistakes']} of {counts['turns']} greedy replies wrong "
                 f"({where}; {counts['corrections']} examples, pool {len(pool)}; {row['play_seconds']:.0f} s)")
        if s.dagger_tree and (ended := _clean(counts, cfg)):
            if levels_met(counts, s.dagger_until):  # those weights end the warm-up, whatever else ended it
                keep.take_last()
            LOG.info(f"DAgger round {k + 1}: {ended}; the rounds end")
            kept = _kept(keep)
            if kept in ("", label):
                rounds.append(row | {"after": "DAgger end", "kept": kept})
            else:  # an earlier walk lost less: its weights and rates end the warm-up
                rounds += [row, _kept_row(keep, kept, rows)]
            return losses
        rounds.append(row)
        if pool:
            rate = Schedule(s.dagger_lr_scheduler or s.lr_scheduler, 0, s.dagger_learning_rate, s.dagger_order,
                            s.dagger_frozen_context, s.dagger_frozen_prompt, s.dagger_context_once)
            losses += loop.fit_passes(passes, rate, on_step=on_step,
                                      on_epoch=functools.partial(_epoch_done, measure, f"DAgger {k + 1}"))
    rounds += _end_rows(cfg, model, tokenizer, runtime, player, rows, keep)
    return losses


def _passes(s: SftConfig, pool: list[Encoded], latest: list[Encoded], lines: list[Encoded]) -> list[list[Encoded]]:
    """A round's passes: `dagger_epochs` over the pool and the lines, or with `dagger_replay_passes`
    the first that many over them and the rest over this round's own corrections and the lines."""
    replay = s.dagger_epochs if s.dagger_replay_passes is None else min(s.dagger_replay_passes, s.dagger_epochs)
    passes = [pool + lines] * replay + [latest + lines] * (s.dagger_epochs - replay)
    return [p for p in passes if p]  # a round with nothing of its own (and no lines) replays the pool alone


def _end_rows(cfg: Config, model, tokenizer, runtime: Runtime, player, rows: Rows, keep) -> list[dict]:
    """The rows after the last passes: with `dagger_keep_best`, their whole-tree walk, then the kept
    weights' row (read, not walked again); else a walk of the optimal opponent's lines."""
    from ttt_lab.train.dagger_tree import tree_relabel

    if not keep.enabled:
        return [rows.walk("DAgger end")[0]]
    t = time.perf_counter()
    counts = tree_relabel(model, tokenizer, cfg, player, bf16=runtime.bf16)[1]
    last = rows.tree("DAgger last passes", counts, t) | counts
    keep.offer("DAgger end", counts, last)
    return [last, _kept_row(keep, _kept(keep), rows)]


RATES = ("optimal_", "tree_optimal_", "random_", "exploitability", "invalid_lines")
"""The keys of a walk's row that describe its weights (the rest describe its round)."""


def _kept_row(keep, kept: str, rows: Rows) -> dict:
    """The end's row: the rates of the weights kept, at the end's step and time."""
    rates = {k: v for k, v in keep.rows[kept].items() if k.startswith(RATES)}
    return rates | rows.now("DAgger end") | {"kept": kept}


def _kept(keep) -> str:
    """Restore the best walked weights (`train.sft.dagger_keep_best`); which ones, logged."""
    label = keep.restore()
    if keep.enabled:
        LOG.info(f"DAgger: the warm-up keeps the weights walked at {label} (the fewest exact losses)")
    return label


def _relabelled(cfg: Config, k: int, model, tokenizer, runtime: Runtime, player, records: list[GameRecord]
                ) -> tuple[list[Encoded], dict[str, float], str]:
    """Round `k`'s relabelled replies (the corrections first), their counts, and where they came from:
    the whole tree (`dagger_tree`), or the optimal opponent's lines in `records` and sampled games."""
    import torch

    from ttt_lab.engine.generation import Sampling
    from ttt_lab.engine.rollout import play_rollouts
    from ttt_lab.game.opponents import MinimaxOpponent
    from ttt_lab.train.dagger_tree import tree_relabel

    if cfg.train.sft.dagger_tree:
        new, counts = tree_relabel(model, tokenizer, cfg, player, bf16=runtime.bf16)
        return new, counts, (f"its whole tree; exact against random W/D/L {counts['random_win']:.1%}/"
                             f"{counts['random_draw']:.1%}/{counts['random_loss']:.1%}, against the optimal "
                             f"opponent {counts['tree_optimal_draw']:.1%} draws, exploitability "
                             f"{counts['exploitability']:.1%}")
    examples = dagger_games(cfg, k)
    if examples:
        sampling = Sampling(0.0, cfg.player.max_new_tokens, runtime.bf16)
        rollouts = play_rollouts(model, tokenizer, examples, cfg.env, MinimaxOpponent(tie_break="random"),
                                 sampling, generator=torch.Generator().manual_seed(warm_up_seed(cfg) + k))
        records = records + [ro.record for ro in rollouts if ro.record is not None]
    new, counts = relabel(records, tokenizer, player, cfg)
    return new, counts, f"the optimal opponent's lines and {len(examples)} games"


def _epoch_done(measure: Callable[[str], None], label: str, epoch: int) -> None:
    measure(f"{label} epoch {epoch + 1}")


def _clean(counts: dict[str, float], cfg: Config) -> str:
    """Why a whole-tree walk ends the rounds ('' when it does not): nothing to correct or the goal
    the RL phase stops at (`opponent.stop_at_wins`) already held, where later rounds can only
    unlearn; or every level of `train.sft.dagger_until` met, where the run asks no more."""
    from ttt_lab.train.dagger_tree import levels_met

    if not counts["mistakes"]:
        return "nothing to correct anywhere in the tree"
    if meets_goal(counts["exploitability"], int(counts["invalid_lines"]), counts["random_win"],
                  cfg.opponent.stop_at_wins):
        return (f"the tree already meets opponent.stop_at_wins (exploitability 0, no invalid reply, "
                f"{counts['random_win']:.2%} wins against random play)")
    if met := levels_met(counts, cfg.train.sft.dagger_until):
        return f"the walk meets train.sft.dagger_until: {met}"
    return ""
