"""One redactor for every string that leaves the process (tags, params, the logged config,
plan files, reports, console lines, error messages). One rule set:

- credentials in URLs of any scheme: `scheme://user:secret@host`;
- `name=value` pairs (query strings, overrides, shell lines) and `name: value` pairs (headers,
  YAML, JSON) whose name *says* secret: its last word is, or ends with, token, key, secret,
  password, passwd, pwd, signature, sig or credential(s), case-insensitive (`access_token`,
  `api-key`, `apikey`, `X-Amz-Signature`, `X-Amz-Credential`); `max_new_tokens` and
  `api_key_env` (last words `tokens`, `env`) are settings, not secrets;
- `Authorization`-style headers (`Authorization: Bearer …`, `Proxy-Authorization: Basic …`) and
  a bare `Bearer <token>`;
- the values the configuration read from the environment (`hide_value`).

What is hidden becomes `***`; everything else is left exactly as it was."""

from __future__ import annotations

import re
from typing import TextIO, cast

HIDDEN = "***"

_URL_HEAD = re.compile(r"://[^\s:/@]+:")
"""`://user:` of a URL that carries a password, whatever its scheme."""
_RUN = re.compile(r"\S+")


def _hide_userinfo(run: re.Match[str]) -> str:
    """`scheme://user:secret@host` in one whitespace-free run: the secret runs to the run's *last*
    `@`, so an unencoded `@` inside a password is hidden too (one search and one `rfind` per run:
    linear in its length)."""
    text = run.group()
    if "://" not in text or "@" not in text:
        return text
    head = _URL_HEAD.search(text)
    at = text.rfind("@")
    if head is None or at < head.end():
        return text
    return text[: head.end()] + HIDDEN + text[at:]


_STRONG = r"(?:token|secret|password|passwd|pwd|signature|credentials?)"
_QUALIFIED_KEY = r"(?:api|access|secret|private|auth|client|account|master|subscription|signing|sas|session)[._-]?key"
_NAME = rf"(?<![A-Za-z0-9])[A-Za-z0-9]*(?:{_STRONG}|{_QUALIFIED_KEY})"
"""The last word of a name that says secret: a word that ends with token, secret, password,
passwd, pwd, signature or credential(s) (`access_token`, `X-Amz-Signature`, `clientsecret`), or
a key with a qualifier (`api_key`, `api-key`, `apikey`, `X-Api-Key`, `aws_secret_access_key`).
The words before it are left as they are. A bare `key` or `sig` says secret only in a URL's
query (`?key=`, Azure's `&sig=`): `full_key: player.x` in an error message is a config key.
`=` or `:` must follow at once, so `max_new_tokens=` and `api_key_env:` (last words `tokens`,
`env`) are settings. A word starts only where no letter or digit precedes it, so a long run of
them is scanned once, not once per character."""
_VALUE = r"(?:\"[^\"]*\"|'[^']*'|[^&\s#'\"]+)"
_PAIR = re.compile(rf"(?P<head>(?:{_NAME}|(?<=[?&;])(?:key|sig))=)(?P<secret>{_VALUE})", re.IGNORECASE)
"""`name=value`: in a query (to the next `&`), an override or a shell line (to the next space
or the closing quote)."""
_FIELD = re.compile(rf"(?P<head>{_NAME}(?:\\?[\"'])?[ \t]*:[ \t]*(?:\\?[\"'])?)"
                    rf"(?P<secret>(?:[^\s'\",}}\]\\]|\\(?![\"'\\])\S)+)", re.IGNORECASE)
"""`name: value` (a header, a YAML line, a JSON member, also JSON escaped inside a string): the value
up to a space, quote, comma or escaped quote; an escape inside it (`\\u00b5`) is part of it."""
_AUTH = re.compile(r"(?P<head>\b(?:proxy-)?authorization[\"']?[ \t]*[:=][ \t]*[\"']?"
                   r"(?:(?:bearer|basic|token|digest|negotiate|apikey|aws4-hmac-sha256)[ \t]+)?)"
                   r"(?P<secret>[^\s'\"]+)", re.IGNORECASE)
_BEARER = re.compile(r"(?P<head>\bBearer[ \t]+)(?P<secret>[^\s'\"]{8,})")
"""A bearer token outside a header (a curl line in an error message); capitalised and eight
characters or more, as tokens are, so that prose about a bearer is left alone."""
_HINTS = ("://", "token", "key", "secret", "pass", "pwd", "sig", "credential", "auth", "bearer")
"""A text without any of these has nothing the patterns could match: most lines stop here."""

_VALUES: set[str] = set()
MIN_HIDDEN_LENGTH = 4
"""Shorter values (a flag, a small number) would hide ordinary text everywhere."""


_FORMS: dict[str, tuple[str, ...]] = {}
"""Each hidden value as the writers escape it too (JSON's and YAML's double quotes, Python's repr):
a config file writes `µ` as `\\u00b5` or `\\xB5`."""


def hide_value(value: str) -> None:
    """From now on, this process writes `value` nowhere (it came from the environment)."""
    if isinstance(value, str) and len(value) >= MIN_HIDDEN_LENGTH:
        _VALUES.add(value)


def _forms(value: str) -> tuple[str, ...]:
    got = _FORMS.get(value)
    if got is None:
        import json

        import yaml

        quoted = yaml.safe_dump(value, default_style='"', allow_unicode=False, width=2**30).strip()
        got = _FORMS[value] = tuple({value, json.dumps(value)[1:-1], ascii(value)[1:-1], quoted[1:-1]})
    return got


_ORDER: list = [frozenset(), ()]
"""The hidden values the forms below were built for, and every form of them, longest first."""


def _ordered_forms() -> tuple[str, ...]:
    """Every hidden value's forms, longest first (a value inside another's form is replaced after
    it), built once per set of values: `redact` runs on every line a process writes."""
    if _ORDER[0] != _VALUES:
        _ORDER[:] = [frozenset(_VALUES), tuple(sorted({f for v in _VALUES for f in _forms(v)}, key=len, reverse=True))]
    return _ORDER[1]


_WHOLE_NAME = re.compile(rf"(?:.*[^A-Za-z0-9])?(?:{_NAME}|(?:proxy-)?authorization)", re.IGNORECASE | re.DOTALL)


def names_secret(name: str) -> bool:
    """Whether a key (a param, a tag, a config leaf) is named like a secret: its value is hidden
    whatever it looks like."""
    return _WHOLE_NAME.fullmatch(name) is not None


def _hide(m: re.Match[str]) -> str:
    return m.group("head") + HIDDEN


def redact(text: str) -> str:
    """`text` with every credential the rules above describe replaced by ***."""
    if not isinstance(text, str):
        return text
    if _VALUES:  # most processes read nothing from the environment: this stays one check per call
        for form in _ordered_forms():
            text = text.replace(form, HIDDEN)
    lower = text.lower()
    if not any(h in lower for h in _HINTS):
        return text
    if "://" in text and "@" in text:
        text = _RUN.sub(_hide_userinfo, text)
    for pattern in (_AUTH, _BEARER, _PAIR, _FIELD):
        text = pattern.sub(_hide, text)
    return text


def redact_item(name: str, value: str) -> str:
    """A named value (a param, a tag): hidden whole when its name says secret, else redacted."""
    if names_secret(name) and value not in ("", HIDDEN):
        return HIDDEN
    return redact(value)


class RedactedStream:
    """A text stream that redacts every write: give it to a rich Console (or anything that
    writes text) and no line it prints carries a secret."""

    def __init__(self, stream) -> None:
        self._stream = stream

    def write(self, text: str) -> int:
        return self._stream.write(redact(text))

    def __getattr__(self, name: str):
        return getattr(self._stream, name)


def redacted(stream: TextIO) -> TextIO:
    """`stream` behind a `RedactedStream`, typed as the text stream it stands in for."""
    return cast(TextIO, RedactedStream(stream))
