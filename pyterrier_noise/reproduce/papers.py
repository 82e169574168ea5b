"""The papers this subpackage reproduces, and :func:`run` / :func:`run_all` (see the package docstring)."""
from __future__ import annotations

import importlib
import time
from datetime import datetime, timezone
from pathlib import Path
from typing import Any

from .._validation import InputError
from .._vocab import PAPERS   # the papers' names: one place, read by the command line too
from .data import resolve_data
from .record import Reproduction

__all__ = ["PAPERS", "run", "run_all"]


def _check_paper(paper: Any) -> str:
    if paper not in PAPERS:
        raise InputError(f"unknown paper {paper!r}; expected one of {', '.join(PAPERS)} (or 'all')")
    return str(paper)


def run(paper: str, data: str | Path | None = None, quick: bool = False, progress: bool = False) -> Reproduction:
    """Run one paper's headline experiment (see the module docstring) and return its record.

    Args:
        paper: a short name of :data:`PAPERS`.
        data: a folder holding ``trec-covid-round1/``, or ``"synthetic"``; default
            ``$PYTERRIER_NOISE_DATA`` or ``../shared/data`` beside the repository.
        quick: fewer replicates and budgets (well under a minute per paper).
        progress: progress bars on stderr.
    """
    paper = _check_paper(paper)
    module = importlib.import_module(f"{__package__}.{paper}")
    where = resolve_data(data) if getattr(module, "NEEDS_DATA", True) else data
    started = datetime.now(timezone.utc).strftime("%Y-%m-%d %H:%M")
    start = time.perf_counter()
    rec = module.run(where, quick=bool(quick), progress=bool(progress))
    rec.seconds = round(time.perf_counter() - start, 1)
    rec.ran_at = started
    return rec


def run_all(data: str | Path | None = None, quick: bool = False, progress: bool = False) -> list[Reproduction]:
    """:func:`run` for every paper of :data:`PAPERS`, in order."""
    return [run(p, data=data, quick=quick, progress=progress) for p in PAPERS]
