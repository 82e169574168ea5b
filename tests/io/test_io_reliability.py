"""Readers under odd and hostile input (issues 13 and 14): integer labels, fractional labels as
trec_eval reads them, 0-based rank files, validation that copies cannot skip, clear errors, a
fuzz test of the TREC readers, and qrels from ir_datasets ids / objects / PyTerrier datasets."""
from __future__ import annotations

import gzip
import math
import uuid
import warnings

import numpy as np
import pandas as pd
import pytest

import pyterrier_noise as pn
from pyterrier_noise import InputError, read_qrels, read_run
from pyterrier_noise.io import CoercionWarning
from pyterrier_noise.io import read_trec_qrels, read_trec_run, run_file_columns

QRELS = "1 0 a 2\n1 0 b 0\n1 0 c 1\n2 0 c 1\n2 0 d 0\n"
RUN = "1 Q0 a 1 3.0 s\n1 Q0 b 2 2.0 s\n1 Q0 c 3 1.0 s\n2 Q0 d 1 2.0 s\n2 Q0 c 2 1.0 s\n"


def write(tmp_path, name, data, gz=False):
    p = tmp_path / name
    data = data.encode() if isinstance(data, str) else data
    p.write_bytes(gzip.compress(data) if gz else data)
    return p


def caught_coercions(fn, *args, **kw):
    with warnings.catch_warnings(record=True) as rec:
        warnings.simplefilter("always", CoercionWarning)
        out = fn(*args, **kw)
    return out, [str(w.message) for w in rec if issubclass(w.category, CoercionWarning)]


# -- 1. labels ----------------------------------------------------------------------------------------

def test_whole_labels_are_int64_and_work_in_pt_experiment(tmp_path):
    import pyterrier as pt
    import pytrec_eval
    q = read_qrels(write(tmp_path, "q", QRELS))
    assert q["label"].dtype == np.int64
    run = read_run(write(tmp_path, "r", RUN))
    # pt.Experiment with pytrec_eval's AP: float labels used to end in "Expected relevance to be integer"
    res = pt.Experiment([pt.Transformer.from_df(run)], pd.DataFrame({"qid": ["1", "2"], "query": ["x", "y"]}),
                        q, eval_metrics=[pt.measures.AP, pn.RBPBase(p=0.8)], names=["r"])
    # the reference: pytrec_eval directly on the same judgments
    ev = pytrec_eval.RelevanceEvaluator({"1": {"a": 2, "b": 0, "c": 1}, "2": {"c": 1, "d": 0}}, {"map"})
    per = ev.evaluate({"1": {"a": 3.0, "b": 2.0, "c": 1.0}, "2": {"d": 2.0, "c": 1.0}})
    assert res["AP"].iloc[0] == pytest.approx(np.mean([v["map"] for v in per.values()]), abs=1e-12)
    # RBP by hand: topic 1 relevant at ranks 1 and 3: 0.2 * (1 + 0.8**2); topic 2 at rank 2: 0.2 * 0.8
    assert res["RBPBase(p=0.8)"].iloc[0] == pytest.approx((0.2 * (1 + 0.64) + 0.2 * 0.8) / 2, abs=1e-12)


@pytest.mark.parametrize("form", ["file", "frame", "dict", "ir_measures frame"])
def test_fractional_labels_truncated_as_trec_eval_reads_them(tmp_path, form):
    # trec_eval reads a label with atol() (get_qrels.c): 1.5 -> 1, 2.5 -> 2, 0.9 -> 0, -1.5 -> -1 (then 0)
    labels = {"a": 1.5, "b": 2.5, "c": 0.9, "d": -1.5, "e": 2.0}
    text = "".join(f"1 0 {d} {v}\n" for d, v in labels.items())
    frame = pd.DataFrame({"qid": "1", "docno": list(labels), "label": list(labels.values())})
    source = {"file": write(tmp_path, "q", text), "frame": frame, "dict": {"1": labels},
              "ir_measures frame": frame.rename(columns={"qid": "query_id", "docno": "doc_id", "label": "relevance"})}[form]
    q, msgs = caught_coercions(read_qrels, source)
    assert q["label"].dtype == np.int64
    assert q["label"].tolist() == [1, 2, 0, 0, 2]
    frac = [m for m in msgs if "fractional label" in m]
    assert len(frac) == 1 and "4 fractional label(s) truncated toward zero" in frac[0]
    assert ("first at line 1: 1.5 -> 1" if form == "file" else "first at row 0: 1.5 -> 1") in frac[0]
    assert any("1 negative label(s) clipped to 0" in m for m in msgs)


def test_fractional_labels_kept_as_gains_on_request(tmp_path):
    p = write(tmp_path, "q", "1 0 a 1.5\n1 0 b 2\n")
    q, msgs = caught_coercions(read_qrels, p, fractional="keep")
    assert q["label"].dtype == np.float64 and q["label"].tolist() == [1.5, 2.0] and not msgs
    # keep on whole labels still gives integers
    assert read_qrels(write(tmp_path, "w", "1 0 a 1\n"), fractional="keep")["label"].dtype == np.int64
    with pytest.raises(InputError, match="fractional must be one of 'truncate', 'keep'"):
        read_qrels(p, fractional="round")


def test_truncated_labels_give_pytrec_evals_values(tmp_path):
    import pytrec_eval
    q, _ = caught_coercions(read_qrels, write(tmp_path, "q", "1 0 a 1.5\n1 0 b 0.5\n1 0 c 2.7\n"))
    run = pd.DataFrame({"qid": "1", "docno": ["b", "a", "c"], "score": [3.0, 2.0, 1.0]})
    got = pn.evaluate({"r": run}, q, ["nDCG", "AP"], perquery=True).set_index("measure")["value"]
    ref = pytrec_eval.RelevanceEvaluator({"1": {"a": 1, "b": 0, "c": 2}}, {"ndcg", "map"}).evaluate(
        {"1": {"b": 3.0, "a": 2.0, "c": 1.0}})["1"]   # the labels trec_eval reads: atol(1.5)=1, ...
    assert got["nDCG"] == pytest.approx(ref["ndcg"], abs=1e-12)
    assert got["AP"] == pytest.approx(ref["map"], abs=1e-12)


# -- 2. 0-based ranks ---------------------------------------------------------------------------------

def test_pt_io_write_results_round_trip(tmp_path):
    import pyterrier as pt
    run = pd.DataFrame({"qid": ["1", "1", "1", "2", "2"], "docno": ["a", "b", "c", "d", "c"],
                        "score": [3.0, 2.0, 1.0, 2.0, 1.0], "rank": [0, 1, 2, 0, 1]})
    path = tmp_path / "pt.res"
    pt.io.write_results(run, str(path), format="trec")
    assert path.read_text().splitlines()[0].split()[3] == "0"   # PyTerrier writes its 0-based ranks
    back, msgs = caught_coercions(read_run, path)
    assert back["rank"].tolist() == [0, 1, 2, 0, 1]            # never -1
    assert msgs == [f"{path}: ranks start at 0 in 2 ranking(s) (e.g. qid '1'): read as 0-based ranks, "
                    f"as pt.io.write_results writes them (TREC files are 1-based)"]
    # the engine's fast reader agrees
    cols, msgs2 = caught_coercions(run_file_columns, [path])
    assert cols[-1].tolist() == [0, 1, 2, 0, 1] and len(msgs2) == 1
    # a 1-based file is shifted without a word
    one, msgs3 = caught_coercions(read_run, write(tmp_path, "one", RUN))
    assert one["rank"].tolist() == [0, 1, 2, 0, 1] and not msgs3


# -- 3. validation that a copy cannot skip --------------------------------------------------------------

@pytest.mark.parametrize("how", ["log", "inf"])
def test_a_modified_copy_of_read_run_is_validated_again(tmp_path, how):
    q = read_qrels(write(tmp_path, "q", QRELS))
    R = read_run(write(tmp_path, "r", RUN))
    with np.errstate(divide="ignore", invalid="ignore"):
        R["score"] = np.log(R["score"] - 2.0) if how == "log" else R["score"] / (R["score"] - 2.0)
    # log: rows 1 (log 0 = -inf), 2 and 4 (log < 0 = NaN); inf: row 1 (2 / 0)
    row = 1
    with pytest.raises(InputError, match=rf"column 'score', row {row} \(qid='1', docno='b'\): expected a finite number"):
        pn.evaluate({"r": R}, q, ["AP"])
    with pytest.raises(InputError, match=r"column 'score', row 1"):
        pn.AlignedRuns.build({"r": R}, q)
    R2 = read_run(write(tmp_path, "r2", RUN)).copy()
    R2.loc[3, "docno"] = None
    with pytest.raises(InputError, match=r"column 'docno', row 3: expected a docno, got (None|nan)"):
        pn.evaluate({"r": R2}, q, ["AP"])


def test_missing_qid_or_docno_in_frames_names_column_and_row():
    with pytest.raises(InputError, match=r"run frame: column 'qid', row 1: expected a qid, got (None|nan)"):
        read_run(pd.DataFrame({"qid": ["1", None], "docno": ["a", "b"], "score": [1.0, 2.0]}))
    with pytest.raises(InputError, match=r"column 'docno', row 0: expected a docno, got nan"):
        read_run(pd.DataFrame({"qid": ["1"], "docno": [np.nan], "score": [1.0]}))
    with pytest.raises(InputError, match=r"qrels frame: column 'qid', row 1: expected a qid, got nan"):
        read_qrels(pd.DataFrame({"qid": [1.0, np.nan], "docno": ["a", "b"], "label": [1, 0]}))


# -- 4. clear errors -----------------------------------------------------------------------------------

@pytest.mark.parametrize("gz", [False, True])
@pytest.mark.parametrize("line, reason", [
    (b"2 Q0 d 1 1_000 s", r"line 6: score '1_000' is not a number \(digit separators"),
    (b"2 Q0 d\xe9 1 1.0 s", r"line 6: byte 0xe9 at character 7 is not UTF-8 text"),
    (b"2 Q0 d\x00x 1 1.0 s", r"line 6: a NUL byte at character 7"),
    (b"2 Q0 d 99999999999999999999 1.0 s", r"line 6: rank '99999999999999999999' is not a whole number"),
    (b"2 Q0 d 1.5 1.0 s", r"line 6: rank '1.5' is not a whole number"),
    (b"2 Q0 d -1 1.0 s", r"line 6: rank '-1' is not a whole number"),
    (b"2 Q0 d 1 1e999 s", r"line 6: score '1e999' is out of range"),
    (b"2 Q0 d 1 infinity s", r"line 6: score 'infinity' is not a finite number"),
])
def test_odd_run_lines_refused_with_file_line_and_reason(tmp_path, line, reason, gz):
    p = write(tmp_path, "bad.gz" if gz else "bad", RUN.encode() + line + b"\n", gz)
    with pytest.raises(InputError, match=rf"{p.name} {reason}"):
        read_run(p)
    assert run_file_columns([p]) is None   # the fast reader leaves it to the validating one


@pytest.mark.parametrize("docno", ['"d', 'd"', '"d"', "d'x"])
def test_quotes_are_part_of_a_docno_as_in_trec_eval(tmp_path, docno):
    # trec_eval splits lines on whitespace only: a quote is an ordinary character of the docno
    p = write(tmp_path, "r", f'1 Q0 {docno} 1 2.0 s\n1 Q0 a 2 1.0 s\n')
    assert read_run(p)["docno"].tolist() == [docno, "a"]
    cols = run_file_columns([p])
    assert cols[4][cols[3]].tolist() == [docno, "a"]
    q = read_qrels(write(tmp_path, "q", f"1 0 {docno} 1\n"))
    assert q["docno"].tolist() == [docno]


def test_odd_qrels_lines_refused_with_file_line_and_reason(tmp_path):
    for line, reason in [("1 0 x 1_0", r"line 6: label '1_0' is not a number"),
                         ("1 0 x nan", r"line 6: label 'nan' is not a finite number"),
                         ("1 0 x", r"line 6: expected 4 whitespace-separated fields")]:
        with pytest.raises(InputError, match=reason):
            read_qrels(write(tmp_path, "q", QRELS + line + "\n"))


# -- fuzz: any bytes give a frame or an InputError ------------------------------------------------------

def _fuzz_inputs():
    from hypothesis import strategies as st
    token = st.one_of(st.sampled_from(["1", "2", "Q0", "0", "-1", "1.5", "1e3", "nan", "inf", "1_0", '"a', "d1",
                                       "99999999999999999999", "0.5", "x\x00", "é", "\r"]),
                      st.text(max_size=4))
    line = st.lists(token, min_size=0, max_size=7).map(" ".join)
    text = st.lists(line, max_size=6).map("\n".join).map(lambda s: s.encode("utf-8", "surrogatepass"))
    return st.one_of(text, st.binary(max_size=60), text.map(lambda b: b.replace(b" ", b"\t")))


@pytest.mark.slow
def test_fuzz_trec_readers_never_crash(tmp_path):
    from hypothesis import HealthCheck, given, settings

    @settings(max_examples=300, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
    @given(data=_fuzz_inputs(), gz=__import__("hypothesis").strategies.booleans())
    def check(data, gz):
        p = tmp_path / f"f{uuid.uuid4().hex}{'.gz' if gz else ''}"
        p.write_bytes(gzip.compress(data) if gz else data)
        for reader in (read_trec_run, read_trec_qrels):
            try:
                with warnings.catch_warnings():
                    warnings.simplefilter("ignore", CoercionWarning)
                    out = reader(p)
            except InputError as err:
                assert str(p) in str(err)
                continue
            assert len(out) > 0
            assert not out["qid"].isna().any() and not out["docno"].isna().any()
            num = out["score"] if "score" in out else out["label"]
            assert np.isfinite(num.to_numpy(dtype=float)).all()
        try:
            with warnings.catch_warnings():
                warnings.simplefilter("ignore", CoercionWarning)
                run_file_columns([p])
        except InputError:
            pass
    check()


# -- 5. datasets ------------------------------------------------------------------------------------------

def _register(tmp_path, text=QRELS):
    import ir_datasets
    from ir_datasets.formats import TrecQrels
    from ir_datasets.util import LocalDownload
    p = write(tmp_path, "qrels.txt", text)
    name = f"pyterrier-noise-test/{uuid.uuid4().hex[:8]}"
    ir_datasets.registry.register(name, ir_datasets.Dataset(TrecQrels(LocalDownload(p), {0: "no", 1: "yes", 2: "very"})))
    return name


def test_qrels_from_ir_datasets_ids_objects_and_pyterrier_datasets(tmp_path):
    import ir_datasets
    import pyterrier as pt
    name = _register(tmp_path)
    expected = read_qrels(tmp_path / "qrels.txt")
    for source in (f"irds:{name}", name, ir_datasets.load(name), pt.get_dataset(f"irds:{name}")):
        got = read_qrels(source)
        assert got.to_dict("list") == expected.to_dict("list")
        assert got["label"].dtype == np.int64
    with pytest.raises(InputError, match=r"irds:no-such/dataset: not a registered ir_datasets id"):
        read_qrels("irds:no-such/dataset")
    with pytest.raises(InputError, match=r"no-such-file.txt: no such file"):
        read_qrels(tmp_path / "no-such-file.txt")


def test_dataset_not_available_offline_names_the_file_and_where_to_put_it(tmp_path):
    import ir_datasets
    from ir_datasets.formats import TrecQrels
    from ir_datasets.util import Cache, RequestsDownload
    target = tmp_path / "home" / "x" / "qrels.txt"
    name = f"pyterrier-noise-test/{uuid.uuid4().hex[:8]}"
    # a download from a port nothing listens on fails at once, as an offline machine would
    dlc = Cache(RequestsDownload("http://127.0.0.1:9/qrels.txt", tries=1), target)
    ir_datasets.registry.register(name, ir_datasets.Dataset(TrecQrels(dlc, {})))
    with pytest.raises(InputError) as err:
        read_qrels(f"irds:{name}")
    msg = str(err.value)
    assert f"ir_datasets {name}: the qrels are not available offline" in msg
    assert f"it needs {target} (downloaded from http://127.0.0.1:9/qrels.txt)" in msg
    assert "IR_DATASETS_HOME" in msg and str(ir_datasets.util.home_path()) in msg
    assert not target.exists()


def test_cli_eval_reads_an_ir_datasets_id(tmp_path, capsys):
    from pyterrier_noise.cli import main
    name = _register(tmp_path)
    run = write(tmp_path, "run1", RUN)
    assert main(["eval", f"irds:{name}", str(run), "-m", "AP", "--format", "tsv"]) == 0
    out = capsys.readouterr().out.splitlines()
    assert out[0] == "run\tqid\tmeasure\tvalue\tresidual"
    ap = float(out[1].split("\t")[3])
    # AP by hand: topic 1 relevant a (rank 1), c (rank 3): (1 + 2/3) / 2; topic 2 relevant c at rank 2: 1/2
    assert math.isclose(ap, ((1 + 2 / 3) / 2 + 0.5) / 2, abs_tol=1e-4)
    assert main(["eval", "irds:no-such/dataset", str(run), "-m", "AP"]) == 2
    assert "not a registered ir_datasets id" in capsys.readouterr().err


def test_kept_fractional_labels_stay_graded_downstream():
    """A frame read with fractional="keep" carries that choice (attrs["fractional"]), so evaluate keeps
    the gains: RBP(p=0.5,max_rel=2) of one run with labels 1.5 and 0.5 at ranks 1 and 2 is, by hand,
    0.5 * (1.5/2) + 0.25 * (0.5/2) = 0.4375; truncated (1 and 0) it would be 0.25."""
    q = pd.DataFrame({"qid": ["1", "1"], "docno": ["a", "b"], "label": [1.5, 0.5]})
    run = pd.DataFrame({"qid": ["1", "1"], "docno": ["a", "b"], "score": [2.0, 1.0]})
    kept = pn.read_qrels(q, fractional="keep")
    with pytest.warns(pn.NoiseWarning, match="every one of the 2 judged labels is relevant"):   # 1.5 and 0.5
        res = pn.evaluate({"r": run}, kept, ["RBP(p=0.5,max_rel=2)"])
    assert res["value"].iloc[0] == pytest.approx(0.4375, abs=1e-15)
    with pytest.warns(pn.io.CoercionWarning, match="2 fractional label"):
        trunc = pn.evaluate({"r": run}, q, ["RBP(p=0.5,max_rel=2)"])
    assert trunc["value"].iloc[0] == pytest.approx(0.25, abs=1e-15)


@pytest.mark.parametrize("damage", ["truncated", "crc", "trailing"])
def test_damaged_gzip_is_named_by_both_readers(tmp_path, damage):
    """One byte reader for both readers: a gzip file that cannot be inflated is an error naming the
    file in the validating reader, and left to it (None) by the fast one; zero padding after the
    last member is skipped, as gzip skips it."""
    from pyterrier_noise.io import read_arrow_run
    data = gzip.compress(RUN.encode())
    data = {"truncated": data[:-12], "crc": data[:-8] + bytes([data[-8] ^ 1]) + data[-7:],
            "trailing": data + b"garbage"}[damage]
    p = write(tmp_path, "r.gz", data)
    with pytest.raises(InputError, match=r"r\.gz: looks like gzip but cannot be decompressed"):
        read_trec_run(p)
    assert read_arrow_run(p) is None
    padded = write(tmp_path, "padded.gz", gzip.compress(RUN.encode()) + b"\0" * 16)
    assert read_trec_run(padded).equals(read_trec_run(write(tmp_path, "plain", RUN)))
    assert read_arrow_run(padded) is not None
