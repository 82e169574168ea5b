"""``pyterrier-noise pairwise simulate | aggregate``: pairwise crowd judgments (:mod:`pyterrier_noise.crowd`)."""
from __future__ import annotations

import argparse
from typing import Any

from .._vocab import BIAS_WEIGHTINGS, CROWD_METHODS, RATIO_METHODS
from . import options


# command line

PAIRWISE_EXAMPLES = """examples:
  pyterrier-noise pairwise simulate --out crowd.csv
  pyterrier-noise pairwise aggregate crowd.csv --method ratio --out crowd.qrels
  pyterrier-noise pairwise aggregate crowd.csv --method combined --reference qrels.txt --out graded.qrels

'simulate' writes a seeded crowd in the thesis's design (Yang 2019, ch. 5); 'aggregate' turns
judgments into qrels and writes a worker-quality table beside them (QRELS.workers.tsv).
"""

AGGREGATE_EXAMPLES = """examples:
  pyterrier-noise pairwise aggregate crowd.csv --method ratio --out crowd.qrels
  pyterrier-noise pairwise aggregate crowd.csv --method preference --left-bias auto --out pref.qrels
  pyterrier-noise pairwise aggregate crowd.csv --method combined --reference qrels.txt --out graded.qrels
  pyterrier-noise pairwise aggregate crowd.csv --method absolute --proportions 0.8,0.15,0.05 --out abs.qrels
  pyterrier-noise eval crowd.qrels runs/ -m 'RBP(p=0.9,max_rel=1)' --fractional keep

JUDGMENTS is a CSV (TSV if it ends in .tsv) with columns qid, worker, left, right and answers
preferred (left/right), absolute (both/selected/none), ratio_left and ratio_right (numbers >= 0);
optional group, pair and gold (the side that should win a gold pair).  Empty cells are missing
answers.  Without --reference or --proportions the labels are the method's scores in [0, 1]
(evaluate them with a graded gain, e.g. RBP(p=0.9,max_rel=1)); with them, graded categories
matched to the proportions of each topic.  The worker table QRELS.workers.tsv has one row per
(qid, worker): groups, pairs, docs, transitivity_inconsistency, absolute_inconsistency,
gold_pairs, gold_accuracy, left_rate.
"""

SIMULATE_EXAMPLES = """examples:
  pyterrier-noise pairwise simulate --out crowd.csv                       # built-in synthetic collection
  pyterrier-noise pairwise simulate qrels.txt --workers-per-group 5 --accuracy 0.6,0.95 \\
      --left-bias 0.04 --missing 0.05 --seed 7 --out crowd.csv

QRELS gives the documents of each topic and their true labels (default: the pooled qrels of the
built-in synthetic collection, pyterrier_noise.synthetic.default_collection()).
"""


def _float_list(text: str, what: str) -> list[float]:
    from .._validation import InputError
    try:
        vals = [float(v) for v in str(text).split(",")]
    except ValueError:
        raise InputError(f"{what}: expected comma-separated numbers, got {text!r}") from None
    return vals


def _cmd_aggregate(args: argparse.Namespace) -> int:
    import numpy as np

    from .._validation import InputError
    from ..crowd import aggregate, position_bias, read_pairwise, to_categories, worker_quality, workers_path
    from .._output import atomic_file, check_output_file
    from ..io import write_trec_qrels
    check_output_file(args.out)
    j = read_pairwise(args.judgments)
    if args.reference and args.proportions:
        raise InputError("give --reference or --proportions, not both")
    if args.left_bias == "auto":
        pb = position_bias(j, args.reference)
        bias = 0.0 if not np.isfinite(pb.bias) else pb.bias
        print(f"left bias: {bias:+.4f} (left rate {pb.left_rate:.4f} over {pb.pairs} answers, "
              f"binomial p = {pb.p_value:.3g})")
    else:
        bias = _float_list(args.left_bias, "--left-bias")[0]
    norm: Any = args.normalizer if args.normalizer == "observed" else _float_list(args.normalizer, "--normalizer")[0]
    qrels = aggregate(j, args.method, eps=args.eps, left_bias=bias, bias_weighting=args.bias_weighting,
                      normalizer=norm, ratio_method=args.ratio_method, iterations=args.iterations)
    if args.reference:
        qrels = to_categories(qrels, reference=args.reference)
    elif args.proportions:
        qrels = to_categories(qrels, proportions=_float_list(args.proportions, "--proportions"))
    wq = worker_quality(j, gold_qrels=args.gold_qrels)
    wpath = workers_path(args.out)
    with atomic_file(args.out) as tmp:
        write_trec_qrels(qrels, tmp)
    with atomic_file(wpath) as tmp:
        wq.to_csv(tmp, sep="\t", index=False, na_rep="", lineterminator="\n")
    print(f"{args.out}: {len(qrels)} judgments, {qrels['qid'].nunique()} topics ({args.method})")
    print(f"{wpath}: {len(wq)} worker-topics, mean transitivity inconsistency "
          f"{wq['transitivity_inconsistency'].mean():.3f}, absolute inconsistency "
          f"{wq['absolute_inconsistency'].mean():.3f}, gold accuracy {wq['gold_accuracy'].mean():.3f}")
    return 0


def _cmd_simulate(args: argparse.Namespace) -> int:
    from pathlib import Path

    from .._output import atomic_file, check_output_file
    from .._validation import InputError
    from ..crowd import simulate_crowd
    check_output_file(args.out)
    if args.qrels is None:
        from ..synthetic import default_collection
        qrels = default_collection().qrels
    else:
        qrels = args.qrels
    acc = _float_list(args.accuracy, "--accuracy")
    if len(acc) not in (1, 2):
        raise InputError(f"--accuracy: expected one number or a range LOW,HIGH, got {args.accuracy!r}")
    missing = _float_list(args.missing, "--missing")
    if len(missing) not in (1, 3):
        raise InputError(f"--missing: expected one probability or three (per question), got {args.missing!r}")
    j = simulate_crowd(qrels, workers_per_group=args.workers_per_group, n_workers=args.n_workers,
                       partitions=args.partitions, docs_per_group=args.docs_per_group, partners=args.partners,
                       accuracy=acc[0] if len(acc) == 1 else tuple(acc), left_bias=args.left_bias,
                       missing=missing[0] if len(missing) == 1 else tuple(missing),
                       relevant_from=args.rel, gold=not args.no_gold, seed=args.seed)
    out = Path(args.out)
    with atomic_file(out) as tmp:
        j.to_csv(tmp, index=False, lineterminator="\n",
                 sep="\t" if out.name.lower().endswith((".tsv", ".tsv.gz")) else ",")
    print(f"{out}: {len(j)} answer sheets, {j['qid'].nunique()} topics, {j['group'].nunique()} groups, "
          f"{j['worker'].nunique()} workers")
    return 0


def register_cli(subparsers: Any) -> None:
    """Add ``pyterrier-noise pairwise aggregate|simulate`` (Yang 2019 ch. 5)."""
    p = subparsers.add_parser(
        "pairwise", help="pairwise crowd judgments: simulate a crowd, aggregate judgments into qrels",
        description="Pairwise crowd judgments (preference, absolute, ratio; Yang 2019 ch. 5).",
        epilog=PAIRWISE_EXAMPLES, formatter_class=argparse.RawDescriptionHelpFormatter)
    sub = p.add_subparsers(dest="pairwise_command", metavar="ACTION")
    sub.required = True

    a = sub.add_parser(
        "aggregate", help="aggregate pairwise judgments into qrels and a worker-quality table",
        description="Aggregate pairwise crowd judgments into TREC qrels (scores in [0, 1], or graded categories) "
                    "and write a worker-quality table QRELS.workers.tsv beside them.",
        epilog=AGGREGATE_EXAMPLES, formatter_class=argparse.RawDescriptionHelpFormatter, parents=[options.progress()])
    a.add_argument("judgments", metavar="JUDGMENTS.csv", help="pairwise judgments (CSV, or TSV if .tsv)")
    a.add_argument("--method", choices=list(CROWD_METHODS), default="ratio",
                   help="which answers make the scores (default: ratio)")
    a.add_argument("--out", required=True, metavar="QRELS", help="TREC qrels file to write")
    a.add_argument("--reference", metavar="QRELS", default=None,
                   help="map scores to the categories of these qrels, matching each topic's proportions")
    a.add_argument("--proportions", metavar="P0,P1,...", default=None,
                   help="map scores to grades 0,1,... with these proportions (lowest grade first)")
    a.add_argument("--left-bias", default="0", metavar="B|auto",
                   help="left-choice rate minus right-choice rate to weight out of preference answers; "
                        "'auto' estimates it (on --reference's equally relevant pairs if given) (default: 0)")
    a.add_argument("--bias-weighting", choices=list(BIAS_WEIGHTINGS), default="position",
                   help="position: discount left choices by B/(1+B); symmetric: every choice 1-B / B, as the "
                        "thesis proposes (default: position)")
    a.add_argument("--eps", type=float, default=1.0, help="epsilon of ratios and combination (default: 1)")
    a.add_argument("--normalizer", default="observed", metavar="observed|N",
                   help="divide frequencies by each document's presentations or by N = K*X*Y (default: observed)")
    a.add_argument("--ratio-method", choices=list(RATIO_METHODS), default="llsm",
                   help="least-squares completion or the thesis's iteration (default: llsm)")
    a.add_argument("--iterations", type=int, default=100, help="iterations of --ratio-method iterative (default: 100)")
    a.add_argument("--gold-qrels", metavar="QRELS", default=None,
                   help="known labels defining gold pairs for the accuracy column (default: the 'gold' column)")
    a.set_defaults(handler=_cmd_aggregate)

    s = sub.add_parser(
        "simulate", help="write a simulated crowd's pairwise judgments (seeded)",
        description="Simulate crowd workers answering preference, absolute and ratio questions about pairs of "
                    "documents in the thesis's design, with known true labels; writes a judgments CSV.",
        epilog=SIMULATE_EXAMPLES, formatter_class=argparse.RawDescriptionHelpFormatter,
        parents=[options.seed(), options.progress()])
    s.add_argument("qrels", nargs="?", default=None, metavar="QRELS",
                   help="true labels of the documents to judge (default: the synthetic collection's pooled qrels)")
    s.add_argument("--out", required=True, metavar="CSV", help="judgments file to write")
    s.add_argument("--workers-per-group", type=int, default=3, help="workers judging each group, Y (default: 3)")
    s.add_argument("--n-workers", type=int, default=60, help="size of the crowd (default: 60)")
    s.add_argument("--partitions", type=int, default=None,
                   help="partitionings X per topic (default: about 15%% of the other documents as partners)")
    s.add_argument("--docs-per-group", type=int, default=8, help="documents per group (default: 8)")
    s.add_argument("--partners", type=int, default=3, help="pairs per document per group, K (default: 3)")
    s.add_argument("--accuracy", default="0.75,0.95", metavar="A|LOW,HIGH",
                   help="chance of preferring the better of two documents one grade apart; a range draws one "
                        "per worker (default: 0.75,0.95)")
    s.add_argument("--left-bias", type=float, default=0.04, help="left-choice excess on equal pairs (default: 0.04)")
    s.add_argument("--missing", default="0", metavar="P|P1,P2,P3",
                   help="probability that an answer is missing, overall or per question (default: 0)")
    s.add_argument("--rel", type=float, default=1.0, help="lowest relevant label: label >= REL (default: 1)")
    s.add_argument("--no-gold", action="store_true", help="mark no gold pairs")
    s.set_defaults(handler=_cmd_simulate, option_names={"relevant_from": "--rel"})
