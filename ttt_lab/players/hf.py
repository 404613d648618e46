"""A local transformers model as a player: batched, left-padded generation on CPU or GPU, turn by
turn (`respond`), or whole games through the training's batched KV-cache engine (`play_games`)."""

from __future__ import annotations

import os
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import TYPE_CHECKING

from ttt_lab import log
from ttt_lab.config.schema import Config, warm_up_seed
from ttt_lab.env.episode import Turn
from ttt_lab.errors import TttLabError
from ttt_lab.players.quiet import quiet_transformers

if TYPE_CHECKING:
    from ttt_lab.env.dataset import Example
    from ttt_lab.env.record import GameRecord
    from ttt_lab.env.settings import EnvConfig
    from ttt_lab.game.opponents import Opponent

LOG = log.get("players")


class ModelLoadError(TttLabError):
    pass


def _looks_local(path: str) -> bool:
    """A filesystem path rather than a hub id (`org/name`): absolute, relative to here or home."""
    return path.startswith(("/", "./", "../", "~")) or path in (".", "..") or os.path.exists(path)


def check_local_checkpoint(path: str) -> str:
    """`path` with `~` expanded; a clear error for a local path that is not a checkpoint folder
    (transformers would otherwise read it as a malformed hub id)."""
    if not _looks_local(path):
        return path
    folder = Path(path).expanduser()
    where = f"model.path {path!r}"
    if not folder.exists():
        raise ModelLoadError(f"{where} does not exist on this machine. Set model.path to a checkpoint folder "
                             "(`ttt-lab train` ends by printing the one it wrote: checkpoint: "
                             "runs/train/<hash>/<phase>) or a hub id reachable from this machine.")
    if not (folder / "config.json").is_file():
        raise ModelLoadError(f"{where} is not a checkpoint folder: it holds no config.json. A checkpoint folder "
                             "has config.json, the weights and the tokenizer files, as `ttt-lab train` writes "
                             "under runs/train/<hash>/<phase>/.")
    return str(folder)


def resolve_model_path(cfg: Config) -> str:
    if cfg.model.path:
        return check_local_checkpoint(cfg.model.path)
    if cfg.model.name == "tiny":
        from ttt_lab.players.tiny import ensure_tiny

        return str(ensure_tiny(Path(cfg.home), cfg.model, warm_up_seed(cfg)))
    if cfg.model.package:
        from ttt_lab.players.packaged import ensure_packaged

        return str(ensure_packaged(Path(cfg.home), cfg.model))
    raise ModelLoadError(f"model '{cfg.model.name}' has no path. Set model.path to a hub id or checkpoint folder.")


class HFPlayer:
    def __init__(self, path: str, *, device: str = "cpu", dtype: str = "float32", temperature: float = 0.0,
                 max_new_tokens: int = 128, batch_size: int = 64, seed: int = 0, bf16: bool = False,
                 kv_cache: bool = True, attention: str | None = None) -> None:
        """`attention`: transformers' attention kernel (`attn_implementation`; None: its default)."""
        quiet_transformers()
        import torch
        from transformers import AutoModelForCausalLM, AutoTokenizer

        try:
            self.tokenizer = AutoTokenizer.from_pretrained(path)
            # transformers declares PreTrainedModel.to with @wraps(nn.Module.to), so mypy reads the
            # bound method as the unbound one and expects the model as its first argument
            kernel = {"attn_implementation": attention} if attention else {}
            self.model = AutoModelForCausalLM.from_pretrained(path, dtype=getattr(torch, dtype), **kernel).to(device)  # type: ignore[arg-type]
        except (OSError, ValueError) as e:
            first = str(e).strip().splitlines()[0].rstrip(".") if str(e).strip() else type(e).__name__
            raise ModelLoadError(
                f"cannot load the model from {path!r}: {first}. Set model.path to a local checkpoint folder "
                "(config.json, weights, tokenizer) or a hub id reachable from this machine."
            ) from e
        self._setup(path, device=device, temperature=temperature, max_new_tokens=max_new_tokens,
                    batch_size=batch_size, seed=seed)
        self.bf16, self.kv_cache = bf16, kv_cache

    def _setup(self, path: str, *, device: str, temperature: float, max_new_tokens: int, batch_size: int,
               seed: int) -> None:
        import torch

        self.tokenizer.padding_side = "left"
        if self.tokenizer.pad_token_id is None:
            self.tokenizer.pad_token = self.tokenizer.eos_token
        self.model.eval()
        self.device, self.temperature = device, temperature
        self.max_new_tokens, self.batch_size = max_new_tokens, batch_size
        self._generator = torch.Generator().manual_seed(seed)
        self.path, self.bf16, self.kv_cache = path, False, True

    @classmethod
    def from_model(cls, model, tokenizer, *, device: str = "cpu", temperature: float = 0.0,
                   max_new_tokens: int = 128, batch_size: int = 64, seed: int = 0, name: str = "in-memory",
                   bf16: bool = False) -> HFPlayer:
        """A player on a model already loaded (training's), without reading a checkpoint; `bf16`:
        its forward passes under bf16 autocast."""
        import copy

        self = cls.__new__(cls)
        self.model, self.tokenizer = model, copy.copy(tokenizer)  # its padding side is set here, not training's
        self._setup(name, device=device, temperature=temperature, max_new_tokens=max_new_tokens,
                    batch_size=batch_size, seed=seed)
        self.bf16 = bf16
        return self

    @classmethod
    def from_config(cls, cfg: Config) -> HFPlayer:
        """The player `cfg` names, at the training's precision and with the attention kernel for
        playing, both as `engine.precision` decides them."""
        from ttt_lab.engine.precision import attention, use_bf16

        p = cfg.player
        return cls(resolve_model_path(cfg), device=cfg.model.device, dtype=cfg.model.dtype,
                   temperature=p.temperature, max_new_tokens=p.max_new_tokens, batch_size=p.batch_size,
                   seed=cfg.seed, bf16=use_bf16(cfg, LOG.info), kv_cache=p.kv_cache,
                   attention=attention(cfg, "playing"))

    def respond(self, turns: Sequence[Turn]) -> list[str]:
        if self.temperature <= 0 and self.kv_cache:
            return self._greedy([t.messages for t in turns])
        out: list[str] = []
        for i in range(0, len(turns), self.batch_size):
            out += self._generate([t.messages for t in turns[i : i + self.batch_size]])
        return out

    def play_games(self, examples: Sequence[Example], env: EnvConfig, opponent: Opponent, *,
                   max_batch: int | None = None, on_finished: Callable[[int], None] | None = None,
                   opponent_seeding: str = "per_example", game_offset: int = 0) -> list[GameRecord]:
        """Whole games, as `env.driver.play_games` plays them with this player, but through the
        batched game engine (`engine.rollout.play_rollouts`): up to `batch_size` games (and
        `max_batch`) in one batch, the KV cache kept across turns, so no turn re-reads its
        conversation. Sampling draws one seed from this player's stream per call and gives each
        game its own stream from it: a game plays the same however the games are batched, and
        the process's global RNG is left alone. `on_finished(n)`: after each batch of n games.
        With `kv_cache` false: turn by turn through `respond`, as `env.driver.play_games`."""
        import torch

        if not self.kv_cache:
            from ttt_lab.env.driver import play_games

            return play_games(self, examples, env, opponent, max_batch=max_batch, on_finished=on_finished,
                              opponent_seeding=opponent_seeding, game_offset=game_offset)
        from ttt_lab.engine.rollout import Sampling, play_rollouts

        env.validate()
        seed = int(torch.randint(0, 2**62, (1,), generator=self._generator)) if self.temperature > 0 else None
        sampling = Sampling(self.temperature, self.max_new_tokens, self.bf16)
        chunk = max(1, min(self.batch_size, max_batch or self.batch_size))
        records: list[GameRecord] = []
        for start in range(0, len(examples), chunk):
            part = examples[start : start + chunk]
            rollouts = play_rollouts(self.model, self.tokenizer, part, env, opponent, sampling,
                                     opponent_seeding=opponent_seeding, game_offset=game_offset + start,
                                     sampling_seed=seed)
            records += [r.record for r in rollouts if r.record is not None]
            if on_finished is not None:
                on_finished(len(part))
        return records

    def _greedy(self, conversations: list[list[dict[str, str]]]) -> list[str]:
        """Greedy replies through the engine's KV cache (`engine.greedy`), `batch_size` a pass: a
        conversation that extends one of the previous call's (a tree walk's next level) reads only
        its new tokens."""
        from ttt_lab.engine.greedy import GreedyReplies

        walker = getattr(self, "_walker", None)
        if walker is None or walker.model is not self.model:
            walker = self._walker = GreedyReplies(self.model, self.tokenizer, self.max_new_tokens, self.batch_size,
                                                  self.bf16)
        return walker(conversations)

    def _generate(self, conversations: list[list[dict[str, str]]]) -> list[str]:
        import torch

        texts = [self.tokenizer.apply_chat_template(c, tokenize=False, add_generation_prompt=True)
                 for c in conversations]
        enc = self.tokenizer(texts, return_tensors="pt", padding=True, add_special_tokens=False).to(self.device)
        sample = self.temperature > 0
        autocast = torch.autocast(self.device.split(":")[0], dtype=torch.bfloat16, enabled=self.bf16)
        with torch.no_grad(), autocast, self._own_rng(sample):
            ids = self.model.generate(
                **enc,
                max_new_tokens=self.max_new_tokens,
                do_sample=sample,
                temperature=self.temperature if sample else None,
                top_p=None, top_k=None,
                pad_token_id=self.tokenizer.pad_token_id,
                eos_token_id=self.tokenizer.eos_token_id,
            )
        new = ids[:, enc["input_ids"].shape[1] :]
        return self.tokenizer.batch_decode(new, skip_special_tokens=True)

    def _own_rng(self, sample: bool):
        """Sampling draws from this player's own seeded stream; the process's global RNG is left as
        it was (a training's periodic evaluation must not reseed the training)."""
        import contextlib

        import torch

        if not sample:
            return contextlib.nullcontext()
        seed = int(torch.randint(0, 2**62, (1,), generator=self._generator))
        stack = contextlib.ExitStack()
        stack.enter_context(torch.random.fork_rng(devices=[] if self.device == "cpu" else None))
        torch.manual_seed(seed)
        return stack

    def __repr__(self) -> str:
        return f"HFPlayer({self.path!r})"
