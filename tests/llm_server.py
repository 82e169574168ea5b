"""A local chat-completions server for the LLM judge's tests: a seeded judge over qrels, and injected faults.

Run as ``python tests/llm_server.py --port P --qrels QRELS [--seed S] [--fail500 F] [--timeout F] ...``.
The prompt's query must hold ``TOPIC=QID`` and its passage ``DOC=DOCNO`` (the tests' collections
are written so); the answer is ``##final score: L`` with L drawn by :func:`judge` from the pair's true
label, and the label's log-probabilities when asked.  A pair is faulty by a hash of the pair: a
``fail500`` / ``timeout`` / ``rate429`` pair fails on its first request only, a ``garbage`` pair always
answers without a parsable label, a ``slow`` pair answers after ``--slow-seconds``.  ``GET /stats``
gives the requests received, in total and per pair, and the seconds spent in the handler.  Used by
tests/judges/test_judges_llm.py and benchmarks/llm_judge.py.
"""
from __future__ import annotations

import argparse
import asyncio
import hashlib
import math
import os
import re
import time

import numpy as np

SCALE = (0, 1, 2, 3)


def _unit(*parts: object) -> float:
    """A uniform number in [0, 1) from a hash of ``parts`` (the same in every process)."""
    h = hashlib.sha256("|".join(map(str, parts)).encode()).digest()
    return int.from_bytes(h[:8], "big") / 2 ** 64


def judge(qid: str, docno: str, truth: int, seed: int, accuracy: float = 0.7) -> tuple[int, np.ndarray]:
    """The seeded judge's label of a pair and its distribution over 0-3: the true label with probability
    ``accuracy``, else another grade; the distribution puts 0.8 + 0.05 on the answer and 0.05 elsewhere
    plus a pair-specific tilt."""
    u = _unit(seed, "label", qid, docno)
    if u < accuracy:
        label = int(truth)
    else:
        others = [g for g in SCALE if g != truth]
        label = others[int((u - accuracy) / (1 - accuracy) * len(others)) % len(others)]
    tilt = np.array([_unit(seed, "tilt", qid, docno, g) for g in SCALE]) * 0.1
    p = 0.05 + tilt
    p[label] = 0.85
    return label, p / p.sum()


def fault(qid: str, docno: str, rates: dict[str, float]) -> str | None:
    """The pair's injected fault (or None), by a hash of the pair."""
    u, lo = _unit("fault", qid, docno), 0.0
    for kind, rate in rates.items():
        if lo <= u < lo + rate:
            return kind
        lo += rate
    return None


def make_app(truth: dict[tuple[str, str], int], seed: int, rates: dict[str, float], hang: float, slow: float,
             delay: float, key: str | None):
    from starlette.applications import Starlette
    from starlette.requests import Request
    from starlette.responses import JSONResponse, PlainTextResponse
    from starlette.routing import Route

    counts: dict[str, int] = {}
    handler = {"seconds": 0.0}

    async def completions(request: Request):
        t0 = time.perf_counter()
        try:
            return await _completions(request)
        finally:
            handler["seconds"] += time.perf_counter() - t0

    async def _completions(request: Request):
        if key is not None and request.headers.get("authorization") != f"Bearer {key}":
            return JSONResponse({"error": {"message": "bad key"}}, status_code=401)
        body = await request.json()
        text = body["messages"][-1]["content"]
        q = re.search(r"TOPIC=(\S+)", text)
        d = re.search(r"DOC=(\S+)", text)
        if q is None or d is None:
            return JSONResponse({"error": {"message": "no topic/doc in the prompt"}}, status_code=400)
        qid, docno = q.group(1), d.group(1)
        n = counts[f"{qid}|{docno}"] = counts.get(f"{qid}|{docno}", 0) + 1
        kind = fault(qid, docno, rates)
        if delay:
            await asyncio.sleep(delay)
        if kind == "fail500" and n == 1:
            return JSONResponse({"error": {"message": "injected"}}, status_code=500)
        if kind == "rate429" and n == 1:
            return JSONResponse({"error": {"message": "slow down"}}, status_code=429, headers={"retry-after": "0.05"})
        if kind == "timeout" and n == 1:
            await asyncio.sleep(hang)
        if kind == "slow":
            await asyncio.sleep(slow)
        label, p = judge(qid, docno, truth.get((qid, docno), 0), seed)
        if kind == "garbage":
            content, tokens = "It might be relevant, maybe a 2 or a 3.", None
        else:
            content = f"##final score: {label}"
            tokens = [("##", 0.0, []), ("final", 0.0, []), (" score", 0.0, []), (":", 0.0, []),
                      (f" {label}", math.log(p[label]), [(f" {g}", math.log(p[g])) for g in SCALE])]
        choice = {"index": 0, "finish_reason": "stop", "message": {"role": "assistant", "content": content}}
        if body.get("logprobs") and tokens is not None:
            choice["logprobs"] = {"content": [
                {"token": t, "logprob": lp, "bytes": None,
                 "top_logprobs": [{"token": a, "logprob": alp, "bytes": None} for a, alp in top]}
                for t, lp, top in tokens]}
        usage = {"prompt_tokens": len(text.split()), "completion_tokens": 5, "total_tokens": len(text.split()) + 5}
        return JSONResponse({"id": f"c{sum(counts.values())}", "object": "chat.completion", "created": 0,
                             "model": body.get("model", ""), "choices": [choice], "usage": usage})

    async def stats(request: Request):
        return JSONResponse({"requests": sum(counts.values()), "per_pair": counts,
                             "handler_seconds": handler["seconds"]})

    async def health(request: Request):
        return PlainTextResponse("ok")

    return Starlette(routes=[Route("/v1/chat/completions", completions, methods=["POST"]),
                             Route("/stats", stats), Route("/health", health)])


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--port", type=int, required=True)
    ap.add_argument("--qrels", required=True)
    ap.add_argument("--seed", type=int, default=0)
    for kind in ("fail500", "rate429", "timeout", "garbage", "slow"):
        ap.add_argument(f"--{kind}", type=float, default=0.0)
    ap.add_argument("--hang", type=float, default=5.0, help="seconds a 'timeout' pair's first answer takes")
    ap.add_argument("--slow-seconds", type=float, default=0.3)
    ap.add_argument("--delay", type=float, default=0.0, help="seconds every answer takes")
    args = ap.parse_args()
    truth = {}
    with open(args.qrels) as f:
        for line in f:
            if line.strip():
                qid, _, docno, rel = line.split()
                truth[(qid, docno)] = int(rel)
    rates = {k: getattr(args, k) for k in ("fail500", "rate429", "timeout", "garbage", "slow")}
    import uvicorn
    uvicorn.run(make_app(truth, args.seed, rates, args.hang, args.slow_seconds, args.delay,
                         os.environ.get("LLM_SERVER_KEY")), host="127.0.0.1", port=args.port, log_level="warning")


if __name__ == "__main__":
    main()
