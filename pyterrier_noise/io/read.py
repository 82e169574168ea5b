"""Reading runs and qrels from every form the ecosystem uses, with validation: the dispatch over
frames, dicts, namedtuples, ir_datasets / PyTerrier dataset objects, TREC files and directories.

Runs come back as PyTerrier result frames ``qid, docno, score, rank`` (``rank`` 0-based, as in
PyTerrier; TREC files are 1-based and converted here), qrels as ``qid, docno, label`` frames.

Accepted inputs
---------------
* PyTerrier frames (``qid, docno, score[, rank]`` / ``qid, docno, label``);
* ir_measures frames (``query_id, doc_id, score`` / ``query_id, doc_id, relevance``) and iterables
  of ir_measures / ir_datasets namedtuples (``ScoredDoc``, ``Qrel``, ``TrecQrel``);
* TREC files, plain or gzip, columns separated by spaces or tabs (the qrels iteration column may
  hold anything, e.g. ``0.5``);
* directories of run files (a run's name is its file name without ``.gz``);
* ``ir_datasets`` datasets (anything with ``qrels_iter()``, including
  ``ir_datasets.create_dataset(qrels_trec=...)``), ids (``"irds:NAME"``), PyTerrier datasets
  (``pt.get_dataset(...)``) and ``pt.get_dataset(...).get_qrels()``;
* pytrec_eval-style dicts ``{qid: {docno: value}}``.

Bad input raises :class:`~pyterrier_noise._validation.InputError` naming the file and line (or column
and row) and what was expected; coercions (duplicate judgments, negative labels) are announced
with counts.
"""
from __future__ import annotations

import os
from collections.abc import Iterable, Mapping
from pathlib import Path
from typing import Any

import pandas as pd

from .._validation import InputError
from .._vocab import Fractional
from .datasets import irds_dataset_id, read_irds
from .frames import clean_qrels, clean_run, dict_of_dicts, frame_source, namedtuples_to_frame
from .trec import read_run_files, list_run_files, read_trec_qrels, read_trec_run, run_file_arguments, run_name

RunsInput = Any  # a frame, a path, a directory, a list of those, or a mapping name -> any of those
QrelsInput = Any

__all__ = ["RunsInput", "QrelsInput", "read_qrels", "read_run", "read_runs", "read_run_arguments"]


def read_qrels(source: QrelsInput, fractional: Fractional | None = None) -> pd.DataFrame:
    """Read qrels from any supported form into a ``qid, docno, label`` frame.

    Labels are **int64** whenever every label is a whole number, so the frame goes as it is to
    ``pt.Experiment`` and pytrec_eval (which refuse float relevance).  Fractional labels (1.5)
    follow trec_eval by default (``fractional="truncate"``: truncated toward zero, as its ``atol``
    reads them, with a CoercionWarning that counts them and names the first); ``fractional="keep"``
    keeps them as graded gains (the column is then float64).  The default (None) is ``"truncate"``,
    except for a frame that a ``fractional="keep"`` read (or the crowd aggregation) produced: its
    ``attrs["fractional"]`` says ``"keep"``, so graded fractional qrels stay graded when they are
    passed on to ``evaluate`` and the other entry points.

    ``source``: a TREC qrels file, a frame, a dict, an iterable of ``Qrel`` namedtuples, an
    ir_datasets dataset or id (``"irds:NAME"``, or ``"NAME"`` when no such file exists and NAME is
    registered with ir_datasets) or a PyTerrier dataset (``pt.get_dataset(...)``).

    Example::

        qrels = read_qrels("../shared/data/trec-covid-round1/qrels-rnd1.txt")
    """
    if isinstance(source, pd.DataFrame):
        if fractional is None:
            fractional = source.attrs.get("fractional", "truncate")
        return clean_qrels(source, str(source.attrs.get("source", "qrels frame")), fractional)
    fractional = "truncate" if fractional is None else fractional
    if isinstance(source, (str, os.PathLike)):
        path = Path(source)
        if path.is_dir():
            raise InputError(f"{path}: is a directory, expected a qrels file")
        dataset_id = irds_dataset_id(source) if not path.exists() else None
        if dataset_id is not None:
            return read_irds(dataset_id, fractional)
        return read_trec_qrels(path, fractional)
    if hasattr(source, "irds_ref"):  # a PyTerrier dataset backed by ir_datasets
        return read_irds(source.irds_ref(), fractional)
    if hasattr(source, "qrels_iter"):  # an ir_datasets dataset
        return read_irds(source, fractional)
    if hasattr(source, "get_qrels"):  # a PyTerrier dataset
        return read_qrels(source.get_qrels(), fractional)
    if isinstance(source, Mapping):
        return clean_qrels(dict_of_dicts(source, "label"), "qrels dict", fractional)
    if isinstance(source, Iterable):
        return clean_qrels(namedtuples_to_frame(source, "qrels"), "qrels iterable", fractional)
    raise InputError(f"cannot read qrels from {type(source).__name__}; expected a frame, a TREC file, "
                     f"an ir_datasets dataset or id, a PyTerrier dataset or an iterable of Qrel namedtuples")


def read_run(source: Any, name: str | None = None) -> pd.DataFrame:
    """Read one run from a frame, TREC file (plain or gzip), dict or iterable of ScoredDocs.

    Returns a PyTerrier frame ``qid, docno, score, rank`` (``rank`` 0-based).
    """
    if isinstance(source, pd.DataFrame):
        return clean_run(source, name or frame_source(source, "run frame"))
    if isinstance(source, (str, os.PathLike)):
        path = Path(source)
        if path.is_dir():
            raise InputError(f"{path}: is a directory; use read_runs() for a directory of runs")
        return read_trec_run(path)
    if isinstance(source, Mapping):
        return clean_run(dict_of_dicts(source, "score"), name or "run dict")
    if isinstance(source, Iterable):
        return clean_run(namedtuples_to_frame(source, "run"), name or "run iterable")
    raise InputError(f"cannot read a run from {type(source).__name__}; expected a frame or a TREC run file")


def read_runs(source: RunsInput, n_jobs: int | None = None) -> dict[str, pd.DataFrame]:
    """Read several runs into ``{name: frame}``.

    ``source`` may be a directory of TREC run files, a list of files, a mapping of names to
    frames or files, a single frame (with a ``name`` column for several systems) or one file.
    A run's name is its file name without ``.gz``. Files are parsed in parallel processes when
    there are many (``n_jobs``; default: all cores).
    """
    if isinstance(source, pd.DataFrame):
        if "name" in source.columns:
            return {str(n): read_run(g.drop(columns="name"), name=str(n))
                    for n, g in source.groupby("name", sort=False)}
        return {"run": read_run(source, name="run")}
    if isinstance(source, Mapping):
        return {str(k): read_run(v, name=str(k)) for k, v in source.items()}
    if isinstance(source, (str, os.PathLike)):
        path = Path(source)
        if path.is_dir():
            return read_run_files(list_run_files(path), n_jobs)
        return {run_name(path): read_trec_run(path)}
    if isinstance(source, Iterable):
        items = list(source)
        if all(isinstance(x, (str, os.PathLike)) for x in items):
            files: list[Path] = []
            for x in items:
                p = Path(x)
                files.extend(list_run_files(p) if p.is_dir() else [p])
            return read_run_files(files, n_jobs)
        return {f"run{i}": read_run(x, name=f"run{i}") for i, x in enumerate(items)}
    raise InputError(f"cannot read runs from {type(source).__name__}")


def read_run_arguments(items: Iterable) -> dict[str, pd.DataFrame]:
    """Runs named on a command line: each item a run file or a directory of them.

    Two runs with the same name (file name without ``.gz``) are an error, never a silent overwrite.
    """
    return read_runs(run_file_arguments(items))
