"""``pyterrier-noise llm-judge``: cheap labels from an LLM behind an OpenAI-compatible endpoint
(:class:`pyterrier_noise.judges.llm.LLMJudge`), cached and resumable, in the format ``calibrate`` reads."""
from __future__ import annotations

import argparse
from typing import Any

from . import options

LLM_JUDGE_EXAMPLES = """examples:
  # the pool of the runs to depth 20, judged by a local vLLM / Ollama / llama.cpp server
  pyterrier-noise llm-judge runs/ --depth 20 --docs corpus.trec.gz --topics topics.trec \\
      --base-url http://127.0.0.1:8000/v1 --model Qwen2.5-7B-Instruct --cache llm.sqlite --out umbrela.tsv
  # the pairs of a qrels file (e.g. to measure the judge against people), a hosted API
  export OPENAI_API_KEY=...      # read from the environment, never printed or stored
  pyterrier-noise llm-judge --qrels qrels.txt --docs irds:vaswani --model gpt-4o-mini --cache llm.sqlite \\
      --out llm-labels.tsv
  # the candidates a judging session has not judged yet
  pyterrier-noise llm-judge --session judging.sqlite --docs corpus.trec.gz --topics topics.trec \\
      --model M --base-url URL --cache llm.sqlite --out cheap.tsv
  # then: calibrate --cheap umbrela.tsv --plan 300 ... (see docs/llm-judge.md)

Every answer is committed to --cache (SQLite, keyed by model, prompt hash, qid and docno) before
the next request goes out: a rerun sends no request for an answered pair, and a killed run resumes
where it stopped.  --out holds qid, docno, label (0-3), probability (P(label >= --rel) from the
log-probabilities, when the server returns them), expected (the distribution's mean) and p0..p3.
Pairs without a label (malformed answers, failed requests, missing documents) are listed in
--failures and counted in the summary; the exit status is 1 when there are any.
"""


def register_cli(subparsers: Any) -> None:
    """Add ``pyterrier-noise llm-judge``."""
    p = subparsers.add_parser(
        "llm-judge", help="cheap 0-3 labels from an LLM (OpenAI-compatible endpoint), cached and resumable",
        description="Label (topic, document) pairs with an LLM through any OpenAI-compatible chat-completions "
                    "endpoint, with UMBRELA's prompt (Upadhyay et al. 2024, after Thomas et al. 2024) or your "
                    "own, for `calibrate`.",
        epilog=LLM_JUDGE_EXAMPLES, formatter_class=argparse.RawDescriptionHelpFormatter,
        parents=[options.progress(default=None)])
    p.add_argument("runs", nargs="*", metavar="RUN", help="TREC run files or directories (with --depth)")
    src = p.add_argument_group("the pairs (one of)")
    src.add_argument("--qrels", default=None, help="the pairs of a qrels file")
    src.add_argument("--depth", type=int, default=None, metavar="N", help="the pool of RUNs to depth N")
    src.add_argument("--session", default=None, metavar="FILE.sqlite",
                     help="the candidates a judging session has not judged yet")
    p.add_argument("--docs", required=True, metavar="DOCS",
                   help="documents: TREC <DOC> file or directory (plain or .gz), 'docno<TAB>text' lines, JSON lines, "
                        "or irds:ID (as serve reads them)")
    p.add_argument("--topics", default=None, metavar="TOPICS",
                   help="topics: TREC <top> / XML, JSON lines, 'qid<TAB>text' lines or irds:ID (default: the irds "
                        "dataset's queries with an irds: --docs)")
    p.add_argument("--model", required=True, help="the model name the endpoint serves")
    p.add_argument("--base-url", default=None,
                   help="the endpoint, e.g. http://127.0.0.1:8000/v1 (default: the openai client's, OPENAI_BASE_URL)")
    p.add_argument("--api-key-env", default="OPENAI_API_KEY", metavar="NAME",
                   help="the environment variable holding the API key (default OPENAI_API_KEY; local servers need none)")
    p.add_argument("--cache", required=True, metavar="FILE.sqlite", help="the answer cache (created if absent)")
    p.add_argument("--out", required=True, metavar="FILE", help="the labels, .tsv or .jsonl")
    p.add_argument("--failures", default=None, metavar="FILE.tsv",
                   help="the pairs without a label and why (default: --out with .failures.tsv)")
    p.add_argument("--prompt", default=None, metavar="FILE",
                   help="a prompt template: the user message, or [system] and [user] sections; fields {query}, "
                        "{description}, {narrative}, {passage}, {qid}, {docno} (default: UMBRELA's)")
    p.add_argument("--label-pattern", default=None, metavar="REGEX",
                   help="with --prompt: the regular expression, with one group, that finds the label in the answer "
                        "(it must match exactly once; default '##final score: N')")
    p.add_argument("--max-passage-chars", type=int, default=4000, help="documents cut to this length (default 4000)")
    p.add_argument("--max-tokens", type=int, default=100, help="the answer's length limit (default 100)")
    p.add_argument("--concurrency", type=int, default=4, help="requests in flight at once (default 4)")
    p.add_argument("--retries", type=int, default=5, help="retries after 429 / 5xx / timeouts (default 5)")
    p.add_argument("--timeout", type=float, default=60.0, help="seconds before a request is retried (default 60)")
    p.add_argument("--no-logprobs", action="store_true", help="do not ask for log-probabilities")
    p.add_argument("--retry-malformed", action="store_true", help="ask again for pairs answered without a label")
    p.add_argument("--rel", type=int, default=1, help="the label from which 'probability' counts a pair relevant "
                                                      "(default 1)")
    p.set_defaults(handler=_cmd_llm_judge)


def _pairs(args: argparse.Namespace) -> Any:
    """The pairs to judge from --qrels, --depth (with runs) or --session."""
    from .._validation import InputError
    given = [n for n, v in (("--qrels", args.qrels), ("--depth", args.depth), ("--session", args.session))
             if v is not None]
    if len(given) != 1:
        raise InputError(f"give exactly one of --qrels, --depth (with runs) or --session (got {given or 'none'})")
    if args.runs and args.depth is None:
        raise InputError("run files go with --depth N (the pool to judge)")
    if args.qrels is not None:
        from ..io import read_qrels
        return read_qrels(args.qrels)[["qid", "docno"]]
    if args.depth is not None:
        if args.depth < 1:
            raise InputError(f"--depth: expected an integer >= 1, got {args.depth}")
        if not args.runs:
            raise InputError("--depth needs run files")
        import os

        from ..io import RunFileReader, run_file_arguments
        from ..selection import depth_pool
        # the files' columns, as `select` reads them (no frame of Python strings per run)
        runs = RunFileReader(run_file_arguments(args.runs), os.cpu_count() or 1)
        return depth_pool(runs, args.depth)[["qid", "docno"]]
    from ..selection import JudgingSession
    with JudgingSession(args.session, create=False) as session:
        return session.selector.weights()[["qid", "docno"]]


def _cmd_llm_judge(args: argparse.Namespace) -> int:
    import sys
    from pathlib import Path

    from .._output import check_output_file
    from .._progress import stderr_is_terminal
    from .._validation import InputError
    from ..judges.llm import UMBRELA_PATTERN, LLMJudge, PromptTemplate
    from ..web.docs import open_collection

    out = check_output_file(args.out)
    if out.suffix not in (".tsv", ".jsonl"):
        raise InputError(f"--out {args.out}: expected a .tsv or .jsonl file")
    failures = Path(args.failures) if args.failures else out.with_name(out.stem + ".failures.tsv")
    if args.label_pattern and not args.prompt:
        raise InputError("--label-pattern goes with --prompt (the default prompt asks for '##final score: N')")
    settings = dict(max_passage_chars=args.max_passage_chars if args.max_passage_chars > 0 else None,
                    max_tokens=args.max_tokens, pattern=args.label_pattern or UMBRELA_PATTERN)
    template = PromptTemplate.from_file(args.prompt, **settings) if args.prompt else PromptTemplate(**settings)
    pairs = _pairs(args)
    col = open_collection(args.docs, args.topics)
    if not col.topics:
        raise InputError("no topics: give --topics (or an irds: --docs with queries)")
    judge = LLMJudge(args.model, args.cache, base_url=args.base_url, api_key_env=args.api_key_env, template=template,
                     concurrency=args.concurrency, retries=args.retries, timeout=args.timeout,
                     logprobs=not args.no_logprobs, rel=args.rel, retry_malformed=args.retry_malformed)
    progress = stderr_is_terminal() if args.progress is None else args.progress
    res = judge.judge(pairs, col.topics, col.document, progress=progress)
    res.write(out)
    if len(res.failures):
        from .._output import atomic_write
        atomic_write(failures, res.failures.to_csv(sep="\t", index=False).encode())
    print(res.summary_text())
    print(f"wrote {len(res.labels)} labels to {out}" +
          (f"; {len(res.failures)} pairs without a label in {failures}" if len(res.failures) else ""))
    if len(res.failures):
        print(f"pyterrier-noise: warning: {len(res.failures)} of {len(pairs)} pairs have no label "
              f"({res.summary['malformed']} malformed answers, {res.summary['failed']} without an answer: "
              f"{res.summary['failure_reasons'] or 'none'}); rerun to retry failed requests "
              f"(--retry-malformed asks again for malformed answers)", file=sys.stderr)
        return 1
    return 0
