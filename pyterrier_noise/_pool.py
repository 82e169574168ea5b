"""The package's one way to start worker processes: forked pools whose workers die with their parent.

A worker started by :func:`worker_pool` asks the kernel (Linux ``prctl(PR_SET_PDEATHSIG, SIGKILL)``)
to be killed when its parent dies, even by SIGKILL, and exits at once if the parent is already gone
when it starts (the race between ``fork`` and ``prctl``); it ignores SIGINT, which the parent handles.
While the pool is open, SIGTERM in the parent kills the workers and then calls the handler the
program had installed (a command's: it unwinds as on Ctrl-C), or else ends the parent as
SIGTERM's default action does (no Python-level shutdown that could wait on a worker), and the
pool starts no replacement for the killed workers; a SIGTERM while the pool starts is handled so
once it has started.  SIGINT
raises :class:`KeyboardInterrupt` in the parent and the pool's ``with`` block terminates and
joins the workers.  Elsewhere than Linux the workers are still terminated on every exit
through Python; only an uncatchable kill of the parent can then leave them behind.
"""
from __future__ import annotations

import contextlib
import os
import signal
import sys
import threading
from typing import Any, Callable, Iterator

TERMINATE = "TERMINATE"   # multiprocessing.pool's state of a pool being terminated

__all__ = ["worker_pool", "worker_state", "fork_available"]

_PR_SET_PDEATHSIG = 1


def fork_available() -> bool:
    """Whether worker processes can be forked (they then share the parent's memory copy-on-write)."""
    import multiprocessing as mp
    return "fork" in mp.get_all_start_methods()


#: in a worker process, the ``state`` its pool was opened with (set once as the worker starts;
#: never set in the process that opens the pool)
_STATE: list = []


def worker_state() -> Any:
    """In a worker of :func:`worker_pool`, the ``state`` the pool was opened with: what the tasks
    share (inherited copy-on-write where workers are forked), passed explicitly by the caller."""
    if not _STATE:
        raise RuntimeError("worker_state(): not in a worker of a pool opened with a state")
    return _STATE[0]


def _die_with_parent(parent: int, init: Callable | None, args: tuple, state: tuple = ()) -> None:
    """Worker initializer: be killed with the parent, leave SIGINT to it, keep the pool's state,
    then the caller's own init."""
    signal.signal(signal.SIGINT, signal.SIG_IGN)
    signal.signal(signal.SIGTERM, signal.SIG_DFL)
    if hasattr(signal, "pthread_sigmask"):   # forked with SIGTERM blocked: one sent since is delivered now
        signal.pthread_sigmask(signal.SIG_UNBLOCK, {signal.SIGTERM})
    if sys.platform.startswith("linux"):
        try:
            import ctypes
            libc = ctypes.CDLL(None, use_errno=True)
            libc.prctl(_PR_SET_PDEATHSIG, signal.SIGKILL, 0, 0, 0)
        except (OSError, AttributeError):   # no libc symbol: fall back to Python-level shutdown only
            pass
    if os.getppid() != parent:   # the parent died before prctl took effect
        os._exit(1)
    _STATE[:] = state
    if init is not None:
        init(*args)


_OPEN: list = []   # pools open in this process, for the SIGTERM handler
_KILLED: set = set()   # ids of the open pools whose workers the SIGTERM handler killed
_BEFORE: list = []  # the SIGTERM handler each open pool replaced (the first is the program's)


def _kill_workers(pool: Any) -> None:
    """SIGKILL every worker process of ``pool`` (multiprocessing keeps them in ``pool._pool``)."""
    for proc in getattr(pool, "_pool", ()):
        with contextlib.suppress(OSError, TypeError):
            os.kill(proc.pid, signal.SIGKILL)


def _abandon(pool: Any) -> None:
    """A pool whose workers were killed: stop it from starting new ones, kill any it started since
    and reap them, and neither terminate nor join it.  A worker killed while it held the task
    queue's lock leaves that lock taken, and ``terminate()`` (also run at exit by the pool's
    finaliser) would wait for it forever.  Left running, the pool's worker handler would replace
    the killed workers until this process exits, and exit would then wait for the replacements."""
    handler = getattr(pool, "_worker_handler", None)
    if handler is not None:
        handler._state = TERMINATE   # multiprocessing.pool's flag: leave the loop that keeps workers up
        with contextlib.suppress(Exception):
            pool._change_notifier.put(None)   # wake it now rather than at its next worker's death
        handler.join(timeout=10)
    _kill_workers(pool)
    for proc in list(getattr(pool, "_pool", ())):
        with contextlib.suppress(Exception):
            proc.join(timeout=10)   # killed: reaped at once
    finaliser = getattr(pool, "_terminate", None)
    if finaliser is not None:
        finaliser.cancel()


def _end_with_workers(signum: int, frame) -> None:
    """SIGTERM while a pool is open: kill its workers, then hand the signal to the program's own
    handler (a command's: it unwinds, and the pool's ``with`` block ends), or end as the default
    action would."""
    for pool in _OPEN:
        _KILLED.add(id(pool))
        _kill_workers(pool)
    before = _BEFORE[0] if _BEFORE else None
    if callable(before):
        signal.signal(signum, before)
        before(signum, frame)
        return
    signal.signal(signum, signal.SIG_DFL)
    os.kill(os.getpid(), signum)


@contextlib.contextmanager
def worker_pool(processes: int, initializer: Callable | None = None,
                initargs: tuple = (), state: Any = None) -> Iterator:
    """A ``multiprocessing`` pool of forked workers that die with this process.

    Use as ``with worker_pool(2) as pool: pool.map(f, items)``.  ``state`` (when not None) is given
    to every worker as it starts, where the tasks find it with :func:`worker_state`: forked workers
    inherit it copy-on-write, so that large inputs are not sent with every task and nothing is kept
    in module state of the process that opens the pool.  On leaving the block (normally,
    by an exception or SIGINT) the workers are terminated and joined; SIGTERM kills them and then
    ends this process as SIGTERM's default action does; SIGKILL of this process kills them through
    the kernel (Linux).
    """
    import multiprocessing as mp
    ctx = mp.get_context("fork") if fork_available() else mp.get_context()
    main = threading.current_thread() is threading.main_thread()
    # Fork with SIGTERM blocked: a worker inherits the parent's handler until its initializer
    # runs, and a Python-level handler there would swallow a SIGTERM from pool.terminate() (the
    # worker lives on and join() hangs).  Blocked, such an early SIGTERM waits until the
    # initializer has set the default action and unblocks it, and then ends the worker.  The
    # pool's own threads start with SIGTERM blocked too, so the workers they start later are born
    # the same way.  In this process, a SIGTERM that comes while the pool starts is recorded and
    # handled once the pool's handler is in place: at the default action it would end the process
    # at once (whichever thread the kernel gave it to), before a command could remove its partial
    # outputs; raised there, it would leave workers that the pool does not yet know of.
    deferred: list = []
    old_term = signal.signal(signal.SIGTERM, lambda signum, frame: deferred.append(signum)) if main else None
    block = main and hasattr(signal, "pthread_sigmask")
    if block:
        signal.pthread_sigmask(signal.SIG_BLOCK, {signal.SIGTERM})
    pool = None
    try:
        try:
            pool = ctx.Pool(processes, initializer=_die_with_parent,
                            initargs=(os.getpid(), initializer, initargs, () if state is None else (state,)))
            _OPEN.append(pool)
            if main:
                _BEFORE.append(old_term)
                signal.signal(signal.SIGTERM, _end_with_workers)
        finally:
            if main and pool is None:   # no pool: the program's handler is back, and gets a deferred SIGTERM
                signal.signal(signal.SIGTERM, signal.SIG_DFL if old_term is None else old_term)
            if block:
                signal.pthread_sigmask(signal.SIG_UNBLOCK, {signal.SIGTERM})
            if deferred and pool is None:
                os.kill(os.getpid(), signal.SIGTERM)
        if deferred:
            _end_with_workers(signal.SIGTERM, None)
        yield pool
    finally:
        if pool is not None:
            if id(pool) in _KILLED:
                _KILLED.discard(id(pool))
                _abandon(pool)
            else:
                pool.terminate()
                pool.join()
            _OPEN.remove(pool)
        if main:
            if _BEFORE:
                _BEFORE.pop()
            signal.signal(signal.SIGTERM, signal.SIG_DFL if old_term is None else old_term)
