"""Durable judging sessions for adaptive judgment selection.

Moffat, Webber & Zobel (SIGIR 2007), "Strategic system comparisons via targeted relevance
judgments", Sec. 3-4: a
selector (pooling, Methods A, B, C; :class:`pyterrier_noise.selection.JudgmentSelector`) proposes
the unjudged ``(qid, docno)`` with the highest weight, an oracle (:mod:`.oracles`,
:mod:`.terminal`) labels it, the label is recorded and the weights are updated.  This module makes
the loop durable; :mod:`.store` holds the session file (:class:`~.store.SessionStore`: its
records, blobs and the replay of the records), fingerprints and blobs.

:class:`JudgingSession` keeps a selector in a SQLite file (standard library ``sqlite3``, WAL
journal, ``synchronous=FULL``).  The file records the configuration, the runs (and a SHA-256
fingerprint of them), the initial qrels, every document served to the judge, and every judgment
and bypass in order; each is committed in its own transaction before the next document is
served.  While an oracle with reproducible answers judges (qrels, a seeded noise model over them),
the commits do not wait for the disk and one sync ends the run (:meth:`~.store.SessionStore.reproducible_steps`:
a killed process still loses nothing; a power cut can lose the last steps, which the same
command re-derives exactly).  Reopening the file replays the records into a fresh selector, which restores exactly the
same state and queue: a session killed at any moment (even with SIGKILL) loses no recorded
judgment and, resumed, continues with exactly the documents an uninterrupted session would have
judged.  One process at a time may hold a session (SQLite's exclusive lock; a second opener gets
:class:`SessionLockedError`).

A ``KeyboardInterrupt`` passes through :meth:`JudgingSession.run` as it is: every committed step
is saved, and a step cut off in the middle of its write closes the session (reopen it to resume).

Command line: ``pyterrier-noise judge --session FILE.sqlite --method C RUN...``.
"""
from __future__ import annotations

import json
import math
import numbers
import os
import sqlite3
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any, NamedTuple, Union

import numpy as np
import pandas as pd

from .._progress import progress_bar
from .._validation import InputError, check_int
from ..io import write_trec_qrels
from .oracles import Label, NoisyOracle, Oracle, QuitJudging, as_oracle, check_label, format_label, oracle_diff
from .durable import damaged_message, publish, recover as _recover
from .stopping import StopRule
from .store import SCHEMA, SessionError, SessionStore, canonical_runs, new_session, pack_aligned, pack_runs, \
    unpack_run_columns, unpack_runs

__all__ = ["JudgingSession", "JudgingEvent", "RunReport"]

PathLike = Union[str, os.PathLike]


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



def _default_factory(runs: dict[str, pd.DataFrame], **config: Any) -> Any:
    try:
        from .selector import JudgmentSelector
    except ImportError as exc:  # pragma: no cover - depends on the checkout
        raise SessionError(f"the selector module pyterrier_noise.selection is not available ({exc})") from None
    return JudgmentSelector(runs, **config)


class JudgingSession:
    """A durable, resumable judging session around a judgment selector (Moffat et al. 2007, Sec. 3-4).

    The selection loop of Moffat, Webber & Zobel (2007) (propose the highest-weight unjudged ``(qid, docno)``, ask the
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
            ``per_topic_quota`` may also be a function of the runs' topics (sorted qids) returning
            the quota: called once, when the session is created (reopening ignores it).
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
        self._store: SessionStore | None = None
        self._selector: Any = None
        self._fresh_aligned: Any = None   # a new session's alignment, until its selector is built
        self._docs: pd.DataFrame | None = None
        self._meta: dict[str, str] = {}
        self.write_error: BaseException | None = None   # the failed write after which this object stops
        self._notes: list[tuple[str, str]] = []
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
        token = None
        try:
            if not existed:
                # built complete under a temporary name, then published without clobbering: a process
                # that loses a creation race opens the winner's file like any other, and deletes nothing
                token = self._publish_new(runs, initial_qrels, given)
            self._store = SessionStore.open(self.path, float(lock_timeout))
            meta = self._store.read_meta()
            if meta is None:
                if self.path.stat().st_size > 0 and self._store.has_tables():
                    raise SessionError(f"{self.path}: is a SQLite database but not a pyterrier-noise judging session")
                if not create:
                    raise SessionError(f"{self.path}: the file holds no session (pass create=True to start one)")
                self._create(runs, initial_qrels, given)   # an empty file: filled in place, under the lock
            elif token is not None and meta.get("creation_token") == token:
                built = self._selector
                self._reopen(meta, None, None, {}, verify_blobs=False)   # this process wrote them just now
                if self._handled or self._pending:   # another process judged between publishing and opening
                    built = None
                self._selector = built
            else:
                self._selector = self._fresh_aligned = None
                self._reopen(meta, runs, initial_qrels, given)
        except sqlite3.DatabaseError as exc:   # damage quick_check cannot see (e.g. inside a record)
            self._close_quietly()
            raise SessionError(damaged_message(self.path, str(exc))) from None
        except BaseException:
            self._close_quietly()
            raise

    # -- opening -------------------------------------------------------------------------

    def _prepare(self, runs: Any, initial_qrels: Any, given: dict[str, Any]) -> Callable[[sqlite3.Connection], None]:
        """Validate a new session (bad settings fail before anything is written), build its selector
        from the copy that is stored, exactly as a reopened session will, and return the writer of
        its records."""
        if runs is None:
            raise SessionError(f"{self.path}: a new session needs the runs to select from (argument 'runs')")
        align = None
        if self._factory is _default_factory:
            # the selector aligns the files themselves (the stored copy holds the same rows); its
            # alignment is stored so that reopening needs neither parsing nor aligning
            from .contributions import aligned_for
            align = aligned_for
        new = new_session(runs, initial_qrels, given, align, _package_version())
        self.config, self.run_names, self.fingerprint = new.config, new.run_names, new.fingerprint
        self.initial_qrels = new.initial_qrels
        if new.aligned is not None:
            # the selector is built on first use, after the file is written (the blobs are gone by
            # then: the two never take memory at once)
            self._fresh_aligned = new.aligned
        else:
            self._selector = self._factory(unpack_runs(new.blobs["runs"]), initial_qrels=new.initial_qrels,
                                           **new.config)
        meta, blobs = new.meta, new.blobs
        del new
        self._token = meta["creation_token"]
        self._meta, self.session_id = meta, meta["creation_token"]   # the session's id: random, made at creation
        return lambda c: SessionStore.initialise(c, meta, blobs)

    def _publish_new(self, runs: Any, initial_qrels: Any, given: dict[str, Any]) -> str | None:
        write = self._prepare(runs, initial_qrels, given)
        done = publish(self.path, write)
        del write   # and with it the blobs it wrote
        return self._token if done else None

    def _create(self, runs: Any, initial_qrels: Any, given: dict[str, Any]) -> None:
        self._prepare(runs, initial_qrels, given)(self._store.connection)

    def _reopen(self, meta: dict[str, str], runs: Any, initial_qrels: Any, given: dict[str, Any],
                verify_blobs: bool = True) -> None:
        cfg, stored_names, init = self._store.check_reopen(meta, runs, initial_qrels, given, verify_blobs)
        self.config = cfg
        self.run_names = stored_names
        self.fingerprint = meta["runs_fingerprint"]
        self.session_id = meta.get("creation_token") or f"{self.fingerprint}@{meta.get('created', '')}"
        self.initial_qrels = init
        self._meta = meta
        for seq, action, qid, docno, label, _, _ in self._store.events():
            if action == "judge":
                self._n_judged += 1
            else:
                self._n_bypassed += 1
            self._handled[(qid, docno)] = (seq, action, label)
        for qid, docno, weight in self._store.served():
            if (qid, docno) not in self._handled:
                self._pending[(qid, docno)] = weight

    @property
    def selector(self) -> Any:
        """The selector, in the state the records give.  On a reopened session it is built on first
        use (exporting or reading the history does not need it): from the stored runs, with the
        stored settings, then every committed step is replayed into it in order."""
        if self._selector is None:
            self._check_open()
            if self._factory is _default_factory:
                sel = self._stored_selector()
            else:
                # the stored copy of the runs: same runs, same row order, hence the same state
                sel = self._factory(unpack_runs(self._store.blob("runs")), initial_qrels=self.initial_qrels,
                                    **self.config)
            self._store.replay(sel)
            self._selector = sel
        return self._selector

    def _aligned_selector(self, runs: Any) -> tuple[Any, bytes]:
        """The default selector over ``runs`` (files, frames, or ``(names, columns)`` of files read
        by :func:`read_run_columns`) and its alignment as a blob."""
        from .contributions import aligned_for
        aligned = aligned_for(runs, self.initial_qrels, ties=self.config["ties"])
        runs = None
        return _default_factory(aligned, initial_qrels=self.initial_qrels, **self.config), pack_aligned(aligned)

    def _stored_selector(self) -> Any:
        """The default selector over the stored alignment; a session written before alignments were
        stored is aligned from its stored runs once, and the alignment is added to the file."""
        if self._fresh_aligned is not None:   # a new session: the alignment it just stored
            aligned, self._fresh_aligned = self._fresh_aligned, None
            return _default_factory(aligned, initial_qrels=self.initial_qrels, **self.config)
        aligned = self._store.stored_alignment(self._meta.get("aligned_blob_sha256"))
        if aligned is not None:
            return _default_factory(aligned, initial_qrels=self.initial_qrels, **self.config)
        sel, blob = self._aligned_selector(unpack_run_columns(self._store.blob("runs")))   # columns, not frames
        self._meta["aligned_blob_sha256"] = self._store.add_alignment(blob)
        return sel

    def _documents(self) -> pd.DataFrame:
        """Every ``(qid, docno)`` the stored runs retrieved (cached): the table a NoisyOracle draws over."""
        if self._docs is None:
            runs = unpack_runs(self._store.blob("runs"))
            both = pd.concat([r[["qid", "docno"]] for r in runs.values()], ignore_index=True)
            self._docs = both.drop_duplicates(ignore_index=True)
        return self._docs

    def backup(self, path: PathLike) -> Path:
        """Copy the session, with every committed judgment, to a new file ``path`` through SQLite's
        online backup API (safe while the session is open; ``path`` must not exist)."""
        self._check_open()
        return self._store.backup(Path(path))

    @staticmethod
    def recover(path: PathLike, new_path: PathLike, runs: Any = None) -> dict[str, int]:
        """Copy what can still be read of a damaged session file into a new session ``new_path``:
        settings, runs (``runs``: the original runs, needed only when the stored copy is unreadable),
        initial qrels and every readable judgment and bypass in order.  Returns the counts
        ``{"events": copied, "unreadable": skipped}``; open ``new_path`` to go on judging."""
        def blob() -> bytes:
            return pack_runs(canonical_runs(runs))
        return _recover(Path(path), Path(new_path), SCHEMA, blob if runs is not None else None)

    # -- state ---------------------------------------------------------------------------

    def _check_usable(self) -> None:
        if self.closed:
            raise SessionError(f"{self.path}: the session is closed; open it again with JudgingSession(path)")
        if self.write_error is not None:
            raise SessionError(f"{self.path}: a write failed earlier ({self.write_error}); every judgment before it is "
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
        return self._store is None or self._store.closed

    def handled(self, qid: str, docno: str) -> tuple[int, str, float] | None:
        """``(seq, action, label)`` of a recorded judgment or bypass of ``(qid, docno)``, else None."""
        return self._handled.get((str(qid), str(docno)))

    def note(self, key: str, value: str | None = None) -> str | None:
        """A note another tool keeps in the session file (the judging server's pairing); ``value`` writes it."""
        self._check_open()
        if value is not None:
            self._store.set_meta("note:" + key, value)
        return self._store.meta_value("note:" + key)

    # -- the loop ------------------------------------------------------------------------

    def propose(self, n: int = 1) -> list[tuple[str, str, float]]:
        """The selector's ``n`` best unjudged documents ``(qid, docno, weight)``, now served.

        Serving is committed before the list is returned, so the documents can be recorded after a
        crash too.  Asking again before recording returns the same documents.
        """
        self._check_usable()
        props = [(str(q), str(d), float(w)) for q, d, w in self.selector.propose(check_int("n", n))]
        new = [x for x in props if (x[0], x[1]) not in self._pending]
        for q, d, _ in new:
            if (q, d) in self._handled:
                raise SessionError(f"the selector proposed qid {q!r} docno {d!r}, which the session has already "
                                   f"{self._handled[(q, d)][1]}d; the selector's state does not match the records")
        if new:
            self._store.serve(new)
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
            what = "judged (label %s)" % format_label(done[2]) if done[1] == "judge" else "bypassed"
            raise SessionError(f"qid {q!r} docno {d!r} was already {what} at step {done[0]}; a document is "
                               f"judged once")
        if (q, d) not in self._pending:
            raise SessionError(f"qid {q!r} docno {d!r} was not proposed; record one of the documents served by "
                               f"next() or propose() (pending: {len(self._pending)})")
        return q, d, self._pending[(q, d)]

    def record(self, qid: str, docno: str, label: float, notes: dict[str, str] | None = None) -> JudgingEvent:
        """Record a judgment of a served document (and ``notes``, :meth:`note`), in one transaction."""
        q, d, w = self._take(qid, docno)
        lab = check_label(label, f"label for qid {q!r} docno {d!r}")
        self._step(lambda sel: sel.record(q, d, lab))  # validates before it changes anything
        self._notes = [("note:" + str(k), str(v)) for k, v in (notes or {}).items()]
        return self._commit_or_break("judge", q, d, lab, w)

    def bypass(self, qid: str, docno: str) -> JudgingEvent:
        """Bypass a served document: not judged, not counted, removed from the candidates."""
        q, d, w = self._take(qid, docno)
        self._step(lambda sel: sel.bypass(q, d))
        return self._commit_or_break("bypass", q, d, math.nan, w)

    def _step(self, fn: Callable[[Any], Any]) -> None:
        """Apply a step to the selector; an interrupt (KeyboardInterrupt) in the middle of it leaves the
        selector in doubt, so the session refuses to go on (the file holds every earlier step)."""
        sel = self.selector
        try:
            fn(sel)
        except Exception:
            raise
        except BaseException as exc:
            if self.write_error is None:
                self.write_error = exc
            raise

    def _commit_or_break(self, action: str, q: str, d: str, label: float, weight: float) -> JudgingEvent:
        try:
            return self._commit(action, q, d, label, weight)
        except BaseException as exc:  # the selector holds a step the file may not: do not go on
            if self.write_error is None:
                self.write_error = exc
            raise

    def _commit(self, action: str, q: str, d: str, label: float, weight: float) -> JudgingEvent:
        seq = self._n_judged + self._n_bypassed + 1
        rows, self._notes = self._notes, []     # record()'s notes: in the step's transaction
        self._store.commit_step(seq, action, q, d, label, weight, rows)
        del self._pending[(q, d)]
        self._handled[(q, d)] = (seq, action, label)
        if action == "judge":
            self._n_judged += 1
        else:
            self._n_bypassed += 1
        return JudgingEvent(seq, action, q, d, label, weight)

    def run(self, oracle: Oracle | Callable[[str, str], Label], budget: int | None = None, *,
            max_steps: int | None = None, progress: bool = False,
            on_step: Callable[[JudgingEvent], Any] | None = None, stop: StopRule | None = None) -> RunReport:
        """Judge until the session holds ``budget`` judgments (Moffat, Webber & Zobel's 2007 loop).

        Each step: take the next document (:meth:`next`), ask the oracle, record the label (or bypass
        the document when the oracle returns ``None``; bypasses do not count against the budget),
        commit, then call ``on_step(event)``.  ``budget`` is the session's total (so running the
        same call again after a crash finishes the same session); ``None`` judges until no candidate
        is left.  ``max_steps`` bounds the steps of this call.  The oracle may raise
        :class:`QuitJudging` to stop.  ``stop``: a :class:`~pyterrier_noise.selection.StopRule`
        checked before every document is served; it is not stored, so a resumed
        session may use another.
        """
        self._check_usable()
        oracle = as_oracle(oracle)
        if stop is not None and not isinstance(stop, StopRule):
            raise InputError(f"argument 'stop': expected a StopRule, got {type(stop).__name__}")
        for name, v in (("budget", budget), ("max_steps", max_steps)):
            if v is not None:
                check_int(name, v, 0)
        if on_step is not None and not callable(on_step):
            raise InputError(f"argument 'on_step': expected a function fn(event), got {on_step!r}")
        self._check_oracle(oracle)
        if isinstance(oracle, NoisyOracle):   # its replicate is drawn over every document the runs retrieved
            oracle.bind(self._documents())
        self.selector   # built (and the records replayed) before the bar starts: its rate is this run's judging
        if hasattr(oracle, "identity") and oracle.identity() is not None:   # reproducible answers
            with self._store.reproducible_steps():
                return self._run(oracle, budget, max_steps, progress, on_step, stop)
        return self._run(oracle, budget, max_steps, progress, on_step, stop)

    def _run(self, oracle: Oracle, budget: int | None, max_steps: int | None, progress: bool,
             on_step: Callable[[JudgingEvent], Any] | None, stop: StopRule | None) -> RunReport:
        """:meth:`run`'s loop, once the oracle is checked."""
        judged = bypassed = 0
        bar = progress_bar(total=budget, initial=min(self._n_judged, budget) if budget is not None else self._n_judged,
                           desc="judging", unit="judgment", enabled=bool(progress))
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
                    bar.update(1)
                if on_step is not None:
                    on_step(event)
        except KeyboardInterrupt:
            # every committed step is saved; a step cut off mid-write left the selector ahead of the
            # file, so the session is closed (reopen it to resume) -- the interrupt itself goes on
            if self.write_error is not None:
                self._close_quietly()
            raise
        finally:
            bar.close()
        return RunReport(judged, bypassed, self._n_judged, reason, detail)

    def _check_oracle(self, oracle: Oracle) -> None:
        """The first oracle with an identity (qrels, a noise model over them) is stored; a session
        refuses to mix its answers with another's (a person or a function is not checked)."""
        ident = oracle.identity() if hasattr(oracle, "identity") else None
        if ident is None:
            return
        row = self._store.meta_value("oracle")
        if row is None:
            self._store.set_meta("oracle", json.dumps(ident, sort_keys=True), replace=False)
            return
        stored = json.loads(row)
        if stored != json.loads(json.dumps(ident, sort_keys=True)):
            raise SessionError(f"{self.path}: this session was judged by another oracle: {oracle_diff(stored, ident)}; "
                               f"a session keeps one oracle -- run with the same one, or start a new session "
                               f"file with this session's judgments as initial qrels (export them with "
                               f"export_qrels / judge --export)")

    # -- results -------------------------------------------------------------------------

    @property
    def history(self) -> pd.DataFrame:
        """Every committed step in order: ``seq, action, qid, docno, label, weight, time``."""
        self._check_open()
        h = pd.DataFrame(self._store.events(), columns=["seq", "action", "qid", "docno", "label", "weight", "time"])
        h["label"] = h["label"].astype(np.float64)
        h["weight"] = h["weight"].astype(np.float64)
        return h

    def judged_qrels(self, include_initial: bool = True) -> pd.DataFrame:
        """The judgments as qrels ``qid, docno, label``: the initial qrels first, then the session's in order."""
        self._check_open()
        q = pd.DataFrame(self._store.judgments(), columns=["qid", "docno", "label"]).astype({"label": np.float64})
        if include_initial and self.initial_qrels is not None:
            q = pd.concat([self.initial_qrels[["qid", "docno", "label"]], q], ignore_index=True)
        return q

    def export_qrels(self, path: PathLike, include_initial: bool = True) -> pd.DataFrame:
        """Write :meth:`judged_qrels` as a TREC qrels file (any time; gzip if the name ends in .gz).
        ``path`` being the session file itself (by any name) is refused: it would destroy the session."""
        from .._output import check_outputs_apart
        check_outputs_apart({"the export": path}, {"session": self.path})
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
        if self.closed:
            raise SessionError(f"{self.path}: the session is closed; open it again with JudgingSession(path)")

    def close(self) -> None:
        """Close the file and release its lock (everything is already committed)."""
        self._close_quietly()

    def _close_quietly(self) -> None:
        if self._store is not None:
            self._store.close()

    def __enter__(self) -> "JudgingSession":
        return self

    def __exit__(self, *exc: Any) -> None:
        self.close()

    def __repr__(self) -> str:
        if self.closed and not hasattr(self, "config"):
            return f"JudgingSession({str(self.path)!r}, not open)"
        return (f"JudgingSession({str(self.path)!r}, method={self.config['method']!r}, p={self.config['p']}, "
                f"{len(self.run_names)} runs, {self._n_judged} judged, {self._n_bypassed} bypassed"
                f"{', closed' if self.closed else ''})")


def _package_version() -> str:
    try:
        from .. import __version__
        return str(__version__)
    except ImportError:  # pragma: no cover
        return "unknown"
