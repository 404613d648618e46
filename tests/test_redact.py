"""The redactor: no credential survives any writer (tags, params, the logged config, a study's
report, console lines), and ordinary values (model paths, hub ids, numbers, settings) are
written exactly as given."""

from __future__ import annotations

import io
import json
import shutil
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

import pytest
from hypothesis import example, given, settings
from hypothesis import strategies as st

from ttt_lab import redact as redact_module
from ttt_lab.redact import HIDDEN, RedactedStream, hide_value, names_secret, redact

SECRET_CHARS = st.characters(whitelist_categories=("Lu", "Ll", "Nd"), whitelist_characters="-_.~%+/=")
"""What tokens, keys and signatures are made of: base64, url-safe base64, hex, percent-escapes."""


def _marked(s: str) -> str:
    """`Qz`, then a `Q` before every three characters: every eight-character stretch of a secret holds
    two `Q`s four apart, which no run id, template or report sentence does, so a fragment found in
    the output is the secret's, never a word it happens to share (`verdict.` of `Qzverdict.`)."""
    return "Qz" + "".join("Q" + s[i : i + 3] for i in range(0, len(s), 3))


SECRET = st.text(SECRET_CHARS, min_size=6, max_size=60).map(_marked)
PASSWORD = st.text(st.characters(whitelist_categories=("L", "N"), whitelist_characters="@:!%$-_.~+/="),
                   min_size=6, max_size=40).map(_marked)
"""A URL password may hold any non-space character, an unencoded `@` and `:` too."""

CASES = st.sampled_from([str, str.upper, str.lower, str.title])
SECRET_NAME = st.builds(
    lambda prefix, word, case: case(prefix + word),
    st.sampled_from(["", "x-", "my_", "aws_", "client.", "X-Amz-", "oauth_", "--", "player."]),
    st.sampled_from(["access_token", "auth_token", "token", "api-key", "api_key", "apikey", "secret", "client_secret",
                     "password", "passwd", "pwd", "signature", "Signature", "credential", "Credential",
                     "credentials", "security-token", "private_key", "secret_access_key", "refreshToken"]),
    CASES)
"""A name that says secret, in any case: the query keys, override keys and header names users write."""
QUERY_ONLY_NAME = st.builds(lambda word, case: case(word), st.sampled_from(["key", "sig"]), CASES)
"""Names that say secret in a URL's query only (`?key=` of an API, Azure's `&sig=`)."""
SCHEME = st.from_regex(r"[a-z][a-z0-9+.-]{0,12}", fullmatch=True)
HOST = st.sampled_from(["db.example.org", "127.0.0.1:5000", "host.internal:5432", "[::1]:8000", "h"])


def _url_with_password(scheme: str, password: str, host: str) -> str:
    return f"{scheme}://user:{password}@{host}/path"


def _url_with_query(scheme: str, host: str, name: str, secret: str) -> str:
    return f"{scheme}://{host}/v1/object?alpha=1&{name}={secret}&X-Amz-Date=20240101T000000Z#part"


PLACED = st.one_of(
    st.builds(lambda s, p, h: (_url_with_password(s, p, h), p), SCHEME, PASSWORD, HOST),
    st.builds(lambda s, h, n, x: (_url_with_query(s, h, n, x), x), SCHEME, HOST, SECRET_NAME | QUERY_ONLY_NAME,
              SECRET),
    st.builds(lambda n, x: (f"ttt-lab eval {n}={x} batch_size=256", x), SECRET_NAME, SECRET),
    st.builds(lambda n, x: (f"{n}='{x} with spaces'", x), SECRET_NAME, SECRET),
    st.builds(lambda kind, x: (f'curl -H "Authorization: {kind} {x}" https://api.example.org', x),
              st.sampled_from(["Bearer", "bearer", "Basic", "Token"]), SECRET),
    st.builds(lambda x: (f"Proxy-Authorization: Basic {x}", x), SECRET),
    st.builds(lambda x: (f"request failed; retry with Bearer {x}", x), SECRET),
    st.builds(lambda n, x: (f"{n}: {x}", x), SECRET_NAME, SECRET),
    st.builds(lambda n, x: (json.dumps({n: x, "batch_size": 256}), x), SECRET_NAME, SECRET),
)
"""(a text, the secret inside it) in each form the rule set covers."""
ENV_VALUE = st.text(SECRET_CHARS, min_size=8, max_size=40).map(_marked)

ORDINARY = st.one_of(
    st.sampled_from(["LiquidAI/LFM2-350M", "Qwen/Qwen2.5-0.5B-Instruct", "/data/models/lfm2/checkpoint-200",
                     "runs/train/3fa2c1/sft", "max_new_tokens=128", "api_key_env=OPENAI_API_KEY",
                     "api_key_env: OPENAI_API_KEY", "player.api_key_env=MY_KEY", "tokens: rows", "full_key: player.x",
                     "http://127.0.0.1:5000", "sqlite:///runs/mlflow.db", "https://example.org/v1?model=a&n=3",
                     "sort key: name", "eval.suite=quick", "opponent=minimax_first", "the bearer of the news",
                     "tie_break=random", "minimax*", "ttt.config_hash", "user@example.org", "keyboard=us",
                     "monkey: 3", "postgresql://user@host/db", "tracking.uri=http://h:5000"]),
    st.integers().map(str),
    st.floats(allow_nan=True, allow_infinity=True).map(repr),
    st.from_regex(r"[A-Za-z0-9_-]{1,20}/[A-Za-z0-9_.-]{1,30}", fullmatch=True),
)
"""Values that must come out exactly as they went in."""


@contextmanager
def hidden(value: str) -> Iterator[None]:
    """`value` hidden as if read from the environment, for this block only."""
    hide_value(value)
    try:
        yield
    finally:
        redact_module._VALUES.discard(value)


def fragments(secret: str, width: int = 8) -> set[str]:
    """Every stretch of `width` characters of a secret that holds a letter or digit: none may
    survive, so a half-hidden secret fails as surely as a whole one."""
    if len(secret) <= width:
        return {secret}
    return {secret[i : i + width] for i in range(len(secret) - width + 1)
            if any(c.isalnum() for c in secret[i : i + width])}


def leaked(secret: str, text: str) -> set[str]:
    return {f for f in fragments(secret) if f in text}


# --- the rule set, string by string --------------------------------------------------------------


@given(PLACED)
@example(('{"access_token": "QzQ\\u00b500Q000Q0", "batch_size": 256}', "QzQ\u00b500Q000Q0"))  # an escape in the value
def test_no_credential_survives_in_any_form(placed: tuple[str, str]) -> None:
    text, secret = placed
    out = redact(text)
    assert not leaked(secret, out), (text, out)
    assert HIDDEN in out
    assert redact(out) == out, "redacting twice changes nothing"


@given(SECRET, st.sampled_from(["postgresql", "postgresql+psycopg", "http", "https", "mysql", "redis", "s3"]))
def test_a_url_password_is_hidden_and_the_rest_of_the_line_kept(secret: str, scheme: str) -> None:
    text = f"ttt-lab sweep --storage {scheme}://user:{secret}x@host.example:5432/db --workers 2"
    assert redact(text) == f"ttt-lab sweep --storage {scheme}://user:***@host.example:5432/db --workers 2"


@given(SECRET_NAME, SECRET)
def test_a_query_key_that_says_secret_is_hidden_and_its_neighbours_kept(name: str, secret: str) -> None:
    out = redact(f"https://h.example/o?user=u&{name}={secret}&sslmode=require")
    assert out == f"https://h.example/o?user=u&{name}=***&sslmode=require"


def test_the_forms_the_issue_names() -> None:
    cases = {
        "https://h/x?access_token=ab12&b=1": "https://h/x?access_token=***&b=1",
        "https://h/x?auth_token=ab12": "https://h/x?auth_token=***",
        "--api-key=ab12 --api_key=cd34": "--api-key=*** --api_key=***",
        "https://h/?token=ab12": "https://h/?token=***",
        "https://b.s3/o?X-Amz-Credential=AKIA%2F2024%2Fs3&X-Amz-Signature=9f8e&X-Amz-Expires=60":
            "https://b.s3/o?X-Amz-Credential=***&X-Amz-Signature=***&X-Amz-Expires=60",
        "Authorization: Bearer eyJhbGciOi.x.y": "Authorization: Bearer ***",
        "postgresql://user:PASS@db/optuna": "postgresql://user:***@db/optuna",
        "https://h/?password=p4ss": "https://h/?password=***",
    }
    for text, want in cases.items():
        assert redact(text) == want


@given(ORDINARY)
def test_ordinary_values_are_untouched(value: str) -> None:
    assert redact(value) == value
    assert redact(f"ttt-lab train model.path={value} seed=3") == f"ttt-lab train model.path={value} seed=3"


@given(st.text(st.characters(blacklist_characters="@=:")).filter(lambda t: "bearer" not in t.lower()))
def test_text_without_credential_syntax_is_unchanged(text: str) -> None:
    assert redact(text) == text


def test_a_name_says_secret_by_its_last_word() -> None:
    for name in ("player.api_key", "X-Amz-Signature", "access_token", "Authorization", "db.password", "apikey"):
        assert names_secret(name), name
    for name in ("max_new_tokens", "player.api_key_env", "model.path", "full_key", "keyboard", "tokens", "key"):
        assert not names_secret(name), name


def test_a_long_line_is_redacted_in_linear_time() -> None:
    """Lines of hundreds of thousands of URL and name characters (a pasted log) must not stall a
    console write: every pattern scans a run of such characters a bounded number of times."""
    import time

    lines = ["a." * 100_000 + "token=Qzsecret", "x://a:" * 40_000, "a" * 200_000 + "://u:Qzpass@h",
             "authorization: " * 40_000, "Bearer " * 40_000]
    start = time.process_time()
    outs = [redact(line) for line in lines]
    assert "Qzsecret" not in outs[0] and "Qzpass" not in outs[2]
    assert time.process_time() - start < 5, "a quadratic pattern: these lines take minutes"


@given(ENV_VALUE)
@example("QzQ000Q000Q0\u00b5")  # once written into a config file as QzQ000Q000Q0\\u00b5
def test_a_hidden_value_is_redacted_as_json_yaml_and_repr_escape_it(value: str) -> None:
    import yaml

    with hidden(value):
        # unfolded: a double-quoted YAML scalar folded across lines is not recognised (known limit)
        for written in (json.dumps({"note": f"served_model={value}"}), yaml.safe_dump({"note": value}, width=2**30),
                        yaml.safe_dump({"note": value}, default_style='"', width=2**30), repr(f"x {value}")):
            assert not leaked(value, redact(written)), written


def test_a_hidden_value_is_redacted_in_any_text_and_through_a_console() -> None:
    from rich.console import Console

    with hidden("zz-hidden-value-41"):
        hide_value("ab")  # too short to hide without hiding ordinary text
        assert redact("model zz-hidden-value-41 at ab") == "model *** at ab"
        buf = io.StringIO()
        Console(file=RedactedStream(buf), width=80).print("[bold]serving[/] zz-hidden-value-41")
        assert "zz-hidden-value-41" not in buf.getvalue() and "serving ***" in buf.getvalue()


# --- through every writer ------------------------------------------------------------------------


@pytest.fixture(scope="module")
def store(shared_home: Path, tmp_path_factory: pytest.TempPathFactory):
    from ttt_lab.tracking.store import open_store

    home = tmp_path_factory.mktemp("redact") / "runs"
    shutil.copytree(shared_home, home)
    return open_store(f"sqlite:///{home}/mlflow.db", str(home / "mlartifacts"), str(home))


def _written_by_a_run(store, line: str, value: str) -> tuple[str, dict[str, str]]:
    """Everything one run wrote (tags, params, its config artifact) as text, and its params."""
    from ttt_lab.tracking.runs import open_run

    tree = {"player": {"base_url": line, "api_key": value}, "model": {"path": value}, "seed": 3}
    run = open_run(store, "redaction", "eval", f"eval {line}", config_hash="h", seed=3, overrides=line.split(),
                   command=f"ttt-lab eval {line}", tags={"ttt.note": line, "ttt.player": value}, tree=tree)
    run.log_text(f"player:\n  base_url: {line}\n  note: {json.dumps(line)}\n", "config.yaml")
    run.end()
    got = store.client.get_run(run.run_id)
    config = (run.local_artifact_dir() / "config.yaml").read_text()
    text = "\n".join([got.info.run_name or "", *got.data.tags.values(), *got.data.params.values(), config])
    return text, dict(got.data.params)


def _console_line(line: str) -> str:
    from rich.console import Console

    buf = io.StringIO()
    console = Console(file=RedactedStream(buf), width=160)
    console.print(f"logging to {line}", markup=False, highlight=False, soft_wrap=True)
    console.print(f"Error: cannot reach {line}", markup=False, highlight=False, soft_wrap=True)
    return buf.getvalue()


@settings(max_examples=25)
@given(PLACED, ORDINARY, ENV_VALUE)
def test_no_generated_secret_survives_tags_params_the_config_or_the_console(
        store, placed: tuple[str, str], ordinary: str, env_value: str) -> None:
    line, secret = placed
    with hidden(env_value):
        written, params = _written_by_a_run(store, f"{line} served_model={env_value}", ordinary)
        console = _console_line(f"{line} {env_value}")
    for out in (written, console):
        assert not leaked(secret, out) and not leaked(env_value, out), out
    assert params["model.path"] == ordinary, "an ordinary value is logged as given"
    assert params["player.api_key"] == HIDDEN, "a param named like a secret is hidden whatever its value"


@settings(max_examples=6)
@given(st.lists(PLACED, min_size=1, max_size=3), ORDINARY)
# Found in CI: a URL password's secret was once the word "password", which the report shows
# legitimately as the name in `password=***`; the secret is the password itself.
@example(placed=[("a://user:QzQ000Q000@db.example.org/path", "QzQ000Q000"),
                 ("ttt-lab eval password=QzQ000Q000 batch_size=256", "QzQ000Q000")], ordinary="LiquidAI/LFM2-350M")
def test_no_generated_secret_survives_a_studys_report(store, placed: list[tuple[str, str]], ordinary: str) -> None:
    """A study whose question, command and trial overrides carry secrets: its report (HTML,
    Markdown, figures) is built from what the runs stored, and holds none of them."""
    from ttt_lab.report.collect import FINAL_METRICS, collect
    from ttt_lab.report.render import build, write
    from ttt_lab.tracking.runs import open_run

    lines = [line for line, _ in placed]
    study = f"redacted-{abs(hash(tuple(lines))) % 10**12}"
    command = "ttt-lab sweep " + " ".join(lines)
    parent = open_run(store, study, "sweep", study, config_hash="base", seed=0, overrides=lines, command=command,
                      tags={"ttt.question": f"Does {lines[0]} matter?", "ttt.params": json.dumps({"seed": "0,1"}),
                            "ttt.objectives": json.dumps([{"metric": "eval/optimal/draw_rate",
                                                           "direction": "maximize"}])})
    for seed in (0, 1):
        overrides = [f"player.base_url={lines[-1]}", f"model.path={ordinary}", f"seed={seed}"]
        child = open_run(store, study, "trial", f"trial {seed}", config_hash=f"h{seed}", seed=seed,
                         overrides=overrides, command=command, parent_run_id=parent.run_id,
                         tags={"ttt.trial": str(seed), "ttt.trial_overrides": " ".join(overrides),
                               "optuna.state": "COMPLETE"}, tree={"seed": seed, "player": {"base_url": lines[-1]}})
        child.log_metrics({m: 0.5 for m in FINAL_METRICS})
        child.end()
    parent.end()
    out = Path(store.home) / "reports" / study
    write(build(collect(store, study), with_audits=False), out)
    written = "\n".join(p.read_text() for p in out.rglob("*") if p.is_file())
    for _, secret in placed:
        assert not leaked(secret, written), written
    assert "ttt-lab sweep" in written, "the report still shows the command, its secrets hidden"
