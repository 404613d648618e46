"""One redactor for every string that leaves the process (tags, params, the logged config,
plan files, reports, console lines, error messages): passwords in URLs and query strings."""

from __future__ import annotations

import re

HIDDEN = "***"
_USERINFO = re.compile(r"(?P<head>\b[a-zA-Z][a-zA-Z0-9+.-]*://[^\s:/@]+:)(?P<secret>[^\s]*)@(?=[^\s@]*(?:\s|$))")
"""`scheme://user:secret@host`: the secret runs to the *last* `@` of the URL, so an unencoded
`@` inside a password is hidden too."""
_QUERY = re.compile(r"(?P<head>[?&;](?:password|passwd|pwd|secret|token|api_key|apikey)=)(?P<secret>[^&\s#]*)",
                    re.IGNORECASE)


def redact(text: str) -> str:
    """`text` with every URL password and secret query parameter replaced by ***."""
    if not isinstance(text, str) or ("://" not in text and "=" not in text):
        return text
    text = _USERINFO.sub(lambda m: m.group("head") + HIDDEN + "@", text)
    return _QUERY.sub(lambda m: m.group("head") + HIDDEN, text)
