"""Where the reproductions find their data: TREC-COVID round 1 in a shared data folder, or the synthetic collection.

``data`` is a directory holding ``trec-covid-round1/`` (as ``../shared/data`` beside the repository
does), or the word ``"synthetic"`` for the package's built-in collection.  The default is the
environment variable ``PYTERRIER_NOISE_DATA``, else ``../shared/data`` relative to the repository.
"""
from __future__ import annotations

import os
from dataclasses import dataclass
from functools import lru_cache
from pathlib import Path
from typing import Any

import pandas as pd

from .._validation import InputError

#: the environment variable naming the data folder
DATA_ENV = "PYTERRIER_NOISE_DATA"
SYNTHETIC = "synthetic"

__all__ = ["DATA_ENV", "SYNTHETIC", "Collection", "default_data_dir", "resolve_data", "load_collection", "data_option"]


@dataclass
class Collection:
    """Runs and qrels a reproduction runs on, with words for the reports."""

    name: str
    description: str
    runs: dict[str, pd.DataFrame]
    qrels: pd.DataFrame
    contributing: list[str]

    @property
    def synthetic(self) -> bool:
        return self.name == SYNTHETIC


def default_data_dir() -> Path:
    """``$PYTERRIER_NOISE_DATA``, else ``../shared/data`` beside the repository."""
    env = os.environ.get(DATA_ENV)
    if env:
        return Path(env)
    return Path(__file__).resolve().parents[2].parent / "shared" / "data"


def resolve_data(data: Any = None) -> Path | str:
    """The data folder (checked to hold ``trec-covid-round1``) or ``"synthetic"``."""
    if isinstance(data, str) and data == SYNTHETIC:
        return SYNTHETIC
    root = Path(data) if data is not None else default_data_dir()
    covid = root / "trec-covid-round1"
    if not covid.is_dir():
        where = "--data" if data is not None else f"the default data folder (set {DATA_ENV} or pass --data)"
        raise InputError(f"{covid}: no such directory; {where} must hold trec-covid-round1/ (qrels-rnd1.txt, "
                         f"runs/, runs-metadata.csv); use --data synthetic for the built-in synthetic collection")
    return root


@lru_cache(maxsize=2)
def _covid(root: str) -> Collection:
    from ..io import read_qrels, read_runs
    covid = Path(root) / "trec-covid-round1"
    runs = read_runs(covid / "runs")
    qrels = read_qrels(covid / "qrels-rnd1.txt")
    meta = pd.read_csv(covid / "runs-metadata.csv")
    contributing = [r for r in meta.loc[meta["contributed_judgments"] == "yes", "run"] if r in runs]
    desc = (f"TREC-COVID round 1 ({len(runs)} submitted runs, {qrels['qid'].nunique()} topics, "
            f"{len(qrels):,} graded NIST judgments)")
    return Collection("trec-covid-round1", desc, runs, qrels, contributing)


@lru_cache(maxsize=1)
def _synthetic() -> Collection:
    from ..synthetic import default_collection
    c = default_collection()
    desc = (f"the built-in synthetic collection ({len(c.runs)} systems, {len(c.topics)} topics, "
            f"{len(c.qrels):,} pooled graded judgments)")
    return Collection(SYNTHETIC, desc, c.runs, c.qrels, list(c.contributing))


def load_collection(data: Path | str) -> Collection:
    """The collection of a resolved ``data`` (:func:`resolve_data`); read once per process."""
    if data == SYNTHETIC:
        return _synthetic()
    return _covid(str(Path(data).resolve()))


def data_option(data: Path | str) -> str:
    """How the command line names ``data`` (empty for the default folder)."""
    if data == SYNTHETIC:
        return " --data synthetic"
    try:
        if Path(data).resolve() == default_data_dir().resolve():
            return ""
    except OSError:
        pass
    return f" --data {data}"
