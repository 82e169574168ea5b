"""Readers and writers of runs and qrels (TREC files, frames, ir_measures / ir_datasets objects).

Modules: :mod:`.frames` (normalising and validating frames), :mod:`.files` (run files by name,
unread), :mod:`.reader` (the one reader of a file's bytes, and Arrow's parse of plain TREC files into
columns, in threads: :class:`RunFileReader`, the engine's reader), :mod:`.trec` (the validating reader
of TREC text files, which names the offending line, and the writers), :mod:`.datasets` (qrels from
ir_datasets ids and objects), :mod:`.read` (``read_qrels`` / ``read_run`` / ``read_runs`` over
every input form) and :mod:`.native` (``quiet_native_logs``: what native libraries such as PISA
write to the process's stdout and stderr, held back).

Names are imported on first use (PEP 562), so that listing run files and starting to read them
(:mod:`.files`, :mod:`.reader`) does not wait for pandas.
"""
from __future__ import annotations

from .._lazy import attach

__getattr__, __dir__, __all__ = attach(__name__, {
    "frames": "RUN_COLUMNS QRELS_COLUMNS",
    "files": "PathLike TREC_RUN_FIELDS run_name list_run_files run_file_arguments",
    "trec": "read_trec_run read_trec_qrels write_trec_run write_trec_qrels",
    "reader": "RunFileReader read_arrow_run read_arrow_qrels run_file_columns",
    "read": "RunsInput QrelsInput read_qrels read_run read_runs read_run_arguments",
    "cheap": "CHEAP_COLUMNS read_cheap_qrels",
    "native": "quiet_native_logs",
    ".._warnings": "CoercionWarning",
})
