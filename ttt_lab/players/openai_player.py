"""Any OpenAI-compatible chat endpoint as a player (vLLM server, OpenAI, OpenRouter).

Requests run concurrently; each is retried with backoff by the official client. A request
that still times out or comes back malformed becomes an empty reply, which the environment
counts as an invalid move (and `failures` counts); an endpoint that cannot be reached at
all stops the run with a clear error instead.
"""

from __future__ import annotations

import os
from collections import Counter
from collections.abc import Sequence
from concurrent.futures import ThreadPoolExecutor

from ttt_lab.config.schema import Config
from ttt_lab.env.episode import Turn
from ttt_lab.errors import TttLabError


class EndpointError(TttLabError):
    pass


class OpenAIPlayer:
    def __init__(self, base_url: str, model: str, *, api_key: str | None = None, temperature: float = 0.0,
                 max_tokens: int = 128, concurrency: int = 8, max_retries: int = 2, timeout_s: float = 30.0,
                 seed: int | None = None) -> None:
        import openai

        self._openai = openai
        self.client = openai.OpenAI(base_url=base_url, api_key=api_key or "EMPTY", timeout=timeout_s,
                                    max_retries=max_retries)
        self.base_url, self.model = base_url, model
        self.temperature, self.max_tokens, self.seed = temperature, max_tokens, seed
        self.concurrency = concurrency
        self.failures: Counter[str] = Counter()
        self._reached = False

    @classmethod
    def from_config(cls, cfg: Config) -> OpenAIPlayer:
        p = cfg.player
        model = p.served_model or cfg.model.path or cfg.model.name
        return cls(p.base_url, model, api_key=os.environ.get(p.api_key_env), temperature=p.temperature,
                   max_tokens=p.max_new_tokens, concurrency=p.concurrency, max_retries=p.max_retries,
                   timeout_s=p.timeout_s, seed=cfg.seed)

    def respond(self, turns: Sequence[Turn]) -> list[str]:
        with ThreadPoolExecutor(max_workers=self.concurrency) as pool:
            results = list(pool.map(self._ask, [t.messages for t in turns]))
        unreachable = [r for r in results if isinstance(r, self._openai.APIConnectionError)
                       and not isinstance(r, self._openai.APITimeoutError)]
        if unreachable and not self._reached and len(unreachable) == len(results):
            raise EndpointError(
                f"cannot reach the OpenAI-compatible endpoint at {self.base_url} ({unreachable[0]}). Start the "
                "server (e.g. `vllm serve MODEL`), or fix player.base_url."
            )
        replies = []
        for r in results:
            if isinstance(r, str):
                self._reached = True
                replies.append(r)
            else:
                self.failures[type(r).__name__] += 1
                replies.append("")
        return replies

    def _ask(self, messages: list[dict[str, str]]) -> str | Exception:
        oa = self._openai
        try:
            resp = self.client.chat.completions.create(
                model=self.model, messages=messages, temperature=self.temperature,  # type: ignore[arg-type]  # role/content dicts
                max_tokens=self.max_tokens, seed=self.seed,
            )
            content = resp.choices[0].message.content
        except oa.APIStatusError as e:
            if e.status_code in (401, 403, 404):
                raise EndpointError(
                    f"the endpoint at {self.base_url} refused the request ({e.status_code}: {e.message}). "
                    f"Check the API key variable (player.api_key_env) and the model name ({self.model!r})."
                ) from e
            return e
        except (oa.APIError, ValueError, TypeError, AttributeError, IndexError) as e:
            return e
        return content if isinstance(content, str) else ""

    def __repr__(self) -> str:
        return f"OpenAIPlayer({self.base_url!r}, {self.model!r})"
