"""Words of the reports: what every column means (said once, where it first appears), why a column
can be 0 in every row, and the provenance line (command and package versions) that ends a report."""
from __future__ import annotations

import html
import platform
import sys
from datetime import datetime, timezone
from typing import Sequence

#: one sentence per column name the package's tables use
COLUMN_HELP: dict[str, str] = {
    "system": "the run (its file name without .gz)",
    "run": "the run (its file name without .gz)",
    "name": "the run (its file name without .gz)",
    "measure": "the evaluation measure, in ir_measures syntax",
    "RBP(p=0.8)": "rank-biased precision with persistence p = 0.8, counting judged documents only: the base "
                  "(Moffat and Zobel 2008)",
    "RBP residual": "how much RBP could still rise if every unjudged document the run retrieved were relevant",
    "RBP upper": "base + residual: RBP if every unjudged document were relevant",
    "AP": "average precision (unjudged documents count as non-relevant)",
    "nDCG@10": "normalised discounted cumulative gain of the first 10 documents",
    "base": "mean RBP over the judged documents only",
    "residual": "how much the score could still rise if the unjudged documents were relevant",
    "upper": "base + residual",
    "projected": "base + residual x the share of judged documents found relevant (Moffat, Webber and Zobel 2007)",
    "kendall_tau": "Kendall's tau between each replicate's ranking of the runs and the unperturbed ranking, "
                   "averaged over the replicates (1: the same order)",
    "tau_ap": "tau_AP (Yilmaz, Aslam and Robertson 2008): like Kendall's tau, but swaps near the top weigh more",
    "rbo": "rank-biased overlap (Webber, Moffat and Zobel 2010) of each replicate's ranking with the unperturbed one",
    "significant_pairs": "count: pairs of runs significantly different under the unperturbed qrels",
    "kept_significant": "share of (significant pair, replicate) where the replicate keeps the same significant winner",
    "lost": "share of (significant pair, replicate) where the replicate finds no significant difference",
    "reversed": "share of (significant pair, replicate) where the replicate finds the opposite winner significant",
    "gained": "share of (non-significant pair, replicate) where the replicate finds a significant difference",
    "method": "how the documents to judge were chosen: depth pooling, or Moffat, Webber and Zobel's (2007) "
              "Methods A, B or C",
    "judgments": "count: documents judged so far",
    "relevant": "count: relevant documents found so far",
    "mean_residual": "mean RBP residual over all runs",
    "top_residual": "mean RBP residual of the top third of the runs (by the reference scores)",
    "separated": "share of pairs of top runs whose ranges no longer overlap: the better run's base is above "
                 "the other's upper bound",
    "sig_base_upper": "share of pairs of top runs where the better run's base is significantly above the other's "
                      "upper bound (one-sided Wilcoxon test, alpha 0.05; Moffat, Webber and Zobel 2007, Table 5): "
                      "the judgments settle the comparison whatever the unjudged documents hold",
    "sig_base_base": "share of pairs of top runs whose bases differ significantly (one-sided Wilcoxon test, alpha 0.05)",
    "sig_base_projected": "share of pairs of top runs where one run's base is significantly above the other's "
                          "projected value",
    "original": "the score of the run as it was submitted",
    "pessimistic": "the score when tied documents are ordered worst first",
    "expected": "the score averaged over every order of the tied documents",
    "optimistic": "the score when tied documents are ordered best first",
    "spread": "optimistic - pessimistic: how much the arbitrary order of tied documents can change the score",
    "share_docs_tied": "share of the run's documents whose score equals another document's in the same topic",
    "n_topics_with_ties": "count: topics in which the run has at least one tie",
    "n_tied_groups": "count: groups of two or more documents with equal scores",
    "largest_group": "count: documents in the largest group of equal scores",
    "gm_first_tie_rank": "geometric mean, over topics with ties, of the rank where the first tie starts",
    "n_topics": "count: topics",
}

#: why a column can be 0 in every row (else an all-zero column is left out of a report's table)
ZERO_HELP: dict[str, str] = {
    "separated": "no pair of top runs is separated yet: the judgments are too few for any range to clear another",
    "sig_base_upper": "no pair of top runs is settled yet: the judgments are too few for a base to be "
                      "significantly above another run's upper bound",
    "sig_base_projected": "no pair of top runs is settled against the projected values yet",
    "lost": "no significant conclusion was lost in any replicate",
    "reversed": "no significant conclusion was reversed in any replicate",
    "gained": "no replicate made a non-significant pair significant",
}


def versions() -> dict[str, str]:
    """The versions of Python and of the packages that made a report."""
    from importlib import metadata
    out = {"python": platform.python_version()}
    for pkg in ("pyterrier-noise", "numpy", "pandas", "scipy", "ir_measures", "matplotlib", "plotly"):
        try:
            out[pkg] = metadata.version(pkg)
        except metadata.PackageNotFoundError:
            continue
    return out


def command_line(argv: Sequence[str] | None = None) -> str:
    """``pyterrier-noise`` and its arguments ``argv`` (default: this process's), quoted as a shell would need."""
    import shlex
    args = sys.argv[1:] if argv is None else list(argv)
    return " ".join(["pyterrier-noise"] + [shlex.quote(str(a)) for a in args])


def provenance(command: str | None = None) -> str:
    """HTML: the command (when known) and the package versions that made the report, and when."""
    when = datetime.now(timezone.utc).strftime("%Y-%m-%d %H:%M UTC")
    parts = []
    if command:
        parts.append(f"Made by <code>{html.escape(command)}</code>")
    else:
        parts.append("Made by pyterrier-noise")
    parts.append(f"on {when}, with " + ", ".join(f"{html.escape(k)} {html.escape(v)}" for k, v in versions().items()) + ".")
    return "<p>" + " ".join(parts) + "</p>"
