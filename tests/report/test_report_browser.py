"""The interactive report in headless Chromium (selenium + Debian's chromium-driver): the report of
the 143 TREC-COVID round-1 runs loads with no console error, every plot is drawn at least 900 px
wide, hovering a point names its run, and the tables sort and filter.  Skipped with a reason when
chromium, chromedriver or the shared data are missing."""
from __future__ import annotations

import time

import pytest

from pyterrier_noise.io import CoercionWarning

from browser_helpers import browser
from cli_helpers import run_cli

pytestmark = pytest.mark.slow


@pytest.fixture(scope="module")
def covid_pages(covid, tmp_path_factory):
    """``pyterrier-noise report`` and ``robustness`` (5 replicates, AP) on the 143 runs."""
    d = tmp_path_factory.mktemp("covid")
    with pytest.warns(CoercionWarning, match="ranks start at 0 in 30 run files"):   # once, for the 0-based files
        status, _, err = run_cli("report", covid / "qrels-rnd1.txt", covid / "runs", "-m", "AP", "--pooled",
                                 covid / "runs-metadata.csv", "--out", d / "report")
    assert status == 0, err
    with pytest.warns(CoercionWarning, match="ranks start at 0 in 30 run files"):
        status, _, err = run_cli("robustness", covid / "qrels-rnd1.txt", covid / "runs", "--model", "random", "--tpr",
                                 "0.93", "--fpr", "0.07", "--replicates", "5", "-m", "AP", "--quiet",
                                 "--out", d / "robust")
    assert status == 0, err
    return {"report": d / "report" / "report.html", "robustness": d / "robust" / "report.html"}


@pytest.fixture(scope="module")
def driver():
    with browser(1400, 1000) as d:
        yield d


def load(driver, page):
    driver.get(page.as_uri())
    for _ in range(100):          # Plotly draws after the page loads: wait for every figure's SVG
        n_fig = len(driver.find_elements("css selector", ".plotly-figure"))
        n_svg = len(driver.find_elements("css selector", ".plotly-figure .main-svg"))
        if n_fig and n_svg >= n_fig:
            break
        time.sleep(0.1)
    return driver


def severe(driver):
    return [e for e in driver.get_log("browser") if e.get("level") == "SEVERE"]


@pytest.mark.parametrize("which, n_plots", [("report", 1), ("robustness", 2)])
def test_covid_report_loads_without_errors_and_every_plot_is_wide(covid_pages, driver, which, n_plots):
    load(driver, covid_pages[which])
    assert severe(driver) == []
    figures = driver.find_elements("css selector", ".plotly-figure .js-plotly-plot")
    assert len(figures) == n_plots
    for fig in figures:
        assert fig.size["width"] >= 900, fig.size
        assert fig.find_elements("css selector", ".main-svg")           # drawn, not an empty div
    # the run names are on the axis of the per-run plot (Plotly thins them when they do not fit)
    ticks = driver.find_elements("css selector", ".plotly-figure .xtick text")
    assert len(ticks) >= 30


def test_hovering_a_point_shows_its_run(covid_pages, driver):
    from selenium.webdriver.common.action_chains import ActionChains
    load(driver, covid_pages["report"])
    names = driver.execute_script("var g = document.querySelector('.js-plotly-plot');"
                                  "return g.data.map(function (t) { return t.x; });")
    points = driver.find_elements("css selector", ".plotly-figure .scatterlayer .trace:first-child .point")
    assert len(points) == len(names[0])
    target = points[len(points) // 2]
    driver.execute_script("arguments[0].scrollIntoView({block: 'center'});", target)
    ActionChains(driver).move_to_element(target).perform()
    text = ""
    for _ in range(50):
        text = " ".join(e.text for e in driver.find_elements("css selector", ".hoverlayer .hovertext"))
        if text:
            break
        time.sleep(0.1)
    assert names[0][len(points) // 2] in text and "base" in text and "residual" in text


def test_sorting_and_filtering_a_table(covid_pages, driver):
    load(driver, covid_pages["report"])
    table = driver.find_element("css selector", "table.report-table")
    heads = table.find_elements("css selector", "th")
    col = [h.text for h in heads].index("AP")

    def column():
        return driver.execute_script(
            "var c = arguments[1]; return Array.prototype.map.call(arguments[0].tBodies[0].rows, function (r) {"
            " return parseFloat(r.cells[c].getAttribute('data-v')); });", table, col)

    before = column()
    assert len(before) == 143 and before != sorted(before)           # sorted by RBP, not by AP
    heads[col].click()
    assert column() == sorted(before)
    heads[col].click()
    assert column() == sorted(before, reverse=True)
    box = driver.find_element("css selector", "input.filter")
    box.send_keys("UIowaS")
    visible = [r for r in table.find_elements("css selector", "tbody tr") if r.is_displayed()]
    assert visible and all("UIowaS" in r.text for r in visible) and len(visible) < 143


def test_demo_report_renders(tmp_path, driver):
    """The synthetic demonstration's page: every figure drawn, both pool colours on screen."""
    status, _, err = run_cli("demo", "--out", tmp_path / "demo")
    assert status == 0, err
    load(driver, tmp_path / "demo" / "report.html")
    assert severe(driver) == []
    html = (tmp_path / "demo" / "report.html").read_text()
    figures = driver.find_elements("css selector", ".plotly-figure .js-plotly-plot")
    assert len(figures) == html.count("Plotly.newPlot") and all(f.size["width"] >= 900 for f in figures)
    colours = driver.execute_script("var g = document.querySelector('.js-plotly-plot');"
                                    "return g.data.map(function (t) { return t.marker.color; });")
    assert colours == ["#1b9e77", "#d95f02"]        # pooled green, outside the pool orange, as in the legend
