"""The main demonstration (``pyterrier-noise demo``): what the package does, offline, in under a minute.

On the built-in synthetic collection (or on real data: ``pyterrier-noise demo QRELS RUNS...``) it

1. evaluates every system with RBP base and residual (and AP, nDCG@10), showing how much of each
   score is uncertain because the pool did not judge what the system retrieved;
2. perturbs the judgments and shows which conclusions move;
3. runs an adaptive judging simulation (pooling and Methods A, B, C);
4. bands the scores into ties and shows what the tie orderings can change;
5. writes a report and prints where it is.
"""
from __future__ import annotations

import argparse
import time
from pathlib import Path
from typing import Any

from . import options


def _load(qrels: str | None, runs: "str | list[str] | None", seed: int) -> tuple:
    from .._validation import InputError
    from ..io import read_qrels, read_runs
    if isinstance(runs, str):
        runs = [runs]
    if (qrels is None) != (not runs):
        raise InputError("give QRELS and at least one RUN for real data (pyterrier-noise demo QRELS RUNS...), "
                         "or neither for the synthetic collection")
    if qrels is not None:
        frames: dict = {}
        for item in runs:
            for name, frame in read_runs(item).items():
                if name in frames:
                    raise InputError(f"two runs are named {name!r} (a run's name is its file name without .gz)")
                frames[name] = frame
        return read_qrels(qrels), frames, None, f"qrels {qrels}, runs {' '.join(map(str, runs))}"
    from ..synthetic import make_collection
    c = make_collection(seed=seed)
    return c.qrels, c.runs, c, (f"synthetic collection (seed {seed}): {len(c.runs)} systems, "
                                f"{c.qrels['qid'].nunique()} topics, pool of {len(c.contributing)} systems "
                                f"to depth {c.params.get('pool_depth', '?')}")


def run_demo(out: Path, qrels: str | None = None, runs: "str | list[str] | None" = None, seed: int = 0,
             force: bool = True, command: str | None = None, progress: bool = True) -> int:
    """Run the demonstration; returns the exit status.  ``out`` is an output directory of the
    house (``pyterrier_noise._output``): refused when it holds files the demo did not write; an
    earlier demonstration's output there is replaced (running the README's command again works)."""
    from .._output import MANIFEST, OutputDirectory
    directory = OutputDirectory(out, "demo", force=force)
    t0 = time.perf_counter()
    from .._progress import status
    with status("reading the qrels and runs", progress):
        q, r, collection, what = _load(qrels, runs, seed)
    with directory.staging() as stage:
        _demo(stage, q, r, collection, what, command, progress)
    directory.finish({"data": what})
    written = list(directory.files) + [MANIFEST]
    print(f"Done in {time.perf_counter() - t0:.1f} s. Wrote {len(written)} files to {out}/:")
    for name in written:
        print(f"   {name:16} {_WHAT_FILE.get(name, '')}")
    print(f"Open {Path(out) / 'report.html'} in a browser: hover a run for its numbers, drag to zoom, click a")
    print("table heading to sort.  The docs (docs/report.md, docs/cli.md) explain every part.")
    print("On your own qrels and runs (a run file, or a directory of them):")
    print("   pyterrier-noise report QRELS RUNS --out my-report          # scores with their uncertainty")
    print("   pyterrier-noise demo QRELS RUNS --out my-demo              # all four parts on your data")
    return 0


#: what each file the demonstration writes holds (printed at the end)
_WHAT_FILE = {
    "report.html": "the interactive report (open it in a browser; works offline)",
    "scores.tsv": "part 1: mean RBP(p=0.8) with its residual, AP and nDCG@10 per system",
    "robustness.tsv": "part 2: ranking agreement and significance conclusions under noisy judges",
    "selection.tsv": "part 3: the judging simulation at each checkpoint, per method",
    "ties.tsv": "part 4: each system's scores by tie policy after banding",
    "manifest.json": "the list of files written and the data used",
}


def _demo(out: Path, q: Any, r: dict, collection: Any, what: str, command: str | None = None,
          progress: bool = True) -> None:
    """The demonstration's five parts, writing into ``out``; a status line on stderr for a part that
    takes more than 2 s (unless ``progress`` is off)."""
    from .._progress import status
    from ..measures import evaluate
    from ..report import Report, scores_section
    print(f"pyterrier-noise demo on the {what}")
    print()
    report = Report("pyterrier-noise demonstration", command=command)
    report.text(f"Data: {what}.")

    # 1. scores with honest uncertainty
    with status("part 1: evaluating", progress):
        res = evaluate(r, q, ["RBP(p=0.8)", "AP", "nDCG@10"])  # topic mismatches announced, as by `eval`
    wide = res.pivot(index="name", columns="measure", values="value")
    wide["RBP residual"] = res[res["measure"] == "RBP(p=0.8)"].set_index("name")["residual"]
    wide = wide[["RBP(p=0.8)", "RBP residual", "AP", "nDCG@10"]].sort_values("RBP(p=0.8)", ascending=False)
    wide.columns.name, wide.index.name = None, "system"
    print("1. RBP(p=0.8) with its residual: the score could rise by up to the residual if the unjudged")
    print("   documents a system retrieved turned out relevant.")
    shown = wide.head(12)
    for name, row in shown.iterrows():
        tag = ""
        if collection is not None:
            tag = "   (pooled)" if name in collection.contributing else "   (not pooled)"
        print(f"   {name:24} RBP {row['RBP(p=0.8)']:.4f} +{row['RBP residual']:.4f}   "
              f"AP {row['AP']:.4f}   nDCG@10 {row['nDCG@10']:.4f}{tag}")
    if len(wide) > len(shown):
        print(f"   ... and {len(wide) - len(shown)} more systems (all in the report)")
    ordered = wide.index.tolist()
    overlap = [(a, b) for i, a in enumerate(ordered) for b in ordered[i + 1:]
               if wide.loc[b, "RBP(p=0.8)"] + wide.loc[b, "RBP residual"] >= wide.loc[a, "RBP(p=0.8)"]]
    n_pairs = len(ordered) * (len(ordered) - 1) // 2
    print(f"   {len(overlap)} of {n_pairs} system pairs are not separated: the lower system's upper bound "
          f"reaches the higher one's base.")
    wide.to_csv(out / "scores.tsv", sep="\t")
    pooled_out = [n for n in wide.index if collection is not None and n not in collection.contributing]
    scores_section(report, wide, highlight=pooled_out, heading="1. Scores with their uncertainty")
    print()

    _noisy_judges_section(r, q, out, report, progress)   # a progress bar of its own
    print()
    with status("part 3: judging simulation", progress):
        _selection_section(r, q, out, report)
    print()
    with status("part 4: quantised scores", progress):
        _ties_section(r, q, out, report)
    print()
    report.write(out / "report.html")


def _noisy_judges_section(runs: dict, qrels: Any, out: Path, report: Any, progress: bool = True) -> None:
    """Part 2: judge error (Rashidi, Zobel & Moffat's 2023 TPR 0.93 / FPR 0.07) and which conclusions move."""
    from ..experiments import robustness_experiment
    from ..judges import RandomFlips
    from ..report import robustness_section
    res = robustness_experiment(runs, None, qrels, ["RBP(p=0.8)", "AP", "nDCG@10"],
                                RandomFlips(**options.DEFAULT_JUDGE), n_replicates=100, seed=1,
                                progress=None if progress else False)
    cols = [c for c in ["measure", "kendall_tau", "tau_ap", "rbo", "significant_pairs", "kept_significant", "lost",
                        "reversed", "gained"] if c in res.summary.columns]
    summary = res.summary[cols].set_index("measure")
    agree = summary[["kendall_tau", "tau_ap", "rbo"]]
    fates = summary[["kept_significant", "lost", "reversed", "gained"]]
    print("2. Noisy judges: 100 replicates of the qrels with random judge errors (TPR 0.93, FPR 0.07: the default")
    print("   judge model, the main setting of Rashidi, Zobel & Moffat 2023). Agreement of each replicate's ranking")
    print("   with the unperturbed one (Kendall's tau, tau_AP, rank-biased overlap; 1 = same order):")
    print("   " + agree.round(3).reset_index().to_string(index=False).replace("\n", "\n   "))
    print("   Significant pairs under the unperturbed qrels (paired t-test, alpha 0.05): " + ", ".join(
        f"{m} {int(n)}" for m, n in summary["significant_pairs"].items()) + ".")
    print("   What the replicates do to those conclusions, as shares of (significant pair, replicate); 'gained' is")
    print("   the share of (non-significant pair, replicate) that became significant:")
    print("   " + fates.round(3).reset_index().to_string(index=False).replace("\n", "\n   "))
    summary.to_csv(out / "robustness.tsv", sep="\t")
    robustness_section(report, res, measures=["RBP(p=0.8)", "AP"], heading="2. Noisy judges")


def _selection_section(runs: dict, qrels: Any, out: Path, report: Any) -> None:
    """Part 3: which documents to judge next -- pooling and Methods A, B, C replayed against the
    qrels (Moffat, Webber & Zobel 2007)."""
    from ..report import selection_section
    from ..selection import compare_methods
    # up to every judgment of the qrels: the methods differ in which documents they judge first, and
    # the ranges of the top systems only come apart once most of what matters is judged
    budget = len(qrels)
    checkpoints = sorted({budget // 4, budget // 2, budget})
    summary, results = compare_methods(runs, qrels, methods=("pool", "A", "B", "C"), checkpoints=checkpoints,
                                       p_eval=[0.8])
    keep = [c for c in ("method", "judgments", "relevant", "mean_residual", "top_residual", "separated",
                        "sig_base_upper") if c in summary.columns]
    shown = summary[keep]
    print("3. Which documents to judge next: the qrels re-judged by depth pooling and Methods A, B, C")
    print(f"   (RBP p = 0.8), at {', '.join(map(str, checkpoints))} judgments. 'top_residual' is the mean residual")
    print("   of the best third of the systems; 'separated' the share of their pairs whose ranges no longer overlap;")
    print("   'sig_base_upper' the share where one's base is significantly above the other's upper bound")
    print("   (Wilcoxon, alpha 0.05).")
    print("   " + shown.round(4).to_string(index=False).replace("\n", "\n   "))
    last = shown[shown["judgments"] == shown["judgments"].max()].set_index("method")
    if (shown[[c for c in ("separated", "sig_base_upper") if c in shown]].fillna(0) == 0).all().all():
        print("   No pair of top systems is separated yet: the judgments are too few.")
    elif "separated" in last:
        best = last["separated"].idxmax()
        print(f"   What to see: with the same {int(last['judgments'].max())} judgments, Method {best} separates "
              f"{last.loc[best, 'separated']:.0%} of the top systems' pairs and depth pooling "
              f"{last.loc['pool', 'separated']:.0%},")
        print("   because it judges first the documents whose labels move the top systems' ranges (Moffat, Webber")
        print("   and Zobel 2007).")
    summary.to_csv(out / "selection.tsv", sep="\t", index=False)
    selection_section(report, summary, results["C"].systems, heading="3. Which documents to judge next",
                      systems_method="C")


def _ties_section(runs: dict, qrels: Any, out: Path, report: Any) -> None:
    """Part 4: what quantising scores does (tie-banding at rho = 2, Yang 2019 ch. 3)."""
    import pandas as pd

    from ..engine import AlignedRuns, MeasureSpec
    from ..report import ties_section
    from ..ties import TieBanding
    banded = {n: TieBanding(2)(r) for n, r in runs.items()}
    specs = [MeasureSpec("RBP", p=0.8), MeasureSpec("nDCG", cutoff=10)]
    orig = AlignedRuns.build(runs, qrels, on_topic_mismatch="ignore").evaluate(specs)
    lo = AlignedRuns.build(banded, qrels, ties="pessimistic", on_topic_mismatch="ignore").evaluate(specs)
    ex = AlignedRuns.build(banded, qrels, ties="expected", on_topic_mismatch="ignore").evaluate(specs)
    hi = AlignedRuns.build(banded, qrels, ties="optimistic", on_topic_mismatch="ignore").evaluate(specs)
    names = list(runs)
    frames = []
    for s, label in zip(specs, ("RBP(p=0.8)", "nDCG@10")):
        frames.append(pd.DataFrame({"system": names, "measure": label, "original": orig[s][:, :, 0].mean(axis=1),
                                    "pessimistic": lo[s][:, :, 0].mean(axis=1), "expected": ex[s][:, :, 0].mean(axis=1),
                                    "optimistic": hi[s][:, :, 0].mean(axis=1)}))
    table = pd.concat(frames, ignore_index=True)
    spread = (table["optimistic"] - table["pessimistic"]).groupby(table["measure"]).mean()
    print("4. Quantised scores: every ranking banded with rho = 2 (bands of 1, 2, 4, 8 ... tied documents).")
    for m, v in spread.items():
        print(f"   {m}: mean spread between the best and worst orderings of the ties {v:.4f}")
    table.to_csv(out / "ties.tsv", sep="\t", index=False)
    ties_section(report, table[table["measure"] == "RBP(p=0.8)"], heading="4. Quantised scores")


DEMO_EXAMPLES = """examples:
  pyterrier-noise demo                      # built-in synthetic collection, report in ./noise-demo
  pyterrier-noise demo --out /tmp/demo
  pyterrier-noise demo ../shared/data/trec-covid-round1/qrels-rnd1.txt ../shared/data/trec-covid-round1/runs
"""


def register_cli(sub: Any) -> None:
    """Add the ``demo`` subcommand."""
    d = sub.add_parser("demo", help="run the demonstration and write a report",
                       description="Demonstrate the package offline on a synthetic collection (or on real "
                                   "data: QRELS and RUNs) and write a report.",
                       epilog=DEMO_EXAMPLES, formatter_class=argparse.RawDescriptionHelpFormatter,
                       parents=[options.out(required=False, default="noise-demo",
                                            help="directory for the report (default: ./noise-demo; an earlier "
                                                 "demonstration's output there is replaced)"),
                                options.seed(help="seed of the synthetic collection (default 0)"),
                                options.progress()])
    d.add_argument("qrels", nargs="?", default=None, metavar="QRELS",
                   help="TREC qrels file of a real collection (default: the built-in synthetic collection)")
    d.add_argument("runs", nargs="*", metavar="RUN", help="TREC run file (plain or .gz) or a directory of them")
    d.set_defaults(handler=_cmd_demo)


def _cmd_demo(args: argparse.Namespace) -> int:
    from ..report.words import command_line
    return run_demo(out=Path(args.out), qrels=args.qrels, runs=args.runs, seed=args.seed,
                    command=command_line(getattr(args, "argv", None)), progress=args.progress)

