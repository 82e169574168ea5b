"""Which documents to judge next: pooling and Methods A, B, C, stopping rules, oracles and durable sessions."""
from .selector import METHODS, JudgmentSelector
from .stopping import StopRule
from .pooling import depth_pool, rbp_pool
from .simulate import SimulationResult, compare_methods, qrels_oracle, separation, simulate
from .plots import plot_curves, plot_ranges
from .oracles import CallableOracle, NoisyOracle, Oracle, QrelsOracle, QuitJudging
from .terminal import TerminalOracle, read_docs_file, read_topics_file
from .store import SessionError, SessionLockedError, fingerprint_qrels, fingerprint_runs
from .session import JudgingEvent, JudgingSession, RunReport

__all__ = ['METHODS', 'JudgmentSelector', 'StopRule', 'depth_pool', 'rbp_pool', 'qrels_oracle', 'simulate',
           'SimulationResult', 'compare_methods', 'separation', 'plot_ranges', 'plot_curves', 'Oracle', 'QrelsOracle',
           'NoisyOracle', 'CallableOracle', 'TerminalOracle', 'QuitJudging', 'JudgingSession', 'JudgingEvent',
           'RunReport', 'SessionError', 'SessionLockedError', 'fingerprint_runs', 'fingerprint_qrels',
           'read_topics_file', 'read_docs_file']
