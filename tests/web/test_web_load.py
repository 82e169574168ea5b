"""The judging server under load and faults, small: 4 assessors (threads, httpx) judge 200 Vaswani
documents against the Vaswani qrels through a real server process, then again while the server
is killed with SIGKILL at 3 seeded moments and restarted (benchmarks/serve_load.py runs the full
size: 8 assessors, 2,000 judgments, 10 kills)."""
from __future__ import annotations

import pytest

pytest.importorskip("uvicorn", reason="the 'web' extra (uvicorn) is not installed")
pytest.importorskip("httpx", reason="httpx (the dev extra) is not installed")

from web_helpers import serve_load  # noqa: E402


@pytest.mark.slow
def test_load_and_sigkill_lose_nothing_and_equal_one_assessor(vaswani, tmp_path):
    res = serve_load().run(n_assessors=4, budget=200, kills=3, seed=1, work=tmp_path, vaswani=vaswani)
    for tag in ("load", "faults"):
        r = res[tag]
        assert r["errors"] == [], r["errors"]
        assert r["leased_twice"] == 0, r["twice_examples"]      # no document with two assessors at once
        assert r["lost"] == 0                                     # every acknowledged judgment is in the qrels
        assert r["server_judged"] == 200 and r["judged"] == 200
        assert r["equals_single_assessor"]                        # as a set, with the labels
    assert res["faults"]["kills"] == 3 and res["faults"]["server_starts"] == 4
    assert res["load"]["kills"] == 0
