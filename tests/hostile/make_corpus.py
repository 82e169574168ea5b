"""The hostile corpus: small bad and odd inputs for every command, generated deterministically.

``make_corpus(root)`` writes the files under ``root`` and returns the invocations to try, each an
:class:`Invocation` (a command line, what kind of input it is, what must happen).  ``outcome()``
runs one in-process through ``pyterrier_noise.cli.main`` and classifies what happened:

* ``clear``    -- a bad input refused: exit status 2, a ``pyterrier-noise: error:`` sentence that
  matches the invocation's ``where`` (the file and line, the column and row, the option or path);
* ``equal``    -- an odd input accepted: exit status 0 and, for ``eval``, every value equal (1e-9)
  to pytrec_eval's on the files as trec_eval parses them;
* ``silent``   -- a bad input accepted, or an odd one whose values differ;
* ``unclear``  -- a traceback, another exit status, or an error that does not say where.

``python tests/hostile/make_corpus.py`` prints the counts (docs/reliability.md quotes them).
"""
from __future__ import annotations

import contextlib
import gzip
import io
import json
import os
import re
import sys
import tempfile
import traceback
import warnings
from dataclasses import dataclass, field
from pathlib import Path

#: three topics, eight documents; labels graded 0-2
GOOD_QRELS = "".join(f"{q} 0 d{d} {(q + d) % 3}\n" for q in (1, 2, 3) for d in range(1, 9))
#: pending reasons: the cases another part of the work is fixing (the test marks them xfail)
#: the measures an accepted input is compared on
COMPARED = ["-m", "AP", "-m", "nDCG", "-m", "P@5", "-m", "RR", "--per-query", "--format", "json"]


def _run(seed: int, tag: str = "r") -> str:
    lines = []
    for q in (1, 2, 3):
        docs = sorted(range(1, 9), key=lambda d: ((d * 7 + q * 3 + seed * 5) % 11, d))
        for rank, d in enumerate(docs, 1):
            lines.append(f"{q} Q0 d{d} {rank} {10 - rank + seed / 10:.2f} {tag}\n")
    return "".join(lines)


@dataclass
class Invocation:
    """One command line over the corpus and what must happen."""

    case: str                      # the input's name (one input is tried by several commands)
    family: str                    # runs, qrels, sessions, measures, numbers, outputs
    kind: str                      # bad (must be refused), odd (must be accepted), either
    argv: list[str]
    where: str = ""                # regex the error must match (file and line, column and row, option)
    pending: str | None = None     # a reason if another part's fix is still in progress
    compare: tuple[str, str] | None = None   # (qrels, run) to check against pytrec_eval
    needs_writable_check: bool = False
    extra: dict = field(default_factory=dict)


def _pending(pending: str | tuple | None, command: str) -> str | None:
    """A pending reason for every command, or (reason, the commands it concerns)."""
    if isinstance(pending, tuple):
        return pending[0] if command in pending[1] else None
    return pending


def _write(root: Path, name: str, data: str | bytes) -> str:
    path = root / name
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_bytes(data.encode("utf-8") if isinstance(data, str) else data)
    return str(path)


def _bad_line(good: str, line: str, at: int = 3) -> str:
    rows = good.splitlines(keepends=True)
    return "".join(rows[:at - 1] + [line] + rows[at - 1:])


def make_corpus(root: str | Path) -> list[Invocation]:
    """Write the corpus under ``root`` and return every invocation to try."""
    root = Path(root)
    root.mkdir(parents=True, exist_ok=True)
    Q = _write(root, "good/qrels.txt", GOOD_QRELS)
    G = [_write(root, f"good/run{i}", _run(i, f"run{i}")) for i in (1, 2, 3)]
    out = str(root / "out")
    inv: list[Invocation] = []

    def commands_over_run(run: str, n: int) -> list[list[str]]:
        """Every command that reads a run file (fresh outputs per invocation)."""
        o = f"{out}/{Path(run).name}-{n}"
        return [["eval", Q, run, *G, "-m", "AP"],
                ["robustness", Q, run, *G, "--model", "random", "--tpr", "0.9", "--fpr", "0.1", "--replicates", "2",
                 "-m", "AP", "--no-plots", "--quiet", "--out", o + "-robustness"],
                ["select", Q, "--budget", "5", "--quiet", "--out", o + "-select", run, *G],
                ["report", Q, run, *G, "--out", o + "-report"],
                ["phi-match", Q, run, *G, "-m", "AP", "--quiet", "--grid", "0.5,0.8"],
                ["ties", run],
                ["band", "--rho", "2", run, "--out", o + "-band"],
                ["round", "--decimals", "1", run, "--out", o + "-round"],
                ["judge", "--session", o + "-judge.sqlite", "--qrels", Q, "--budget", "3", "--quiet", run, *G]]

    def commands_over_qrels(qrels: str, n: int) -> list[list[str]]:
        o = f"{out}/{Path(qrels).name}-{n}"
        return [["eval", qrels, *G, "-m", "AP"],
                ["perturb", qrels, "--model", "random", "--tpr", "0.9", "--fpr", "0.1", "--replicates", "2", "--quiet",
                 "--out", o + "-perturb"],
                ["robustness", qrels, *G, "--model", "random", "--tpr", "0.9", "--fpr", "0.1", "--replicates", "2",
                 "-m", "AP", "--no-plots", "--quiet", "--out", o + "-robustness"],
                ["select", qrels, "--budget", "5", "--quiet", "--out", o + "-select", *G],
                ["report", qrels, *G, "--out", o + "-report"],
                ["phi-match", qrels, *G, "-m", "AP", "--quiet", "--grid", "0.5,0.8"],
                ["judge", "--session", o + "-judge.sqlite", "--qrels", qrels, "--budget", "3", "--quiet", *G]]

    # ---- runs: a bad line 3 (two good lines before it) -----------------------------------------
    good = _run(1, "odd")
    bad_runs = {
        "run_fields": ("bad", "1 Q0 d9 3 7.5\n", None),
        "run_score_word": ("bad", "1 Q0 d9 3 abc odd\n", None),
        "run_rank_word": ("bad", "1 Q0 d9 x 7.5 odd\n", None),
        "run_score_nan": ("bad", "1 Q0 d9 3 nan odd\n", None),
        "run_score_inf": ("bad", "1 Q0 d9 3 inf odd\n", None),
        "run_score_underscore": ("either", "1 Q0 d9 3 1_000 odd\n", None),
        "run_docno_latin1": ("either", b"1 Q0 d\xe99 3 7.5 odd\n", None),
        "run_docno_nul": ("either", b"1 Q0 d\x009 3 7.5 odd\n", None),
        "run_docno_quote": ("either", '1 Q0 "d9 3 7.5 odd\n', None),
        "run_rank_huge": ("either", "1 Q0 d9 99999999999999999999 7.5 odd\n", None),
    }
    for name, (kind, line, pending) in bad_runs.items():
        data = _bad_line(good, line) if isinstance(line, str) else _bad_line(good, line.decode("latin-1")).encode(
            "latin-1")
        path = _write(root, f"runs/{name}", data)
        for i, argv in enumerate(commands_over_run(path, 0)):
            compared = argv[0] == "eval" and kind == "either"
            inv.append(Invocation(name, "runs", kind, argv + COMPARED if compared else argv,
                                  where=rf"{re.escape(name)}\b.*line 3\b", pending=_pending(pending, argv[0]),
                                  compare=(Q, path) if compared else None))
    for name, kind, data, where in [
            ("run_empty", "bad", "", r"run_empty\b.*empty"),
            ("run_duplicate_doc", "bad", _bad_line(good, "1 Q0 d1 3 7.5 odd\n"), r"run_duplicate_doc\b.*qid '1'.*'d1'"),
            ("run_not_gzip.gz", "either", good, r"run_not_gzip\.gz")]:   # plain text named .gz: read as text
        path = _write(root, f"runs/{name}", data)
        for argv in commands_over_run(path, 0):
            compared = argv[0] == "eval" and kind == "either"
            inv.append(Invocation(name, "runs", kind, argv + COMPARED if compared else argv, where=where,
                                  compare=(Q, path) if compared else None))

    # ---- qrels -----------------------------------------------------------------------------------
    bad_qrels = {
        "qrels_fields": ("bad", "1 0 d9\n", None),
        "qrels_label_word": ("bad", "1 0 d9 yes\n", None),
        "qrels_label_nan": ("bad", "1 0 d9 nan\n", None),
        "qrels_label_fraction": ("either", "1 0 d9 1.5\n", None),   # nDCG: 1.5 not truncated
        # d1 of topic 1 judged 2 on line 3 and again later: the last kept, as pytrec_eval does, with a warning
        "qrels_conflict": ("either", "1 0 d1 2\n", None),
    }
    for name, (kind, line, pending) in bad_qrels.items():
        path = _write(root, f"qrels/{name}", _bad_line(GOOD_QRELS, line))
        where = rf"{re.escape(name)}\b.*line 3\b" if name != "qrels_conflict" else r"qrels_conflict\b.*'d1'"
        for argv in commands_over_qrels(path, 0):
            compared = argv[0] == "eval" and kind == "either"
            inv.append(Invocation(name, "qrels", kind, [argv[0], path, G[0], *COMPARED] if compared else argv,
                                  where=where, pending=_pending(pending, argv[0]),
                                  compare=(path, G[0]) if compared else None))
    path = _write(root, "qrels/qrels_empty", "")
    for argv in commands_over_qrels(path, 0):
        inv.append(Invocation("qrels_empty", "qrels", "bad", argv, where=r"qrels_empty\b.*empty"))

    # ---- odd inputs trec_eval accepts: values must equal pytrec_eval's ------------------------
    odd = {
        "odd_tabs": (GOOD_QRELS.replace(" ", "\t"), good.replace(" ", "\t")),
        "odd_crlf": (GOOD_QRELS.replace("\n", "\r\n"), good.replace("\n", "\r\n")),
        "odd_iteration_half": (GOOD_QRELS.replace(" 0 d", " 0.5 d"), good),
        "odd_scientific": (GOOD_QRELS, "".join(
            f"{q} Q0 d{d} {d} {s} odd\n" for q in (1, 2, 3)
            for d, s in zip(range(1, 9), ["1e-3", "2.5E+2", "-1e-5", "3E0", "1.5e-300", "7e1", "0.0", "-2.5e2"]))),
        "odd_spaces": (GOOD_QRELS.replace(" ", "   "), "".join("  " + x.replace(" ", "  ") for x in good.splitlines(
            keepends=True))),
        "odd_ties": (GOOD_QRELS, "".join(f"{q} Q0 d{d} {d} {1 + (d > 4)} odd\n" for q in (1, 2, 3)
                                          for d in range(1, 9))),
    }
    for name, (qtext, rtext) in odd.items():
        qp = _write(root, f"odd/{name}.qrels", qtext)
        rp = _write(root, f"odd/{name}", rtext)
        inv.append(Invocation(name, "odd", "odd", ["eval", qp, rp, *COMPARED], compare=(qp, rp)))
        for argv in (["select", qp, "--budget", "5", "--quiet", "--out", f"{out}/{name}-select", rp],
                     ["band", "--rho", "2", rp, "--out", f"{out}/{name}-band"], ["ties", rp]):
            inv.append(Invocation(name, "odd", "odd", argv))
    gz = root / "odd" / "odd_gzip.gz"
    gz.write_bytes(gzip.compress(good.encode(), mtime=0))
    inv.append(Invocation("odd_gzip", "odd", "odd", ["eval", Q, str(gz), *COMPARED], compare=(Q, str(gz))))

    # ---- session files --------------------------------------------------------------------------
    for name, data in [("session_garbage.sqlite", bytes(range(256)) * 40),
                       ("session_text.sqlite", "not a session\n" * 50),
                       ("session_header_only.sqlite", b"SQLite format 3\x00" + b"\xff" * 4080)]:
        path = _write(root, f"sessions/{name}", data)
        inv.append(Invocation(name, "sessions", "bad", ["judge", "--session", path, "--qrels", Q, "--budget", "2",
                                                          "--quiet", *G], where=re.escape(name)))

    # ---- measures ---------------------------------------------------------------------------------
    for m, where, pending in [("RBP(p=0.8,foo=1)", r"foo", None), ("nDCG(cutof=5)", r"cutof", None),
                              ("RBP(p=0.8,max_rell=2)", r"max_rell", None), ("RBP(p=1.5)", r"\bp\b", None),
                              ("NoSuchMeasure", r"NoSuchMeasure", None), ("RBP(p=abc)", r"abc|\bp\b", None),
                              ("AP@-3", r"AP@-3|cutoff|-3", None)]:
        inv.append(Invocation(f"measure {m}", "measures", "bad", ["eval", Q, *G, "-m", m], where=where,
                              pending=pending))

    # ---- numbers ----------------------------------------------------------------------------------
    o = f"{out}/numbers"
    for argv, where in [
            (["perturb", Q, "--model", "random", "--tpr", "0.9", "--fpr", "0.1", "--replicates", "0", "--out", o + "1"],
             r"--replicates"),
            (["perturb", Q, "--model", "random", "--tpr", "1.5", "--fpr", "0.1", "--out", o + "2"], r"tpr"),
            (["perturb", Q, "--model", "removal", "--fraction", "-0.2", "--out", o + "3"], r"fraction"),
            (["robustness", Q, *G, "--model", "random", "--tpr", "0.9", "--fpr", "0.1", "--replicates", "2", "-m", "AP",
              "--alpha", "2", "--no-plots", "--quiet", "--out", o + "4"], r"alpha"),
            (["band", "--rho", "0.5", G[0], "--out", o + "5"], r"rho"),
            (["band", "--rho", "abc", G[0], "--out", o + "6"], r"rho"),
            (["round", "--decimals", "400", G[0], "--out", o + "7"], r"\b308\b"),
            (["round", "--decimals", "-400", G[0], "--out", o + "8"], r"\b308\b"),
            (["round", "--quantum", "1e-320", G[0], "--out", o + "9"], r"quantum.*1e-308"),
            (["round", "--quantum", "abc", G[0], "--out", o + "10"], r"quantum"),
            (["round", "--quantum", "-1", G[0], "--out", o + "11"], r"quantum"),
            (["round", "--sig-digits", "0", G[0], "--out", o + "12"], r"sig_digits|sig-digits"),
            (["select", Q, "--budget", "0", "--quiet", "--out", o + "13", *G], r"--budget"),
            (["select", Q, "--budget", "5", "-m", "RBP(p=1.5)", "--quiet", "--out", o + "14", *G], r"RBP\(p=1\.5\)"),
            (["pairwise", "simulate", Q, "--accuracy", "2", "--out", o + "15.csv"], r"accuracy"),
            (["phi-match", Q, *G, "-m", "AP", "--quiet", "--grid", "0,2"], r"grid|phi")]:
        inv.append(Invocation(" ".join(argv[:1] + [a for a in argv[1:] if a.startswith("--")][:2]), "numbers", "bad",
                              argv, where=where))

    # ---- outputs: a path under a file, and a directory nobody can write -------------------------
    blocker = _write(root, "outputs/a-file", "this is a file\n")
    pairs = _write(root, "outputs/pairs.csv", "")
    readonly = _readonly_dir(root)
    for label, parent in (("under a file", blocker), ("read-only directory", readonly)):
        for argv, dest in [
                (["perturb", Q, "--model", "random", "--tpr", "0.9", "--fpr", "0.1", "--replicates", "2", "--quiet", "--out"],
                 "perturb"),
                (["robustness", Q, *G, "--model", "random", "--tpr", "0.9", "--fpr", "0.1", "--replicates", "2", "-m", "AP",
                  "--no-plots", "--quiet", "--out"], "robustness"),
                (["select", Q, "--budget", "5", "--quiet", *G, "--out"], "select"),
                (["report", Q, *G, "--out"], "report"),
                (["demo", "--out"], "demo"),
                (["band", "--rho", "2", G[0], "--out"], "run.band"),
                (["round", "--decimals", "1", G[0], "--out"], "run.round"),
                (["pairwise", "simulate", Q, "--out"], "crowd.csv"),
                (["pairwise", "aggregate", pairs, "--out"], "crowd.qrels"),
                (["phi-match", Q, *G, "-m", "AP", "--quiet", "--grid", "0.5,0.8", "--plot"], "phi.png"),
                (["judge", "--qrels", Q, "--budget", "2", "--quiet", *G, "--session"], "s.sqlite")]:
            path = f"{parent}/{dest}"
            inv.append(Invocation(f"{argv[0]} {label}", "outputs", "bad", argv + [path],
                                  where=re.escape(str(Path(parent))), extra={"label": label}))
    return inv


def _readonly_dir(root: Path) -> str:
    """A directory nobody can create files in: mode 0555, or, for root (who ignores modes), /proc/self."""
    if hasattr(os, "geteuid") and os.geteuid() == 0:
        return "/proc/self"
    d = root / "outputs" / "readonly"
    d.mkdir(parents=True, exist_ok=True)
    d.chmod(0o555)
    return str(d)


# ---------------------------------------------------------------------------------------------
# running an invocation

def run(argv: list[str]) -> tuple[int | None, str, str]:
    """``pyterrier_noise.cli.main(argv)`` in-process: (status or None for a traceback, stdout, stderr)."""
    from pyterrier_noise.cli import main
    out, err = io.StringIO(), io.StringIO()

    def show(message, category, filename, lineno, file=None, line=None):   # as Python prints a warning
        sys.stderr.write(warnings.formatwarning(message, category, filename, lineno, line))

    with contextlib.redirect_stdout(out), contextlib.redirect_stderr(err), warnings.catch_warnings():
        warnings.showwarning = show   # printed, even under pytest (which records warnings instead)
        warnings.simplefilter("default")
        try:
            status: int | None = main(argv)
        except SystemExit as exc:      # argparse's usage errors
            status = exc.code if isinstance(exc.code, int) else 2
        except BaseException:          # a traceback: the worst answer
            traceback.print_exc(file=err)
            status = None
    return status, out.getvalue(), err.getvalue()


def _atol(text: str) -> int:
    """C's atol, as trec_eval reads a relevance label: the leading integer, 0 if none."""
    m = re.match(r"\s*([+-]?\d+)", text)
    return int(m.group(1)) if m else 0


def _atof(text: str) -> float:
    """C's atof, as trec_eval reads a score: the longest leading number."""
    m = re.match(r"\s*([+-]?(\d+\.?\d*|\.\d+)([eE][+-]?\d+)?|[+-]?(inf|nan))", text, re.I)
    return float(m.group(1)) if m else 0.0


def trec_eval_parse(qrels: str, run: str) -> tuple[dict, dict]:
    """The two files as trec_eval reads them (whitespace fields; atol labels; atof scores)."""
    def lines(path: str) -> list[list[str]]:
        raw = Path(path).read_bytes()
        if raw[:2] == b"\x1f\x8b":
            raw = gzip.decompress(raw)
        return [x.split() for x in raw.decode("latin-1").splitlines() if x.strip()]
    q: dict = {}
    for f in lines(qrels):
        q.setdefault(f[0], {})[f[2]] = _atol(f[3])
    r: dict = {}
    for f in lines(run):
        r.setdefault(f[0], {})[f[2]] = _atof(f[4])
    return q, r


PYTREC = {"AP": "map", "nDCG": "ndcg", "P@5": "P_5", "RR": "recip_rank"}


def _compare(inv: Invocation, stdout: str) -> str:
    """'' if every per-query value equals pytrec_eval's on the trec_eval parse, else what differs."""
    import pytrec_eval
    q, r = trec_eval_parse(*inv.compare)
    argv = inv.argv
    if "--format" not in argv:
        argv = argv + ["--per-query", "--format", "json"]
        status, stdout, _ = run(argv)
    ms = [argv[i + 1] for i, a in enumerate(argv) if a == "-m"]
    ref = pytrec_eval.RelevanceEvaluator(q, {PYTREC[m] for m in ms}).evaluate(r)
    got = json.loads(stdout)
    diffs = []
    for rec in got:
        if rec["qid"] == "all" or rec["measure"] not in PYTREC or rec["run"] != Path(inv.compare[1]).name.removesuffix(
                ".gz"):
            continue
        want = ref.get(rec["qid"], {}).get(PYTREC[rec["measure"]])
        if want is None or rec["value"] is None or abs(rec["value"] - want) > 1e-9:
            diffs.append(f"{rec['qid']} {rec['measure']}: {rec['value']} vs pytrec_eval {want}")
    return "; ".join(diffs)


def outcome(inv: Invocation) -> tuple[str, str]:
    """Classify one invocation: clear, equal, silent or unclear, with what was seen."""
    status, stdout, stderr = run(inv.argv)
    if status is None or "Traceback" in stderr:
        return "unclear", stderr[-600:]
    if "encountered in" in stderr or "RuntimeWarning" in stderr:   # numpy's own words, not a sentence
        return "unclear", stderr.strip()[-400:]
    if status == 2:
        if inv.kind == "odd":
            return "silent", f"an odd input trec_eval accepts was refused: {stderr.strip()[-300:]}"
        ok = re.search(inv.where, stderr) and "pyterrier-noise: error:" in stderr
        return ("clear" if ok else "unclear"), stderr.strip()[-400:]
    if status != 0:
        return "unclear", f"exit status {status}: {stderr.strip()[-300:]}"
    if inv.kind == "bad":
        return "silent", f"accepted: {stdout.strip()[-200:]}"
    if inv.compare is not None:
        diff = _compare(inv, stdout)
        return ("silent", diff) if diff else ("equal", "")
    return "equal", ""


def main() -> int:
    """Generate the corpus in a temporary directory, run every invocation, print the counts."""
    with tempfile.TemporaryDirectory() as d:
        invs = make_corpus(d)
        counts: dict[str, int] = {}
        pending: dict[str, int] = {}
        for inv in invs:
            what, detail = outcome(inv)
            counts[what] = counts.get(what, 0) + 1
            if what in ("silent", "unclear"):
                pending[inv.pending or "no fix named"] = pending.get(inv.pending or "no fix named", 0) + 1
                print(f"{what:8s} {inv.case}: {' '.join(inv.argv[:1])}: {detail.splitlines()[-1] if detail else ''}",
                      file=sys.stderr)
        inputs = len({(i.family, i.case) for i in invs})
        print(f"inputs tried: {inputs} ({len(invs)} invocations)")
        print(f"clear errors (bad inputs refused with file and line, column and row, option or path): "
              f"{counts.get('clear', 0)}")
        print(f"accepted odd inputs equal to pytrec_eval / accepted: {counts.get('equal', 0)}")
        print(f"silent cases left: {counts.get('silent', 0)}")
        print(f"unclear errors left: {counts.get('unclear', 0)}")
        for reason, n in sorted(pending.items()):
            print(f"  of which {reason}: {n}")
    return 0


if __name__ == "__main__":
    sys.path.insert(0, str(Path(__file__).resolve().parents[2]))
    sys.exit(main())
