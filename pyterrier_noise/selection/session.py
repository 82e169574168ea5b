"""Oracles and durable judging sessions for adaptive judgment selection.

Moffat, Webber & Zobel (SIGIR 2007), "Strategic system comparisons via targeted relevance
judgments", Sec. 3-4 (seed note 002, Sec. 2.7 pseudo-code, Sec. 4 features 5-6, Sec. 5 A6): a
selector (pooling, Methods A, B, C; :class:`pyterrier_noise.selection.JudgmentSelector`) proposes
the unjudged ``(qid, docno)`` with the highest weight, an *oracle* labels it, the label is recorded
and the weights are updated.  This module supplies the oracles and makes the loop durable.

Oracles (``oracle.judge(qid, docno) -> label`` or ``None`` for "cannot judge, bypass it"):

* :class:`QrelsOracle` -- labels from qrels; a document without a judgment is non-relevant
  (``missing="nonrel"``, the paper's default: it uses up budget) or bypassed (``missing="bypass"``,
  the paper's Table 2: it stays unjudged and is removed from the candidates);
* :class:`NoisyOracle` -- another oracle seen through a judge-error model: binary flips with a true
  and a false positive rate (random qrel flips, Rashidi, Zobel & Moffat 2023; seed000 Sec. 2) or a confusion
  matrix over graded labels (rows = true label, columns = observed; seed001 Sec. 1).  The error is
  drawn from a generator seeded by ``(seed, qid, docno)``, so a document always gets the same noisy
  label, whatever the order of the questions -- replaying a session replays its labels;
* :class:`CallableOracle` -- any function ``fn(qid, docno)``, e.g. a person behind a web form;
* :class:`TerminalOracle` -- a person at the terminal: shows the topic, the document and its text,
  accepts a label from a given set, ``s`` to skip (bypass), ``q`` to quit cleanly.

:class:`JudgingSession` keeps a selector in a SQLite file (standard library ``sqlite3``, WAL
journal, ``synchronous=FULL``).  The file records the configuration, the runs (and a SHA-256
fingerprint of them), the initial qrels, every document served to the judge, and every judgment
and bypass in order; each is committed in its own transaction before the next document is
served.  Reopening the file replays the records into a fresh selector, which restores exactly the
same state and queue: a session killed at any moment (even with SIGKILL) loses no recorded
judgment and, resumed, continues with exactly the documents an uninterrupted session would have
judged.  One process at a time may hold a session (SQLite's exclusive lock; a second opener gets
:class:`SessionLockedError`).

Command line: ``pyterrier-noise judge --session FILE.sqlite --method C RUN...`` (see
:func:`register_cli`).
"""
from __future__ import annotations

import builtins
import hashlib
import io
import json
import math
import numbers
import os
import sqlite3
import sys
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from datetime import datetime, timezone
from pathlib import Path
from typing import Any, NamedTuple, Optional, TextIO, Union

import numpy as np
import pandas as pd

from .._validation import InputError, check_probability
from ..io.trec import read_qrels, read_runs, write_trec_qrels
from .selector import StopRule

__all__ = [
    "Oracle", "QrelsOracle", "NoisyOracle", "CallableOracle", "TerminalOracle", "QuitJudging",
    "JudgingSession", "JudgingEvent", "RunReport", "SessionError", "SessionLockedError",
    "fingerprint_runs", "fingerprint_qrels", "read_topics_file", "read_docs_file", 
]

PathLike = Union[str, os.PathLike]
Label = Optional[float]


class SessionError(InputError):
    """A judging session cannot do what was asked (wrong file, other runs, a document not proposed...)."""


class SessionLockedError(SessionError):
    """Another process (or another open :class:`JudgingSession`) holds the session file."""


class QuitJudging(Exception):
    """Raised by an oracle to end :meth:`JudgingSession.run` cleanly (every judgment so far is saved)."""


def _check_label(value: Any, what: str) -> float:
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
    """Base class of the oracles of the selection loop (Moffat et al. 2007, Sec. 3; seed002 Sec. 2.7).

    ``judge(qid, docno, **context)`` returns the label (a float) or ``None`` when the document cannot
    be judged, in which case the session bypasses it (seed002 Sec. 5 A6).  ``context`` carries
    ``weight``, ``n_judged`` and ``budget`` for oracles that show them (:class:`TerminalOracle`);
    the others ignore it.  An oracle may raise :class:`QuitJudging` to end the session cleanly.
    """

    def judge(self, qid: str, docno: str, **context: Any) -> Label:  # pragma: no cover - abstract
        raise NotImplementedError

    def __call__(self, qid: str, docno: str, **context: Any) -> Label:
        return self.judge(qid, docno, **context)


class QrelsOracle(Oracle):
    """Labels from qrels: the simulation oracle of Moffat et al. 2007, Sec. 5 (seed002 Sec. 3.2).

    Args:
        qrels: anything :func:`pyterrier_noise.read_qrels` reads (frame ``qid, docno, label``, TREC
            file, ir_datasets dataset...).
        missing: what a document without a judgment is: ``"nonrel"`` (label ``nonrel_label``; it
            uses up budget, as in the paper's Figures 1-3 and Tables 3-5) or ``"bypass"`` (``None``:
            the session skips it without counting it, as in the paper's Table 2; seed002 Sec. 5 A6).
        nonrel_label: the label given to missing documents under ``missing="nonrel"``.

    ``n_asked`` and ``n_missing`` count the questions and the documents that had no judgment.
    """

    def __init__(self, qrels: Any, missing: str = "nonrel", nonrel_label: float = 0.0) -> None:
        if missing not in ("nonrel", "bypass"):
            raise InputError(f"argument 'missing': expected 'nonrel' or 'bypass', got {missing!r}")
        q = read_qrels(qrels)
        self.missing = missing
        self.nonrel_label = _check_label(nonrel_label, "argument 'nonrel_label'")
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

    def __repr__(self) -> str:
        return f"QrelsOracle({len(self._labels)} judgments, missing={self.missing!r})"


def _key_uniform(seed: int, qid: str, docno: str) -> float:
    """A uniform draw fixed by ``(seed, qid, docno)``: the key is hashed into a seeded generator.

    Hand-written because the noise must not depend on the order of the questions (a replayed or
    resumed session asks them again, maybe in another process); numpy seeds from the hash words.
    """
    digest = hashlib.sha256(f"{qid}\x1f{docno}".encode("utf-8")).digest()
    words = np.frombuffer(digest[:16], dtype="<u4").tolist()
    return float(np.random.default_rng(np.random.SeedSequence([seed, *words])).random())


class NoisyOracle(Oracle):
    """Another oracle seen through a judge-error model (seed002 Sec. 4 feature 6, an extension).

    Either binary flips -- a truly relevant document (label >= ``rel``) is judged relevant with
    probability ``tpr`` and a non-relevant one with probability ``fpr`` (random qrel flips with the
    TPR/FPR of Rashidi, Zobel & Moffat 2023; seed000 Sec. 2.1) -- or a confusion matrix over graded labels,
    ``confusion[i, j] = P(observed label j | true label i)`` (rows = true, columns = observed,
    row-stochastic; seed001 Sec. 1), or a model from :mod:`pyterrier_noise.perturbation` that
    carries one of these (``tpr``/``fpr`` attributes, or a confusion matrix and its labels).

    The error for a document is drawn from a generator seeded by ``(seed, qid, docno)`` (one
    uniform per document, compared with the cumulative row of the error model), so the same
    document always gets the same noisy label: the judge is consistent, and replaying or resuming
    a session reproduces its labels.  A ``None`` from the wrapped oracle (bypass) passes through.

    Args:
        oracle: the oracle giving the true labels.
        model: a perturbation model (``RandomFlips(tpr, fpr)`` or ``ConfusionJudge``), instead of the
            keyword arguments below.
        tpr, fpr: flip rates in [0, 1]; a relevant document judged non-relevant gets label
            ``off_label`` (0), a non-relevant one judged relevant gets ``on_label`` (default ``rel``).
        confusion: a k x k row-stochastic matrix (array or frame indexed by the labels).
        labels: the k labels of the matrix's rows and columns (taken from the frame's index).
        rel: binary relevance threshold for the flips (default 1).
        seed: non-negative integer (default: the model's seed, else 0).

    Example: ``NoisyOracle(QrelsOracle(qrels), RandomFlips(tpr=0.93, fpr=0.07, seed=1))`` is the
    "smart neutral" judge of seed000 Sec. 2.1 answering from ``qrels``.
    """

    def __init__(self, oracle: Oracle | Callable, model: Any = None, *, tpr: float | None = None,
                 fpr: float | None = None, confusion: Any = None, labels: Sequence[float] | None = None,
                 rel: float | None = None, on_label: float | None = None, off_label: float | None = None,
                 seed: int | None = None) -> None:
        self.oracle = _as_oracle(oracle)
        if model is not None:
            if tpr is not None or fpr is not None or confusion is not None:
                raise InputError("NoisyOracle: give either a model or tpr/fpr or confusion, not several")
            found = _from_model(model)
            tpr, fpr, confusion = found["tpr"], found["fpr"], found["confusion"]
            labels = found["labels"] if labels is None else labels
            rel = found["rel"] if rel is None else rel
            on_label = found["on_label"] if on_label is None else on_label
            off_label = found["off_label"] if off_label is None else off_label
            seed = found["seed"] if seed is None else seed
        if confusion is not None and (tpr is not None or fpr is not None):
            raise InputError("NoisyOracle: give either tpr and fpr or a confusion matrix, not both")
        if confusion is None and (tpr is None or fpr is None):
            raise InputError("NoisyOracle: give both 'tpr' and 'fpr' (flip rates) or a 'confusion' matrix")
        seed = 0 if seed is None else seed
        if isinstance(seed, (bool, np.bool_)) or not isinstance(seed, numbers.Integral) or seed < 0:
            raise InputError(f"argument 'seed': expected a non-negative integer, got {seed!r}")
        self.seed = int(seed)
        self.rel = _check_label(1 if rel is None else rel, "argument 'rel'")
        self.on_label = self.rel if on_label is None else _check_label(on_label, "argument 'on_label'")
        self.off_label = _check_label(0 if off_label is None else off_label, "argument 'off_label'")
        if self.rel <= 0 or not 0 <= self.off_label < self.rel or self.on_label < self.rel:
            raise InputError(f"NoisyOracle: expected rel > 0, 0 <= off_label < rel <= on_label (a flip crosses the "
                             f"relevance threshold), got rel={self.rel:g}, off_label={self.off_label:g}, "
                             f"on_label={self.on_label:g}")
        self.tpr = self.fpr = None
        self.confusion = self.labels = None
        if confusion is None:
            self.tpr = _rate("tpr", tpr)
            self.fpr = _rate("fpr", fpr)
        else:
            self.labels, self.confusion = _confusion(confusion, labels)
            self._cum = np.cumsum(self.confusion, axis=1)
            self._row = {v: i for i, v in enumerate(self.labels.tolist())}

    def judge(self, qid: str, docno: str, **context: Any) -> Label:
        true = self.oracle.judge(qid, docno, **context)
        if true is None:
            return None
        true = _check_label(true, f"wrapped oracle, qid {qid!r} docno {docno!r}")
        u = _key_uniform(self.seed, str(qid), str(docno))
        if self.confusion is None:
            if true >= self.rel:
                return true if u < self.tpr else self.off_label
            return self.on_label if u < self.fpr else true
        row = self._row.get(true)
        if row is None:
            raise InputError(f"NoisyOracle: qid {qid!r} docno {docno!r} has label {true:g}, which is not "
                             f"one of the confusion matrix labels {self.labels.tolist()}")
        j = min(int(np.searchsorted(self._cum[row], u, side="right")), len(self.labels) - 1)
        return float(self.labels[j])

    def __repr__(self) -> str:
        what = (f"tpr={self.tpr}, fpr={self.fpr}" if self.confusion is None
                else f"confusion over labels {self.labels.tolist()}")
        return f"NoisyOracle({self.oracle!r}, {what}, seed={self.seed})"


def _rate(name: str, value: Any) -> float:
    if isinstance(value, (bool, np.bool_)) or not isinstance(value, numbers.Real) or not 0 <= float(value) <= 1:
        raise InputError(f"argument {name!r}: expected a probability in [0, 1], got {value!r}")
    return float(value)


def _confusion(confusion: Any, labels: Sequence[float] | None) -> tuple[np.ndarray, np.ndarray]:
    if isinstance(confusion, pd.DataFrame):
        if labels is None:
            labels = list(confusion.index)
            if [float(c) for c in confusion.columns] != [float(i) for i in labels]:
                raise InputError("argument 'confusion': the frame's columns must be the same labels as its "
                                 f"index (true labels = rows), got index {list(confusion.index)} and "
                                 f"columns {list(confusion.columns)}")
        confusion = confusion.to_numpy()
    try:
        m = np.asarray(confusion, dtype=np.float64)
    except (TypeError, ValueError):
        raise InputError(f"argument 'confusion': expected a square matrix of probabilities, got {confusion!r}") from None
    if m.ndim != 2 or m.shape[0] != m.shape[1] or m.shape[0] < 1:
        raise InputError(f"argument 'confusion': expected a square k x k matrix, got shape {m.shape}")
    if not np.isfinite(m).all() or (m < 0).any():
        i, j = np.argwhere(~(np.isfinite(m) & (m >= 0)))[0]
        raise InputError(f"argument 'confusion': row {i}, column {j}: expected a probability, got {m[i, j]!r}")
    sums = m.sum(axis=1)
    bad = np.flatnonzero(np.abs(sums - 1.0) > 1e-9)
    if bad.size:
        raise InputError(f"argument 'confusion': row {bad[0]} sums to {sums[bad[0]]!r}; every row (true label) "
                         f"must sum to 1 (rows = true labels, columns = observed labels)")
    if labels is None:
        labels = list(range(m.shape[0]))
    lab = np.array([_check_label(v, "argument 'labels'") for v in labels], dtype=np.float64)
    if lab.size != m.shape[0]:
        raise InputError(f"argument 'labels': the matrix is {m.shape[0]} x {m.shape[0]} but {lab.size} labels "
                         f"were given")
    if np.unique(lab).size != lab.size:
        raise InputError(f"argument 'labels': the labels must be distinct, got {lab.tolist()}")
    return lab, m


def _from_model(model: Any) -> dict[str, Any]:
    """The error rates of a :mod:`pyterrier_noise.perturbation` model (``RandomFlips``, ``ConfusionJudge``),
    or of any object with ``tpr``/``fpr`` or a ``confusion``/``matrix`` attribute."""
    found = {"tpr": None, "fpr": None, "confusion": None, "labels": getattr(model, "labels", None),
             "rel": getattr(model, "rel", None), "on_label": getattr(model, "on_label", None),
             "off_label": getattr(model, "off_label", None), "seed": None}
    name = type(model).__name__
    if type(model).__module__.startswith("pyterrier_noise.judges"):  # imported only when given one (it loads pyterrier)
        from ..judges import models as pm
        if isinstance(model, pm.RandomFlips):
            found.update(tpr=model.tpr, fpr=model.fpr)
        elif isinstance(model, pm.ConfusionJudge):
            if getattr(model, "sample_matrix", False):
                raise InputError("NoisyOracle: ConfusionJudge(sample_matrix=True) redraws its matrix per replicate; "
                                 "a session needs one judge -- use sample_matrix=False")
            found.update(confusion=model.matrix, labels=model.labels)
        else:
            raise InputError(f"NoisyOracle: {name} is not supported; it places errors using more than the document's "
                             f"own label (use RandomFlips or ConfusionJudge)")
        if model.seed is None:
            raise InputError(f"NoisyOracle: the {name} model has seed=None; a session's judge needs a fixed seed "
                             f"so that replaying it gives the same labels (pass seed=...)")
        found["seed"] = model.seed
        return found
    if hasattr(model, "tpr") and hasattr(model, "fpr"):
        found.update(tpr=model.tpr, fpr=model.fpr)
        return found
    for attr in ("confusion", "matrix"):
        m = getattr(model, attr, None)
        if m is not None:
            found.update(confusion=m)
            return found
    raise InputError(f"NoisyOracle: cannot read error rates from {name}; expected a model with 'tpr' and 'fpr' "
                     f"or a 'confusion' matrix (and 'labels')")


class CallableOracle(Oracle):
    """Any function ``fn(qid, docno) -> label or None`` as an oracle (seed002 Sec. 4 feature 6).

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
        return _check_label(value, f"oracle {getattr(self.fn, '__name__', self.fn)!r} for qid {qid!r} "
                                   f"docno {docno!r}")

    def __repr__(self) -> str:
        return f"CallableOracle({getattr(self.fn, '__name__', self.fn)!r})"


def _as_oracle(oracle: Any) -> Oracle:
    if isinstance(oracle, Oracle):
        return oracle
    if callable(oracle):
        return CallableOracle(oracle)
    raise InputError(f"expected an oracle (QrelsOracle, NoisyOracle, ...) or a function fn(qid, docno), "
                     f"got {oracle!r}")


def _fmt_label(v: float) -> str:
    return str(int(v)) if float(v).is_integer() else repr(float(v))


class TerminalOracle(Oracle):
    """A person at the terminal (seed002 Sec. 4 feature 6: the human in the selection loop).

    Shows the judgment number, the topic id and text, the docno, the selection weight and the
    document text, then reads a label.  Accepted answers: one of ``labels``, ``s`` (skip: the
    session bypasses the document), ``q`` (quit: :class:`QuitJudging`, every judgment so far is
    saved; end of input counts as quit).  Anything else is refused with a message and asked again.

    Args:
        labels: the allowed labels (numbers), e.g. ``(0, 1)`` or ``(0, 1, 2)``.
        topics: topic texts: a mapping ``qid -> text`` or a frame with ``qid`` and ``query``
            (PyTerrier's topics frame; ``title`` or ``text`` also work).
        text: the document text: a mapping ``docno -> text`` or a function ``fn(docno)``.
        max_chars: the document text is cut after this many characters.
        input_fn: reads an answer given a prompt (default: the built-in ``input``).
        output: where to write (default: ``sys.stdout``).
    """

    def __init__(self, labels: Sequence[float] = (0, 1), topics: Any = None,
                 text: Mapping[str, str] | Callable[[str], Optional[str]] | None = None, max_chars: int = 2000,
                 input_fn: Callable[[str], str] | None = None, output: TextIO | None = None) -> None:
        if isinstance(labels, (str, bytes)) or not isinstance(labels, Sequence) or len(labels) == 0:
            raise InputError(f"argument 'labels': expected a non-empty sequence of numbers, got {labels!r}")
        labs = [_check_label(v, "argument 'labels'") for v in labels]
        if len(set(labs)) != len(labs):
            raise InputError(f"argument 'labels': the labels must be distinct, got {list(labels)}")
        self.labels = labs
        self._answers = {_fmt_label(v): v for v in labs}
        self.topics = _topic_texts(topics)
        if text is not None and not (isinstance(text, Mapping) or callable(text)):
            raise InputError(f"argument 'text': expected a mapping docno -> text or a function fn(docno), got {text!r}")
        self.text = text
        if isinstance(max_chars, bool) or not isinstance(max_chars, numbers.Integral) or max_chars < 1:
            raise InputError(f"argument 'max_chars': expected a positive integer, got {max_chars!r}")
        self.max_chars = int(max_chars)
        self.input_fn = input_fn
        self.output = output

    def _parse(self, answer: str) -> tuple[str, Label]:
        a = answer.strip().lower()
        if a in ("s", "skip"):
            return "skip", None
        if a in ("q", "quit", "exit"):
            return "quit", None
        if a in self._answers:
            return "label", self._answers[a]
        try:
            v = float(a)
        except ValueError:
            return "bad", None
        return ("label", v) if v in self.labels else ("bad", None)

    def judge(self, qid: str, docno: str, weight: float | None = None, n_judged: int | None = None,
              budget: int | None = None, **context: Any) -> Label:
        out = self.output if self.output is not None else sys.stdout
        read = self.input_fn if self.input_fn is not None else builtins.input
        head = []
        if n_judged is not None:
            head.append(f"judgment {n_judged + 1}" + (f" of {budget}" if budget is not None else ""))
        head.append(f"topic {qid}")
        head.append(f"document {docno}")
        if weight is not None:
            head.append(f"weight {weight:.4g}")
        lines = ["", "-" * 72, " | ".join(head)]
        topic = self.topics.get(str(qid))
        if topic:
            lines.append(f"topic:    {topic}")
        body = self._document(str(docno))
        if body:
            body = body if len(body) <= self.max_chars else body[:self.max_chars] + " [...]"
            lines.append(f"document: {body}")
        out.write("\n".join(lines) + "\n")
        choices = "/".join(self._answers)
        prompt = f"label [{choices}], s = skip, q = quit > "
        while True:
            try:
                answer = read(prompt)
            except EOFError:
                out.write("\n")
                raise QuitJudging("end of input") from None
            kind, value = self._parse(answer)
            if kind == "label":
                return value
            if kind == "skip":
                return None
            if kind == "quit":
                raise QuitJudging("quit at the prompt")
            out.write(f"  {answer.strip()!r} is not an answer: type one of the labels "
                      f"{', '.join(self._answers)}, or s to skip this document, or q to quit\n")
        # unreachable

    def _document(self, docno: str) -> str | None:
        if self.text is None:
            return None
        t = self.text.get(docno) if isinstance(self.text, Mapping) else self.text(docno)
        return None if t is None else " ".join(str(t).split())

    def __repr__(self) -> str:
        return f"TerminalOracle(labels={self.labels})"


def _topic_texts(topics: Any) -> dict[str, str]:
    if topics is None:
        return {}
    if isinstance(topics, pd.DataFrame):
        col = next((c for c in ("query", "title", "text") if c in topics.columns), None)
        if "qid" not in topics.columns or col is None:
            raise InputError(f"argument 'topics': a topics frame needs columns 'qid' and 'query', found "
                             f"{list(topics.columns)}")
        return dict(zip(topics["qid"].astype(str), topics[col].astype(str)))
    if isinstance(topics, Mapping):
        return {str(k): str(v) for k, v in topics.items()}
    raise InputError(f"argument 'topics': expected a frame (qid, query) or a mapping qid -> text, got {topics!r}")


def read_topics_file(path: PathLike) -> pd.DataFrame:
    """Read topics for the judging prompt: TREC (``<top>``), TREC XML (``<topic>``) or one per line.

    One-per-line files hold ``qid<TAB>text`` or ``qid text`` (PyTerrier's ``singleline``).  Returns
    a ``qid, query`` frame.  The TREC formats are parsed by ``pyterrier.io.read_topics``.
    """
    p = Path(path)
    if not p.is_file():
        raise InputError(f"{p}: no such topics file")
    raw = _read_text(p)
    if "<top>" in raw or "<topic " in raw or "<topic>" in raw:
        import pyterrier as pt
        fmt = "trec" if "<top>" in raw else "trecxml"
        frame = pt.io.read_topics(str(p), format=fmt)
        return frame[["qid", "query"]].astype(str)
    rows = []
    for i, line in enumerate(raw.splitlines(), 1):
        if not line.strip():
            continue
        sep = "\t" if "\t" in line else " "
        qid, _, text = line.strip().partition(sep)
        if not text:
            raise InputError(f"{p} line {i}: expected 'qid<TAB>text' or 'qid text', got {line!r}")
        rows.append((qid, text.strip()))
    if not rows:
        raise InputError(f"{p}: the topics file is empty")
    return pd.DataFrame(rows, columns=["qid", "query"])


def read_docs_file(path: PathLike) -> dict[str, str]:
    """Read document texts for the judging prompt: TREC ``<DOC><DOCNO>...`` (plain or gzip) or TSV.

    TSV lines are ``docno<TAB>text``.  Returns ``{docno: text}`` (the whole file is held in memory).
    """
    import re
    p = Path(path)
    if not p.is_file():
        raise InputError(f"{p}: no such document file")
    raw = _read_text(p)
    if "<DOC>" in raw[:10000] or "<doc>" in raw[:10000]:
        docs = {}
        for m in re.finditer(r"<DOC>(.*?)</DOC>", raw, flags=re.S | re.I):
            body = m.group(1)
            d = re.search(r"<DOCNO>\s*(.*?)\s*</DOCNO>", body, flags=re.S | re.I)
            if d is None:
                continue
            text = re.sub(r"<[^>]+>", " ", body[:d.start()] + body[d.end():])
            docs[d.group(1)] = " ".join(text.split())
        if not docs:
            raise InputError(f"{p}: found no <DOC> with a <DOCNO>")
        return docs
    docs = {}
    for i, line in enumerate(raw.splitlines(), 1):
        if not line.strip():
            continue
        docno, tab, text = line.partition("\t")
        if not tab:
            raise InputError(f"{p} line {i}: expected 'docno<TAB>text', got {line[:80]!r}")
        docs[docno.strip()] = text
    return docs


def _read_text(p: Path) -> str:
    data = p.read_bytes()
    if data[:2] == b"\x1f\x8b":
        import gzip
        data = gzip.decompress(data)
    return data.decode("utf-8", errors="replace")


# ---------------------------------------------------------------------------------------------
# fingerprints and compact storage of runs / qrels

def _canonical_runs(runs: Mapping[str, pd.DataFrame]) -> dict[str, Any]:
    """Columns of all runs with canonical string tables (sorted uniques + codes)."""
    names = list(runs)
    sizes = np.array([len(runs[n]) for n in names], dtype=np.int64)
    qid = np.concatenate([runs[n]["qid"].to_numpy(dtype=object) for n in names])
    docno = np.concatenate([runs[n]["docno"].to_numpy(dtype=object) for n in names])
    qid_c, qid_u = pd.factorize(qid, sort=True)
    doc_c, doc_u = pd.factorize(docno, sort=True)
    return {"names": names, "sizes": sizes, "qid_u": list(qid_u), "qid_c": qid_c.astype(np.int64),
            "docno_u": list(doc_u), "docno_c": doc_c.astype(np.int64),
            "score": np.concatenate([runs[n]["score"].to_numpy(dtype=np.float64) for n in names]),
            "rank": np.concatenate([runs[n]["rank"].to_numpy(dtype=np.int64) for n in names])}


def _joined(strings: Sequence[str]) -> bytes:
    return "\x00".join(strings).encode("utf-8")


def fingerprint_runs(runs: Any) -> str:
    """SHA-256 of the runs' ``(run, qid, docno, rank, score)`` rows, sorted: independent of the order of
    the runs and of the rows, sensitive to any change in them.

    ``runs`` is anything :func:`pyterrier_noise.read_runs` reads.  Sorting is done on integer codes
    of the sorted unique strings (``pandas.factorize``), so it stays fast for TREC-size run sets.
    """
    return _fingerprint_canonical(_canonical_runs(read_runs(runs)))


def _fingerprint_canonical(c: dict[str, Any]) -> str:
    names = np.array(c["names"], dtype=object)
    order_names = np.argsort(names, kind="stable")
    name_rank = np.empty(len(order_names), dtype=np.int64)
    name_rank[order_names] = np.arange(len(order_names))
    run_c = np.repeat(name_rank, c["sizes"])
    # one integer key for (run, qid, docno): at most runs x topics x documents, far below 2**63
    key = (run_c * len(c["qid_u"]) + c["qid_c"]) * len(c["docno_u"]) + c["docno_c"]
    order = np.argsort(key, kind="stable")
    if (np.diff(key[order]) == 0).any():  # a document twice in a ranking: rank and score break the tie
        order = np.lexsort((c["score"], c["rank"], key))
    h = hashlib.sha256(b"pyterrier-noise runs v1\x00")
    h.update(_joined([str(x) for x in names[order_names]]) + b"\x01")
    h.update(_joined(c["qid_u"]) + b"\x01")
    h.update(_joined(c["docno_u"]) + b"\x01")
    for arr in (run_c[order], c["qid_c"][order], c["docno_c"][order], c["rank"][order]):
        h.update(arr.astype("<i8").tobytes())
    h.update(c["score"][order].astype("<f8").tobytes())
    return h.hexdigest()


def fingerprint_qrels(qrels: Any) -> str:
    """SHA-256 of the ``(qid, docno, label)`` rows of qrels, sorted (row order does not matter)."""
    q = read_qrels(qrels)
    order = np.lexsort((q["label"].to_numpy(), q["docno"].to_numpy(dtype=str), q["qid"].to_numpy(dtype=str)))
    q = q.iloc[order]
    h = hashlib.sha256(b"pyterrier-noise qrels v1\x00")
    h.update(_joined(q["qid"].tolist()) + b"\x01")
    h.update(_joined(q["docno"].tolist()) + b"\x01")
    h.update(q["label"].to_numpy(dtype="<f8").tobytes())
    return h.hexdigest()


def _u8(strings: Sequence[str]) -> np.ndarray:
    data = _joined(strings)
    if data.count(b"\x00") != max(len(strings) - 1, 0):
        raise SessionError("a qid, docno or run name contains a NUL character, which a session file cannot store")
    return np.frombuffer(data, dtype=np.uint8)


def _strings(u8: np.ndarray, n: int) -> np.ndarray:
    if n == 0:
        return np.array([], dtype=object)
    out = np.array(bytes(u8).decode("utf-8").split("\x00"), dtype=object)
    if len(out) != n:
        raise SessionError("the session file is damaged: a string table has the wrong length")
    return out


def _pack_runs(c: dict[str, Any]) -> bytes:
    """The runs (canonical columns, :func:`_canonical_runs`) as a compressed ``.npz`` blob, without pickle."""
    buf = io.BytesIO()
    np.savez_compressed(buf, names=_u8(c["names"]), n_names=len(c["names"]), sizes=c["sizes"],
                        qid_u=_u8(c["qid_u"]), n_qid=len(c["qid_u"]), qid_c=c["qid_c"].astype(np.int32),
                        docno_u=_u8(c["docno_u"]), n_docno=len(c["docno_u"]), docno_c=c["docno_c"].astype(np.int32),
                        score=c["score"], rank=c["rank"])
    return buf.getvalue()


def _unpack_runs(blob: bytes) -> dict[str, pd.DataFrame]:
    z = np.load(io.BytesIO(blob), allow_pickle=False)
    names = _strings(z["names"], int(z["n_names"]))
    qid = _strings(z["qid_u"], int(z["n_qid"]))[z["qid_c"]]
    docno = _strings(z["docno_u"], int(z["n_docno"]))[z["docno_c"]]
    bounds = np.concatenate([[0], np.cumsum(z["sizes"])])
    score, rank = z["score"], z["rank"]
    return {str(n): pd.DataFrame({"qid": qid[a:b], "docno": docno[a:b], "score": score[a:b], "rank": rank[a:b]})
            for n, a, b in zip(names, bounds[:-1], bounds[1:])}


def _pack_qrels(q: pd.DataFrame) -> bytes:
    buf = io.BytesIO()
    np.savez_compressed(buf, qid=_u8(q["qid"].tolist()), docno=_u8(q["docno"].tolist()), n=len(q),
                        label=q["label"].to_numpy(dtype=np.float64))
    return buf.getvalue()


def _unpack_qrels(blob: bytes) -> pd.DataFrame:
    z = np.load(io.BytesIO(blob), allow_pickle=False)
    n = int(z["n"])
    return pd.DataFrame({"qid": _strings(z["qid"], n), "docno": _strings(z["docno"], n), "label": z["label"]})


# ---------------------------------------------------------------------------------------------
# the durable session

class JudgingEvent(NamedTuple):
    """One committed step of a session: ``action`` is ``"judge"`` or ``"bypass"`` (label NaN)."""
    seq: int
    action: str
    qid: str
    docno: str
    label: float
    weight: float


@dataclass(frozen=True)
class RunReport:
    """What :meth:`JudgingSession.run` did: judgments and bypasses made by the call, the session's
    total of judgments, and why it stopped (``"budget"``, ``"exhausted"`` -- no candidate left --,
    ``"quit"`` -- the oracle raised :class:`QuitJudging` --, ``"limit"``, ``max_steps`` reached, or
    ``"stopped"``, the :class:`~pyterrier_noise.selection.StopRule` fired: ``detail`` says why)."""
    judged: int
    bypassed: int
    n_judged: int
    reason: str
    detail: str | None = None


_FORMAT = "pyterrier-noise judging session 1"

#: configuration keys and their defaults for a new session
DEFAULTS: dict[str, Any] = {"method": "C", "p": 0.8, "power": 3.0, "residual_scope": "query",
                            "score_scope": "system", "batch_size": 1, "tie_break": "deterministic",
                            "seed": 0, "pool_runs": None, "per_topic_quota": None, "rel": 1.0, "max_rel": None,
                            "ties": "trec_eval"}

_SCHEMA = """
CREATE TABLE meta(key TEXT PRIMARY KEY, value TEXT NOT NULL);
CREATE TABLE blobs(name TEXT PRIMARY KEY, data BLOB NOT NULL);
CREATE TABLE served(id INTEGER PRIMARY KEY, qid TEXT NOT NULL, docno TEXT NOT NULL, weight REAL,
                    time TEXT NOT NULL, UNIQUE(qid, docno));
CREATE TABLE events(seq INTEGER PRIMARY KEY, action TEXT NOT NULL CHECK(action IN ('judge', 'bypass')),
                    qid TEXT NOT NULL, docno TEXT NOT NULL, label REAL, weight REAL, time TEXT NOT NULL,
                    UNIQUE(qid, docno));
"""


def _now() -> str:
    return datetime.now(timezone.utc).isoformat(timespec="milliseconds")


def _normalise_config(cfg: dict[str, Any]) -> dict[str, Any]:
    """Validate the session's configuration and give it one canonical, JSON-able form."""
    out = dict(cfg)
    if not isinstance(out["method"], str):
        raise InputError(f"argument 'method': expected 'pool', 'A', 'B' or 'C', got {out['method']!r}")
    out["p"] = check_probability("argument 'p'", out["p"])
    pw = out["power"]
    if isinstance(pw, (bool, np.bool_)) or not isinstance(pw, numbers.Real) or not math.isfinite(pw) or pw < 0:
        raise InputError(f"argument 'power': expected a number >= 0, got {pw!r}")
    out["power"] = float(pw)
    for key, minimum in (("batch_size", 1), ("seed", 0)):
        v = out[key]
        if isinstance(v, (bool, np.bool_)) or not isinstance(v, numbers.Integral) or v < minimum:
            raise InputError(f"argument {key!r}: expected an integer >= {minimum}, got {v!r}")
        out[key] = int(v)
    for key, allowed in (("tie_break", ("deterministic", "random")), ("residual_scope", ("query", "system")),
                         ("score_scope", ("query", "system"))):
        if out[key] not in allowed:
            raise InputError(f"argument {key!r}: expected one of {list(allowed)}, got {out[key]!r}")
    if out["pool_runs"] is not None:
        pr = out["pool_runs"]
        if isinstance(pr, (str, bytes)) or not isinstance(pr, Sequence):
            raise InputError(f"argument 'pool_runs': expected a list of run names, got {pr!r}")
        out["pool_runs"] = [str(x) for x in pr]
    if isinstance(out["rel"], (bool, np.bool_)) or not isinstance(out["rel"], numbers.Real) \
            or not math.isfinite(out["rel"]) or out["rel"] <= 0:
        raise InputError(f"argument 'rel': expected a number > 0 (label >= rel is relevant), got {out['rel']!r}")
    out["rel"] = float(out["rel"])
    mr = out["max_rel"]
    if mr is not None:
        if isinstance(mr, (bool, np.bool_)) or not isinstance(mr, numbers.Real) or not math.isfinite(mr) or mr <= 0:
            raise InputError(f"argument 'max_rel': expected a number > 0 (graded gain) or None, got {mr!r}")
        out["max_rel"] = float(mr)
    if out["ties"] not in ("trec_eval", "given"):
        raise InputError(f"argument 'ties': expected 'trec_eval' or 'given', got {out['ties']!r}")
    q = out["per_topic_quota"]
    if q is not None:
        if isinstance(q, Mapping):
            out["per_topic_quota"] = {str(k): int(v) for k, v in q.items()}
        elif isinstance(q, numbers.Integral) and not isinstance(q, bool):
            out["per_topic_quota"] = int(q)
        else:
            raise InputError(f"argument 'per_topic_quota': expected an integer or a mapping qid -> integer, got {q!r}")
    return out


def _default_factory(runs: dict[str, pd.DataFrame], **config: Any) -> Any:
    try:
        from ..selection.selector import JudgmentSelector
    except ImportError as exc:  # pragma: no cover - depends on the checkout
        raise SessionError(f"the selector module pyterrier_noise.selection is not available ({exc})") from None
    return JudgmentSelector(runs, **config)


class JudgingSession:
    """A durable, resumable judging session around a judgment selector (Moffat et al. 2007, Sec. 3-4).

    The loop of seed002 Sec. 2.7 (propose the highest-weight unjudged ``(qid, docno)``, ask the
    oracle, record, update) kept in a SQLite file at ``path`` (WAL journal, ``synchronous=FULL``,
    one transaction per step): a session killed at any moment loses no recorded judgment, and
    reopening the file restores exactly the same state and queue by replaying the records, in
    order, into a fresh selector.

    A new session needs ``runs`` (anything :func:`pyterrier_noise.read_runs` reads); the runs, their
    fingerprint, ``initial_qrels`` and the configuration are stored in the file.  Reopening takes
    the stored values: every argument may be left out (``JudgingSession(path)``), and an argument
    that is given must match what is stored -- other runs, other initial qrels or another
    setting are refused with a :class:`SessionError`.

    Args:
        path: the session file (created when absent and ``create`` is true).
        runs: the runs to select from.
        method, p, power, residual_scope, score_scope, batch_size, tie_break, seed, pool_runs,
            per_topic_quota, rel, max_rel, ties: the selector's settings (see
            :class:`pyterrier_noise.selection.JudgmentSelector`); defaults for a new session:
            ``method="C", p=0.8, power=3, residual_scope="query", score_scope="system",
            batch_size=1, tie_break="deterministic", seed=0, rel=1, max_rel=None`` (binary gain
            ``label >= rel``; graded gain ``min(label, max_rel) / max_rel``), ``ties="trec_eval"``.
        initial_qrels: judgments known before the session (they seed the selector; they are not
            counted in ``n_judged``; :meth:`judged_qrels` includes them).
        create: create the file if it does not exist (otherwise a missing file is an error).
        selector_factory: ``fn(runs, **settings) -> selector`` to use another selector class with
            the same interface (default: ``JudgmentSelector``).
        lock_timeout: seconds to wait for another process's lock before giving up.

    Only documents the session has served (:meth:`next`, :meth:`propose`) can be recorded or
    bypassed, and each only once.  Served documents are stored too: after a crash, :meth:`next`
    and :meth:`run` first finish the documents already served (e.g. the rest of a batch).
    """

    def __init__(self, path: PathLike, runs: Any = None, method: str | None = None, p: float | None = None,
                 power: float | None = None, residual_scope: str | None = None, score_scope: str | None = None,
                 batch_size: int | None = None, initial_qrels: Any = None, tie_break: str | None = None,
                 seed: int | None = None, pool_runs: Sequence[str] | None = None,
                 per_topic_quota: Any = None, rel: float | None = None, max_rel: float | None = None,
                 ties: str | None = None, create: bool = True,
                 selector_factory: Callable[..., Any] | None = None, lock_timeout: float = 0.2) -> None:
        try:
            self.path = Path(path)
        except TypeError:
            raise InputError(f"argument 'path': expected a file path, got {path!r}") from None
        if not isinstance(lock_timeout, numbers.Real) or lock_timeout < 0:
            raise InputError(f"argument 'lock_timeout': expected a number of seconds >= 0, got {lock_timeout!r}")
        given = {"method": method, "p": p, "power": power, "residual_scope": residual_scope,
                 "score_scope": score_scope, "batch_size": batch_size, "tie_break": tie_break, "seed": seed,
                 "pool_runs": pool_runs, "per_topic_quota": per_topic_quota, "rel": rel, "max_rel": max_rel,
                 "ties": ties}
        given = {k: v for k, v in given.items() if v is not None}
        self._factory = selector_factory or _default_factory
        self._conn: sqlite3.Connection | None = None
        self._selector: Any = None
        self._broken: BaseException | None = None
        self._pending: dict[tuple[str, str], float] = {}
        self._handled: dict[tuple[str, str], tuple[int, str, float]] = {}
        self._n_judged = 0
        self._n_bypassed = 0

        existed = self.path.exists()
        if self.path.is_dir():
            raise SessionError(f"{self.path}: is a directory, expected a session file")
        if not existed and not create:
            raise SessionError(f"{self.path}: no such session file (pass create=True to start a new session)")
        if not existed and not self.path.parent.is_dir():
            raise SessionError(f"{self.path}: the directory {self.path.parent} does not exist")
        try:
            self._conn = self._connect(float(lock_timeout))
            meta = self._read_meta()
            if meta is None:
                if existed and self.path.stat().st_size > 0 and self._has_tables():
                    raise SessionError(f"{self.path}: is a SQLite database but not a pyterrier-noise judging session")
                if not create:
                    raise SessionError(f"{self.path}: the file holds no session (pass create=True to start one)")
                self._create(runs, initial_qrels, given)
            else:
                self._reopen(meta, runs, initial_qrels, given)
        except BaseException:
            self._close_quietly()
            if not existed:
                for suffix in ("", "-wal", "-shm", "-journal"):
                    Path(str(self.path) + suffix).unlink(missing_ok=True)
            raise

    # -- opening -------------------------------------------------------------------------

    def _connect(self, timeout: float) -> sqlite3.Connection:
        try:
            conn = sqlite3.connect(str(self.path), timeout=timeout, isolation_level=None)
        except sqlite3.Error as exc:
            raise SessionError(f"{self.path}: cannot open the session file ({exc})") from None
        try:
            # EXCLUSIVE locking mode: the first write lock is kept until close, so one process (one
            # session object) holds the file; the operating system drops it if the process dies.
            conn.execute("PRAGMA locking_mode=EXCLUSIVE")
            mode = conn.execute("PRAGMA journal_mode=WAL").fetchone()[0]
            if str(mode).lower() != "wal":
                raise SessionError(f"{self.path}: SQLite refused the WAL journal (journal_mode={mode})")
            conn.execute("PRAGMA synchronous=FULL")
            conn.execute("BEGIN IMMEDIATE")  # take the lock now, not at the first judgment
            conn.execute("COMMIT")
        except sqlite3.OperationalError as exc:
            conn.close()
            if "locked" in str(exc) or "busy" in str(exc):
                raise SessionLockedError(
                    f"{self.path}: the session is open in another process or another JudgingSession (SQLite "
                    f"lock); close it first -- two judges writing one session would diverge") from None
            raise SessionError(f"{self.path}: cannot use the session file ({exc})") from None
        except sqlite3.DatabaseError as exc:
            conn.close()
            raise SessionError(f"{self.path}: not a judging session file ({exc})") from None
        return conn

    def _has_tables(self) -> bool:
        return self._conn.execute("SELECT count(*) FROM sqlite_master").fetchone()[0] > 0

    def _read_meta(self) -> dict[str, str] | None:
        has = self._conn.execute("SELECT count(*) FROM sqlite_master WHERE type='table' AND name='meta'").fetchone()[0]
        if not has:
            return None
        meta = dict(self._conn.execute("SELECT key, value FROM meta").fetchall())
        if meta.get("format") != _FORMAT:
            raise SessionError(f"{self.path}: not a pyterrier-noise judging session (format {meta.get('format')!r}, "
                               f"expected {_FORMAT!r})")
        return meta

    def _create(self, runs: Any, initial_qrels: Any, given: dict[str, Any]) -> None:
        if runs is None:
            raise SessionError(f"{self.path}: a new session needs the runs to select from (argument 'runs')")
        cfg = _normalise_config({**DEFAULTS, **given})
        runs = read_runs(runs)
        if not runs:
            raise InputError("argument 'runs': no runs given")
        canonical = _canonical_runs(runs)
        fp = _fingerprint_canonical(canonical)
        blob = _pack_runs(canonical)
        init = read_qrels(initial_qrels) if initial_qrels is not None else None
        self.config = cfg
        self.run_names = list(runs)
        self.fingerprint = fp
        self.initial_qrels = init
        # build the selector first (bad settings fail before anything is written), from the copy that
        # is stored, exactly as a reopened session will
        self._selector = self._factory(_unpack_runs(blob), initial_qrels=init, **cfg)
        meta = {"format": _FORMAT, "config": json.dumps(cfg, sort_keys=True), "run_names": json.dumps(self.run_names),
                "runs_fingerprint": fp, "created": _now(), "package_version": _package_version(),
                "initial_qrels_fingerprint": fingerprint_qrels(init) if init is not None else ""}
        c = self._conn
        c.execute("BEGIN IMMEDIATE")
        try:
            for stmt in _SCHEMA.strip().split(";"):
                if stmt.strip():
                    c.execute(stmt)
            c.executemany("INSERT INTO meta(key, value) VALUES (?, ?)", sorted(meta.items()))
            c.execute("INSERT INTO blobs(name, data) VALUES ('runs', ?)", (blob,))
            if init is not None:
                c.execute("INSERT INTO blobs(name, data) VALUES ('initial_qrels', ?)", (_pack_qrels(init),))
            c.execute("COMMIT")
        except BaseException:
            if c.in_transaction:
                c.execute("ROLLBACK")
            raise

    def _reopen(self, meta: dict[str, str], runs: Any, initial_qrels: Any, given: dict[str, Any]) -> None:
        cfg = {**DEFAULTS, **json.loads(meta["config"])}
        stored_names = json.loads(meta["run_names"])
        for key, value in given.items():
            norm = _normalise_config({**cfg, key: value})[key]
            if norm != cfg[key]:
                raise SessionError(f"{self.path}: the session was created with {key}={cfg[key]!r}, not {value!r}; "
                                   f"a session keeps its settings (leave {key} out, or start a new session file)")
        if runs is not None:
            runs = read_runs(runs)
            fp = fingerprint_runs(runs)
            if fp != meta["runs_fingerprint"]:
                extra = sorted(set(runs) - set(stored_names))
                lost = sorted(set(stored_names) - set(runs))
                detail = (f" (runs not in the session: {extra[:5]}; session runs not given: {lost[:5]})"
                          if extra or lost else " (same run names, different rankings)")
                raise SessionError(f"{self.path}: these runs are not the runs the session was created with{detail}; "
                                   f"runs fingerprint {fp[:12]}... != stored {meta['runs_fingerprint'][:12]}... "
                                   f"Reopen with the same runs, or without runs to use the stored copy")
        init = None
        if meta["initial_qrels_fingerprint"]:
            init = _unpack_qrels(self._blob("initial_qrels"))
        if initial_qrels is not None:
            fp = fingerprint_qrels(initial_qrels)
            if fp != meta["initial_qrels_fingerprint"]:
                raise SessionError(f"{self.path}: these initial qrels are not the ones the session was created with "
                                   f"(leave initial_qrels out to use the stored copy)")
        self.config = cfg
        self.run_names = stored_names
        self.fingerprint = meta["runs_fingerprint"]
        self.initial_qrels = init
        for seq, action, qid, docno, label in self._conn.execute(
                "SELECT seq, action, qid, docno, label FROM events ORDER BY seq"):
            if action == "judge":
                self._n_judged += 1
            else:
                self._n_bypassed += 1
            self._handled[(qid, docno)] = (seq, action, label)
        for qid, docno, weight in self._conn.execute("SELECT qid, docno, weight FROM served ORDER BY id"):
            if (qid, docno) not in self._handled:
                self._pending[(qid, docno)] = weight

    @property
    def selector(self) -> Any:
        """The selector, in the state the records give.  On a reopened session it is built on first
        use (exporting or reading the history does not need it): from the stored runs, with the
        stored settings, then every committed step is replayed into it in order."""
        if self._selector is None:
            self._check_open()
            # the stored copy of the runs: same runs, same row order, hence the same state
            sel = self._factory(_unpack_runs(self._blob("runs")), initial_qrels=self.initial_qrels, **self.config)
            for action, qid, docno, label in self._conn.execute(
                    "SELECT action, qid, docno, label FROM events ORDER BY seq"):
                if action == "judge":
                    sel.record(qid, docno, label)
                else:
                    sel.bypass(qid, docno)
            self._selector = sel
        return self._selector

    def _blob(self, name: str) -> bytes:
        row = self._conn.execute("SELECT data FROM blobs WHERE name=?", (name,)).fetchone()
        if row is None:
            raise SessionError(f"{self.path}: the session file is damaged (no {name!r} stored)")
        return row[0]

    # -- state ---------------------------------------------------------------------------

    def _check_usable(self) -> None:
        if self._conn is None:
            raise SessionError(f"{self.path}: the session is closed; open it again with JudgingSession(path)")
        if self._broken is not None:
            raise SessionError(f"{self.path}: a write failed earlier ({self._broken}); every judgment before it is "
                               f"saved -- close this object and open the session again")

    @property
    def n_judged(self) -> int:
        """Judgments recorded in this session (not counting ``initial_qrels``)."""
        return self._n_judged

    @property
    def n_bypassed(self) -> int:
        """Documents bypassed (not judged, removed from the candidates)."""
        return self._n_bypassed

    @property
    def pending(self) -> list[tuple[str, str, float]]:
        """Documents served and not yet judged or bypassed, in the order served: ``(qid, docno, weight)``."""
        return [(q, d, w) for (q, d), w in self._pending.items()]

    @property
    def closed(self) -> bool:
        return self._conn is None

    # -- the loop ------------------------------------------------------------------------

    def propose(self, n: int = 1) -> list[tuple[str, str, float]]:
        """The selector's ``n`` best unjudged documents ``(qid, docno, weight)``, now served.

        Serving is committed before the list is returned, so the documents can be recorded after a
        crash too.  Asking again before recording returns the same documents.
        """
        self._check_usable()
        if isinstance(n, bool) or not isinstance(n, numbers.Integral) or n < 1:
            raise InputError(f"argument 'n': expected a positive integer, got {n!r}")
        props = [(str(q), str(d), float(w)) for q, d, w in self.selector.propose(int(n))]
        new = [x for x in props if (x[0], x[1]) not in self._pending]
        for q, d, _ in new:
            if (q, d) in self._handled:
                raise SessionError(f"the selector proposed qid {q!r} docno {d!r}, which the session has already "
                                   f"{self._handled[(q, d)][1]}d; the selector's state does not match the records")
        if new:
            now = _now()
            self._write(lambda c: c.executemany(
                "INSERT INTO served(qid, docno, weight, time) VALUES (?, ?, ?, ?)",
                [(q, d, w, now) for q, d, w in new]))
            for q, d, w in new:
                self._pending[(q, d)] = w
        return props

    def next(self) -> tuple[str, str, float] | None:
        """The next document to judge, ``(qid, docno, weight)``, or ``None`` when no candidate is left.

        The first served document that is still pending; otherwise a new batch of ``batch_size``
        documents is proposed (and served).
        """
        self._check_usable()
        if not self._pending:
            props = self.propose(self.config["batch_size"])
            if not props:
                return None
        (q, d), w = next(iter(self._pending.items()))
        return q, d, w

    def _take(self, qid: Any, docno: Any) -> tuple[str, str, float]:
        self._check_usable()
        q, d = str(qid), str(docno)
        done = self._handled.get((q, d))
        if done is not None:
            what = "judged (label %s)" % _fmt_label(done[2]) if done[1] == "judge" else "bypassed"
            raise SessionError(f"qid {q!r} docno {d!r} was already {what} at step {done[0]}; a document is "
                               f"judged once")
        if (q, d) not in self._pending:
            raise SessionError(f"qid {q!r} docno {d!r} was not proposed; record one of the documents served by "
                               f"next() or propose() (pending: {len(self._pending)})")
        return q, d, self._pending[(q, d)]

    def record(self, qid: str, docno: str, label: float) -> JudgingEvent:
        """Record a judgment of a served document; committed before this returns (seed002 Sec. 2.7)."""
        q, d, w = self._take(qid, docno)
        lab = _check_label(label, f"label for qid {q!r} docno {d!r}")
        self.selector.record(q, d, lab)  # validates before it changes anything
        return self._commit_or_break("judge", q, d, lab, w)

    def bypass(self, qid: str, docno: str) -> JudgingEvent:
        """Bypass a served document: not judged, not counted, removed from the candidates (seed002 A6)."""
        q, d, w = self._take(qid, docno)
        self.selector.bypass(q, d)
        return self._commit_or_break("bypass", q, d, math.nan, w)

    def _commit_or_break(self, action: str, q: str, d: str, label: float, weight: float) -> JudgingEvent:
        try:
            return self._commit(action, q, d, label, weight)
        except BaseException as exc:  # the selector holds a step the file may not: do not go on
            if self._broken is None:
                self._broken = exc
            raise

    def _commit(self, action: str, q: str, d: str, label: float, weight: float) -> JudgingEvent:
        seq = self._n_judged + self._n_bypassed + 1
        self._write(lambda c: c.execute(
            "INSERT INTO events(seq, action, qid, docno, label, weight, time) VALUES (?, ?, ?, ?, ?, ?, ?)",
            (seq, action, q, d, None if action == "bypass" else label, weight, _now())))
        del self._pending[(q, d)]
        self._handled[(q, d)] = (seq, action, label)
        if action == "judge":
            self._n_judged += 1
        else:
            self._n_bypassed += 1
        return JudgingEvent(seq, action, q, d, label, weight)

    def _write(self, fn: Callable[[sqlite3.Connection], Any]) -> None:
        c = self._conn
        try:
            c.execute("BEGIN IMMEDIATE")
            fn(c)
            c.execute("COMMIT")
        except BaseException as exc:
            try:
                if c.in_transaction:
                    c.execute("ROLLBACK")
            except sqlite3.Error:
                pass
            raise SessionError(f"{self.path}: could not save the step ({exc}); every earlier step is saved -- "
                               f"open the session again to continue") from exc

    def run(self, oracle: Oracle | Callable[[str, str], Label], budget: int | None = None, *,
            max_steps: int | None = None, progress: bool = False,
            on_step: Callable[[JudgingEvent], Any] | None = None, stop: StopRule | None = None) -> RunReport:
        """Judge until the session holds ``budget`` judgments (seed002 Sec. 2.7 loop).

        Each step: take the next document (:meth:`next`), ask the oracle, record the label (or bypass
        the document when the oracle returns ``None``; bypasses do not count against the budget),
        commit, then call ``on_step(event)``.  ``budget`` is the session's total (so running the
        same call again after a crash finishes the same session); ``None`` judges until no candidate
        is left.  ``max_steps`` bounds the steps of this call.  The oracle may raise
        :class:`QuitJudging` to stop.  ``stop``: a :class:`~pyterrier_noise.selection.StopRule`
        checked before every document is served (seed002 Sec. 4.11); it is not stored, so a resumed
        session may use another.
        """
        self._check_usable()
        oracle = _as_oracle(oracle)
        if stop is not None and not isinstance(stop, StopRule):
            raise InputError(f"argument 'stop': expected a StopRule, got {type(stop).__name__}")
        for name, v in (("budget", budget), ("max_steps", max_steps)):
            if v is not None and (isinstance(v, bool) or not isinstance(v, numbers.Integral) or v < 0):
                raise InputError(f"argument {name!r}: expected a non-negative integer or None, got {v!r}")
        if on_step is not None and not callable(on_step):
            raise InputError(f"argument 'on_step': expected a function fn(event), got {on_step!r}")
        judged = bypassed = 0
        bar = None
        if progress:
            bar = _tqdm(total=budget, initial=min(self._n_judged, budget) if budget is not None else self._n_judged,
                        desc="judging", unit="judgment")
        reason, detail = "budget", None
        try:
            while True:
                if budget is not None and self._n_judged >= budget:
                    reason = "budget"
                    break
                if max_steps is not None and judged + bypassed >= max_steps:
                    reason = "limit"
                    break
                if stop is not None:
                    detail = stop.reason(self.selector)
                    if detail is not None:
                        reason = "stopped"
                        break
                item = self.next()
                if item is None:
                    reason = "exhausted"
                    break
                q, d, w = item
                try:
                    label = oracle.judge(q, d, weight=w, n_judged=self._n_judged, budget=budget)
                except QuitJudging:
                    reason = "quit"
                    break
                if label is None:
                    event = self.bypass(q, d)
                    bypassed += 1
                else:
                    event = self.record(q, d, label)
                    judged += 1
                    if bar is not None:
                        bar.update(1)
                if on_step is not None:
                    on_step(event)
        finally:
            if bar is not None:
                bar.close()
        return RunReport(judged, bypassed, self._n_judged, reason, detail)

    # -- results -------------------------------------------------------------------------

    @property
    def history(self) -> pd.DataFrame:
        """Every committed step in order: ``seq, action, qid, docno, label, weight, time``."""
        self._check_open()
        rows = self._conn.execute(
            "SELECT seq, action, qid, docno, label, weight, time FROM events ORDER BY seq").fetchall()
        h = pd.DataFrame(rows, columns=["seq", "action", "qid", "docno", "label", "weight", "time"])
        h["label"] = h["label"].astype(np.float64)
        h["weight"] = h["weight"].astype(np.float64)
        return h

    def judged_qrels(self, include_initial: bool = True) -> pd.DataFrame:
        """The judgments as qrels ``qid, docno, label``: the initial qrels first, then the session's in order."""
        self._check_open()
        rows = self._conn.execute("SELECT qid, docno, label FROM events WHERE action='judge' ORDER BY seq").fetchall()
        q = pd.DataFrame(rows, columns=["qid", "docno", "label"]).astype({"label": np.float64})
        if include_initial and self.initial_qrels is not None:
            q = pd.concat([self.initial_qrels[["qid", "docno", "label"]], q], ignore_index=True)
        return q

    def export_qrels(self, path: PathLike, include_initial: bool = True) -> pd.DataFrame:
        """Write :meth:`judged_qrels` as a TREC qrels file (any time; gzip if the name ends in .gz)."""
        q = self.judged_qrels(include_initial)
        write_trec_qrels(q, path)
        return q

    def bounds(self, p: float | None = None) -> Any:
        """The selector's RBP bounds per system and query (``p``: evaluation persistence; default the session's)."""
        self._check_open()
        return self.selector.bounds(p=p)

    def system_bounds(self, p: float | None = None) -> Any:
        """The selector's RBP bounds per system (means over the queries)."""
        self._check_open()
        return self.selector.system_bounds(p=p)

    # -- lifetime ------------------------------------------------------------------------

    def _check_open(self) -> None:
        if self._conn is None:
            raise SessionError(f"{self.path}: the session is closed; open it again with JudgingSession(path)")

    def close(self) -> None:
        """Close the file and release its lock (everything is already committed)."""
        self._close_quietly()

    def _close_quietly(self) -> None:
        if self._conn is not None:
            try:
                self._conn.close()
            finally:
                self._conn = None

    def __enter__(self) -> "JudgingSession":
        return self

    def __exit__(self, *exc: Any) -> None:
        self.close()

    def __repr__(self) -> str:
        if self._conn is None and not hasattr(self, "config"):
            return f"JudgingSession({str(self.path)!r}, not open)"
        return (f"JudgingSession({str(self.path)!r}, method={self.config['method']!r}, p={self.config['p']}, "
                f"{len(self.run_names)} runs, {self._n_judged} judged, {self._n_bypassed} bypassed"
                f"{', closed' if self._conn is None else ''})")


def _package_version() -> str:
    try:
        from .. import __version__
        return str(__version__)
    except ImportError:  # pragma: no cover
        return "unknown"


def _tqdm(**kw: Any) -> Any:
    try:
        import pyterrier as pt
        return pt.tqdm(**kw)
    except ImportError:  # pragma: no cover
        from tqdm.auto import tqdm
        return tqdm(**kw)
