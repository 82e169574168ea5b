"""``pyterrier-noise reproduce``: each source paper's headline experiment, the paper's numbers beside ours (:mod:`pyterrier_noise.reproduce`)."""
from __future__ import annotations

import argparse
from typing import Any

from .._vocab import PAPERS
from . import options

EXAMPLES = """papers:
""" + "".join(f"  {k:13s} {v}\n" for k, v in PAPERS.items()) + """  all           every one of them, in this order

examples:
  pyterrier-noise reproduce goldberg2017                 # the paper's own numbers: needs no data
  pyterrier-noise reproduce moffat2007 --quick           # TREC-COVID round 1 from ../shared/data
  pyterrier-noise reproduce all --data synthetic --quick --out repro/
  pyterrier-noise reproduce all --write-docs             # regenerate docs/reproductions.md, its evidence, docs/data/

Each paper prints its headline claims (supported / contradicted / mixed / not testable, with the
rows that test them), then the rows quoting the paper's printed numbers (as printed, where, ours,
the verdict and its tolerance: reproduced / differs because our data differs / not comparable /
does not reproduce / ... the direction is reversed), the checks of the package and of simulations
(holds / fails / for reference: never "reproduced"), the analyses not yet reproduced with the
reason, and the counts of each verdict; "all" ends with the counts of every paper.  --data names a folder holding
trec-covid-round1/ (default: $PYTERRIER_NOISE_DATA, else ../shared/data beside the repository);
--data synthetic uses the built-in synthetic collection.
"""


def _cmd_reproduce(args: argparse.Namespace) -> int:
    import json

    from .._output import OutputDirectory
    from .._progress import status
    from ..reproduce import run
    from ..reproduce.page import write_docs
    papers = list(PAPERS) if args.paper == "all" else [args.paper]
    directory = OutputDirectory(args.out, "reproduce", force=args.force) if args.out else None
    records = []
    for paper in papers:
        with status(f"reproducing {paper}", args.progress):   # a line after 2 s: phases without a bar
            rec = run(paper, data=args.data, quick=args.quick, progress=args.progress)
        records.append(rec)
        print(rec.to_text(), flush=True)
        if directory is not None:
            directory.write(f"reproduce_{paper}.json", json.dumps(rec.to_dict(), indent=1) + "\n")
            directory.write(f"reproduce_{paper}.txt", rec.to_text())
    if len(records) > 1:
        from ..reproduce.page import summary_text
        print(summary_text(records), flush=True)
    if directory is not None:
        directory.finish({"papers": papers, "quick": args.quick, "data": args.data})
        print(f"wrote {len(papers)} record(s) to {args.out}/")
    if args.write_docs:
        written = write_docs(records)
        print("wrote " + ", ".join(str(p) for p in written))
    return 0


def register_cli(subparsers: Any) -> None:
    """Add the ``reproduce`` subcommand to ``pyterrier-noise``."""
    p = subparsers.add_parser(
        "reproduce", help="run a source paper's headline experiment and compare with its printed numbers",
        description="Run each source paper's headline experiment with the package and print the paper's numbers "
                    "beside ours, with the data it ran on and a verdict.",
        epilog=EXAMPLES, formatter_class=argparse.RawDescriptionHelpFormatter,
        parents=[options.out(required=False, force=True,
                             help="also write each record as JSON and text into this directory"),
                 options.progress()])
    p.add_argument("paper", metavar="PAPER", choices=[*PAPERS, "all"],
                   help="short name of the paper (" + ", ".join(PAPERS) + ") or all")
    p.add_argument("--data", default=None,
                   help="folder holding trec-covid-round1/, or 'synthetic' (default: $PYTERRIER_NOISE_DATA, "
                        "else ../shared/data beside the repository)")
    p.add_argument("--quick", action="store_true", help="fewer replicates and budgets (well under a minute per paper)")
    p.add_argument("--write-docs", action="store_true", dest="write_docs",
                   help="store the records in docs/data/ and regenerate docs/reproductions.md and "
                        "docs/evidence/reproductions.md")
    p.set_defaults(handler=_cmd_reproduce)
