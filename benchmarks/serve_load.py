"""Load and faults for the judging server (``pyterrier-noise serve``), on loopback, bounded.

    python benchmarks/serve_load.py                         # 8 assessors, 2,000 judgments, then 10 SIGKILLs
    python benchmarks/serve_load.py --assessors 4 --budget 200 --kills 3     # the quick version
    python benchmarks/serve_load.py --assessors 2 --budget 100 --kills 0 --think 0.2 [--rounds-ahead]   # waits

Vaswani (../shared/data/vaswani: 11,429 documents, 93 topics, 2,083 relevant judgments): four
runs are built in this process from the corpus (BM25 with two parameter settings, a TF-IDF dot
product, and BM25 on the first 30 words of each document; 100 documents per topic), and a Method C
session (p = 0.8, batches of as many documents as there are assessors) is created over them.
Then, twice:

1. **load**: a server process (``python -m pyterrier_noise serve``), and ``--assessors`` threads,
   each an assessor with its own token and httpx client, asking for the next document and
   answering with its Vaswani label (a document the qrels do not judge is non-relevant: the
   session's usual ``QrelsOracle``), until the budget is spent;
2. **faults**: the same, while the server is killed with SIGKILL at ``--kills`` moments (seeded:
   after a random number of acknowledged judgments, plus a random delay of up to 50 ms) and
   restarted on the same port; the assessors retry whatever the dead server did not answer (a
   judgment that was recorded before the kill then gets "recorded already", a 409).

Checked after each: no document was leased to two assessors; every judgment the server
acknowledged is in the final qrels; the session holds exactly the budget; and the final qrels
equal, as a set, the judgments of one uninterrupted single-assessor session with the same
settings (``JudgingSession.run`` with the qrels as oracle).  Reported: judgments per second
(wall clock from the first request to the last acknowledged judgment) and the 50th / 99th
percentile response time of the requests (``GET /api/next`` and ``POST /api/judge`` together), and
the wait pages: how often an assessor was told to wait (one per stretch of "wait" answers, as the
browser's page shows one), per judgment.
The figures and checks go to ``benchmarks/results/serve_load.json``.
"""
from __future__ import annotations

import argparse
import gzip
import json
import os
import re
import signal
import socket
import subprocess
import sys
import tempfile
import threading
import time
from dataclasses import dataclass, field
from pathlib import Path

import numpy as np
import pandas as pd

ROOT = Path(__file__).resolve().parents[1]
VASWANI = ROOT.parent / "shared" / "data" / "vaswani"
DEADLINE = 900.0          # seconds: every phase is bounded


# ---------------------------------------------------------------------------------------------
# runs from the corpus

def vaswani_runs(vaswani: Path = VASWANI, depth: int = 100) -> dict[str, pd.DataFrame]:
    """Four runs over Vaswani's 93 topics, computed here (BM25 k1=1.2 b=0.75; BM25 k1=2 b=0.3;
    TF-IDF; BM25 on each document's first 30 words)."""
    from scipy import sparse
    raw = gzip.open(vaswani / "corpus.trec.gz", "rt").read()
    docs = re.findall(r"<DOCNO>\s*(\S+)\s*</DOCNO>(.*?)</DOC>", raw, flags=re.S)
    topics = re.findall(r"<num>\s*(\S+)\s*</num>\s*<title>(.*?)</title>", (vaswani / "topics.trec").read_text(),
                        flags=re.S)
    docnos = np.array([d for d, _ in docs])
    vocab: dict[str, int] = {}

    def matrix(texts: list[list[str]]) -> sparse.csr_matrix:
        rows, cols = [], []
        for i, words in enumerate(texts):
            for w in words:
                rows.append(i)
                cols.append(vocab.setdefault(w, len(vocab)))
        m = sparse.csr_matrix((np.ones(len(rows)), (rows, cols)), shape=(len(texts), 200_000))
        m.sum_duplicates()
        return m

    full = matrix([re.findall(r"\w+", t.lower()) for _, t in docs])
    short = matrix([re.findall(r"\w+", t.lower())[:30] for _, t in docs])
    # by column (a topic's terms are columns) and with each document's length, once per matrix
    cols = {first30: (m.tocsc(), np.asarray(m.sum(axis=1)).ravel()) for first30, m in ((False, full), (True, short))}
    runs: dict[str, list] = {name: [] for name in ("bm25", "bm25-k2-b03", "tfidf", "bm25-first30")}
    for qid, title in topics:
        terms = sorted({vocab[w] for w in re.findall(r"\w+", title.lower()) if w in vocab})
        for name in runs:
            m = short if name == "bm25-first30" else full
            by_col, dl = cols[name == "bm25-first30"]
            sub = by_col[:, terms]
            tf = sub.toarray(order="C")   # row-major, as from the rows: sums in the same order
            df = (sub > 0).sum(axis=0).A1
            n = m.shape[0]
            if name == "tfidf":
                score = (np.log1p(tf) * np.log(n / np.maximum(df, 1))).sum(axis=1)
            else:
                k1, b = (2.0, 0.3) if name == "bm25-k2-b03" else (1.2, 0.75)
                idf = np.log(1 + (n - df + 0.5) / (df + 0.5))
                score = (idf * tf * (k1 + 1) / (tf + k1 * (1 - b + b * dl / dl.mean())[:, None])).sum(axis=1)
            top = np.lexsort((docnos, -score))[:depth]
            top = top[score[top] > 0]
            runs[name].append(pd.DataFrame({"qid": qid, "docno": docnos[top], "score": score[top],
                                            "rank": np.arange(1, len(top) + 1)}))
    return {name: pd.concat(parts, ignore_index=True) for name, parts in runs.items()}


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


# ---------------------------------------------------------------------------------------------
# the server process

@dataclass
class Server:
    session: Path
    port: int
    args: list[str]
    log: Path
    proc: subprocess.Popen | None = None
    starts: int = 0

    def start(self, deadline: float) -> None:
        env = {**os.environ, "PYTHONPATH": os.pathsep.join([str(ROOT), os.environ.get("PYTHONPATH", "")])}
        out = open(self.log, "a")
        self.proc = subprocess.Popen([sys.executable, "-m", "pyterrier_noise", "serve", "--session", str(self.session),
                                      "--port", str(self.port), *self.args], stdout=out, stderr=subprocess.STDOUT,
                                     env=env)
        out.close()
        self.starts += 1
        import httpx
        with httpx.Client(timeout=2) as client:   # one client (and TLS context) for every poll
            while True:       # ready when it answers (polling with a deadline; no fixed sleep)
                if self.proc.poll() is not None:
                    raise RuntimeError(f"the server exited with {self.proc.returncode}: {self.log.read_text()[-2000:]}")
                try:
                    if client.get(f"http://127.0.0.1:{self.port}/login").status_code == 200:
                        return
                except httpx.TransportError:
                    pass
                if time.monotonic() > deadline:
                    raise RuntimeError("the server did not answer in time")
                time.sleep(0.05)

    def kill(self) -> None:
        if self.proc is not None and self.proc.poll() is None:
            self.proc.send_signal(signal.SIGKILL)
            self.proc.wait(timeout=60)

    def stop(self) -> None:
        if self.proc is not None and self.proc.poll() is None:
            self.proc.send_signal(signal.SIGINT)
            try:
                self.proc.wait(timeout=30)
            except subprocess.TimeoutExpired:
                self.proc.kill()
                self.proc.wait()


# ---------------------------------------------------------------------------------------------
# the assessors

@dataclass
class Shared:
    acked: list = field(default_factory=list)            # (assessor, qid, docno, label)
    leased: dict = field(default_factory=dict)           # (qid, docno) -> set of assessors
    times: list = field(default_factory=list)            # seconds per answered request
    errors: list = field(default_factory=list)
    retries: int = 0
    replays: int = 0
    wait_pages: int = 0          # times an assessor was shown the wait page (one per stretch of "wait" answers)
    lock: threading.Lock = field(default_factory=threading.Lock)
    stop: threading.Event = field(default_factory=threading.Event)     # set when the phase ends early


def assessor(name: str, token: str, port: int, labels: dict, shared: Shared, deadline: float,
             think: float = 0.0, seed: int = 0) -> None:
    """One assessor: asks for the next document and answers with its label, after a think time drawn
    uniformly from 0 to ``think`` seconds (seeded), until the budget is spent."""
    import httpx
    rng = np.random.default_rng(seed)
    waiting = False
    base = f"http://127.0.0.1:{port}"
    client = httpx.Client(base_url=base, timeout=30)

    def call(method: str, url: str, **kw) -> httpx.Response:
        while True:
            if time.monotonic() > deadline or shared.stop.is_set():
                raise TimeoutError(f"{name}: deadline passed or the phase ended")
            t0 = time.perf_counter()
            try:
                r = client.request(method, url, **kw)
            except httpx.TransportError:          # the server is down (killed): try again when it is back
                with shared.lock:
                    shared.retries += 1
                time.sleep(0.05)
                continue
            with shared.lock:
                shared.times.append(time.perf_counter() - t0)
            return r

    try:
        r = call("POST", "/api/login", headers={"authorization": f"Bearer {token}"})
        if r.status_code != 200:
            raise RuntimeError(f"{name}: login refused: {r.text}")
        csrf = r.json()["csrf"]
        while True:
            r = call("GET", "/api/next")
            if r.status_code == 401:          # should not happen: logins are in the server's file
                raise RuntimeError(f"{name}: logged out: {r.text}")
            t = r.json()
            if t["state"] == "done":
                return
            if t["state"] == "wait":
                if not waiting:
                    waiting = True
                    with shared.lock:
                        shared.wait_pages += 1
                time.sleep(0.01)
                continue
            waiting = False
            key = (t["qid"], t["docno"])
            with shared.lock:
                shared.leased.setdefault(key, set()).add(name)
            label = labels.get(key, 0)
            if think > 0:
                time.sleep(float(rng.uniform(0, think)))
            r = call("POST", "/api/judge", data={"nonce": t["nonce"], "qid": t["qid"], "docno": t["docno"],
                                                 "label": str(label)}, headers={"x-csrf-token": csrf})
            if r.status_code == 409 and "recorded already" in r.text:
                with shared.lock:
                    shared.replays += 1      # the answer was lost in a kill; the judgment was saved
            elif r.status_code != 200:
                raise RuntimeError(f"{name}: judgment refused ({r.status_code}): {r.text}")
            with shared.lock:
                shared.acked.append((name, t["qid"], t["docno"], float(label)))
    except Exception as exc:      # reported, and the check fails
        with shared.lock:
            shared.errors.append(repr(exc))
    finally:
        client.close()


# ---------------------------------------------------------------------------------------------
# one phase

def phase(work: Path, runs_dir: Path, qrels: pd.DataFrame, n_assessors: int, budget: int, kills: int, seed: int,
          tag: str, think: float = 0.0, ahead: bool = False) -> dict:
    from pyterrier_noise.selection import JudgingSession
    from pyterrier_noise.web import WebStore
    session = work / f"{tag}.sqlite"
    JudgingSession(session, runs=runs_dir, method="C", p=0.8, batch_size=n_assessors).close()
    store = WebStore(session)
    tokens = {f"a{i}": store.add_account(f"a{i}") for i in range(n_assessors)}
    organiser = store.add_account("lead", "organiser")
    store.close()
    labels = {(q, d): int(v) for q, d, v in zip(qrels["qid"], qrels["docno"], qrels["label"])}
    srv = Server(session, free_port(), ["--budget", str(budget), "--labels", "0,1", "--docs",
                                        str(VASWANI / "corpus.trec.gz"), "--topics", str(VASWANI / "topics.trec")]
                 + (["--rounds-ahead"] if ahead else []),
                 work / f"{tag}.log")
    deadline = time.monotonic() + DEADLINE
    shared = Shared()
    rng = np.random.default_rng(seed)
    points = sorted(rng.choice(np.arange(budget // 20, budget - budget // 20), size=kills, replace=False).tolist())
    delays = rng.uniform(0, 0.05, size=kills).tolist()
    killed = []
    try:
        srv.start(deadline)
        t0 = time.perf_counter()
        threads = [threading.Thread(target=assessor, args=(n, tok, srv.port, labels, shared, deadline, think,
                                                           seed * 1000 + i), daemon=True)
                   for i, (n, tok) in enumerate(tokens.items())]
        for th in threads:
            th.start()
        for point, delay in zip(points, delays):
            while len(shared.acked) < point and any(th.is_alive() for th in threads):
                if time.monotonic() > deadline:
                    raise TimeoutError("deadline passed before the kill point")
                time.sleep(0.002)
            time.sleep(delay)
            srv.kill()
            killed.append(len(shared.acked))
            srv.start(deadline)
        for th in threads:
            th.join(max(1.0, deadline - time.monotonic()))
        elapsed = time.perf_counter() - t0
        import httpx
        with httpx.Client(base_url=f"http://127.0.0.1:{srv.port}", timeout=60) as c:
            assert c.post("/api/login", headers={"authorization": f"Bearer {organiser}"}).status_code == 200
            text = c.get("/organiser/qrels").text
            status = c.get("/api/status").json()
    finally:
        shared.stop.set()
        srv.stop()
    final = {tuple(line.split()[i] for i in (0, 2)): float(line.split()[3]) for line in text.splitlines()}
    twice = {k: sorted(v) for k, v in shared.leased.items() if len(v) > 1}
    lost = [a for a in shared.acked if final.get((a[1], a[2])) != a[3]]
    times = np.array(shared.times)
    return {"tag": tag, "assessors": n_assessors, "budget": budget, "kills": len(killed), "killed_after": killed,
            "server_starts": srv.starts, "errors": shared.errors, "judged": len(final), "acknowledged": len(shared.acked),
            "leased_twice": len(twice), "lost": len(lost), "retried_requests": shared.retries,
            "replayed_after_kill": shared.replays, "wait_pages": shared.wait_pages,
            "wait_pages_per_judgment": shared.wait_pages / max(len(shared.acked), 1), "think_s": think,
            "rounds_ahead": ahead, "seconds": elapsed, "judgments_per_second": len(shared.acked) / elapsed,
            "requests": len(times), "p50_ms": float(np.percentile(times, 50) * 1000) if len(times) else None,
            "p99_ms": float(np.percentile(times, 99) * 1000) if len(times) else None,
            "server_judged": status["counter"]["judged"], "final": final, "twice_examples": list(twice.items())[:5]}


def reference(work: Path, runs_dir: Path, qrels: pd.DataFrame, n_assessors: int, budget: int) -> dict:
    """One assessor, no server: ``JudgingSession.run`` with the qrels as oracle."""
    from pyterrier_noise.selection import JudgingSession, QrelsOracle
    with JudgingSession(work / "reference.sqlite", runs=runs_dir, method="C", p=0.8, batch_size=n_assessors) as s:
        s.run(QrelsOracle(qrels), budget=budget)
        q = s.judged_qrels()
    return {(a, b): float(c) for a, b, c in zip(q["qid"], q["docno"], q["label"])}


def run(n_assessors: int = 8, budget: int = 2000, kills: int = 10, seed: int = 0, work: Path | None = None,
        vaswani: Path = VASWANI, think: float = 0.0, ahead: bool = False) -> dict:
    """Both phases; ``think``: each assessor's think time per document is uniform on [0, think] s;
    ``ahead``: the server proposes rounds ahead (``serve --rounds-ahead``): fewer waits, and the qrels
    are then not expected to equal one assessor's."""
    if work is None:       # a temporary directory, removed afterwards
        with tempfile.TemporaryDirectory(prefix="serve-load-") as tmp:
            return run(n_assessors, budget, kills, seed, Path(tmp), vaswani, think, ahead)
    from pyterrier_noise.io import read_qrels, write_trec_run
    work = Path(work)
    runs_dir = work / "runs"
    runs_dir.mkdir(exist_ok=True)
    for name, frame in vaswani_runs(vaswani).items():
        write_trec_run(frame.assign(rank=frame["rank"] - 1), runs_dir / name, tag=name)   # 0-based, as PyTerrier
    qrels = read_qrels(vaswani / "qrels")
    ref = reference(work, runs_dir, qrels, n_assessors, budget)
    out = {"date": time.strftime("%Y-%m-%d %H:%M UTC", time.gmtime()), "command": " ".join(["python"] + sys.argv),
           "machine": f"{os.cpu_count()} cores, loopback; measured under load (shared machine)"}
    for tag, k in (("load", 0), ("faults", kills)):
        res = phase(work, runs_dir, qrels, n_assessors, budget, k, seed, tag, think, ahead)
        res["equals_single_assessor"] = res.pop("final") == ref
        out[tag] = res
    return out


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--assessors", type=int, default=8)
    ap.add_argument("--budget", type=int, default=2000)
    ap.add_argument("--kills", type=int, default=10)
    ap.add_argument("--seed", type=int, default=0)
    ap.add_argument("--think", type=float, default=0.0, metavar="SECONDS",
                    help="each assessor's think time per document: uniform on [0, SECONDS] (default 0)")
    ap.add_argument("--rounds-ahead", action="store_true", help="serve --rounds-ahead (fewer waits; the qrels then "
                                                                 "differ from one assessor's)")
    ap.add_argument("--out", default=str(ROOT / "benchmarks" / "results" / "serve_load.json"))
    a = ap.parse_args()
    res = run(a.assessors, a.budget, a.kills, a.seed, think=a.think, ahead=a.rounds_ahead)
    Path(a.out).parent.mkdir(parents=True, exist_ok=True)
    Path(a.out).write_text(json.dumps(res, indent=2, default=str) + "\n")
    for tag in ("load", "faults"):
        r = res[tag]
        print(f"{tag:7s} {r['assessors']} assessors, {r['acknowledged']} judgments in {r['seconds']:.1f} s = "
              f"{r['judgments_per_second']:.1f} judgments/s; p50 {r['p50_ms']:.1f} ms, p99 {r['p99_ms']:.1f} ms over "
              f"{r['requests']} requests; kills {r['kills']} (after {r['killed_after']}), server starts "
              f"{r['server_starts']}, retried requests {r['retried_requests']}, answers lost in a kill and "
              f"replayed {r['replayed_after_kill']}; leased twice {r['leased_twice']}, lost {r['lost']}, "
              f"errors {len(r['errors'])}; session holds {r['server_judged']}; equals one assessor's: "
              f"{r['equals_single_assessor']}; wait pages {r['wait_pages']} "
              f"({100 * r['wait_pages_per_judgment']:.1f}% of judgments)")
    ok = all(res[t]["equals_single_assessor"] and not res[t]["leased_twice"] and not res[t]["lost"]
             and not res[t]["errors"] and res[t]["server_judged"] == a.budget for t in ("load", "faults"))
    print("all checks passed" if ok else "CHECKS FAILED")
    sys.exit(0 if ok else 1)


if __name__ == "__main__":
    main()
