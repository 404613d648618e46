"""ttt-lab against a real vLLM server: `player=openai` plays what `player=hf` plays."""

import json
import time
from pathlib import Path

import pytest

from tests.conftest import cli
from tests.vllm.conftest import NO_VLLM, WHY

pytestmark = [pytest.mark.vllm, pytest.mark.skipif(NO_VLLM, reason=WHY)]

# sampled, not exact: the test compares the games each player actually played; turn by turn
# (player.kv_cache=false), re-reading each conversation as text as the server does, in fp32; both
# on the schema's settings (a served player sets the root's tiny preset aside, `player=hf` would not)
SAME = ["eval.suite=quick", "eval.mode=sampled", "games=20", "env.think=off", "player.max_new_tokens=6",
        "player.temperature=0", "train.precision=fp32", "player.kv_cache=false",
        "tracking.enabled=false", "~experiment"]


def _games(out: str) -> list[dict]:
    (line,) = [x for x in out.splitlines() if x.startswith("transcript: ")]
    return [json.loads(x) for x in Path(line.split(": ", 1)[1]).read_text().splitlines()]


def _replies(game: dict) -> list[str]:
    return [m["content"] for m in game["messages"] if m["role"] == "assistant"]


def test_greedy_games_through_vllm_are_the_games_of_transformers(vllm_server: str, noisy_tiny: Path,
                                                                 home: Path) -> None:
    t = time.perf_counter()
    served = cli("eval", "player=openai", f"player.base_url={vllm_server}", f"player.served_model={noisy_tiny}",
                 *SAME)
    served_s = time.perf_counter() - t
    local = cli("eval", "player=hf", f"model.path={noisy_tiny}", *SAME)
    a, b = _games(served.stdout), _games(local.stdout)
    assert len(a) == len(b) == 40
    assert [_replies(g) for g in a] == [_replies(g) for g in b]
    assert [g["outcome"] for g in a] == [g["outcome"] for g in b]
    assert len({r for g in a for r in _replies(g)}) > 40  # replies depend on the game: not one constant string
    requests = sum(len(_replies(g)) for g in a)
    print(f"{requests} chat requests to vLLM in {served_s:.1f} s ({requests / served_s:.0f} per second, "
          "CLI start included)")


def test_a_server_serving_another_model_is_one_clear_error(vllm_server: str, home: Path) -> None:
    out = cli("eval", "player=openai", f"player.base_url={vllm_server}", "player.served_model=some-other-model",
              *SAME, check=False)
    assert out.returncode == 2 and "does not exist" in out.stderr and "some-other-model" in out.stderr, out.stderr


def test_the_real_model_plays_the_same_greedy_games_through_vllm_and_transformers(
        smollm2_server: str, smollm2_checkpoint: Path, home: Path) -> None:
    """SmolLM2-135M (converted from the packaged GGUF): vLLM serving the checkpoint and transformers
    reading it write the same greedy replies, game by game (its own tokenizer and chat template)."""
    # the base model rarely writes a legal move: four turns keep its retried conversations within
    # the server's context (--max-model-len)
    same = [*SAME[:2], "games=4", "env.think=off", "env.max_model_turns=4", "player.max_new_tokens=10",
            "player.temperature=0", "train.precision=fp32", "player.kv_cache=false", "tracking.enabled=false"]
    served = cli("eval", "player=openai", f"player.base_url={smollm2_server}",
                 f"player.served_model={smollm2_checkpoint}", *same, timeout=900)
    local = cli("eval", "player=hf", "model=smollm2-135m", f"model.path={smollm2_checkpoint}", *same, timeout=900)
    a, b = _games(served.stdout), _games(local.stdout)
    assert len(a) == len(b) == 8
    assert [_replies(g) for g in a] == [_replies(g) for g in b]
    assert len({r for g in a for r in _replies(g)}) > 1
