"""Readers and writers of runs and qrels (TREC files, frames, ir_measures / ir_datasets objects).

Modules: :mod:`.frames` (normalising and validating frames), :mod:`.trec` (TREC text files),
:mod:`.arrow` (the fast run-file reader the engine uses), :mod:`.datasets` (qrels from ir_datasets
ids and objects) and :mod:`.read` (``read_qrels`` /
``read_run`` / ``read_runs`` over every input form).
"""
from .frames import (RUN_COLUMNS, QRELS_COLUMNS)
from .trec import (PathLike, TREC_RUN_FIELDS, run_name, read_trec_run, read_trec_qrels, list_run_files, run_file_arguments, write_trec_run, write_trec_qrels)
from .arrow import (read_arrow_run, run_file_columns)
from .read import (RunsInput, QrelsInput, read_qrels, read_run, read_runs, read_run_arguments)
from .cheap import (CHEAP_COLUMNS, read_cheap_qrels)

__all__ = ['PathLike', 'RunsInput', 'QrelsInput', 'RUN_COLUMNS', 'QRELS_COLUMNS', 'TREC_RUN_FIELDS', 'run_name', 'read_trec_run', 'read_trec_qrels', 'read_qrels', 'read_run', 'list_run_files', 'read_runs', 'read_run_arguments', 'run_file_arguments', 'write_trec_run', 'write_trec_qrels', 'read_arrow_run', 'run_file_columns', 'CHEAP_COLUMNS', 'read_cheap_qrels']
