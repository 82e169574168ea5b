"""Which documents to judge next: pooling and Methods A, B, C, stopping rules, oracles and durable sessions."""
from .._lazy import attach

# a selection (the `select` command) imports neither the judging sessions, the terminal, the store
# nor the plots
__getattr__, __dir__, __all__ = attach(__name__, {
    "selector": "METHODS JudgmentSelector",
    "stopping": "StopRule",
    "pooling": "depth_pool rbp_pool",
    "simulation": "qrels_oracle simulate SimulationResult compare_methods separation",
    "plots": "plot_ranges plot_curves",
    "oracles": "Oracle QrelsOracle NoisyOracle CallableOracle QuitJudging",
    "terminal": "TerminalOracle read_topics_file read_docs_file",
    "session": "JudgingSession JudgingEvent RunReport",
    "store": "SessionError SessionLockedError fingerprint_runs fingerprint_qrels",
})
