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
