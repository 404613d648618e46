"""A real browser opens a real report: every figure renders, no console error, no network."""

import shutil
from pathlib import Path

import pytest

from tests.conftest import cli
from ttt_lab.studies.spec import from_args

CHROMIUM = shutil.which("chromium") or shutil.which("chromium-browser")
pytestmark = [pytest.mark.browser,
              pytest.mark.skipif(CHROMIUM is None, reason="Debian's chromium is not installed (.ci/run installs it)")]
FLAGS = ["--headless", "--no-sandbox", "--disable-gpu", "--disable-quic", "--no-first-run",
         "--disable-background-networking", "--disable-component-update", "--disable-sync"]


def test_report_renders_offline_in_chromium(home: Path, tmp_path: Path) -> None:
    playwright = pytest.importorskip("playwright.sync_api")
    args = ["batch_size=8,16", "experiment=smoke", "steps=2", "train.eval_every=1"]
    cli("sweep", *args)
    name = from_args(args).name
    cli("report", name)
    index = home / "reports" / name / "index.html"
    errors, requests = [], []
    with playwright.sync_playwright() as p:
        browser = p.chromium.launch(executable_path=CHROMIUM, args=FLAGS)
        page = browser.new_page(viewport={"width": 1300, "height": 1000})
        page.on("console", lambda m: errors.append(m.text) if m.type == "error" else None)
        page.on("pageerror", lambda e: errors.append(str(e)))
        page.on("request", lambda r: requests.append(r.url))
        page.goto(index.as_uri())
        page.wait_for_load_state("load")
        sizes = page.eval_on_selector_all("svg", "els => els.map(e => [e.getBoundingClientRect().width, "
                                                 "e.getBoundingClientRect().height])")
        right = page.eval_on_selector_all("table", "els => els.map(e => e.getBoundingClientRect().right)")
        headings = page.eval_on_selector_all("h2", "els => els.map(e => e.textContent)")
        in_svg = page.eval_on_selector_all("svg text", "els => els.map(e => e.textContent)")
        captions = page.eval_on_selector_all("figcaption", "els => els.map(e => e.textContent)")
        shot = Path(__file__).parents[2] / "runs" / "test-artifacts" / "report.png"
        shot.parent.mkdir(parents=True, exist_ok=True)
        page.screenshot(path=str(shot), full_page=True)
        browser.close()
    assert len(sizes) >= 16 and all(w > 0 and h > 0 for w, h in sizes), sizes
    assert right and max(right) <= 1300, right  # every table fits the page
    assert headings.index("Answer") == 1, headings  # the answer right after the question
    assert not set(captions) & set(in_svg)  # each figure's title once, as its caption
    assert errors == []
    assert [u for u in requests if not u.startswith("file://")] == []
    assert shot.stat().st_size > 10_000
