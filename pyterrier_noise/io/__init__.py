"""Readers and writers of runs and qrels (TREC files, frames, ir_measures / ir_datasets objects)."""
from .trec import (PathLike, RunsInput, QrelsInput, RUN_COLUMNS, QRELS_COLUMNS, run_name, read_trec_run, read_trec_qrels, read_qrels, read_run, list_run_files, read_runs, read_run_arguments, run_file_arguments, write_trec_run, write_trec_qrels)

__all__ = ['PathLike', 'RunsInput', 'QrelsInput', 'RUN_COLUMNS', 'QRELS_COLUMNS', 'run_name', 'read_trec_run', 'read_trec_qrels', 'read_qrels', 'read_run', 'list_run_files', 'read_runs', 'read_run_arguments', 'run_file_arguments', 'write_trec_run', 'write_trec_qrels']
