"""Run files by name, without reading them: a run's name, the run files of a directory, the run
files named on a command line, and the TREC run line's fields and rank check the readers share.

Only the standard library at import (numpy where a rank check needs it): the command line lists
and checks its run files, and starts reading them, before numpy, pyarrow and pandas are imported."""
from __future__ import annotations

import os
from collections import Counter
from collections.abc import Iterable
from pathlib import Path
from typing import TYPE_CHECKING, Union

from .._validation import InputError, announce

if TYPE_CHECKING:  # pragma: no cover
    import numpy as np

__all__ = ["PathLike", "TREC_RUN_FIELDS", "run_name", "list_run_files", "run_file_arguments", "read_text_file"]

PathLike = Union[str, os.PathLike]

#: the six whitespace-separated fields of a TREC run line
TREC_RUN_FIELDS = ["qid", "q0", "docno", "rank", "score", "tag"]

#: ranks at or beyond this are not exact integers in float64 (the parser reads them as floats)
_RANK_LIMIT = 2.0 ** 53


#: how much of a file is looked at before it is read whole: a text file of lines has a line break
#: and no NUL byte in its first MiB
HEAD_BYTES = 1 << 20
#: of a gzip file, the first 16 KiB inflated are looked at (inflating a whole MiB of every run
#: file costs TREC-COVID's 143 runs about 0.7 s of CPU; 16 KiB about 0.02 s)
GZIP_HEAD_BYTES = 1 << 14


def _head_problem(head: bytes, full: bool, limit: int = HEAD_BYTES) -> str | None:
    """Why the first bytes of a file (inflated when gzip) are not those of a text file of lines."""
    nul = head.find(b"\0")
    if nul >= 0:
        line = head.count(b"\n", 0, nul) + 1
        col = nul - head.rfind(b"\n", 0, nul)
        return (f"line {line}: a NUL byte at character {col}: a binary file, not a text file of lines "
                "(TREC files are text; a field cannot hold NUL)")
    if full and b"\n" not in head and b"\r" not in head:
        size = f"{limit >> 20} MiB" if limit >= 1 << 20 else f"{limit >> 10} KiB (inflated)"
        return f"no line break in its first {size}: not a text file of lines"
    return None


def read_text_file(path: PathLike) -> bytes:
    """The bytes of a text input file (a run, qrels or table; gzip left compressed), refused with an
    :class:`InputError` before it is read whole when it is not a regular file (a device such as
    ``/dev/zero``, a FIFO), or when its first MiB (for gzip, its first 16 KiB inflated) holds a NUL
    byte or no line break: a mistaken argument never fills the memory."""
    import stat
    import zlib
    path = Path(path)
    try:
        mode = os.stat(path).st_mode   # before opening: opening a FIFO would wait for a writer
        if stat.S_ISDIR(mode):
            raise IsADirectoryError
        if not stat.S_ISREG(mode):
            kind = "a device" if stat.S_ISCHR(mode) or stat.S_ISBLK(mode) else \
                "a FIFO (named pipe)" if stat.S_ISFIFO(mode) else "not a regular file"
            raise InputError(f"{path}: is {kind}, not a file to read (expected a text file)")
        with open(path, "rb") as f:
            head = f.read(HEAD_BYTES)
            text, full, limit = head, len(head) == HEAD_BYTES, HEAD_BYTES
            if head[:2] == b"\x1f\x8b":
                limit = GZIP_HEAD_BYTES
                try:
                    text = zlib.decompressobj(31).decompress(head, limit)
                    full = len(text) == limit
                except zlib.error:
                    text = b""   # the reader says what is wrong with the gzip data
            problem = _head_problem(text, full, limit)
            if problem:
                raise InputError(f"{path} {problem}" if problem.startswith("line") else f"{path}: {problem}")
            if len(head) < HEAD_BYTES:
                return head
            f.seek(0)
            return f.read()
    except FileNotFoundError:
        raise InputError(f"{path}: no such file") from None
    except IsADirectoryError:
        raise InputError(f"{path}: is a directory, expected a file") from None
    except OSError as exc:
        raise InputError(f"{path}: cannot be read ({exc.strerror or exc})") from None


def _rank_problem(rank: np.ndarray) -> np.ndarray:
    """Rows whose rank is not a whole number in [0, 2**53)."""
    import numpy as np
    return (rank < 0) | (rank >= _RANK_LIMIT) | (rank != np.floor(rank))


def _rank_offset(path: PathLike, rank: np.ndarray, qid) -> int:
    """1 for a file of 1-based ranks (TREC's convention), 0 for one whose ranks start at 0 (as
    ``pt.io.write_results`` writes PyTerrier frames): those are read as 0-based, announced with
    the number of rankings that start at 0."""
    import numpy as np
    zero = rank == 0
    if not zero.any():
        return 1
    q = np.asarray(qid)[zero]
    _, first = np.unique(q.astype(str), return_index=True)
    starts = q[np.sort(first)]   # in order of first appearance
    announce(f"{path}: ranks start at 0 in {len(starts)} ranking(s) (e.g. qid {str(starts[0])!r}): read as "
             f"0-based ranks, as pt.io.write_results writes them (TREC files are 1-based)", stacklevel=4)
    return 0


def run_name(path: Path) -> str:
    """A run's name: its file name without ``.gz``."""
    name = Path(path).name
    return name[:-3] if name.endswith(".gz") else name


def list_run_files(directory: Path) -> list[Path]:
    """The run files of a directory (hidden files and subdirectories skipped), sorted by name.  An
    entry that is a symlink leading nowhere (a missing target or a loop) is an error naming it:
    it would otherwise be a run silently missing from the results."""
    entries = [p for p in directory.iterdir() if not p.name.startswith(".")]
    broken = sorted(p.name for p in entries if p.is_symlink() and not os.path.exists(p))
    if broken:
        shown = ", ".join(broken[:5]) + (f" and {len(broken) - 5} more" if len(broken) > 5 else "")
        raise InputError(f"{directory}: {len(broken)} entr{'y is a symlink' if len(broken) == 1 else 'ies are symlinks'}"
                         f" that lead{'s' if len(broken) == 1 else ''} nowhere (a missing target or a loop): {shown}; "
                         "fix or remove them")
    files = sorted(p for p in entries if p.is_file())
    if not files:
        raise InputError(f"{directory}: the directory holds no run files")
    return files


def run_file_arguments(items: Iterable) -> list[Path]:
    """The run files named on a command line (each item a run file or a directory of them), unread,
    for the engine to parse directly (:meth:`AlignedRuns.build` reads files faster than frames).

    A missing path or two runs with the same name (file name without ``.gz``) are errors."""
    files: list[Path] = []
    for item in items:
        path = Path(item)
        if not path.exists():
            raise InputError(f"{path}: no such file or directory (expected a run file or a directory of them)")
        files.extend(list_run_files(path) if path.is_dir() else [path])
    counts = Counter(run_name(f) for f in files)
    dup = next((n for n in (run_name(f) for f in files) if counts[n] > 1), None)
    if dup is not None:
        raise InputError(f"two runs are named {dup!r} (a run's name is its file name without .gz)")
    if not files:
        raise InputError("no run files given")
    return files
