"""The report: a self-contained interactive page (its tables, words and computed conclusions), the
demo's ending, and the report entry points of robustness, select, ties and the result objects."""
from __future__ import annotations

import json
import re
import subprocess
import sys

import numpy as np
import pandas as pd
import pytest

from cli_helpers import run_cli
from pyterrier_noise.cli import main


def _tables(page: str) -> list[str]:
    return re.findall(r'<table class="report-table".*?</table>', page, re.S)


def _external_resources(page: str) -> list[str]:
    """Scripts, styles or images the page would fetch from elsewhere (the page must need none)."""
    return re.findall(r'<(?:script|link|img)[^>]+(?:src|href)="(?:https?:)?//[^"]*"', page)


@pytest.fixture(scope="module")
def demo(tmp_path_factory):
    out = tmp_path_factory.mktemp("demo") / "demo"
    status, stdout, err = run_cli("demo", "--out", out)
    assert status == 0, err
    return out, stdout


def test_demo_ends_with_every_file_it_wrote_what_to_open_and_the_commands(demo):
    out, stdout = demo
    tail = stdout.split("Done in", 1)[1]
    manifest = json.loads((out / "manifest.json").read_text())
    written = manifest["files"] + ["manifest.json"]
    assert f"Wrote {len(written)} files to {out}/" in tail
    for name in written:                      # every file written is named, and exists
        assert re.search(rf"^\s+{re.escape(name)}\s+\S", tail, re.M), name
        assert (out / name).is_file()
    assert f"Open {out / 'report.html'} in a browser" in tail
    assert "pyterrier-noise report QRELS RUNS --out" in tail
    assert "pyterrier-noise demo QRELS RUNS --out" in tail
    # the terminal tables carry no extra pandas header row holding only the index name
    assert not re.search(r"^\s+(measure|system)\s*$", stdout, re.M)


def test_demo_judging_part_shows_a_method_separating_the_top_systems(demo):
    """Part 3 runs to every judgment of the synthetic qrels, where the methods differ: the best one
    separates some top pairs, and the text says which and by how much (from the written table)."""
    out, stdout = demo
    sel = pd.read_csv(out / "selection.tsv", sep="\t")
    last = sel[sel["judgments"] == sel["judgments"].max()].set_index("method")
    best = last["separated"].idxmax()
    assert last.loc[best, "separated"] > last.loc["pool", "separated"]
    assert (f"Method {best} separates {last.loc[best, 'separated']:.0%} of the top systems' pairs and depth "
            f"pooling {last.loc['pool', 'separated']:.0%}") in stdout
    part3 = stdout[stdout.index("3. Which documents"):stdout.index("4. Quantised")]
    assert all(len(line) <= 120 for line in part3.splitlines())


def test_demo_report_is_self_contained_with_a_section_per_part(demo):
    out, _ = demo
    page = (out / "report.html").read_text()
    assert _external_resources(page) == []
    assert page.count("Plotly.newPlot") == page.count('class="plot plotly-figure"') >= 6
    assert 'src="https://cdn' not in page and "cdn.plot.ly" not in page.split("</head>", 1)[1]
    for part in ("1. Scores with their uncertainty", "2. Noisy judges", "3. Which documents to judge next",
                 "4. Quantised scores"):
        assert f"<h2>{part}</h2>" in page
    # every figure is followed by its computed conclusion, the page by the command and versions
    assert page.count('<p class="conclusion">') >= 5
    assert "Made by <code>pyterrier-noise demo --out" in page and "plotly 7." in page and "numpy" in page
    # no table has a second header row (pandas' index-name row)
    assert all(t.count("<tr>", 0, t.index("</thead>")) == 1 for t in _tables(page))


def test_demo_report_counts_are_integers_and_counts_are_not_mixed_with_shares(demo):
    out, _ = demo
    page = (out / "report.html").read_text()
    rob = pd.read_csv(out / "robustness.tsv", sep="\t")
    n_sig = int(rob.loc[rob["measure"] == "AP", "significant_pairs"].iloc[0])
    counts = next(t for t in _tables(page) if ">significant_pairs<" in t)
    assert f'<td data-v="{float(n_sig)!r}">{n_sig:,}</td>' in counts     # not 133.0000
    assert ">kept_significant<" not in counts and ">lost<" not in counts
    sel = next(t for t in _tables(page) if ">judgments<" in t)
    assert re.search(r'<td data-v="\d+\.0">[\d,]+</td>', sel)             # judgments as integers


def test_table_explains_columns_once_and_all_zero_columns(tmp_path):
    from pyterrier_noise.report import Report
    frame = pd.DataFrame({"method": ["A", "C"], "judgments": [100.0, 200.0], "separated": [0.0, 0.0],
                          "mystery": [0, 0], "top_residual": [0.5, 0.25]})
    rep = Report("t").table(frame, index=False).table(frame, index=False)
    page = rep.html()
    assert page.count("<dt>separated</dt>") == 1 and page.count("<dt>judgments</dt>") == 1   # said once
    assert "separated is 0 in every row: no pair of top runs is separated yet: the judgments are too few" in page
    assert ">mystery<" not in page and "Left out: mystery (0 in every row)." in page
    assert ">100</td>" in page and ">0.2500</td>" in page


def test_table_escapes_text_and_flattens_the_index():
    from pyterrier_noise.report import Report
    frame = pd.DataFrame({"AP": [0.5, 0.25]}, index=pd.Index(["<script>alert(1)</script>", "a&b"], name=None))
    page = Report("<b>title</b>").table(frame).html()
    assert "<script>alert(1)</script>" not in page and "&lt;script&gt;alert(1)&lt;/script&gt;" in page
    assert "&lt;b&gt;title&lt;/b&gt;" in page and "a&amp;b" in page
    head = _tables(page)[0].split("</thead>")[0]
    assert head.count("<th ") == 2 and ">system</th>" in head


def test_scores_conclusion_counts_match_brute_force():
    from pyterrier_noise.report.sections import scores_conclusion
    rng = np.random.default_rng(5)
    names = [f"r{i}" for i in range(9)]
    base = pd.Series(rng.uniform(0, 0.6, 9), index=names)
    resid = pd.Series(rng.uniform(0, 0.4, 9), index=names)
    out = ["r1", "r4", "r7"]
    text = scores_conclusion(base, resid, highlight=out)
    big = [n for n in names if resid[n] > 0.2]                      # brute force, one run at a time
    not_sep = 0
    for i in range(9):
        for j in range(i + 1, 9):
            hi, lo = (names[i], names[j]) if base.iloc[i] >= base.iloc[j] else (names[j], names[i])
            not_sep += base[lo] + resid[lo] >= base[hi]
    assert text.startswith(f"{len(big)} of 9 runs could still move by more than 0.2")
    assert f"{not_sep} of 36 pairs of runs are not separated" in text
    n_out = sum(b in out for b in big)
    assert (f"{n_out} of them did not contribute" in text) or (n_out == len(big) and "all are runs" in text)


def test_selection_conclusion_names_the_leader_and_explains_no_separation():
    from pyterrier_noise.report.sections import selection_conclusion
    s = pd.DataFrame({"method": ["A", "A", "C", "C"], "judgments": [10, 8691, 10, 8691],
                      "relevant": [3, 500, 2, 610], "top_residual": [0.9, 0.3, 0.9, 0.2],
                      "separated": [0.0, 0.54, 0.0, 0.61]})
    text = selection_conclusion(s)
    assert "At 8,691 judgments Method C found the most relevant documents (610)" in text
    assert "Share of top pairs separated at 8,691 judgments: Method C 61%, Method A 54%." in text
    assert "Moffat, Webber and Zobel (2007) found Method C best" not in text
    text = selection_conclusion(s.assign(top_residual=[0.9, 0.1, 0.9, 0.2]))   # A ahead of C: said so
    assert "found Method C best at this; on these data Method A is ahead by 0.1000 in mean residual" in text
    text = selection_conclusion(s.assign(separated=0.0))
    assert "No pair of top runs is separated yet: the judgments are too few." in text


def test_report_command_on_files(tmp_path):
    from pyterrier_noise import write_trec_qrels, write_trec_run
    from pyterrier_noise.synthetic import make_collection
    c = make_collection(n_topics=5, n_systems=4, seed=3)
    for name, run in c.runs.items():
        write_trec_run(run, tmp_path / "runs" / name)
    write_trec_qrels(c.qrels, tmp_path / "qrels")
    assert main(["report", str(tmp_path / "qrels"), str(tmp_path / "runs"), "-m", "AP", "--out", str(tmp_path / "r")]) == 0
    page = (tmp_path / "r" / "report.html").read_text()
    head = _tables(page)[0].split("</thead>")[0]
    assert re.findall(r">([^<>]+)</th>", head) == ["system", "RBP(p=0.8)", "RBP residual", "AP"]
    assert page.count("Plotly.newPlot") == 1 and "of 4 runs could still move" in page
    assert "Made by <code>" in page and "report" in page.split("Made by <code>")[1].split("</code>")[0]


@pytest.fixture(scope="module")
def small_files(tmp_path_factory):
    from pyterrier_noise import write_trec_qrels, write_trec_run
    from pyterrier_noise.synthetic import make_collection
    d = tmp_path_factory.mktemp("small")
    c = make_collection(n_topics=8, n_systems=6, seed=3)
    for name, run in c.runs.items():
        write_trec_run(run, d / "runs" / name)
    write_trec_qrels(c.qrels, d / "qrels")
    return d


def test_robustness_reports_the_files_its_manifest_lists_and_writes_a_report(small_files):
    out = small_files / "rob"
    status, stdout, err = run_cli("robustness", small_files / "qrels", small_files / "runs", "--model", "random",
                                  "--tpr", "0.9", "--fpr", "0.1", "--replicates", "5", "-m", "AP", "--quiet", "--out", out)
    assert status == 0, err
    on_disk = sorted(p.name for p in out.iterdir())
    assert f"wrote {len(on_disk)} files to {out}/" in stdout
    assert "report.html" in on_disk and "report.html" in json.loads((out / "manifest.json").read_text())["files"]
    page = (out / "report.html").read_text()
    assert "<h2>Noisy judges</h2>" in page and "Kendall&#x27;s tau between the perturbed" in page
    header = stdout.splitlines()[0].split()
    assert header[:4] == ["measure", "kendall_tau", "tau_ap", "rbo"]
    assert re.search(r"^\s*AP(\s+\S+){3}\s+\d+\s", stdout, re.M)      # significant_pairs printed as an integer


def test_select_and_ties_write_reports(small_files, tmp_path):
    out = small_files / "sel"
    status, stdout, err = run_cli("select", "--method", "C", "--budget", "200", "--checkpoints", "100",
                                  small_files / "qrels", small_files / "runs", "--quiet", "--out", out)
    assert status == 0, err
    page = (out / "report.html").read_text()
    assert "selection-curves" in page and "found the most relevant documents" in page
    banded = tmp_path / "run01.rho2"                  # bands of 1, 2, 4 ... tied documents (Yang 2019)
    assert run_cli("band", "--rho", "2", small_files / "runs" / "run01", "--out", banded)[0] == 0
    status, stdout, err = run_cli("ties", small_files / "runs", banded, "--report", tmp_path / "ties.html")
    assert status == 0, err
    page = (tmp_path / "ties.html").read_text()
    assert "<h2>Ties in the runs</h2>" in page and "1 of 7 runs have tied scores" in page and "tie-shares" in page


def test_result_objects_write_reports(tmp_path):
    """The report takes the results of the capabilities (they do not know the report)."""
    from pyterrier_noise.experiments import robustness_experiment
    from pyterrier_noise.judges import RandomFlips
    from pyterrier_noise.report import build_report
    from pyterrier_noise.selection import simulate
    from pyterrier_noise.synthetic import make_collection
    from pyterrier_noise.ties import tie_stats
    c = make_collection(n_topics=6, n_systems=5, seed=2)
    res = robustness_experiment(c.runs, None, c.qrels, ["AP"], RandomFlips(tpr=0.9, fpr=0.1), n_replicates=4)
    path = build_report("robustness", robustness=res).write(tmp_path)
    assert path == tmp_path / "report.html" and "rank-intervals-ap" in path.read_text()
    sim = simulate(c.runs, c.qrels, method="A", checkpoints=[50, 100])
    page = build_report("simulation", selection=sim).write(tmp_path / "sim.html").read_text()
    assert "Method A" in page and "selection-ranges" in page
    from pyterrier_noise.ties import TieBanding
    runs = pd.concat([TieBanding(2)(r).assign(name=n) for n, r in c.runs.items()], ignore_index=True)
    page = build_report("ties", tie_stats=tie_stats(runs)).write(tmp_path / "ties.html").read_text()
    assert "tie-shares" in page


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


def test_report_command_adds_a_section_for_each_part_asked_for(small_files):
    out = small_files / "full"
    status, stdout, err = run_cli("report", small_files / "qrels", small_files / "runs", "--noisy-judges",
                                  "--replicates", "4", "--judging", "--budget", "120", "--tie-stats", "--out", out)
    assert status == 0, err
    page = (out / "report.html").read_text()
    heads = re.findall(r"<h2>(.*?)</h2>", page)
    assert heads == ["Scores with their uncertainty", "Noisy judges", "Which documents to judge next", "Ties in the runs"]
    # synthetic runs have distinct scores: the ties section says so instead of drawing empty bars
    assert "None of the 6 runs has tied scores" in page and "tie-shares" not in page
    assert json.loads((out / "manifest.json").read_text())["files"] == ["report.html"]


def test_correction_section_counts_runs_that_change_rank():
    from pyterrier_noise.correction import JudgeCalibration, correct_experiment
    from pyterrier_noise.report import build_report
    rng = np.random.default_rng(4)
    perquery = pd.DataFrame({"name": np.repeat(["a", "b", "c"], 10), "qid": np.tile([str(q) for q in range(10)], 3),
                             "measure": "P@5", "value": rng.integers(0, 6, 30) / 5})
    frame = correct_experiment(perquery, JudgeCalibration.binary(80, 70, 90, 80))
    page = build_report("c", correction=frame).html()
    naive = frame.set_index("name")["naive"].rank(ascending=False, method="min")
    corrected = frame.set_index("name")["corrected"].rank(ascending=False, method="min")
    moved = int((naive != corrected).sum())                      # brute force over the three runs
    assert f"{moved} of 3 runs take another rank than by the noisy labels" in page
    shift = (frame["corrected"] - frame["naive"]).mean()
    assert f"changes P@5 by {shift:+.4f} on average" in page and "corrected-p-5" in page


@pytest.mark.parametrize("content, words", [
    (b"run,team\nr1,x\n", "no column 'contributed_judgments' (found 'run', 'team')"),
    (b"team,contributed_judgments\nx,yes\n", "no column 'run'"),
    (b"run,contributed_judgments\nrun1,yes\nrun2,maybe\n", "line 3: contributed_judgments is 'maybe'; expected yes or no"),
    (b"run,contributed_judgments\nrun1,y\xe9s\n", "line 2: not UTF-8 text (byte 0xe9)"),
    (b"\x89PNG\r\n\x1a\n\0\0\0\rIHDR", "a NUL byte"),
    (b"", "not a CSV table"),
])
def test_report_pooled_file_is_validated(tmp_path, content, words):
    # issue 30: a KeyError or UnicodeDecodeError traceback before
    (tmp_path / "q").write_text("1 0 d1 1\n1 0 d2 0\n")
    for i in (1, 2):
        (tmp_path / f"run{i}").write_text(f"1 Q0 d{i} 1 2 r\n1 Q0 d{3 - i} 2 1 r\n")
    (tmp_path / "pooled.csv").write_bytes(content)
    status, _, err = run_cli("report", tmp_path / "q", tmp_path / "run1", tmp_path / "run2", "--pooled",
                             tmp_path / "pooled.csv", "--out", tmp_path / "out")
    assert status == 2 and "pooled.csv" in err
    assert words in err and "Traceback" not in err and not (tmp_path / "out").exists(), err


def test_report_pooled_names_runs_it_does_not_know(tmp_path):
    (tmp_path / "q").write_text("1 0 d1 1\n1 0 d2 0\n")
    for i in (1, 2):
        (tmp_path / f"run{i}").write_text(f"1 Q0 d{i} 1 2 r\n1 Q0 d{3 - i} 2 1 r\n")
    (tmp_path / "pooled.csv").write_text("run,contributed_judgments\nrun1,YES\nrun2,no\nrunX,no\nrunY,yes\n")
    from pyterrier_noise.io import CoercionWarning
    with pytest.warns(CoercionWarning, match=r"2 run\(s\) named there are not among the runs evaluated "
                      r"\(e\.g\. 'runX', 'runY'\)") as record:
        status, _, err = run_cli("report", tmp_path / "q", tmp_path / "run1", tmp_path / "run2", "--pooled",
                                 tmp_path / "pooled.csv", "--out", tmp_path / "out")
    assert status == 0 and len(record) == 1, err
    html = (tmp_path / "out" / "report.html").read_text()
    assert "outside the pool" in html
