"""The lean SFT loop's cheaper passes compute TRL's loss and gradients exactly."""

import itertools
import statistics
from pathlib import Path

import pytest
import torch
from hypothesis import given, settings
from hypothesis import strategies as st

from ttt_lab.players.scripted import minimax_player

from .conftest import cfg_for


@pytest.fixture(scope="module")
def two_layers(tmp_path_factory: pytest.TempPathFactory) -> Path:
    from ttt_lab.config.schema import ModelConfig
    from ttt_lab.players.tiny import build_tiny

    cfg = ModelConfig(hidden_size=32, num_layers=2, num_heads=2, intermediate_size=64)
    return build_tiny(tmp_path_factory.mktemp("ckpt2") / "tiny", cfg, seed=1)


def tree_dagger_cfg(tmp_path: Path, *more: str):
    """A lean warm-up of one epoch on 8 exploit-teacher games, then whole-tree DAgger rounds of one
    pass (`more`: the rounds and what the test is about)."""
    return cfg_for(tmp_path, "train.sft.loop=lean", "train.sft.num_games=8", "train.sft.epochs=1",
                   "train.sft.teacher_scoring=exploit", "train.sft.teacher_tie_break=first",
                   "train.sft.dagger_tree=true", "train.sft.dagger_epochs=1", "train.sft.micro_batch_size=8", *more)


def games(cfg, n: int = 6):
    from ttt_lab.train.teacher import optimal_lines

    lines = optimal_lines(minimax_player(tie_break="first", think=False, scoring="exploit"), cfg.env)
    return lines[:: max(1, len(lines) // n)][:n]


@pytest.mark.parametrize("attention", ["sdpa", "eager"])
def test_head_at_the_loss_and_a_shared_prefix_give_the_full_loss_and_gradients(two_layers: Path, tmp_path: Path,
                                                                              attention: str) -> None:
    from transformers import AutoModelForCausalLM, AutoTokenizer

    from ttt_lab.train.sft_lean import batch_tensors, encode, loss_sum, shared_prefix

    torch.manual_seed(0)
    cfg = cfg_for(tmp_path)
    tok = AutoTokenizer.from_pretrained(two_layers)
    model = AutoModelForCausalLM.from_pretrained(two_layers, attn_implementation=attention, dtype=torch.float64)
    enc = [encode(tok, r.messages) for r in games(cfg)]
    ids, labels = batch_tensors(enc, tok.pad_token_id or 0)
    assert shared_prefix(ids, labels) > 2
    items = sum(e.items for e in enc)

    def run(**kw) -> tuple[float, list[torch.Tensor]]:
        model.zero_grad()
        loss = loss_sum(model, ids, labels, **kw) / items
        loss.backward()
        return float(loss.detach()), [p.grad.clone() for p in model.parameters()]

    # transformers' own loss (computed in fp32) agrees; the variants agree to fp32 rounding (the
    # model is fp64, but Llama's RMSNorm computes in fp32)
    trl_loss = model(input_ids=ids, labels=labels, num_items_in_batch=items).loss
    reference, ref_grads = run(head="full")
    assert float(trl_loss) == pytest.approx(reference, rel=1e-6)
    for kw in ({"head": "loss", "share_prefix": False}, {"head": "loss", "share_prefix": True}):
        loss, grads = run(**kw)
        assert loss == pytest.approx(reference, rel=1e-7), kw
        for g, r in zip(grads, ref_grads, strict=True):
            torch.testing.assert_close(g, r, rtol=1e-5, atol=1e-7)


def test_every_token_loss_is_trls_loss_without_assistant_only(two_layers: Path, tmp_path: Path) -> None:
    """`assistant_only_loss=false` (the tiny model's warm-up): every token but padding carries loss,
    as TRL's collator labels it, and the loop's loss is transformers' over the same labels."""
    from transformers import AutoModelForCausalLM, AutoTokenizer

    from ttt_lab.train.sft_lean import IGNORE, batch_tensors, encode, loss_sum

    tok = AutoTokenizer.from_pretrained(two_layers)
    model = AutoModelForCausalLM.from_pretrained(two_layers, dtype=torch.float64)
    records = games(cfg_for(tmp_path), 4)
    enc = [encode(tok, r.messages, every_token=True) for r in records]
    for e, r in zip(enc, records, strict=True):
        whole = tok.apply_chat_template(r.messages, tokenize=True, return_dict=True)["input_ids"]
        assert e.labels == e.ids == list(whole)
        assert e.items == len(e.ids) - 1
    ids, labels = batch_tensors(enc, tok.pad_token_id or 0)
    assert (labels == IGNORE).sum() == sum(ids.shape[1] - len(e.ids) for e in enc) > 0  # padding only
    items = sum(e.items for e in enc)
    reference = model(input_ids=ids, labels=labels, num_items_in_batch=items).loss
    for head in ("loss", "full"):
        assert float(loss_sum(model, ids, labels, head=head) / items) == pytest.approx(float(reference), rel=1e-6)


def test_a_schedules_own_rate_sets_its_steps_rate(two_layers: Path, tmp_path: Path) -> None:
    """`Schedule.learning_rate` (DAgger's `train.sft.dagger_learning_rate`) is the rate of that call's
    steps: at 0 the weights stay, unset the loop's own rate moves them."""
    from transformers import AutoModelForCausalLM, AutoTokenizer

    from ttt_lab.train.sft_lean import LeanSFT, Schedule, encode

    tok = AutoTokenizer.from_pretrained(two_layers)
    model = AutoModelForCausalLM.from_pretrained(two_layers)
    data = [encode(tok, r.messages) for r in games(cfg_for(tmp_path), 4)]
    loop = LeanSFT(model, tok, learning_rate=1e-2, batch_size=2, micro_batch_size=2, bf16=False, seed=0)

    def weights() -> list[torch.Tensor]:
        return [p.detach().clone() for p in model.parameters()]

    before = weights()
    loop.fit(data, 1, Schedule("constant", 0, 0.0))
    assert all(torch.equal(a, b) for a, b in zip(before, weights(), strict=True))
    loop.fit(data, 1, Schedule("constant", 0))
    assert not all(torch.equal(a, b) for a, b in zip(before, weights(), strict=True))


def test_passes_over_different_data_run_under_one_schedule(two_layers: Path, tmp_path: Path) -> None:
    """`fit_passes`: one pass over each dataset in turn, one schedule spanning them all (a decay
    reaches zero at the last pass's last update); `fit(data, n)` is `fit_passes([data] * n)`
    update for update."""
    from transformers import AutoModelForCausalLM, AutoTokenizer

    from ttt_lab.train.sft_lean import LeanSFT, Schedule, encode

    tok = AutoTokenizer.from_pretrained(two_layers)
    data = [encode(tok, r.messages) for r in games(cfg_for(tmp_path), 6)]

    def loop() -> LeanSFT:
        return LeanSFT(AutoModelForCausalLM.from_pretrained(two_layers), tok, learning_rate=1e-2, batch_size=2,
                       micro_batch_size=2, bf16=False, seed=0)

    assert loop().fit(data, 2, Schedule("cosine")) == loop().fit_passes([data, data], Schedule("cosine"))
    short, rates = loop(), []
    real = short.update

    def update(*a, **k):
        rates.append(short.opt.param_groups[0]["lr"])
        return real(*a, **k)

    short.update = update  # type: ignore[method-assign]
    short.fit_passes([data, data[:2]], Schedule("linear"))
    assert len(rates) == 3 + 1 and all(a > b > 0 for a, b in itertools.pairwise(rates))
    assert short.opt.param_groups[0]["lr"] == 0.0


def test_encode_marks_the_replies_and_can_keep_some(two_layers: Path, tmp_path: Path) -> None:
    from transformers import AutoTokenizer

    from ttt_lab.train.sft_lean import _spans, encode

    tok = AutoTokenizer.from_pretrained(two_layers)
    record = games(cfg_for(tmp_path), 1)[0]
    turns = sum(m["role"] == "assistant" for m in record.messages)
    full = encode(tok, record.messages)
    assert len(_spans(full.labels)) == turns
    last = encode(tok, record.messages, [False] * (turns - 1) + [True])
    assert _spans(last.labels) == _spans(full.labels)[-1:]
    assert tok.decode([t for t in last.labels if t != -100]).startswith(record.messages[-1]["content"])


def test_lean_warm_up_with_dagger_trains_and_reports_its_curve(tiny_checkpoint: Path, tmp_path: Path) -> None:
    from ttt_lab.train.checkpoints import load_model
    from ttt_lab.train.sft import run_sft

    cfg = cfg_for(tmp_path, "train.sft.loop=lean", "train.sft.num_games=8", "train.sft.optimal_lines=1",
                  "train.sft.first_weight=3", "train.sft.teacher_tie_break=first",
                  "train.sft.teacher_scoring=exploit", "train.sft.epochs=2",
                  "train.sft.teacher_strengths=[1.0,0.5]", "train.sft.dagger_rounds=1", "train.sft.dagger_games=8",
                  "train.sft.dagger_epochs=1", "train.sft.lr_scheduler=constant_with_warmup",
                  "train.sft.learning_rate=1e-2", "train.sft.micro_batch_size=8")
    info = run_sft(cfg, str(tiny_checkpoint), tmp_path / "sft")
    cover = info["coverage"]
    assert cover["targets_covered"] == cover["targets"] == 130  # every position of the optimal lines
    assert cover["games"] == info["kept"] == 8 + 81 + 2 * 2
    assert [p["after"] for p in info["accuracy"]] == ["start", "epoch 1", "epoch 2", "DAgger 1 epoch 1"]
    first, end = info["dagger"]
    assert first["turns"] > 0 and first["optimal_lines"] >= 1 and end["after"] == "DAgger end"
    assert first["optimal_win"] + first["optimal_draw"] + first["optimal_loss"] == pytest.approx(1.0)
    assert info["losses"][-1] < info["losses"][0]
    load_model(str(tmp_path / "sft"), cfg)


def test_the_walk_enumerates_every_optimal_reply_with_its_probability(tmp_path: Path) -> None:
    from ttt_lab.env.driver import play_games
    from ttt_lab.train.optimal_walk import walk_lines
    from ttt_lab.train.teacher import optimal_lines

    cfg = cfg_for(tmp_path)
    teacher = minimax_player(tie_break="first", think=False, scoring="exploit")
    w = walk_lines(lambda examples, opp: play_games(teacher, examples, cfg.env, opp))
    lines = optimal_lines(teacher, cfg.env)
    assert sorted(r.moves for r in w.records) == sorted(r.moves for r in lines)  # the same tree, each line once
    for first in (True, False):
        assert w.rates(first)["draw"] == pytest.approx(1.0)
    # a policy that plays the first legal cell loses lines; the probabilities still sum to one a side
    from ttt_lab.game.opponents import TableOpponent
    from ttt_lab.players.scripted import ScriptedPlayer

    class FirstLegal(TableOpponent):
        def choose(self, state: int, h: int) -> int:
            return self._table.legal[state][0]

    dumb = ScriptedPlayer(FirstLegal(), think=False)
    rates = walk_lines(lambda examples, opp: play_games(dumb, examples, cfg.env, opp)).rates()
    assert rates["win"] + rates["draw"] + rates["loss"] == pytest.approx(1.0) and rates["loss"] > 0.5


def test_the_walk_survives_a_policy_whose_replays_differ(tmp_path: Path) -> None:
    """A model's greedy reply can change with the batch it is computed in: a replay that leaves its
    line goes on as a new line, each line is kept once, and the rates still sum to one a side."""
    from ttt_lab.env.driver import play_games
    from ttt_lab.game.opponents import TableOpponent
    from ttt_lab.players.scripted import ScriptedPlayer
    from ttt_lab.train.optimal_walk import walk_lines

    cfg = cfg_for(tmp_path)
    calls = {"n": 0}

    class Fickle(TableOpponent):
        """The teacher's move, except on every third call, where it plays the last legal cell."""

        def __init__(self) -> None:
            super().__init__()
            self.best = minimax_player(tie_break="first", think=False, scoring="exploit")

        def choose(self, state: int, h: int) -> int:
            calls["n"] += 1
            if calls["n"] % 3 == 0:
                return self._table.legal[state][-1]
            return self.best.policy.choose(state, h)

    fickle = ScriptedPlayer(Fickle(), think=False)
    w = walk_lines(lambda examples, opp: play_games(fickle, examples, cfg.env, opp))
    assert w.replays_left > 0 and w.unwalked == 0
    lines = [(r.example.model_first, tuple(r.moves)) for r in w.records]
    assert len(lines) == len(set(lines))
    for first in (True, False):
        rates = w.rates(first)
        assert rates["win"] + rates["draw"] + rates["loss"] == pytest.approx(1.0)


def test_teacher_data_spreads_strengths_and_weights_the_first_player(tmp_path: Path) -> None:
    from ttt_lab.train.sft import data_coverage, keep, strength_examples, teacher_games, teacher_lines

    cfg = cfg_for(tmp_path, "train.sft.num_games=10", "train.sft.teacher_strengths=[1.0,0.5,0.25]",
                  "train.sft.optimal_lines=2", "train.sft.first_weight=4", "train.sft.teacher_tie_break=first",
                  "train.sft.teacher_scoring=exploit")
    assert [e.p_random for e in strength_examples(cfg)] == [1.0] * 4 + [0.5] * 3 + [0.25] * 3
    lines = teacher_lines(cfg)
    assert len(lines) == 79 + 2 * 4 and sum(r.example.model_first for r in lines) == 8
    records = teacher_games(cfg)
    assert len(records) == 10 + 2 * len(lines)
    cover = data_coverage(cfg, keep(records, cfg))
    assert cover["targets_covered"] == cover["targets"] == 130 and cover["target_min"] >= 2


def test_dagger_relabels_the_replies_outside_the_teachers_best_moves(two_layers: Path, tmp_path: Path) -> None:
    from transformers import AutoTokenizer

    from ttt_lab.env.dataset import make_dataset
    from ttt_lab.env.driver import play_games
    from ttt_lab.env.settings import DatasetConfig
    from ttt_lab.game.opponents import MinimaxOpponent
    from ttt_lab.game.solver import candidates
    from ttt_lab.players.scripted import random_player
    from ttt_lab.train.teacher import decisions, teacher_cell
    from ttt_lab.train.warm_up import relabel

    cfg = cfg_for(tmp_path, "train.sft.teacher_scoring=exploit", "train.sft.teacher_tie_break=first")
    tok = AutoTokenizer.from_pretrained(two_layers)
    teacher = minimax_player(tie_break="first", think=False, scoring="exploit")
    records = play_games(random_player(think=False), make_dataset(DatasetConfig(size=6, p_min=0.0, p_max=0.0), 3),
                         cfg.env, MinimaxOpponent())
    out, counts = relabel(records, tok, teacher, cfg)
    best = candidates("exploit")
    wrong = [d for r in records for d in decisions(r) if d.cell not in best[d.state]]
    assert counts["mistakes"] == len(out) == len(wrong) > 0
    for e, d in zip(out, wrong, strict=True):
        reply = tok.decode([t for t in e.labels if t != -100])
        assert reply.startswith(teacher.reply_text(teacher_cell(teacher, d.state)))
    replay = cfg_for(tmp_path, "train.sft.teacher_scoring=exploit", "train.sft.teacher_tie_break=first",
                     "train.sft.dagger_all=true")
    every, counts = relabel(records, tok, teacher, replay)
    right = [d for r in records for d in decisions(r) if d.cell in best[d.state]]
    assert counts["mistakes"] == len(wrong) and len(every) == len(wrong) + len(right)  # dagger_all: every reply
    for e, c in zip(every, [teacher_cell(teacher, d.state) for d in wrong] + [d.cell for d in right], strict=True):
        assert tok.decode([t for t in e.labels if t != -100]).startswith(teacher.reply_text(c))  # mistakes first


def test_value_dagger_relabels_only_the_replies_that_lose_the_value(two_layers: Path, tmp_path: Path) -> None:
    from transformers import AutoTokenizer

    from ttt_lab.env.dataset import make_dataset
    from ttt_lab.env.driver import play_games
    from ttt_lab.env.settings import DatasetConfig
    from ttt_lab.game.opponents import MinimaxOpponent
    from ttt_lab.game.solver import candidates
    from ttt_lab.players.scripted import random_player
    from ttt_lab.train.teacher import decisions, is_optimal, teacher_cell
    from ttt_lab.train.warm_up import relabel

    opts = ("train.sft.teacher_scoring=exploit", "train.sft.teacher_tie_break=first")
    cfg = cfg_for(tmp_path, *opts, "train.sft.dagger_mistakes=value")
    tok = AutoTokenizer.from_pretrained(two_layers)
    teacher = minimax_player(tie_break="first", think=False, scoring="exploit")
    records = play_games(random_player(think=False), make_dataset(DatasetConfig(size=12, p_min=0.0, p_max=0.0), 5),
                         cfg.env, MinimaxOpponent())
    out, counts = relabel(records, tok, teacher, cfg)
    every = [d for r in records for d in decisions(r)]
    lost = [d for d in every if not is_optimal(d.state, d.cell)]
    merely = [d for d in every if is_optimal(d.state, d.cell) and d.cell not in candidates("exploit")[d.state]]
    assert counts["mistakes"] == len(out) == len(lost) > 0 and merely  # the teacher's mode would relabel these too
    for e, d in zip(out, lost, strict=True):
        reply = tok.decode([t for t in e.labels if t != -100])
        assert reply.startswith(teacher.reply_text(teacher_cell(teacher, d.state)))
    _, teacher_counts = relabel(records, tok, teacher, cfg_for(tmp_path, *opts))
    assert teacher_counts["mistakes"] == len(lost) + len(merely)


def test_tree_dagger_relabels_every_mistake_of_the_greedy_tree(tiny_checkpoint: Path, tmp_path: Path) -> None:
    """`dagger_tree`: the policy's every-reply tree is asked once per position; each reply outside
    the teacher's best moves (or invalid) becomes one example whose only loss is the teacher's reply."""
    from transformers import AutoModelForCausalLM, AutoTokenizer

    from ttt_lab.env.dataset import Example
    from ttt_lab.env.episode import Episode
    from ttt_lab.game.opponents import MinimaxOpponent
    from ttt_lab.game.solver import candidates, table
    from ttt_lab.train.dagger_tree import mistakes, tree_relabel
    from ttt_lab.train.sft_lean import IGNORE
    from ttt_lab.train.teacher import teacher_cell

    cfg = cfg_for(tmp_path, "train.sft.teacher_scoring=exploit", "train.sft.teacher_tie_break=first")
    tok = AutoTokenizer.from_pretrained(tiny_checkpoint)
    teacher = minimax_player(tie_break="first", think=False, scoring="exploit")
    ep = Episode(Example(index=0, seed=0, p_random=0.0, model_first=True, model_symbol="X", stratum=-1), cfg.env,
                 MinimaxOpponent())
    best, state = candidates("exploit"), table().state(ep.board)
    # a best move other than the teacher's own (its tie-break plays the lowest): kept as played
    good, bad = max(best[state]), next(c for c in range(9) if c not in best[state])
    assert good != teacher_cell(teacher, state) == min(best[state])
    asked = [(ep.messages, ep.board, f"<move>{good}</move>"), (ep.messages, ep.board, f"<move>{bad}</move>"),
             (ep.messages, ep.board, "no move")]
    got, corrections, wrong = mistakes(asked, tok, teacher, cfg)
    # the best move is not relabelled; the other cell and the invalid reply are
    assert len(got) == corrections == wrong == 2
    for e in got:
        reply = tok.decode([x for x in e.labels if x != IGNORE])
        assert reply.startswith(teacher.reply_text(min(best[state]))), reply

    replay = cfg_for(tmp_path, "train.sft.teacher_scoring=exploit", "train.sft.teacher_tie_break=first",
                     "train.sft.dagger_all=true")
    every, _, wrong = mistakes(asked, tok, teacher, replay)
    assert (len(every), wrong) == (3, 2)  # dagger_all: the right reply is replayed too, as played, after the mistakes
    assert [tok.decode([x for x in e.labels if x != IGNORE]).startswith(teacher.reply_text(c))
            for e, c in zip(every, (min(best[state]), min(best[state]), good), strict=True)] == [True] * 3

    model = AutoModelForCausalLM.from_pretrained(tiny_checkpoint)
    examples, counts = tree_relabel(model, tok, cfg, teacher)
    assert counts["turns"] > 20 and 0 < counts["mistakes"] == counts["corrections"] == len(examples) <= counts["turns"]
    assert counts["random_win"] + counts["random_draw"] + counts["random_loss"] == pytest.approx(1.0)
    assert counts["exploitability"] >= counts["random_loss"]
    # the tree holds every line of the optimal opponent: its rates there are the lines' walk's
    from ttt_lab.train.runtime import Runtime
    from ttt_lab.train.warm_up import exact_vs_optimal

    lines = exact_vs_optimal(model, tok, cfg, Runtime("cpu", False, False, "sdpa", 1))
    for k in ("win", "draw", "loss"):
        assert counts[f"tree_optimal_{k}"] == pytest.approx(lines.rates()[k], abs=1e-9)
    assert counts["tree_optimal_draw_second"] == pytest.approx(lines.rates(False)["draw"], abs=1e-9)
    # its invalid replies per model message are the exact evaluation's, against either opponent
    from ttt_lab.config.schema import SuiteEntry
    from ttt_lab.evaluation.exact import exact_suite
    from ttt_lab.train.evaluate import greedy_policy

    random, optimal = exact_suite(greedy_policy(model, tok, cfg), cfg, [SuiteEntry("random", opponent="random"),
                                                                      SuiteEntry()])
    assert counts["random_invalid"] == pytest.approx(random.invalid_rate, abs=1e-9)
    assert counts["tree_optimal_invalid"] == pytest.approx(optimal.invalid_rate, abs=1e-9)


def test_reach_copies_a_mistake_by_how_often_the_evaluation_meets_its_position(two_layers: Path,
                                                                                tmp_path: Path) -> None:
    """`dagger_reach_cap`: a mistake where the evaluation's opponents arrive twice as often as the
    median mistake's position is trained on twice; one they never reach, once."""
    from transformers import AutoTokenizer

    from ttt_lab.env.dataset import Example
    from ttt_lab.env.episode import Episode
    from ttt_lab.game.opponents import MinimaxOpponent
    from ttt_lab.game.solver import candidates, table
    from ttt_lab.train.dagger_tree import mistakes

    tok, t = AutoTokenizer.from_pretrained(two_layers), table()
    teacher = minimax_player(tie_break="first", think=False, scoring="exploit")
    asked, states = [], []
    for first in (True, False):
        ep = Episode(Example(index=0, seed=0, p_random=0.0, model_first=first, model_symbol="X", stratum=-1),
                     cfg_for(tmp_path).env, MinimaxOpponent(tie_break="first"))
        state = t.state(ep.board)
        bad = next(c for c in range(9) if c not in candidates("exploit")[state] and c in t.legal[state])
        asked.append((ep.messages, ep.board, f"<move>{bad}</move>"))
        states.append(state)
    cfg = cfg_for(tmp_path, "train.sft.teacher_scoring=exploit", "train.sft.teacher_tie_break=first",
                  "train.sft.dagger_tree=true", "train.sft.dagger_reach_cap=8")
    got, corrections, wrong = mistakes(asked, tok, teacher, cfg, {states[0]: 0.75, states[1]: 0.25})
    assert (len(got), corrections, wrong) == (3, 3, 2)  # median 0.5: 1.5 -> 2 copies, 0.5 -> 1
    got, corrections, wrong = mistakes(asked, tok, teacher, cfg, {states[0]: 0.5})
    assert (corrections, wrong) == (2, 2)  # the unreached position once, the only reached one at the median
    plain = cfg_for(tmp_path, "train.sft.teacher_scoring=exploit", "train.sft.teacher_tie_break=first")
    assert mistakes(asked, tok, teacher, plain, {states[0]: 0.75, states[1]: 0.25})[1] == 2  # cap 1: once each


AT_LEVELS = {"tree_optimal_draw": 0.85, "random_win": 0.9, "random_loss": 0.02, "random_invalid": 0.0,
             "tree_optimal_invalid": 0.01}
LEVELS = ("train.sft.dagger_until.min_optimal_draw=0.85", "train.sft.dagger_until.max_random_loss=0.02",
          "train.sft.dagger_until.max_invalid=0.01")


@pytest.mark.parametrize("end", ["clean", "goal", "short", "levels", "levels_short"])
def test_tree_dagger_rounds_end_at_a_walk_with_nothing_to_correct_or_at_the_goal(
        tiny_checkpoint: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch, end: str) -> None:
    """A round whose whole-tree walk finds no reply to correct (`clean`), measures the goal the RL
    phase stops at (`goal`: exploitability 0, no invalid reply, wins against random at least
    `opponent.stop_at_wins`) or meets every level of `train.sft.dagger_until` (`levels`) ends the
    rounds: no passes after it, its walk is the end row. One short of the goal or of a level
    (`short`: 0.001 too few wins; `levels_short`: 0.0001 too many losses) does not. The walks are
    real; what they measured is replaced from the second on (the small test model is nowhere near)."""
    from ttt_lab.train import dagger_tree
    from ttt_lab.train.sft import run_sft

    real, calls = dagger_tree.tree_relabel, []
    at_goal = ({"exploitability": 0.0, "invalid_lines": 0, "random_win": 0.95 - (end == "short") * 0.001}
               if end in ("goal", "short") else AT_LEVELS | {"random_loss": 0.02 + (end == "levels_short") * 1e-4})

    def walked(model, tokenizer, cfg, player, **kw):
        out, counts = real(model, tokenizer, cfg, player, **kw)
        calls.append(counts["mistakes"])
        if len(calls) == 1:
            return out, counts
        if end == "clean":
            return out[int(counts["mistakes"]):], counts | {"mistakes": 0}
        return out, counts | at_goal

    monkeypatch.setattr(dagger_tree, "tree_relabel", walked)
    stop = ("opponent.stop_at_wins=0.95",) if end in ("clean", "goal", "short") else LEVELS
    cfg = tree_dagger_cfg(tmp_path, "train.sft.dagger_rounds=3", "train.sft.dagger_all=true", *stop)
    info = run_sft(cfg, str(tiny_checkpoint), tmp_path / "sft")
    if end.endswith("short"):
        assert len(calls) == 3 and [r["after"] for r in info["dagger"]][-1] == "DAgger end"
        assert [p["after"] for p in info["accuracy"]][-1] == "DAgger 3 epoch 1"
        return
    assert len(calls) == 2 and calls[0] > 0 and (end == "clean" or calls[1] > 0)
    assert [p["after"] for p in info["accuracy"]] == ["start", "epoch 1", "DAgger 1 epoch 1"]
    first, last = info["dagger"]
    assert (first["round"], first["mistakes"]) == (1, calls[0])
    assert (last["after"], last["round"]) == ("DAgger end", 2)
    assert last["mistakes"] == (0 if end == "clean" else calls[1])


@pytest.mark.parametrize("goal", [False, True])
def test_the_walk_that_meets_the_levels_ends_the_warm_up_over_one_that_lost_less(
        tiny_checkpoint: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch, goal: bool) -> None:
    """With `dagger_keep_best`, the rounds ended by `dagger_until` keep the weights of the walk that
    met the levels, not an earlier walk that lost less but missed them (the rates are replaced:
    the first walk loses nothing and draws half its games against the optimal opponent, the
    second loses 30 % against random, 10 % against the optimal opponent, and draws 90 %); also
    when the same walk meets `opponent.stop_at_wins` (`goal`), which ends the rounds first."""
    import torch
    from transformers import AutoModelForCausalLM

    from ttt_lab.train import dagger_tree
    from ttt_lab.train.sft import run_sft

    real, weights = dagger_tree.tree_relabel, []
    rates = [AT_LEVELS | {"random_loss": 0.0, "tree_optimal_loss": 0.0, "tree_optimal_draw": 0.5,
                          "exploitability": 1.0},
             AT_LEVELS | {"random_loss": 0.3, "tree_optimal_loss": 0.1, "tree_optimal_draw": 0.9,
                          "exploitability": 0.0, "invalid_lines": 0}]

    def walked(model, tokenizer, cfg, player, **kw):
        out, counts = real(model, tokenizer, cfg, player, **kw)
        weights.append({k: v.detach().clone() for k, v in model.state_dict().items()})
        return out, counts | rates[len(weights) - 1]

    monkeypatch.setattr(dagger_tree, "tree_relabel", walked)
    cfg = tree_dagger_cfg(tmp_path, "train.sft.dagger_rounds=3", "train.sft.dagger_keep_best=true",
                          "train.sft.dagger_until.min_optimal_draw=0.85", *["opponent.stop_at_wins=0.5"] * goal)
    info = run_sft(cfg, str(tiny_checkpoint), tmp_path / "sft")
    assert len(weights) == 2 and info["dagger"][-1]["kept"] == "DAgger 2 start"
    saved = AutoModelForCausalLM.from_pretrained(tmp_path / "sft").state_dict()
    assert all(torch.equal(saved[k], weights[1][k]) for k in saved)
    assert not all(torch.equal(saved[k], weights[0][k]) for k in saved)


@pytest.mark.parametrize("pool", ["all", "latest"])
def test_tree_dagger_weighs_every_correction_so_far(tiny_checkpoint: Path, tmp_path: Path, pool: str) -> None:
    """`dagger_mistake_weight`: a round's passes hold the latest walk's every position once and
    every correction so far (this round's and, with `dagger_pool=all`, the earlier rounds') that
    many times."""
    from ttt_lab.train.sft import run_sft

    cfg = tree_dagger_cfg(tmp_path, "train.sft.dagger_rounds=2", "train.sft.dagger_all=true",
                          "train.sft.dagger_mistake_weight=3", f"train.sft.dagger_pool={pool}")
    info = run_sft(cfg, str(tiny_checkpoint), tmp_path / "sft")
    one, two = info["dagger"][:2]
    assert one["mistakes"] > 0 and two["mistakes"] > 0  # the small test model is far from the teacher
    assert one["pool"] == one["turns"] + 2 * one["mistakes"]
    earlier = 3 * one["mistakes"] if pool == "all" else 0
    assert two["pool"] == two["turns"] + earlier + 2 * two["mistakes"]


@pytest.mark.parametrize("pool", ["all", "latest"])
def test_tree_dagger_pool_holds_the_latest_walks_corrections_or_every_rounds(tiny_checkpoint: Path, tmp_path: Path,
                                                                            pool: str) -> None:
    """`dagger_pool`: without `dagger_all`, a round's pool is its walk's corrections, after the
    earlier rounds' (`all`) or alone (`latest`)."""
    from ttt_lab.train.sft import run_sft

    cfg = tree_dagger_cfg(tmp_path, "train.sft.dagger_rounds=2", "train.sft.dagger_mistake_weight=2",
                          f"train.sft.dagger_pool={pool}")
    one, two = run_sft(cfg, str(tiny_checkpoint), tmp_path / "sft")["dagger"][:2]
    assert one["corrections"] > 0 and two["corrections"] > 0
    assert one["pool"] == 2 * one["corrections"]
    assert two["pool"] == 2 * two["corrections"] + (2 * one["corrections"] if pool == "all" else 0)


@pytest.mark.parametrize("replay", [None, 1])
def test_the_earlier_corrections_go_in_the_first_passes_only_when_asked(
        tiny_checkpoint: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch, replay: int | None) -> None:
    """`dagger_replay_passes`: with `dagger_pool=all`, a round's first that many passes go over every
    correction so far and the lines, the rest over the round's own corrections and the lines;
    unset, every pass goes over them all."""
    from ttt_lab.train import sft_lean
    from ttt_lab.train.sft import run_sft
    from ttt_lab.train.teacher_data import teacher_lines

    real, fitted = sft_lean.LeanSFT.fit_passes, []

    def fit_passes(self, passes, *a, **k):
        fitted.append([len(d) for d in passes])
        return real(self, passes, *a, **k)

    monkeypatch.setattr(sft_lean.LeanSFT, "fit_passes", fit_passes)
    more = [] if replay is None else [f"train.sft.dagger_replay_passes={replay}"]
    cfg = tree_dagger_cfg(tmp_path, "train.sft.dagger_rounds=2", "train.sft.dagger_epochs=2", *more)
    one, two = run_sft(cfg, str(tiny_checkpoint), tmp_path / "sft")["dagger"][:2]
    n = len(teacher_lines(cfg))
    assert one["corrections"] > 0 and two["corrections"] > 0 and two["pool"] > two["corrections"]
    assert fitted[1] == [one["pool"] + n] * 2  # round 1: nothing earlier
    assert fitted[2] == ([two["pool"] + n] * 2 if replay is None else [two["pool"] + n, two["corrections"] + n])


def test_replay_passes_are_a_count_of_passes(tmp_path: Path) -> None:
    from ttt_lab.errors import InvalidSetting

    with pytest.raises(InvalidSetting, match="dagger_replay_passes"):
        cfg_for(tmp_path, "train.sft.loop=lean", "train.sft.dagger_replay_passes=0")


@pytest.mark.parametrize("scheduler", [None, "linear", "cosine"])
def test_dagger_rounds_anneal_their_rate_and_the_epochs_keep_theirs(tiny_checkpoint: Path, tmp_path: Path,
                                                                    monkeypatch: pytest.MonkeyPatch,
                                                                    scheduler: str | None) -> None:
    """`dagger_lr_scheduler`: each round's passes start at the round's rate and, decaying, fall at
    every update to their last; unset, the rounds keep `lr_scheduler`'s (here constant) and the
    epochs keep theirs either way."""
    from ttt_lab.train import sft_lean
    from ttt_lab.train.sft import run_sft

    real, rates = sft_lean.LeanSFT.fit_passes, []

    def fit_passes(self, passes, schedule, *a, **k):
        rates.append([])
        real_update = self.update

        def update(*u, **v):
            rates[-1].append(self.opt.param_groups[0]["lr"])
            return real_update(*u, **v)

        self.update = update
        try:
            return real(self, passes, schedule, *a, **k)
        finally:
            del self.update

    monkeypatch.setattr(sft_lean.LeanSFT, "fit_passes", fit_passes)
    more = [] if scheduler is None else [f"train.sft.dagger_lr_scheduler={scheduler}"]
    cfg = tree_dagger_cfg(tmp_path, "train.sft.dagger_rounds=2", "train.sft.dagger_epochs=2",
                          "train.sft.learning_rate=1e-3", "train.sft.lr_scheduler=constant",
                          "train.sft.dagger_learning_rate=5e-4", "train.sft.batch_size=4", *more)
    run_sft(cfg, str(tiny_checkpoint), tmp_path / "sft")
    epochs, *rounds = rates
    assert len(rounds) == 2 and all(len(r) > 2 for r in rounds)
    assert epochs == [pytest.approx(1e-3)] * len(epochs)
    for r in rounds:
        assert r[0] == pytest.approx(5e-4)
        if scheduler is None:
            assert r == [pytest.approx(5e-4)] * len(r)
        else:
            assert all(a > b > 0 for a, b in itertools.pairwise(r))


def test_dagger_rounds_take_a_known_scheduler_only(tmp_path: Path) -> None:
    from ttt_lab.errors import InvalidSetting

    with pytest.raises(InvalidSetting, match=r"dagger_lr_scheduler.*constant \| linear \| cosine"):
        cfg_for(tmp_path, "train.sft.loop=lean", "train.sft.dagger_lr_scheduler=warmup")


@pytest.mark.parametrize("lines", [True, False])
def test_tree_dagger_passes_go_over_the_teachers_lines_or_the_corrections_alone(
        tiny_checkpoint: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch, lines: bool) -> None:
    """`dagger_lines`: a round's passes hold its pool and, unless switched off, the teacher's lines
    against the optimal opponent."""
    from ttt_lab.train import sft_lean
    from ttt_lab.train.sft import run_sft
    from ttt_lab.train.teacher_data import teacher_lines

    real, fitted = sft_lean.LeanSFT.fit_passes, []

    def fit_passes(self, passes, *a, **k):
        fitted.append([len(d) for d in passes])
        return real(self, passes, *a, **k)

    monkeypatch.setattr(sft_lean.LeanSFT, "fit_passes", fit_passes)
    cfg = tree_dagger_cfg(tmp_path, "train.sft.dagger_rounds=1", "train.sft.dagger_pool=latest",
                          f"train.sft.dagger_lines={str(lines).lower()}")
    one = run_sft(cfg, str(tiny_checkpoint), tmp_path / "sft")["dagger"][0]
    assert one["pool"] > 0 and teacher_lines(cfg) and len(fitted) == 2  # the epochs, then the round's passes
    assert fitted[1] == [one["pool"] + (len(teacher_lines(cfg)) if lines else 0)]  # one pass (dagger_epochs=1)


def test_tree_dagger_weighs_corrections_by_the_evaluations_reach(tiny_checkpoint: Path, tmp_path: Path) -> None:
    """`dagger_reach_cap`: a round's pool holds each mistake between once and the cap times, the
    ones the evaluation's opponents meet most often more than once."""
    from ttt_lab.train.sft import run_sft

    cfg = tree_dagger_cfg(tmp_path, "train.sft.dagger_rounds=1", "train.sft.dagger_reach_cap=4")
    one = run_sft(cfg, str(tiny_checkpoint), tmp_path / "sft")["dagger"][0]
    assert one["mistakes"] < one["corrections"] == one["pool"] <= 4 * one["mistakes"]


def test_the_dagger_walk_is_the_tree_later_walks_of_the_same_weights_read(tiny_checkpoint: Path, tmp_path: Path,
                                                                           monkeypatch: pytest.MonkeyPatch) -> None:
    """The warm-up's evaluation and the RL phase's first refresh walk the policy DAgger's last
    walk measured: that tree is kept and handed to them (even for the weights loaded anew), not
    expanded again; weights that moved since get their own."""
    import torch
    from transformers import AutoModelForCausalLM, AutoTokenizer

    import ttt_lab.env.exact as exact
    from ttt_lab.evaluation import trees
    from ttt_lab.train.dagger_tree import tree_relabel
    from ttt_lab.train.exploiter import greedy_tree

    cfg = cfg_for(tmp_path, "train.sft.teacher_scoring=exploit", "train.sft.teacher_tie_break=first")
    tok = AutoTokenizer.from_pretrained(tiny_checkpoint)
    model = AutoModelForCausalLM.from_pretrained(tiny_checkpoint)
    teacher = minimax_player(tie_break="first", think=False, scoring="exploit")
    expanded, real = [], exact.expand_tree

    def expand(*a, **k):
        expanded.append(real(*a, **k))
        return expanded[-1]

    monkeypatch.setattr(exact, "expand_tree", expand)
    monkeypatch.setattr(trees, "expand_tree", expand)
    trees.forget()
    try:
        tree_relabel(model, tok, cfg, teacher)
        assert len(expanded) == 1
        assert greedy_tree(AutoModelForCausalLM.from_pretrained(tiny_checkpoint), tok, cfg) is expanded[0]
        assert len(expanded) == 1
        with torch.no_grad():
            next(model.parameters()).add_(1.0)
        assert greedy_tree(model, tok, cfg) is expanded[1] and len(expanded) == 2
    finally:
        trees.forget()


@settings(max_examples=60, deadline=None)
@given(st.lists(st.floats(0.0, 1.0, allow_nan=False), min_size=1, max_size=40), st.integers(1, 12))
def test_reach_copies_stay_within_one_and_the_cap_and_follow_the_reach(reaches: list[float], cap: int) -> None:
    from ttt_lab.train.dagger_tree import reach_copies

    states = list(range(len(reaches)))
    got = reach_copies(states, dict(zip(states, reaches, strict=True)), cap)
    assert all(1 <= n <= cap for n in got)
    order = sorted(states, key=lambda s: reaches[s])
    assert [got[s] for s in order] == sorted(got)  # more often met: never fewer copies
    assert reach_copies(states, None, cap) == [1] * len(states) == reach_copies(states, dict(enumerate(reaches)), 1)
    positive = sorted(r for r in reaches if r > 0.0)
    if positive:
        mid = statistics.median(positive)
        for r, n in zip(reaches, got, strict=True):
            assert n == cap if r >= (cap + 0.5) * mid else abs(n - min(cap, max(1.0, r / mid))) <= 0.5 + 1e-9


@pytest.mark.parametrize("best", ["first", "last"])
def test_tree_dagger_keeps_the_weights_of_the_round_that_lost_least(
        tiny_checkpoint: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch, best: str) -> None:
    """`dagger_keep_best`: the warm-up's checkpoint holds the weights whose whole-tree walk lost
    least, the first round's (before any pass) when every later walk lost more, the last walk's
    when each walk lost less. The walks are real; their losses are replaced."""
    from transformers import AutoModelForCausalLM

    from ttt_lab.evaluation.trees import weights_digest
    from ttt_lab.train import dagger_tree, warm_up
    from ttt_lab.train.sft import run_sft

    real, digests = dagger_tree.tree_relabel, []

    def walked(model, tokenizer, cfg, player, **kw):
        out, counts = real(model, tokenizer, cfg, player, **kw)
        digests.append(weights_digest(model))
        loss = 0.1 * len(digests) if best == "first" else 1.0 - 0.1 * len(digests)
        return out, counts | {"random_loss": loss, "tree_optimal_loss": loss}

    def no_lines(*args, **kw):
        raise AssertionError("a whole-tree round reads the optimal opponent's lines off its tree")

    monkeypatch.setattr(dagger_tree, "tree_relabel", walked)
    monkeypatch.setattr(warm_up, "exact_vs_optimal", no_lines)
    cfg = tree_dagger_cfg(tmp_path, "train.sft.dagger_rounds=2", "train.sft.dagger_keep_best=true",
                          "train.sft.learning_rate=1e-2")
    info = run_sft(cfg, str(tiny_checkpoint), tmp_path / "sft")
    assert len(digests) == 3 and len(set(digests)) == 3  # two rounds' walks and the end's, each other weights
    assert info["dagger"][-1]["kept"] == ("DAgger 1 start" if best == "first" else "DAgger end")
    last = info["dagger"][-2]  # the last passes' walk has its row, whichever weights are kept
    assert last["after"] == "DAgger last passes"
    assert last["random_loss"] == pytest.approx(0.3 if best == "first" else 0.7)
    end = info["dagger"][-1]  # the kept weights' row is read, not walked again
    assert end["optimal_loss"] == info["dagger"][0 if best == "first" else -2]["optimal_loss"]
    saved = AutoModelForCausalLM.from_pretrained(tmp_path / "sft")
    assert weights_digest(saved) == digests[0 if best == "first" else -1]


@pytest.mark.parametrize("frozen", [False, True])
def test_the_passes_attention_kernel_is_switched_for_the_update_only(two_layers: Path, tmp_path: Path,
                                                                     frozen: bool) -> None:
    """`train.sft.attention`: an update computes attention with the kernel asked for (seen by every
    attention layer while it runs, forward and frozen contexts alike), the model keeps its own
    kernel after it, and the step is the one its own kernel takes (the same attention; fp64)."""
    from transformers import AutoModelForCausalLM, AutoTokenizer

    from ttt_lab.train.sft_lean import LeanSFT, encode

    cfg = cfg_for(tmp_path)
    tok = AutoTokenizer.from_pretrained(two_layers)
    data = [encode(tok, r.messages) for r in games(cfg, 4)]
    if frozen:  # single-reply positions: each has a context, computed without gradient
        data = [encode(tok, r.messages[: [i for i, m in enumerate(r.messages) if m["role"] == "assistant"][1] + 1],
                       [False, True]) for r in games(cfg, 4)]
        assert all(e.context for e in data)
    seen: list[str] = []
    steps = []
    for kernel in (None, "eager"):
        model = AutoModelForCausalLM.from_pretrained(two_layers, attn_implementation="sdpa", dtype=torch.float64)
        for layer in model.model.layers:
            layer.self_attn.register_forward_pre_hook(lambda m, a: seen.append(m.config._attn_implementation))
        loop = LeanSFT(model, tok, learning_rate=1e-3, batch_size=4, micro_batch_size=2, bf16=False, seed=0,
                       attention=kernel)
        seen.clear()
        loss = loop.update(data, frozen_context=frozen)
        assert seen and set(seen) == {kernel or "sdpa"}
        assert model.config._attn_implementation == "sdpa"
        steps.append((loss, [p.detach().clone() for p in model.parameters()]))
    (own, own_weights), (eager, eager_weights) = steps
    assert eager == pytest.approx(own, rel=1e-6)
    for a, b in zip(own_weights, eager_weights, strict=True):  # within a thousandth of Adam's 1e-3 step
        torch.testing.assert_close(a, b, rtol=0, atol=1e-6)


def test_the_passes_kernel_is_a_lean_loop_setting(tmp_path: Path) -> None:
    from ttt_lab.errors import InvalidSetting

    with pytest.raises(InvalidSetting, match=r"train\.sft\.attention.*sdpa.*eager"):
        cfg_for(tmp_path, "train.sft.loop=lean", "train.sft.attention=flash")
    with pytest.raises(InvalidSetting, match=r"train\.sft\.attention.*loop=lean"):
        cfg_for(tmp_path, "train.sft.loop=trl", "train.sft.attention=eager")
    assert cfg_for(tmp_path, "train.sft.loop=lean", "train.sft.attention=eager").train.sft.attention == "eager"


def test_a_round_with_nothing_of_its_own_replays_the_pool_alone() -> None:
    """`_passes` leaves out a pass with nothing in it (no corrections of the round's own and no
    lines): a pass over nothing would stop the loop."""
    from ttt_lab.config.sft_schema import SftConfig
    from ttt_lab.train.warm_up import _passes

    s = SftConfig(dagger_epochs=3, dagger_replay_passes=1)
    assert _passes(s, ["a", "b"], [], []) == [["a", "b"]]  # type: ignore[list-item]
    assert _passes(s, ["a", "b"], ["b"], ["L"]) == [["a", "b", "L"], ["b", "L"], ["b", "L"]]  # type: ignore[list-item]
    assert _passes(SftConfig(dagger_epochs=2), ["a"], ["a"], ["L"]) == [["a", "L"]] * 2  # type: ignore[list-item]
    assert _passes(SftConfig(dagger_epochs=2, dagger_replay_passes=5), ["a"], [], []) == [["a"]] * 2  # type: ignore[list-item]
