"""A real OpenAI-compatible HTTP server for tests: `python openai_server.py PORT`.

It answers /v1/chat/completions with a perfect player's move, read off the board in the
last user message (so it plays from the conversation text alone, like a model). The
requested model name picks a behaviour: 'perfect', 'slow' (sleeps 5 s), 'garbage'
(200 with a body that is not JSON), 'broken' (500), 'scripted' (a fixed function of the whole
conversation: mostly best moves, some weak, occupied-cell and unformatted replies, so the same
conversation always gets the same reply and two clients that send the same conversations play the
same games).
"""

import asyncio
import hashlib
import json
import re
import sys

import uvicorn
from fastapi import FastAPI, Request
from fastapi.responses import JSONResponse, PlainTextResponse, StreamingResponse

from ttt_lab.game.solver import table

app = FastAPI()


def board_from(text: str, shown: str) -> str:
    grid = re.findall(r"^([XO0-8]) \| ([XO0-8]) \| ([XO0-8])$", text, re.M)[-3:]
    cells = [c for row in grid for c in row]
    display = "".join("." if c.isdigit() else c for c in cells)
    mine = shown
    # core: X moved first; decide the model's core mark from the counts on the board
    n_mine, n_theirs = display.count(mine), display.count("O" if mine == "X" else "X")
    model_core = "X" if n_mine == n_theirs else "O"
    if model_core == mine:
        return display
    return display.translate(str.maketrans("XO", "OX"))


def scripted(messages: list[dict], board: str, best: int) -> str:
    text = "\x1e".join(f"{m['role']}:{m['content']}" for m in messages)
    h = int.from_bytes(hashlib.sha256(text.encode()).digest()[:4], "big")
    empty = [i for i, c in enumerate(board) if c == "."]
    taken = [i for i, c in enumerate(board) if c != "."]
    kind = h % 7
    if kind == 3:
        return f"<move>{empty[0]}</move>"
    if kind == 4 and taken:
        return f"<think>take {taken[0]}</think><move>{taken[0]}</move>"
    if kind == 5:
        return f"I would play {best}."
    return f"<think>best</think><move>{best}</move>" if kind % 2 else f"<move>{best}</move>"


def stream(model: str, content: str):
    """The reply as server-sent chunks (what a streaming client such as verifiers' asks for)."""
    head = {"id": "x", "object": "chat.completion.chunk", "created": 0, "model": model}
    deltas = [{"role": "assistant", "content": ""}, {"content": content[: len(content) // 2]},
              {"content": content[len(content) // 2 :]}]
    for delta in deltas:
        yield "data: " + json.dumps({**head, "choices": [{"index": 0, "delta": delta, "finish_reason": None}]}) + "\n\n"
    yield "data: " + json.dumps({**head, "choices": [{"index": 0, "delta": {}, "finish_reason": "stop"}],
                                 "usage": {"prompt_tokens": 1, "completion_tokens": 1, "total_tokens": 2}}) + "\n\n"
    yield "data: [DONE]\n\n"


@app.get("/v1/models")
def models() -> dict:
    return {"object": "list", "data": [{"id": m, "object": "model"} for m in ("perfect", "scripted")]}


@app.post("/v1/chat/completions")
async def chat(request: Request):
    body = await request.json()
    model = body.get("model")
    if model == "slow":
        await asyncio.sleep(5)
    if model == "garbage":
        return PlainTextResponse("<html>not json", status_code=200, media_type="application/json")
    if model == "broken":
        return JSONResponse({"error": {"message": "boom"}}, status_code=500)
    system = body["messages"][0]["content"]
    shown = re.search(r"as ([XO])", system).group(1)
    board = board_from(body["messages"][-1]["content"], shown)
    t = table()
    move = t.optimal[t.index[board]][0]
    content = f"<think>ok</think><move>{move}</move>"
    if model == "scripted":
        content = scripted(body["messages"], board, move)
    if body.get("stream"):
        return StreamingResponse(stream(model, content), media_type="text/event-stream")
    return {
        "id": "x", "object": "chat.completion", "created": 0, "model": model,
        "choices": [{"index": 0, "finish_reason": "stop",
                     "message": {"role": "assistant", "content": content}}],
        "usage": {"prompt_tokens": 1, "completion_tokens": 1, "total_tokens": 2},
    }


if __name__ == "__main__":
    uvicorn.run(app, host="127.0.0.1", port=int(sys.argv[1]), log_level="error")
