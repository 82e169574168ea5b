"""The LLM judge (pyterrier_noise.judges.llm, ``pyterrier-noise llm-judge``) against a local chat-completions
server process on 127.0.0.1 (tests/llm_server.py): a seeded judge over qrels, injected 500s, 429s, timeouts,
garbage and slow answers, and a kill mid-run.  No network, no model."""
from __future__ import annotations

import importlib.util
import json
import os
import signal
import socket
import sqlite3
import subprocess
import sys
import time
import urllib.request
from pathlib import Path

import numpy as np
import pandas as pd
import pytest

from pyterrier_noise import InputError
from pyterrier_noise.io import read_cheap_qrels
from pyterrier_noise.judges.llm import LabelCache, LLMJudge, PromptTemplate, label_distribution, parse_label

# looked up, not imported: the openai client is imported by the tests that talk to the server (on one
# worker), not by the collection of every worker
pytestmark = pytest.mark.skipif(any(importlib.util.find_spec(m) is None for m in ("openai", "uvicorn")),
                                reason="the 'llm' extra (openai) or uvicorn is not installed")

HERE = Path(__file__).resolve().parents[1]   # tests/: llm_server.py
sys.path.insert(0, str(HERE))
import llm_server  # noqa: E402

ROOT = HERE.parent


def _collection(tmp: Path, n_topics: int = 3, n_docs: int = 20, seed: int = 1):
    rng = np.random.default_rng(seed)
    rows, docs = [], []
    for t in range(n_topics):
        for d in range(n_docs):
            rows.append((f"q{t}", f"d{t}-{d}", int(rng.choice(4, p=[0.5, 0.2, 0.2, 0.1]))))
            docs.append(f"d{t}-{d}\tDOC=d{t}-{d} on subject {t} with words {rng.integers(1000)}")
    qrels = tmp / "qrels.txt"
    qrels.write_text("".join(f"{q} 0 {d} {r}\n" for q, d, r in rows))
    (tmp / "docs.tsv").write_text("\n".join(docs) + "\n")
    (tmp / "topics.tsv").write_text("".join(f"q{t}\tTOPIC=q{t} about subject {t}\n" for t in range(n_topics)))
    return qrels, pd.DataFrame(rows, columns=["qid", "docno", "label"])


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


class Server:
    def __init__(self, qrels: Path, env: dict | None = None, **opts: float) -> None:
        self.port = _free_port()
        cmd = [sys.executable, str(HERE / "llm_server.py"), "--port", str(self.port), "--qrels", str(qrels)]
        for k, v in opts.items():
            cmd += [f"--{k.replace('_', '-')}", str(v)]
        self.proc = subprocess.Popen(cmd, env={**os.environ, **(env or {})}, stdout=subprocess.DEVNULL,
                                     stderr=subprocess.PIPE)
        self.url = f"http://127.0.0.1:{self.port}/v1"
        for _ in range(200):
            try:
                urllib.request.urlopen(f"http://127.0.0.1:{self.port}/health", timeout=1).read()
                return
            except OSError:
                if self.proc.poll() is not None:
                    raise RuntimeError(self.proc.stderr.read().decode())
                time.sleep(0.05)
        raise RuntimeError("the test server did not start")

    def stats(self) -> dict:
        return json.loads(urllib.request.urlopen(f"http://127.0.0.1:{self.port}/stats", timeout=5).read())

    def stop(self) -> None:
        self.proc.kill()        # no graceful shutdown: it would wait for the answers still hanging (--hang)
        self.proc.wait(10)
        self.proc.stderr.close()


@pytest.fixture
def served(tmp_path):
    servers: list[Server] = []

    def start(qrels: Path, **opts):
        s = Server(qrels, **opts)
        servers.append(s)
        return s

    yield start
    for s in servers:
        s.stop()


def _judge(tmp: Path, server: Server, **kw) -> LLMJudge:
    return LLMJudge("seeded", tmp / "cache.sqlite", base_url=server.url, api_key="x", backoff=0.01, **kw)


def _texts(tmp: Path):
    from pyterrier_noise.web.docs import open_collection
    col = open_collection(tmp / "docs.tsv", tmp / "topics.tsv")
    return col.topics, col.document


def _expected(truth: pd.DataFrame, seed: int = 0):
    got = [llm_server.judge(q, d, r, seed) for q, d, r in zip(truth["qid"], truth["docno"], truth["label"])]
    return np.array([g[0] for g in got]), np.array([g[1] for g in got])


# -- the answers' reading ---------------------------------------------------------------------------

def test_parse_label_is_strict():
    assert parse_label("##final score: 2") == (2, 15)
    assert parse_label("M: 2, T: 1\n##final score: 3") == (3, 26)
    assert parse_label("##Final Score: **1**")[0] == 1
    for bad in ("", None, "score: 2", "##final score: 4", "##final score: 2.5", "##final score: 23",
                "##final score: 1\n##final score: 2", "maybe a 2 or a 3"):
        assert parse_label(bad) == (None, None), bad


def test_label_distribution_reads_the_label_token():
    lp = np.log([0.1, 0.2, 0.6, 0.1])
    toks = [("##", 0.0, []), ("final score:", 0.0, []),
            (" 2", lp[2], [(" 0", lp[0]), (" 1", lp[1]), (" 2", lp[2]), ("3", lp[3]), (" x", -0.1)])]
    p = label_distribution(toks, parse_label("##final score: 2")[1])
    np.testing.assert_allclose(p, [0.1, 0.2, 0.6, 0.1], atol=1e-12)
    # a missing alternative gets no mass; the label sharing a token with other characters gives none
    p = label_distribution([("##final score:", 0.0, []), (" 2", lp[2], [(" 2", lp[2]), (" 1", lp[1])])], 15)
    np.testing.assert_allclose(p, [0, 0.25, 0.75, 0], atol=1e-12)
    assert label_distribution([("##final score: 2", 0.0, [])], 15) is None
    assert label_distribution(None, 15) is None


def test_template_errors_name_the_problem(tmp_path):
    with pytest.raises(InputError, match=r"unknown field\(s\) \['doc'\]"):
        PromptTemplate(user="{query} {doc} {passage}")
    with pytest.raises(InputError, match="needs \\{passage\\}"):
        PromptTemplate(user="{query}")
    with pytest.raises(InputError, match="exactly one group"):
        PromptTemplate(pattern=r"score: \d")
    f = tmp_path / "t.txt"
    f.write_text("[system]\nBe strict.\n[user]\nQ: {query}\nP: {passage}\nAnswer ##final score: N\n")
    t = PromptTemplate.from_file(f)
    assert t.system == "Be strict." and t.user.startswith("Q: {query}") and t.hash != PromptTemplate().hash
    msgs = t.messages({"query": "a", "passage": "x" * 5000, "description": "", "narrative": "", "qid": "1",
                       "docno": "d"})
    assert msgs[0] == {"role": "system", "content": "Be strict."} and msgs[1]["content"].count("x") == 4000


# -- against the local server ----------------------------------------------------------------------

def test_labels_and_probabilities_are_the_servers_and_a_rerun_sends_nothing(tmp_path, served):
    qrels, truth = _collection(tmp_path)
    server = served(qrels)
    topics, docs = _texts(tmp_path)
    res = _judge(tmp_path, server, concurrency=3).judge(truth, topics, docs)
    label, dist = _expected(truth)
    got = truth.merge(res.labels, on=["qid", "docno"], how="left", suffixes=("_true", ""))
    assert len(res.labels) == len(truth) and res.failures.empty
    np.testing.assert_array_equal(got["label"].to_numpy(), label)
    np.testing.assert_allclose(got[["p0", "p1", "p2", "p3"]].to_numpy(), dist, atol=1e-12)
    np.testing.assert_allclose(got["probability"], 1 - dist[:, 0], atol=1e-12)
    np.testing.assert_allclose(got["expected"], dist @ np.arange(4), atol=1e-12)
    s = res.summary
    assert (s["requests"], s["answered"], s["cached"], s["retries"], s["with_probabilities"]) == (60, 60, 0, 0, 60)
    assert server.stats()["requests"] == 60 and s["completion_tokens"] == 5 * 60
    again = _judge(tmp_path, server).judge(truth, topics, docs)
    assert server.stats()["requests"] == 60 and again.summary["cached"] == 60 and again.summary["requests"] == 0
    pd.testing.assert_frame_equal(again.labels, res.labels)
    # the cache holds every answer with its record
    with LabelCache(tmp_path / "cache.sqlite") as cache:
        rows = cache.answers()
    assert len(rows) == 60 and set(rows["model"]) == {"seeded"} and set(rows["prompt_hash"]) == \
        {PromptTemplate().hash}
    assert rows["raw"].str.startswith("##final score: ").all() and rows["time"].str.match(r"\d{4}-").all()
    # another prompt is another key: asked again
    other = PromptTemplate(user=PromptTemplate().user + "\nBe brief.")
    _judge(tmp_path, server, template=other).judge(truth.iloc[:5], topics, docs)
    assert server.stats()["requests"] == 65


@pytest.mark.slow   # waits out real timeouts of the protocol server
def test_faults_are_retried_and_garbage_is_counted_never_labelled(tmp_path, served):
    qrels, truth = _collection(tmp_path, n_docs=40)
    rates = {"fail500": 0.1, "rate429": 0.1, "timeout": 0.08, "garbage": 0.1, "slow": 0.1}
    server = served(qrels, hang=4.0, slow_seconds=0.2, **rates)
    topics, docs = _texts(tmp_path)
    res = _judge(tmp_path, server, concurrency=6, timeout=1.0).judge(truth, topics, docs)
    kind = np.array([llm_server.fault(q, d, rates) for q, d in zip(truth["qid"], truth["docno"])])
    assert {"fail500", "rate429", "timeout", "garbage", "slow"} <= set(kind)      # every fault is exercised
    garbage = truth[kind == "garbage"]
    assert sorted(zip(res.failures["qid"], res.failures["docno"])) == sorted(zip(garbage["qid"], garbage["docno"]))
    assert (res.failures["status"] == "malformed").all() and res.summary["malformed"] == len(garbage)
    label, _ = _expected(truth)
    good = truth[["qid", "docno"]].assign(want=label)[kind != "garbage"].merge(res.labels, on=["qid", "docno"])
    assert len(good) == (kind != "garbage").sum() and (good["want"] == good["label"]).all()
    n_retry = int(np.isin(kind, ["fail500", "rate429", "timeout"]).sum())
    assert res.summary["retries"] == n_retry
    assert res.summary["retry_reasons"] == {"HTTP 500": (kind == "fail500").sum(),
                                            "HTTP 429": (kind == "rate429").sum(), "timeout": (kind == "timeout").sum()}
    per_pair = server.stats()["per_pair"]
    assert sum(per_pair.values()) == len(truth) + n_retry == res.summary["requests"]
    # malformed answers are kept (not re-asked by default); --retry-malformed asks again, still no label
    again = _judge(tmp_path, server).judge(truth, topics, docs)
    assert again.summary["requests"] == 0 and again.summary["malformed"] == len(garbage)
    retried = _judge(tmp_path, server, retry_malformed=True).judge(truth, topics, docs)
    assert retried.summary["requests"] == len(garbage) and len(retried.labels) == len(truth) - len(garbage)


def test_exhausted_retries_leave_the_pair_unlabelled_and_a_rerun_asks_again(tmp_path, served):
    qrels, truth = _collection(tmp_path, n_topics=1, n_docs=12)
    rates = {"fail500": 0.5}
    server = served(qrels, **rates)
    topics, docs = _texts(tmp_path)
    res = _judge(tmp_path, server, retries=0).judge(truth, topics, docs)
    bad = np.array([llm_server.fault(q, d, rates) == "fail500" for q, d in zip(truth["qid"], truth["docno"])])
    assert bad.any() and (res.failures["status"] == "HTTP 500").sum() == bad.sum() == res.summary["failed"]
    assert len(res.labels) == (~bad).sum()
    again = _judge(tmp_path, server, retries=0).judge(truth, topics, docs)   # the server fails first attempts only
    assert again.summary["requests"] == bad.sum() and len(again.labels) == len(truth)


def _cli(tmp: Path, server: Server, *extra: str, env: dict | None = None) -> subprocess.Popen:
    cmd = [sys.executable, "-m", "pyterrier_noise", "llm-judge", "--qrels", str(tmp / "qrels.txt"),
           "--docs", str(tmp / "docs.tsv"), "--topics", str(tmp / "topics.tsv"), "--model", "seeded",
           "--base-url", server.url, "--cache", str(tmp / "cache.sqlite"), "--out", str(tmp / "labels.tsv"), *extra]
    return subprocess.Popen(cmd, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, cwd=ROOT,
                            env={**os.environ, "PYTHONPATH": str(ROOT), **(env or {})})


@pytest.mark.slow
def test_a_killed_run_resumes_where_it_stopped(tmp_path, served):
    qrels, truth = _collection(tmp_path, n_topics=2, n_docs=40)
    server = served(qrels, delay=0.05)
    proc = _cli(tmp_path, server, "--concurrency", "2")
    db = tmp_path / "cache.sqlite"
    n = 0
    for _ in range(600):
        if db.exists():
            try:
                with sqlite3.connect(db) as c:
                    n = c.execute("SELECT count(*) FROM answers").fetchone()[0]
            except sqlite3.OperationalError:
                n = 0
        if n >= 15:
            break
        time.sleep(0.02)
    proc.send_signal(signal.SIGKILL)
    proc.communicate(timeout=10)       # waits, and closes its pipes
    with sqlite3.connect(db) as c:
        kept = c.execute("SELECT count(*), sum(status = 'ok') FROM answers").fetchone()
    assert 15 <= kept[0] < len(truth) and kept[1] == kept[0]
    before = server.stats()["requests"]
    done = _cli(tmp_path, server, "--concurrency", "2")
    out, err = done.communicate(timeout=120)
    assert done.returncode == 0, err
    assert server.stats()["requests"] - before == len(truth) - kept[0]
    labels = read_cheap_qrels(tmp_path / "labels.tsv")
    assert len(labels) == len(truth) and {"probability"} <= set(labels.columns)
    want, _ = _expected(truth)
    np.testing.assert_array_equal(truth.merge(labels, on=["qid", "docno"], suffixes=("_t", ""))["label"], want)
    assert f"{len(truth)} pairs: {len(truth)} labelled ({kept[0]} from the cache" in out


@pytest.mark.slow
def test_the_api_key_is_used_never_shown_or_stored(tmp_path, served):
    qrels, truth = _collection(tmp_path, n_topics=1, n_docs=5)
    secret = "sk-test-0123456789abcdef"
    server = served(qrels, env={"LLM_SERVER_KEY": secret})
    done = _cli(tmp_path, server, env={"OPENAI_API_KEY": secret})
    out, err = done.communicate(timeout=60)
    assert done.returncode == 0, err
    assert secret not in out + err and secret.encode() not in (tmp_path / "cache.sqlite").read_bytes()
    assert not any(secret.encode() in p.read_bytes() for p in tmp_path.iterdir() if p.is_file())
    (tmp_path / "cache.sqlite").unlink()
    wrong = _cli(tmp_path, server, env={"OPENAI_API_KEY": "wrong"})
    out, err = wrong.communicate(timeout=60)
    assert wrong.returncode == 2 and "refused the API key (HTTP 401)" in err and "Traceback" not in err
    assert "wrong" not in err


def test_cli_pool_to_depth_and_output_for_calibrate(tmp_path, served):
    from pyterrier_noise.cli import main
    qrels, truth = _collection(tmp_path)
    rng = np.random.default_rng(3)
    runs = tmp_path / "runs"
    runs.mkdir()
    for r in range(3):
        lines = []
        for q in ("q0", "q1", "q2"):
            order = rng.permutation(20)
            lines += [f"{q} Q0 d{q[1]}-{d} {k + 1} {20 - k} run{r}\n" for k, d in enumerate(order)]
        (runs / f"run{r}").write_text("".join(lines))
    server = served(qrels)
    code = main(["llm-judge", str(runs), "--depth", "4", "--docs", str(tmp_path / "docs.tsv"), "--topics",
                 str(tmp_path / "topics.tsv"), "--model", "seeded", "--base-url", server.url, "--cache",
                 str(tmp_path / "c.sqlite"), "--out", str(tmp_path / "pool.jsonl"), "--quiet"])
    assert code == 0
    want = set()
    for f in runs.iterdir():
        run = pd.read_csv(f, sep=r"\s+", header=None, names=["qid", "q0", "docno", "rank", "score", "tag"])
        want |= set(map(tuple, run[run["rank"] <= 4][["qid", "docno"]].to_numpy()))
    got = read_cheap_qrels(tmp_path / "pool.jsonl")
    assert set(zip(got["qid"], got["docno"])) == want and server.stats()["requests"] == len(want)
    assert main(["llm-judge", "--qrels", str(qrels), "--depth", "3", "--docs", "x", "--model", "m", "--cache",
                 str(tmp_path / "c.sqlite"), "--out", str(tmp_path / "o.tsv")]) == 2


def test_cli_judges_the_candidates_a_session_has_not_judged(tmp_path, served):
    from pyterrier_noise.cli import main
    from pyterrier_noise.selection import JudgingSession
    qrels, truth = _collection(tmp_path, n_topics=2, n_docs=10)
    rng = np.random.default_rng(5)
    runs = {f"r{r}": truth[["qid", "docno"]].assign(score=rng.random(len(truth))) for r in range(2)}
    with JudgingSession(tmp_path / "s.sqlite", runs=runs, method="pool") as session:
        for q, d, _ in session.propose(3):
            session.record(q, d, 1)
        want = set(map(tuple, session.selector.weights()[["qid", "docno"]].to_numpy()))
    assert len(want) == len(truth) - 3
    server = served(qrels)
    code = main(["llm-judge", "--session", str(tmp_path / "s.sqlite"), "--docs", str(tmp_path / "docs.tsv"),
                 "--topics", str(tmp_path / "topics.tsv"), "--model", "seeded", "--base-url", server.url,
                 "--cache", str(tmp_path / "c.sqlite"), "--out", str(tmp_path / "cand.tsv"), "--quiet"])
    got = read_cheap_qrels(tmp_path / "cand.tsv")
    assert code == 0 and set(zip(got["qid"], got["docno"])) == want and server.stats()["requests"] == len(want)


def test_an_unreachable_endpoint_stops_the_run_with_a_sentence(tmp_path):
    from pyterrier_noise.judges.llm import LLMJudgeError
    _, truth = _collection(tmp_path, n_topics=1, n_docs=3)
    topics, docs = _texts(tmp_path)
    url = f"http://127.0.0.1:{_free_port()}/v1"          # nothing listens there
    judge = LLMJudge("m", tmp_path / "c.sqlite", base_url=url, api_key="x", retries=1, backoff=0.01, timeout=5)
    with pytest.raises(LLMJudgeError, match="cannot reach the endpoint .* after 2 attempts"):
        judge.judge(truth, topics, docs)
