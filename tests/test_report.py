"""The demonstration and the report: a self-contained HTML page whose plots render in Chromium."""
from __future__ import annotations

import re
import shutil
import subprocess
import sys

import numpy as np
import pytest

from pyterrier_noise.cli import main

CHROMIUM_FLAGS = ["--headless", "--no-sandbox", "--disable-gpu", "--disable-quic", "--no-first-run",
                  "--disable-background-networking", "--disable-component-update", "--disable-sync"]


def chromium() -> str:
    exe = shutil.which("chromium") or shutil.which("chromium-browser")
    if exe is None:
        pytest.skip("Debian's chromium is not installed (.ci/run installs it)")
    return exe


def test_demo_runs_offline_and_writes_a_report(tmp_path, capsys):
    assert main(["demo", "--out", str(tmp_path / "demo")]) == 0
    assert main(["demo", "--out", str(tmp_path / "demo")]) == 0      # the README's command run twice
    out = capsys.readouterr().out
    assert "RBP" in out and f"Report: {tmp_path / 'demo' / 'report.html'}" in out
    page = (tmp_path / "demo" / "report.html").read_text()
    assert page.count('src="data:image/png;base64,') >= 1 and "http" not in page.split("<body>")[1].split("Made by")[0]
    # every part of the demonstration is there (a missing capability would be named, not faked)
    assert "not in this version yet" not in page
    for part in ("1. Scores with their uncertainty", "2. Noisy judges", "3. Which documents to judge next",
                 "4. Quantised scores"):
        assert part in page
    for part in ("1. RBP(p=0.8) with its residual", "2. Noisy judges", "3. Which documents to judge next",
                 "4. Quantised scores"):
        assert part in out


def test_report_renders_in_headless_chromium(tmp_path):
    exe = chromium()
    assert main(["demo", "--out", str(tmp_path / "demo")]) == 0
    page = tmp_path / "demo" / "report.html"
    common = CHROMIUM_FLAGS + [f"--user-data-dir={tmp_path / 'profile'}"]
    dom = subprocess.run([exe, *common, "--dump-dom", page.as_uri()], capture_output=True, text=True, timeout=120).stdout
    imgs = re.findall(r'<img class="plot"[^>]*src="data:image/png;base64,', dom)
    figures = ("rbp-ranges", "replicate-distributions", "true-vs-observed-ranks", "selection-curves", "tie-effects")
    assert len(imgs) == len(figures) and all(f'id="{f}"' in dom for f in figures)
    shot = tmp_path / "shot.png"
    subprocess.run([exe, *common, "--window-size=1200,1400", f"--screenshot={shot}", page.as_uri()],
                   capture_output=True, timeout=120)
    import matplotlib.image as mpimg
    pixels = mpimg.imread(shot)[..., :3]
    # the plot draws the pool's systems in green and the others in orange: both colours are on screen
    green = (np.abs(pixels - np.array([0x1b, 0x9e, 0x77]) / 255).sum(axis=2) < 0.35).sum()
    orange = (np.abs(pixels - np.array([0xd9, 0x5f, 0x02]) / 255).sum(axis=2) < 0.35).sum()
    assert green > 200 and orange > 200, (green, orange)


def test_report_command_on_files(tmp_path, capsys):
    from pyterrier_noise import write_trec_qrels, write_trec_run
    from pyterrier_noise.synthetic import make_collection
    c = make_collection(n_topics=5, n_systems=4, seed=3)
    for name, run in c.runs.items():
        write_trec_run(run, tmp_path / "runs" / name)
    write_trec_qrels(c.qrels, tmp_path / "qrels")
    assert main(["report", str(tmp_path / "qrels"), str(tmp_path / "runs"), "-m", "AP", "--out", str(tmp_path / "r")]) == 0
    page = (tmp_path / "r" / "report.html").read_text()
    assert "RBP(p=0.8)" in page and "AP" in page and page.count("data:image/png;base64,") == 1


def test_plot_rbp_ranges_returns_a_figure_without_pyplot(tmp_path):
    """Figures come from the house helper: no pyplot, no backend switch; save= writes the file."""
    code = ("import sys, matplotlib\nbackend = dict.__getitem__(matplotlib.rcParams, 'backend')\n"
            "import pandas as pd\n"
            "from pyterrier_noise.report import Report, plot_rbp_ranges\n"
            "b = pd.Series({'a': 0.5, 'b': 0.3}); r = pd.Series({'a': 0.1, 'b': 0.2})\n"
            f"fig = plot_rbp_ranges(b, r, highlight=['b'], save={str(tmp_path / 'ranges.png')!r})\n"
            "from matplotlib.figure import Figure\nassert isinstance(fig, Figure)\n"
            "rep = Report('t').figure(fig, 'figure').figure(fig.axes[0], 'axes')\n"
            "assert rep.n_figures == 2 and rep.html().count('data:image/png;base64,') == 2\n"
            "assert 'matplotlib.pyplot' not in sys.modules, 'pyplot imported'\n"
            "assert dict.__getitem__(matplotlib.rcParams, 'backend') == backend\n")
    subprocess.run([sys.executable, "-c", code], check=True, capture_output=True, text=True)
    assert (tmp_path / "ranges.png").read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"


def test_plot_rbp_ranges_draws_on_a_given_axes():
    import pandas as pd

    from pyterrier_noise._plot import figure
    from pyterrier_noise.report import plot_rbp_ranges
    fig = figure(4, 3)
    ax = fig.add_subplot()
    assert plot_rbp_ranges(pd.Series({"a": 0.5}), pd.Series({"a": 0.1}), ax=ax, title="t") is fig
    assert ax.get_title() == "t" and ax.get_ylim() == (0, 1)
