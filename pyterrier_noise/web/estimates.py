"""The organiser's live estimates: PPI++ scores of the runs, with intervals, from cheap labels and the
gold (human) judgments the server has collected so far.

The organiser loads, once, the cheap labels (``llm-judge``'s output, anything
:func:`~pyterrier_noise.io.read_cheap_qrels` reads), the runs to score and, optionally, the design the
gold sample was planned by (``calibrate --plan``'s ``design.tsv``).  :class:`CheapInputs` reads and
checks them (every error names the file and line) and they are stored in the server's file, so a
restart keeps them.  :func:`live_estimates` calls
:func:`~pyterrier_noise.correction.cheap_experiment` on them and the judged qrels, with the design
that matches how the pairs were chosen:

* with a design frame: its strata and inclusion probabilities; while only some planned pairs are
  judged, each stratum's judged pairs are taken as a simple random sample of it
  (:meth:`~pyterrier_noise.correction.GoldSample.from_design_frame`), and every stratum needs two
  judged pairs for a variance; the active (Poisson) design cannot reweight planned pairs left
  unjudged, so it is estimated only once all are judged;
* without one: a simple random sample of the cheap-judged pairs, post-stratified, as ``calibrate``
  does -- and refused with ``calibrate``'s sentence when the judged pairs do not look random (a
  session choosing documents by Method A, B or C picks the top ranks, not a random sample).
"""
from __future__ import annotations

import io
import warnings
import zlib
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Sequence

import numpy as np
import pandas as pd

from .._validation import InputError

__all__ = ["CheapInputs", "live_estimates", "LIVE_MEASURES", "LIVE_METHODS", "MIN_SRS"]

#: what the organiser's page estimates
LIVE_MEASURES = ("P@10", "RBP(p=0.8)")
#: PPI++ (Angelopoulos, Duchi and Zrnic 2023) and, beside it, the gold sample alone
LIVE_METHODS = ("ppi++", "gold")
#: the fewest gold pairs for a simple random sample, post-stratified (one post-stratum's minimum)
MIN_SRS = 10


def _pack(frame: pd.DataFrame) -> bytes:
    return zlib.compress(frame.to_csv(sep="\t", index=False).encode("utf-8"), 6)


def _unpack(blob: bytes, dtypes: dict[str, Any]) -> pd.DataFrame:
    return pd.read_csv(io.BytesIO(zlib.decompress(blob)), sep="\t", dtype=dtypes, keep_default_na=False)


@dataclass(eq=False)
class CheapInputs:
    """What the live estimates need besides the gold labels: ``cheap`` (``qid, docno, label[,
    probability]``), ``runs`` (``{name: frame}``), ``design`` (a design frame or None) and where each
    came from (``sources``)."""

    cheap: pd.DataFrame
    runs: dict[str, pd.DataFrame]
    design: pd.DataFrame | None
    sources: dict[str, str]

    @classmethod
    def read(cls, cheap: Any, runs: Any, design: Any = None) -> "CheapInputs":
        """Read and check the files: the cheap labels, the runs (files or directories, as ``calibrate``
        takes them) and the design frame (``design.tsv``); the design must list every cheap-judged
        pair of the runs once (checked as ``calibrate --sample`` checks it)."""
        from ..correction.design import GoldSample
        from ..engine import AlignedRuns
        from ..io import read_runs
        from ..io.cheap import read_cheap_qrels
        frame = read_cheap_qrels(cheap)
        items = [runs] if isinstance(runs, (str, Path, pd.DataFrame, dict)) else list(runs or [])
        if isinstance(runs, (pd.DataFrame, dict)) and not len(runs):
            items = []
        if not items:
            raise InputError("--cheap-labels needs the runs whose scores to estimate (--score-runs RUN ...)")
        run_frames: dict[str, pd.DataFrame] = {}
        for item in items:
            for name, f in read_runs(item).items():
                if name in run_frames:
                    raise InputError(f"--score-runs: two runs are named {name!r} (a run's name is its file name)")
                run_frames[name] = f[["qid", "docno", "score"] + (["rank"] if "rank" in f.columns else [])]
        sources = {"cheap": _name(cheap), "runs": ", ".join(map(_name, items))}
        dframe = None
        if design is not None:
            try:
                dframe = pd.read_csv(design, sep="\t", dtype={"qid": str, "docno": str})
            except (OSError, ValueError) as exc:
                raise InputError(f"{design}: cannot read the design file ({exc})") from None
            table = AlignedRuns.build(run_frames, frame[["qid", "docno", "label"]], ties="trec_eval").table
            GoldSample.from_design_frame(table, dframe, source=str(design))      # checks it; raises a sentence
            dframe = dframe[[c for c in ("qid", "docno", "pi", "stratum", "planned", "design") if c in dframe]]
            sources["design"] = str(design)
        return cls(frame, run_frames, dframe, sources)

    def pack(self) -> dict[str, bytes]:
        """The blobs the server file stores (compressed TSV)."""
        runs = pd.concat([f.assign(run=n) for n, f in self.runs.items()], ignore_index=True)
        out = {"cheap": _pack(self.cheap), "runs": _pack(runs)}
        if self.design is not None:
            out["design"] = _pack(self.design)
        return out

    @classmethod
    def unpack(cls, blobs: dict[str, bytes], sources: dict[str, str]) -> "CheapInputs":
        """The inputs stored by :meth:`pack`."""
        cheap = _unpack(blobs["cheap"], {"qid": str, "docno": str})
        runs = _unpack(blobs["runs"], {"qid": str, "docno": str, "run": str})
        run_frames = {str(n): f.drop(columns="run").reset_index(drop=True)
                      for n, f in runs.groupby("run", sort=False)}
        design = _unpack(blobs["design"], {"qid": str, "docno": str}) if "design" in blobs else None
        return cls(cheap, run_frames, design, dict(sources))

    def describe(self) -> str:
        """One sentence: what is loaded."""
        what = f"{len(self.cheap)} cheap labels from {self.sources.get('cheap')}, {len(self.runs)} runs"
        if self.design is None:
            return f"{what}; no design file (the judged pairs are analysed as a simple random sample)"
        d = self.design
        kind = str(d["design"].iloc[0]) if "design" in d.columns and len(d) else "stratified"
        return (f"{what}; the {kind} design of {self.sources.get('design')} "
                f"({int((d['planned'] != 0).sum())} planned pairs)")


def _name(source: Any) -> str:
    return str(source) if isinstance(source, (str, Path)) else f"a {type(source).__name__} in memory"


def _too_few(inputs: CheapInputs, gold: pd.DataFrame) -> str | None:
    """A sentence when ``gold`` is too small to estimate from (and how many more are needed), else None."""
    keys = pd.MultiIndex.from_frame(gold[["qid", "docno"]].astype(str))
    if inputs.design is None:
        have = int(keys.isin(pd.MultiIndex.from_frame(inputs.cheap[["qid", "docno"]])).sum())
        if have >= MIN_SRS:
            return None
        return (f"too few gold judgments to estimate: {have} of the judged pairs have a cheap label; a simple "
                f"random sample needs at least {MIN_SRS} (a post-stratum's minimum), {MIN_SRS - have} more")
    d = inputs.design
    planned = d[d["planned"] != 0]
    judged = pd.MultiIndex.from_frame(planned[["qid", "docno"]].astype(str)).isin(keys)
    stratum = planned["stratum"].to_numpy(dtype=np.int64)
    if (stratum < 0).all():
        left = int((~judged).sum())
        if left == 0:
            return None
        return (f"too few gold judgments to estimate: the active (Poisson) design's probabilities hold only "
                f"when every planned pair is judged; {int(judged.sum())} of {len(planned)} are, {left} more needed")
    u, s = np.unique(stratum, return_inverse=True)
    got = np.bincount(s, weights=judged.astype(float), minlength=len(u)).astype(int)
    size = np.bincount(s, minlength=len(u))
    need = np.maximum(np.minimum(2, size) - got, 0)
    if need.sum() == 0:
        return None
    short = [f"{int(h)} ({g} of {n} judged)" for h, g, n, k in zip(u, got, size, need) if k > 0]
    return (f"too few gold judgments to estimate: every stratum of the design needs at least 2 judged pairs for a "
            f"variance, {int(need.sum())} more needed; short: stratum {', '.join(short[:6])}"
            f"{' ...' if len(short) > 6 else ''}")


def live_estimates(inputs: CheapInputs, gold: pd.DataFrame, measures: Sequence[str] = LIVE_MEASURES,
                   methods: Sequence[str] = LIVE_METHODS, alpha: float = 0.05) -> dict[str, Any]:
    """The runs' estimates from ``inputs`` and the gold qrels so far (``qid, docno, label``).

    Returns ``{"n_gold", "design", "systems", "notes", "message"}``: ``systems`` is
    :func:`~pyterrier_noise.correction.cheap_experiment`'s frame (None when nothing can be
    estimated), ``message`` the sentence saying why not (too few judgments and how many more, or a
    sample that is not random), ``notes`` the warnings raised while estimating."""
    from ..correction.cheap import cheap_experiment
    gold = gold[["qid", "docno", "label"]].astype({"qid": str, "docno": str})
    out: dict[str, Any] = {"n_gold": int(len(gold)), "design": None, "systems": None, "notes": [], "message": None,
                           "measures": list(measures), "methods": list(methods), "alpha": alpha}
    out["message"] = _too_few(inputs, gold)
    if out["message"] is not None:
        return out
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        try:
            res = cheap_experiment(inputs.runs, inputs.cheap, gold, list(measures), methods=tuple(methods),
                                   sample=inputs.design, alpha=alpha)
        except InputError as exc:
            out["message"] = f"cannot estimate: {exc}"
            return out
    out["notes"] = list(dict.fromkeys(str(w.message) for w in caught))
    out["design"] = res.design
    out["systems"] = res.systems
    return out
