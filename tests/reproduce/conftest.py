"""The reproductions' records, each computed once per test session and shared by the tests that read them."""
from __future__ import annotations

import pytest


@pytest.fixture(scope="session")
def reproduced():
    """``reproduced(paper, data=None)`` is ``run(paper, data=data, quick=True)``, computed once per (paper, data):
    the tests only read the records (a test that changes one builds a new :class:`Reproduction`).  A paper that
    reads no data (``NEEDS_DATA = False``: goldberg2017) gives the same record for every ``data``: computed once,
    with ``$PYTERRIER_NOISE_DATA`` naming a folder that does not exist, so that its record also shows that it
    runs without a data folder (test_reproduce.py's test_missing_data_is_a_clear_error)."""
    import importlib
    import tempfile
    from pathlib import Path

    from pyterrier_noise.reproduce import run
    records = {}

    def get(paper, data=None):
        needs_data = getattr(importlib.import_module(f"pyterrier_noise.reproduce.{paper}"), "NEEDS_DATA", True)
        if not needs_data:
            data = None
        if (paper, data) not in records:
            with tempfile.TemporaryDirectory() as tmp, pytest.MonkeyPatch.context() as mp:
                if not needs_data:
                    mp.setenv("PYTERRIER_NOISE_DATA", str(Path(tmp) / "nowhere"))
                records[paper, data] = run(paper, data=data, quick=True)
        return records[paper, data]

    return get
