"""A real browser opens `ttt-lab ui` on a finished smoke study: the parent run's page shows the
study's answer, and the compare view of its condition runs lists each condition's aggregates.
Screenshots go to runs/test-artifacts/ (docs/guides/img/ has one of each)."""

import json
import os
import signal
import subprocess
import time
import urllib.parse
import urllib.request
from pathlib import Path

import pytest

from tests import forked_cli
from tests.conftest import cli, free_port
from tests.e2e.test_report_browser import CHROMIUM, FLAGS
from ttt_lab.studies.spec import from_args
from ttt_lab.tracking import keys

pytestmark = [pytest.mark.browser,
              pytest.mark.skipif(CHROMIUM is None, reason="Debian's chromium is not installed (.ci/run installs it)")]
SHOTS = Path(__file__).parents[2] / "runs" / "test-artifacts"


def _ui(port: int):
    proc = forked_cli.popen(["ui", "--port", str(port)], stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                            start_new_session=True)
    deadline = time.monotonic() + 180
    while True:  # the server's own readiness signal, with a deadline
        try:
            with urllib.request.urlopen(f"http://127.0.0.1:{port}/health", timeout=2):
                return proc
        except OSError:
            assert proc.poll() is None and time.monotonic() < deadline, "the UI did not come up"
            time.sleep(0.5)


def _stop(proc) -> None:
    os.kill(proc.pid, signal.SIGINT)
    try:
        proc.wait(timeout=60)
    except subprocess.TimeoutExpired:
        os.killpg(proc.pid, signal.SIGKILL)


def _ids(home: Path, name: str) -> tuple[str, str, dict[str, str], list[str]]:
    """(experiment id, parent run id, condition -> its run id, the answer's sentences as the report
    writes them) from the store."""
    from ttt_lab.report.collect import collect
    from ttt_lab.report.decisions import answer, sentences
    from ttt_lab.tracking.answer import condition_runs
    from ttt_lab.tracking.store import find_parent, open_store

    store = open_store(f"sqlite:///{home}/mlflow.db", str(home / "mlartifacts"))
    parent = find_parent(store, name)
    experiment = parent.info.experiment_id
    assert store.client.get_experiment(experiment).tags[keys.EXPERIMENT_KIND] == keys.MODEL_TRAINING
    said = sentences(answer(collect(store, name, with_curves=False)))
    return experiment, parent.info.run_id, condition_runs(store, experiment, parent.info.run_id), said


def _click_if_there(page, locator) -> None:
    """A control of MLflow's own UI that only tidies the screenshot (another MLflow may lack it)."""
    if locator.count():
        locator.first.click()
        page.wait_for_timeout(500)


def _training_view(page, base: str) -> None:
    """Pick the UI's *Model training* view, as docs/guides/studies.md tells a user to: MLflow 3.17
    chooses the view from this switch (remembered by the browser), not from the experiment's
    `mlflow.experimentKind` tag."""
    page.goto(f"{base}/experiments")
    page.get_by_text("Experiments").first.wait_for(timeout=90_000)
    _click_if_there(page, page.get_by_text("Model training", exact=True))


def _text_of(page, url: str, wait_for: str, shot: str, tidy: tuple[str, ...] = ()) -> str:
    page.goto(url)
    page.get_by_text(wait_for, exact=False).first.wait_for(timeout=90_000)
    for label in tidy:
        _click_if_there(page, page.get_by_label(label, exact=True))
    page.get_by_text(wait_for, exact=False).last.scroll_into_view_if_needed()
    page.wait_for_timeout(1500)  # the charts and tables around it settle
    page.screenshot(path=str(SHOTS / shot))
    return " ".join(page.inner_text("body").split())


def test_the_ui_shows_the_answer_on_the_parent_run_and_the_aggregates_side_by_side(home: Path) -> None:
    playwright = pytest.importorskip("playwright.sync_api")
    args = ["batch_size=8,16", "seed=0,1", "experiment=smoke", "steps=2"]
    cli("sweep", *args)
    name = from_args(args).name
    cli("report", name)
    experiment, parent, conditions, said = _ids(home, name)
    assert sorted(conditions) == ["batch_size=16", "batch_size=8"]
    sentence = said[1]  # the first comparison's, on its primary endpoint
    port = free_port()
    proc = _ui(port)
    SHOTS.mkdir(parents=True, exist_ok=True)
    base = f"http://127.0.0.1:{port}/#"
    compare = base + "/compare-runs?" + urllib.parse.urlencode(
        {"runs": json.dumps(list(conditions.values())), "experiments": json.dumps([experiment])})
    try:
        with playwright.sync_playwright() as p:
            browser = p.chromium.launch(executable_path=CHROMIUM, args=FLAGS)
            page = browser.new_page(viewport={"width": 1400, "height": 1000})
            _training_view(page, base)
            run_page = _text_of(page, f"{base}/experiments/{experiment}/runs/{parent}", sentence[:60],
                                "ui-answer.png", ("Expand description", "Close"))
            compared = _text_of(page, compare, "aggregate/iqm", "ui-compare.png")
            browser.close()
    finally:
        _stop(proc)
    assert " ".join(sentence.split()) in run_page, run_page[:3000]
    assert "P(improvement) [interval]" in run_page  # the decision table, rendered from Markdown
    for key in ("aggregate/seeds", "aggregate/mean", "aggregate/iqm", "aggregate/probability_of_improvement"):
        assert key in compared, compared[:3000]
    assert all(c in compared for c in conditions), compared[:3000]
