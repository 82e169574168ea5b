"""Chunks of run files sized from a memory budget: an evaluation of more runs than fit in memory
reads, aligns and evaluates a chunk of files at a time (runs are evaluated independently, so the
values are the same).  Standard library only: the command line sizes its chunks before it imports
numpy."""
from __future__ import annotations

import os
from typing import Sequence

from .._validation import byte_size, check_budget
from .._warnings import NoiseWarning, warn

__all__ = ["DEFAULT_MEMORY", "BYTES_PER_TEXT_BYTE", "run_file_chunks", "text_bytes", "warn_oversized"]

#: the memory an evaluation of run files may use by default: more runs than fit are read, aligned
#: and evaluated a chunk of files at a time (``memory=`` / ``eval --memory``)
DEFAULT_MEMORY = 4 * 2 ** 30
#: peak bytes of reading, aligning and evaluating per byte of (uncompressed) run text: the text,
#: its Arrow columns and the aligned positions (measured on TREC-COVID round 1 and on synthetic MS
#: MARCO-like and DL-like runs: each run of a chunk adds 3.7-3.9 bytes a byte of its text, and the
#: process about 0.2 GiB; 4.5 keeps a chunk's peak within the budget; docs/engine.md, "Memory")
BYTES_PER_TEXT_BYTE = 4.5


def text_bytes(path: os.PathLike) -> int:
    """Uncompressed size of a run file: a gzip file's trailer (ISIZE, the size modulo 2^32; never
    less than three times the compressed size), else the file's size."""
    size = os.path.getsize(path)
    if str(path).endswith(".gz") and size >= 18:
        with open(path, "rb") as f:
            f.seek(-4, os.SEEK_END)
            isize = int.from_bytes(f.read(4), "little")
        return max(isize, 3 * size)
    return size


def run_file_chunks(files: Sequence, memory: float | None = DEFAULT_MEMORY) -> list[list]:
    """Consecutive groups of run files whose reading and evaluation fit in ``memory`` bytes (at
    least one file a group; None: one group).  Runs are evaluated independently, so the values of
    every run are the same whatever the grouping."""
    files = list(files)
    check_budget(memory)
    if memory is None or not files:
        return [files]
    cap = memory / BYTES_PER_TEXT_BYTE
    chunks, current, total = [], [], 0
    for f in files:
        size = text_bytes(f)
        if current and total + size > cap:
            chunks.append(current)
            current, total = [], 0
        current.append(f)
        total += size
    chunks.append(current)
    return chunks


def warn_oversized(files: Sequence, memory: float | None) -> None:
    """Warn once about the run files whose reading alone needs more than ``memory`` bytes (estimated
    at :data:`BYTES_PER_TEXT_BYTE` a byte of their text): a chunk holds at least one file, so such a
    file is read whole and the command takes more than its budget."""
    if memory is None:
        return
    over = [(f, text_bytes(f) * BYTES_PER_TEXT_BYTE) for f in files]
    over = [(f, need) for f, need in over if need > memory]
    if over:
        f, need = max(over, key=lambda x: x[1])
        warn(f"{len(over)} run file(s) need more than the memory budget of {byte_size(memory)} to read (the largest, "
             f"{f}, about {byte_size(need)}); each is read whole, as a chunk holds at least one run file",
             NoiseWarning)
