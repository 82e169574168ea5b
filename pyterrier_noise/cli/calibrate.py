"""``pyterrier-noise calibrate``: bias-corrected scores with intervals from cheap (LLM or crowd) labels
plus a small gold sample (:func:`pyterrier_noise.correction.cheap_experiment`)."""
from __future__ import annotations

import argparse
from typing import Any

from . import options

METHODS = ("naive", "goldberg", "gold", "ppi", "ppi++")   # correction.METHODS (a test checks they agree)

CALIBRATE_EXAMPLES = """examples:
  pyterrier-noise calibrate --cheap umbrela.jsonl --gold human-qrels.txt runs/ \\
      -m 'P@10' -m 'RBP(p=0.8)' --method naive,goldberg,ppi++,gold --out calibrated
  pyterrier-noise calibrate --cheap llm-qrels.txt --gold judged-topics.txt run1.gz run2.gz \\
      -m nDCG@10 -m AP --scope topics --out calibrated-topics

--cheap: the cheap judge's labels (TREC qrels, or JSON lines / CSV / TSV with query id, doc id, a
0-3 grade and optionally its probability).  --gold: human labels (TREC qrels) of some of the same
pairs.  If the gold qrels judge every cheap-judged pair of at least two topics, the topics are the
sample (topic design: every measure, PPI over topics); otherwise the gold pairs are taken as a
simple random sample of the cheap-judged pairs (pair design: P@k, DCG@k and RBP).

Writes to DIR: systems.tsv (name, method, and per measure M: M, M se, M lo, M hi), pairs.tsv
(name, baseline, method, and per measure the difference, se, lo, hi, p-value), one
intervals-<measure>.png per measure, experiment.json and manifest.json.
"""


def register_cli(subparsers: Any) -> None:
    """Add the ``calibrate`` subcommand."""
    p = subparsers.add_parser(
        "calibrate", help="scores with honest intervals from cheap (LLM / crowd) labels plus a gold sample",
        description="Estimate each run's score, and each pair's difference, as the gold (human) judge would "
                    "give it, from a cheap judge's labels of every pair and gold labels of a few: the naive "
                    "estimate, Goldberg et al. (2017)'s correction, prediction-powered inference (Angelopoulos "
                    "et al. 2023) and PPI++ (Angelopoulos, Duchi and Zrnic 2023), and the gold sample alone.",
        epilog=CALIBRATE_EXAMPLES, formatter_class=argparse.RawDescriptionHelpFormatter,
        parents=[options.measures(help="measure in ir_measures syntax (repeatable), e.g. P@10, 'RBP(p=0.8)', nDCG@10"),
                 options.out(force=True)])
    p.add_argument("runs", nargs="+", metavar="RUN", help="TREC run file (plain or .gz) or a directory of them")
    p.add_argument("--cheap", required=True, help="the cheap judge's labels (qrels, JSONL, CSV or TSV)")
    p.add_argument("--gold", required=True, help="gold (human) qrels of some of the cheap-judged pairs")
    p.add_argument("--method", default="naive,goldberg,ppi,ppi++,gold",
                   help=f"comma-separated methods among {', '.join(METHODS)} (default all)")
    p.add_argument("--scope", choices=["collection", "topics"], default="collection",
                   help="collection: the mean over these topics as the gold judge would score them (default); "
                        "topics: the population of topics (adds topic sampling)")
    p.add_argument("--alpha", type=float, default=0.05, help="the intervals are 1 - alpha (default 0.05)")
    p.add_argument("--no-plots", action="store_true", help="write the TSV files only")
    p.set_defaults(handler=_cmd_calibrate)


def _cmd_calibrate(args: argparse.Namespace) -> int:
    import json
    from pathlib import Path

    from .._output import OutputDirectory
    from .._validation import InputError
    from ..correction.cheap import cheap_experiment, save_result
    from ..io import read_runs

    methods = [m.strip() for m in args.method.split(",") if m.strip()]
    bad = [m for m in methods if m not in METHODS]
    if bad or not methods:
        raise InputError(f"--method {args.method!r}: unknown method(s) {bad}; choose among {', '.join(METHODS)}")
    directory = OutputDirectory(args.out, "calibrate", force=args.force)
    runs: dict[str, Any] = {}
    for item in args.runs:
        for name, frame in read_runs(item).items():
            if name in runs:
                raise InputError(f"two runs are named {name!r} (a run's name is its file name without .gz)")
            runs[name] = frame
    res = cheap_experiment(runs, args.cheap, args.gold, args.measures, methods=methods, scope=args.scope,
                           alpha=args.alpha)
    if args.no_plots:
        directory.write("systems.tsv", res.systems.to_csv(sep="\t", index=False, float_format="%.6g"))
        directory.write("pairs.tsv", res.pairs.to_csv(sep="\t", index=False, float_format="%.6g"))
    else:
        save_result(res, directory)
    info = {"cheap": str(args.cheap), "gold": str(args.gold), "runs": len(runs), "measures": res.measures,
            "methods": methods, "design": res.design, "scope": res.scope, "gold_pairs": res.n_gold,
            "alpha": args.alpha}
    directory.write("experiment.json", json.dumps(info, indent=1) + "\n")
    directory.finish()
    cols = ["name", "method"] + [c for m in res.measures for c in (m, f"{m} lo", f"{m} hi")]
    print(res.systems[cols].to_string(index=False, float_format=lambda x: f"{x:.4f}"))
    print(f"wrote systems.tsv, pairs.tsv{'' if args.no_plots else ' and plots'} to {Path(args.out)}/: "
          f"{len(runs)} runs, {res.n_gold} gold labels ({res.design} design, {res.scope} scope)")
    return 0
