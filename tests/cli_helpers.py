"""Shared by the command-line tests: run ``pyterrier-noise`` in-process and capture what it prints."""
from __future__ import annotations

import io
import os
import subprocess
import sys
from contextlib import redirect_stderr, redirect_stdout
from pathlib import Path

from pyterrier_noise.cli import main


def run_cli(*argv: object) -> tuple[int, str, str]:
    """(exit status, stdout, stderr) of ``pyterrier-noise ARGV``; argparse usage errors give their code."""
    out, err = io.StringIO(), io.StringIO()
    with redirect_stdout(out), redirect_stderr(err):
        try:
            status = main([str(a) for a in argv])
        except SystemExit as exc:   # argparse usage errors
            status = exc.code
    return status, out.getvalue(), err.getvalue()


#: what :func:`run_as_program` prints on stderr at exit when the garbage collector was off and frozen
NO_GC_AT_EXIT = "gc enabled at exit: False frozen: True"


def run_as_program(*argv: object) -> subprocess.CompletedProcess:
    """``pyterrier-noise ARGV`` run as the console script runs it (``main()`` without arguments) in a
    fresh process of this checkout; at exit it says on stderr whether the garbage collector was on
    and whether it was frozen (:data:`NO_GC_AT_EXIT` for the bounded commands)."""
    args = [str(a) for a in argv]
    code = ("import atexit, gc, sys\n"
            "from pyterrier_noise.cli import main\n"
            "atexit.register(lambda: print('gc enabled at exit:', gc.isenabled(), 'frozen:', gc.get_freeze_count() > 0,"
            " file=sys.stderr))\n"
            f"sys.argv = ['pyterrier-noise', *{args!r}]\n"
            "sys.exit(main())\n")
    repo = Path(__file__).resolve().parents[1]
    return subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, cwd=repo, timeout=120,
                          env={**os.environ, "PYTHONPATH": str(repo)})


def write_collection(directory: Path, topics: int = 50, docs: int = 200, runs: int = 5) -> dict[str, Path]:
    """A synthetic qrels file ``qrels`` (every document judged 0-2) and runs ``run0`` ... (100 documents
    a topic) in ``directory``: big enough that perturb, robustness and select run for seconds."""
    import numpy as np
    rng = np.random.default_rng(0)
    q = np.repeat(np.arange(topics), docs)
    d = np.tile(np.arange(docs), topics)
    paths = {"qrels": directory / "qrels"}
    paths["qrels"].write_text("".join(f"{a} 0 d{b} {c}\n" for a, b, c in zip(q, d, rng.integers(0, 3, q.size))))
    for r in range(runs):
        lines = [f"{t} Q0 d{doc} {k + 1} {100 - k} run{r}\n" for t in range(topics)
                 for k, doc in enumerate(rng.permutation(docs)[:100])]
        paths[f"run{r}"] = directory / f"run{r}"
        paths[f"run{r}"].write_text("".join(lines))
    return paths


def start_program(*argv: object) -> subprocess.Popen:
    """``pyterrier-noise ARGV`` started as a program of this checkout (stdout and stderr piped)."""
    repo = Path(__file__).resolve().parents[1]
    return subprocess.Popen([sys.executable, "-m", "pyterrier_noise.cli", *map(str, argv)], stdout=subprocess.PIPE,
                            stderr=subprocess.PIPE, text=True, env={**os.environ, "PYTHONPATH": str(repo)},
                            start_new_session=True)   # its own process group, as a shell's foreground job


def signal_when(proc: subprocess.Popen, ready, sig: int, limit: float = 300.0) -> tuple[int, str]:
    """Send ``sig`` to ``proc`` as soon as ``ready()`` holds (checked every 10 ms; the process must
    still be running then, else AssertionError); returns (exit status, stderr).  SIGINT goes to the
    whole process group, as a terminal's Ctrl-C does (worker processes included); other signals to
    the process alone, as the OOM killer's SIGKILL."""
    _signal_once(proc, ready, sig, limit, lambda: proc.communicate()[1])
    _, err = proc.communicate(timeout=limit)
    return proc.returncode, err


def _signal_once(proc: subprocess.Popen, ready, sig: int, limit: float, said) -> None:
    """Wait (10 ms steps, at most ``limit`` s) until ``ready()`` holds while ``proc`` runs, then send
    ``sig``: SIGINT to the process group, any other signal to the process alone.  ``said()`` is
    what the process wrote, for the message when it ended first."""
    import signal
    import time
    end = time.monotonic() + limit
    while not ready():
        assert proc.poll() is None, f"ended before the signal: {said()}"
        assert time.monotonic() < end, "the process never reached the point to signal"
        time.sleep(0.01)
    assert proc.poll() is None, "ended before the signal"
    if sig == signal.SIGINT:
        os.killpg(proc.pid, sig)
    else:
        proc.send_signal(sig)


def signal_on_stderr(proc: subprocess.Popen, ready, sig: int, limit: float = 300.0) -> tuple[int, str]:
    """Send ``sig`` to ``proc`` as soon as ``ready(text)`` holds for what it has written on stderr so
    far (read as it comes, in a thread: a progress bar's ``\\r`` updates are not lines), as
    :func:`signal_when` does; returns (exit status, all of stderr)."""
    import threading
    chunks: list[bytes] = []
    fd = proc.stderr.fileno()

    def drain() -> None:
        while True:
            data = os.read(fd, 65536)
            if not data:
                return
            chunks.append(data)

    reader = threading.Thread(target=drain, daemon=True)
    reader.start()
    def said() -> str:
        return b"".join(chunks).decode("utf-8", "replace")

    _signal_once(proc, lambda: ready(said()), sig, limit, said)
    proc.wait(timeout=limit)
    reader.join(timeout=limit)
    return proc.returncode, said()


def group_alive(proc: subprocess.Popen, wait: float = 5.0) -> bool:
    """Whether a process of ``proc``'s process group (a worker it started) is still alive ``wait``
    seconds after it ended (workers killed with their parent need a moment to be reaped)."""
    import time
    end = time.monotonic() + wait
    while True:
        try:
            os.killpg(proc.pid, 0)
        except ProcessLookupError:
            return False
        if time.monotonic() > end:
            return True
        time.sleep(0.05)


def dead_pid() -> int:
    """The id of a process that has ended (and been reaped)."""
    p = subprocess.Popen([sys.executable, "-c", "pass"])
    p.wait()
    return p.pid


def temporaries(directory: Path) -> list[str]:
    """Names under ``directory`` (recursively) that are temporary names of pyterrier_noise._output."""
    from pyterrier_noise._output import TMP_PREFIX
    return sorted(p.name for p in directory.rglob("*") if p.name.startswith(TMP_PREFIX)) if directory.exists() else []
