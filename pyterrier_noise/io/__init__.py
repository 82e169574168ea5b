"""Readers and writers of runs and qrels (TREC files, frames, ir_measures / ir_datasets objects).

Modules: :mod:`.frames` (normalising and validating frames), :mod:`.files` (run files by name,
unread), :mod:`.reader` (the one reader of a file's bytes, and Arrow's parse of plain TREC files into
columns, in threads: :class:`RunFileReader`, the engine's reader), :mod:`.trec` (the validating reader
of TREC text files, which names the offending line, and the writers), :mod:`.datasets` (qrels from
ir_datasets ids and objects) and :mod:`.read` (``read_qrels`` / ``read_run`` / ``read_runs`` over
every input form).

Names are imported on first use (PEP 562), so that listing run files and starting to read them
(:mod:`.files`, :mod:`.reader`) does not wait for pandas.
"""
from __future__ import annotations

import importlib

#: public name -> module of this package that defines it
_NAMES = {
    "RUN_COLUMNS": "frames", "QRELS_COLUMNS": "frames",
    "PathLike": "files", "TREC_RUN_FIELDS": "files", "run_name": "files", "list_run_files": "files",
    "run_file_arguments": "files",
    "read_trec_run": "trec", "read_trec_qrels": "trec", "write_trec_run": "trec", "write_trec_qrels": "trec",
    "read_arrow_run": "reader", "read_arrow_qrels": "reader", "run_file_columns": "reader", "RunFileReader": "reader",
    "RunsInput": "read", "QrelsInput": "read", "read_qrels": "read", "read_run": "read", "read_runs": "read",
    "read_run_arguments": "read",
    "CHEAP_COLUMNS": "cheap", "read_cheap_qrels": "cheap",
}

__all__ = ['PathLike', 'RunsInput', 'QrelsInput', 'RUN_COLUMNS', 'QRELS_COLUMNS', 'TREC_RUN_FIELDS', 'run_name', 'read_trec_run', 'read_trec_qrels', 'read_qrels', 'read_run', 'list_run_files', 'read_runs', 'read_run_arguments', 'run_file_arguments', 'write_trec_run', 'write_trec_qrels', 'read_arrow_run', 'read_arrow_qrels', 'run_file_columns', 'RunFileReader', 'CHEAP_COLUMNS', 'read_cheap_qrels']


def __getattr__(name: str):
    module = _NAMES.get(name)
    if module is None:
        raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
    value = getattr(importlib.import_module(f"{__name__}.{module}"), name)
    globals()[name] = value
    return value


def __dir__() -> list[str]:
    return sorted(set(globals()) | set(__all__))
