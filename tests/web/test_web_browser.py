"""A real browser on the judging server: Debian's chromium, headless, driven by selenium through
chromedriver.  An assessor logs in with a token, judges 20 Vaswani documents with the keyboard
(in a session that 300 judgments from the qrels started), undoes the last one and judges it again; the exported qrels equal what was pressed, and the
organiser's page shows the session's RBP ranges.  With PYTERRIER_NOISE_SCREENSHOTS=DIR the two
pages are saved there as serve-assess.png and serve-organiser.png (docs/img holds them)."""
from __future__ import annotations

import os
import shutil
from pathlib import Path

import numpy as np
import pytest

pytestmark = pytest.mark.slow   # headless Chromium

pytest.importorskip("uvicorn", reason="the 'web' extra (uvicorn) is not installed")
pytest.importorskip("httpx", reason="httpx (the dev extra) is not installed")
pytest.importorskip("selenium", reason="selenium (the dev extra) is not installed")

from web_helpers import serve_load  # noqa: E402

ROOT = Path(__file__).resolve().parents[2]
CHROMEDRIVER = shutil.which("chromedriver") or "/usr/bin/chromedriver"
CHROMIUM = shutil.which("chromium") or "/usr/bin/chromium"
FLAGS = ["--headless", "--no-sandbox", "--disable-gpu", "--disable-quic", "--no-first-run",
         "--disable-background-networking", "--disable-component-update", "--disable-sync", "--window-size=1200,1100"]


@pytest.fixture(scope="module")
def browser(tmp_path_factory):
    """One headless chromium for the module's tests (each test opens its own server, on its own port)."""
    if not (os.path.exists(CHROMEDRIVER) and os.path.exists(CHROMIUM)):
        pytest.skip(f"chromium and chromedriver are needed (Debian packages chromium, chromium-driver): "
                    f"{CHROMIUM} or {CHROMEDRIVER} is absent")
    from selenium import webdriver
    from selenium.webdriver.chrome.service import Service
    opts = webdriver.ChromeOptions()
    opts.binary_location = CHROMIUM
    for f in FLAGS + [f"--user-data-dir={tmp_path_factory.mktemp('chrome-profile')}"]:
        opts.add_argument(f)
    driver = webdriver.Chrome(service=Service(CHROMEDRIVER), options=opts)
    try:
        yield driver
    finally:
        driver.quit()


def _wait_new_page(driver, old_nonce: str | None, marker: str | None = None) -> None:
    """Poll (with a deadline) until the judging page shows another lease (or ``marker`` text)."""
    from selenium.common.exceptions import NoSuchElementException, StaleElementReferenceException
    from selenium.webdriver.common.by import By
    from selenium.webdriver.support.ui import WebDriverWait

    def changed(d):
        if marker is not None and marker not in d.page_source:
            return False
        try:
            return d.find_element(By.NAME, "nonce").get_attribute("value") != old_nonce
        except NoSuchElementException:
            return "Nothing left" in d.page_source or "Nothing to judge" in d.page_source
    WebDriverWait(driver, 30, poll_frequency=0.05, ignored_exceptions=(StaleElementReferenceException,)).until(changed)


def _wait_for(driver, element_id: str):
    """The element with id ``element_id`` once the page that holds it has loaded (polled with a deadline:
    a click that navigates returns before the next page is there)."""
    from selenium.common.exceptions import StaleElementReferenceException
    from selenium.webdriver.common.by import By
    from selenium.webdriver.support import expected_conditions as ec
    from selenium.webdriver.support.ui import WebDriverWait
    return WebDriverWait(driver, 30, poll_frequency=0.05, ignored_exceptions=(StaleElementReferenceException,)).until(
        ec.presence_of_element_located((By.ID, element_id)))


@pytest.mark.slow
def test_an_assessor_judges_twenty_documents_with_the_keyboard(vaswani, browser, tmp_path):
    import httpx
    from selenium.webdriver.common.by import By

    from pyterrier_noise.io import read_qrels, write_trec_run
    from pyterrier_noise.selection import JudgingSession, QrelsOracle
    from pyterrier_noise.web import WebStore

    bench = serve_load()
    runs_dir = tmp_path / "runs"
    runs_dir.mkdir()
    for name, frame in bench.vaswani_runs(vaswani).items():
        write_trec_run(frame.assign(rank=frame["rank"] - 1), runs_dir / name, tag=name)
    session = tmp_path / "judging.sqlite"
    with JudgingSession(session, runs=runs_dir, method="C", p=0.8) as s:    # a session under way: 300 judged
        s.run(QrelsOracle(read_qrels(vaswani / "qrels")), budget=300)
        before = s.judged_qrels()
    store = WebStore(session)
    alice, lead = store.add_account("alice"), store.add_account("lead", "organiser")
    store.close()
    srv = bench.Server(session, bench.free_port(), ["--budget", "325", "--docs", str(vaswani / "corpus.trec.gz"),
                                                   "--topics", str(vaswani / "topics.trec")], tmp_path / "server.log")
    shots = os.environ.get("PYTERRIER_NOISE_SCREENSHOTS")
    base = f"http://127.0.0.1:{srv.port}"
    rng = np.random.default_rng(7)
    clicked: list[tuple[str, str, str]] = []
    try:
        import time
        srv.start(time.monotonic() + 120)
        d = browser
        d.get(base + "/")
        d.find_element(By.ID, "token").send_keys(alice)
        d.find_element(By.ID, "login").click()
        _wait_new_page(d, None)
        for i in range(20):
            qid = d.find_element(By.ID, "document").get_attribute("data-qid")
            docno = d.find_element(By.ID, "docno").text
            nonce = d.find_element(By.NAME, "nonce").get_attribute("value")
            assert d.find_element(By.ID, "judged").text == str(300 + i)
            if i == 0:
                marks = [m.text.lower() for m in d.find_elements(By.TAG_NAME, "mark")]
                title = d.find_element(By.ID, "title").text.lower()
                assert all(m.rstrip("s") in title or m in title for m in marks)
            key = str(int(rng.integers(2)))
            d.find_element(By.TAG_NAME, "body").send_keys(key)
            clicked.append((qid, docno, key))
            _wait_new_page(d, nonce)
            if i == 5 and shots:
                Path(shots).mkdir(parents=True, exist_ok=True)
                d.save_screenshot(str(Path(shots) / "serve-assess.png"))
        assert d.find_element(By.ID, "judged").text == "320" and d.find_element(By.ID, "left").text == "5"
        nonce = d.find_element(By.NAME, "nonce").get_attribute("value")
        d.find_element(By.TAG_NAME, "body").send_keys("u")              # undo the 20th judgment
        _wait_new_page(d, nonce, marker="You undid your judgment")
        assert d.find_element(By.ID, "docno").text == clicked[-1][1]
        nonce = d.find_element(By.NAME, "nonce").get_attribute("value")
        again = "0" if clicked[-1][2] == "1" else "1"
        d.find_element(By.TAG_NAME, "body").send_keys(again)
        _wait_new_page(d, nonce)
        clicked[-1] = (*clicked[-1][:2], again)

        d.find_element(By.CSS_SELECTOR, "header button").click()        # log out, in as the organiser
        _wait_for(d, "token").send_keys(lead)
        d.find_element(By.ID, "login").click()
        ranges = _wait_for(d, "ranges")
        rows = [[td.text for td in tr.find_elements(By.TAG_NAME, "td")[:5]]
                for tr in ranges.find_elements(By.CSS_SELECTOR, "tbody tr")]
        if shots:
            d.save_screenshot(str(Path(shots) / "serve-organiser.png"))
        with httpx.Client(base_url=base) as c:
            assert c.post("/api/login", headers={"authorization": f"Bearer {lead}"}).status_code == 200
            exported = c.get("/organiser/qrels").text.splitlines()
    finally:
        srv.stop()
    assert exported[300:] == [f"{q} 0 {dn} {k}" for q, dn, k in clicked]          # what was pressed
    assert exported[:300] == [f"{q} 0 {dn} {int(v)}" for q, dn, v in before.itertuples(index=False)]
    with JudgingSession(session) as s:
        b = s.system_bounds().sort_values(["base", "upper"], ascending=False, kind="stable")
        assert len(s.history) == 320
    assert rows == [[r.name, f"{r.base:.4f}", f"{r.residual:.4f}", f"{r.upper:.4f}", f"{r.projected:.4f}"]
                    for r in b.itertuples()]


RICH = ("<DOC>\n<DOCNO>{docno}</DOCNO>\n<DATE>900101</DATE>\n<HEADLINE>\nPrices &amp; wages &mdash; a study\n"
        "</HEADLINE>\n<TEXT>\n<P>\nWhen a < b comparison and c > d hold,\nthe claim stands.\n</P>\n<P>\n"
        "A second paragraph, &#233;t&eacute;, with " + "x" * 400 + " in it.\n</P>\n</TEXT>\n</DOC>\n")


def test_a_trec_document_is_shown_as_written(browser, tmp_path):
    """Chromium on a TREC <DOC> with '<' and '>' in its text, entities, a headline and two paragraphs,
    and a 400-letter word: the text reads as written, in four paragraphs, and nothing overflows sideways."""
    from selenium.webdriver.common.by import By

    from web_helpers import Server, accounts

    srv = Server(tmp_path, docs=lambda docnos: "".join(RICH.format(docno=d) for d in docnos))
    try:
        tok = accounts(tmp_path / "s.sqlite", "alice")["alice"]
        d = browser
        d.get(f"http://127.0.0.1:{srv.port}/")
        d.find_element(By.ID, "token").send_keys(tok)
        d.find_element(By.ID, "login").click()
        text = _wait_for(d, "document").find_element(By.CLASS_NAME, "text")
        shown = d.execute_script("return arguments[0].innerText", text)
        assert shown.split("\n\n") == ["Prices & wages — a study", "900101",
                                       "When a < b comparison and c > d hold, the claim stands.",
                                       "A second paragraph, été, with " + "x" * 400 + " in it."]
        assert not d.find_elements(By.CSS_SELECTOR, ".text b, .text p")          # no markup from the text
        overflow = d.execute_script("return [document.documentElement.scrollWidth, "
                                    "document.documentElement.clientWidth, arguments[0].scrollWidth, "
                                    "arguments[0].clientWidth]", text)
        assert overflow[0] <= overflow[1] and overflow[2] <= overflow[3], overflow      # the long word wraps
    finally:
        srv.stop()


def test_keys_pressed_during_a_submission_wait_their_turn(browser, tmp_path):
    """'1' then 'u' at once: the label is recorded, then that judgment is undone (no 409); 'U' (Shift)
    undoes too."""
    import httpx
    from selenium.webdriver.common.by import By
    from selenium.webdriver.common.keys import Keys

    from web_helpers import Server, accounts

    srv = Server(tmp_path, docs=lambda docnos: "".join(RICH.format(docno=d) for d in docnos))
    try:
        toks = accounts(tmp_path / "s.sqlite", "alice", organiser="lead")
        d = browser
        d.get(f"http://127.0.0.1:{srv.port}/")
        d.find_element(By.ID, "token").send_keys(toks["alice"])
        d.find_element(By.ID, "login").click()
        _wait_new_page(d, None)
        first = d.find_element(By.ID, "docno").text
        nonce = d.find_element(By.NAME, "nonce").get_attribute("value")
        d.find_element(By.TAG_NAME, "body").send_keys("1u")                 # in one burst
        _wait_new_page(d, nonce, marker="You undid your judgment")
        assert d.find_element(By.ID, "docno").text == first and "409" not in d.title
        nonce = d.find_element(By.NAME, "nonce").get_attribute("value")
        d.find_element(By.TAG_NAME, "body").send_keys("0")                  # judged again: 0
        _wait_new_page(d, nonce)
        assert d.find_element(By.ID, "undo-hint").text.endswith(": not relevant)")     # the label's name
        nonce = d.find_element(By.NAME, "nonce").get_attribute("value")
        d.find_element(By.TAG_NAME, "body").send_keys(Keys.SHIFT + "u")     # U
        _wait_new_page(d, nonce, marker="You undid your judgment")
        assert d.find_element(By.ID, "docno").text == first
        with httpx.Client(base_url=f"http://127.0.0.1:{srv.port}") as c:
            assert c.post("/api/login", headers={"authorization": f"Bearer {toks['lead']}"}).status_code == 200
            log = c.get("/organiser/log").text.splitlines()
        rows = [ln.split("\t") for ln in log[1:]]
        # judged 1, undone; judged 0, undone: nothing refused on the way
        assert [(r[5], r[6], bool(r[7])) for r in rows] == [(first, "1", True), (first, "0", True)]
        assert [ln for ln in srv.stderr().splitlines() if " 409 " in ln] == []
    finally:
        srv.stop()
