"""Evaluate run files a chunk of files at a time: runs are evaluated independently, so aligning and
evaluating the files of each chunk (sized from a memory budget by
:func:`~pyterrier_noise.io.chunks.run_file_chunks`) and joining the chunks' values in run order
gives the values of one alignment of every run, while only one chunk's positions are held."""
from __future__ import annotations

import os
from typing import Any, Iterable

import numpy as np

from ..io import RunFileReader, run_file_arguments
from ..io.chunks import DEFAULT_MEMORY, run_file_chunks, warn_oversized
from .align import AlignedRuns, are_run_paths
from .spec import MeasureSpec

__all__ = ["evaluate_in_chunks", "file_chunks", "table_with_unjudged"]


def file_chunks(runs: Any, memory: float | None = DEFAULT_MEMORY, warn: bool = True) -> list[list] | None:
    """The chunks of files that ``runs`` (run file paths, or a
    :class:`~pyterrier_noise.io.RunFileReader`) would be read in under ``memory`` bytes (with
    ``warn``, a warning names a file that alone needs more); None when ``runs`` are not files or
    fit at once."""
    if memory is None:
        return None
    if isinstance(runs, RunFileReader):
        files = list(runs.paths)
    elif are_run_paths(runs):
        files = run_file_arguments([runs] if isinstance(runs, (str, os.PathLike)) else runs)
    else:
        return None
    chunks = run_file_chunks(files, memory)
    if warn:
        warn_oversized(files, memory)
    return chunks if len(chunks) > 1 else None


def evaluate_in_chunks(runs: Any, table: Any, measures: Iterable[MeasureSpec],
                       labels: np.ndarray | None = None,
                       memory: float | None = DEFAULT_MEMORY, **build: Any) -> dict[MeasureSpec, np.ndarray]:
    """``AlignedRuns.build(runs, table, **build).evaluate(measures, labels)``, with run files read,
    aligned and evaluated a chunk of files at a time when ``memory`` bytes would not hold them all;
    the values ``(runs, topics, versions)`` are the same, in run order.  ``labels``: as
    :meth:`AlignedRuns.evaluate` takes them, over ``table``'s rows.  (With ``include_unjudged=True``
    each chunk's table grows by its own runs' unjudged documents only, so labels given to those
    rows, such as counting every unjudged document relevant, need one alignment of every run.)  A
    file that alone needs more than ``memory`` is read whole; :func:`file_chunks` says so.

    Example::

        from pyterrier_noise.engine import JudgmentTable
        from pyterrier_noise.engine.chunked import evaluate_in_chunks
        from pyterrier_noise.measures import to_spec
        table = JudgmentTable.from_frame(qrels)
        ap = to_spec("AP")[0]
        values = evaluate_in_chunks(run_files, table, [ap], memory=2 ** 30)[ap]   # (runs, topics, 1)
    """
    specs = list(measures)
    chunks = file_chunks(runs, memory, warn=False)   # the caller warns once, not once an alignment
    if chunks is None:
        return AlignedRuns.build(runs, table, **build).evaluate(specs, labels)
    parts = []
    for files in chunks:
        reader = RunFileReader(files, os.cpu_count() or 1)
        try:
            parts.append(AlignedRuns.build(reader, table, **build).evaluate(specs, labels))
        finally:
            reader.forget()
    return {spec: np.concatenate([p[spec] for p in parts]) for spec in parts[0]}


def table_with_unjudged(runs: Any, table: Any, memory: float | None = DEFAULT_MEMORY, **build: Any) -> Any:
    """``table`` grown by a row (label NaN) for every document a run retrieved for one of its topics
    without a judgment: the table of ``AlignedRuns.build(runs, table, include_unjudged=True, **build)``,
    with run files read and aligned a chunk of files at a time when ``memory`` bytes would not hold
    them all.  Only the chunks' unjudged (topic, docno) pairs are kept between chunks, never their
    positions, so that labels given to those rows (such as counting every unjudged document
    relevant, which changes every run's recall base) can then be evaluated a chunk at a time with
    :func:`evaluate_in_chunks` over the grown table.

    Example::

        from pyterrier_noise.engine import JudgmentTable
        from pyterrier_noise.engine.chunked import table_with_unjudged
        grown = table_with_unjudged(run_files, JudgmentTable.from_frame(qrels), memory=2 ** 30)
    """
    chunks = file_chunks(runs, memory, warn=False)
    if chunks is None:
        return AlignedRuns.build(runs, table, include_unjudged=True, **build).table
    import pandas as pd

    from .table import JudgmentTable
    frames = [table.frame[["qid", "docno", "label"]]]
    for files in chunks:
        reader = RunFileReader(files, os.cpu_count() or 1)
        try:
            grown = AlignedRuns.build(reader, table, include_unjudged=True, **build).table
        finally:
            reader.forget()
        frame = grown.frame
        frames.append(frame.loc[np.isnan(grown.labels), ["qid", "docno", "label"]])
        del grown, frame
    rows = pd.concat(frames, ignore_index=True)
    rows = rows[~rows.duplicated(["qid", "docno"], keep="first")]   # the judged row, or one unjudged row
    return JudgmentTable.from_frame(rows.reset_index(drop=True), table.topics)
