"""The schema's `train.sft:` section: the supervised warm-up, its teacher data, its loop and its
DAgger rounds (part of `config.schema`, kept apart to stay readable)."""

from __future__ import annotations

from dataclasses import dataclass, field

from ttt_lab.env.settings import check_integer, check_number, check_one_of
from ttt_lab.errors import InvalidSetting
from ttt_lab.game.opponents import SCORINGS, TIE_BREAKS

SFT_LOOPS = ("trl", "lean")
SFT_ORDERS = ("random", "prefix")
DAGGER_MISTAKES = ("teacher", "value")
DAGGER_POOLS = ("all", "latest")
# transformers' schedulers that build and step from a warm-up and a step count alone (the others need
# a metric at each step or extra arguments); tests hold the list to transformers' own names
LR_SCHEDULERS = ("constant", "constant_with_warmup", "linear", "cosine", "cosine_with_restarts", "polynomial",
                 "inverse_sqrt")
DAGGER_SCHEDULERS = ("constant", "linear", "cosine")


@dataclass
class DaggerUntil:
    """Levels of a whole-tree walk that end the DAgger rounds (each unset: not asked): the exact
    rates the evaluation reads, so the rounds stop once the policy is where the run wants it
    instead of spending every round `dagger_rounds` allows."""

    min_optimal_draw: float | None = None
    """At least this share of draws against the optimal opponent (both sides)."""
    min_random_win: float | None = None
    """At least this share of wins against the random opponent."""
    max_random_loss: float | None = None
    """At most this share of losses against the random opponent."""
    max_invalid: float | None = None
    """At most this share of invalid replies among the model's messages (against either opponent)."""


@dataclass
class SftConfig:
    enabled: bool = True
    num_games: int = 200
    teacher_p_random: float = 0.1
    teacher_scoring: str = "value"
    """The minimax teacher's best moves (as `opponent.scoring`): value plays any value-keeping move
    (about 87 % wins against a random opponent), exploit the ones that win most often against
    random play (about 96 %): a sharper target for a player that must also win."""
    teacher_trees: int = 0
    """Teacher trees added to the `num_games` sampled games: each is every game the teacher
    plays when the opponent tries every legal reply (about 750 games, both sides; the tree's
    tie-breaks follow its own seed). Sampled games meet the rare lines (an opponent's open two
    to block) rarely; a tree holds each of them once."""
    filter_losses: bool = True
    filter_format_errors: bool = True
    epochs: int = 2
    learning_rate: float = 1e-3
    batch_size: int = 16
    assistant_only_loss: bool = True
    """Train on the model's turns only. A model with no pretraining (tiny) learns to read the
    board faster when it also predicts the environment's messages: set false for it."""
    lr_scheduler: str = "cosine"
    """transformers' scheduler name, one of `LR_SCHEDULERS` (constant, linear, cosine, ...)."""
    warmup_steps: int = 10
    logging_steps: int = 5
    """Optimizer steps between two logged SFT losses."""
    seed: int | None = None
    """The warm-up's own seed (its teacher games, its training order, the tiny model's first
    weights); unset: the run's `seed`. Set it to hold one warm-up fixed while `seed` varies RL."""
    teacher_tie_break: str = "random"
    """How the teacher breaks ties between equally good moves (random | first | last): `first`
    is a deterministic teacher, one move per position, the data never split between moves."""
    teacher_strengths: list[float] = field(default_factory=list)
    """When set, the `num_games` sampled teacher games are spread evenly over these opponent
    `p_random` values (e.g. the evaluation's: 1.0 random, 0.5, 0.25) instead of `dataset.*`."""
    optimal_lines: int = 0
    """Copies of the teacher's games against every tie-break branch of the optimal opponent
    (about 81 games for a deterministic exploit teacher: every position it can reach)."""
    first_weight: int = 1
    """Of those lines, how many times each game where the model moves first is repeated."""
    loop: str = "trl"
    """trl: TRL's SFTTrainer. lean: ttt-lab's own loop (train/sft_lean.py): the LM head only at
    the positions that carry loss, the shared system-prompt prefix computed once per micro-batch,
    the teacher-forced accuracy on the optimal opponent's positions after every epoch, and the
    DAgger rounds. The same loss as trl's."""
    micro_batch_size: int | None = None
    """lean loop: games per forward/backward pass of the warm-up (unset: `train.micro_batch_size`;
    a frozen-context pass holds as many as keep its tokens with gradient within what this many of
    the update's longest game hold). TRL's loop passes `train.micro_batch_size`."""
    head: str = "loss"
    """lean loop: loss (the LM head only where the loss is) | full (every position, as trl)."""
    share_prefix: bool = True
    """lean loop: compute the micro-batch's common token prefix (the system prompt) once."""
    pack_tokens: int = 0
    """lean loop: the updates of `order=prefix` packed into prefix tries of at most this many
    tokens, each distinct prefix computed once (`train/sft_trie.py`: the same loss and gradients);
    0, or a random order: padded micro-batches of `micro_batch_size`."""
    order: str = "random"
    """lean loop: how an epoch cuts its updates: random draws, or `prefix` (runs of the examples in
    token order from a random start, the runs shuffled: an update's examples share their
    openings, so its tries are small, but its gradient reads one corner of the data)."""
    attention: str | None = None
    """lean loop: the attention kernel of the warm-up's passes (`sdpa` | `eager`: transformers'
    implementations of the same attention), switched for the passes only, so the walks and every
    generation keep `model.attention`'s; unset: `model.attention`'s for the passes too."""
    dagger_order: str | None = None
    """`order` for the DAgger rounds' passes (their single-reply positions share longer openings
    than whole games do); unset: `order`."""
    dagger_rounds: int = 0
    """lean loop: after the epochs, rounds of DAgger: the model's greedy policy walked against
    every tie-break branch of the optimal opponent (exact W/D/L logged, train/optimal_walk.py)
    plus `dagger_games` games against the other `teacher_strengths`, every reply outside the
    teacher's best moves relabelled with the teacher's move, then `dagger_epochs` passes over the
    mistakes (`dagger_pool`) plus the optimal lines. A last walk measures the result."""
    dagger_games: int = 64
    """Sampled games per DAgger round against the teacher's strengths above 0 (half moving first)."""
    dagger_epochs: int = 2
    dagger_learning_rate: float | None = None
    """The peak rate of each DAgger round's passes (`dagger_lr_scheduler`, no warm-up); unset: `learning_rate`."""
    dagger_lr_scheduler: str | None = None
    """How each DAgger round's rate moves over its passes (constant | linear | cosine; the decays end
    at zero with the round, so its walk reads weights that settled rather than a step in mid-descent);
    unset: `lr_scheduler`."""
    dagger_tree: bool = False
    """DAgger rounds relabel the greedy policy's whole tree instead (every position any opponent
    can lead it to, each once: `train/dagger_tree.py`), and log its exact W/D/L against the random
    opponent and its exploitability; no sampled games. The rounds end early at a walk that finds
    nothing to correct or that measures the goal the RL phase stops at (`opponent.stop_at_wins`)."""
    dagger_mistakes: str = "teacher"
    """What a DAgger walk relabels: `teacher`, every reply outside the teacher's best moves;
    `value`, only the replies that lose the position's game-theoretic value (and invalid ones):
    the only replies that can lose a game, so the passes spend nothing on moves that merely draw
    or win differently from the teacher."""
    dagger_pool: str = "all"
    """Which corrections a round's passes train on: `all`, every round's so far (DAgger's
    aggregate); `latest`, the latest walk's only. With `dagger_tree` a walk finds every mistake the
    policy still makes, so `latest` drops only the corrections that already hold, and a round's
    passes shrink as the policy improves."""
    dagger_replay_passes: int | None = None
    """With `dagger_pool: all`: how many of a round's `dagger_epochs` passes (the first ones) also go
    over the earlier rounds' corrections; the others go over this round's corrections and the
    lines only, so the aggregate, which holds what the earlier rounds set, costs one pass a round
    instead of every pass. Unset: every pass."""
    dagger_lines: bool = True
    """A round's passes also go over the teacher's lines against the optimal opponent (not with
    `dagger_all`); false: the corrections alone, the passes cheaper by the lines' tokens, the lines'
    positions held by the next walk's corrections instead."""
    dagger_below_mistakes: bool = True
    """A walk's mistakes below another of its mistakes (reached only through a reply it relabels)
    are relabelled too; false: each line's first mistake only. Once that reply changes the policy
    no longer reaches the positions below it, so their corrections cost a pass's tokens for
    positions no opponent meets, and the next walk finds what the new reply leads to."""
    dagger_frozen_context: bool = False
    """A round's passes compute each correction's context (the conversation before the exchange
    that ends in the trained reply) without gradient, once per shared prefix, and backpropagate
    through that exchange only (train/sft_context.py): the same loss, a gradient without the terms
    through the context's keys and values, a correction's pass cheaper (docs/benchmarks.md, "Frozen
    contexts"). The teacher's lines (a loss on every reply) pass whole."""
    dagger_context_once: bool = False
    """With `dagger_frozen_context`: each distinct context of a round's corrections is computed once,
    before the round's passes (in token order, each shared prefix once), and its keys and values
    kept in memory for the round; every pass reads them instead of computing them at each update.
    The passes are cheaper by the contexts' share less the build (docs/benchmarks.md, "Contexts kept
    a round"); the contexts are the round's first weights', up to a round's updates older than the
    weights they meet. On SmolLM2 its rounds fixed less on the one seed run (the real-model finding,
    run 29): off unless measured to help."""
    dagger_frozen_prompt: bool = False
    """With `dagger_frozen_context`: a correction's context also holds its prompt (the user's turn
    that shows the board, and the assistant's header), so only the positions that predict the
    trained reply carry gradient: the same loss, a cheaper pass, a shorter truncation than the
    turn's. On SmolLM2 a round through it unlearned what it did not train (the real-model
    finding, run 20; docs/benchmarks.md, "Frozen prompts"): off unless measured to help."""
    dagger_keep_best: bool = False
    """With `dagger_tree`: the warm-up ends with the weights of the walked round that lost least
    (exact losses against random play plus against the optimal opponent; the last round's passes
    walked too), not with the last round's: a round can unlearn more than it corrects."""
    dagger_until: DaggerUntil = field(default_factory=DaggerUntil)
    """With `dagger_tree`: the rounds end at the first walk whose exact rates meet every level set
    here (`DaggerUntil`), and its weights end the warm-up (with `dagger_keep_best` too);
    `dagger_rounds` stays the most rounds run."""
    dagger_all: bool = False
    """DAgger rounds train on every position the latest walk reached (the right replies as played,
    the wrong ones relabelled) and the earlier rounds' corrections (`dagger_pool`), without the teacher's
    lines, not on the mistakes alone: the replayed replies keep a round's few corrections from
    unlearning the rest of the policy."""
    dagger_mistake_weight: int = 1
    """Copies of each correction (a reply relabelled in this round or, by `dagger_pool`, an earlier one) in a round's
    passes: with `dagger_all`, a few corrections among a thousand replays are otherwise seen once
    a pass."""
    dagger_reach_cap: int = 1
    """With `dagger_tree`: a mistake's copies in a round's pool (1 to this many) follow how likely
    the evaluation's opponents (`eval.suite`) lead the policy to its position, over the round's
    median mistake: the passes go where the evaluation's games go. 1: every mistake once."""


def validate_sft(s: SftConfig) -> None:
    if s.seed is not None and (isinstance(s.seed, bool) or not isinstance(s.seed, int) or not 0 <= s.seed < 2**32):
        raise InvalidSetting("train.sft.seed", s.seed, f"an integer from 0 to {2**32 - 1}, or null for the run's seed")
    if s.enabled:
        if isinstance(s.epochs, bool) or not isinstance(s.epochs, int) or s.epochs < 1:
            raise InvalidSetting("train.sft.epochs", s.epochs, "an integer of at least 1 (or set "
                                 "train.sft.enabled=false to skip the warm-up)")
        check_integer("train.sft.batch_size", s.batch_size, 1)
        check_number("train.sft.learning_rate", s.learning_rate, 0.0)
    check_integer("train.sft.warmup_steps", s.warmup_steps, 0)
    check_integer("train.sft.logging_steps", s.logging_steps, 1)
    check_one_of("train.sft.teacher_scoring", s.teacher_scoring, SCORINGS)
    check_integer("train.sft.num_games", s.num_games, 0)
    check_integer("train.sft.teacher_trees", s.teacher_trees, 0)
    check_one_of("train.sft.teacher_tie_break", s.teacher_tie_break, TIE_BREAKS)
    check_number("train.sft.teacher_p_random", s.teacher_p_random, 0.0, 1.0)
    for p in s.teacher_strengths:
        check_number("train.sft.teacher_strengths", p, 0.0, 1.0)
    check_integer("train.sft.optimal_lines", s.optimal_lines, 0)
    check_integer("train.sft.first_weight", s.first_weight, 1)
    check_one_of("train.sft.loop", s.loop, SFT_LOOPS)
    if s.micro_batch_size is not None:
        check_integer("train.sft.micro_batch_size", s.micro_batch_size, 1)
    check_one_of("train.sft.head", s.head, ("loss", "full"))
    check_integer("train.sft.pack_tokens", s.pack_tokens, 0)
    check_one_of("train.sft.order", s.order, SFT_ORDERS)
    check_one_of("train.sft.lr_scheduler", s.lr_scheduler, LR_SCHEDULERS)
    if s.attention is not None:
        check_one_of("train.sft.attention", s.attention, ("sdpa", "eager"))
        if s.loop != "lean":
            raise InvalidSetting("train.sft.attention", s.attention, "null unless train.sft.loop=lean (TRL's "
                                 "warm-up computes attention with model.attention)")
    if s.dagger_order is not None:
        check_one_of("train.sft.dagger_order", s.dagger_order, SFT_ORDERS)
    if s.pack_tokens and (s.loop != "lean" or s.head != "loss"):
        raise InvalidSetting("train.sft.pack_tokens", s.pack_tokens,
                             "0 unless train.sft.loop=lean and train.sft.head=loss (a trie computes its loss there)")
    _validate_dagger(s)
    if s.dagger_rounds and s.loop != "lean":
        raise InvalidSetting("train.sft.dagger_rounds", s.dagger_rounds, "0 unless train.sft.loop=lean")
    if s.enabled and s.num_games + s.teacher_trees + s.optimal_lines == 0:
        raise InvalidSetting("train.sft.num_games", 0, "at least 1 when train.sft.teacher_trees and "
                             "train.sft.optimal_lines are 0 (or set "
                             "train.sft.enabled=false to skip the warm-up)")


def _validate_until(s: SftConfig) -> None:
    levels = {k: v for k, v in vars(s.dagger_until).items() if v is not None}
    for k, v in levels.items():
        check_number(f"train.sft.dagger_until.{k}", v, 0.0, 1.0)
    if levels and not s.dagger_tree:
        name, value = next(iter(levels.items()))
        raise InvalidSetting(f"train.sft.dagger_until.{name}", value,
                             "null unless train.sft.dagger_tree=true (the levels are read off the whole-tree walk)")


def _validate_dagger(s: SftConfig) -> None:
    check_integer("train.sft.dagger_rounds", s.dagger_rounds, 0)
    check_integer("train.sft.dagger_games", s.dagger_games, 1)
    check_integer("train.sft.dagger_epochs", s.dagger_epochs, 1)
    check_integer("train.sft.dagger_mistake_weight", s.dagger_mistake_weight, 1)
    check_integer("train.sft.dagger_reach_cap", s.dagger_reach_cap, 1)
    if s.dagger_replay_passes is not None:
        check_integer("train.sft.dagger_replay_passes", s.dagger_replay_passes, 1)
    check_one_of("train.sft.dagger_mistakes", s.dagger_mistakes, DAGGER_MISTAKES)
    check_one_of("train.sft.dagger_pool", s.dagger_pool, DAGGER_POOLS)
    if s.dagger_lr_scheduler is not None:
        check_one_of("train.sft.dagger_lr_scheduler", s.dagger_lr_scheduler, DAGGER_SCHEDULERS)
    if s.dagger_frozen_context and s.pack_tokens and (s.dagger_order or s.order) == "prefix":
        raise InvalidSetting("train.sft.dagger_frozen_context", s.dagger_frozen_context,
                             "false while DAgger's passes are packed into prefix tries (train.sft.pack_tokens with "
                             "train.sft.dagger_order=prefix): a trie computes every token with gradient")
    if s.dagger_context_once and not s.dagger_frozen_context:
        raise InvalidSetting("train.sft.dagger_context_once", s.dagger_context_once,
                             "false unless train.sft.dagger_frozen_context=true (only contexts computed without "
                             "gradient can be kept)")
    if s.dagger_frozen_prompt and not s.dagger_frozen_context:
        raise InvalidSetting("train.sft.dagger_frozen_prompt", s.dagger_frozen_prompt,
                             "false unless train.sft.dagger_frozen_context=true (the prompt is frozen with the "
                             "context before it)")
    if s.dagger_reach_cap > 1 and not s.dagger_tree:
        raise InvalidSetting("train.sft.dagger_reach_cap", s.dagger_reach_cap,
                             "1 unless train.sft.dagger_tree=true (the reach is read off the whole-tree walk)")
    if s.dagger_keep_best and not s.dagger_tree:
        raise InvalidSetting("train.sft.dagger_keep_best", s.dagger_keep_best,
                             "false unless train.sft.dagger_tree=true (the rounds are scored on the whole-tree walk)")
    _validate_until(s)
    if s.dagger_learning_rate is not None:
        check_number("train.sft.dagger_learning_rate", s.dagger_learning_rate, 0.0)
