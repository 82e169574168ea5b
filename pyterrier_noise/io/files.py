"""Run files by name, without reading them: a run's name, the run files of a directory, the run
files named on a command line, and the TREC run line's fields.

Only the standard library: the command line lists and checks its run files, and starts reading
them (:mod:`.reader`), before numpy, pyarrow and pandas are imported."""
from __future__ import annotations

import os
from collections import Counter
from collections.abc import Iterable
from pathlib import Path
from typing import Union

from .._validation import InputError

__all__ = ["PathLike", "TREC_RUN_FIELDS", "run_name", "list_run_files", "run_file_arguments"]

PathLike = Union[str, os.PathLike]

#: the six whitespace-separated fields of a TREC run line
TREC_RUN_FIELDS = ["qid", "q0", "docno", "rank", "score", "tag"]


def run_name(path: Path) -> str:
    """A run's name: its file name without ``.gz``."""
    name = Path(path).name
    return name[:-3] if name.endswith(".gz") else name


def list_run_files(directory: Path) -> list[Path]:
    """The run files of a directory (hidden files skipped; a subdirectory or other entry that is not a
    file skipped with a warning naming it; every other file is read as a run), sorted by name.  An
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
    others = sorted(p.name + ("/" if p.is_dir() else "") for p in entries if not p.is_file())
    if others:    # a subdirectory, a FIFO, a socket: said, not skipped in silence
        from .._validation import announce
        shown = ", ".join(others[:5]) + (f" and {len(others) - 5} more" if len(others) > 5 else "")
        announce(f"{directory}: {len(others)} entr{'y is' if len(others) == 1 else 'ies are'} not a file and "
                 f"{'is' if len(others) == 1 else 'are'} not read as a run: {shown}")
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
