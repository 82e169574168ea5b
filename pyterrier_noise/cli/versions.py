"""``pyterrier-noise versions``: do the conclusions depend on whose judgments are used?
(:func:`pyterrier_noise.experiments.versions_experiment`)."""
from __future__ import annotations

import argparse
from typing import Any

from .._vocab import CORRECTIONS, TESTS, UNJUDGED_POLICIES
from . import options

VERSIONS_EXAMPLES = """examples:
  pyterrier-noise versions --qrels nist=qrels.txt --qrels llm=llm-qrels.txt runs/ -m AP -m nDCG@10 --out versions
  pyterrier-noise versions --qrels nist=qrels.txt --qrels b=assessor-b.txt run1 run2 run3 -m AP \\
      --baseline run1 --correction holm --unjudged common --noise-resamples 1000 --noise-floor --out versions

Every run is aligned once to the union of the versions' judgments and scored under every version.
--unjudged trec_eval (default): each version on its own judgments (what a version did not judge is
unjudged in it); --unjudged common: only pairs every version judged keep their labels.  Only topics
judged in every version are evaluated.

Writes to DIR: scores.tsv (pt.Experiment's frame, one block per version), summary.tsv (each version
against the reference), leaderboards.tsv (every ordered pair of versions), pairs.tsv (every system
pair's conclusion under every version), significance.tsv, label_agreement.tsv (per topic and
'all'), confusion.tsv, with --noise-resamples judgment_noise.tsv, with --noise-floor noise_floor.tsv,
experiment.json (the inputs and the unjudged policy in words), report.html (unless --no-report: the
agreement tables with their conclusions, offline) and manifest.json.
"""


def _named_qrels(text: str) -> tuple[str, str]:
    name, sep, path = text.partition("=")
    if not sep or not name or not path:
        raise argparse.ArgumentTypeError(f"expected NAME=FILE (e.g. nist=qrels.txt), got {text!r}")
    return name, path


def _tsv(frame: Any) -> bytes:
    """A frame as tab-separated text through Arrow's CSV writer (pandas' is much slower on the
    many rows of pairs.tsv): floats at full precision, NaN empty."""
    import io

    import pyarrow as pa
    import pyarrow.csv as pacsv
    buf = io.BytesIO()
    buf.write(("\t".join(map(str, frame.columns)) + "\n").encode("utf-8"))
    table = pa.Table.from_pandas(frame.reset_index(drop=True), preserve_index=False)
    pacsv.write_csv(table, buf, pacsv.WriteOptions(include_header=False, delimiter="\t", quoting_style="none"))
    return buf.getvalue()


def register_cli(subparsers: Any) -> None:
    """Add the ``versions`` subcommand: ``pyterrier-noise versions --qrels NAME=FILE ... RUN... -m ... --out DIR``."""
    p = subparsers.add_parser(
        "versions", help="scores, rankings, significance and label agreement across label versions of the qrels",
        description="Evaluate runs under several label versions of the same topics (NIST and LLM qrels, a second "
                    "assessor, qrels before and after re-judging) and report whether the leaderboards, the "
                    "significance conclusions and the labels agree.",
        epilog=VERSIONS_EXAMPLES, formatter_class=argparse.RawDescriptionHelpFormatter,
        parents=[options.measures(help="measure in ir_measures syntax (repeatable), e.g. AP, nDCG@10, 'RBP(p=0.8)'"),
                 options.seed(), options.out(force=True), options.progress(),
                 options.ties(help="tie policy of every measure (default: each measure's own)"),
                 options.memory("the experiment")])
    p.add_argument("--qrels", action="append", required=True, type=_named_qrels, metavar="NAME=FILE",
                   help="a label version: its name and TREC qrels file (repeat, at least twice)")
    p.add_argument("run_files", nargs="+", metavar="RUN", help="TREC run file (plain or .gz) or a directory of them")
    p.add_argument("--reference", help="the version the others are compared with (default: the first --qrels)")
    p.add_argument("--baseline", action="append", help="baseline run name (repeatable: one correction across all)")
    p.add_argument("--test", choices=list(TESTS), default="t", help="paired test over topics (default t)")
    p.add_argument("--correction", choices=list(CORRECTIONS), default=None,
                   help="multiple-comparison correction (default none)")
    p.add_argument("--alpha", type=float, default=0.05, help="significance level (default 0.05)")
    p.add_argument("--unjudged", choices=list(UNJUDGED_POLICIES), default="trec_eval",
                   help="pairs judged in one version and not another: unjudged as in trec_eval (default) or "
                        "restricted to the common pool")
    p.add_argument("--top-k", type=int, default=10, help="k of tau@k and the top-k overlap (default 10)")
    p.add_argument("--noise-resamples", type=int, default=0,
                   help="resamples of topics and versions for judgment_noise.tsv (default 0: not written)")
    p.add_argument("--noise-floor", action="store_true", help="also write noise_floor.tsv")
    p.add_argument("--no-report", action="store_true", help="write the TSV files only (no report.html)")
    p.set_defaults(handler=_cmd_versions)


def _cmd_versions(args: argparse.Namespace) -> int:
    import json
    import os
    from pathlib import Path

    from .._output import OutputDirectory
    from .._validation import InputError, check_int
    from ..io.files import run_file_arguments
    from ..io.reader import RunFileReader

    directory = OutputDirectory(args.out, "versions", force=args.force)
    names = [n for n, _ in args.qrels]
    if len(set(names)) != len(names):
        raise InputError(f"--qrels: version names must be unique, got {names}")
    files = run_file_arguments(args.run_files)
    from ..io.chunks import run_file_chunks
    memory = args.memory * 2 ** 30
    # the run files are read in threads from here on (decompression and Arrow's parser release the
    # GIL) while pandas and the library are imported and the qrels versions are read, as eval does;
    # more files than fit in --memory are read later, a chunk of files at a time
    reading = RunFileReader(files, os.cpu_count() or 1) if len(run_file_chunks(files, memory)) == 1 else files
    from ..experiments import versions_experiment
    from ..io import read_qrels, run_name
    qrels = {n: read_qrels(path) for n, path in args.qrels}
    runs = [run_name(f) for f in files]
    bases = [b if b in runs else run_name(Path(b)) for b in (args.baseline or [])]
    for b in bases:
        if b not in runs:
            raise InputError(f"--baseline {b!r} is not one of the runs (e.g. {runs[:3]})")
    noise = check_int("--noise-resamples", args.noise_resamples, 0)
    res = versions_experiment(reading, None, qrels, args.measures, baseline=bases or None, reference=args.reference,
                              test=args.test, correction=args.correction, correction_alpha=args.alpha,
                              unjudged=args.unjudged, ties=args.ties, top_k=args.top_k, seed=args.seed,
                              progress=args.progress, memory=memory)
    tables = {"scores.tsv": res.frame, "summary.tsv": res.summary, "leaderboards.tsv": res.leaderboards,
              "pairs.tsv": res.pairs, "significance.tsv": res.significance,
              "label_agreement.tsv": res.label_agreement, "confusion.tsv": res.confusion}
    if noise:
        tables["judgment_noise.tsv"] = res.judgment_noise(n_resamples=noise, seed=args.seed)
    if args.noise_floor:
        tables["noise_floor.tsv"] = res.noise_floor(seed=args.seed)
    for name, frame in tables.items():
        directory.write(name, _tsv(frame))
    info = {"versions": dict(args.qrels), "reference": res.reference, "unjudged": args.unjudged,
            "policy": res.policy, "runs": len(files), "topics": len(res.topics), "measures": res.measures,
            "baselines": bases, "test": args.test, "correction": args.correction, "alpha": args.alpha,
            "ties": args.ties, "seed": args.seed, "noise_resamples": noise}
    directory.write("experiment.json", json.dumps(info, indent=1) + "\n")
    if not args.no_report:
        from ..report import build_report
        from ..report.words import command_line
        page = build_report(f"Whose judgments? {len(files)} runs under {len(res.versions)} label versions",
                            versions=res, command=command_line(getattr(args, "argv", None))).html()
        directory.write("report.html", page)
    directory.finish()
    cols = ["measure", "version", "kendall_tau", "tau_ap", "rbo", "max_rank_change", "significant", "kept", "lost",
            "gained", "reversed"]
    print(res.summary[cols].to_string(index=False, float_format=lambda x: f"{x:.4f}"))
    overall = res.label_agreement[res.label_agreement["qid"] == "all"]
    print(overall[["version_a", "version_b", "common", "kappa", "kappa_weighted", "alpha",
                   "a_relevant_unjudged_by_b", "b_relevant_unjudged_by_a"]]
          .to_string(index=False, float_format=lambda x: f"{x:.4f}"))
    print(f"unjudged={args.unjudged}: {res.policy}")
    print(f"wrote {len(tables) + 2 + (not args.no_report)} files to {args.out}/: {len(files)} runs x {len(res.topics)} topics x "
          f"{len(res.versions)} versions; reference {res.reference!r}")
    return 0
