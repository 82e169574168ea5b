"""The selection queue: the static order (pooling, Method A) and the exactly tracked head of the
adaptive queue (Methods B and C), Moffat, Webber & Zobel 2007, Sec. 3-4.

A :class:`SelectionQueue` is owned by a :class:`~pyterrier_noise.selection.JudgmentSelector`: the
selector keeps the judgments (labels, judged RBP mass and base per run and topic) and tells the
queue what changed; the queue keeps which documents are still available and their weights.  See
the selector module's docstring for how the exact greedy order is found fast.
"""
from __future__ import annotations

import math
from typing import Any

import numpy as np

# relative slack when comparing a bound or a BLAS estimate with an exact weight: far above the
# rounding error of a sum of a few hundred positive terms (~1e-13), far below any real difference
_SLACK = 1e-9

# rows per block where a pass over every row would otherwise make temporaries of every row
_BLOCK_ROWS = 1 << 20


class _RowNumbers:
    """The tie key that is each row's number (the table's (qid, docno) order): ``key[rows]`` is
    ``rows`` (int32 where the rows allow), and an array of every row is made only when asked for
    (``np.asarray``: the static order of pooling and Method A)."""

    def __init__(self, n: int) -> None:
        self.n, self.dtype = n, np.dtype(np.int32 if n < 2 ** 31 else np.int64)

    def __getitem__(self, rows: Any) -> np.ndarray:
        return np.asarray(rows).astype(self.dtype)

    def __len__(self) -> int:
        return self.n

    def __array__(self, dtype: Any = None, copy: Any = None) -> np.ndarray:
        return np.arange(self.n, dtype=dtype or self.dtype)


class SelectionQueue:
    """The documents still to judge and their weights, best first.

    Built once the initial judgments are known, from the selector's contributions and its
    settings; afterwards the selector calls:

    * :meth:`best` -- the ``n`` available rows of largest weight, exact, ties by the tie key;
    * :meth:`remove` -- a row leaves the queue (judged or bypassed);
    * :meth:`close` -- a topic's rows leave the queue (its quota is reached);
    * :meth:`judged` -- the weights after a judgment (Methods B and C: the run factors of the
      runs that retrieved the judged document);
    * :meth:`weight_now` -- the exact current weight of one row;
    * :attr:`static`, :meth:`static_rows`, :meth:`all_weights` -- what ``queue()`` and
      ``weights()`` of the selector show.

    ``contrib``: the selector's :attr:`~pyterrier_noise.selection.JudgmentSelector.contributions`.
    Rows are those of the aligned judgment table (``topic``: each row's topic index; ``tiekey``:
    its tie-break key, None: the row number; ``available``: the rows in the queue at the start, an
    array the queue then owns); ``pool_mask`` marks the runs that feed the pool; ``mass`` and ``base`` are the judged
    RBP mass and base per segment ``run * n_topics + topic`` and ``msum``, ``bsum`` their sums
    per run.
    """

    # rows of the Method A prefix a full rebuild of the head computes at least (speed only)
    _min_prefix = 8192

    def __init__(self, contrib: Any, topic: np.ndarray, tiekey: np.ndarray, available: np.ndarray,
                 pool_mask: np.ndarray, n_topics: int, *, p: float, method: str, power: float, residual_scope: str,
                 score_scope: str, tie_break: str, head_size: int, mass: np.ndarray, base: np.ndarray,
                 msum: np.ndarray, bsum: np.ndarray) -> None:
        self._contrib = contrib
        self._topic = topic
        self._tiekey = tiekey if tiekey is not None else _RowNumbers(len(topic))
        self._avail = available
        self._pool_mask = pool_mask
        self._S, self._T, self._J = len(pool_mask), n_topics, len(topic)
        self.p, self.method, self.power = p, method, power
        self.residual_scope, self.score_scope = residual_scope, score_scope
        self.tie_break, self.head_size = tie_break, head_size
        self._static_w: np.ndarray | None = None
        self._order: np.ndarray | None = None
        self._ptr = 0
        self._head: dict | None = None
        self._head_scale = 1
        self._prefix = 0
        if method in ("pool", "A"):
            self._build_static()
        else:
            self._init_factors(mass, base, msum, bsum)

    # -- the interface ----------------------------------------------------------------------------

    @property
    def static(self) -> bool:
        """True for pooling and Method A, whose weights do not change as documents are judged."""
        return self._order is not None

    @property
    def available(self) -> np.ndarray:
        """``(J,)`` bool: the rows still in the queue (a read-only view)."""
        view = self._avail.view()
        view.flags.writeable = False
        return view

    def best(self, n: int) -> tuple[np.ndarray, np.ndarray]:
        """The ``n`` available rows of largest weight (fewer when the queue runs out), best first,
        and their exact weights."""
        if self._order is not None:
            rows = self._propose_static(n)
            return rows, self._static_w[rows]
        return self._propose_dynamic(n)

    def remove(self, j: int) -> None:
        """Row ``j`` leaves the queue."""
        self._avail[j] = False
        h = self._head
        if h is not None:   # its place in the head, whose rows are sorted (no array over every row)
            k = int(np.searchsorted(h["rows"], j))
            if k < len(h["rows"]) and h["rows"][k] == j:
                h["C"][k] = 0.0
                h["U"][k] = 0.0
                h["w"][k] = 0.0

    def close(self, t: int, a: int, b: int) -> None:
        """Topic ``t``, rows ``[a, b)``, leaves the queue."""
        self._avail[a:b] = False
        h = self._head
        if h is not None:
            x, y = self._block(t)
            h["C"][x:y] = 0.0
            h["U"][x:y] = 0.0
            h["w"][x:y] = 0.0

    def judged(self, t: int, segs: np.ndarray, runs: np.ndarray, mass: np.ndarray, base: np.ndarray,
               msum: np.ndarray, bsum: np.ndarray) -> None:
        """A document of topic ``t`` was judged: ``segs`` and ``runs`` (``intp``) are the segments
        and runs that retrieved it, ``mass`` ... ``bsum`` the judged state after the judgment."""
        if self._order is None:
            self._update_factors(t, segs, runs, mass, base, msum, bsum)

    def weight_now(self, j: int) -> float:
        """The exact current weight of row ``j`` (0 for a row no pool run retrieved)."""
        if not self._contrib.candidate[j]:
            return 0.0
        if self._static_w is not None:
            return float(self._static_w[j])
        return float(self._exact(np.asarray([j]))[0])

    def static_rows(self) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
        """Pooling and Method A: the available rows in queue order, with the static weight and the
        best 0-based rank of every row (``(J,)`` arrays)."""
        return self._order[self._avail[self._order]], self._static_w, self._static_depth

    def all_weights(self) -> tuple[np.ndarray, np.ndarray]:
        """Every available row, best first (ties by the tie key), and its current weight."""
        if self._static_w is not None:
            rows = self._order[self._avail[self._order]]
            return rows, self._static_w[rows]
        v = self._contrib.pool @ self._factor_flat()
        rows = np.flatnonzero(self._avail)
        order = np.lexsort((self._tiekey[rows], -v[rows]))
        rows = rows[order]
        return rows, v[rows]

    # -- the internals -----------------------------------------------------------------------------

    # -- static methods (pooling, Method A) -----------------------------------------------------

    def _build_static(self) -> None:
        pool = self._contrib.pool
        J = self._J
        nz = np.flatnonzero(np.diff(pool.indptr) > 0)
        starts = pool.indptr[nz]
        w = np.zeros(J)
        depth = np.full(J, np.iinfo(np.int64).max, dtype=np.int64)
        if self.method == "A":
            # per-row sums in CSR order (reduceat: each row's sum depends on that row only)
            if len(nz):
                w[nz] = np.add.reduceat(pool.data, starts)
            key = (np.asarray(self._tiekey), -w)
        else:
            # pooling: the weight is the largest contribution, i.e. the best rank any pool run gives
            # the document; ties by depth, then the first run (in run order) reaching that depth,
            # then qid / docno -- entries are in run order within a row
            first_run = np.zeros(J, dtype=np.int64)
            if len(nz):
                pos = self._contrib.pool_pos
                depth[nz] = np.minimum.reduceat(pos, starts)
                row_of = np.repeat(np.arange(J), np.diff(pool.indptr))
                idx = np.flatnonzero(pos == depth[row_of])
                _, first = np.unique(row_of[idx], return_index=True)
                first_run[nz] = self._contrib.pool_run[idx[first]]
                w[nz] = (1.0 - self.p) * self.p ** depth[nz].astype(np.float64)
            if self.tie_break == "random":
                key = (np.asarray(self._tiekey), depth)
            else:
                key = (np.asarray(self._tiekey), first_run, depth)
        cand = self._contrib.candidate
        order = np.lexsort(key)
        self._order = order[cand[order]]
        self._static_w = w
        self._static_depth = depth
        self._ptr = 0

    def _propose_static(self, n: int) -> np.ndarray:
        order, avail = self._order, self._avail
        ptr = self._ptr
        while ptr < len(order) and not avail[order[ptr]]:
            ptr += 1
        self._ptr = ptr
        out: list[np.ndarray] = []
        got = 0
        width = max(4 * n, 64)
        pos = ptr
        while got < n and pos < len(order):
            chunk = order[pos:pos + width]
            ok = chunk[avail[chunk]]
            out.append(ok[:n - got])
            got += min(len(ok), n - got)
            pos += width
            width *= 2
        return np.concatenate(out) if out else np.zeros(0, dtype=np.int64)

    # -- dynamic methods (B, C): run factors ----------------------------------------------------

    def _init_factors(self, mass: np.ndarray, base: np.ndarray, msum: np.ndarray, bsum: np.ndarray) -> None:
        """Factor of segment (s, q) = X[q, s] * g[s]: X holds what depends on the topic, g what
        depends on the run only ("factor(s, q)")."""
        S, T = self._S, self._T
        C = self.method == "C" and self.power > 0
        self._c_query = C and self.score_scope == "query"
        self._c_system = C and self.score_scope == "system"
        self._inv_T = 1.0 / T
        self._x_query = self.residual_scope == "query" or (C and self.score_scope == "query")
        self._g_const = not (self.residual_scope == "system" or (C and self.score_scope == "system"))
        # residuals only fall; Method C's midpoints rise when a relevant document is found
        self._x_grows = C and self.score_scope == "query"
        self._g_grows = C and self.score_scope == "system"
        self._XT = np.ones((T, S))
        self._g = np.ones(S)
        if self._x_query:
            self._XT[:] = self._x_values(mass.reshape(S, T), base.reshape(S, T)).T
        if not self._g_const:
            self._g[:] = self._g_values(msum, bsum)
        # rows by decreasing Method A weight (sum of contributions, an upper bound on any weight
        # divided by the largest factor): a refresh only computes the prefix that can matter
        pool = self._contrib.pool
        cand = self._contrib.candidate   # the rows a pool run retrieved
        n_cand = int(np.count_nonzero(cand))
        if n_cand == self._J:   # every row (all runs feed the pool): one segmented sum, no row list
            A = np.add.reduceat(pool.data, pool.indptr[:-1]) if self._J else np.zeros(0)
        else:   # a block of rows at a time: no row list or sums of every row beside A
            A = np.zeros(self._J)
            for a in range(0, self._J, _BLOCK_ROWS):   # (the block's entries end at its last row's end)
                b = min(a + _BLOCK_ROWS, self._J)
                nz = np.flatnonzero(cand[a:b]) + a
                if len(nz):
                    A[nz] = np.add.reduceat(pool.data[:int(pool.indptr[b])], pool.indptr[nz])
                del nz
        # sorted lazily (_a_top): a selection reads a few percent of the rows, so only the prefix
        # it reaches is sorted.  The rows not yet sorted are those whose negated weight in _a_neg is
        # finite (one array over the rows, in place: no list of the other rows and their weights,
        # nor a copy of them at each extension)
        self._a_n = n_cand
        self._a_order = np.zeros(0, dtype=np.int64)
        self._a_sorted = np.zeros(0)
        np.negative(A, out=A)
        self._a_neg = A
        if n_cand < self._J:
            np.copyto(A, np.inf, where=~cand)   # retrieved by no pool run: never sorted
        del A
        self._a_rows: Any = None   # the rows of pool in this order, a prefix at a time (_a_prefix)
        self._reserve: dict | None = None   # kept by a full rebuild of the head (_refresh_full)
        # each run's largest topic factor and the topic holding it, brought up to date at a full
        # rebuild from the topics judged since (_largest_factor), so that the largest segment
        # factor costs n_runs x judged topics operations, not n_runs x n_topics
        self._xmax = self._XT.max(axis=0) if T else np.zeros(S)
        self._xarg = self._XT.argmax(axis=0) if T else np.zeros(S, dtype=np.int64)
        self._x_touched: list[int] = []
        self._exact_cache: dict[int, float] = {}       # row -> exact weight at the current factors
        self._exact_topics: dict[int, list[int]] = {}  # topic -> its rows in the cache

    def _a_top(self, m: int) -> tuple[np.ndarray, np.ndarray]:
        """The rows in decreasing Method A weight and their weights, at least the first ``m + 1``
        of them (or all): what is not yet sorted is partitioned off (every weight in it is at most
        the last sorted one), and each extension at least quadruples the sorted prefix."""
        have = len(self._a_order)
        need = min(m + 1, self._a_n)
        if have < need:
            neg, left = self._a_neg, self._a_n - have
            k = min(left, max(need - have, 3 * have))
            # the k unsorted rows of largest weight (the sorted ones and the rows outside the pool
            # are +inf in neg, after every unsorted row)
            top = np.argpartition(neg, k - 1)[:k] if k < left else np.flatnonzero(neg < np.inf)
            top = top[np.argsort(neg[top], kind="stable")]
            self._a_order = np.concatenate([self._a_order, top])
            self._a_sorted = np.concatenate([self._a_sorted, -neg[top]])
            neg[top] = np.inf
        return self._a_order, self._a_sorted

    def _a_prefix(self, m: int) -> Any:
        """The pool's rows in decreasing Method A order, at least the first ``m`` of them, as a CSR
        matrix: built for the prefix a refresh needs (and grown fourfold when a refresh needs more),
        not for every row at once -- a selector is ready without gathering millions of entries."""
        have = self._a_rows
        if have is None or have.shape[0] < m:
            n_rows = self._a_n
            size = n_rows if have is not None and 4 * have.shape[0] >= n_rows else min(n_rows, max(m, 4 * (
                have.shape[0] if have is not None else 0)))
            order, _ = self._a_top(size)
            if have is None:
                self._a_rows = have = self._contrib.pool.take_rows(order[:size])
            else:   # only the new rows are gathered
                self._a_rows = have = have.append(self._contrib.pool.take_rows(order[have.shape[0]:size]))
        return have

    def _x_values(self, mass: np.ndarray, base: np.ndarray | None) -> np.ndarray:
        r = 1.0 - mass
        np.maximum(r, 0.0, out=r)
        if self._c_query:
            mid = base + 0.5 * r
            return (r * mid ** self.power) if self.residual_scope == "query" else mid ** self.power
        return r if self.residual_scope == "query" else np.ones_like(r)

    def _g_values(self, msum: np.ndarray, bsum: np.ndarray) -> np.ndarray:
        r = 1.0 - msum * self._inv_T
        np.maximum(r, 0.0, out=r)
        if self._c_system:
            mid = bsum * self._inv_T + 0.5 * r
            return (r * mid ** self.power) if self.residual_scope == "system" else mid ** self.power
        return r if self.residual_scope == "system" else np.ones_like(r)

    def _exact(self, rows: np.ndarray) -> np.ndarray:
        """Current weight of each row, summed exactly (math.fsum) so that it does not depend on
        the summation order: the same state always gives the same bits."""
        ptr, data, prun = self._contrib.pool.indptr, self._contrib.pool.data, self._contrib.pool_run
        cache, by_topic = self._exact_cache, self._exact_topics
        rows = rows.tolist()
        # kept until a factor of the row changes (_update_factors): rows tied at the top stay tied
        # step after step when many topics share one pattern of weights
        miss = [j for j in rows if j not in cache]   # only the few rows tied at the top
        if miss:
            # the products of every missing row at once (the same operations as _exact_one, so the
            # same bits), then each row's exact sum
            m = np.asarray(miss, dtype=np.int64)
            lo = ptr[m]
            lens = ptr[m + 1] - lo
            ends = np.cumsum(lens)
            idx = np.repeat(lo - (ends - lens), lens) + np.arange(int(ends[-1]))
            run = prun[idx].astype(np.intp)
            t = np.repeat(self._topic[m], lens)
            prod = (data[idx] * (self._XT[t, run] * self._g.take(run))).tolist()
            a = 0
            for j, b, tj in zip(miss, ends.tolist(), self._topic[m].tolist()):
                cache[j] = math.fsum(prod[a:b])
                by_topic.setdefault(tj, []).append(j)
                a = b
        return np.asarray([cache[j] for j in rows], dtype=np.float64)

    def _exact_one(self, j: int) -> float:
        """:meth:`_exact` of one row (the same operations, so the same bits)."""
        pool = self._contrib.pool
        lo, hi = pool.indptr[j], pool.indptr[j + 1]
        run = self._contrib.pool_run[lo:hi].astype(np.intp)
        return math.fsum((pool.data[lo:hi] * (self._XT[self._topic[j]].take(run) * self._g.take(run))).tolist())

    def _factor_flat(self) -> np.ndarray:
        """f[s * T + q] for every segment."""
        return (self._XT * self._g[None, :]).T.ravel()

    def _times_factors(self, W: Any) -> np.ndarray:
        """``W @ f`` (f: :meth:`_factor_flat`), with f computed only at W's entries when they are
        fewer than the segments (the same products, so the same bits): a rebuild of the head costs
        what its rows hold, not n_runs x n_topics."""
        if len(W.indices) >= self._S * self._T:
            return W @ self._factor_flat()
        s, q = np.divmod(W.indices, self._T)
        return W.row_sums(self._XT[q, s] * self._g[s])

    def _largest_factor(self) -> float:
        """The largest factor of a pool run's segment: max over pool runs of (largest X) * g, the
        same value as the maximum of f (rounding is monotonic and the factors are >= 0)."""
        if not self._T or not self._pool_mask.any():
            return 0.0
        if self._x_touched:
            touched = np.unique(np.asarray(self._x_touched, dtype=np.int64))
            self._x_touched.clear()
            # a run whose largest X was at a judged topic: its column again; another: the larger of
            # its largest X (at a topic not judged since) and the judged topics' (X can grow)
            stale = np.isin(self._xarg, touched)
            sub = self._XT[touched]
            best = sub.argmax(axis=0)
            val = sub[best, np.arange(self._S)]
            up = ~stale & (val > self._xmax)
            self._xmax[up] = val[up]
            self._xarg[up] = touched[best[up]]
            cols = np.flatnonzero(stale)
            if len(cols):
                full = self._XT[:, cols]
                self._xarg[cols] = full.argmax(axis=0)
                self._xmax[cols] = full.max(axis=0)
        return float((self._xmax * self._g)[self._pool_mask].max())

    def _block(self, t: int) -> tuple[int, int]:
        """The head's rows ``[a, b)`` of topic ``t`` (the head is in table order): from every
        topic's boundaries when the topics are few, else looked up once per head and topic."""
        h = self._head
        if h["block"] is not None:
            return h["block"][t], h["block"][t + 1]
        ab = h["blocks"].get(t)
        if ab is None:
            tp = h["topic"]
            a, b = int(tp.searchsorted(t)), int(tp.searchsorted(t + 1))
            ab = h["blocks"][t] = (a, b)
        return ab

    def _refresh(self, n: int) -> None:
        """Rebuild the head: the available candidates of largest weight, as a dense (head x runs)
        matrix.  Weights are computed for a prefix of the rows by decreasing Method A weight,
        long enough that no row beyond it (weight <= A * largest factor) can enter the head.

        A full rebuild also keeps a *reserve*: the rows of largest weight after the head's (eight
        times as many), with a bound on every row outside head and reserve.  The next rebuilds
        recompute only the head's and reserve's rows, as long as their best beat that bound times
        the growth of the factors since the full rebuild; otherwise the rebuild is full again."""
        S = self._S
        n_avail = int(np.count_nonzero(self._avail))
        k = min(max(self.head_size, 4 * n) * self._head_scale, n_avail)
        picked = self._refresh_from_reserve(k)
        if picked is None:
            picked = self._refresh_full(k)
        rows, rest = picked
        rows = np.sort(rows)   # table order: grouped by topic
        # dense contributions of the head rows
        pool = self._contrib.pool
        lens = pool.indptr[rows + 1] - pool.indptr[rows]
        offs = np.zeros(len(rows), dtype=np.int64)
        np.cumsum(lens[:-1], out=offs[1:])
        idx = np.repeat(pool.indptr[rows] - offs, lens) + np.arange(int(lens.sum()))
        C = np.zeros((len(rows), S))
        C[np.repeat(np.arange(len(rows)), lens), self._contrib.pool_run[idx]] = pool.data[idx]
        topic = self._topic[rows]
        U = C * self._XT[topic]
        T = self._T   # few topics next to the head's rows: every topic's boundary at once
        block = np.searchsorted(topic, np.arange(T + 1)) if T <= 8 * len(rows) else None
        self._head = dict(rows=rows, C=C, U=U, w=U @ self._g, topic=topic, block=block, blocks={}, rest=rest,
                          dirty_all=False, dirty=set(), **self._inverse_factors())

    def _inverse_factors(self) -> dict:
        """1 / the current run factors g (pool runs; 0 elsewhere) and topic factors X (0 where 0):
        the baseline of :meth:`_growth`; ``rx``: the largest X / X0 since (an upper bound, raised
        by each judgment at the entries it changes: :meth:`_update_factors`)."""
        inv_g0 = inv_x0 = None   # needed only for factors that can grow (_growth_since)
        rx = 1.0
        if self._g_grows:
            g0 = np.where(self._pool_mask, self._g, 0.0)
            inv_g0 = np.where(g0 > 0, 1.0 / np.where(g0 > 0, g0, 1.0), 0.0)
        if self._x_grows:
            XT0 = self._XT
            inv_x0 = np.where(XT0 > 0, 1.0 / np.where(XT0 > 0, XT0, 1.0), 0.0)
            ratio = XT0 * inv_x0
            rx = float(ratio.max()) if ratio.size else 1.0
        return dict(inv_g0=inv_g0, inv_x0=inv_x0, rx=rx)

    def _refresh_full(self, k: int) -> tuple[np.ndarray, float]:
        """The ``k`` available rows of largest weight over the Method A prefix that can matter, and
        the bound on every other row; keeps the reserve for :meth:`_refresh_from_reserve`."""
        fmax = self._largest_factor()
        n_rows = self._a_n
        m = min(n_rows, max(8 * k, self._min_prefix, self._prefix))
        while True:
            order, A = self._a_top(m)
            W = self._a_prefix(m)
            v = self._times_factors(W.head(m))
            rows = order[:m]
            v[~self._avail[rows]] = -np.inf
            outside = float(A[m]) * fmax if m < n_rows else -np.inf
            n_ok = int(np.count_nonzero(np.isfinite(v)))
            if k == 0 or n_ok < k:
                tau = -np.inf
            else:
                tau = float(-np.partition(-v, k - 1)[k - 1])
            if m == n_rows or (n_ok >= k and outside * (1 + _SLACK) < tau * (1 - _SLACK)):
                break
            m = min(n_rows, 4 * m)
        self._prefix = m   # the prefix needed only grows as weights fall: start there next time
        self._reserve = None
        if n_ok <= k:
            keep = np.isfinite(v)
            return rows[keep], max(-np.inf, outside)
        keep = v >= tau
        below = v[(~keep) & np.isfinite(v)]
        rest = max(float(below.max()) if len(below) else -np.inf, outside)
        # the reserve: head and the next 8k rows; the bound on the others, at today's factors
        r = min(n_ok, 9 * k)
        if r > int(np.count_nonzero(keep)) and r < n_ok:
            cut = float(-np.partition(-v, r)[r])            # the largest weight left out
            cand = np.flatnonzero(v > cut)
            res_rest = max(cut, outside)
            self._reserve = dict(rows=rows[cand], W=self._contrib.pool.take_rows(rows[cand]), rest=res_rest,
                                 **self._inverse_factors())
        return rows[keep], rest

    def _refresh_from_reserve(self, k: int) -> tuple[np.ndarray, float] | None:
        """The head from the reserve kept by the last full rebuild, when the reserve alone decides
        it: its ``k``-th best weight beats the bound on every row outside it (the bound at the full
        rebuild times the growth of any factor since).  None when it does not."""
        res = self._reserve
        if res is None or k == 0:
            return None
        v = self._times_factors(res["W"])
        v[~self._avail[res["rows"]]] = -np.inf
        n_ok = int(np.count_nonzero(np.isfinite(v)))
        if n_ok <= k:
            return None
        tau = float(-np.partition(-v, k - 1)[k - 1])
        bound = res["rest"]
        if bound != -np.inf:
            bound *= self._growth_since(res)
        if not bound * (1 + _SLACK) < tau * (1 - _SLACK):
            return None
        keep = v >= tau
        below = v[(~keep) & np.isfinite(v)]
        rest = max(float(below.max()) if len(below) else -np.inf, bound)
        return res["rows"][keep], rest

    def _growth_since(self, base: dict) -> float:
        """Upper bound on the growth of any segment's factor since the factors whose inverses
        ``base`` holds (:meth:`_inverse_factors`): w <= w0 * max(f / f0) for every row."""
        rho = 1.0
        if self._x_grows:
            rho *= base["rx"]
        if self._g_grows:
            rho *= float((self._g * base["inv_g0"]).max())
        return rho

    def _growth(self) -> float:
        """Upper bound on the growth of any segment's factor since the last refresh: w <= w0 *
        max(f / f0) for every row outside the head."""
        return self._growth_since(self._head)

    def _head_weights(self) -> np.ndarray:
        h = self._head
        if h["dirty_all"]:
            np.dot(h["U"], self._g, out=h["w"])
            h["dirty_all"] = False
            h["dirty"].clear()
        elif h["dirty"]:
            for t in h["dirty"]:  # the topics judged since the last proposal (usually one)
                a, b = self._block(t)
                h["w"][a:b] = h["U"][a:b] @ self._g
            h["dirty"].clear()
        return h["w"]

    def _propose_dynamic(self, n: int) -> tuple[np.ndarray, np.ndarray]:
        """The exact top ``n``: the head's best, provided they beat the bound on every other
        candidate; otherwise rebuild the head (bigger if a fresh head cannot decide, i.e. weights
        tie across its boundary)."""
        fresh = False
        while True:
            if self._head is None:
                self._refresh(n)
                fresh = True
            w = self._head_weights()
            rest = self._head["rest"]
            if n == 1:
                best = int(w.argmax()) if len(w) else -1
                tau = float(w[best]) if len(w) else 0.0
                m = 1 if tau > 0 else 0
            else:
                m = min(n, int(np.count_nonzero(w > 0)))
                tau = float(-np.partition(-w, m - 1)[m - 1]) if m else 0.0
            if rest == -np.inf:  # the head holds every available candidate
                if m == 0:
                    return np.zeros(0, dtype=np.int64), np.zeros(0)
                break
            if m == n and rest * self._growth() * (1 + _SLACK) < tau * (1 - _SLACK):
                break
            if fresh:
                self._head_scale *= 4
                self._reserve = None   # a fresh head could not decide: the next rebuild is full
            self._head = None
        if n == 1 and np.count_nonzero(w >= tau * (1 - _SLACK)) == 1:
            rows = self._head["rows"][best:best + 1]
            return rows, np.array([self._exact_one(int(rows[0]))])
        cand = np.flatnonzero(w >= tau * (1 - _SLACK))
        rows = self._head["rows"][cand]
        exact = self._exact(rows)
        order = np.lexsort((self._tiekey[rows], -exact))[:m]
        return rows[order], exact[order]

    def _update_factors(self, t: int, segs: np.ndarray, runs: np.ndarray, mass: np.ndarray, base: np.ndarray,
                        msum: np.ndarray, bsum: np.ndarray) -> None:
        """Only the factors of the runs that retrieved the judged document change: in its topic
        (X) and, for run-level scopes, the run's factor in every topic (g).  ``segs`` and ``runs``
        are ``intp`` arrays (indexing with them needs no conversion)."""
        h = self._head
        if not self._g_const:
            self._exact_cache.clear()
            self._exact_topics.clear()
        else:
            for j in self._exact_topics.pop(t, ()):
                del self._exact_cache[j]
        if self._x_query:
            XT_t = self._XT[t]
            x = self._x_values(mass.take(segs), base.take(segs) if self._c_query else None)
            XT_t.put(runs, x)
            self._x_touched.append(t)   # for the largest X (_largest_factor)
            if self._x_grows:
                for b0 in (h, self._reserve):   # X / X0 at the entries that changed
                    if b0 is not None:
                        r = float((x * b0["inv_x0"][t].take(runs)).max()) if len(runs) else 0.0
                        if r > b0["rx"]:
                            b0["rx"] = r
            if h is not None:
                a, b = self._block(t)
                if b > a:
                    np.multiply(h["C"][a:b], XT_t, out=h["U"][a:b])
                    h["dirty"].add(t)
        if not self._g_const:
            # every run's factor from the run sums (those of other runs come out as they were):
            # a few operations on n_runs values instead of gathering and scattering the changed ones
            self._g = self._g_values(msum, bsum)
            if h is not None:
                h["dirty_all"] = True
