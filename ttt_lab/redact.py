"""One redactor for every string that leaves the process (tags, params, the logged config,
plan files, reports, console lines, error messages): passwords in URLs and query strings, and
the values the configuration read from the environment (`hide_value`)."""

from __future__ import annotations

import re

HIDDEN = "***"
_USERINFO = re.compile(r"(?P<head>\b[a-zA-Z][a-zA-Z0-9+.-]*://[^\s:/@]+:)(?P<secret>[^\s]*)@(?=[^\s@]*(?:\s|$))")
"""`scheme://user:secret@host`: the secret runs to the *last* `@` of the URL, so an unencoded
`@` inside a password is hidden too."""
_QUERY = re.compile(r"(?P<head>[?&;](?:password|passwd|pwd|secret|token|api_key|apikey)=)(?P<secret>[^&\s#]*)",
                    re.IGNORECASE)


_VALUES: set[str] = set()
MIN_HIDDEN_LENGTH = 4
"""Shorter values (a flag, a small number) would hide ordinary text everywhere."""


def hide_value(value: str) -> None:
    """From now on, this process writes `value` nowhere (it came from the environment)."""
    if isinstance(value, str) and len(value) >= MIN_HIDDEN_LENGTH:
        _VALUES.add(value)


def redact(text: str) -> str:
    """`text` with every URL password, secret query parameter and hidden value replaced by ***."""
    if not isinstance(text, str):
        return text
    if _VALUES:  # most processes read nothing from the environment: this stays one check per call
        for value in sorted(_VALUES, key=len, reverse=True):
            text = text.replace(value, HIDDEN)
    if "://" not in text and "=" not in text:
        return text
    text = _USERINFO.sub(lambda m: m.group("head") + HIDDEN + "@", text)
    return _QUERY.sub(lambda m: m.group("head") + HIDDEN, text)


class RedactedStream:
    """A text stream that redacts every write: give it to a rich Console (or anything that
    writes text) and no line it prints carries a secret."""

    def __init__(self, stream) -> None:
        self._stream = stream

    def write(self, text: str) -> int:
        return self._stream.write(redact(text))

    def __getattr__(self, name: str):
        return getattr(self._stream, name)
