"""Helpers shared by the experiments: runs aligned once, measures parsed into engine specs, renamed keywords.

Private to :mod:`pyterrier_noise.experiments`; it uses only public names of ``engine`` and
``measures``.
"""
from __future__ import annotations

from typing import Any

from .._validation import InputError, check_ties
from ..engine import AlignedRuns, MeasureSpec
from ..measures import to_spec
from ..measures.parse import measure_label as parsed_label

#: the package's default RBO persistence: Webber, Moffat & Zobel (2010) suggest the p at which the
#: top 10 ranks carry ~86% of the weight, 0.9 (the thesis's phi matching used 0.98;
#: pass ``rbo_p=0.98`` for it).  Every ``rbo_p=`` of the experiments defaults to this.
RBO_P = 0.9


def aligned_runs(runs: Any, qrels: Any, ties: str) -> AlignedRuns:
    """Runs aligned to qrels once (an AlignedRuns is used as it is)."""
    if isinstance(runs, AlignedRuns):
        return runs
    if qrels is None:
        raise InputError("qrels are required unless runs is an AlignedRuns (already aligned to its qrels)")
    check_ties(ties)
    return AlignedRuns.build(runs, qrels, ties=ties)


def spec_label(spec: MeasureSpec) -> str:
    """ir_measures-style name of an engine spec (``AP``, ``nDCG@10``, ``RBP(p=0.9)``...)."""
    params = []
    if spec.p is not None:
        params.append(f"p={spec.p:g}")
    if spec.T is not None:
        params.append(f"T={spec.T:g}")
    if spec.rel != 1.0 and spec.max_rel is None and spec.family not in ("nDCG", "DCG"):
        params.append(f"rel={spec.rel:g}")
    if spec.max_rel is not None:
        params.append(f"max_rel={spec.max_rel:g}")
    if spec.judged_only:
        params.append("judged_only=True")
    if spec.gains:
        params.append("gains={" + ",".join(f"{k:g}:{v:g}" for k, v in spec.gains) + "}")
    name = spec.family
    if spec.component != "value":
        name += {"residual": "Residual", "upper": "Upper", "projected": "Projected"}[spec.component]
    text = name + (f"({','.join(params)})" if params else "")
    at = spec.cutoff if spec.cutoff is not None else (f"{spec.recall:g}" if spec.recall is not None else None)
    return text + (f"@{at}" if at is not None else "")


def labelled_spec(measure: Any) -> tuple[str, MeasureSpec]:
    """(label, engine spec) of a measure given as ir_measures text / object or a MeasureSpec."""
    if isinstance(measure, MeasureSpec):
        spec = measure.validate()
        return spec_label(spec), spec
    spec, _ = to_spec(measure)
    return measure_label(measure), spec



def measure_label(m: Any) -> str:
    """Column label of a measure, as :func:`~pyterrier_noise.measures.evaluate` and
    ``pt.Experiment`` label it: a string as the user wrote it (``"RBP(p=0.8)"``; ir_measures would
    print ``RBP``, hiding the default p; trec_eval's names as written, as pt.Experiment does), a
    measure object as ``str(measure)``."""
    return parsed_label(m)


def spec_and_ties(measure: Any) -> tuple[MeasureSpec, str]:
    """Engine spec and tie policy of a measure object or ir_measures string; trec_eval names that
    ``pt.Experiment`` accepts (``"map"``, ``"ndcg_cut_10"``) are understood too."""
    return to_spec(measure)


def interactive() -> bool:
    """True when a progress bar can be seen: stderr is a terminal or a notebook kernel runs."""
    import sys
    return bool(getattr(sys.stderr, "isatty", lambda: False)()) or "ipykernel" in sys.modules


