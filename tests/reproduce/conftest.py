"""The reproductions' records, each computed once per test session and shared by the tests that read them."""
from __future__ import annotations

import pytest


@pytest.fixture(scope="session")
def reproduced():
    """``reproduced(paper, data=None)`` is ``run(paper, data=data, quick=True)``, computed once per (paper, data):
    the tests only read the records (a test that changes one builds a new :class:`Reproduction`).  A paper that
    reads no data (``NEEDS_DATA = False``: goldberg2017) gives the same record for every ``data``: computed once."""
    import importlib

    from pyterrier_noise.reproduce import run
    records = {}

    def get(paper, data=None):
        if not getattr(importlib.import_module(f"pyterrier_noise.reproduce.{paper}"), "NEEDS_DATA", True):
            data = None
        if (paper, data) not in records:
            records[paper, data] = run(paper, data=data, quick=True)
        return records[paper, data]

    return get
