"""ttt-lab's lines: logged by domain code, printed where a handler says, rank 0 only."""

import io
import logging

import pytest
from rich.console import Console

from ttt_lab import events, log
from ttt_lab.cli_kit import front


@pytest.fixture
def clean_logger():
    logger = logging.getLogger(log.ROOT)
    before = (list(logger.handlers), logger.level, logger.propagate)
    yield
    logger.handlers[:], logger.level, logger.propagate = before
    events.install(None)


def test_lines_go_to_the_installed_console_and_a_block_can_redirect_them(clean_logger, monkeypatch) -> None:
    main, trial = io.StringIO(), io.StringIO()
    front.install(Console(file=main, width=200))
    log.get("train").info("phase rl1: done [not markup]")
    with log.to(trial):
        log.get("studies").info("inside the trial")
        events.emit(events.TrialEnded(3, "COMPLETE", "0.500", 1.25))  # plain, into the trial's log
    log.get("train").info("after")
    assert main.getvalue().splitlines() == ["phase rl1: done [not markup]", "after"]
    assert trial.getvalue().splitlines() == ["inside the trial", "trial 3 COMPLETE in 1.2 s  0.500"]
    monkeypatch.setenv("RANK", "1")
    log.get("train").info("rank 1 says nothing")
    assert "rank 1" not in main.getvalue()


def test_without_a_handler_nothing_is_printed_and_progress_draws_nowhere(clean_logger, capsys) -> None:
    logger = logging.getLogger(log.ROOT)
    logger.handlers[:] = []
    events.install(None)
    log.get("train").info("quiet")
    assert log.console() is events.LINES and not log.console().is_terminal
    assert "quiet" not in capsys.readouterr().out
