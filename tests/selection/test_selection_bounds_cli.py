"""``judge --bounds`` prints a readable table (issue 16): runs by base score, highest first, run names
in full, fixed decimals, no index, no exponent notation; the values are RBP base / residual / upper /
projected (Moffat and Zobel 2008), means over the topics, checked by brute force over the rankings."""
from __future__ import annotations

import re

import numpy as np
import pytest

from pyterrier_noise.io import read_qrels
from pyterrier_noise.selection import JudgingSession

from cli_helpers import run_cli


pytestmark = pytest.mark.collection(n_topics=4, n_systems=5, n_docs_per_topic=40, depth=15, pool_depth=3, seed=5)


def _brute_force(runs, judged, p):
    """Per run, the mean over the runs' topics of base = sum over judged documents at rank i of
    (1-p) p^(i-1) x [label >= 1] and residual = 1 - sum over judged documents of (1-p) p^(i-1); the
    ranking is trec_eval's (score descending, then docno descending); projected = base / judged mass,
    or base + residual / 2 where nothing is judged."""
    labels = {(q, d): y for q, d, y in zip(judged["qid"], judged["docno"], judged["label"])}
    topics = sorted({str(q) for r in runs.values() for q in r["qid"]})
    out = {}
    for name, run in runs.items():
        vals = []
        for t in topics:
            rows = run[run["qid"].astype(str) == t]
            ranked = sorted(zip(rows["score"], rows["docno"]), key=lambda x: x[1], reverse=True)   # docno desc
            ranked.sort(key=lambda x: -np.float32(x[0]))   # then score desc (stable), in single precision
            base = mass = 0.0
            for i, (_, d) in enumerate(ranked):
                if (t, d) in labels:
                    w = (1 - p) * p ** i
                    mass += w
                    base += w * (labels[(t, d)] >= 1)
            vals.append((base, 1 - mass, base + (1 - mass), base / mass if mass > 0 else base + (1 - mass) / 2))
        out[name] = np.mean(vals, axis=0)
    return out


def test_bounds_is_a_sorted_readable_table_with_the_brute_force_values(tmp_path, coll):
    runs_dir = coll.write_trec(tmp_path / "c") / "runs"
    qrels = tmp_path / "qrels.txt"
    from pyterrier_noise.io import write_trec_qrels
    write_trec_qrels(coll.true_qrels, qrels)
    session = tmp_path / "s.sqlite"
    code, out, err = run_cli("judge", "--session", session, "--method", "C", "--budget", 25, "--qrels", qrels,
                             "--bounds", runs_dir)
    assert code == 0, err
    lines = out.splitlines()
    start = next(i for i, line in enumerate(lines) if line.startswith("RBP bounds at p=0.8"))
    assert "means over 4 topics" in lines[start]
    assert lines[start + 1].split() == ["run", "base", "residual", "upper", "projected"]
    body = [line.split() for line in lines[start + 2:start + 2 + len(coll.runs)]]
    assert sorted(r[0] for r in body) == sorted(coll.runs)          # every run, its name in full
    assert all(re.fullmatch(r"\d\.\d{4}", x) for r in body for x in r[1:])   # fixed decimals, no 1e-38
    base = [float(r[1]) for r in body]
    assert base == sorted(base, reverse=True)                         # highest base first
    with JudgingSession(session) as s:
        judged = read_qrels(s.judged_qrels())
    want = _brute_force({n: r for n, r in coll.runs.items()}, judged, 0.8)
    for r in body:
        assert [float(x) for x in r[1:]] == pytest.approx(list(want[r[0]]), abs=5e-5)   # 4 decimals
