"""Adaptive judgment selection: pooling and Moffat, Webber & Zobel's Methods A, B and C.

Moffat, Webber & Zobel (SIGIR 2007), "Strategic system comparisons via targeted relevance
judgments".  Document ``d`` at 1-based rank ``b`` of run ``s`` carries the
contribution ``c[s,d] = (1-p) p^(b-1)`` -- its share of the run's RBP residual.  The next document
to judge is the unjudged (topic, document) pair of largest weight over *all* topics (one global
queue):

* pooling: ``w_d = max_s c[s,d]`` -- depth-k pooling read off level by level;
* Method A: ``w_d = sum_s c[s,d]`` (static, Sec. 2.3);
* Method B: ``w_d = sum_s c[s,d] r_s`` with ``r_s`` the run's current residual (static, Sec. 2.4);
* Method C: ``w_d = sum_s c[s,d] r_s (b_s + r_s/2)^power`` with ``b_s`` the current base, power 3
  (adaptive: it depends on the labels, Sec. 2.6).

``residual_scope`` says whether ``r_s`` is the residual of the run on the document's topic
("query", the default) or the run's mean residual over topics ("system"); ``score_scope`` says the
same of the midpoint ``b_s + r_s/2`` of Method C (default "system").

How the exact greedy order is found fast.  A judgment changes the weights of every document that
shares a run with the judged one -- with ``score_scope="system"`` in every topic.  Rather than
recomputing ~3.5 million contributions per step, the selector keeps a *head*: the ``head_size``
candidates of largest weight at the last refresh, as a dense (head x runs) matrix whose product with
the run factors gives their current weights (one small matrix-vector product per step; only the
topic block of the judged document is rescaled).  Every other candidate's weight is bounded by the
largest weight outside the head at the refresh times the largest growth of any run factor since
then; while the head's best beats that bound the head's best is the exact argmax, otherwise the
head is rebuilt: from the *reserve* (the next 8 x head_size candidates of the last full rebuild,
recomputed) when the reserve's best beat the bound on everything outside it, else by a full rebuild
(a sparse product over the documents in decreasing order of Method A weight, as far as that order
can still matter).  The reported weight of a chosen document is recomputed exactly
with ``math.fsum``, so ties are decided on exact values and the selection does not depend on the
head's history: replaying the same record / bypass calls in the same order gives the same
proposals.
"""
from __future__ import annotations

import bisect
from typing import TYPE_CHECKING, Any, Mapping, Sequence

import numpy as np

from .._validation import InputError, announce, check_choice, check_int, check_probability, check_seed, check_ties, is_frame
from .._vocab import MISSING, RUN_ORDERS, SELECTION_METHODS, SELECTION_SCOPES, SELECTION_TIE_BREAKS
from ..engine import AlignedRuns, JudgmentTable
from .contributions import aligned_for, cached_contributions
from .oracles import NoisyOracle
from .ranges import gain_fn, judged_ranges, ranges_frame, system_ranges
from .stopping import StopRule
from .weights import SelectionQueue

if TYPE_CHECKING:  # pragma: no cover
    import pandas as pd

__all__ = ["METHODS", "JudgmentSelector"]

METHODS = SELECTION_METHODS
_SCOPES = SELECTION_SCOPES
_STATE_FORMAT = "pyterrier-noise/selection-state/1"


# ----------------------------------------------------------------------------------------------
# the selector


class JudgmentSelector:
    """Choose the next documents to judge: pooling or Moffat, Webber & Zobel's Methods A, B, C.

    Moffat, Webber & Zobel 2007, Sec. 3-4.  ``runs``: ``{name: frame}``,
    anything :func:`~pyterrier_noise.io.read_runs` takes, or an :class:`AlignedRuns` built with
    ``include_unjudged=True`` (its table's labels are ignored; pass ``initial_qrels``).

    Args:
        p: the persistence used to *select* (evaluation may use others: :meth:`bounds`).
        method: ``"pool"``, ``"A"``, ``"B"`` or ``"C"``.
        power: Method C's exponent on the midpoint (3 in the paper; 1 is Sec. 2.5's variant).
        residual_scope, score_scope: ``"query"`` or ``"system"``.
        batch_size: default number of documents :meth:`propose` returns.  1 is the paper's exact
            greedy process; a larger batch takes the best documents under one set of weights (an
            approximation for Methods B and C).
        initial_qrels: existing judgments to start from.
        tie_break: ``"deterministic"`` (pooling: depth, then run order, then qid, then docno;
            other methods: qid then docno) or ``"random"`` (a seeded permutation).
        pool_runs: names of the runs whose documents can be selected (default: all); all runs
            are evaluated.
        per_topic_quota: at most this many new judgments per topic (an int, or ``{qid: n}``).
        rel, max_rel: gain of a label (binary ``label >= rel``; graded ``clip(label,0,max_rel)/max_rel``).
        head_size: size of the exactly tracked head of the queue (speed only; never the result).

    Replaying the same :meth:`record` / :meth:`bypass` calls in the same order into a new selector
    gives exactly the same subsequent proposals; :meth:`state_dict` stores those calls and
    :meth:`from_state` replays them.

    The selector keeps the judgments (labels, judged RBP mass and base per run and topic, the
    history); the documents still to judge and their weights are a
    :class:`~pyterrier_noise.selection.weights.SelectionQueue` it owns and tells what changed.
    """

    def __init__(self, runs: Any, p: float = 0.8, method: str = "C", power: float = 3,
                 residual_scope: str = "query", score_scope: str = "system", batch_size: int = 1,
                 initial_qrels: Any = None, tie_break: str = "deterministic", seed: int = 0,
                 pool_runs: Sequence[str] | None = None, per_topic_quota: int | Mapping[str, int] | None = None,
                 rel: float = 1.0, max_rel: float | None = None, ties: str = "trec_eval",
                 head_size: int = 256) -> None:
        """Check the options, align the runs (:meth:`_align`), choose the pool runs and build their
        contributions, set the quotas and tie keys, apply the initial qrels to an empty state and
        start the queue (:class:`~pyterrier_noise.selection.weights.SelectionQueue`)."""
        self.p = check_probability("p", p)
        self.method = check_choice("method", method, METHODS)
        try:
            power = float(power)
        except (TypeError, ValueError):
            raise InputError(f"argument 'power': expected a number >= 0, got {power!r}") from None
        if not (np.isfinite(power) and power >= 0):
            raise InputError(f"argument 'power': expected a finite number >= 0, got {power!r}")
        self.power = power
        self.residual_scope = check_choice("residual_scope", residual_scope, _SCOPES)
        self.score_scope = check_choice("score_scope", score_scope, _SCOPES)
        self.batch_size = check_int("batch_size", batch_size)
        self.tie_break = check_choice("tie_break", tie_break, SELECTION_TIE_BREAKS)
        self.seed = check_seed(seed, allow_none=False)
        if max_rel is not None and not max_rel > 0:
            raise InputError(f"argument 'max_rel': expected a positive number, got {max_rel!r}")
        self.rel, self.max_rel = float(rel), (None if max_rel is None else float(max_rel))
        self._gain = gain_fn(self.rel, self.max_rel, self.p)
        self.head_size = check_int("head_size", head_size)
        check_ties(ties, RUN_ORDERS)

        init = None
        if initial_qrels is not None:
            from ..io import read_qrels
            init = read_qrels(initial_qrels)
        self._align(runs, init, ties)
        self._pool_mask = self._pool_runs_mask(pool_runs)
        self._contrib = cached_contributions(self.aligned, self.p, self._pool_mask)
        self._quota = self._quotas(per_topic_quota)
        self.per_topic_quota = per_topic_quota
        # tie keys: the table is sorted by (topic, docno), so the row number is the (qid, docno) key
        # (None: the queue takes the row numbers asked for, no array over every row; a random key is
        # int32 where the rows allow: the same order, half the bytes of a row)
        key_t = np.int32 if self._J < 2 ** 31 else np.int64
        if self.tie_break == "random":
            self._tiekey = np.random.default_rng(self.seed).permutation(self._J).astype(key_t)
        else:
            self._tiekey = None
        self._empty_state()
        if init is not None and len(init):
            self._apply_initial(init)
        from .._arrow import release_unused
        release_unused()   # what building the contributions freed: not kept under the queue's arrays
        self._queue = self._start_queue()

    # -- construction steps -----------------------------------------------------------------------

    def _align(self, runs: Any, init: pd.DataFrame | None, ties: str) -> None:
        """The runs aligned to a judgment table (one row per retrieved (topic, document)) and the
        lookups of its rows: topic index, qid, docno, each topic's first row."""
        if isinstance(runs, AlignedRuns):
            if runs.ties not in RUN_ORDERS:
                raise InputError(f"argument 'runs': the selector needs AlignedRuns built with ties='trec_eval' "
                                 f"or 'given' (one position per document), got ties={runs.ties!r}")
            self.aligned = runs
        else:
            self.aligned = aligned_for(runs, init, ties=ties)
        a = self.aligned
        self.run_names = list(a.run_names)
        self.topics = list(a.topics)
        self._topic_of: dict[str, int] | None = None
        self._S, self._T = a.n_runs, a.n_topics
        self._topic = a.table.topic_index.astype(np.int64, copy=False)
        # the qid of a row is its topic's, and its docno the table's (no frame of 10^5+ strings is
        # built, nor an array of every row's qid or docno: the rows asked for are looked up)
        self._qid = _RowQids(np.asarray(self.topics, dtype=object), self._topic)
        self._docno = _RowDocnos(a.table)
        self._topic_start = a.table.topic_start.astype(np.int64, copy=False)
        self._J = len(a.table)

    def _pool_runs_mask(self, pool_runs: Sequence[str] | None) -> np.ndarray:
        """Which runs feed the pool (``(n_runs,)`` bool); sets :attr:`pool_runs`."""
        if pool_runs is None:
            self.pool_runs = list(self.run_names)
            return np.ones(self._S, dtype=bool)
        if isinstance(pool_runs, str):
            raise InputError("argument 'pool_runs': expected a list of run names, got a single string")
        names = [str(x) for x in pool_runs]
        unknown = [x for x in names if x not in set(self.run_names)]
        if unknown:
            raise InputError(f"argument 'pool_runs': {len(unknown)} name(s) are not runs, e.g. {unknown[0]!r} "
                             f"(runs: {self.run_names[:5]}{' ...' if self._S > 5 else ''})")
        if not names:
            raise InputError("argument 'pool_runs': expected at least one run name, got none")
        self.pool_runs = [n for n in self.run_names if n in set(names)]
        return np.isin(np.asarray(self.run_names, dtype=object), np.asarray(names, dtype=object))

    def _quotas(self, per_topic_quota: int | Mapping[str, int] | None) -> np.ndarray:
        """The most new judgments each topic may take (``(n_topics,)``; int64 max: no quota)."""
        quota = np.full(self._T, np.iinfo(np.int64).max, dtype=np.int64)
        if per_topic_quota is None:
            return quota
        if isinstance(per_topic_quota, Mapping):
            topic_of = self._topic_index()
            for q, n in per_topic_quota.items():
                t = topic_of.get(str(q))
                if t is None:
                    raise InputError(f"argument 'per_topic_quota': qid {q!r} is not a topic of the runs")
                if isinstance(n, bool) or not isinstance(n, (int, np.integer)) or n < 0:
                    raise InputError(f"argument 'per_topic_quota': qid {q!r}: expected an integer >= 0, got {n!r}")
                quota[t] = int(n)
        elif isinstance(per_topic_quota, bool) or not isinstance(per_topic_quota, (int, np.integer)) \
                or per_topic_quota < 0:
            raise InputError(f"argument 'per_topic_quota': expected an integer >= 0 or {{qid: n}}, "
                             f"got {per_topic_quota!r}")
        else:
            quota[:] = int(per_topic_quota)
        return quota

    def _empty_state(self) -> None:
        """Nothing judged yet: labels, judged RBP mass and base per segment ``run * n_topics +
        topic`` (and their sums per run), the history of calls."""
        J, S, T = self._J, self._S, self._T
        self._labels = np.full(J, np.nan)
        self._judged = np.zeros(J, dtype=bool)
        self._bypassed = np.zeros(J, dtype=bool)
        self._topic_count = np.zeros(T, dtype=np.int64)
        self._mass = np.zeros(S * T)
        self._base = np.zeros(S * T)
        self._msum = np.zeros(S)
        self._bsum = np.zeros(S)
        self._events: list[tuple] = []
        self.stopped: str | None = None   # why the last judge() call's StopRule fired, if it did
        self._hist_row: list[int] = []
        self._hist_w: list[float] = []
        self._hist_label: list[float] = []
        self._byp_rows: list[int] = []
        self._byp_after: list[int] = []
        self._last_prop: dict[int, float] = {}
        self._oracle_cache: tuple | None = None
        self._retrieved_docs: pd.DataFrame | None = None
        # the initial qrels on retrieved documents and on others (frames; None: there are none)
        self._initial: pd.DataFrame | None = None
        self._extra_initial: pd.DataFrame | None = None

    def _start_queue(self) -> SelectionQueue:
        """The queue of the documents a pool run retrieved, without the judged ones and the topics
        whose quota is 0, weighted from the judged state."""
        available = self._contrib.candidate.copy()
        closed = self._quota == 0
        if closed.any():
            available &= ~closed[self._topic]
        available[self._judged] = False
        return SelectionQueue(self._contrib, self._topic, self._tiekey, available, self._pool_mask, self._T,
                              p=self.p, method=self.method, power=self.power,
                              residual_scope=self.residual_scope, score_scope=self.score_scope,
                              tie_break=self.tie_break, head_size=self.head_size, mass=self._mass,
                              base=self._base, msum=self._msum, bsum=self._bsum)

    # -- initial judgments --------------------------------------------------------------------

    def _apply_initial(self, init: pd.DataFrame) -> None:
        rows = self._rows_of(init["qid"].to_numpy(dtype=object), init["docno"].to_numpy(dtype=object))
        known = rows >= 0
        if not known.all():
            extra = init[~known].reset_index(drop=True)
            self._extra_initial = extra
            announce(f"initial_qrels: {int((~known).sum())} judgment(s) are for documents no run retrieved "
                     f"(e.g. qid={extra['qid'].iloc[0]!r} docno={extra['docno'].iloc[0]!r}); they are kept "
                     f"in judged_qrels() but change no bound or weight")
        rows = rows[known]
        labels = init["label"].to_numpy(dtype=np.float64)[known]
        self._initial = init[known].reset_index(drop=True)
        self._labels[rows] = labels
        self._judged[rows] = True
        # judged mass and base of every segment, in one pass over the judged rows' positions
        ct = self._contrib
        lens = ct.all_ptr[rows + 1] - ct.all_ptr[rows]
        idx = np.repeat(ct.all_ptr[rows] - np.concatenate([[0], np.cumsum(lens)[:-1]]), lens) + np.arange(lens.sum())
        g = np.repeat(self._gain(labels), lens)
        self._mass += np.bincount(ct.all_seg[idx], weights=ct.all_c[idx], minlength=self._S * self._T)
        self._base += np.bincount(ct.all_seg[idx], weights=ct.all_c[idx] * g, minlength=self._S * self._T)
        self._msum = self._mass.reshape(self._S, self._T).sum(axis=1)
        self._bsum = self._base.reshape(self._S, self._T).sum(axis=1)

    def _initial_parts(self) -> list:
        """The frames of initial qrels that hold judgments (those on retrieved documents first)."""
        return [x for x in (self._initial, self._extra_initial) if x is not None and len(x)]

    # -- lookups ------------------------------------------------------------------------------

    def _rows_of(self, qids: np.ndarray, docnos: np.ndarray) -> np.ndarray:
        """Table row of each (qid, docno), or -1.  The table is sorted by (topic, docno), so each
        topic's block is searched by bisection: no index over all its rows is built."""
        qids = np.asarray(qids, dtype=object).astype(str)
        docnos = np.asarray(docnos, dtype=object).astype(str).astype(object)
        out = np.full(len(qids), -1, dtype=np.int64)
        t_of = np.full(len(qids), -1, dtype=np.int64)   # each query's topic index (-1: not a topic)
        if self.topics and len(qids):
            names = np.asarray(self.topics, dtype=str)
            by_name = np.argsort(names)
            k = np.minimum(np.searchsorted(names[by_name], qids), len(names) - 1)
            found = names[by_name][k] == qids
            t_of[found] = by_name[k[found]]
        # one bisection per query within its topic's block, all queries at once (a loop over the
        # bisection's steps, not over topics or queries): the first row whose docno is >= the query's
        idx = np.flatnonzero(t_of >= 0)
        lo = self._topic_start[t_of[idx]]
        hi = self._topic_start[t_of[idx] + 1]
        want, table = docnos[idx], self._docno
        a, b = lo.copy(), hi.copy()
        while True:
            live = np.flatnonzero(a < b)
            if not len(live):
                break
            mid = (a[live] + b[live]) // 2
            less = table[mid] < want[live]
            a[live[less]] = mid[less] + 1
            b[live[~less]] = mid[~less]
        ok = a < hi
        hit = np.zeros(len(idx), dtype=bool)
        hit[ok] = table[a[ok]] == want[ok]
        out[idx[hit]] = a[hit]
        return out

    def _topic_index(self) -> dict[str, int]:
        """qid -> topic index, built at the first lookup."""
        if self._topic_of is None:
            self._topic_of = {q: i for i, q in enumerate(self.topics)}
        return self._topic_of

    def _row(self, qid: Any, docno: Any) -> int:
        qid, docno = str(qid), str(docno)
        try:
            t = self._topic_index()[qid]
        except KeyError:
            raise InputError(f"qid {qid!r} is not a topic of the runs (topics: {self.topics[:5]}"
                             f"{' ...' if len(self.topics) > 5 else ''})") from None
        lo, hi = int(self._topic_start[t]), int(self._topic_start[t + 1])
        k = bisect.bisect_left(self._docno, docno, lo, hi)   # the topic's rows are in docno order
        if k >= hi or self._docno[k] != docno:
            raise InputError(f"qid {qid!r}, docno {docno!r}: no run retrieved this document for this topic, "
                             f"so the selector cannot record it")
        return int(k)

    # -- public API ---------------------------------------------------------------------------

    @property
    def n_runs(self) -> int:
        """Number of runs (all of them evaluated; :attr:`pool_runs` feed the queue)."""
        return self._S

    @property
    def n_topics(self) -> int:
        """Number of topics (:attr:`topics`)."""
        return self._T

    @property
    def contributions(self) -> Any:
        """Each run's RBP contribution of every retrieved document at the selection ``p``, as
        sparse rows over the aligned table's rows (built once per alignment, p and pool runs):
        ``all_ptr``, ``all_seg``, ``all_run``, ``all_c``, ``all_pos`` over every run, ``pool``,
        ``pool_run``, ``pool_pos`` over the pool runs, ``candidate`` (retrieved by a pool run)."""
        return self._contrib

    @property
    def judged(self) -> np.ndarray:
        """``(J,)`` bool over ``aligned.table`` rows: judged (initial qrels included); a
        read-only view."""
        return _read_only(self._judged)

    @property
    def judged_mass(self) -> np.ndarray:
        """``(n_runs, n_topics)``: the RBP weight at the selection ``p`` of each run's judged
        documents (1 - residual); a read-only view, updated by every judgment."""
        return _read_only(self._mass.reshape(self._S, self._T))

    @property
    def judged_base(self) -> np.ndarray:
        """``(n_runs, n_topics)``: each run's RBP base at the selection ``p`` (the gain of its
        judged documents); a read-only view, updated by every judgment."""
        return _read_only(self._base.reshape(self._S, self._T))

    def gain(self, labels: np.ndarray) -> np.ndarray:
        """Gain in [0, 1] of labels, as the selector counts them (``rel``, ``max_rel``)."""
        return self._gain(labels)

    @property
    def n_judged(self) -> int:
        """Number of judgments recorded by this selector (initial qrels not counted)."""
        return len(self._hist_row)

    def propose(self, n: int | None = None) -> list[tuple[str, str, float]]:
        """The next ``n`` (default ``batch_size``) documents to judge, best first, as
        ``(qid, docno, weight)``; never one already judged or bypassed.  Does not change the state:
        proposing twice without recording gives the same list.  Moffat et al. 2007, Sec. 3-4."""
        if n is None:
            n = self.batch_size
        rows, weights = self._propose_rows(check_int("n", n))
        self._last_prop = dict(zip(rows.tolist(), weights.tolist()))
        return [(self._qid[j], self._docno[j], float(w)) for j, w in zip(rows, weights)]

    def _propose_rows(self, n: int) -> tuple[np.ndarray, np.ndarray]:
        rows, w = self._best(n)
        if n == 1 or self.per_topic_quota is None or not len(rows):
            return rows, w
        # a batch may not take more from a topic than its remaining quota
        k = n
        while True:
            import pandas as pd
            left = self._quota - self._topic_count
            t = self._topic[rows]
            rank = pd.Series(t).groupby(t).cumcount().to_numpy()
            ok = rank < left[t]
            if ok.sum() >= n or len(rows) < k:
                keep = np.flatnonzero(ok)[:n]
                return rows[keep], w[keep]
            k *= 4
            rows, w = self._best(k)

    def _best(self, n: int) -> tuple[np.ndarray, np.ndarray]:
        return self._queue.best(n)

    def record(self, qid: Any, docno: Any, label: float) -> None:
        """Record a judgment: updates the residual and base of the runs that retrieved the document
        (and, for Methods B/C, only the weights this touches).  Moffat et al. 2007, Sec. 3."""
        try:
            y = float(label)
        except (TypeError, ValueError):
            raise InputError(f"qid {qid!r}, docno {docno!r}: expected a numeric label, got {label!r}") from None
        if not np.isfinite(y):
            raise InputError(f"qid {qid!r}, docno {docno!r}: expected a finite label, got {label!r} "
                             f"(use bypass() for a document that cannot be judged)")
        j = self._row(qid, docno)
        if self._judged[j]:
            raise InputError(f"qid {qid!r}, docno {docno!r}: already judged (label {self._labels[j]!r})")
        self._record_row(j, y, self._last_prop.get(j))

    def replay(self, actions: Sequence[str], qids: Sequence[str], docnos: Sequence[str],
               labels: Sequence[float], weights: Sequence[float | None]) -> None:
        """Apply a session's committed steps in order (``"judge"`` or ``"bypass"``): the rows are
        looked up at once and each judgment keeps the weight it was served at, so reopening a long
        session costs a few array updates per step, not a lookup and an exact weight each."""
        rows = self._rows_of(np.asarray(qids, dtype=object), np.asarray(docnos, dtype=object))
        if (rows < 0).any():
            i = int(np.flatnonzero(rows < 0)[0])
            self._row(qids[i], docnos[i])   # raises the error that names the step's document
        for i, (action, j) in enumerate(zip(actions, rows.tolist())):
            if self._judged[j]:
                raise InputError(f"qid {qids[i]!r}, docno {docnos[i]!r}: already judged (step {i + 1})")
            if action == "judge":
                w = weights[i]
                self._record_row(j, float(labels[i]), None if w is None or w != w else float(w))
            else:
                self._bypass_row(j)

    def record_frame(self, df: pd.DataFrame) -> None:
        """Record every row of a ``qid, docno, label`` frame, in order."""
        if not is_frame(df):
            raise InputError(f"record_frame: expected a DataFrame with columns qid, docno, label, got "
                             f"{type(df).__name__}")
        missing = [c for c in ("qid", "docno", "label") if c not in df.columns]
        if missing:
            raise InputError(f"record_frame: missing column(s) {missing}; expected qid, docno, label")
        for i, (q, d, y) in enumerate(zip(df["qid"], df["docno"], df["label"])):
            try:
                self.record(q, d, y)
            except InputError as exc:
                raise InputError(f"record_frame: row {i}: {exc}") from None

    def judge(self, oracle: Any, n: int, missing: str = "nonrel", stop: StopRule | None = None) -> int:
        """Propose and record ``n`` judgments (``batch_size`` at a time) with an oracle: qrels (a
        frame ``qid, docno, label``, or a :class:`~pyterrier_noise.engine.JudgmentTable`, which
        needs no pandas) or a callable ``oracle(qid, docno) -> label or None``.  None,
        or no judgment in the qrels, means non-relevant (``missing="nonrel"``, counted) or
        :meth:`bypass` (``"bypass"``, not counted).  ``stop``: a :class:`StopRule`
        checked before the first judgment and after each one; when it fires, :attr:`stopped`
        says why.  Returns the number recorded, fewer than ``n`` only when the queue is exhausted
        or the stop rule fired."""
        check_choice("missing", missing, MISSING)
        if stop is not None and not isinstance(stop, StopRule):
            raise InputError(f"argument 'stop': expected a StopRule, got {type(stop).__name__}")
        check_int("n", n, 0)
        labels = None
        if is_frame(oracle) or isinstance(oracle, JudgmentTable):
            cached = self._oracle_cache
            if cached is None or cached[0] is not oracle:
                self._oracle_cache = cached = (oracle, labels_for(self, oracle))
            labels = cached[1]
        elif not callable(oracle):
            raise InputError(f"argument 'oracle': expected qrels (a DataFrame or JudgmentTable) or a callable "
                             f"oracle(qid, docno) -> label or None, got {type(oracle).__name__}")
        elif isinstance(oracle, NoisyOracle):   # its replicate is drawn over every document the runs retrieved
            oracle.bind(self._retrieved())
        target = self.n_judged + int(n)
        self.stopped = stop.reason(self) if stop is not None else None
        while self.n_judged < target and self.stopped is None:
            rows, weights = self._propose_rows(min(self.batch_size, target - self.n_judged))
            if not len(rows):
                break
            for j, w in zip(rows.tolist(), weights.tolist()):
                if labels is not None:
                    y = labels[j]
                    y = None if y != y else float(y)   # NaN: no judgment
                else:
                    y = oracle(str(self._qid[j]), str(self._docno[j]))
                    if y is not None:
                        y = float(y)
                        if not np.isfinite(y):
                            y = None
                if y is None:
                    if missing == "bypass":
                        self._bypass_row(j)
                        continue
                    y = 0.0
                self._record_row(j, y, w)
                if stop is not None:
                    self.stopped = stop.reason(self)
                    if self.stopped is not None:
                        break
        return self.n_judged - (target - int(n))

    def _retrieved(self) -> pd.DataFrame:
        """Every (qid, docno) some run retrieved, as a frame (built once)."""
        if self._retrieved_docs is None:
            import pandas as pd
            rows = np.flatnonzero(np.diff(self._contrib.all_ptr) > 0)
            self._retrieved_docs = pd.DataFrame({"qid": self._qid[rows], "docno": self._docno[rows]})
        return self._retrieved_docs

    def bypass(self, qid: Any, docno: Any) -> None:
        """The oracle cannot judge this document: it stays unjudged (it still counts in the
        residuals) and leaves the queue (the paper's Table 2 protocol)."""
        j = self._row(qid, docno)
        if self._judged[j]:
            raise InputError(f"qid {qid!r}, docno {docno!r}: already judged, cannot bypass it")
        self._bypass_row(j)

    def _bypass_row(self, j: int) -> None:
        if self._bypassed[j]:
            return
        self._bypassed[j] = True
        self._events.append(("bypass", j))
        self._byp_rows.append(j)
        self._byp_after.append(self.n_judged)
        self._remove(j)

    def _remove(self, j: int) -> None:
        self._queue.remove(j)

    def _close_topic(self, t: int) -> None:
        self._queue.close(t, self._topic_start[t], self._topic_start[t + 1])

    def _record_row(self, j: int, label: float, weight: float | None) -> None:
        ct = self._contrib
        lo, hi = ct.all_ptr[j], ct.all_ptr[j + 1]
        # intp indices: the updates below index with them without converting each time
        segs = ct.all_seg[lo:hi].astype(np.intp)
        c = ct.all_c[lo:hi]
        runs = ct.all_run[lo:hi].astype(np.intp)
        if self.max_rel is None:
            gain = 1.0 if label >= self.rel else 0.0
        else:
            gain = min(max(label, 0.0), self.max_rel) / self.max_rel
        if weight is None:
            weight = self._queue.weight_now(j)
        # a run retrieves a document at most once per topic, so the fancy-indexed updates are safe
        self._mass[segs] += c
        self._msum[runs] += c
        if gain:
            cg = c * gain
            self._base[segs] += cg
            self._bsum[runs] += cg
        self._labels[j] = label
        self._judged[j] = True
        self._bypassed[j] = False
        t = int(self._topic[j])
        self._topic_count[t] += 1
        self._events.append(("record", j, label))
        self._hist_row.append(j)
        self._hist_w.append(weight)
        self._hist_label.append(label)
        if self._last_prop:
            self._last_prop.pop(j, None)
        self._remove(j)
        self._queue.judged(t, segs, runs, self._mass, self._base, self._msum, self._bsum)
        if self._topic_count[t] >= self._quota[t]:
            self._close_topic(t)

    # -- evaluation ---------------------------------------------------------------------------

    def labels_of(self, qrels: pd.DataFrame | JudgmentTable) -> np.ndarray:
        """Labels of every row of ``aligned.table`` from qrels (a frame, validated by ``read_qrels``,
        or a :class:`~pyterrier_noise.engine.JudgmentTable`); NaN where the qrels have none."""
        out = labels_for(self, qrels)
        if is_frame(qrels) or isinstance(qrels, JudgmentTable):
            self._oracle_cache = (qrels, out)   # judge() with the same qrels looks nothing up again
            return out.copy()
        return out

    def labels(self) -> np.ndarray:
        """Current label of every row of ``aligned.table`` (NaN = unjudged): a label version for
        :meth:`AlignedRuns.evaluate`."""
        return self._labels.copy()

    @property
    def current_labels(self) -> np.ndarray:
        """:meth:`labels` as a read-only view, updated by every judgment (no copy of a label per
        table row)."""
        return _read_only(self._labels)

    def bounds(self, p: float | None = None) -> pd.DataFrame:
        """RBP base, residual, upper (= base + residual) and projected (= base / judged mass; NaN
        when nothing is judged) per run and topic at persistence ``p`` (default: the selection p).
        Moffat, Webber & Zobel 2007, Sec. 2."""
        p = self.p if p is None else check_probability("p", p)
        return ranges_frame(self._ranges(p), self.run_names, self.topics)

    def bounds_arrays(self, p: float | None = None) -> dict[str, np.ndarray]:
        """:meth:`bounds` as ``(n_runs, n_topics)`` arrays (runs in :attr:`run_names` order, topics
        in :attr:`topics` order): ``base``, ``residual``, ``upper`` and ``projected``, without a
        frame (and without pandas).  Moffat, Webber & Zobel 2007, Sec. 2."""
        p = self.p if p is None else check_probability("p", p)
        res = self._ranges(p)
        return {"base": res["base"], "residual": res["residual"], "upper": res["base"] + res["residual"],
                "projected": res["projected"]}

    def system_bounds(self, p: float | None = None) -> pd.DataFrame:
        """Per-run means over topics of :meth:`bounds` (projected: a topic with nothing judged
        counts its midpoint base + residual/2)."""
        p = self.p if p is None else check_probability("p", p)
        return system_ranges(self._ranges(p), self.run_names)

    def _ranges(self, p: float) -> dict[str, np.ndarray]:
        return judged_ranges(self._contrib, self._judged, self._labels, self._gain, (self._S, self._T), [p])[p]

    def judged_qrels(self, include_initial: bool = True) -> pd.DataFrame:
        """The judgments as a ``qid, docno, label`` frame: initial qrels first, then in judgment order."""
        import pandas as pd
        rows = np.asarray(self._hist_row, dtype=np.int64)
        new = pd.DataFrame({"qid": self._qid[rows], "docno": self._docno[rows],
                            "label": np.asarray(self._hist_label, dtype=np.float64)})
        if not include_initial:
            return new
        parts = self._initial_parts()
        return pd.concat(parts + [new], ignore_index=True) if parts else new

    @property
    def history(self) -> pd.DataFrame:
        """One row per judgment recorded: step (1-based), qid, docno, weight (at selection), label."""
        import pandas as pd
        rows = np.asarray(self._hist_row, dtype=np.int64)
        return pd.DataFrame({"step": np.arange(1, len(rows) + 1), "qid": self._qid[rows], "docno": self._docno[rows],
                             "weight": np.asarray(self._hist_w, dtype=np.float64),
                             "label": np.asarray(self._hist_label, dtype=np.float64)})

    @property
    def bypassed(self) -> pd.DataFrame:
        """Documents bypassed so far: qid, docno, and the number of judgments made before."""
        import pandas as pd
        rows = np.asarray(self._byp_rows, dtype=np.int64)
        keep = self._bypassed[rows] if len(rows) else np.zeros(0, dtype=bool)
        return pd.DataFrame({"qid": self._qid[rows][keep], "docno": self._docno[rows][keep],
                             "after": np.asarray(self._byp_after, dtype=np.int64)[keep]})

    @property
    def topic_counts(self) -> pd.Series:
        """New judgments per topic (a global queue gives topics different numbers)."""
        import pandas as pd
        return pd.Series(self._topic_count.copy(), index=pd.Index(self.topics, name="qid"), name="judgments")

    def queue(self) -> pd.DataFrame:
        """The static queue of pooling or Method A, best first (Moffat et al. 2007,
        Sec. 3): every document still in the queue, within what each topic's quota
        leaves, as ``qid, docno, weight`` (pooling also ``depth``: the best 1-based rank a pool run
        gives the document).  Methods B and C have no static queue: use :meth:`propose`."""
        if not self._queue.static:
            raise InputError(f"queue(): method {self.method!r} has no static queue (its weights change as "
                             f"documents are judged); use propose()")
        import pandas as pd
        order, static_w, static_depth = self._queue.static_rows()
        topic = self._topic[order]
        rank = pd.Series(topic).groupby(topic).cumcount().to_numpy()   # rank within the topic
        rows = order[rank < (self._quota - self._topic_count)[topic]]
        out = {"qid": self._qid[rows], "docno": self._docno[rows]}
        if self.method == "pool":
            out["depth"] = static_depth[rows] + 1
        out["weight"] = static_w[rows]
        return pd.DataFrame(out)

    def weights(self) -> pd.DataFrame:
        """Current weight of every document still in the queue (qid, docno, weight), best first."""
        import pandas as pd
        rows, w = self._queue.all_weights()
        return pd.DataFrame({"qid": self._qid[rows], "docno": self._docno[rows], "weight": w})

    # -- state --------------------------------------------------------------------------------

    def _params(self) -> dict:
        quota = self.per_topic_quota
        if isinstance(quota, Mapping):
            quota = {str(k): int(v) for k, v in quota.items()}
        return dict(p=self.p, method=self.method, power=self.power, residual_scope=self.residual_scope,
                    score_scope=self.score_scope, batch_size=self.batch_size, tie_break=self.tie_break,
                    seed=self.seed, pool_runs=None if len(self.pool_runs) == len(self.run_names) else list(self.pool_runs),
                    per_topic_quota=quota, rel=self.rel, max_rel=self.max_rel)

    def state_dict(self) -> dict:
        """Everything needed to resume: the parameters, the initial qrels and the ordered
        record / bypass calls (JSON-serialisable).  :meth:`from_state` replays them."""
        events = []
        for e in self._events:
            if e[0] == "record":
                events.append(["record", str(self._qid[e[1]]), str(self._docno[e[1]]), float(e[2])])
            else:
                events.append(["bypass", str(self._qid[e[1]]), str(self._docno[e[1]])])
        init = [[str(q), str(d), float(y)] for x in self._initial_parts()
                for q, d, y in zip(x["qid"], x["docno"], x["label"])]
        return {"format": _STATE_FORMAT, "params": self._params(), "runs": list(self.run_names),
                "topics": list(self.topics),
                "initial_qrels": init,
                "events": events}

    @classmethod
    def from_state(cls, runs: Any, state: Mapping) -> "JudgmentSelector":
        """Rebuild a selector from :meth:`state_dict` by replaying its calls in order (same runs
        required); its next proposals are exactly those the original would make."""
        if not isinstance(state, Mapping) or state.get("format") != _STATE_FORMAT:
            raise InputError(f"from_state: expected a state_dict() of format {_STATE_FORMAT!r}")
        import pandas as pd
        init = state.get("initial_qrels") or []
        qrels = pd.DataFrame(init, columns=["qid", "docno", "label"]) if init else None
        sel = cls(runs, initial_qrels=qrels, **state["params"])
        if list(sel.run_names) != list(state.get("runs", [])):
            raise InputError(f"from_state: the runs differ from those of the saved state "
                             f"({len(sel.run_names)} runs given, {len(state.get('runs', []))} saved)")
        for e in state.get("events", []):
            if e[0] == "record":
                sel.record(e[1], e[2], e[3])
            elif e[0] == "bypass":
                sel.bypass(e[1], e[2])
            else:
                raise InputError(f"from_state: unknown event {e[0]!r}")
        return sel

    def __repr__(self) -> str:
        return (f"JudgmentSelector(method={self.method!r}, p={self.p}, runs={len(self.run_names)}, "
                f"topics={len(self.topics)}, judged={self.n_judged})")




def _read_only(a: np.ndarray) -> np.ndarray:
    view = a.view()
    view.flags.writeable = False
    return view


class _RowQids:
    """The qid of every table row, as an array indexed by rows (an int, or an array of them):
    each row's topic name, looked up when asked for."""

    def __init__(self, names: np.ndarray, topic: np.ndarray) -> None:
        self.names, self.topic = names, topic

    def __getitem__(self, rows: Any) -> Any:
        return self.names[self.topic[rows]]

    def __len__(self) -> int:
        return len(self.topic)


class _RowDocnos:
    """The docno of every table row, as an array indexed by rows: :meth:`JudgmentTable.docnos_of`."""

    def __init__(self, table: JudgmentTable) -> None:
        self.table = table

    def __getitem__(self, rows: Any) -> Any:
        return self.table.docnos_of(rows)


def labels_for(sel: JudgmentSelector, qrels: pd.DataFrame | JudgmentTable) -> np.ndarray:
    """Labels of the selector's table rows from qrels, a frame (validated by ``read_qrels``) or a
    :class:`~pyterrier_noise.engine.JudgmentTable` (NaN where the qrels have none)."""
    if qrels is sel.aligned.table:   # the alignment's own table: its labels, row for row (read only)
        return _read_only(np.asarray(qrels.labels, dtype=np.float64))
    out = np.full(len(sel.aligned.table), np.nan)
    if isinstance(qrels, JudgmentTable):
        qids, docnos, labels = np.asarray(qrels.topics, dtype=object)[qrels.topic_index], qrels.docno, qrels.labels
    else:
        from ..io import read_qrels
        qrels = read_qrels(qrels)
        qids, docnos = qrels["qid"].to_numpy(dtype=object), qrels["docno"].to_numpy(dtype=object)
        labels = qrels["label"].to_numpy(dtype=np.float64)
    rows = sel._rows_of(qids, docnos)
    ok = rows >= 0
    out[rows[ok]] = labels[ok]
    return out

