"""DAgger over the greedy policy's whole tree (`train.sft.dagger_tree`): every position any opponent
can lead the policy to, each asked once through the batched engine (`env.exact.expand_tree`), its
reply relabelled with the teacher's move when it is outside the teacher's best moves; and the
tree's exact W/D/L against the random opponent and its best response, read off the same walk."""

from __future__ import annotations

import functools
import math
import statistics
from collections.abc import Iterable, Mapping, Sequence

from ttt_lab.config.schema import Config, SuiteEntry
from ttt_lab.config.sft_schema import DaggerUntil
from ttt_lab.env.episode import Turn
from ttt_lab.env.parser import parse
from ttt_lab.game.solver import candidates, table
from ttt_lab.train.sft_lean import Encoded, encode
from ttt_lab.train.teacher import teacher_cell


class Asked:
    """A policy that keeps every conversation it was asked about, with its reply."""

    def __init__(self, inner) -> None:
        self.inner = inner
        self.asked: list[tuple[list[dict[str, str]], str, str]] = []

    def distributions(self, turns: Sequence[Turn]) -> list[list[tuple[str, float]]]:
        got = self.inner.distributions(turns)
        self.asked += [(list(t.messages), t.board, g[0][0]) for t, g in zip(turns, got, strict=True)]
        return got


def mistakes(asked: Sequence[tuple[list[dict[str, str]], str, str]], tokenizer, player, cfg: Config,
             reach: Mapping[int, float] | None = None) -> tuple[list[Encoded], int, int]:
    """Each asked reply outside the teacher's best moves (with `train.sft.dagger_mistakes=value`:
    that loses the position's value), or invalid, as one example: the
    conversation, then the teacher's reply, the loss on that reply only; with
    `train.sft.dagger_all`, the right replies too, as played (replayed). The examples, corrections
    first, the number of corrections (a mistake's copies counted: `reach_copies`) and of mistakes."""
    t, think = table(), cfg.env.think
    positions = []
    for messages, board, reply in asked:
        p = parse(reply, board, think)
        positions.append((messages, t.state(board), p.cell if p.valid else None))
    return examples(positions, tokenizer, player, cfg, reach)


def examples(positions: Iterable[tuple[Sequence[dict[str, str]], int, int | None]], tokenizer, player, cfg: Config,
             reach: Mapping[int, float] | None = None) -> tuple[list[Encoded], int, int]:
    """(conversation, state, the policy's cell or None when invalid) -> `mistakes`' examples."""
    best = table().optimal if cfg.train.sft.dagger_mistakes == "value" else candidates(cfg.train.sft.teacher_scoring)
    wrong, kept = [], []
    for messages, state, cell in positions:
        if cell is None or cell not in best[state]:
            wrong.append((messages, state))
        elif cfg.train.sft.dagger_all:
            kept.append(corrected(messages, state, tokenizer, player, cell))
    trained = wrong if cfg.train.sft.dagger_below_mistakes else first_mistakes(wrong)
    copies = reach_copies([state for _, state in trained], reach, cfg.train.sft.dagger_reach_cap)
    fixed = [e for (messages, state), k in zip(trained, copies, strict=True)
             for e in [corrected(messages, state, tokenizer, player)] * k]
    return fixed + kept, len(fixed), len(wrong)


def first_mistakes(wrong: Sequence[tuple[Sequence[dict[str, str]], int]]) -> list[tuple[Sequence[dict[str, str]], int]]:
    """The mistakes whose conversation passes through no other of `wrong`'s: once a line's first
    mistake is relabelled the policy no longer reaches the positions below it, so their
    corrections would train on positions no opponent meets (the next walk finds what the new
    reply leads to)."""
    keys = [tuple(m["content"] for m in messages) for messages, _ in wrong]
    asked = set(keys)
    return [(messages, state) for (messages, state), key in zip(wrong, keys, strict=True)
            if not any(m["role"] == "assistant" and key[:k] in asked for k, m in enumerate(messages))]


def reach_copies(states: Sequence[int], reach: Mapping[int, float] | None, cap: int) -> list[int]:
    """Copies of the mistake at each of `states`: its position's reach over the median mistake's,
    rounded, between 1 and `cap` (all 1 without `reach`): a mistake the evaluation's opponents
    meet ten times as often as the typical one is trained on up to ten times as often."""
    if reach is None or cap <= 1:
        return [1] * len(states)
    r = [reach.get(s, 0.0) for s in states]
    positive = [x for x in r if x > 0.0]
    if not positive:
        return [1] * len(states)
    mid = statistics.median(positive)
    # the ratio is capped before rounding: a subnormal median makes it overflow to infinity
    return [max(1, math.floor(min(float(cap), x / mid) + 0.5)) for x in r]


def corrected(messages: Sequence[dict[str, str]], state: int, tokenizer, player, cell: int | None = None
              ) -> Encoded:
    """The conversation up to a model turn at `state`, then the teacher's reply (or `cell`'s: a
    right reply kept as the policy played it, not moved to another of the teacher's tie-breaks);
    the loss on that reply only (DAgger's example, whichever walk found it)."""
    cell = teacher_cell(player, state) if cell is None else cell
    return _encoded(tokenizer, tuple((m["role"], m["content"]) for m in messages), player.reply_text(cell))


def forget_examples() -> None:
    """Drop the kept examples (and the tokenizer they hold) once a warm-up is done."""
    _encoded.cache_clear()


@functools.lru_cache(maxsize=16384)
def _encoded(tokenizer, conversation: tuple[tuple[str, str], ...], reply: str) -> Encoded:
    """`corrected`'s example, kept: a position recurs in every round whose walk reaches it."""
    msgs = [{"role": r, "content": c} for r, c in conversation] + [{"role": "assistant", "content": reply}]
    flags = [False] * sum(r == "assistant" for r, _ in conversation) + [True]
    return encode(tokenizer, msgs, flags)


def tree_relabel(model, tokenizer, cfg: Config, player, *, bf16: bool = False
                 ) -> tuple[list[Encoded], dict[str, float]]:
    """The greedy policy's every-reply tree: its mistakes relabelled (weighted by reach with
    `train.sft.dagger_reach_cap`), and its exact rates (those the exploiter's refresh reads). The
    tree is kept for the later walks of the same weights (the warm-up's evaluation and the RL
    phase's first refresh, when the rounds end with it). `bf16`: the policy as the training's bf16
    autocast computes it, walked (on a CPU) through a bf16 copy of the weights, as rollouts are."""
    from ttt_lab.engine.greedy import release_memory
    from ttt_lab.engine.rollout import generation_model
    from ttt_lab.env.exact import Tree, evaluate_tree, expand_tree
    from ttt_lab.env.exploit import exploitability, invalid_lines, position_reach
    from ttt_lab.evaluation.suite import entries
    from ttt_lab.evaluation.trees import opponent_distribution, remember, starts, suite_bound
    from ttt_lab.train.evaluate import greedy_policy

    was_training = model.training
    release_memory()
    try:
        walker, cast = generation_model(model, bf16)
        policy = Asked(greedy_policy(walker, tokenizer, cfg, bf16=cast))
        tree = expand_tree(policy, cfg.env, starts(cfg))
        remember(greedy_policy(model, tokenizer, cfg, bf16=bf16), cfg, tree)  # under the training's weights
    finally:
        model.train(was_training)
    vs_random = evaluate_tree(tree, opponent_distribution(SuiteEntry("random", opponent="random")))
    vs_optimal = evaluate_tree(tree, opponent_distribution(SuiteEntry()))
    second = Tree(tuple(r for r in tree.roots if not r.model_first), tree.model_turns)
    second_draw = evaluate_tree(second, opponent_distribution(SuiteEntry())).draw / sum(r.weight for r in second.roots)
    # how likely the evaluation's opponents (the largest probability any of them gives a reply) lead
    # the policy to each position: the weight of its mistakes there (`train.sft.dagger_reach_cap`)
    weights = position_reach(tree, suite_bound(entries(cfg))) if cfg.train.sft.dagger_reach_cap > 1 else None
    out, corrections, wrong = mistakes(policy.asked, tokenizer, player, cfg, weights)
    return out, {"turns": len(policy.asked), "mistakes": wrong, "corrections": corrections,
                 "invalid_lines": invalid_lines(tree),
                 "random_win": vs_random.win, "random_draw": vs_random.draw, "random_loss": vs_random.loss,
                 "tree_optimal_win": vs_optimal.win, "tree_optimal_draw": vs_optimal.draw,
                 "tree_optimal_loss": vs_optimal.loss, "tree_optimal_draw_second": second_draw,
                 "random_invalid": _invalid("random", vs_random),
                 "tree_optimal_invalid": _invalid("optimal", vs_optimal),
                 "exploitability": exploitability(tree).loss}


def _invalid(opponent: str, totals) -> float:
    """Invalid replies per model message, the exact evaluation's own rate (rounded as the tree's
    outcome rates are, so a level met exactly is met)."""
    from ttt_lab.evaluation.exact import ExactSummary

    return round(ExactSummary(opponent, totals).invalid_rate, 12)


def levels_met(counts: Mapping[str, float], until: DaggerUntil) -> str:
    """The levels of `until` that a walk's `counts` meet, in words, when they meet every one set;
    '' when one is missed or none is set (`train.sft.dagger_until`)."""
    checks = [(until.min_optimal_draw, "tree_optimal_draw", 1, "draws against the optimal opponent"),
              (until.min_random_win, "random_win", 1, "wins against random"),
              (until.max_random_loss, "random_loss", -1, "losses against random"),
              (until.max_invalid, "invalid", -1, "invalid replies")]
    asked = [(level, _rate(counts, key), sign, what) for level, key, sign, what in checks if level is not None]
    if not asked or any(sign * (value - level) < 0 for level, value, sign, _ in asked):
        return ""
    return ", ".join(f"{value:.2%} {what} ({'>=' if sign > 0 else '<='} {level:.2%})"
                     for level, value, sign, what in asked)


def _rate(counts: Mapping[str, float], key: str) -> float:
    """A walk's rate; `invalid`, the larger of its shares against the two opponents."""
    if key == "invalid":
        return max(counts["random_invalid"], counts["tree_optimal_invalid"])
    return counts[key]


class KeepBest:
    """With `train.sft.dagger_keep_best`: the weights of the walked round that lost least (the exact
    losses against random play and against the optimal opponent, summed; more wins against random
    break a tie), so a last round that unlearns more than it corrects does not end the warm-up."""

    def __init__(self, model, enabled: bool) -> None:
        self.model, self.enabled = model, enabled
        self.best: tuple[float, float] | None = None
        self.label = ""
        self.state: dict | None = None
        self.last_best = True
        self.rows: dict[str, dict] = {}
        """Each walked label's row (the kept weights' row is the warm-up's end row)."""

    def offer(self, label: str, counts: dict[str, float], row: dict | None = None) -> None:
        """The weights as they are now, walked under `label` with the rates `counts` (and `row`)."""
        if not self.enabled:
            return
        self.rows[label] = row if row is not None else dict(counts)
        score = (counts["random_loss"] + counts["tree_optimal_loss"], -counts["random_win"])
        self.last_best = self.best is None or score < self.best
        if self.last_best:
            self.best, self.label = score, label
            self.state = {k: v.detach().clone() for k, v in self.model.state_dict().items()}

    def take_last(self) -> None:
        """Keep the weights last offered, whatever their score: the walk that met
        `train.sft.dagger_until` ends the warm-up, not an earlier one that lost less."""
        if self.enabled and self.rows:
            self.last_best, self.label = True, next(reversed(self.rows))

    def restore(self) -> str:
        """Put the best weights back when the last ones walked are not; the label of those kept."""
        if self.enabled and not self.last_best and self.state is not None:
            self.model.load_state_dict(self.state)
        self.state = None
        return self.label
