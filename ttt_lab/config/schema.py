"""The typed schema of the whole configuration: the one source of truth for defaults.

Registered in Hydra's ConfigStore as `base_config`; the YAML files under `conf/` only
select groups and override values. `validate()` checks ranges and choices that types
alone cannot express, naming the dotted key, the value and what is allowed.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field
from typing import Any

from ttt_lab.config.audit_schema import (  # noqa: F401  (part of the schema, imported from here too)
    AuditConfig,
    DatasetAuditConfig,
    OpponentAuditConfig,
    PolicyAuditConfig,
    ReportConfig,
    StabilityConfig,
    validate_audit,
    validate_report,
)
from ttt_lab.config.eval_schema import (  # noqa: F401  (part of the schema, imported from here too)
    EVAL_MODES,
    OPPONENT_KINDS,
    EvalConfig,
    SuiteEntry,
    TrackingConfig,
    validate_eval,
    validate_tracking,
)
from ttt_lab.config.launcher_schema import LauncherConfig, validate_launcher
from ttt_lab.config.sft_schema import LR_SCHEDULERS, SftConfig, validate_sft
from ttt_lab.config.study_schema import StudyConfig, validate_study
from ttt_lab.env.episode import SEEDINGS
from ttt_lab.env.settings import DatasetConfig, EnvConfig, check_integer, check_number, check_one_of
from ttt_lab.errors import InvalidSetting
from ttt_lab.game.opponents import SCORINGS, TIE_BREAKS
from ttt_lab.names import is_name

PLAYER_KINDS = ("scripted", "hf", "openai")
SCRIPTED_POLICIES = ("minimax", "random")

PRECISIONS = ("auto", "fp32", "bf16")
TINY_TOKENS = ("rows", "compact", "words")
ATTENTIONS = ("auto", "eager", "sdpa")
COMPILES = ("auto", "true", "false")
DTYPES = ("float32", "bfloat16", "float16")
DEVICE = re.compile(r"cpu|mps|(cuda|xpu)(:[0-9]+)?")
LOSS_TYPES = ("grpo", "dr_grpo", "dapo", "bnpo", "cispo", "sapo", "luspo", "vespo")


@dataclass
class OpponentConfig:
    _target_: str = "ttt_lab.game.opponents.MinimaxOpponent"
    """Any class with `reply(board, seed) -> int`; built-ins take the fields below."""
    tie_break: str = "random"
    scoring: str = "value"
    p_random: float = 0.0
    """Used where no example sets it (e.g. `play`); datasets and eval suites set their own."""
    seeding: str = "per_example"
    """per_example: replies derive from (example seed, position), so the rollouts of one
    example meet the same opponent; per_game: every game gets its own stream (ablation)."""
    params: dict[str, Any] = field(default_factory=dict)
    """Extra keyword arguments for a user-defined opponent class."""
    exploit_share: float = 1.0
    """opponent=exploiter: the share of games (chosen per example) in which it plays the best
    response to the policy being trained; the others are minimax games. A phase may set its own
    (`opponent=exploiter` itself sets 0.5)."""
    refresh_every: int = 10
    """opponent=exploiter: optimizer steps between two best responses, each computed from the
    policy as it is then (greedy, every opponent reply walked)."""
    keep: str = "best"
    """opponent=exploiter: the policy an exploiting phase ends with: best (the least exploitable
    its refreshes measured) or last. A study comparing exploitability across arms uses last: a
    selection on the compared metric favours the arm that selects."""
    stop_at_wins: float | None = None
    """opponent=exploiter: an exploiting phase stops at the first refresh that measures its greedy
    policy unbeatable (exploitability 0, no line of its every-reply tree with an invalid reply) and
    winning at least this share against the random opponent (exact, from the same tree): the
    games after it are not needed. null: every step runs."""


@dataclass
class PlayerConfig:
    kind: str = "scripted"
    policy: str = "minimax"
    """Scripted players only: minimax | random."""
    tie_break: str = "random"
    scoring: str = "value"
    """Scripted minimax: which best moves it chooses among (value | fast | exploit, as `opponent.scoring`)."""
    p_random: float = 0.0
    """Scripted players write `<think>` when `env.think` is not off: one setting for both."""
    temperature: float = 0.0
    """0 means greedy decoding."""
    max_new_tokens: int = 128
    batch_size: int = 64
    kv_cache: bool = True
    """A local model's (`player=hf`) sampled evaluation: true plays up to `batch_size` games as one
    batch through the training's KV-cache engine, the model's own reply tokens kept in its context;
    false asks `generate` turn by turn, each conversation rendered and tokenized again (as an
    OpenAI-compatible server reads it; much slower)."""
    base_url: str = "http://127.0.0.1:8000/v1"
    served_model: str = ""
    """Model name sent to an OpenAI-compatible endpoint; defaults to `model.path`."""
    api_key_env: str = "OPENAI_API_KEY"
    concurrency: int = 8
    max_retries: int = 2
    timeout_s: float = 30.0


@dataclass
class LoraConfig:
    r: int = 0
    """0 trains all weights; > 0 trains LoRA adapters of this rank."""
    alpha: int = 16
    dropout: float = 0.0


@dataclass
class ModelConfig:
    name: str = "tiny"
    path: str = ""
    """Hub id or local checkpoint; empty for `tiny`, which is built offline under runs/models, and
    for a model shipped in a Python package (`package`)."""
    package: str = ""
    """An installed Python package that ships the weights as a GGUF file (`gguf_file`): converted
    once to a checkpoint under runs/models, so no hub is needed (`model=smollm2-135m`)."""
    gguf_file: str = ""
    dtype: str = "float32"
    device: str = "cpu"
    hidden_size: int = 128
    num_layers: int = 4
    num_heads: int = 4
    intermediate_size: int = 512
    tokens: str = "rows"
    """The tiny model's tokenizer: `rows` (one token per board row, per row's free cells, per status
    sentence with its cell, per move: ~50 tokens a game), `compact` (one token per board cell and
    per free cell: ~120 tokens a game) or `words` (word by word, the tokenizer of the first
    releases: ~280 tokens a game). Kept for comparison and to rerun older runs."""
    attention: str = "auto"
    """transformers' attention kernel: eager | sdpa | auto. auto: the kernel `engine.precision.attention`
    picks for each use (training, playing)."""
    lora: LoraConfig = field(default_factory=LoraConfig)


@dataclass
class PhaseConfig:
    name: str = "rl"
    steps: int = 50
    batch_size: int = 64
    """Games per optimizer update = prompts x num_generations."""
    num_generations: int = 8
    learning_rate: float = 5e-5
    temperature: float = 1.0
    loss_type: str = "dapo"
    epsilon_high: float = 0.28
    """Upper clip of the importance ratio (TRL's epsilon_high; DAPO's 0.28; about 5.0 for cispo)."""
    beta: float = 0.0
    """KL coefficient against the phase's starting model; 0 loads no reference model."""
    lr_scheduler: str = "constant"
    """transformers' scheduler name, one of `LR_SCHEDULERS` (constant, linear, cosine, ...)."""
    warmup_steps: int = 0
    p_min: float | None = None
    p_max: float | None = None
    num_strata: int | None = None
    """Opponent-strength range and strata of this phase; unset means `dataset.*`."""
    exploit_share: float | None = None
    """opponent=exploiter: this phase's share of exploiting games; unset means `opponent.exploit_share`."""


@dataclass
class TrainConfig:
    sft: SftConfig = field(default_factory=SftConfig)
    phases: list[PhaseConfig] = field(default_factory=lambda: [PhaseConfig()])
    budget_games: int | None = None
    """When set, each phase runs budget_games / batch_size steps (fair batch-size studies)."""
    eval_every: int = 0
    """Evaluate against the random and optimal opponents every this many steps (0: never)."""
    eval_games: int = 100
    """Games per opponent in those evaluations (and before RL, on the SFT checkpoint)."""
    save_every: int = 25
    saves_per_phase: int = 4
    """An RL phase saves a trainer checkpoint (to resume from) every min(save_every, steps //
    saves_per_phase) steps, at least every step; only the newest one is kept."""
    micro_batch_size: int = 32
    """Games per forward/backward pass of an RL update (and of an SFT update); gradients accumulate
    over the batch's games (one optimizer step). Smaller passes use less memory."""
    gradient_checkpointing: bool = False
    """Recompute activations during the backward pass (TRL's SFT and RL) to save memory: for large
    models on a GPU. Off by default: a small model has no memory to save and would pay about a
    quarter more compute (TRL's SFT turns it on unless told)."""
    precision: str = "auto"
    """Matmul precision of SFT, RL updates and rollouts: fp32, or bf16 autocast over fp32 master
    weights. auto: bf16 where the hardware computes it natively (a CUDA GPU with bf16; a CPU
    with AVX512-BF16 or AMX), else fp32, saying so in one line."""
    compile: str = "auto"
    """torch.compile the model for TRL's SFT and RL updates (the trainer's `torch_compile`; the lean
    warm-up loop runs uncompiled): true | false |
    auto. auto: off, saying why in one line: on a CPU compiling costs more than it saves in a run
    of minutes (docs/benchmarks.md); not yet measured on a GPU (true to try it there)."""
    processes: int = 1
    """Training processes on this machine (torch.distributed through accelerate: gloo on CPU, one
    GPU each with NCCL): each RL update's batch_size games are split into whole GRPO groups, each
    process plays and trains its share; the SFT batch is split likewise. Rank 0 tracks, evaluates
    and writes checkpoints. Each phase's batch_size must be a multiple of processes x
    num_generations, and train.sft.batch_size of processes."""
    use_vllm: bool = False
    """Generate the rollouts' turns with vLLM through TRL (GPU and the vllm package)."""
    vllm_mode: str = "colocate"
    """colocate: vLLM shares the training GPU; server: a `trl vllm-serve --model PATH` process."""
    vllm_gpu_memory_utilization: float = 0.3
    """Share of GPU memory a colocated vLLM may take (the rest is training's)."""
    vllm_server_base_url: str = ""
    """server mode: the `trl vllm-serve` URL (empty: TRL's default, http://0.0.0.0:8000)."""


@dataclass
class Config:
    seed: int = 0
    home: str = "${oc.env:TTT_LAB_HOME,runs}"
    env: EnvConfig = field(default_factory=EnvConfig)
    dataset: DatasetConfig = field(default_factory=DatasetConfig)
    opponent: OpponentConfig = field(default_factory=OpponentConfig)
    player: PlayerConfig = field(default_factory=PlayerConfig)
    model: ModelConfig = field(default_factory=ModelConfig)
    train: TrainConfig = field(default_factory=TrainConfig)
    eval: EvalConfig = field(default_factory=EvalConfig)
    tracking: TrackingConfig = field(default_factory=TrackingConfig)
    audit: AuditConfig = field(default_factory=AuditConfig)
    report: ReportConfig = field(default_factory=ReportConfig)
    launcher: LauncherConfig = field(default_factory=LauncherConfig)
    study: StudyConfig = field(default_factory=StudyConfig)


def _validate_phase_range(p: PhaseConfig, at: str, d: DatasetConfig) -> None:
    """The phase's opponent range as training will use it (an unset end is `dataset.*`), checked
    before anything is built: a reversed range would otherwise surface after the SFT warm-up."""
    lo = d.p_min if p.p_min is None else p.p_min
    hi = d.p_max if p.p_max is None else p.p_max
    if lo > hi:
        lo_key = "dataset.p_min" if p.p_min is None else f"{at}.p_min"
        hi_key = "dataset.p_max" if p.p_max is None else f"{at}.p_max"
        raise InvalidSetting(lo_key, lo, f"a number no larger than {hi_key} ({hi}), the other end of {at}'s "
                             "range of opponents' random-move probabilities")


def _validate_phase(p: PhaseConfig, at: str) -> None:
    if not is_name(p.name):
        raise InvalidSetting(f"{at}.name", p.name, "letters, digits and . _ - (up to 128, starting with a letter "
                             "or digit, no '..'): the phase's checkpoints go in a folder of that name")
    check_integer(f"{at}.steps", p.steps, 1)
    check_integer(f"{at}.batch_size", p.batch_size, 1)
    check_integer(f"{at}.num_generations", p.num_generations, 1)
    if p.batch_size % p.num_generations:
        raise InvalidSetting(f"{at}.batch_size", p.batch_size,
                             f"a multiple of {at}.num_generations ({p.num_generations})")
    check_number(f"{at}.learning_rate", p.learning_rate, 0.0)
    if p.exploit_share is not None:
        check_number(f"{at}.exploit_share", p.exploit_share, 0.0, 1.0)
    check_number(f"{at}.temperature", p.temperature, 0.0)
    if p.temperature == 0:
        raise InvalidSetting(f"{at}.temperature", p.temperature, "a number above 0: GRPO samples a group of "
                             "completions and scales the logits by 1/temperature, so 0 makes them alike and "
                             "divides by zero")
    check_one_of(f"{at}.loss_type", p.loss_type, LOSS_TYPES)
    check_number(f"{at}.epsilon_high", p.epsilon_high, 0.0)
    check_number(f"{at}.beta", p.beta, 0.0)
    check_one_of(f"{at}.lr_scheduler", p.lr_scheduler, LR_SCHEDULERS)
    check_integer(f"{at}.warmup_steps", p.warmup_steps, 0)
    for name in ("p_min", "p_max"):
        if getattr(p, name) is not None:
            check_number(f"{at}.{name}", getattr(p, name), 0.0, 1.0)
    if p.num_strata is not None:
        check_integer(f"{at}.num_strata", p.num_strata, 1)


def _validate_processes(t: TrainConfig) -> None:
    check_integer("train.processes", t.processes, 1)
    n = t.processes
    for i, p in enumerate(t.phases):
        if p.batch_size % (n * p.num_generations):
            fits = [k for k in range(1, n + 1) if p.batch_size % (k * p.num_generations) == 0]
            raise InvalidSetting("train.processes", n, f"a number that splits train.phases.{i}.batch_size "
                                 f"({p.batch_size} games) into whole groups of {p.num_generations} per process: "
                                 f"{', '.join(map(str, fits))} here, or a batch_size that is a multiple of "
                                 f"{n * p.num_generations}")
    if t.sft.enabled and t.sft.loop == "lean" and n > 1:
        raise InvalidSetting("train.processes", n, "1 while train.sft.loop=lean (ttt-lab's own warm-up loop and its "
                             "DAgger rounds run in one process): train.sft.loop=trl train.sft.dagger_rounds=0 for a "
                             "warm-up split across processes (experiment=tiny_cpu_two_phases is tiny_cpu so), or "
                             "train the warm-up in one process first")
    if t.sft.enabled and t.sft.batch_size % n:
        raise InvalidSetting("train.processes", n, f"a divisor of train.sft.batch_size ({t.sft.batch_size}), which "
                             "is split across the processes, or a train.sft.batch_size that is a multiple of it")


def warm_up_seed(cfg: Config) -> int:
    """The seed of the warm-up and of the base model it starts from (`train.sft.seed`, else `seed`)."""
    return cfg.seed if cfg.train.sft.seed is None else cfg.train.sft.seed


def _validate_trains_something(t: TrainConfig) -> None:
    """Without a warm-up or an RL phase a training would evaluate the untrained model and report
    it as its result: refused, pointing at the command that evaluates a model as it is."""
    if not t.sft.enabled and not t.phases:
        raise InvalidSetting("train.phases", [], "at least one RL phase (phase=single or phase=two_stage) when "
                             "train.sft.enabled is false, or the SFT warm-up (train.sft.enabled=true): this "
                             "configuration would train nothing. To evaluate a model as it is, use `ttt-lab eval` "
                             "(e.g. `ttt-lab eval player=hf model.path=DIR`, without phase= or train.* overrides)")


def _validate_model(m: ModelConfig) -> None:
    """The model's settings, checked before anything loads: a bad dtype or device would otherwise
    fail inside torch after a run was opened."""
    check_one_of("model.dtype", m.dtype, DTYPES)
    if not isinstance(m.device, str) or not DEVICE.fullmatch(m.device):
        raise InvalidSetting("model.device", m.device, "cpu, mps, cuda, cuda:N, xpu or xpu:N (a torch device)")
    check_one_of("model.tokens", m.tokens, TINY_TOKENS)
    check_one_of("model.attention", m.attention, ATTENTIONS)
    for name in ("hidden_size", "num_layers", "num_heads", "intermediate_size"):
        check_integer(f"model.{name}", getattr(m, name), 1)
    if m.hidden_size % m.num_heads:
        raise InvalidSetting("model.hidden_size", m.hidden_size,
                             f"a multiple of model.num_heads ({m.num_heads}): each head takes an equal share")
    check_integer("model.lora.r", m.lora.r, 0)
    check_integer("model.lora.alpha", m.lora.alpha, 1)
    check_number("model.lora.dropout", m.lora.dropout, 0.0, 1.0)
    if m.lora.dropout == 1.0:
        raise InvalidSetting("model.lora.dropout", m.lora.dropout, "a number from 0 up to, not including, 1")


def validate(cfg: Config) -> Config:
    """Check everything types cannot; raises `InvalidSetting` on the first problem."""
    validate_tracking(cfg.tracking)
    validate_study(cfg.study)
    if isinstance(cfg.seed, bool) or not isinstance(cfg.seed, int) or not 0 <= cfg.seed < 2**32:
        raise InvalidSetting("seed", cfg.seed, f"an integer from 0 to {2**32 - 1} (the seed numpy and torch take)")
    cfg.env.validate("env")
    cfg.dataset.validate("dataset")
    o = cfg.opponent
    check_one_of("opponent.tie_break", o.tie_break, TIE_BREAKS)
    check_one_of("opponent.scoring", o.scoring, SCORINGS)
    check_number("opponent.p_random", o.p_random, 0.0, 1.0)
    check_one_of("opponent.seeding", o.seeding, SEEDINGS)
    check_number("opponent.exploit_share", o.exploit_share, 0.0, 1.0)
    check_integer("opponent.refresh_every", o.refresh_every, 1)
    check_one_of("opponent.keep", o.keep, ("best", "last"))
    if o.stop_at_wins is not None:
        check_number("opponent.stop_at_wins", o.stop_at_wins, 0.0, 1.0)
    pl = cfg.player
    check_one_of("player.kind", pl.kind, PLAYER_KINDS)
    check_one_of("player.policy", pl.policy, SCRIPTED_POLICIES)
    check_one_of("player.tie_break", pl.tie_break, TIE_BREAKS)
    check_one_of("player.scoring", pl.scoring, SCORINGS)
    check_number("player.p_random", pl.p_random, 0.0, 1.0)
    check_number("player.temperature", pl.temperature, 0.0)
    for name in ("max_new_tokens", "batch_size", "concurrency"):
        check_integer(f"player.{name}", getattr(pl, name), 1)
    check_integer("player.max_retries", pl.max_retries, 0)
    check_number("player.timeout_s", pl.timeout_s, 0.001)
    for i, phase in enumerate(cfg.train.phases):
        _validate_phase(phase, f"train.phases.{i}")
        _validate_phase_range(phase, f"train.phases.{i}", cfg.dataset)
    _validate_processes(cfg.train)
    if cfg.train.budget_games is not None:
        check_integer("train.budget_games", cfg.train.budget_games, 1)
    check_one_of("train.vllm_mode", cfg.train.vllm_mode, ("colocate", "server"))
    check_number("train.vllm_gpu_memory_utilization", cfg.train.vllm_gpu_memory_utilization, 0.01, 1.0)
    check_one_of("train.precision", cfg.train.precision, PRECISIONS)
    _validate_model(cfg.model)
    check_one_of("train.compile", str(cfg.train.compile).lower(), COMPILES)
    check_integer("train.eval_every", cfg.train.eval_every, 0)
    check_integer("train.eval_games", cfg.train.eval_games, 1)
    check_integer("train.micro_batch_size", cfg.train.micro_batch_size, 1)
    check_integer("train.save_every", cfg.train.save_every, 1)
    check_integer("train.saves_per_phase", cfg.train.saves_per_phase, 1)
    validate_sft(cfg.train.sft)
    _validate_trains_something(cfg.train)
    validate_eval(cfg.eval)
    validate_audit(cfg.audit)
    validate_report(cfg.report)
    validate_launcher(cfg.launcher)
    return cfg
