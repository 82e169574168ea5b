"""``quiet_native_logs`` holds what native code writes to file descriptors 1 and 2 (PISA's logs), lets
Python's own output through, and shows what it held when the block fails."""
from __future__ import annotations

import subprocess
import sys
import textwrap

SCRIPT = textwrap.dedent("""
    import ctypes, os, sys
    import pyterrier_noise as pn
    print("before", flush=True)
    with pn.io.quiet_native_logs():
        os.write(1, b"[info] raw on fd 1\\n")
        os.write(2, b"Create index: 100% [0s]\\n")
        ctypes.CDLL(None).printf(b"[info] through C stdio, buffered\\n")
        print("python stdout")
        sys.stderr.write("python stderr\\n")
        if len(sys.argv) > 1:
            raise RuntimeError("the native call failed")
    print("after")
    os.write(1, b"fd 1 is back\\n")
    os.write(2, b"fd 2 is back\\n")
""")


def _run(*args: str) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, "-c", SCRIPT, *args], capture_output=True, text=True, timeout=120)


def test_native_output_is_held_and_python_output_and_the_descriptors_come_back():
    out = _run()
    assert out.returncode == 0, out.stderr
    assert out.stdout == "before\npython stdout\nafter\nfd 1 is back\n"
    assert out.stderr == "python stderr\nfd 2 is back\n"


def test_what_was_held_is_shown_when_the_block_fails():
    out = _run("fail")
    assert out.returncode == 1
    assert out.stdout == "before\npython stdout\n"
    held, _, traceback = out.stderr.partition("Traceback")
    assert held == ("python stderr\n[info] raw on fd 1\nCreate index: 100% [0s]\n"
                    "[info] through C stdio, buffered\n")
    assert "RuntimeError: the native call failed" in traceback
