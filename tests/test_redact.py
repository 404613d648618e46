"""The redactor: no password of a URL or query string survives, and nothing else changes."""

from hypothesis import given
from hypothesis import strategies as st

from ttt_lab.redact import redact

SECRET = st.text(st.characters(whitelist_categories=("L", "N"), whitelist_characters="@:!%$-_."), min_size=4)


@given(SECRET, st.sampled_from(["postgresql", "postgresql+psycopg", "http", "https", "mysql"]))
def test_no_url_password_survives(secret: str, scheme: str) -> None:
    text = f"ttt-lab sweep --storage {scheme}://user:{secret}x@host.example:5432/db --workers 2"
    out = redact(text)
    assert f"{secret}x" not in out and f"{scheme}://user:***@host.example:5432/db --workers 2" in out


@given(st.text(st.characters(whitelist_categories=("L", "N")), min_size=3))
def test_no_query_password_survives(secret: str) -> None:
    out = redact(f"postgresql://host/db?user=u&password={secret}&sslmode=require")
    assert out == "postgresql://host/db?user=u&password=***&sslmode=require"


@given(st.text(st.characters(blacklist_characters="@")))
def test_text_without_credentials_is_unchanged(text: str) -> None:
    assert redact(text) == text


def test_a_hidden_value_is_redacted_in_any_text_and_through_a_console() -> None:
    import io

    from rich.console import Console

    from ttt_lab.redact import RedactedStream, hide_value, redact

    hide_value("zz-hidden-value-41")
    hide_value("ab")  # too short to hide without hiding ordinary text
    assert redact("model zz-hidden-value-41 at ab") == "model *** at ab"
    buf = io.StringIO()
    Console(file=RedactedStream(buf), width=80).print("[bold]serving[/] zz-hidden-value-41")
    assert "zz-hidden-value-41" not in buf.getvalue() and "serving ***" in buf.getvalue()
