"""The banding experiment of Yang (2019) thesis Sec. 3.3.3-3.3.4, on TREC-COVID round 1 and on
live PISA pipelines over Vaswani.

Every run is banded with ``TieBanding(rho)`` (bands b_1 = 1, b_{g+1} = ceil(rho b_g); every document
of a band gets the same score) for rho = 1.1 ... 2.0 (and 3, 4 to see where it breaks); the banded
runs are scored with ``ties="expected"`` (the exact expected value over all orderings of every
band: McSherry & Najork's closed form for AP, the first-relevant-group distribution for RR, mean
weights for RBP / P / nDCG), the originals in trec_eval's order.  For RR, RBP(0.5), RBP(0.85),
AP, nDCG@10 and P@10 it measures:

* how often the conclusion about a system pair changes: paired t-test over topics (alpha 0.05,
  two-sided) on the original and on the banded scores; a pair keeps its conclusion if it is
  significant in both with the same winner, or in neither (thesis Figs. 3.8-3.11, "TP + TN");
* Kendall's tau between the system rankings by mean score (original vs banded);
* the spread between the optimistic and the pessimistic score of the banded runs (best and worst
  ordering of every band), per run-topic and for system means;
* the number of systems passing the thesis's non-inferiority test (Table 3.4, delta = 1 % and 3 %).

rho = 1 is a check: every band is one document, so the banded expected scores must equal the
originals exactly.

Data: ../shared/data/trec-covid-round1 (143 runs x 30 topics, graded qrels: label >= 1 is relevant
for the binary measures, nDCG@10 uses the label as gain) and ../shared/data/vaswani (11,429
abstracts indexed with pyterrier_pisa; 14 retrievers: BM25 with six (k1, b), QLD with four mu, PL2
with three c, and DPH; 93 topics; pipelines ``retriever >> TieBanding(rho)``).

There is no peer tool for exact expected AP or RR over tied groups, so no ratio is printed; the
table gives the run time of each part and the peak memory.

Usage:  python benchmarks/banding_experiment.py     (a few minutes; writes
        benchmarks/results/banding_experiment.json and docs/img/banding_experiment.png)
"""
from __future__ import annotations

import contextlib
import gzip
import json
import os
import re
import resource
import shutil
import sys
import tempfile
import time
from pathlib import Path

import numpy as np
import pandas as pd

ROOT = Path(__file__).resolve().parents[1]
DATA = ROOT.parent / "shared" / "data"
COVID = DATA / "trec-covid-round1"
VASWANI = DATA / "vaswani"
RESULTS = ROOT / "benchmarks" / "results" / "banding_experiment.json"
FIGURE = ROOT / "docs" / "img" / "banding_experiment.png"

RHOS = ["1", "1.1", "1.2", "1.3", "1.4", "1.5", "1.6", "1.7", "1.8", "1.9", "2", "3", "4"]
ALPHA = 0.05
MODES = ("expected", "optimistic", "pessimistic")


def measures():
    from pyterrier_noise import MeasureSpec
    return {"RR": MeasureSpec("RR"), "RBP(0.5)": MeasureSpec("RBP", p=0.5), "RBP(0.85)": MeasureSpec("RBP", p=0.85),
            "AP": MeasureSpec("AP"), "nDCG@10": MeasureSpec("nDCG", cutoff=10), "P@10": MeasureSpec("P", cutoff=10)}


def peak_mib() -> float:
    return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024.0


@contextlib.contextmanager
def quiet_native_output():
    """PISA's C++ side prints progress straight to the file descriptors 1 and 2: mute them."""
    sys.stdout.flush()
    sys.stderr.flush()
    saved = os.dup(1), os.dup(2)
    devnull = os.open(os.devnull, os.O_WRONLY)
    try:
        os.dup2(devnull, 1)
        os.dup2(devnull, 2)
        yield
    finally:
        sys.stdout.flush()
        sys.stderr.flush()
        os.dup2(saved[0], 1)
        os.dup2(saved[1], 2)
        for fd in (*saved, devnull):
            os.close(fd)


# ------------------------------------------------------------------------------------------------
# evaluation of one condition

def evaluate(runs: dict, qrels: pd.DataFrame, ties: str) -> dict:
    """{measure: (systems, topics)} under a tie policy; for grouped policies also the optimistic
    and pessimistic scores of the same alignment."""
    from pyterrier_noise import AlignedRuns
    from pyterrier_noise.engine import evaluate_tied
    specs = measures()
    aligned = AlignedRuns.build(runs, qrels, ties=ties, on_topic_mismatch="ignore")
    out = aligned.evaluate(list(specs.values()))
    res = {name: out[s][:, :, 0] for name, s in specs.items()}
    if ties == "expected":
        L = aligned.label_matrix()
        for mode in ("optimistic", "pessimistic"):
            for name, s in specs.items():
                res[f"{name}:{mode}"] = evaluate_tied(aligned, s, L, mode).reshape(aligned.n_runs, aligned.n_topics)
    return res


def compare(orig: dict, banded: dict) -> dict:
    """Pair conclusions, ranking agreement, optimistic-pessimistic spread and non-inferiority."""
    from pyterrier_noise.stats import kendall_tau
    from pyterrier_noise.stats import all_pairs, degradation_test, pvalue_quadrants
    rows = {}
    for name in measures():
        o, b = orig[name], banded[name]
        po, pb = all_pairs(o, test="t"), all_pairs(b, test="t")
        do = o[po.i].mean(axis=1) - o[po.j].mean(axis=1)
        db = b[pb.i].mean(axis=1) - b[pb.j].mean(axis=1)
        quad = pvalue_quadrants(po.pvalue, pb.pvalue, alpha=ALPHA, diff_orig=do, diff_new=db)["fraction"]
        spread = banded[f"{name}:optimistic"] - banded[f"{name}:pessimistic"]
        hi, lo = banded[f"{name}:optimistic"].mean(axis=1), banded[f"{name}:pessimistic"].mean(axis=1)
        # system pairs whose [pessimistic, optimistic] ranges of mean scores overlap: the order of the
        # two systems could be reversed by how the bands are ordered
        i, j = po.i, po.j
        overlap = (lo[i] <= hi[j]) & (lo[j] <= hi[i])
        rows[name] = {
            "mean_orig": float(o.mean()), "mean_banded": float(b.mean()),
            "unchanged": float(quad["both"] + quad["neither"]), "both": float(quad["both"]),
            "neither": float(quad["neither"]), "lost": float(quad["lost"]), "gained": float(quad["gained"]),
            "reversed": float(quad["reversed"]),
            "significant_orig": float((po.pvalue < ALPHA).mean()),
            "significant_banded": float((pb.pvalue < ALPHA).mean()),
            "kendall_tau": float(kendall_tau(o.mean(axis=1), b.mean(axis=1))),
            "spread_mean": float(spread.mean()), "spread_max_system": float((hi - lo).max()),
            "pairs_ranges_overlap": float(overlap.mean()),
            "noninferior_1pct": int((degradation_test(o, b, delta=0.01) <= ALPHA).sum()),
            "noninferior_3pct": int((degradation_test(o, b, delta=0.03) <= ALPHA).sum()),
        }
    return rows


# ------------------------------------------------------------------------------------------------
# TREC-COVID round 1: 143 submitted runs

def covid() -> dict:
    from pyterrier_noise import read_qrels, read_runs
    from pyterrier_noise.ties import TieBanding, TieBreaker
    t0 = time.perf_counter()
    qrels = read_qrels(COVID / "qrels-rnd1.txt")
    runs = read_runs(COVID / "runs")
    names = list(runs)
    orig = evaluate(runs, qrels, "trec_eval")
    t_orig = time.perf_counter() - t0
    # the ties already in the submitted runs (thesis Sec. 3.2.2, Fig. 3.4): expected value and the
    # optimistic - pessimistic range of every system's mean score
    native = evaluate(runs, qrels, "expected")
    submitted = {"comparison": compare(orig, native), "widest_range": {}}
    for m in measures():
        rng = native[f"{m}:optimistic"].mean(axis=1) - native[f"{m}:pessimistic"].mean(axis=1)
        top = int(np.argmax(rng))
        submitted["widest_range"][m] = {"run": names[top], "range": float(rng[top]),
                                        "systems_range_above_0.001": int((rng > 1e-3).sum()),
                                        "systems_range_above_0": int((rng > 1e-12).sum())}
    # one frame for all runs; the ranking key is an integer code of (run, qid), so the transformers
    # treat every run-topic ranking separately; trec_eval's order (float32 scores, docno descending)
    # decides the bands, so rho = 1 gives back exactly what trec_eval evaluates
    lengths = np.array([len(runs[n]) for n in names])
    run_of_row = np.repeat(np.arange(len(names)), lengths)
    qids = np.concatenate([runs[n]["qid"].to_numpy(dtype=object) for n in names])
    qcode, quniq = pd.factorize(qids)
    stacked = pd.DataFrame({"qid": run_of_row * len(quniq) + qcode,
                            "docno": np.concatenate([runs[n]["docno"].to_numpy(dtype=object) for n in names]),
                            "score": np.concatenate([runs[n]["score"].to_numpy() for n in names]),
                            "rank": np.concatenate([runs[n]["rank"].to_numpy() for n in names])})
    ordered = TieBreaker("trec_eval", precision="float32")(stacked)
    del stacked, runs
    key = ordered["qid"].to_numpy()
    run_idx, q_idx = np.divmod(key, len(quniq))
    bounds = np.searchsorted(run_idx, np.arange(len(names) + 1))   # rows are grouped by run, in run order
    assert (np.diff(run_idx) >= 0).all()
    qid_text = np.asarray(quniq, dtype=object)[q_idx]
    results = {}
    timings = {"original (trec_eval)": t_orig}
    for rho in RHOS:
        t1 = time.perf_counter()
        banded = TieBanding(rho, by="rank")(ordered)
        score, rank = banded["score"].to_numpy(), banded["rank"].to_numpy()
        docno = banded["docno"].to_numpy(dtype=object)
        per_run = {}
        for r, name in enumerate(names):       # slices of one array per run (no per-row work)
            a, b = bounds[r], bounds[r + 1]
            f = pd.DataFrame({"qid": qid_text[a:b], "docno": docno[a:b], "score": score[a:b], "rank": rank[a:b]})
            f.attrs["source"] = f"{name} banded with rho={rho}"
            per_run[name] = f
        res = evaluate(per_run, qrels, "expected")
        if rho == "1":
            for m in measures():
                assert np.allclose(res[m], orig[m], atol=1e-12, rtol=0), f"rho = 1 must reproduce trec_eval ({m})"
        results[rho] = compare(orig, res)
        timings[f"rho={rho}: band + align + evaluate"] = time.perf_counter() - t1
        print(f"  TREC-COVID rho={rho:>3}: " + ", ".join(f"{m} {v['unchanged']:.3f}" for m, v in results[rho].items()),
              flush=True)
    return {"systems": len(names), "topics": int(orig["AP"].shape[1]), "pairs": len(names) * (len(names) - 1) // 2,
            "submitted_runs": submitted, "results": results, "seconds": timings}


# ------------------------------------------------------------------------------------------------
# Vaswani: live PISA pipelines retriever >> TieBanding(rho)

def vaswani() -> dict:
    import pyterrier_pisa
    from pyterrier_noise import read_qrels
    from pyterrier_noise.ties import TieBanding
    t0 = time.perf_counter()
    text = gzip.open(VASWANI / "corpus.trec.gz", "rt").read()
    docs = re.findall(r"<DOCNO>\s*(\S+)\s*</DOCNO>(.*?)</DOC>", text, flags=re.S)
    topics_text = (VASWANI / "topics.trec").read_text()
    topics = pd.DataFrame(re.findall(r"<num>\s*(\S+)\s*</num>\s*<title>(.*?)</title>", topics_text, flags=re.S),
                          columns=["qid", "query"])
    topics["query"] = topics["query"].str.strip().str.replace(r"[^\w ]", " ", regex=True)
    qrels = read_qrels(VASWANI / "qrels")
    tmp = Path(tempfile.mkdtemp(prefix="banding-pisa-"))
    try:
        index = pyterrier_pisa.PisaIndex(str(tmp / "vaswani.pisa"), text_field="text", threads=1)
        with quiet_native_output():
            index.index({"docno": d, "text": t.strip()} for d, t in docs)
        t_index = time.perf_counter() - t0
        k = 1000
        with quiet_native_output():   # building the compressed index of each scorer prints too
            retrievers = {f"BM25(k1={k1},b={b})": index.bm25(k1=k1, b=b, num_results=k)
                          for k1 in (0.9, 1.2, 2.0) for b in (0.4, 0.75)}
            retrievers.update({f"QLD(mu={mu})": index.qld(mu=mu, num_results=k) for mu in (100, 500, 1000, 2500)})
            retrievers.update({f"PL2(c={c})": index.pl2(c=c, num_results=k) for c in (0.5, 1.0, 5.0)})
            retrievers["DPH"] = index.dph(num_results=k)
        cols = ["qid", "docno", "score", "rank"]
        t1 = time.perf_counter()
        with quiet_native_output():
            orig_runs = {n: r(topics)[cols] for n, r in retrievers.items()}
        orig = evaluate(orig_runs, qrels, "trec_eval")
        timings = {"index": t_index, "original (trec_eval)": time.perf_counter() - t1}
        results = {}
        for rho in RHOS:
            t1 = time.perf_counter()
            pipelines = {n: r >> TieBanding(rho, by="score") for n, r in retrievers.items()}
            with quiet_native_output():
                banded = {n: p(topics)[cols] for n, p in pipelines.items()}
            res = evaluate(banded, qrels, "expected")
            if rho == "1":
                for m in measures():
                    assert np.allclose(res[m], orig[m], atol=1e-12, rtol=0), f"rho = 1 must reproduce trec_eval ({m})"
            results[rho] = compare(orig, res)
            timings[f"rho={rho}: retrieve + band + evaluate"] = time.perf_counter() - t1
            print(f"  Vaswani    rho={rho:>3}: "
                  + ", ".join(f"{m} {v['unchanged']:.3f}" for m, v in results[rho].items()), flush=True)
    finally:
        shutil.rmtree(tmp, ignore_errors=True)
    n = len(retrievers)
    return {"systems": n, "topics": len(topics), "pairs": n * (n - 1) // 2, "retrievers": list(retrievers),
            "results": results, "seconds": timings}


# ------------------------------------------------------------------------------------------------
# report

def plot(report: dict) -> None:
    import matplotlib
    matplotlib.use("Agg")
    import matplotlib.pyplot as plt
    rhos = [r for r in RHOS if r != "1"]
    x = [float(r) for r in rhos]
    fig, axes = plt.subplots(2, 2, figsize=(11, 8))
    for ax, key, title in ((axes[0, 0], "covid", "TREC-COVID round 1"), (axes[0, 1], "vaswani", "Vaswani, PISA")):
        part = report[key]
        ax.axhline(4.0, color="black", lw=0.8, ls="--", label="thesis, TREC-7: < 4 % up to rho = 2")
        for m in measures():
            ax.plot(x, [100 * (1 - part["results"][r][m]["unchanged"]) for r in rhos], marker="o", ms=3, label=m)
        ax.set_title(f"{title}: {part['systems']} systems, {part['pairs']} pairs")
        ax.set_xlabel("rho")
        ax.set_ylabel("pairs whose conclusion changed (%)")
        ax.axvline(2.0, color="grey", lw=0.5, ls=":")
        ax.grid(alpha=0.3)
    axes[0, 0].legend(fontsize=8)
    ax = axes[1, 0]
    for key, ls in (("covid", "-"), ("vaswani", "--")):
        for i, m in enumerate(measures()):
            ax.plot(x, [report[key]["results"][r][m]["kendall_tau"] for r in rhos], ls=ls, color=f"C{i}",
                    label=m if key == "covid" else None)
    ax.set_title("Kendall's tau, original vs banded ranking (solid: TREC-COVID, dashed: Vaswani)", fontsize=9)
    ax.set_xlabel("rho")
    ax.set_ylabel("tau")
    ax.grid(alpha=0.3)
    ax = axes[1, 1]
    for key, ls in (("covid", "-"), ("vaswani", "--")):
        for i, m in enumerate(measures()):
            ax.plot(x, [report[key]["results"][r][m]["spread_mean"] for r in rhos], ls=ls, color=f"C{i}")
    ax.set_title("mean optimistic - pessimistic score per run-topic", fontsize=9)
    ax.set_xlabel("rho")
    ax.set_ylabel("spread")
    ax.grid(alpha=0.3)
    fig.suptitle("Banding (Yang 2019, Sec. 3.3): banded runs scored with ties='expected', originals in trec_eval order")
    fig.tight_layout()
    FIGURE.parent.mkdir(parents=True, exist_ok=True)
    fig.savefig(FIGURE, dpi=110)


def main() -> int:
    missing = [p for p in (COVID, VASWANI) if not p.exists()]
    if missing:
        print(f"banding_experiment: data not available: {', '.join(map(str, missing))} "
              f"(../shared/data must sit beside the repository)", file=sys.stderr)
        return 1
    t0 = time.perf_counter()
    print("TREC-COVID round 1 (share of system pairs whose conclusion is unchanged):", flush=True)
    report = {"covid": covid()}
    print("Vaswani with PISA pipelines:", flush=True)
    report["vaswani"] = vaswani()
    report["seconds"] = time.perf_counter() - t0
    report["peak_mib"] = peak_mib()
    report["alpha"] = ALPHA
    RESULTS.parent.mkdir(parents=True, exist_ok=True)
    RESULTS.write_text(json.dumps(report, indent=1))
    plot(report)

    print()
    for key, title in (("covid", "TREC-COVID round 1"), ("vaswani", "Vaswani (PISA)")):
        part = report[key]
        print(f"{title}: {part['systems']} systems x {part['topics']} topics, {part['pairs']} pairs")
        print(f"  {'rho':>4} {'measure':>9} {'unchanged':>9} {'both':>6} {'neither':>7} {'lost':>6} {'gained':>6} "
              f"{'reversed':>8} {'tau':>6} {'spread':>7} {'overlap':>7} {'NI1%':>5} {'NI3%':>5}")
        for rho in ("1.1", "1.5", "2", "3", "4"):
            for m, v in part["results"][rho].items():
                print(f"  {rho:>4} {m:>9} {v['unchanged']:9.3f} {v['both']:6.3f} {v['neither']:7.3f} {v['lost']:6.3f} "
                      f"{v['gained']:6.3f} {v['reversed']:8.3f} {v['kendall_tau']:6.3f} {v['spread_mean']:7.4f} "
                      f"{v['pairs_ranges_overlap']:7.3f} {v['noninferior_1pct']:5d} {v['noninferior_3pct']:5d}")
    print()
    sub = report["covid"]["submitted_runs"]
    print("TREC-COVID submitted runs (their own ties), expected vs trec_eval order:")
    for m, v in sub["comparison"].items():
        w = sub["widest_range"][m]
        print(f"  {m:>9}: unchanged pairs {v['unchanged']:.4f}, tau {v['kendall_tau']:.4f}, systems with a "
              f"pessimistic-optimistic range of the mean > 0.001: {w['systems_range_above_0.001']}, widest "
              f"{w['range']:.4f} ({w['run']})")
    print()
    print(f"{'workload':52s} {'seconds':>8s}")
    for key in ("covid", "vaswani"):
        for what, s in report[key]["seconds"].items():
            if what.startswith("rho=") and what.split(":")[0] not in ("rho=1", "rho=2"):
                continue
            print(f"{key + ': ' + what:52s} {s:8.1f}")
    print(f"{'total':52s} {report['seconds']:8.1f}")
    print(f"peak memory {report['peak_mib']:.0f} MiB; results in {RESULTS.relative_to(ROOT)}, "
          f"figure in {FIGURE.relative_to(ROOT)}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
