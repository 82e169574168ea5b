"""Evidence benchmark: the LLM judge's throughput and resume time against a local chat-completions server.

The server is tests/llm_server.py (Starlette / uvicorn on 127.0.0.1, a seeded judge over synthetic
qrels, no model), so the numbers are the judge's own cost -- the openai client, the prompt, the
parsing, the SQLite commit of every answer -- beside the server's, not an LLM's speed.  Per
concurrency level it reports, for ``--pairs`` fresh pairs:

* requests per second of :class:`pyterrier_noise.judges.llm.LLMJudge` and of a bare loop of the same
  ``openai`` client calls at the same concurrency (no prompt template, no parsing, no cache);
* the wall time per request, the server handler's time per request (``GET /stats``), and the judge's
  overhead per request beside the bare loop's;
* the time of a rerun over the same pairs (every answer cached: no request);
* the resume after a kill: the command is killed (SIGKILL) once half the answers are committed, and
  the rerun's time and requests are reported (it asks only for the pairs left), beside the time of
  the command when every answer is cached (its fixed cost: starting Python, importing, reading).

The server handler's time is summed over requests, so above concurrency 1 it counts the time a
handler waits for the event loop too.

Usage:  python benchmarks/llm_judge.py [--pairs 1000] [--concurrency 1,4,16] [--delay 0]
        (writes benchmarks/results/llm_judge.json)
"""
from __future__ import annotations

import argparse
import asyncio
import json
import os
import signal
import socket
import sqlite3
import subprocess
import sys
import tempfile
import time
import urllib.request
from pathlib import Path

import numpy as np

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def start_server(qrels: Path, delay: float) -> tuple[subprocess.Popen, int]:
    port = free_port()
    proc = subprocess.Popen([sys.executable, str(ROOT / "tests" / "llm_server.py"), "--port", str(port), "--qrels",
                             str(qrels), "--delay", str(delay)], stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    for _ in range(400):
        try:
            urllib.request.urlopen(f"http://127.0.0.1:{port}/health", timeout=1).read()
            return proc, port
        except OSError:
            time.sleep(0.05)
    raise SystemExit("the local server did not start")


def stats(port: int) -> dict:
    return json.loads(urllib.request.urlopen(f"http://127.0.0.1:{port}/stats", timeout=10).read())


def collection(tmp: Path, n_pairs: int, seed: int = 0):
    rng = np.random.default_rng(seed)
    n_topics = max(1, n_pairs // 100)
    rows = [(f"q{t}", f"d{t}-{d}", int(rng.integers(0, 4))) for t in range(n_topics) for d in range(n_pairs // n_topics)]
    (tmp / "qrels.txt").write_text("".join(f"{q} 0 {d} {r}\n" for q, d, r in rows))
    words = " ".join(f"w{i}" for i in range(150))        # a passage of about 150 words
    (tmp / "docs.tsv").write_text("".join(f"{d}\tDOC={d} {words}\n" for _, d, _ in rows))
    (tmp / "topics.tsv").write_text("".join(f"q{t}\tTOPIC=q{t} a question\n" for t in range(n_topics)))
    return rows


async def bare(port: int, prompts: list[str], concurrency: int) -> float:
    """The same requests through the openai client, nothing else: the floor for the judge."""
    import openai
    client = openai.AsyncOpenAI(base_url=f"http://127.0.0.1:{port}/v1", api_key="x", max_retries=0)
    queue = list(prompts)

    async def worker() -> None:
        while queue:
            text = queue.pop()
            await client.chat.completions.create(model="bare", messages=[{"role": "user", "content": text}],
                                                 temperature=0.0, max_tokens=100, logprobs=True, top_logprobs=4)

    t0 = time.perf_counter()
    await asyncio.gather(*(worker() for _ in range(concurrency)))
    await client.close()
    return time.perf_counter() - t0


def cli(tmp: Path, port: int, cache: Path, concurrency: int) -> list[str]:
    return [sys.executable, "-m", "pyterrier_noise", "llm-judge", "--qrels", str(tmp / "qrels.txt"), "--docs",
            str(tmp / "docs.tsv"), "--topics", str(tmp / "topics.tsv"), "--model", "seeded", "--base-url",
            f"http://127.0.0.1:{port}/v1", "--cache", str(cache), "--out", str(tmp / "labels.tsv"),
            "--concurrency", str(concurrency), "--quiet"]


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--pairs", type=int, default=1000)
    ap.add_argument("--concurrency", default="1,4,16")
    ap.add_argument("--delay", type=float, default=0.0, help="seconds the server waits before every answer")
    ap.add_argument("--out", default=str(ROOT / "benchmarks" / "results" / "llm_judge.json"))
    args = ap.parse_args()
    import pandas as pd

    from pyterrier_noise.judges.llm import LLMJudge
    from pyterrier_noise.web.docs import open_collection

    results = []
    env = {**os.environ, "PYTHONPATH": str(ROOT)}
    with tempfile.TemporaryDirectory() as d:
        tmp = Path(d)
        rows = collection(tmp, args.pairs)
        pairs = pd.DataFrame([(q, doc) for q, doc, _ in rows], columns=["qid", "docno"])
        col = open_collection(tmp / "docs.tsv", tmp / "topics.tsv")
        proc, port = start_server(tmp / "qrels.txt", args.delay)
        try:
            for conc in [int(c) for c in args.concurrency.split(",") if c.strip()]:
                cache = tmp / f"cache-{conc}.sqlite"
                judge = LLMJudge("seeded", cache, base_url=f"http://127.0.0.1:{port}/v1", api_key="x",
                                 concurrency=conc)
                prompts = [judge.template.messages({"query": f"TOPIC={q} a question", "passage": col.document(doc),
                                                    "description": "", "narrative": "", "qid": q, "docno": doc})[-1]
                           ["content"] for q, doc in zip(pairs["qid"], pairs["docno"])]
                s0 = stats(port)
                t_bare = asyncio.run(bare(port, prompts, conc))
                s1 = stats(port)
                t0 = time.perf_counter()
                res = judge.judge(pairs, col.topics, col.document)
                t_judge = time.perf_counter() - t0
                s2 = stats(port)
                t0 = time.perf_counter()
                again = judge.judge(pairs, col.topics, col.document)
                t_rerun = time.perf_counter() - t0
                assert again.summary["requests"] == 0 and len(res.labels) == len(pairs)
                # a kill once half the answers are committed, then the resume (the command, as a user runs it)
                kcache = tmp / f"kill-{conc}.sqlite"
                p = subprocess.Popen(cli(tmp, port, kcache, conc), env=env, stdout=subprocess.DEVNULL,
                                     stderr=subprocess.DEVNULL, cwd=ROOT)
                n_kept = 0
                while p.poll() is None and n_kept < len(pairs) // 2:
                    time.sleep(0.01)
                    if kcache.exists():
                        try:
                            with sqlite3.connect(kcache) as c:
                                n_kept = c.execute("SELECT count(*) FROM answers").fetchone()[0]
                        except sqlite3.OperationalError:
                            pass
                p.send_signal(signal.SIGKILL)
                p.wait()
                with sqlite3.connect(kcache) as c:
                    n_kept = c.execute("SELECT count(*) FROM answers").fetchone()[0]
                s3 = stats(port)
                t0 = time.perf_counter()
                done = subprocess.run(cli(tmp, port, kcache, conc), env=env, capture_output=True, text=True, cwd=ROOT)
                t_resume = time.perf_counter() - t0
                s4 = stats(port)
                assert done.returncode == 0, done.stderr
                t0 = time.perf_counter()     # the command's fixed cost: start, read, every answer cached
                cached = subprocess.run(cli(tmp, port, kcache, conc), env=env, capture_output=True, text=True,
                                        cwd=ROOT)
                t_cli_cached = time.perf_counter() - t0
                assert cached.returncode == 0 and stats(port)["requests"] == s4["requests"]
                n = len(pairs)
                row = {"concurrency": conc, "pairs": n,
                       "judge_requests_per_second": n / t_judge, "bare_requests_per_second": n / t_bare,
                       "judge_ms_per_request": 1000 * t_judge / n, "bare_ms_per_request": 1000 * t_bare / n,
                       "server_handler_ms_per_request": 1000 * (s2["handler_seconds"] - s1["handler_seconds"]) / n,
                       "judge_overhead_ms_per_request": 1000 * (t_judge - t_bare) / n,
                       "bare_server_handler_ms_per_request": 1000 * (s1["handler_seconds"] - s0["handler_seconds"]) / n,
                       "rerun_all_cached_seconds": t_rerun, "killed_after_answers": int(n_kept),
                       "resume_requests": s4["requests"] - s3["requests"], "resume_seconds": t_resume,
                       "command_all_cached_seconds": t_cli_cached}
                results.append(row)
                print(json.dumps({k: round(v, 3) if isinstance(v, float) else v for k, v in row.items()}), flush=True)
        finally:
            proc.terminate()
            proc.wait(10)
    out = Path(args.out)
    out.parent.mkdir(parents=True, exist_ok=True)
    out.write_text(json.dumps({"command": "python benchmarks/llm_judge.py " + " ".join(sys.argv[1:]),
                               "date": time.strftime("%Y-%m-%d %H:%M UTC", time.gmtime()), "delay": args.delay,
                               "results": results}, indent=1) + "\n")
    print(f"wrote {out}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
