"""A policy's game tree, walked instead of sampled: exact expected outcomes against any opponent.

The tree is expanded once per policy: at every model turn the policy's replies with their
probabilities (`ReplyDistribution`), at every opponent turn every legal reply. Each path keeps its
own conversation, so invalid replies get the environment's feedback and retry on the same board,
and the turn cap and the forfeit rule apply exactly as in play. Evaluating the tree against an
opponent then weights each opponent reply by that opponent's probability (`opponent.distribution`),
or — with no distribution — picks the reply that hurts the policy most (the best response).

Nothing is approximated silently: a policy's mass outside the replies it listed, and paths whose
probability falls below `min_prob`, are *unexplored*; every rate comes with deterministic bounds
that hold whatever that mass would have done.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from typing import Protocol

from ttt_lab.env.dataset import Example
from ttt_lab.env.episode import Episode, Turn
from ttt_lab.env.parser import parse
from ttt_lab.env.rubric import DRAW, WIN
from ttt_lab.env.settings import EnvConfig
from ttt_lab.env.tree import ToldOpponent, branch
from ttt_lab.game.solver import table


class ReplyDistribution(Protocol):
    def distributions(self, turns: Sequence[Turn]) -> list[list[tuple[str, float]]]:
        """Per turn, replies with their probabilities (summing to at most 1: the rest is unexplored)."""


OpponentDistribution = Callable[[int], dict[int, float]]
"""A state's opponent replies with their probabilities; `None` in its place asks for the best response."""


@dataclass(slots=True)
class Leaf:
    outcome: str
    turns: int
    invalid: int
    in_format: int
    reward: float


@dataclass(slots=True)
class Cut:
    """A path not followed (below `min_prob`): what it had played so far and how many more
    model messages it could still have written."""

    turns: int
    invalid: int
    in_format: int
    left: int


@dataclass(slots=True)
class OpponentTurn:
    state: int
    children: dict[int, ModelTurn | Leaf | Cut]


@dataclass(slots=True)
class ModelTurn:
    episode: Episode | None
    replies: list[tuple[float, str, ModelTurn | OpponentTurn | Leaf | Cut]] = field(default_factory=list)
    unexplored: float = 0.0
    turns: int = 0
    invalid: int = 0
    in_format: int = 0
    left: int = 0
    state: int = -1
    """The position the model moves from (set once its replies are known)."""


Node = ModelTurn | OpponentTurn | Leaf | Cut


@dataclass(frozen=True)
class Root:
    model_first: bool
    symbol: str
    weight: float
    node: Node


@dataclass(frozen=True)
class Tree:
    roots: tuple[Root, ...]
    model_turns: int
    """Model turns whose replies the policy was asked for."""


def _settled(ep: Episode) -> Leaf | None:
    if not ep.done:
        return None
    r = ep.record()
    return Leaf(r.outcome, r.model_turns, r.invalid_moves, r.messages_in_format, r.rewards.total)


def _cut(ep: Episode, env: EnvConfig) -> Cut:
    return Cut(ep.model_turns, ep.invalid, ep.in_format, max(1, env.max_model_turns - ep.model_turns))


class _Expander:
    def __init__(self, env: EnvConfig, min_prob: float, bound: OpponentDistribution | None, markov: bool) -> None:
        self.env, self.min_prob, self.bound = env, min_prob, bound
        self.told, self.table = ToldOpponent(), table()
        self.frontier: list[tuple[ModelTurn, float]] = []
        self.shared: dict[tuple, ModelTurn] | None = {} if markov else None

    def opponent_cells(self, state: int) -> dict[int, float]:
        """Each legal reply's largest probability under any opponent the tree is for (1: any)."""
        legal = self.table.legal[state]
        if self.bound is None:
            return dict.fromkeys(legal, 1.0)
        got = self.bound(state)
        return {c: got[c] for c in legal if got.get(c, 0.0) > 0.0}

    def model_turn(self, ep: Episode, reach: float) -> ModelTurn | Leaf | Cut:
        settled = _settled(ep)
        if settled is not None:
            return settled
        if self.shared is not None:  # the future depends on the position and the counts only: one node each
            key = (ep.model_mark, ep.shown, ep.state, ep.model_turns, ep.invalid, ep.in_format)
            if key in self.shared:
                return self.shared[key]
            node = self.shared[key] = ModelTurn(ep)
            self.frontier.append((node, 1.0))
            return node
        if reach < self.min_prob:
            return _cut(ep, self.env)
        node = ModelTurn(ep)
        self.frontier.append((node, reach))
        return node

    def root(self, example: Example) -> Node:
        if example.model_first:
            return self.model_turn(Episode(example, self.env, self.told), 1.0)
        children: dict[int, ModelTurn | Leaf | Cut] = {}
        for cell, q in self.opponent_cells(0).items():
            self.told.cell = cell
            children[cell] = self.model_turn(Episode(example, self.env, self.told), q)
        return OpponentTurn(0, children)

    def expand(self, node: ModelTurn, reach: float, replies: list[tuple[str, float]]) -> None:
        ep = node.episode
        assert ep is not None
        total = 0.0
        for reply, q in replies:
            if q <= 0.0:
                continue
            total += q
            node.replies.append((q, reply, self.after_reply(ep, reply, reach * q)))
        node.unexplored = max(0.0, 1.0 - total)
        node.turns, node.invalid, node.in_format, node.state = ep.model_turns, ep.invalid, ep.in_format, ep.state
        node.left = max(1, self.env.max_model_turns - ep.model_turns)
        node.episode = None  # the conversation is no longer needed once its replies are known

    def after_reply(self, ep: Episode, reply: str, reach: float) -> Node:
        p = parse(reply, ep.board, self.env.think)
        after = self.table.children[ep.state][p.cell] if p.valid and p.cell is not None else None
        if after is None or self.table.terminal[after]:
            child = branch(ep)
            child.step(reply)
            return self.model_turn(child, reach)
        children: dict[int, ModelTurn | Leaf | Cut] = {}
        for cell, q in self.opponent_cells(after).items():
            child = branch(ep)
            self.told.cell = cell
            child.step(reply)
            children[cell] = self.model_turn(child, reach * q)
        return OpponentTurn(after, children)


def conversation_key(turn: Turn) -> tuple[str, ...]:
    return tuple(m["content"] for m in turn.messages)


def _frontier_episode(node: ModelTurn) -> Episode:
    """The conversation of a node still waiting for its replies (`expand` clears it afterwards)."""
    assert node.episode is not None
    return node.episode


def expand_tree(policy: ReplyDistribution, env: EnvConfig, starts: Sequence[tuple[bool, str, float]], *,
                min_prob: float = 0.0, opponent_bound: OpponentDistribution | None = None,
                on_level: Callable[[int], None] | None = None) -> Tree:
    """The policy's tree from each start (model moves first?, symbol shown, weight). The policy is
    asked once per distinct conversation, a level at a time (one batch per level). Paths whose
    probability — the policy's replies times `opponent_bound`'s largest opponent probability
    (every reply 1 when None: a tree for the best response) — falls below `min_prob` are cut.
    A policy marked `markov` (its replies depend on the board alone, as a scripted player's do)
    shares one subtree per position and counts: a graph of at most a few thousand turns, never cut."""
    env.validate()
    ex = _Expander(env, min_prob, opponent_bound, bool(getattr(policy, "markov", False)))
    roots: list[Root] = []
    for i, (first, symbol, weight) in enumerate(starts):
        example = Example(index=i, seed=0, p_random=0.0, model_first=first, model_symbol=symbol, stratum=-1)
        roots.append(Root(first, symbol, weight, ex.root(example)))
    asked = 0
    memo: dict[tuple[str, ...], list[tuple[str, float]]] = {}
    while ex.frontier:
        level, ex.frontier = ex.frontier, []
        keys = [conversation_key(_frontier_episode(node)) for node, _ in level]
        todo = {k: _frontier_episode(node) for k, (node, _) in zip(keys, level, strict=True) if k not in memo}
        if todo:
            got = policy.distributions(list(todo.values()))
            if len(got) != len(todo):
                raise ValueError(f"policy {policy!r} returned {len(got)} distributions for {len(todo)} turns")
            memo.update(zip(todo, got, strict=True))
            asked += len(todo)
        for key, (node, reach) in zip(keys, level, strict=True):
            ex.expand(node, reach, memo[key])
        if on_level is not None:
            on_level(asked)
    return Tree(tuple(roots), asked)


@dataclass
class Totals:
    """Expected values per game (weights summing to 1 over the starts)."""

    win: float = 0.0
    draw: float = 0.0
    loss: float = 0.0
    turns: float = 0.0
    invalid: float = 0.0
    in_format: float = 0.0
    reward: float = 0.0
    unexplored: float = 0.0
    """Probability of the paths not followed."""
    unexplored_turns: float = 0.0
    """Upper bound on the expected model messages those paths could still add."""
    lines: int = 0

    def add(self, other: Totals, w: float) -> None:
        for name in ("win", "draw", "loss", "turns", "invalid", "in_format", "reward", "unexplored",
                     "unexplored_turns"):
            setattr(self, name, getattr(self, name) + w * getattr(other, name))
        self.lines += other.lines

    @property
    def points(self) -> float:
        return self.win + 0.5 * self.draw


def _leaf(node: Leaf) -> Totals:
    return Totals(win=float(node.outcome == WIN), draw=float(node.outcome == DRAW),
                  loss=float(node.outcome not in (WIN, DRAW)), turns=node.turns, invalid=node.invalid,
                  in_format=node.in_format, reward=node.reward, lines=1)


def _unexplored(turns: int, invalid: int, in_format: int, left: int, mass: float = 1.0) -> Totals:
    return Totals(turns=mass * turns, invalid=mass * invalid, in_format=mass * in_format, unexplored=mass,
                  unexplored_turns=mass * left)


def _worst(options: list[Totals]) -> Totals:
    """The best response's choice: the reply that makes the policy lose most often (the unexplored
    mass counted as lost), then the one that leaves it the least reward (fewest points, most invalid
    replies: what its training maximises)."""
    return max(options, key=lambda t: (round(t.loss + t.unexplored, 12), -round(t.reward, 12)))


def evaluate(node: Node, opponent: OpponentDistribution | None, memo: dict[int, Totals] | None = None) -> Totals:
    """Expected totals below `node` against `opponent` (None: the best response to the policy);
    `memo` holds shared subtrees' totals (a markov policy's tree is a graph)."""
    if memo is None:
        memo = {}
    if isinstance(node, ModelTurn | OpponentTurn):
        got = memo.get(id(node))
        if got is None:
            got = memo[id(node)] = _evaluate(node, opponent, memo)
        return got
    return _evaluate(node, opponent, memo)


def _evaluate(node: Node, opponent: OpponentDistribution | None, memo: dict[int, Totals]) -> Totals:
    if isinstance(node, Leaf):
        return _leaf(node)
    if isinstance(node, Cut):
        return _unexplored(node.turns, node.invalid, node.in_format, node.left)
    if isinstance(node, OpponentTurn):
        if opponent is None:
            return _worst([evaluate(child, None, memo) for child in node.children.values()])
        out = Totals()
        dist = opponent(node.state)
        for cell, q in dist.items():
            child = node.children.get(cell)
            if child is None:
                raise ValueError(f"the tree was expanded without opponent reply {cell} at state {node.state}")
            out.add(evaluate(child, opponent, memo), q)
        return out
    out = _unexplored(node.turns, node.invalid, node.in_format, node.left, node.unexplored)
    for q, _reply, below in node.replies:
        out.add(evaluate(below, opponent, memo), q)
    return out


def evaluate_tree(tree: Tree, opponent: OpponentDistribution | None) -> Totals:
    out = Totals()
    memo: dict[int, Totals] = {}
    for root in tree.roots:
        out.add(evaluate(root.node, opponent, memo), root.weight)
    for name in ("win", "draw", "loss", "unexplored"):  # sums of products: 1.0 must not read 0.9999999999999997
        setattr(out, name, round(getattr(out, name), 12))
    return out
