"""Worker pools that die with their parent (pyterrier_noise._pool), and eval's vectorised TSV writer."""
from __future__ import annotations

import ctypes
import math
import os
import random
import signal
import subprocess
import sys
import time
from pathlib import Path

import numpy as np
import pytest

from pyterrier_noise._pool import worker_pool
from pyterrier_noise.cli.eval import _tsv_lines   # the writer alone: no evaluation gives these bit patterns
from pyterrier_noise.measures import EvaluationArrays

ROOT = Path(__file__).resolve().parents[2]
LINUX = sys.platform.startswith("linux")


def _death_signal(_: int) -> int:
    """The worker's parent-death signal, read back with prctl(PR_GET_PDEATHSIG)."""
    sig = ctypes.c_int(0)
    ctypes.CDLL(None).prctl(2, ctypes.byref(sig), 0, 0, 0)
    return sig.value


def test_pool_maps_in_order():
    with worker_pool(2) as pool:
        assert pool.map(abs, range(-5, 5), chunksize=1) == [abs(i) for i in range(-5, 5)]


def _item_of_state(i: int) -> int:
    from pyterrier_noise._pool import worker_state
    return worker_state()[i]


def test_workers_are_given_the_state_the_pool_was_opened_with():
    from pyterrier_noise._pool import worker_state
    state = [i * i for i in range(50)]
    with worker_pool(2, state=state) as pool:
        assert pool.map(_item_of_state, range(50), chunksize=5) == state
    with pytest.raises(RuntimeError, match="not in a worker"):
        worker_state()   # the process that opened the pool keeps nothing


@pytest.mark.skipif(not LINUX, reason="PR_SET_PDEATHSIG is Linux's")
def test_workers_ask_to_be_killed_with_their_parent():
    with worker_pool(2) as pool:
        assert set(pool.map(_death_signal, range(4), chunksize=1)) == {int(signal.SIGKILL)}
    # the pool restored this process's own SIGTERM handling
    assert signal.getsignal(signal.SIGTERM) in (signal.SIG_DFL, None)


class _Probe:
    """Registered with multiprocessing.util.register_after_fork: runs in each child right after fork,
    before the pool's initializer, and records the SIGTERM disposition the child inherited."""

    def __init__(self, path: Path) -> None:
        self.path = path

    def __call__(self) -> None:
        handler = signal.getsignal(signal.SIGTERM)
        blocked = signal.SIGTERM in signal.pthread_sigmask(signal.SIG_BLOCK, [])
        with open(self.path, "a") as f:
            f.write(("default" if handler == signal.SIG_DFL else "handled") + ("-blocked" if blocked else "") + "\n")


@pytest.mark.skipif(not LINUX, reason="fork start method")
def test_workers_are_forked_with_sigterm_blocked(tmp_path):
    # A worker that inherited a Python-level SIGTERM handler lost pool.terminate()'s SIGTERM when it
    # arrived before the initializer reset the handler: the worker lived on and join() hung (seen in
    # the test above on a loaded machine).  Forked with SIGTERM blocked, such an early SIGTERM waits
    # for the initializer, which sets the default action and unblocks it.
    from multiprocessing.util import register_after_fork
    probe = _Probe(tmp_path / "dispositions")
    register_after_fork(probe, _Probe.__call__)
    try:
        with worker_pool(2) as pool:
            assert pool.map(_sigterm_of_worker, range(4), chunksize=1) == ["default"] * 4
    finally:
        del probe   # the registry holds it weakly
    forked = (tmp_path / "dispositions").read_text().split()
    assert len(forked) == 2 and all(d.endswith("-blocked") for d in forked), forked
    assert signal.SIGTERM not in signal.pthread_sigmask(signal.SIG_BLOCK, [])   # unblocked here again


def _sigterm_of_worker(_: int) -> str:
    """In a worker, once its initializer ran: SIGTERM's disposition, and whether it is blocked."""
    blocked = signal.SIGTERM in signal.pthread_sigmask(signal.SIG_BLOCK, [])
    return ("default" if signal.getsignal(signal.SIGTERM) == signal.SIG_DFL else "handled") + ("-blocked" if blocked else "")


def _python(script: str) -> subprocess.CompletedProcess:
    env = dict(os.environ, PYTHONPATH=str(ROOT))
    return subprocess.run([sys.executable, "-c", script], capture_output=True, text=True, env=env, timeout=60)


_STOPPING = """
import multiprocessing, os, signal, threading, time
from pyterrier_noise._pool import worker_pool
class Stop(Exception):
    pass
def stop(signum, frame):
    raise Stop
def tell_parent(parent):
    os.kill(parent, signal.SIGTERM)
signal.signal(signal.SIGTERM, stop)
"""


@pytest.mark.skipif(not LINUX, reason="fork start method")
def test_sigterm_while_the_pool_works_leaves_no_replacement_worker():
    # The workers are killed on SIGTERM; the pool's worker handler used to start replacements,
    # which lived until the process exited and then had to be terminated and joined there (a
    # replacement forked while SIGTERM was ignored missed that SIGTERM, and the exit hung).
    got = _python(_STOPPING + """
threading.Timer(0.5, os.kill, (os.getpid(), signal.SIGTERM)).start()
try:
    with worker_pool(2) as pool:
        pool.map(time.sleep, [3] * 4, chunksize=1)
except Stop:
    time.sleep(0.5)   # the worker handler looks again within 0.1 s
    print(len(multiprocessing.active_children()))
""")
    assert (got.returncode, got.stdout.split(), got.stderr) == (0, ["0"], "")


@pytest.mark.skipif(not LINUX, reason="fork start method")
def test_sigterm_while_the_pool_starts_reaches_the_programs_handler():
    # The first of eight workers sends SIGTERM while the pool may still be forking the others;
    # it used to end the process at SIGTERM's default action, before any handler could remove
    # a command's partial outputs.
    got = _python(_STOPPING + """
try:
    with worker_pool(8, initializer=tell_parent, initargs=(os.getpid(),)) as pool:
        time.sleep(30)
    print("not stopped")
except Stop:
    print("stopped", len(multiprocessing.active_children()))
""")
    assert (got.returncode, got.stdout.split(), got.stderr) == (0, ["stopped", "0"], "")


# ------------------------------------------------------------------------------------------------
# the TSV writer: numpy's float64 text equals Python's repr (the old writer's _fmt)

def test_vectorised_tsv_equals_the_row_loop():
    rng = np.random.default_rng(0)
    bits = rng.integers(0, 2 ** 63, size=20_000, dtype=np.int64).view(np.float64)   # any exponent
    special = [0.0, -0.0, 1.0, 0.1, 1e16, 1e-5, 1e-4, 9.999999999999999e15, 123456789012345678.0,
               math.inf, -math.inf, math.nan, 5e-324, 1.7976931348623157e308, 2 / 3]
    values = np.concatenate([bits[np.isfinite(bits)], special, rng.random(5000)])
    names, measures = ["run a", "b\u00e9", "7"], ["RBP(p=0.8)", "AP"]
    n_topics = len(values) // 6
    values = values[:6 * n_topics]
    qids = [str(t) for t in range(n_topics)]
    res = EvaluationArrays(names, measures, qids, values.reshape(3, 2, n_topics),
                           values[::-1].reshape(3, 2, n_topics))
    # the former writer, one row at a time (cli/eval.py before the column-wise one): rows by run,
    # then measure, then topic; a value is its shortest round-trip repr, empty when missing
    def _fmt(x: float) -> str:
        return "" if math.isnan(x) else repr(float(x))

    old = "".join(f"{names[r]}\t{qids[t]}\t{measures[m]}\t{_fmt(res.value[r, m, t])}\t{_fmt(res.residual[r, m, t])}\n"
                  for r in range(3) for m in range(2) for t in range(n_topics))
    assert _tsv_lines(res) == old
    assert _tsv_lines(EvaluationArrays(names, measures, [], np.empty((3, 2, 0)), np.empty((3, 2, 0)))) == ""


# ------------------------------------------------------------------------------------------------
# SIGKILL / SIGTERM of `eval` while its pool reads the runs: no worker survives


@pytest.fixture(scope="module")
def big_runs(tmp_path_factory):
    """8 plain run files of 60,000 lines (about 20 MB, enough for the engine's process pool) and qrels."""
    d = tmp_path_factory.mktemp("pool")
    rng = np.random.default_rng(1)
    topics, depth = 60, 1000
    qid = np.repeat(np.arange(1, topics + 1), depth).astype(str)
    rank = np.tile(np.arange(1, depth + 1), topics).astype(str)
    runs = d / "runs"
    runs.mkdir()
    for r in range(8):
        doc = np.char.add("doc", rng.integers(0, 50_000, size=(topics, depth)).argsort(axis=1).ravel().astype(str))
        score = np.tile(np.linspace(100, 1, depth), topics).round(6).astype(str)
        lines = np.char.add(np.char.add(np.char.add(qid, " Q0 "), doc), " ")
        lines = np.char.add(np.char.add(np.char.add(lines, rank), " "), np.char.add(score, f" run{r}"))
        (runs / f"run{r}").write_text("\n".join(lines.tolist()) + "\n")
    qrels = d / "qrels.txt"
    qrels.write_text("".join(f"{t} 0 doc{k} {k % 3}\n" for t in range(1, topics + 1) for k in range(0, 2000, 7)))
    return qrels, runs


def _group(pgid: int) -> list[int]:
    """Live (not zombie) processes of a process group, from /proc."""
    out = []
    for p in Path("/proc").iterdir():
        if not p.name.isdigit():
            continue
        try:
            stat = (p / "stat").read_text()
        except OSError:
            continue
        fields = stat[stat.rindex(")") + 2:].split()
        if int(fields[2]) == pgid and fields[0] != "Z":
            out.append(int(p.name))
    return out


def _start(qrels: Path, runs: Path, out: Path) -> subprocess.Popen:
    """The robustness command, whose forked workers draw the plots while it writes the tables."""
    env = dict(os.environ, PYTHONPATH=str(ROOT))
    return subprocess.Popen([sys.executable, "-m", "pyterrier_noise.cli", "robustness", str(qrels), str(runs),
                             "-m", "AP", "--model", "random", "--tpr", "0.9", "--fpr", "0.1", "--replicates", "20",
                             "--out", str(out), "--quiet"],
                            stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL,
                            env=env, start_new_session=True)   # its own process group: pgid = pid


def _wait_for_workers(proc: subprocess.Popen, limit: float = 120.0) -> bool:
    end = time.monotonic() + limit
    while time.monotonic() < end and proc.poll() is None:
        if len(_group(proc.pid)) > 1:
            return True
        time.sleep(0.01)
    return False


def _survivors(pgid: int, deadline: float = 2.0) -> list[int]:
    """Members of the group still alive ``deadline`` seconds after the parent's death."""
    end = time.monotonic() + deadline
    while True:
        alive = _group(pgid)
        if not alive or time.monotonic() >= end:
            return alive
        time.sleep(0.05)


@pytest.mark.slow
@pytest.mark.skipif(not LINUX, reason="reads /proc")
@pytest.mark.parametrize("signum", [signal.SIGKILL, signal.SIGTERM, signal.SIGINT])
def test_killing_a_command_leaves_no_worker(big_runs, tmp_path, signum):
    qrels, runs = big_runs
    rng = random.Random(int(signum))
    saw_workers = 0
    for trial in range(4):
        proc = _start(qrels, runs, tmp_path / f"out{trial}")
        try:
            if trial < 3:   # while the pool is working, at a random point of it
                saw_workers += _wait_for_workers(proc)
                time.sleep(rng.uniform(0.0, 0.4))
            else:           # at a random point from start-up on
                time.sleep(rng.uniform(0.0, 2.0))
            if proc.poll() is None:
                os.kill(proc.pid, signum)
            proc.wait(timeout=30)
            assert _survivors(proc.pid) == [], f"trial {trial}: workers outlived their parent"
        finally:
            if proc.poll() is None:
                proc.kill()
            for pid in _group(proc.pid):   # never leave anything behind, even when the assertion fails
                os.kill(pid, signal.SIGKILL)
    assert saw_workers >= 1   # the command did fork its plot workers


@pytest.mark.slow
@pytest.mark.skipif(not LINUX, reason="reads /proc")
def test_eval_reads_in_threads_and_starts_no_process(big_runs):
    """eval reads the run files with Arrow in threads: its process group never holds a second process."""
    qrels, runs = big_runs
    env = dict(os.environ, PYTHONPATH=str(ROOT))
    proc = subprocess.Popen([sys.executable, "-m", "pyterrier_noise.cli", "eval", str(qrels), str(runs), "-m", "AP"],
                            stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, env=env, start_new_session=True)
    most = 0
    try:
        while proc.poll() is None:
            most = max(most, len(_group(proc.pid)))
            time.sleep(0.01)
    finally:
        if proc.poll() is None:
            proc.kill()
    assert proc.returncode == 0
    assert most <= 1
