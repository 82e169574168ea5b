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

__all__ = ["PathLike", "TREC_RUN_FIELDS", "run_name", "list_run_files", "run_file_arguments"]

PathLike = Union[str, os.PathLike]

#: the six whitespace-separated fields of a TREC run line
TREC_RUN_FIELDS = ["qid", "q0", "docno", "rank", "score", "tag"]

#: ranks at or beyond this are not exact integers in float64 (the parser reads them as floats)
_RANK_LIMIT = 2.0 ** 53


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
    """The run files of a directory (hidden files skipped), sorted by name."""
    files = sorted(p for p in directory.iterdir() if p.is_file() and not p.name.startswith("."))
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
