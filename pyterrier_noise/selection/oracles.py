"""Oracles of the selection loop: who labels the proposed document (Moffat, Webber & Zobel 2007,
Sec. 3-5).

``oracle.judge(qid, docno) -> label`` or ``None`` ("cannot judge, bypass it"):

* :class:`QrelsOracle` -- labels from qrels; a document without a judgment is non-relevant
  (``missing="nonrel"``, the paper's default: it uses up budget) or bypassed (``missing="bypass"``,
  the paper's Table 2: it stays unjudged and is removed from the candidates);
* :class:`NoisyOracle` -- another oracle seen through a judge-error model of
  :mod:`pyterrier_noise.judges` (``RandomFlips``, ``ConfusionJudge``, or any model with
  ``sample_labels``): one replicate is drawn over the oracle's whole table with the judges' seeded
  stream, so its answers are exactly ``model.sample_labels(oracle.table, 1, seed=seed)``, whatever
  the order of the questions;
* :class:`CallableOracle` -- any function ``fn(qid, docno)``, e.g. a person behind a web form.
"""
from __future__ import annotations

import math
import numbers
from collections.abc import Callable, Sequence
from typing import TYPE_CHECKING, Any, Optional

import numpy as np

from .._validation import InputError, check_choice, check_confusion, check_rate, check_seed
from .._vocab import MISSING, Missing

if TYPE_CHECKING:  # pragma: no cover
    import pandas as pd

__all__ = ["Oracle", "QrelsOracle", "NoisyOracle", "CallableOracle", "QuitJudging"]

Label = Optional[float]


class QuitJudging(Exception):
    """Raised by an oracle to end :meth:`JudgingSession.run` cleanly (every judgment so far is saved)."""


def check_label(value: Any, what: str) -> float:
    """A label must be a finite real number (bool and numpy numbers are accepted)."""
    if isinstance(value, (bool, np.bool_)):
        value = int(value)
    if not isinstance(value, numbers.Real):
        raise InputError(f"{what}: expected a finite number as the label, got {value!r}")
    v = float(value)
    if not math.isfinite(v):
        raise InputError(f"{what}: expected a finite number as the label, got {value!r}")
    return v


# ---------------------------------------------------------------------------------------------
# oracles

class Oracle:
    """Base class of the oracles of the selection loop (Moffat et al. 2007, Sec. 3).

    ``judge(qid, docno, **context)`` returns the label (a float) or ``None`` when the document cannot
    be judged, in which case the session bypasses it.  ``context`` carries
    ``weight``, ``n_judged`` and ``budget`` for oracles that show them (:class:`TerminalOracle`);
    the others ignore it.  An oracle may raise :class:`QuitJudging` to end the session cleanly.
    """

    def judge(self, qid: str, docno: str, **context: Any) -> Label:  # pragma: no cover - abstract
        raise NotImplementedError

    def __call__(self, qid: str, docno: str, **context: Any) -> Label:
        return self.judge(qid, docno, **context)

    def identity(self) -> dict[str, Any] | None:
        """What a judging session stores to recognise this oracle when it is resumed (``None``: a
        person or a function, not checked)."""
        return None


class QrelsOracle(Oracle):
    """Labels from qrels: the simulation oracle of Moffat et al. 2007, Sec. 5.

    Args:
        qrels: anything :func:`pyterrier_noise.read_qrels` reads (frame ``qid, docno, label``, TREC
            file, ir_datasets dataset...).
        missing: what a document without a judgment is: ``"nonrel"`` (label ``nonrel_label``; it
            uses up budget, as in the paper's Figures 1-3 and Tables 3-5) or ``"bypass"`` (``None``:
            the session skips it without counting it, as in the paper's Table 2).
        nonrel_label: the label given to missing documents under ``missing="nonrel"``.

    ``n_asked`` and ``n_missing`` count the questions and the documents that had no judgment.
    """

    def __init__(self, qrels: Any, missing: Missing = "nonrel", nonrel_label: float = 0.0) -> None:
        from ..io import read_qrels
        check_choice("missing", missing, MISSING)
        q = read_qrels(qrels)
        self.qrels = q
        self.missing = missing
        self.nonrel_label = check_label(nonrel_label, "argument 'nonrel_label'")
        # one hash lookup per question; the table is built once, at C speed
        self._labels: dict[tuple[str, str], float] = dict(
            zip(zip(q["qid"].tolist(), q["docno"].tolist()), q["label"].astype(float).tolist()))
        self.n_asked = 0
        self.n_missing = 0

    def judge(self, qid: str, docno: str, **context: Any) -> Label:
        self.n_asked += 1
        label = self._labels.get((str(qid), str(docno)))
        if label is None:
            self.n_missing += 1
            return None if self.missing == "bypass" else self.nonrel_label
        return label

    def __len__(self) -> int:
        return len(self._labels)

    def identity(self) -> dict[str, Any]:
        from .store import fingerprint_qrels
        if getattr(self, "_fingerprint", None) is None:
            self._fingerprint = fingerprint_qrels(self.qrels)
        return {"kind": "qrels", "qrels": self._fingerprint, "missing": self.missing,
                "nonrel_label": self.nonrel_label}

    def __repr__(self) -> str:
        return f"QrelsOracle({len(self._labels)} judgments, missing={self.missing!r})"


class NoisyOracle(Oracle):
    """Another oracle seen through a judge-error model of :mod:`pyterrier_noise.judges` (an
    extension of Moffat, Webber & Zobel 2007, whose oracle is always right).

    The model is binary flips -- a truly relevant document (label >= ``rel``) is judged relevant
    with probability ``tpr`` and a non-relevant one with probability ``fpr``
    (:class:`~pyterrier_noise.judges.RandomFlips`, the random qrel flips of Rashidi, Zobel & Moffat
    2023) --, a confusion matrix over graded labels, ``confusion[i, j] =
    P(observed label j | true label i)`` (:class:`~pyterrier_noise.judges.ConfusionJudge`
    Sec. 1), or any judges model with ``sample_labels`` given as ``model``.

    One random scheme: the oracle draws *one replicate over its whole table* with the judges'
    seeded stream and looks the answers up, so a document's noisy label is exactly
    ``model.sample_labels(oracle.table, 1, seed=oracle.seed)`` at its row, whatever the order of
    the questions -- replaying or resuming a session reproduces its labels.  The table
    (:attr:`table`) holds the documents the oracle can be asked about, with their true labels:

    * over a :class:`QrelsOracle`: the qrels, and -- when its ``missing="nonrel"`` makes unjudged
      documents non-relevant -- the documents bound with :meth:`bind` (a
      :class:`~pyterrier_noise.selection.JudgingSession`, :meth:`JudgmentSelector.judge` and
      :func:`simulate` bind every document the runs retrieved) at ``nonrel_label``;
    * over any other oracle: ``documents`` and the bound documents, whose true labels are asked
      of the wrapped oracle once, when the first question is asked.

    The table is fixed at the first question; binding other documents afterwards is refused (it
    would change the draws).  A ``None`` from the wrapped oracle (bypass) passes through.

    Args:
        oracle: the oracle giving the true labels.
        model: a judges model (``RandomFlips``, ``ConfusionJudge`` or any with ``sample_labels``),
            or an object with ``tpr``/``fpr`` or a ``confusion`` matrix, instead of the keywords.
        tpr, fpr: flip rates in [0, 1]; a relevant document judged non-relevant gets label
            ``off_label`` (0), a non-relevant one judged relevant gets ``on_label`` (default ``rel``).
        confusion: a k x k row-stochastic matrix (array or frame indexed by the labels).
        labels: the k labels of the matrix's rows and columns (taken from the frame's index).
        rel: binary relevance threshold for the flips (default 1).
        seed: non-negative integer (default: the model's seed, else 0).
        documents: ``(qid, docno)`` pairs (a frame with ``qid`` and ``docno``, or a list of pairs)
            the oracle may be asked about, for a wrapped oracle that is not a :class:`QrelsOracle`.

    Example: ``NoisyOracle(QrelsOracle(qrels), RandomFlips(tpr=0.93, fpr=0.07, seed=1))`` is the
    "smart neutral" judge of Rashidi, Zobel & Moffat (2023) answering from ``qrels``.
    """

    def __init__(self, oracle: Oracle | Callable, model: Any = None, *, tpr: float | None = None,
                 fpr: float | None = None, confusion: Any = None, labels: Sequence[float] | None = None,
                 rel: float | None = None, on_label: float | None = None, off_label: float | None = None,
                 seed: int | None = None, documents: Any = None) -> None:
        self.oracle = as_oracle(oracle)
        given_model = None
        if model is not None:
            if tpr is not None or fpr is not None or confusion is not None:
                raise InputError("NoisyOracle: give either a model or tpr/fpr or confusion, not several")
            found = _from_model(model)
            given_model = found["model"]
            tpr, fpr, confusion = found["tpr"], found["fpr"], found["confusion"]
            labels = found["labels"] if labels is None else labels
            rel = found["rel"] if rel is None else rel
            on_label = found["on_label"] if on_label is None else on_label
            off_label = found["off_label"] if off_label is None else off_label
            seed = found["seed"] if seed is None else seed
        if given_model is None:
            if confusion is not None and (tpr is not None or fpr is not None):
                raise InputError("NoisyOracle: give either tpr and fpr or a confusion matrix, not both")
            if confusion is None and (tpr is None or fpr is None):
                raise InputError("NoisyOracle: give both 'tpr' and 'fpr' (flip rates) or a 'confusion' matrix")
        seed = 0 if seed is None else seed
        self.seed = check_seed(seed, allow_none=False)
        self.rel = check_label(1 if rel is None else rel, "argument 'rel'")
        self.on_label = self.rel if on_label is None else check_label(on_label, "argument 'on_label'")
        self.off_label = check_label(0 if off_label is None else off_label, "argument 'off_label'")
        if given_model is None and confusion is None and (
                self.rel <= 0 or not 0 <= self.off_label < self.rel or self.on_label < self.rel):
            raise InputError(f"NoisyOracle: expected rel > 0, 0 <= off_label < rel <= on_label (a flip crosses the "
                             f"relevance threshold), got rel={self.rel:g}, off_label={self.off_label:g}, "
                             f"on_label={self.on_label:g}")
        self.tpr = self.fpr = None
        self.confusion = self.labels = None
        if confusion is None and tpr is not None:
            self.tpr = check_rate("tpr", tpr)
            self.fpr = check_rate("fpr", fpr)
        elif confusion is not None:
            labels, self.confusion = check_confusion("confusion", confusion, labels)
            self.labels = np.asarray(labels, dtype=np.float64)
        if given_model is not None and getattr(given_model, "matrix", None) is not None:   # a ConfusionJudge
            self.labels = np.asarray(given_model.labels, dtype=np.float64)
            self.confusion = np.asarray(given_model.matrix, dtype=np.float64)
        if given_model is None:
            from ..judges import ConfusionJudge, RandomFlips   # here: the judges load pyterrier
            if self.confusion is None:
                given_model = RandomFlips(self.tpr, self.fpr, rel=self.rel, off_label=self.off_label,
                                          on_label=self.on_label, seed=self.seed)
            else:
                given_model = ConfusionJudge(self.confusion, labels=self.labels, seed=self.seed)
        self.model = given_model
        self._docs: list[pd.DataFrame] = []
        self._bound: list[Any] = []
        self._table: Any = None
        self._noisy: dict[tuple[str, str], float] | None = None
        if documents is not None:
            self._docs.append(_pairs(documents, "documents"))

    # -- the table and its replicate ---------------------------------------------------------

    def _qrels_source(self) -> Any:
        return self.oracle if isinstance(self.oracle, QrelsOracle) else None

    def bind(self, documents: Any) -> "NoisyOracle":
        """Add the documents the oracle may be asked about (``qid, docno`` pairs: a frame or a list)
        before the first question; returns the oracle.  A no-op when they add nothing to the table
        (e.g. over a :class:`QrelsOracle` with ``missing="bypass"``, whose unjudged documents are
        bypassed); refused once questions were answered, since the table would change the draws."""
        import pandas as pd
        if any(documents is b for b in self._bound):
            return self
        src = self._qrels_source()
        if src is not None and src.missing == "bypass":
            self._bound.append(documents)
            return self
        pairs = _pairs(documents, "documents")
        if self._noisy is not None:
            known = pd.MultiIndex.from_arrays([self._table.frame["qid"].to_numpy(dtype=object),
                                               self._table.frame["docno"].to_numpy(dtype=object)])
            new = ~pd.MultiIndex.from_frame(pairs).isin(known)
            if new.any():
                raise InputError(f"NoisyOracle: it has answered questions over a table of {len(known)} documents; "
                                 f"binding {int(new.sum())} more would change its draws -- bind the documents "
                                 f"before the first question, or make a new NoisyOracle")
        else:
            self._docs.append(pairs)
        self._bound.append(documents)
        return self

    @property
    def table(self) -> Any:
        """The :class:`~pyterrier_noise.engine.JudgmentTable` of true labels the replicate is drawn
        over (built at the first question, or here)."""
        self._draw()
        return self._table

    def _true_frame(self) -> pd.DataFrame:
        import pandas as pd
        extra = (pd.concat(self._docs, ignore_index=True).drop_duplicates(ignore_index=True) if self._docs
                 else pd.DataFrame({"qid": pd.Series([], dtype=object), "docno": pd.Series([], dtype=object)}))
        src = self._qrels_source()
        if src is not None:
            q = src.qrels[["qid", "docno", "label"]]
            if src.missing == "nonrel" and len(extra):
                keys = pd.MultiIndex.from_frame(q[["qid", "docno"]])
                extra = extra[~pd.MultiIndex.from_frame(extra).isin(keys)]
                q = pd.concat([q, extra.assign(label=src.nonrel_label)], ignore_index=True)
            return q
        # another oracle: ask it once about every document of the table (None: unjudged)
        truth = [self.oracle.judge(q, d) for q, d in zip(extra["qid"].tolist(), extra["docno"].tolist())]
        lab = np.array([np.nan if y is None else check_label(y, f"wrapped oracle, qid {q!r} docno {d!r}")
                        for y, q, d in zip(truth, extra["qid"], extra["docno"])], dtype=np.float64)
        return extra.assign(label=lab)[~np.isnan(lab)].reset_index(drop=True)

    def _draw(self) -> None:
        if self._noisy is not None:
            return
        from ..engine import JudgmentTable
        frame = self._true_frame()
        if self.confusion is not None and len(frame):
            known = np.isin(frame["label"].to_numpy(dtype=np.float64), self.labels)
            if not known.all():
                i = int(np.flatnonzero(~known)[0])
                raise InputError(f"NoisyOracle: qid {frame['qid'].iloc[i]!r} docno {frame['docno'].iloc[i]!r} has "
                                 f"label {float(frame['label'].iloc[i]):g}, which is not one of the confusion matrix "
                                 f"labels {self.labels.tolist()}")
        table = JudgmentTable.from_qrels(frame)
        noisy = self.model.sample_labels(table, 1, seed=self.seed)[:, 0]
        f = table.frame
        self._table = table
        self._noisy = dict(zip(zip(f["qid"].tolist(), f["docno"].tolist()), noisy.tolist()))

    def judge(self, qid: str, docno: str, **context: Any) -> Label:
        true = self.oracle.judge(qid, docno, **context)
        if true is None:
            return None
        check_label(true, f"wrapped oracle, qid {qid!r} docno {docno!r}")
        self._draw()
        y = self._noisy.get((str(qid), str(docno)))
        if y is None:
            raise InputError(f"NoisyOracle: qid {qid!r} docno {docno!r} is not in its table of {len(self._noisy)} "
                             f"documents (the qrels, documents=, or those bound with bind()); its noisy label "
                             f"is drawn over that table")
        return None if y != y else float(y)

    def identity(self) -> dict[str, Any] | None:
        inner = self.oracle.identity()
        return None if inner is None else {"kind": "noisy", "oracle": inner, "model": repr(self.model),
                                           "seed": self.seed}

    def __repr__(self) -> str:
        what = (f"tpr={self.tpr}, fpr={self.fpr}" if self.tpr is not None
                else f"confusion over labels {self.labels.tolist()}" if self.confusion is not None
                else repr(self.model))
        return f"NoisyOracle({self.oracle!r}, {what}, seed={self.seed})"


def _pairs(documents: Any, what: str) -> pd.DataFrame:
    """``(qid, docno)`` pairs as a two-column frame of strings."""
    import pandas as pd
    if hasattr(documents, "frame") and isinstance(documents.frame, pd.DataFrame):   # a JudgmentTable
        documents = documents.frame
    if isinstance(documents, pd.DataFrame):
        if not {"qid", "docno"} <= set(documents.columns):
            raise InputError(f"argument {what!r}: expected columns qid and docno, got {list(documents.columns)}")
        return pd.DataFrame({"qid": documents["qid"].astype(str).to_numpy(dtype=object),
                             "docno": documents["docno"].astype(str).to_numpy(dtype=object)})
    try:
        pairs = [(str(q), str(d)) for q, d in documents]
    except (TypeError, ValueError):
        raise InputError(f"argument {what!r}: expected a frame with qid and docno or (qid, docno) pairs, "
                         f"got {type(documents).__name__}") from None
    return pd.DataFrame(pairs, columns=["qid", "docno"], dtype=object)

def _from_model(model: Any) -> dict[str, Any]:
    """What a ``model`` argument gives: a judges model with ``sample_labels`` (used as it is; its
    seed must be fixed), or the error rates of any object with ``tpr``/``fpr`` or a
    ``confusion``/``matrix`` attribute."""
    found = {"model": None, "tpr": None, "fpr": None, "confusion": None, "labels": getattr(model, "labels", None),
             "rel": getattr(model, "rel", None), "on_label": getattr(model, "on_label", None),
             "off_label": getattr(model, "off_label", None), "seed": None}
    name = type(model).__name__
    if callable(getattr(model, "sample_labels", None)):
        if getattr(model, "sample_matrix", False):
            raise InputError("NoisyOracle: ConfusionJudge(sample_matrix=True) redraws its matrix per replicate; "
                             "a session needs one judge -- use sample_matrix=False")
        if getattr(model, "seed", None) is None:
            raise InputError(f"NoisyOracle: the {name} model has seed=None; a session's judge needs a fixed seed "
                             f"so that replaying it gives the same labels (pass seed=...)")
        found.update(model=model, seed=model.seed, labels=None)
        for attr in ("tpr", "fpr"):
            found[attr] = getattr(model, attr, None)
        return found
    if hasattr(model, "tpr") and hasattr(model, "fpr"):
        found.update(tpr=model.tpr, fpr=model.fpr)
        return found
    for attr in ("confusion", "matrix"):
        m = getattr(model, attr, None)
        if m is not None:
            found.update(confusion=m)
            return found
    raise InputError(f"NoisyOracle: cannot read error rates from {name}; expected a judges model (with "
                     f"sample_labels), a model with 'tpr' and 'fpr', or a 'confusion' matrix (and 'labels')")

class CallableOracle(Oracle):
    """Any function ``fn(qid, docno) -> label or None`` as an oracle.

    For a person in the loop behind another interface.  ``fn`` may raise :class:`QuitJudging`; a
    returned label is checked (a finite number, or ``None`` to bypass the document).
    """

    def __init__(self, fn: Callable[[str, str], Label]) -> None:
        if not callable(fn):
            raise InputError(f"CallableOracle: expected a function fn(qid, docno), got {fn!r}")
        self.fn = fn

    def judge(self, qid: str, docno: str, **context: Any) -> Label:
        value = self.fn(qid, docno)
        if value is None:
            return None
        return check_label(value, f"oracle {getattr(self.fn, '__name__', self.fn)!r} for qid {qid!r} "
                                   f"docno {docno!r}")

    def __repr__(self) -> str:
        return f"CallableOracle({getattr(self.fn, '__name__', self.fn)!r})"


def as_oracle(oracle: Any) -> Oracle:
    if isinstance(oracle, Oracle):
        return oracle
    if callable(oracle):
        return CallableOracle(oracle)
    raise InputError(f"expected an oracle (QrelsOracle, NoisyOracle, ...) or a function fn(qid, docno), "
                     f"got {oracle!r}")


def format_label(v: float) -> str:
    return str(int(v)) if float(v).is_integer() else repr(float(v))


def oracle_diff(stored: dict[str, Any], now: dict[str, Any], prefix: str = "") -> str:
    """What differs between two oracle identities, in words."""
    names = {"qrels": "the qrels (fingerprint)", "missing": "the missing policy", "nonrel_label": "the label of "
             "unjudged documents", "model": "the noise model", "seed": "the noise seed", "kind": "the kind of oracle"}
    out = []
    for key in sorted(set(stored) | set(now)):
        a, b = stored.get(key), now.get(key)
        if a == b:
            continue
        if isinstance(a, dict) and isinstance(b, dict):
            out.append(oracle_diff(a, b, prefix + "the underlying oracle's "))
            continue
        if key == "qrels":
            a, b = (str(x)[:12] + "..." if x else x for x in (a, b))
        out.append(f"{prefix}{names.get(key, key)} was {a!r}, now {b!r}")
    return "; ".join(out)
