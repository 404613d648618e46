from pathlib import Path

import pexpect

from tests.conftest import BIN


def spawn(*args: str) -> pexpect.spawn:
    return pexpect.spawn(str(BIN), list(args), encoding="utf-8", timeout=60, dimensions=(50, 160))


def play_until_result(child: pexpect.spawn, cells: str) -> None:
    """Answer every prompt with the next cell in turn (taken cells are re-prompted)."""
    for cell in cells * 3:
        if child.expect(["Your move", r"Result: [^\r\n]+"]) == 1:
            return
        child.sendline(cell)
    raise AssertionError("the game did not end")


def test_human_game_with_invalid_entries(home: Path) -> None:
    child = spawn("play", "opponent=minimax_first")
    child.expect("Your move")
    child.sendline("x")
    child.expect("not a cell")
    child.sendline("12")
    child.expect("not a cell")
    child.sendline("4")
    child.expect("Your opponent \\(O\\) played 0")
    child.expect("Your move")
    child.sendline("4")
    child.expect("Cell 4 is taken")
    play_until_result(child, "12345678")
    child.expect(pexpect.EOF)
    child.close()
    assert child.exitstatus == 0


def test_quit_is_clean(home: Path) -> None:
    child = spawn("play")
    child.expect("Your move")
    child.sendline("q")
    child.expect(pexpect.EOF)
    child.close()
    assert child.exitstatus == 130
    assert "Traceback" not in (child.before or "")


def test_watch_a_scripted_game(home: Path) -> None:
    child = spawn("play", "--watch", "player=minimax", "opponent=minimax_first")
    child.expect("Result: (The player wins!|Draw)")
    child.expect(pexpect.EOF)
    child.close()
    assert child.exitstatus == 0


def test_human_against_a_player(home: Path) -> None:
    child = spawn("play", "--against", "player", "player=minimax", "--first", "opponent")
    child.expect("moved first and played")
    play_until_result(child, "012345678")
    child.expect(pexpect.EOF)
    child.close()
    assert child.exitstatus == 0
