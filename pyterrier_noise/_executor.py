"""Where independent chunks of a sweep run: in this process, one after the other (``executor=None``,
the default), or as tasks on a Dask cluster (``executor=`` a ``dask.distributed.Client``, or
``"dask"`` for the client of the current context, ``distributed.get_client()``).

A sweep (replicate chunks of a robustness experiment, the methods of a selection simulation) gives
:func:`map_ordered` a module-level function, the data every task shares (sent to the workers once,
``Client.scatter(..., broadcast=True)``) and one argument per task; the results come back in the
order of the arguments, whatever order the workers finish in, and every task draws its random
numbers from its own arguments (a chunk's seed and start), never from which worker runs it or when:
the result is the local run's, value for value.  Dask is an optional dependency
(``pip install 'pyterrier-noise[dask]'``), imported only when a Dask executor is asked for.
"""
from __future__ import annotations

from collections import deque
from typing import Any, Callable, Iterable, Iterator

from ._validation import InputError

__all__ = ["Executor", "resolve_executor", "map_ordered"]

#: what ``executor=`` takes: None (in this process), ``"dask"`` or a ``dask.distributed.Client``
Executor = Any


def resolve_executor(executor: Executor) -> Any:
    """The Dask client ``executor`` names, or None for work in this process."""
    if executor is None or executor == "local":
        return None
    if isinstance(executor, str):
        if executor != "dask":
            raise InputError(f"executor must be None, 'local', 'dask' or a dask.distributed.Client, got {executor!r}")
        try:
            from distributed import get_client
        except ImportError:
            raise InputError("executor='dask' needs Dask: pip install 'pyterrier-noise[dask]'") from None
        try:
            return get_client()
        except ValueError:
            raise InputError("executor='dask': no Dask client is running; start one "
                             "(dask.distributed.Client(...)) or pass it as executor=") from None
    if callable(getattr(executor, "submit", None)) and callable(getattr(executor, "scatter", None)):
        return executor
    raise InputError(f"executor must be None, 'local', 'dask' or a dask.distributed.Client, "
                     f"got {type(executor).__name__}")


def map_ordered(executor: Executor, fn: Callable[..., Any], shared: Any, items: Iterable[Any],
                ahead: int | None = None) -> Iterator[Any]:
    """``fn(shared, item)`` for every item, in the order of ``items``: here, lazily, one at a time
    (``executor=None``), or as tasks of a Dask client with at most ``ahead`` unfinished at once
    (default: twice the cluster's worker threads), so that the results waiting to be consumed stay
    bounded.  ``fn`` must be importable by the workers (a module-level function)."""
    client = resolve_executor(executor)
    if client is None:
        for item in items:
            yield fn(shared, item)
        return
    if ahead is None:
        threads = sum(client.nthreads().values()) or 1
        ahead = 2 * threads
    [remote] = client.scatter([shared], broadcast=True, hash=False)   # one object, whatever its type
    pending: deque = deque()
    try:
        for item in items:
            pending.append(client.submit(fn, remote, item, pure=False))
            if len(pending) >= ahead:
                yield pending.popleft().result()
        while pending:
            yield pending.popleft().result()
    finally:
        for f in pending:
            f.cancel()
        del remote
