"""Readers: every input form of the ecosystem, and one test per bad-input case of DESIGN.md."""
from __future__ import annotations

import gzip
from collections import namedtuple

import numpy as np
import pandas as pd
import pytest

import pyterrier_noise as pn
from pyterrier_noise import InputError, MeasureSpec, read_qrels, read_run, read_runs
from pyterrier_noise.io import CoercionWarning

RUN_TEXT = "1 Q0 a 1 3.5 sys\n1 Q0 b 2 2.0 sys\n2 Q0 c 1 -1.25 sys\n"
QRELS_TEXT = "1 0.5  a 2\n1 1 b 0\n2 0 c 1\n"


def write(tmp_path, name, text, gz=False):
    p = tmp_path / name
    data = text.encode()
    p.write_bytes(gzip.compress(data) if gz else data)
    return p


# -- good inputs ------------------------------------------------------------------------------------

@pytest.mark.parametrize("gz", [False, True])
@pytest.mark.parametrize("sep", [" ", "\t", "  "])
def test_trec_run_plain_gzip_spaces_tabs(tmp_path, gz, sep):
    p = write(tmp_path, "r.gz" if gz else "r", RUN_TEXT.replace(" ", sep), gz)
    run = read_run(p)
    assert list(run.columns) == ["qid", "docno", "score", "rank"]
    assert run["docno"].tolist() == ["a", "b", "c"]
    assert run["score"].tolist() == [3.5, 2.0, -1.25]
    assert run["rank"].tolist() == [0, 1, 0]  # 1-based in the file, 0-based in PyTerrier


def test_qrels_iteration_column_may_hold_fractions(tmp_path):
    q = read_qrels(write(tmp_path, "q", QRELS_TEXT))
    assert q.to_dict("list") == {"qid": ["1", "1", "2"], "docno": ["a", "b", "c"], "label": [2.0, 0.0, 1.0]}


def test_real_trec_covid_qrels(covid):
    q = read_qrels(covid / "qrels-rnd1.txt")
    assert len(q) == 8691 and q["qid"].nunique() == 30
    assert q["label"].value_counts().to_dict() == {0.0: 6339, 2.0: 1237, 1.0: 1115}


def test_directory_of_runs_names_are_file_names(tmp_path):
    d = tmp_path / "runs"
    d.mkdir()
    write(d, "alpha.gz", RUN_TEXT, gz=True)
    write(d, "beta", RUN_TEXT)
    runs = read_runs(d)
    assert sorted(runs) == ["alpha", "beta"]
    assert runs["alpha"].equals(runs["beta"])


def test_pyterrier_and_ir_measures_frames_and_namedtuples():
    pt_frame = pd.DataFrame({"qid": ["1"], "docno": ["a"], "score": [1.0], "rank": [0]})
    irm_frame = pd.DataFrame({"query_id": ["1"], "doc_id": ["a"], "score": [1.0]})
    ScoredDoc = namedtuple("ScoredDoc", "query_id doc_id score")
    Qrel = namedtuple("Qrel", "query_id doc_id relevance iteration")
    for src in (pt_frame, irm_frame, [ScoredDoc("1", "a", 1.0)], {"1": {"a": 1.0}}):
        r = read_run(src)
        assert r[["qid", "docno", "score"]].to_dict("list") == {"qid": ["1"], "docno": ["a"], "score": [1.0]}
    q_irm = pd.DataFrame({"query_id": ["1"], "doc_id": ["a"], "relevance": [1]})
    for src in (q_irm, [Qrel("1", "a", 1, "0")], {"1": {"a": 1}}):
        assert read_qrels(src).to_dict("list") == {"qid": ["1"], "docno": ["a"], "label": [1.0]}


@pytest.mark.filterwarnings("ignore:The inplace keyword in DataFrame.rename:DeprecationWarning")   # pyterrier's irds code
def test_ir_datasets_local_qrels_and_pyterrier_dataset(tmp_path):
    import ir_datasets
    import pyterrier as pt
    from ir_datasets.formats import TrecQrels
    from ir_datasets.util import LocalDownload
    p = write(tmp_path, "q", QRELS_TEXT.replace("0.5", "0"))
    ds = ir_datasets.create_dataset(qrels_trec=str(p))
    expected = {"qid": ["1", "1", "2"], "docno": ["a", "b", "c"], "label": [2.0, 0.0, 1.0]}
    assert read_qrels(ds).to_dict("list") == expected
    # the same file registered as an ir_datasets id and read back through pt.get_dataset(...).get_qrels()
    name = f"pyterrier-noise-test/{tmp_path.name}"
    ir_datasets.registry.register(name, ir_datasets.datasets.base.Dataset(
        TrecQrels(LocalDownload(p), {0: "non-relevant", 1: "relevant", 2: "highly"})))
    assert read_qrels(pt.get_dataset(f"irds:{name}").get_qrels()).to_dict("list") == expected


# -- bad inputs: one test per DESIGN.md case ---------------------------------------------------------

def test_missing_columns_named():
    with pytest.raises(InputError, match=r"missing column\(s\) \['score'\]"):
        read_run(pd.DataFrame({"qid": ["1"], "docno": ["a"]}))
    with pytest.raises(InputError, match=r"missing column\(s\) \['label'\]"):
        read_qrels(pd.DataFrame({"qid": ["1"], "docno": ["a"]}))


def test_non_numeric_score_names_file_and_line(tmp_path):
    p = write(tmp_path, "bad", RUN_TEXT + "2 Q0 d 2 high sys\n")
    with pytest.raises(InputError, match=r"bad line 4: score 'high' is not a number"):
        read_run(p)


def test_non_numeric_label_names_file_and_line(tmp_path):
    p = write(tmp_path, "q", QRELS_TEXT + "2 0 d yes\n")
    with pytest.raises(InputError, match=r"q line 4: label 'yes' is not a number"):
        read_qrels(p)


def test_non_numeric_score_in_frame_names_column_and_row():
    frame = pd.DataFrame({"qid": ["1", "1"], "docno": ["a", "b"], "score": [1.0, "x"]})
    with pytest.raises(InputError, match=r"column 'score', row 1 .*docno='b'.*expected a finite number"):
        read_run(frame)


@pytest.mark.parametrize("bad", ["nan", "inf", "-inf"])
def test_nan_or_infinite_scores(tmp_path, bad):
    p = write(tmp_path, "r", RUN_TEXT + f"2 Q0 d 2 {bad} sys\n")
    with pytest.raises(InputError, match=r"line 4: score .* is not a finite number"):
        read_run(p)
    with pytest.raises(InputError, match="finite number"):
        read_run(pd.DataFrame({"qid": ["1"], "docno": ["a"], "score": [float(bad)]}))


def test_wrong_number_of_fields_names_line(tmp_path):
    p = write(tmp_path, "r", RUN_TEXT + "2 Q0 d 2 1.0\n")
    with pytest.raises(InputError, match=r"line 4: expected 6 whitespace-separated fields .* found 5"):
        read_run(p)


def test_duplicate_documents_within_one_ranking():
    run = pd.DataFrame({"qid": ["1", "1", "1"], "docno": ["a", "b", "a"], "score": [3.0, 2.0, 1.0]})
    qrels = pd.DataFrame({"qid": ["1"], "docno": ["a"], "label": [1.0]})
    with pytest.raises(InputError, match=r"run 'r', qid '1': document 'a' appears more than once"):
        pn.AlignedRuns.build({"r": run}, qrels)


def test_empty_run(tmp_path):
    with pytest.raises(InputError, match="the run is empty"):
        read_run(write(tmp_path, "empty", "\n"))
    with pytest.raises(InputError, match="the run is empty"):
        read_run(pd.DataFrame({"qid": [], "docno": [], "score": []}))


def test_empty_qrels(tmp_path):
    with pytest.raises(InputError, match="qrels file is empty"):
        read_qrels(write(tmp_path, "q", ""))


def test_topics_in_runs_but_not_in_qrels_and_the_reverse():
    run = pd.DataFrame({"qid": ["1", "9"], "docno": ["a", "b"], "score": [1.0, 1.0]})
    qrels = pd.DataFrame({"qid": ["1", "2"], "docno": ["a", "c"], "label": [1.0, 1.0]})
    with pytest.warns(CoercionWarning, match=r"1 topic\(s\) in the runs are not in the qrels.*qid '9'") as rec:
        pn.AlignedRuns.build({"r": run}, qrels)
    assert any("does not answer qid '2'" in str(w.message) for w in rec)
    with pytest.raises(InputError, match="not in the qrels"):
        pn.AlignedRuns.build({"r": run}, qrels, on_topic_mismatch="error")


@pytest.mark.parametrize("p", [0, 1, 1.5, -0.2])
def test_p_outside_open_unit_interval(p):
    with pytest.raises(InputError, match="strictly between 0 and 1"):
        MeasureSpec("RBP", p=p).validate()
    with pytest.raises(InputError, match="strictly between 0 and 1"):
        pn.measures.to_spec(pn.RBPBase(p=p))
    if p >= 0:  # ir_measures' parser has no negative numbers
        with pytest.raises(InputError, match="strictly between 0 and 1"):
            pn.measures.to_spec(f"RBP(p={p})")


@pytest.mark.parametrize("T", [0, -1])
def test_T_not_positive(T):
    with pytest.raises(InputError, match="T > 0"):
        MeasureSpec("INST", T=T).validate()
    with pytest.raises(InputError, match="T > 0"):
        pn.measures.to_spec(pn.INSQBase(T=T))


def test_unknown_measure_name():
    with pytest.raises(InputError, match="unknown measure 'NotAMeasure@10'"):
        pn.measures.to_spec("NotAMeasure@10")


def test_duplicate_judgments_are_announced_with_counts():
    q = pd.DataFrame({"qid": ["1", "1", "1"], "docno": ["a", "a", "b"], "label": [0.0, 2.0, 1.0]})
    with pytest.warns(CoercionWarning, match=r"1 duplicate judgment\(s\).*kept the last"):
        out = read_qrels(q)
    assert out.to_dict("list") == {"qid": ["1", "1"], "docno": ["a", "b"], "label": [2.0, 1.0]}


def test_negative_labels_clipped_and_announced():
    q = pd.DataFrame({"qid": ["1", "1"], "docno": ["a", "b"], "label": [-1.0, 1.0]})
    with pytest.warns(CoercionWarning, match=r"1 negative label\(s\) clipped to 0"):
        out = read_qrels(q)
    assert out["label"].tolist() == [0.0, 1.0]


def test_write_and_read_back_round_trip(tmp_path):
    run = pd.DataFrame({"qid": ["2", "1"], "docno": ["x", "y"], "score": [0.1 + 0.2, 1 / 3], "rank": [0, 0]})
    pn.write_trec_run(run, tmp_path / "r.gz")
    back = read_run(tmp_path / "r.gz")
    assert back.sort_values("qid")["score"].tolist() == [1 / 3, 0.1 + 0.2]  # full precision
    qrels = pd.DataFrame({"qid": ["1"], "docno": ["y"], "label": [2.0]})
    pn.write_trec_qrels(qrels, tmp_path / "q")
    assert (tmp_path / "q").read_text() == "1 0 y 2\n"
    assert np.array_equal(read_qrels(tmp_path / "q")["label"], [2.0])


# --- bounded inputs (issue 30): a device, a FIFO, a binary file or one without lines is refused
# before it is read whole, by the validating readers and by `eval` ----------------------------

RUN_LINES = "".join(f"1 Q0 d{d} {d} {10 - d} r\n" for d in range(1, 6))


def _bad_inputs(tmp_path):
    import os
    nul = tmp_path / "nul.run"
    nul.write_bytes(RUN_LINES.encode() + b"1 Q0 d\0x 6 1 r\n")
    nul_gz = tmp_path / "nul.run.gz"
    nul_gz.write_bytes(gzip.compress(nul.read_bytes()))
    oneline = tmp_path / "oneline"
    oneline.write_bytes(b"x" * (1 << 20) + b" more\n")   # its first line break is after the first MiB
    fifo = tmp_path / "fifo"
    os.mkfifo(fifo)
    return {"/dev/zero": ("/dev/zero", "is a device"), "fifo": (fifo, "is a FIFO"),
            "nul": (nul, "line 6: a NUL byte at character 7: a binary file"),
            "nul.gz": (nul_gz, "line 6: a NUL byte at character 7: a binary file"),
            "oneline": (oneline, "no line break in its first 1 MiB")}


@pytest.mark.parametrize("case", ["/dev/zero", "fifo", "nul", "nul.gz", "oneline"])
def test_unbounded_or_binary_input_is_refused(tmp_path, case):
    from cli_helpers import run_cli
    path, words = _bad_inputs(tmp_path)[case]
    (tmp_path / "q").write_text("1 0 d1 1\n1 0 d2 0\n")
    (tmp_path / "r").write_text(RUN_LINES)
    for reader in (read_run, read_qrels):
        with pytest.raises(InputError, match=words) as err:
            reader(path)
        assert str(path) in str(err.value)
    for argv in ([tmp_path / "q", path], [path, tmp_path / "r"]):   # as a run, as qrels
        status, _, err = run_cli("eval", "-m", "AP", *argv)
        assert status == 2 and words in err and "Traceback" not in err, err


def test_a_long_first_line_within_the_first_mib_is_read(tmp_path):
    # the bound is on the first line break, not on the file: a 2 MiB run of short lines is read
    path = tmp_path / "big.run"
    lines = "".join(f"1 Q0 d{d} {d} {1e6 - d} r\n" for d in range(1, 100_001))
    assert len(lines) > 2 << 20
    path.write_text(lines)
    run = read_run(path)
    assert len(run) == 100_000 and run["docno"].iloc[-1] == "d100000"


@pytest.mark.parametrize("link", ["dangling", "loop"])
def test_a_run_directory_entry_leading_nowhere_is_named(tmp_path, link):
    # issue 30: the entry was skipped, so that run was missing from the results without a word
    from cli_helpers import run_cli
    d = tmp_path / "runs"
    d.mkdir()
    (d / "a").write_text(RUN_LINES)
    (d / "b").symlink_to(d / "b" if link == "loop" else tmp_path / "gone")
    (tmp_path / "q").write_text("1 0 d1 1\n")
    with pytest.raises(InputError, match=r"1 entry is a symlink that leads nowhere \(a missing target or a loop\): b"):
        read_runs(d)
    status, _, err = run_cli("eval", "-m", "AP", tmp_path / "q", d)
    assert status == 2 and f"{d}: 1 entry is a symlink" in err, err
    (d / "b").unlink()
    (d / "b").symlink_to(d / "a")       # a link to a run is read as a run
    assert sorted(read_runs(d)) == ["a", "b"]


def test_run_directory_entries_not_read_as_runs_are_named(tmp_path):
    """A subdirectory is skipped with a warning naming it; a README is read as a run, and the errors
    say so: the parse error names the file and line, the count of systems names the file."""
    from cli_helpers import run_cli
    d = tmp_path / "runs"
    d.mkdir()
    (d / "README.md").write_text("# My runs\n")
    (d / "plots").mkdir()
    (tmp_path / "q").write_text("1 0 d1 1\n2 0 d1 0\n")
    with pytest.warns(CoercionWarning, match=r"1 entry is not a file and is not read as a run: plots/"):
        with pytest.raises(InputError, match=r"README.md line 1: expected 6 whitespace-separated fields"):
            read_runs(d)
    with pytest.warns(CoercionWarning, match=r"not read as a run: plots/"):
        status, _, err = run_cli("robustness", tmp_path / "q", d, "-m", "P@1", "--out", tmp_path / "out")
    assert status == 2 and "needs at least 2 systems, got 1 (read as a run: " in err and "README.md)" in err, err
    (d / "a").write_text(RUN_LINES)
    with pytest.warns(CoercionWarning, match=r"not read as a run: plots/"):
        status, _, err = run_cli("eval", "-m", "P@1", tmp_path / "q", d)
    assert status == 2 and "README.md line 1: expected 6 whitespace-separated fields" in err, err


def test_identifiers_with_spaces_between_tabs_are_split_as_trec_eval_and_counted(tmp_path):
    # issue 30: a qrels docno with a trailing space gave AP 0.0 without a word; trec_eval splits a line
    # at any run of whitespace, so 'd2 ' is 'd2': read so, with one warning counting the lines
    from pyterrier_noise import evaluate
    q = tmp_path / "q"
    q.write_text("1\t0\td1\t1\n1\t0\td2 \t0\n1\t0\t d3\t1\n")
    r = tmp_path / "r"
    r.write_text("1 Q0 d1 1 3 r\n1 Q0 d2 2 2 r\n1 Q0 d3 3 1 r\n")
    with pytest.warns(CoercionWarning, match=r"2 line\(s\) mix tabs and spaces \(e\.g\. line 2\)") as record:
        qrels = read_qrels(q)
    assert len(record) == 1 and qrels["docno"].tolist() == ["d1", "d2", "d3"]
    ap = evaluate([r], qrels, ["AP"])["value"].iloc[0]
    assert ap == pytest.approx((1 / 1 + 2 / 3) / 2)        # d1 and d3 relevant, at ranks 1 and 3
    r.write_text("1\tQ0\td1\t1\t3\tr\n1\tQ0\td3 \t2\t2\tr\n")   # the same in a run, through the fast reader
    with pytest.warns(CoercionWarning, match=r"1 line\(s\) mix tabs and spaces \(e\.g\. line 2\)"):
        assert read_run(r)["docno"].tolist() == ["d1", "d3"]
    with pytest.warns(CoercionWarning, match="mix tabs and spaces"):
        assert evaluate([r], qrels, ["AP"])["value"].iloc[0] == pytest.approx(1.0)


def test_plain_tab_or_space_files_are_not_warned_about(tmp_path, recwarn):
    (tmp_path / "q").write_text("1\t0\td1\t1\n1\t0\td2\t0\n")
    (tmp_path / "q2").write_text("1 0  d1 1\n1 0  d2 0\n")    # runs of spaces, as TREC-COVID's qrels
    assert len(read_qrels(tmp_path / "q")) == len(read_qrels(tmp_path / "q2")) == 2
    assert not [w for w in recwarn if issubclass(w.category, CoercionWarning)]


@pytest.mark.parametrize("grouped", [True, False])
def test_qid_codes_of_grouped_and_interleaved_files_are_those_of_hashing_every_line(tmp_path, grouped):
    # qids in runs of equal lines (each ranking together: only a run's first qid is hashed) or
    # interleaved (every line hashed): the codes and the distinct qids in order of first appearance
    # are pandas' factorize of the qid column, line by line
    rng = np.random.default_rng(3)
    paths, want = [], []
    for f in range(3):
        qids = [f"q{t}" for t in rng.permutation(40)[:30] for _ in range(5)]
        if not grouped:
            qids = list(rng.permutation(qids))
        lines = [f"{q} Q0 d{k} {k % 5 + 1} {10 - k % 5} r{f}\n" for k, q in enumerate(qids)]
        if f == 1:
            lines = lines[:1]   # a file of one line: a run of its own
        (tmp_path / f"r{f}").write_text("".join(lines))
        paths.append(tmp_path / f"r{f}")
        want += [ln.split()[0] for ln in lines]
    codes, uniq = pd.factorize(np.asarray(want, dtype=object))
    for arrow_docnos in (False, True):
        _, qc, qu, _, _, _, _ = pn.io.run_file_columns(paths, arrow_docnos=arrow_docnos)
        assert list(qu) == list(uniq)
        assert np.array_equal(qc, codes)
