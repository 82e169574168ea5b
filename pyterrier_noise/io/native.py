"""Quiet what native libraries write straight to the process's stdout and stderr.

PISA's C++ core (through pyterrier-pisa) logs ``[info]`` lines to file descriptor 1 and progress
counters to file descriptor 2, tens of KB for one small index, below Python's ``sys.stdout`` and
``sys.stderr``; pyterrier-pisa 0.4.9's ``log_level()`` cannot turn them off (its compiled module has
no ``log_level``).  :func:`quiet_native_logs` holds them in a temporary file instead and shows them
only when the block fails.
"""
from __future__ import annotations

import contextlib
import ctypes
import os
import sys
import tempfile
from typing import IO, Iterator

_FDS = {"stdout": 1, "stderr": 2}


def _fileno(stream: IO | None) -> int | None:
    try:
        return stream.fileno() if stream is not None else None
    except (AttributeError, OSError, ValueError):   # pytest's capture, a notebook's stream, a closed one
        return None


def _flush_native() -> None:
    """Flush the C library's stdio buffers (``fflush(NULL)``), where there is a C library to ask."""
    try:
        ctypes.CDLL(None).fflush(None)
    except (OSError, AttributeError, TypeError):   # no libc by that name (Windows): nothing buffered there to lose
        pass


@contextlib.contextmanager
def quiet_native_logs() -> Iterator[None]:
    """Hold what native code writes to file descriptors 1 and 2 inside the block; show it only if the
    block raises (on stderr, before the exception goes on).

    Python's own output is not held: ``print``, warnings and progress bars written through
    ``sys.stdout`` / ``sys.stderr`` go where they went before.  The file descriptors belong to the
    whole process, so a thread writing to them meanwhile is held too.

    >>> import pyterrier_noise as pn
    >>> with pn.io.quiet_native_logs():
    ...     pass   # e.g. PisaIndex(...).index(docs); pipeline(topics)
    """
    for stream in (sys.stdout, sys.stderr):
        with contextlib.suppress(Exception):
            stream.flush()
    _flush_native()
    saved = {fd: os.dup(fd) for fd in _FDS.values()}
    python: dict[str, IO] = {}
    failed = False
    with tempfile.TemporaryFile() as held:
        try:
            for name, fd in _FDS.items():   # Python's stream keeps writing where fd pointed before
                stream = getattr(sys, name)
                if _fileno(stream) == fd:
                    python[name] = stream
                    setattr(sys, name, open(saved[fd], "w", encoding=stream.encoding, errors=stream.errors,
                                            closefd=False, buffering=1))
            for fd in _FDS.values():
                os.dup2(held.fileno(), fd)
            yield
        except BaseException:
            failed = True
            raise
        finally:
            _flush_native()
            for fd in _FDS.values():
                os.dup2(saved[fd], fd)
                os.close(saved[fd])
            for name, stream in python.items():
                getattr(sys, name).flush()
                setattr(sys, name, stream)
            if failed:
                held.seek(0)
                text = held.read().decode(errors="replace")
                if text:
                    sys.stderr.write(text if text.endswith("\n") else text + "\n")
                    sys.stderr.flush()
