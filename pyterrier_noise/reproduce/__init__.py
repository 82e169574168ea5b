"""Reproduce each source paper's headline experiment with the package, beside the paper's printed numbers.

``run(paper, data=None, quick=False)`` returns a :class:`Reproduction`: the paper's headline claims, each
with a verdict and the rows that test it; rows quoting the paper's printed numbers (where printed, ours,
the tolerance and a verdict); checks of the package and of simulations, never called reproduced; and the
analyses not yet reproduced, with the reason.  The papers:

* ``rashidi2023``: Rashidi, Zobel and Moffat (2023), stability of RBP vs AP under judgment flips;
* ``goldberg2017``: Goldberg, Trotman, Wang, Min and Wan (2017), the eBay correction and Algorithm 2;
* ``moffat2007``: Moffat, Webber and Zobel (2007), the RBP worked example and Methods A, B, C vs pooling;
* ``webber2012``: Webber, Chandar and Carterette (2012), flip-rate vs metarank models (Table 7);
* ``yang2019``: Yang (2019) thesis, banding bounds (Table 3.3), ties at rho = 2, phi matching, pool depth.

``data`` is a folder holding ``trec-covid-round1/`` (default ``$PYTERRIER_NOISE_DATA`` or
``../shared/data`` beside the repository) or ``"synthetic"`` for the built-in collection.
"""
from .._lazy import attach

__getattr__, __dir__, __all__ = attach(__name__, {
    "papers": "PAPERS run run_all",
    "record": "Reproduction Row Claim judge VERDICTS PAPER_VERDICTS CHECK_VERDICTS CLAIM_VERDICTS BLOCKS REPRODUCED "
              "DATA_DIFFERS NOT_COMPARABLE NOT_REPRODUCED REVERSED HOLDS FAILS REFERENCE format_number",
    "data": "DATA_ENV SYNTHETIC default_data_dir resolve_data",
})
