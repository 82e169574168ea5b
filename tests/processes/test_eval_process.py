"""``eval`` as a whole process: run files read by threads while the qrels and imports proceed
(``RunFileReader``), the lazy ``io`` package, what the command imports.  Every check compares the
fast path with the path it replaces (serial reading, frames from the validating reader) or with
the lines of the files themselves."""
from __future__ import annotations

import gzip
import subprocess
import sys
import warnings

import numpy as np
import pytest

from collection_helpers import random_collection
from pyterrier_noise import InputError
from pyterrier_noise.io import CoercionWarning
from pyterrier_noise.engine import AlignedRuns, JudgmentTable
from pyterrier_noise.io import RunFileReader, run_file_columns, run_name


def _write_runs(tmp_path, seed: int, n_runs: int = 5, tie_decimals: int | None = 1):
    """Random runs written as TREC files: gzip and plain, space- and tab-separated, two of them with
    0-based ranks (as pt.io.write_results writes them); returns (paths, qrels, lines per file)."""
    runs, qrels = random_collection(seed, n_runs=n_runs, n_topics=4, n_docs=40, depth=12,
                                    tie_decimals=tie_decimals)
    paths, lines = [], []
    for k, (name, run) in enumerate(runs.items()):
        sep = "\t" if k % 2 else " "
        base = 0 if k in (1, 3) else 1
        rows = [sep.join([q, "Q0", d, str(int(r) + base), repr(float(s)), "tag"])
                for q, d, r, s in zip(run.qid, run.docno, run["rank"], run.score)]
        data = ("\n".join(rows) + "\n").encode()
        path = tmp_path / (f"{name}.gz" if k % 3 == 0 else name)
        path.write_bytes(gzip.compress(data) if path.name.endswith(".gz") else data)
        paths.append(path)
        lines.append([r.split(sep) for r in rows])
    return paths, qrels, lines


def _caught(fn, *args, **kw):
    with warnings.catch_warnings(record=True) as rec:
        warnings.simplefilter("always", CoercionWarning)
        out = fn(*args, **kw)
    return out, [str(w.message) for w in rec if issubclass(w.category, CoercionWarning)]


@pytest.mark.parametrize("arrow_docnos", [False, True])
def test_reader_in_threads_gives_the_lines_of_the_files(tmp_path, arrow_docnos):
    paths, _, lines = _write_runs(tmp_path, seed=1)
    (cols, msgs) = _caught(RunFileReader(paths, 3).columns, arrow_docnos)
    serial, msgs1 = _caught(run_file_columns, paths, 1, arrow_docnos)
    run_idx, qc, qu, dc, du, score, rank = cols
    du = np.asarray(du.to_pylist() if arrow_docnos else du, dtype=object)
    # the lines themselves: run index, qid, docno, score, rank (0-based: 1-based files shifted)
    want = [(k, f[0], f[2], float(f[4]), int(f[3]) - (0 if k in (1, 3) else 1))
            for k, fl in enumerate(lines) for f in fl]
    got = list(zip(run_idx.tolist(), qu[qc].tolist(), du[dc].tolist(), score.tolist(), rank.tolist()))
    assert got == want
    # and exactly what the serial reader gives, announcements in file order
    s_du = np.asarray(serial[4].to_pylist() if arrow_docnos else serial[4], dtype=object)
    assert list(s_du[serial[3]]) == list(du[dc]) and np.array_equal(serial[6], rank)
    # one announcement for the two 0-based files, naming the first in file order
    assert msgs == msgs1 and len(msgs) == 1
    assert msgs[0].startswith("ranks start at 0 in 2 run files (") and f"e.g. {paths[1]}," in msgs[0]


def test_reader_columns_are_computed_once_and_forgotten(tmp_path):
    paths, _, _ = _write_runs(tmp_path, seed=2)
    reader = RunFileReader(paths, 2)
    first, msgs = _caught(reader.columns)
    again, msgs2 = _caught(reader.columns)
    assert again is first and len(msgs) == 1 and msgs2 == []   # announced once, for both files
    # the other docno form, converted from the columns kept (the tables are freed)
    as_arrow = reader.columns(arrow_docnos=True)
    assert as_arrow[4].to_pylist() == list(first[4]) and as_arrow[3] is first[3]
    reader.forget()
    third, _ = _caught(reader.columns)   # read again (serially) after forget
    assert third is not first and all(np.array_equal(a, b) for a, b in zip(third, first) if isinstance(a, np.ndarray))


@pytest.mark.parametrize("ties", ["trec_eval", "given", "expected"])
@pytest.mark.parametrize("seed", [3, 4])
def test_files_read_in_threads_align_as_frames(tmp_path, ties, seed):
    # files read by threads (n_jobs=3) against files read in this thread (n_jobs=1) and against
    # the frames the validating reader gives (an independent path)
    paths, qrels, _ = _write_runs(tmp_path, seed=seed, n_runs=7)
    table = JudgmentTable.from_qrels(qrels)
    with pytest.warns(CoercionWarning, match="ranks start at 0"):   # some runs are written 0-based
        threaded = AlignedRuns.build(paths, table, ties=ties, n_jobs=3)
        whole = AlignedRuns.build(paths, table, ties=ties, n_jobs=1)
        from pyterrier_noise.io import read_trec_run
        frames = AlignedRuns.build({run_name(p): read_trec_run(p) for p in paths}, table, ties=ties)
    assert threaded.run_names == whole.run_names == frames.run_names == [run_name(p) for p in paths]
    for other in (whole, frames):
        for attr in ("seg_len", "seg_start", "pos", "jidx", "group_start", "group_end"):
            assert np.array_equal(getattr(threaded, attr), getattr(other, attr)), attr


def test_a_bad_file_among_many_is_named_with_its_line(tmp_path):
    paths, qrels, _ = _write_runs(tmp_path, seed=5)
    bad = tmp_path / "zz_bad"
    bad.write_text("1 Q0 d1 1 2.0 t\n1 Q0 d2 2 x1 t\n")
    with pytest.raises(InputError, match=r"zz_bad line 2: score 'x1' is not a number"):
        with pytest.warns(CoercionWarning, match="ranks start at 0"):   # some runs are written 0-based
            AlignedRuns.build([*paths, bad], qrels)


def test_a_duplicate_document_in_files_read_in_threads_is_an_error(tmp_path):
    paths, qrels, _ = _write_runs(tmp_path, seed=6)
    dup = tmp_path / "zz_dup"
    dup.write_text("1 Q0 d1 1 2.0 t\n1 Q0 d1 2 1.0 t\n")
    with pytest.raises(InputError, match=r"run 'zz_dup', qid '1': document 'd1' appears more than once"):
        with pytest.warns(CoercionWarning, match="ranks start at 0"):   # some runs are written 0-based
            AlignedRuns.build([*paths, dup], qrels, n_jobs=2)


def test_evaluate_of_files_equals_evaluate_of_frames(tmp_path):
    import pyterrier_noise as pn
    from pyterrier_noise.io import read_trec_run
    paths, qrels, _ = _write_runs(tmp_path, seed=8)
    measures = ["RBP(p=0.8)", "INST(T=3,max_rel=2)", "AP", "nDCG@10"]
    with pytest.warns(CoercionWarning, match="ranks start at 0"):   # some runs are written 0-based
        a = pn.evaluate(paths, qrels, measures, perquery=True)
        b = pn.evaluate(RunFileReader(paths, 2), qrels, measures, perquery=True)
        c = pn.evaluate({run_name(p): read_trec_run(p) for p in paths}, qrels, measures, perquery=True)
    assert a.equals(b) and a.equals(c)


def test_reading_run_files_does_not_import_pandas():
    # the command line starts reading before pandas is imported (it overlaps the reading)
    code = ("import sys; import pyterrier_noise.io as io; from pyterrier_noise.io.reader import RunFileReader; "
            "from pyterrier_noise.io.files import run_file_arguments; print('pandas' in sys.modules)")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert out.stdout.strip() == "False"


def test_eval_command_imports_no_pandas_scipy_matplotlib_or_pyterrier(tmp_path):
    paths, qrels, _ = _write_runs(tmp_path, seed=9)
    qpath = tmp_path / "qrels"
    qpath.write_text("".join(f"{q} 0 {d} {int(v)}\n" for q, d, v in zip(qrels.qid, qrels.docno, qrels.label)))
    code = ("import sys, io, contextlib; from pyterrier_noise.cli import main; "
            f"args = ['eval', {str(qpath)!r}, *{[str(p) for p in paths]!r}, '-m', 'RBP(p=0.8)', '-m', "
            "'INST(T=3,max_rel=2)', '-m', 'AP', '-m', 'nDCG@10', '--per-query', '--format', 'tsv']; "
            "buf = io.StringIO(); f = contextlib.redirect_stdout(buf); f.__enter__(); rc = main(args); f.__exit__(None, None, None); "
            "print(rc, len(buf.getvalue().splitlines()), "
            "sorted(m for m in ('scipy', 'matplotlib', 'pyterrier', 'pandas') if m in sys.modules))")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    # 5 runs x 4 topics x 4 measures rows and the header
    assert out.stdout.split("\n")[-2] == "0 81 []"
    # one 0-based-rank announcement for both files, naming the first in file order (files are read
    # in threads)
    warned = [ln for ln in out.stderr.splitlines() if "ranks start at 0" in ln]
    assert len(warned) == 1 and "in 2 run files" in warned[0] and f"e.g. {paths[1]}," in warned[0], warned


@pytest.mark.parametrize("R", [1, 2])
def test_inst_bounds_same_under_the_former_chunk_budget(monkeypatch, R):
    # INST's dense recurrence runs a chunk of segments at a time; the budget went from 4 million
    # elements to 1 million (at cwl_eval's depth of 1,000 ranks: 4,000 segments a chunk -> 1,000).
    # Over 4,500 segments (several chunks under either budget) the floats are the same, bit for bit.
    # (Chunks of a few segments can differ in the last bit: numpy's einsum sums in another order.)
    from pyterrier_noise.engine import MeasureSpec
    from pyterrier_noise.engine.kernels import cwl as kernels
    import pandas as pd
    rng = np.random.default_rng(11)
    n_topics, depth = 1500, 8
    qid = np.repeat(np.arange(n_topics).astype(str), depth)
    runs = {f"r{k}": pd.DataFrame({"qid": qid, "docno": [f"d{i % depth}" for i in range(len(qid))],
                                   "score": rng.normal(size=len(qid)), "rank": np.tile(np.arange(depth), n_topics)})
            for k in range(3)}
    judged = rng.random(len(qid)) < 0.6
    qrels = pd.DataFrame({"qid": qid[judged], "docno": [f"d{i % depth}" for i in np.flatnonzero(judged)],
                          "label": rng.integers(0, 3, judged.sum())})
    with pytest.warns(CoercionWarning, match="topic\\(s\\) in the runs are not in the qrels"):   # unjudged topics
        aligned = AlignedRuns.build(runs, qrels)
    L0 = aligned.label_matrix()[:, 0]
    L = np.column_stack([L0, np.where(np.isnan(L0), 1.0, np.nan)])[:, :R]
    spec = MeasureSpec("INST", T=2.0, max_rel=2.0)
    real = kernels.segment_chunks
    got = []
    for budget in (4_000_000, kernels.INST_CHUNK_ELEMENTS):
        monkeypatch.setattr(kernels, "segment_chunks", lambda n, d, r, budget=budget: real(n, d, r, budget))
        assert len(list(kernels.segment_chunks(aligned.n_segments, 1000, R))) > 1
        got.append(kernels.inst_bounds(aligned, spec, L, True))
    assert kernels.INST_CHUNK_ELEMENTS == 1_000_000
    assert np.array_equal(got[0][0], got[1][0]) and np.array_equal(got[0][1], got[1][1])


@pytest.mark.parametrize("perquery", [False, True])
def test_evaluate_frame_is_the_per_measure_frames_in_run_then_measure_order(perquery):
    # evaluate builds its frame in its final order; the reference evaluates one measure at a time
    # and orders the rows by run (as given), then measure (as given), then topic
    import pandas as pd
    import pyterrier_noise as pn
    runs, qrels = random_collection(12, n_runs=3, n_topics=4, tie_decimals=1)
    measures = ["RBP(p=0.8)", "AP", pn.RBPBase(p=0.5, ties="optimistic"), "nDCG@5", "INST(T=2)"]
    got = pn.evaluate(runs, qrels, measures, perquery=perquery)
    one = [pn.evaluate(runs, qrels, [m], perquery=perquery) for m in measures]
    want = pd.concat([f[f["name"] == n] for n in runs for f in one], ignore_index=True)
    pd.testing.assert_frame_equal(got, want, check_exact=True)
    assert len(got) == len(runs) * len(measures) * (4 if perquery else 1)


# -- the qrels read without pandas (what the eval command does with a plain qrels file) ---------

def _qrels_text(qrels, sep: str = " ", iteration: str = "0") -> str:
    return "".join(f"{q}{sep}{iteration}{sep}{d}{sep}{int(v)}\n" for q, d, v in zip(qrels.qid, qrels.docno, qrels.label))


@pytest.mark.parametrize("form", ["space", "tab", "double-space", "gzip", "gzip-two-members"])
def test_arrow_qrels_give_the_table_read_qrels_gives(tmp_path, form):
    from pyterrier_noise.io import read_arrow_qrels, read_qrels
    _, qrels, _ = _write_runs(tmp_path, seed=11)
    qrels = qrels.sample(frac=1.0, random_state=3)   # file order is not (topic, docno) order
    text = _qrels_text(qrels, "\t" if form == "tab" else " ")
    if form == "double-space":   # as TREC-COVID's qrels: two spaces before the docno
        text = text.replace(" 0 ", " 0.5  ")
    path = tmp_path / "qrels"
    if form.startswith("gzip"):
        half = text.index("\n", len(text) // 2) + 1
        data = gzip.compress(text.encode()) if form == "gzip" else \
            gzip.compress(text[:half].encode()) + gzip.compress(text[half:].encode())
        path.write_bytes(data)
    else:
        path.write_text(text)
    cols = read_arrow_qrels(path)
    assert cols is not None
    fast = JudgmentTable.from_arrays(*cols)
    slow = JudgmentTable.from_qrels(read_qrels(path))
    assert fast.topics == slow.topics
    for name in ("topic_index", "topic_start", "labels", "docno"):
        assert np.array_equal(getattr(fast, name), getattr(slow, name)), name
    # the same table from object arrays, and its frame is the judgments' frame
    obj = JudgmentTable.from_arrays(np.asarray(cols[0].to_pylist(), dtype=object),
                                    np.asarray(cols[1].to_pylist(), dtype=object), cols[2])
    assert np.array_equal(obj.docno, slow.docno) and np.array_equal(obj.topic_index, slow.topic_index)
    assert fast.frame[["qid", "docno"]].equals(slow.frame[["qid", "docno"]])
    assert np.array_equal(fast.frame["label"].to_numpy(dtype=float), slow.frame["label"].to_numpy(dtype=float))


@pytest.mark.parametrize("line", ["1 0 d1 1.5", "1 0 d1 -1", "1 0 d1 nan", "1 0 d1 2\n1 0 d1 1", "1 0 d1", "1 0 d1 x",
                                  "1 0 d 1 1", ""])
def test_arrow_qrels_leave_what_needs_a_word_to_read_qrels(tmp_path, line):
    # fractional, negative or missing labels, a pair judged twice, an irregular line, an empty
    # file: the validating reader warns or names the line, so the fast reader declines
    from pyterrier_noise.io import read_arrow_qrels
    path = tmp_path / "qrels"
    path.write_text("1 0 d0 1\n" + line + "\n" if line else "")
    assert read_arrow_qrels(path) is None


def test_eval_command_with_qrels_needing_a_word_says_it(tmp_path):
    # a qrels file the fast reader declines goes through read_qrels: its warning is printed and
    # the values equal those of the cleaned qrels
    paths, qrels, _ = _write_runs(tmp_path, seed=12)
    clean = tmp_path / "clean"
    clean.write_text(_qrels_text(qrels))
    dup = tmp_path / "dup"
    first = qrels.iloc[0]
    dup.write_text(f"{first.qid} 0 {first.docno} 0\n" + _qrels_text(qrels))   # the last judgment wins
    outs = []
    for q in (clean, dup):
        cmd = [sys.executable, "-m", "pyterrier_noise.cli", "eval", str(q), *map(str, paths), "-m", "AP",
               "-m", "RBP(p=0.8)", "--per-query", "--format", "tsv"]
        outs.append(subprocess.run(cmd, capture_output=True, text=True, check=True))
    assert outs[0].stdout == outs[1].stdout
    assert "1 duplicate judgment(s)" in outs[1].stderr and "duplicate" not in outs[0].stderr


def test_multi_member_gzip_run_reads_every_member(tmp_path):
    # gzip files may be concatenated members (gzip -c a >> f); zlib alone would stop after the first
    paths, _, lines = _write_runs(tmp_path, seed=13, n_runs=1)
    text = paths[0].read_bytes()
    text = gzip.decompress(text) if text[:2] == b"\x1f\x8b" else text
    half = text.index(b"\n", len(text) // 2) + 1
    two = tmp_path / "two.gz"
    two.write_bytes(gzip.compress(text[:half]) + gzip.compress(text[half:]))
    cols = run_file_columns([two])
    assert cols is not None and len(cols[0]) == len(lines[0])
    # a truncated member is left to the validating reader, which says what is wrong
    cut = tmp_path / "cut.gz"
    cut.write_bytes(two.read_bytes()[:-20])
    assert run_file_columns([cut]) is None


@pytest.mark.parametrize("perquery", [False, True])
def test_evaluate_arrays_is_evaluate_without_the_frame(tmp_path, perquery):
    import pyterrier_noise as pn
    from pyterrier_noise.measures import evaluate_arrays
    paths, qrels, _ = _write_runs(tmp_path, seed=14)
    measures = ["nDCG@10", "RBP(p=0.8)", "AP", "INST(T=3,max_rel=2)"]
    with pytest.warns(CoercionWarning, match="ranks start at 0"):   # some runs are written 0-based
        frame = pn.evaluate(paths, qrels, measures, perquery=perquery)
        arrays = evaluate_arrays(paths, qrels, measures, perquery=perquery)
    assert arrays.measures == measures and arrays.run_names == [run_name(p) for p in paths]
    assert arrays.to_frame().equals(frame)
    # value[r, m, t] is the frame's row (run r, measure m, topic t)
    r, m = 2, 1
    rows = frame[(frame.name == arrays.run_names[r]) & (frame.measure == measures[m])]
    assert np.array_equal(rows.value.to_numpy(), arrays.value[r, m])


def test_duplicates_are_found_in_every_piece_of_a_large_alignment():
    # above 200,000 positions the duplicate check sorts pieces cut at segment boundaries in
    # threads: a duplicate in the last ranking (and one in the first) is still found and counted
    import pandas as pd
    n_topics, depth = 50, 2500
    qid = np.repeat([str(t) for t in range(n_topics)], depth)
    docno = np.tile([f"d{i}" for i in range(depth)], n_topics).astype(object)
    score = np.tile(np.arange(depth, 0, -1, dtype=float), n_topics)
    qrels = pd.DataFrame({"qid": [str(t) for t in range(n_topics)], "docno": "d0", "label": 1})
    runs = {}
    for r in range(2):
        d = docno.copy()
        runs[f"r{r}"] = pd.DataFrame({"qid": qid, "docno": d, "score": score, "rank": np.tile(np.arange(depth), n_topics)})
    clean = AlignedRuns.build(runs, qrels, n_jobs=2)
    assert len(clean.pos) == 2 * n_topics * depth
    runs["r1"].loc[len(qid) - 1, "docno"] = "d5"          # last ranking of the last run
    runs["r0"].loc[3, "docno"] = "d7"                    # first ranking of the first run
    with pytest.raises(InputError, match=r"run 'r0', qid '0': document 'd7' appears more than once .*\(2 duplicate"):
        AlignedRuns.build(runs, qrels, n_jobs=2)


def test_eval_as_a_program_runs_without_garbage_collection_and_writes_the_same(tmp_path):
    # run as a program (main() without arguments, as the console script calls it), eval turns the
    # garbage collector off and freezes it at exit, as select does; the TSV must be that of the
    # same command called in-process, byte for byte
    import contextlib
    import io
    from cli_helpers import NO_GC_AT_EXIT, run_as_program
    from pyterrier_noise.cli import main
    paths, qrels, _ = _write_runs(tmp_path, seed=15)
    qpath = tmp_path / "qrels"
    qpath.write_text(_qrels_text(qrels))
    args = ["eval", str(qpath), *map(str, paths), "-m", "RBP(p=0.8)", "-m", "AP", "--per-query", "--format", "tsv"]
    buf = io.StringIO()
    with contextlib.redirect_stdout(buf), pytest.warns(CoercionWarning, match="ranks start at 0"):
        assert main(args) == 0
    out = run_as_program(*args)
    assert out.returncode == 0, out.stderr
    assert NO_GC_AT_EXIT in out.stderr
    assert out.stdout == buf.getvalue()
