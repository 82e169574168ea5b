"""Process-level tuning of the ``pyterrier-noise`` command: the only place in the package that
changes the garbage collector, glibc's malloc or the environment of the process.

:func:`tuned` is applied by :func:`~pyterrier_noise.cli.main` once, around the command's handler,
and only when ``main`` runs as the program (the console script, ``python -m pyterrier_noise.cli``):
a caller of ``main(argv)`` in its own process (a test, a notebook) keeps its process as it is, and
the library never tunes the process it is imported in.  The values a command computes are the same
either way; docs/benchmarks.md has the measurements.

Only the standard library: this module is imported before numpy and pyarrow, whose allocation the
environment variables set here choose.
"""
from __future__ import annotations

import contextlib
import gc
import os
import sys
from typing import Iterator

__all__ = ["WITHOUT_GC", "BATCH_MEMORY", "Terminated", "tuned", "batch_memory", "run_cache"]


class Terminated(KeyboardInterrupt):
    """SIGTERM in a command: raised where the command is, so that it unwinds as a Ctrl-C does (a
    session rolls back its step, worker pools are ended, temporaries removed), then exit 143."""


def _terminated(signum: int, frame: object) -> None:
    raise Terminated()

#: commands that run without garbage collections, neither while they run nor at exit: bounded runs
#: that leave almost no cyclic garbage (docs/evidence/selection.md)
WITHOUT_GC = ("eval", "select")

#: commands tuned for one large batch of arrays (:func:`batch_memory`): they read, align and
#: evaluate run files
BATCH_MEMORY = ("eval", "select", "robustness", "versions")


@contextlib.contextmanager
def tuned(command: str | None, as_program: bool) -> Iterator[None]:
    """The process tuned for ``command`` while the block runs (nothing unless ``as_program``).

    Entered before the command's handler imports numpy and pyarrow; on leaving, once the outputs
    are written and closed, a command run without garbage collections freezes the heap, so that
    Python's exit does not collect it either."""
    if not as_program:
        yield
        return
    if command in BATCH_MEMORY:
        batch_memory()
    if command in WITHOUT_GC:
        gc.disable()
    import signal
    # SIGTERM ends the command as Ctrl-C does (serve's uvicorn installs its own handler over this one)
    old_term = signal.signal(signal.SIGTERM, _terminated)
    try:
        yield
    finally:
        signal.signal(signal.SIGTERM, old_term)
        if command in WITHOUT_GC:
            gc.freeze()


def batch_memory() -> None:
    """Tune this process's memory for one large batch job (a command, never the library).

    Reading and aligning millions of ranked documents allocates and frees many large arrays.  By
    default glibc hands each one back to the system and numpy asks for transparent huge pages, so
    every new array is fresh memory the kernel zeroes.  Here freed memory stays with the process
    for reuse (glibc's mmap and trim thresholds at 1 GiB, one arena for all threads) and numpy's
    huge-page advice is off (when numpy is not yet imported).  Arrow allocates through the same
    malloc (its system pool, when pyarrow is not yet imported) rather than its own mimalloc pool, so that the pages of the parsed
    tables, once freed, are reused by numpy's arrays instead of new pages, which lowers the peak
    memory.  Elsewhere than glibc the malloc thresholds are left as they are."""
    if "numpy" not in sys.modules:
        os.environ.setdefault("NUMPY_MADVISE_HUGEPAGE", "0")
    if "pyarrow" not in sys.modules:
        os.environ.setdefault("ARROW_DEFAULT_MEMORY_POOL", "system")
    if not sys.platform.startswith("linux"):
        return
    try:
        import ctypes
        libc = ctypes.CDLL(None)
        mallopt = libc.mallopt
    except (OSError, AttributeError):   # not glibc
        return
    m_trim_threshold, m_mmap_threshold, m_arena_max = -1, -3, -8
    mallopt(m_mmap_threshold, 1 << 30)
    mallopt(m_trim_threshold, 1 << 30)
    # one arena for every thread: what the threads reading the files free (their bytes, the parsed
    # tables) is reused by the arrays made afterwards, rather than kept in the threads' own arenas
    # while the process grows (on 100,000 topics x 5 runs: a fifth fewer page faults, 150 MB less)
    mallopt(m_arena_max, 1)
    # memory the command's code gives back once it is free (after reading and aligning run files:
    # pyterrier_noise._arrow.release_unused) includes the free pages inside the heap that this trim
    # threshold would keep (the environment above is set: pyarrow may be imported now)
    from .._arrow import RELEASE_HOOKS
    trim = getattr(libc, "malloc_trim", None)
    if trim is not None and not any(getattr(h, "trims_malloc", False) for h in RELEASE_HOOKS):
        def malloc_trim() -> None:
            trim(0)
        malloc_trim.trims_malloc = True   # type: ignore[attr-defined]
        RELEASE_HOOKS.append(malloc_trim)


@contextlib.contextmanager
def run_cache(directory: str | None) -> Iterator[None]:
    """``--cache DIR``: every run file the command reads goes through the cache in DIR (the
    environment variable ``PYTERRIER_NOISE_CACHE``, which :mod:`pyterrier_noise.io.cache` reads,
    set while the block runs and restored after, also when ``main`` runs in a caller's process)."""
    if directory is None:
        yield
        return
    name = "PYTERRIER_NOISE_CACHE"
    old = os.environ.get(name)
    os.environ[name] = str(directory)
    try:
        yield
    finally:
        if old is None:
            os.environ.pop(name, None)
        else:
            os.environ[name] = old
