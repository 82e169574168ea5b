"""Shared by the command-line tests: run ``pyterrier-noise`` in-process and capture what it prints."""
from __future__ import annotations

import io
from contextlib import redirect_stderr, redirect_stdout

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
