"""The tiny offline model: a word-level tokenizer over the prompt language and a small
Llama-style causal LM, built without any hub download and saved like any checkpoint.

Word-level tokens (a word, tag or punctuation mark with its leading space; digits and
other whitespace one character at a time), and one token for each fixed piece of the
environment's text and for each whole move (`sentences`), make a game about 120 tokens long
instead of thousands of characters. The chat template is ChatML. The model type is `llama`:
with `qwen2`, transformers swaps in Qwen2's tokenizer class and silently drops whitespace.
"""

from __future__ import annotations

import hashlib
import json
import re
from pathlib import Path

from ttt_lab.config.schema import ModelConfig
from ttt_lab.env import parser, prompts
from ttt_lab.game.solver import table

PATTERN = r" ?</?[a-z]+>| ?[A-Za-z]+|[0-9]| ?[^\sA-Za-z0-9]|\s"
SPECIAL = ("<|endoftext|>", "<|im_start|>", "<|im_end|>", "<unk>")
CHAT_TEMPLATE = (
    "{% for message in messages %}{{ '<|im_start|>' + message['role'] + '\\n' }}"
    "{% if message['role'] == 'assistant' %}{% generation %}{{ message['content'] + '<|im_end|>' }}"
    "{% endgeneration %}{{ '\\n' }}{% else %}{{ message['content'] + '<|im_end|>' + '\\n' }}{% endif %}"
    "{% endfor %}{% if add_generation_prompt %}{{ '<|im_start|>assistant\\n' }}{% endif %}"
)
"""ChatML, with generation markers so TRL's assistant-only loss can find the model's turns."""


def corpus() -> list[str]:
    """Every kind of text the environment produces or expects from the model."""
    texts = ["system", "user", "assistant", "I play cell my best option is because to block win take center corner"]
    for shown in "XO":
        for think in ("required", "optional", "off"):
            texts.append(prompts.system_prompt(shown, think))
        texts.append(prompts.opening_status(shown, None))
        texts += [prompts.opening_status(shown, c) for c in range(9)]
        texts += [prompts.opponent_status(shown, c) for c in range(9)]
    texts += [prompts.turn_message(b, "") for b in table().boards[:50]]
    texts += [parser.feedback(parser.Parsed(k, 0, False)) for k in parser.INVALID_KINDS]
    texts += ["<think>Cell 4 is my best option.</think>\n<move>4</move>"]
    return texts


def _before(text: str, tail: str) -> str:
    return text[: text.rindex(tail)]


def sentences(tokens: str = "rows") -> list[str]:
    """The environment's fixed pieces of text, and the model's moves, each one token: a game
    costs less than half the tokens it would word by word, and tokens are most of the compute
    on a CPU. The system prompt and every status sentence are one token; the chat's turn
    headers are one token each; a board cell is one token with the separator after it (`"4 | "`,
    `"X\\n"`, `"8\\n\\n"`), and so is each available position (`" 0"`, `", 4"`), so each of
    these tokens says what one cell holds; a whole move (`"<move>4</move>"`) is one token, so a
    reply is two decoding steps (the move and the end of turn) instead of four. Cell numbers
    elsewhere (the opponent's move, an occupied cell) stay bare digits. `tokens="words"`: only
    the system prompt, the status sentences and a few separators (`model.tokens`)."""
    cut = " 0" if tokens == "words" else "0"
    out = []
    for shown in "XO":
        out += [prompts.system_prompt(shown, think) for think in ("required", "optional", "off")]
        out.append(prompts.opening_status(shown, None))
        out.append(_before(prompts.opening_status(shown, 0), cut + "."))
        out.append(_before(prompts.opponent_status(shown, 0), cut + "."))
    fixed = [k for k in parser.INVALID_KINDS if k != parser.OCCUPIED]
    out += [parser.feedback(parser.Parsed(k, None, False)) for k in fixed]
    occupied = parser.feedback(parser.Parsed(parser.OCCUPIED, 0, False))
    out += [_before(occupied, cut + " "), occupied[occupied.index(" 0 ") + 2 :]]
    if tokens == "words":
        return [*out, "Available positions:", "Your turn.", " | ", ", ", "\n\n"]
    out += ["Available positions:", "\nYour turn.", ".\n\n", " | ", ", ", "\n\n"]
    out += [f"{mark}{after}" for cell, after in enumerate(CELL_ENDS) for mark in (str(cell), "X", "O")]
    out += [f"{sep}{cell}" for sep in (" ", ", ") for cell in range(9)]
    out += [f"<move>{cell}</move>" for cell in range(9)]
    out += list(dict.fromkeys(CHAT_PIECES))
    if tokens == "rows":
        out += row_pieces()
    return list(dict.fromkeys(out))


def row_pieces() -> list[str]:
    """`model.tokens=rows`: a board row is one token (`"X | 4 | O\n"`; the first row with the
    blank line before it, so that it never reads like the second), the free cells of one row are
    one token (`"Available positions: 0, 2"`, `", 4, 5"`), a status sentence is one token with its
    cell and the user turn's header before it, and the call to move is one token with the
    assistant's header after it: a turn is about nine tokens instead of twenty. The tokenizer
    matches the longest piece, so the `compact` pieces stay as the fall-back."""
    import itertools

    out = []
    for row in range(3):
        cells = [(str(c), "X", "O") for c in range(3 * row, 3 * row + 3)]
        ends = CELL_ENDS[3 * row : 3 * row + 3]
        for marks in itertools.product(*cells):
            text = "".join(m + e for m, e in zip(marks, ends, strict=True))
            out += [text, "\n\n" + text] if row == 0 else [text]
        for size in (1, 2, 3):
            for free in itertools.combinations(range(3 * row, 3 * row + 3), size):
                listed = ", ".join(map(str, free))
                out += [f"Available positions: {listed}"] + ([f", {listed}"] if row else [])
    header = CHAT_PIECES[1]
    for shown in "XO":
        statuses = [prompts.opening_status(shown, None)]
        statuses += [f(shown, c) for c in range(9) for f in (prompts.opening_status, prompts.opponent_status)]
        out += [s for status in statuses for s in (status, header + status)]
    out.append("\nYour turn." + CHAT_PIECES[2])
    return out


CELL_ENDS = (" | ", " | ", "\n", " | ", " | ", "\n", " | ", " | ", "\n\n")
"""What follows each cell of a rendered board in a user message (the last one: the blank line)."""
CHAT_PIECES = ("<|im_start|>system\n", "\n<|im_start|>user\n", "<|im_end|>\n<|im_start|>assistant\n")
"""ChatML's turn headers as the template writes them (the model's own `<|im_end|>` stays one
token: it is the end of every reply)."""


def vocabulary(tokens: str = "rows") -> list[str]:
    words = set("0123456789")
    for text in corpus():
        words.update(re.findall(PATTERN, text))
    return [*SPECIAL, *sorted(words - set(SPECIAL)), *sentences(tokens)]


def build_tokenizer(tokens: str = "rows"):  # -> PreTrainedTokenizerFast
    from tokenizers import AddedToken, Regex, Tokenizer, decoders, models, pre_tokenizers
    from transformers import PreTrainedTokenizerFast

    pieces = sentences(tokens)
    words = [w for w in vocabulary(tokens) if w not in set(pieces)]
    vocab = {w: i for i, w in enumerate(words)}
    tok = Tokenizer(models.WordLevel(vocab=vocab, unk_token="<unk>"))
    tok.pre_tokenizer = pre_tokenizers.Split(Regex(PATTERN), behavior="isolated")
    tok.decoder = decoders.Fuse()
    tok.add_special_tokens(list(SPECIAL))
    tok.add_tokens([AddedToken(text, normalized=False, special=False) for text in pieces])
    fast = PreTrainedTokenizerFast(
        tokenizer_object=tok, eos_token="<|im_end|>", pad_token="<|endoftext|>", unk_token="<unk>",
        padding_side="left",
    )
    fast.chat_template = CHAT_TEMPLATE
    return fast


def tiny_hash(cfg: ModelConfig, seed: int) -> str:
    spec = {"vocab": vocabulary(cfg.tokens), "h": cfg.hidden_size, "l": cfg.num_layers, "heads": cfg.num_heads,
            "ff": cfg.intermediate_size, "seed": seed}
    return hashlib.sha256(json.dumps(spec).encode()).hexdigest()[:12]


def build_tiny(path: Path, cfg: ModelConfig, seed: int = 0) -> Path:
    """Build and save the tiny model and tokenizer at `path`; returns `path`."""
    import torch
    from transformers import GenerationConfig, LlamaConfig, LlamaForCausalLM

    tokenizer = build_tokenizer(cfg.tokens)
    torch.manual_seed(seed)
    config = LlamaConfig(
        vocab_size=len(tokenizer),
        hidden_size=cfg.hidden_size,
        intermediate_size=cfg.intermediate_size,
        num_hidden_layers=cfg.num_layers,
        num_attention_heads=cfg.num_heads,
        num_key_value_heads=cfg.num_heads,
        max_position_embeddings=4096,
        bos_token_id=tokenizer.convert_tokens_to_ids("<|im_start|>"),
        eos_token_id=tokenizer.eos_token_id,
        pad_token_id=tokenizer.pad_token_id,
        tie_word_embeddings=True,
    )
    model = LlamaForCausalLM(config)
    model.generation_config = GenerationConfig(
        eos_token_id=tokenizer.eos_token_id, pad_token_id=tokenizer.pad_token_id
    )
    tmp = path.with_name(path.name + ".partial")
    model.save_pretrained(tmp)
    tokenizer.save_pretrained(tmp)
    tmp.rename(path)
    return path


def ensure_tiny(home: Path, cfg: ModelConfig, seed: int = 0) -> Path:
    """The cached tiny model under `home/models/`, built on first use."""
    from ttt_lab.locks import file_lock

    path = Path(home) / "models" / f"tiny-{tiny_hash(cfg, seed)}"
    if (path / "config.json").is_file():
        return path
    with file_lock(path.with_name(path.name + ".lock")):
        if not (path / "config.json").is_file():
            build_tiny(path, cfg, seed)
    return path
