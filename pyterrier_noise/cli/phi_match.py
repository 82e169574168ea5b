"""``pyterrier-noise phi-match``: the RBP persistence that best matches a recall metric
(:func:`pyterrier_noise.experiments.match_phi_many`)."""
from __future__ import annotations

import argparse
import math
import sys
from typing import Any

from .._vocab import CORRELATIONS, TIE_POLICIES
from . import options


# command line

PHI_MATCH_EXAMPLES = """examples:
  pyterrier-noise phi-match qrels.txt run1.gz run2.gz run3.gz -m AP
  pyterrier-noise phi-match ../shared/data/trec-covid-round1/qrels-rnd1.txt ../shared/data/trec-covid-round1/runs \\
      -m AP -m nDCG --plot phi.png
  pyterrier-noise phi-match qrels.txt runs/ -m AP --per-topic --grid fine --format tsv
  pyterrier-noise phi-match qrels.txt runs/ -m nDCG --correlation rbo --grid 0.9,0.95,0.98,0.99

For each measure M, the persistence phi whose RBP(phi) orders the systems (by mean score over the
topics) most like M does, by Kendall's tau_b (or RBO), with the whole curve and the mean RBP residual
at each phi: the residual at the matched phi is a proxy for M's measurement uncertainty (Yang 2019,
thesis Sec. 4.4). --per-topic also matches each topic separately and relates phi to the topic's number
of relevant documents R (Sec. 4.5). Ties among equal maxima go to the smallest phi.

--grid: default (0.50, 0.51, ..., 0.99, 0.995, 0.999), fine (0.500 ... 0.999 by 0.001, the thesis's
per-topic search), depths (expected depths 2, 5, 10, 20, 50, 100, 200), a comma list, or START:STOP:STEP.
--format tsv prints the curve (one row per measure and phi, 'matched' = 1 at the match) or, with
--per-topic, one row per measure and topic.
"""


#: the most persistences a --grid may list (each is two RBP evaluations of every run and topic)
MAX_GRID_POINTS = 100_000


def _parse_grid(text: str) -> Any:
    import numpy as np

    from .._validation import InputError
    from ..experiments import DEFAULT_GRID, DEPTH_GRID, FINE_GRID
    named = {"default": DEFAULT_GRID, "fine": FINE_GRID, "depths": DEPTH_GRID}
    if text in named:
        return np.asarray(named[text])
    try:
        if ":" in text:
            a, b, c = (float(x) for x in text.split(":"))
            if c <= 0:
                raise InputError(f"--grid {text}: the step must be positive")
            n = int(math.floor((b - a) / c + 1e-9)) + 1 if math.isfinite((b - a) / c) else -1
            if n < 1:
                raise InputError(f"--grid {text}: STOP must not be below START")
            if n > MAX_GRID_POINTS:
                raise InputError(f"--grid {text}: {n:,} points; at most {MAX_GRID_POINTS:,} (each point is two "
                                 f"RBP evaluations of every run and topic; the fine grid has {len(FINE_GRID)})")
            decimals = max(len(x.split(".")[1]) if "." in x else 0 for x in text.split(":"))
            return np.round(a + c * np.arange(n), decimals + 2)
        return np.asarray([float(x) for x in text.split(",") if x.strip()])
    except InputError:
        raise
    except ValueError:
        raise InputError(f"--grid {text!r}: expected default, fine, depths, a comma list of numbers or "
                         "START:STOP:STEP") from None


def _phi_grid(grid: Any) -> Any:
    """The validated grid (``experiments.phi_grid``)."""
    from ..experiments import phi_grid
    return phi_grid(grid)


def _cmd_phi_match(args: argparse.Namespace) -> int:
    from .._output import atomic_file, check_output_file
    from .._progress import progress_bar
    from ..engine import AlignedRuns
    from ..experiments import match_phi_many, plot_phi_match
    from ..io import read_qrels, read_run_arguments
    if args.plot:
        check_output_file(args.plot, "--plot")
    grid = _phi_grid(_parse_grid(args.grid))
    qrels = read_qrels(args.qrels)
    runs = read_run_arguments(args.runs)
    bar = progress_bar(total=2, desc="phi-match", unit="step", enabled=args.progress)
    aligned = AlignedRuns.build(runs, qrels, ties=args.ties)
    from .._validation import check_memory
    cells = aligned.n_runs * aligned.n_topics
    check_memory(f"--grid of {len(grid):,} points", 4 * 8 * len(grid) * cells,
                 f"RBP base and residual at each point for {aligned.n_runs} runs x {aligned.n_topics} topics, "
                 "8 bytes each, made and stacked")
    bar.update(1)
    matches = match_phi_many(aligned, None, args.measures, grid, per_topic=args.per_topic,
                             correlation=args.correlation, rbo_p=args.rbo_p, rel=args.rel, max_rel=args.max_rel)
    bar.update(1)
    bar.close()
    out = sys.stdout
    if args.format == "tsv":
        if args.per_topic:
            out.write("measure\tqid\tR\tphi\tcorr\tmean_residual\n")
            for m in matches.values():
                for r in m.per_topic.itertuples(index=False):
                    out.write(f"{m.measure}\t{r.qid}\t{r.R}\t{_num(r.phi)}\t{_num(r.corr)}\t{_num(r.mean_residual)}\n")
        else:
            extra = ["rbo"] if args.correlation == "rbo" else []
            out.write("\t".join(["measure", "phi", "depth", "tau", *extra, "mean_rbp", "mean_residual", "matched"])
                      + "\n")
            for m in matches.values():
                for r in m.curve.itertuples(index=False):
                    d = r._asdict()
                    vals = [m.measure, _num(d["phi"]), _num(d["depth"]), _num(d["tau"]),
                            *[_num(d[c]) for c in extra], _num(d["mean_rbp"]), _num(d["mean_residual"]),
                            "1" if d["phi"] == m.phi else "0"]
                    out.write("\t".join(vals) + "\n")
    else:
        for i, m in enumerate(matches.values()):
            if i:
                out.write("\n")
            out.write(m.to_text() + "\n")
            if args.per_topic:
                out.write(f"  {'qid':>8}  {'R':>6}  {'phi':>6}  {'corr':>7}  {'residual':>8}\n")
                for r in m.per_topic.itertuples(index=False):
                    out.write(f"  {r.qid:>8}  {r.R:>6}  {r.phi:>6.3f}  {r.corr:>7.4f}  {r.mean_residual:>8.4f}\n")
    if args.plot:
        with atomic_file(args.plot, "--plot") as tmp:
            plot_phi_match(list(matches.values()), tmp)
    return 0


def _num(x: float) -> str:
    return "" if x is None or (isinstance(x, float) and math.isnan(x)) else repr(float(x))


def register_cli(subparsers: Any) -> None:
    """Add the ``phi-match`` subcommand to the ``pyterrier-noise`` command line."""
    p = subparsers.add_parser(
        "phi-match", help="the RBP persistence phi that best matches AP / nDCG (uncertainty of recall metrics)",
        description="Find the RBP persistence phi whose system ordering agrees best with a recall-based metric's "
                    "(Yang 2019, thesis Sec. 4.4-4.5); print the matched phi and the tau-against-phi curve.",
        epilog=PHI_MATCH_EXAMPLES, formatter_class=argparse.RawDescriptionHelpFormatter,
        parents=[options.qrels_runs(),
                 options.measures(help="reference metric in ir_measures syntax: AP, nDCG, nDCG@10, P@10, RR ... "
                                       "(repeatable)"),
                 options.ties(TIE_POLICIES[:3], default="trec_eval",
                              help="tie policy (default trec_eval: score, then docno descending)"),
                 options.output_format(), options.progress()])
    p.add_argument("--per-topic", action="store_true", help="also match every topic separately (phi against R)")
    p.add_argument("--grid", default="default", help="phi values to try (see below; default: 0.50..0.99, 0.995, 0.999)")
    p.add_argument("--correlation", choices=list(CORRELATIONS), default="kendall",
                   help="agreement of orderings to maximise: Kendall's tau_b (default) or RBO")
    p.add_argument("--rbo-p", type=float, default=0.98, help="RBO persistence (default 0.98)")
    p.add_argument("--rel", type=float, default=1.0, help="RBP counts label >= REL as relevant (default 1)")
    p.add_argument("--max-rel", type=float, default=None,
                   help="graded RBP gains min(label, MAX_REL) / MAX_REL instead of binary")
    p.add_argument("--plot", metavar="FILE.png", default=None, help="write the tau-against-phi plot as a PNG")
    p.set_defaults(handler=_cmd_phi_match)
