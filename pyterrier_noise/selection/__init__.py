"""Which documents to judge next: pooling and Methods A, B, C, stopping rules, oracles and durable sessions."""
from __future__ import annotations

import importlib
from typing import Any

from .selector import METHODS, JudgmentSelector
from .stopping import StopRule
# eager: the function `simulate` shares its name with its module, which would otherwise shadow it
from .simulate import SimulationResult, compare_methods, qrels_oracle, separation, simulate
from .oracles import CallableOracle, NoisyOracle, Oracle, QrelsOracle, QuitJudging

# the rest on first use: a selection (the `select` command) does not import the judging sessions,
# the terminal, the store or the plots
_LAZY = {"depth_pool": "pooling", "rbp_pool": "pooling", "plot_curves": "plots", "plot_ranges": "plots",
         "TerminalOracle": "terminal", "read_docs_file": "terminal", "read_topics_file": "terminal",
         "SessionError": "store", "SessionLockedError": "store", "fingerprint_qrels": "store",
         "fingerprint_runs": "store", "JudgingEvent": "session", "JudgingSession": "session", "RunReport": "session"}

__all__ = ['METHODS', 'JudgmentSelector', 'StopRule', 'depth_pool', 'rbp_pool', 'qrels_oracle', 'simulate',
           'SimulationResult', 'compare_methods', 'separation', 'plot_ranges', 'plot_curves', 'Oracle', 'QrelsOracle',
           'NoisyOracle', 'CallableOracle', 'TerminalOracle', 'QuitJudging', 'JudgingSession', 'JudgingEvent',
           'RunReport', 'SessionError', 'SessionLockedError', 'fingerprint_runs', 'fingerprint_qrels',
           'read_topics_file', 'read_docs_file']


def __getattr__(name: str) -> Any:
    if name in _LAZY:
        value = getattr(importlib.import_module(f"{__name__}.{_LAZY[name]}"), name)
        globals()[name] = value
        return value
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")


def __dir__() -> list[str]:
    return sorted(set(globals()) | set(__all__))
