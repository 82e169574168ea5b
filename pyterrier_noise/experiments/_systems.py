"""Systems as pt.Experiment takes them: run each once on the topics (:func:`run_systems`) and
keep the ``qid, docno, score, rank`` columns of its results (:func:`as_run`); shared by the
robustness and label-versions experiments."""
from __future__ import annotations

from typing import Any, Mapping, Sequence

import numpy as np
import pandas as pd

from .._validation import InputError
from ..io import read_run

__all__ = ["run_systems", "as_run"]


def run_systems(retr_systems: Any, topics: pd.DataFrame | None, names: Sequence[str] | None
                 ) -> tuple[list[str], list[pd.DataFrame]]:
    """Run each system once on the topics (a frame is used as given), like pt.Experiment."""
    if isinstance(retr_systems, Mapping):
        names = [str(k) for k in retr_systems]
        systems = list(retr_systems.values())
    elif isinstance(retr_systems, (list, tuple)):
        systems = list(retr_systems)
        if names is None:
            names = [str(s) for s in systems]
        else:
            names = [str(n) for n in names]
            if len(names) != len(systems):
                raise InputError(f"names has {len(names)} entries but there are {len(systems)} systems")
    else:
        raise InputError(f"retr_systems must be a list or dict of pt.Transformers or result frames, "
                         f"got {type(retr_systems).__name__}")
    if not systems:
        raise InputError("retr_systems is empty")
    if len(set(names)) != len(names):
        dup = pd.Index(names)[pd.Index(names).duplicated()][0]
        raise InputError(f"system names must be unique; {dup!r} appears more than once (pass names=)")
    results = []
    for name, system in zip(names, systems):
        if isinstance(system, pd.DataFrame):
            res = system
        else:
            if topics is None:
                raise InputError(f"system {name!r} is a transformer, so topics are needed to run it")
            if hasattr(system, "transform"):
                res = system.transform(topics)
            elif callable(system):
                res = system(topics)
            else:
                raise InputError(f"system {name!r} is a {type(system).__name__}; expected a pt.Transformer "
                                 f"or a results frame")
            if not isinstance(res, pd.DataFrame):
                raise InputError(f"system {name!r} returned a {type(res).__name__}, expected a results frame")
        results.append(res)
    return names, results


def as_run(frame: pd.DataFrame, name: str) -> pd.DataFrame:
    """The ``qid, docno, score, rank`` columns of a system's results.

    Results that already have clean columns (string ids, finite float scores, integer ranks:
    what PyTerrier retrievers and :func:`~pyterrier_noise.io.read_runs` give) are used as they
    are; anything else goes through :func:`~pyterrier_noise.io.read_run`, which validates and
    converts (and names the row of any bad value)."""
    from pandas.api import types as pdt
    cols = ["qid", "docno", "score", "rank"]
    clean = (set(cols) <= set(frame.columns) and len(frame) > 0
             and pdt.is_string_dtype(frame["qid"]) and pdt.is_string_dtype(frame["docno"])
             and pdt.is_float_dtype(frame["score"]) and pdt.is_integer_dtype(frame["rank"])
             and bool(np.isfinite(frame["score"].to_numpy()).all()))
    run = frame[cols] if clean else read_run(frame, name=f"system {name!r}")
    run = run.reset_index(drop=True)
    run.attrs["source"] = f"system {name!r}"
    return run
