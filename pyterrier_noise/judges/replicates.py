"""ReplicateSet: seeded replicates of a set of judgments as a label matrix, frames and TREC files."""
from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from typing import Any, Iterator

import numpy as np
import pandas as pd

from .._output import atomic_write
from .._progress import progress_bar
from .._validation import InputError, check_int, check_number
from ..engine import JudgmentTable
from ._common import _is_integral, _label_column, _warn
from .stream import Rows


@dataclass(eq=False)
class ReplicateSet:
    """``n_replicates`` replicates of a set of judgments: a label matrix over the rows of a judgment table.

    Attributes:
        table: the judgment table (rows sorted by topic, then docno).
        labels: ``(len(table), n_replicates)`` float matrix; ``NaN`` = unjudged in that replicate.  Pass it
            to ``AlignedRuns.evaluate(specs, labels)`` of runs aligned to the same qrels.
        seed: the seed the replicates were drawn with.
        start: the number of the first replicate (replicate ``start + i`` is column ``i``).
        description: the model that made them.
    """

    table: JudgmentTable
    labels: np.ndarray
    seed: int
    start: int = 0
    description: str = ""

    @property
    def n_replicates(self) -> int:
        """Number of replicates."""
        return self.labels.shape[1]

    def __len__(self) -> int:
        return self.n_replicates

    def __repr__(self) -> str:
        return (f"ReplicateSet({self.n_replicates} replicate(s) of {len(self.table)} judgment(s), seed={self.seed}, "
                f"start={self.start}, model={self.description})")

    def _column(self, i: Any) -> int:
        i = check_int("replicate index", i, 0)
        if i >= self.n_replicates:
            raise InputError(f"replicate index must be in [0, {self.n_replicates}), got {i}")
        return i

    def qrels(self, i: int) -> pd.DataFrame:
        """Replicate ``i`` (0-based column) as a ``qid, docno, label`` frame without its unjudged rows.

        Labels are integers when they are all integral (as ``pt.Experiment`` and pytrec_eval need).
        """
        col = self.labels[:, self._column(i)]
        keep = ~np.isnan(col)
        out = self.table.frame.loc[keep, ["qid", "docno"]].reset_index(drop=True)
        out["label"] = _label_column(col[keep])
        return out

    def __iter__(self) -> Iterator[pd.DataFrame]:
        for i in range(self.n_replicates):
            yield self.qrels(i)

    def file_names(self) -> list[str]:
        """``replicate-0001.qrels`` ... (numbered ``start + 1`` .. ``start + n``, at least 4 digits)."""
        width = max(4, len(str(self.start + self.n_replicates)))
        return [f"replicate-{self.start + i + 1:0{width}d}.qrels" for i in range(self.n_replicates)]

    def write_trec(self, directory: Any, progress: bool = False) -> list[Path]:
        """Write each replicate as a TREC qrels file ``DIR/replicate-0001.qrels`` ... (``qid 0 docno label``).

        Unjudged rows are left out; integral labels are written as integers.  The bytes depend only
        on the labels, so the same seed gives byte-identical files on any machine.  Each file is
        written under a temporary name and renamed into place, so none is ever seen half written.
        """
        directory = Path(directory)
        if directory.exists() and not directory.is_dir():
            raise InputError(f"{directory}: exists and is not a directory")
        directory.mkdir(parents=True, exist_ok=True)
        L = self.labels
        judged = ~np.isnan(L)
        values = np.unique(L[judged])
        integral = _is_integral(values)
        text = [str(int(v)) if integral else repr(float(v)) for v in values]
        prefix = (self.table.frame["qid"].astype(str) + " 0 " + self.table.frame["docno"].astype(str) + " ").to_numpy()
        # every possible line, per label value: a replicate is then a gather and one join
        lines = np.array([[f"{p}{t}\n" for p in prefix] for t in text], dtype=object).reshape(len(text), len(prefix))
        codes = np.searchsorted(values, np.where(judged, L, values[0] if len(values) else 0.0))
        paths = []
        names = self.file_names()
        bar = progress_bar(total=self.n_replicates, desc="writing replicates", unit="replicate", enabled=progress)
        for i in range(self.n_replicates):
            keep = np.flatnonzero(judged[:, i])
            data = "".join(lines[codes[keep, i], keep]).encode("utf-8")
            paths.append(atomic_write(directory / names[i], data))
            bar.update(1)
        bar.close()
        return paths

    def realised_rates(self, rel: float = 1, by_topic: bool = False) -> pd.DataFrame:
        """The rates each replicate actually realised against the original judgments.

        ``tpr`` = share of originally relevant judgments (``label >= rel``) still relevant,
        ``fpr`` = share of originally non-relevant judgments now relevant, over the rows judged
        in both (item 18: nominal rates hold only in expectation).  Also
        ``n_judged``, ``n_relevant`` (in the replicate) and ``n_relevant_original``.  One row per
        replicate, or per (replicate, qid) with ``by_topic=True``.
        """
        rel = check_number("rel", rel)
        base = self.table.labels
        L = self.labels
        both = ~np.isnan(base)[:, None] & ~np.isnan(L)
        with np.errstate(invalid="ignore"):
            orig_rel = (base >= rel)[:, None] & both
            orig_non = (base < rel)[:, None] & both
            new_rel = L >= rel
        cols = {"tp": orig_rel & new_rel, "pos": orig_rel, "fp": orig_non & new_rel, "neg": orig_non,
                "n_judged": ~np.isnan(L), "n_relevant": new_rel,
                "n_relevant_original": np.broadcast_to(((base >= rel) & ~np.isnan(base))[:, None], L.shape)}
        if by_topic:
            rows = Rows(self.table.with_labels(np.zeros(len(self.table))))
            sums = {k: rows.topic_sum(v) for k, v in cols.items()}  # (T, n)
            qid = np.repeat(np.asarray(self.table.topics, dtype=object), self.n_replicates)
            rep = np.tile(np.arange(self.start, self.start + self.n_replicates), len(self.table.topics))
            flat = {k: v.ravel() for k, v in sums.items()}
            head = {"replicate": rep, "qid": qid}
        else:
            flat = {k: v.sum(axis=0) for k, v in cols.items()}
            head = {"replicate": np.arange(self.start, self.start + self.n_replicates)}
        has_base = ~np.isnan(base)
        with np.errstate(invalid="ignore"):
            n_rel, n_non = int((base[has_base] >= rel).sum()), int((base[has_base] < rel).sum())
        if has_base.any() and (n_rel == 0 or n_non == 0):
            which, rate = ("non-relevant", "fpr") if n_non == 0 else ("relevant", "tpr")
            _warn(f"the original judgments hold no {which} judgment (rel={rel:g}): the realised {rate} has no "
                  f"denominator and is NaN in every row", stacklevel=2)
        with np.errstate(invalid="ignore", divide="ignore"):
            out = pd.DataFrame({**head, "tpr": flat["tp"] / flat["pos"], "fpr": flat["fp"] / flat["neg"],
                                "n_judged": flat["n_judged"].astype(np.int64),
                                "n_relevant": flat["n_relevant"].astype(np.int64),
                                "n_relevant_original": flat["n_relevant_original"].astype(np.int64)})
        return out
