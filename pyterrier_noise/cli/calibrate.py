"""``pyterrier-noise calibrate``: bias-corrected scores with intervals from cheap (LLM or crowd) labels
plus a small gold sample (:func:`pyterrier_noise.correction.cheap_experiment`)."""
from __future__ import annotations

import argparse
from typing import Any

from .._vocab import CHEAP_METHODS, CORRECTIONS, DESIGNS, SCOPES
from . import options


CALIBRATE_EXAMPLES = """examples:
  # 1. plan: which 300 pairs should people judge? (stratified by cheap label and rank weight)
  pyterrier-noise calibrate --plan 300 --design stratified --cheap umbrela.jsonl runs/ -m 'RBP(p=0.8)' --out plan
  # 2. judge them in a durable, resumable session (plan/plan.run holds exactly the planned pairs)
  pyterrier-noise judge plan/plan.run --session gold.sqlite --method pool --labels 0,1,2,3
  # 3. calibrate with the people's labels, weighted by the plan's inclusion probabilities
  pyterrier-noise calibrate --cheap umbrela.jsonl --gold gold.sqlite --sample plan/design.tsv runs/ \\
      -m 'RBP(p=0.8)' --out calibrated

  pyterrier-noise calibrate --cheap umbrela.jsonl --gold human-qrels.txt runs/ \\
      -m 'P@10' -m 'RBP(p=0.8)' --method naive,goldberg,ppi++,gold --out calibrated
  # Goldberg et al.'s correction with one confusion matrix per band of rank 1-10, 11-100, 101+
  pyterrier-noise calibrate --cheap umbrela.jsonl --gold human-qrels.txt runs/ -m 'P@10' \\
      --method goldberg,ppi++ --goldberg-rank-bins 10,100 --out calibrated-bands
  pyterrier-noise calibrate --cheap llm-qrels.txt --gold judged-topics.txt run1.gz run2.gz \\
      -m nDCG@10 -m AP --scope topics --out calibrated-topics

--cheap: the cheap judge's labels (TREC qrels, or JSON lines / CSV / TSV with query id, doc id, a
0-3 grade and optionally its probability).  --gold: human labels (TREC qrels) of some of the same
pairs, or a judging session file (.sqlite).  --sample: the design.tsv of a --plan step (each pair's
inclusion probability and stratum).  Without --sample: if the gold qrels judge every cheap-judged
pair of at least two topics, the topics are the sample (topic design: every measure, PPI over
topics; said in a warning); otherwise the gold pairs are taken as a simple random sample of the
cheap-judged pairs, post-stratified by cheap label x rank weight (pair design: P@k, DCG@k and RBP
by every method; nDCG@k and AP by every method but goldberg, through ratio estimators with
linearised variances; RR needs the topic design).  A gold file implausible as a random sample (drawn
from the top ranks, from some topics or some cheap labels) is warned about (p < 1e-3) or refused
(p < 1e-9); --sample srs declares it random.  Estimates and interval ends are kept in the measure's
range ([0, 1]; DCG >= 0).

--plan N writes to DIR: design.tsv (every cheap-judged pair: qid, docno, pi, stratum, planned,
design), plan.tsv (the N planned pairs) and plan.run (the same pairs as a TREC run, for `judge`).

Writes to DIR: systems.tsv (name, method, and per measure M: M, M se, M lo, M hi), pairs.tsv
(name, baseline, method, and per measure the difference, se, lo, hi, p-value -- paired over topics
unless --test collection -- and with --correction the corrected p-value and reject), ranking.tsv
(per measure and method, each run's rank and a set of ranks [rank lo, rank hi] that holds for all
runs at once, from the pairs' p-values adjusted by Holm's method, or --correction), one
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
                 options.out(force=True), options.progress()])
    p.add_argument("runs", nargs="+", metavar="RUN", help="TREC run file (plain or .gz) or a directory of them")
    p.add_argument("--cheap", required=True, help="the cheap judge's labels (qrels, JSONL, CSV or TSV)")
    p.add_argument("--gold", default=None,
                   help="gold (human) labels of some of the cheap-judged pairs: TREC qrels or a judging session "
                        "file (.sqlite); required unless --plan")
    p.add_argument("--plan", type=int, default=None, metavar="N",
                   help="plan a gold sample of N pairs instead of calibrating (writes design.tsv, plan.tsv, plan.run)")
    p.add_argument("--design", choices=list(DESIGNS), default="stratified",
                   help="with --plan: uniform (simple random sample), stratified (cheap label x rank weight; "
                        "default) or active (stratified; half the budget where the cheap judge is unsure and the "
                        "pair matters, after Zrnic and Candes 2024, half uniform)")
    p.add_argument("--sample", default=None, metavar="DESIGN.tsv",
                   help="the design.tsv written by --plan: its inclusion probabilities weight the gold pairs; or "
                        "'srs': the gold pairs are a simple random sample of the cheap-judged pairs (declared: not "
                        "checked)")
    p.add_argument("--seed", type=int, default=0, help="with --plan: random seed (default 0)")
    p.add_argument("--method", default="naive,goldberg,ppi,ppi++,gold",
                   help=f"comma-separated methods among {', '.join(CHEAP_METHODS)} (default all)")
    p.add_argument("--scope", choices=list(SCOPES), default="collection",
                   help="collection: the mean over these topics as the gold judge would score them (default); "
                        "topics: the population of topics (adds topic sampling)")
    p.add_argument("--alpha", type=float, default=0.05, help="the intervals are 1 - alpha (default 0.05)")
    p.add_argument("--test", choices=SCOPES[::-1], default="topics",
                   help="the pairs' p-values: topics (default): paired over topics, the difference's variance "
                        "includes topic sampling (what a paired t-test over topics asks); collection: the "
                        "difference on these topics only (the gold sample's noise alone)")
    p.add_argument("--correction", choices=list(CORRECTIONS), default=None,
                   help="multiple-comparison correction of the pairs' p-values, per method and measure (as "
                        "pt.Experiment): adds 'M p-value corrected' and 'M reject' (default none)")
    p.add_argument("--correction-alpha", type=float, default=0.05,
                   help="with --correction: reject where the corrected p-value <= this (default 0.05)")
    p.add_argument("--goldberg-rank-bins", default="10", metavar="EDGES",
                   help="goldberg: one confusion matrix per band of each pair's best rank over the runs, the "
                        "bands' upper edges comma-separated (default 10: ranks 1-10 and 11+; 'none': one matrix "
                        "for every pair, as Goldberg et al. 2017)")
    p.add_argument("--ap-min-relevant", type=float, default=None, metavar="N",
                   help="AP under the pair design needs N gold-relevant sampled pairs per topic on average "
                        "(default 10; below it AP is not estimated, with a warning; 0 turns the check off)")
    p.add_argument("--soft", action="store_true",
                   help="ppi / ppi++ use the cheap labels' probability column (P(relevant), e.g. llm-judge's from "
                        "the logprobs) as the prediction for P@k and RBP, instead of the hard label")
    p.add_argument("--no-plots", action="store_true", help="write the TSV files only")
    p.set_defaults(handler=_cmd_calibrate, option_names={"n": "--plan"})


def _cmd_calibrate(args: argparse.Namespace) -> int:
    import json
    from pathlib import Path

    from .._output import OutputDirectory
    from .._validation import InputError
    from ..correction.cheap import cheap_experiment, save_result
    from ..io.files import run_file_arguments

    methods = [m.strip() for m in args.method.split(",") if m.strip()]
    bad = [m for m in methods if m not in CHEAP_METHODS]
    if bad or not methods:
        raise InputError(f"--method {args.method!r}: unknown method(s) {bad}; choose among {', '.join(CHEAP_METHODS)}")
    if args.plan is None and args.gold is None:
        raise InputError("--gold is required (or --plan N to plan which pairs to judge)")
    if args.plan is not None and (args.gold is not None or args.sample is not None):
        raise InputError("--plan draws a new gold sample: it takes neither --gold nor --sample")
    from .._progress import status
    # the run files, unread: the engine parses them into its aligned form (about 20 bytes a ranked
    # position), and no frame of Python strings is held for the whole command
    runs = run_file_arguments(args.runs)
    directory = OutputDirectory(args.out, "calibrate", force=args.force)
    if args.plan is not None:
        return _plan(args, runs, directory)
    gold: Any = args.gold
    if str(gold).endswith(".sqlite"):
        from ..selection import JudgingSession
        with JudgingSession(gold, create=False) as session:
            gold = session.judged_qrels()[["qid", "docno", "label"]]
    with status(f"estimating {len(runs)} runs by {', '.join(methods)}", args.progress):
        res = cheap_experiment(runs, args.cheap, gold, args.measures, methods=methods, scope=args.scope,
                               alpha=args.alpha, sample=args.sample,
                               goldberg_rank_bins=_rank_bins(args.goldberg_rank_bins),
                               ap_min_relevant=args.ap_min_relevant, test=args.test, correction=args.correction,
                               correction_alpha=args.correction_alpha, soft=args.soft)
    if args.no_plots:
        from ..correction.cheap import rankings
        directory.write("systems.tsv", res.systems.to_csv(sep="\t", index=False, float_format="%.6g"))
        directory.write("pairs.tsv", res.pairs.to_csv(sep="\t", index=False, float_format="%.6g"))
        directory.write("ranking.tsv", rankings(res, args.correction_alpha, args.correction or "holm").to_csv(
            sep="\t", index=False, float_format="%.6g"))
    else:
        save_result(res, directory, args.correction_alpha, args.correction or "holm")
    info = {"cheap": str(args.cheap), "gold": str(args.gold), "sample": args.sample, "runs": len(runs),
            "measures": res.measures,
            "methods": methods, "design": res.design, "scope": res.scope, "gold_pairs": res.n_gold,
            "alpha": args.alpha, "test": args.test, "correction": args.correction,
            "correction_alpha": args.correction_alpha, "soft": args.soft, "goldberg_rank_bins": _rank_bins(args.goldberg_rank_bins),
            "ap_min_relevant": args.ap_min_relevant}
    directory.write("experiment.json", json.dumps(info, indent=1) + "\n")
    directory.finish()
    cols = ["name", "method"] + [c for m in res.measures for c in (m, f"{m} lo", f"{m} hi")]
    print(res.systems[cols].to_string(index=False, float_format=lambda x: f"{x:.4f}"))
    print(f"wrote systems.tsv, pairs.tsv{'' if args.no_plots else ' and plots'} to {Path(args.out)}/: "
          f"{len(runs)} run{'' if len(runs) == 1 else 's'}, {res.n_gold} gold label{'' if res.n_gold == 1 else 's'} ({res.design} design, {res.scope} scope)")
    return 0


def _rank_bins(text: str) -> list[int] | None:
    """``--goldberg-rank-bins``: ``none`` or comma-separated increasing ranks >= 1."""
    from .._validation import InputError
    if text.strip().lower() in ("none", ""):
        return None
    try:
        edges = [int(x) for x in text.split(",") if x.strip()]
    except ValueError:
        edges = []
    if not edges or any(e < 1 for e in edges) or any(b <= a for a, b in zip(edges, edges[1:])):
        raise InputError(f"--goldberg-rank-bins {text!r}: expected 'none' or increasing ranks >= 1, comma-separated "
                         f"(e.g. 10 or 10,100)")
    return edges


def _plan(args: argparse.Namespace, runs: list, directory: Any) -> int:
    """``--plan N``: draw the gold sample and write design.tsv, plan.tsv and plan.run."""
    import json

    import numpy as np

    from ..correction.cheap import plan_gold_sample

    frame = plan_gold_sample(runs, args.cheap, args.measures, args.plan, design=args.design, seed=args.seed)
    planned = frame[frame["planned"] == 1].reset_index(drop=True)
    directory.write("design.tsv", frame.to_csv(sep="\t", index=False, float_format="%.10g"))
    directory.write("plan.tsv", planned[["qid", "docno", "pi", "stratum"]].to_csv(sep="\t", index=False,
                                                                               float_format="%.10g"))
    # plan.run lists each topic's planned pairs in a seeded random order: a session judging it by pool
    # order (rank by rank over the topics) then meets them at random, so the pairs judged so far are
    # close to a random subsample of the plan (the live estimates of serve --cheap-labels rely on it)
    shuffled = planned.iloc[np.random.default_rng(args.seed).permutation(len(planned))]
    rank = shuffled.groupby("qid").cumcount().to_numpy() + 1
    lines = "".join(f"{q} Q0 {d} {k} {float(len(shuffled) - i)!r} plan\n"
                    for i, (q, d, k) in enumerate(zip(shuffled["qid"], shuffled["docno"], rank)))
    directory.write("plan.run", lines)
    info = {"cheap": str(args.cheap), "runs": len(runs), "measures": list(args.measures), "design": args.design,
            "planned_pairs": int(len(planned)), "cheap_judged_pairs": int(len(frame)), "seed": args.seed,
            "expected_size": float(np.round(frame["pi"].sum(), 3))}
    directory.write("plan.json", json.dumps(info, indent=1) + "\n")
    directory.finish()
    print(f"planned {len(planned)} of {len(frame)} cheap-judged pairs ({args.design} design) in {args.out}/: "
          f"judge the pairs of {args.out}/plan.run (e.g. pyterrier-noise judge {args.out}/plan.run --session gold.sqlite "
          f"--method pool), then calibrate --gold gold.sqlite --sample {args.out}/design.tsv")
    return 0
