"""One progress-bar helper: tqdm's console-or-notebook bar, or a silent stand-in when disabled.

PyTerrier's ``pt.tqdm`` is used when PyTerrier is already imported (it follows
``pt.utils.set_tqdm``); PyTerrier is never imported just for a bar.
"""
from __future__ import annotations

import sys
from typing import Any


def progress_bar(iterable: Any = None, *, total: int | None = None, desc: str | None = None,
                 unit: str = "it", enabled: bool = True, **kwargs: Any) -> Any:
    """A tqdm bar over ``iterable`` (or a manual one of ``total`` steps); disabled when not ``enabled``."""
    pt = sys.modules.get("pyterrier")
    if pt is not None and hasattr(pt, "tqdm"):
        bar = pt.tqdm
    else:
        from tqdm.auto import tqdm as bar
    return bar(iterable, total=total, desc=desc, unit=unit, disable=not enabled, **kwargs)


def stderr_is_terminal() -> bool:
    """Whether progress on stderr can be seen: stderr is a terminal or a notebook kernel runs."""
    return bool(getattr(sys.stderr, "isatty", lambda: False)()) or "ipykernel" in sys.modules


class status:
    """A one-line status on stderr for a phase without steps to count (reading, aligning, evaluating).

    ``with status("reading and aligning 143 runs", enabled):`` says nothing when the phase ends
    within ``delay`` seconds; after that the line ``reading and aligning 143 runs ...`` appears
    and, when the phase ends, ``reading and aligning 143 runs: done in 2.4 s`` (whole lines, so
    that warnings printed meanwhile do not break them).  Silent unless ``enabled`` and stderr is
    a terminal (or a notebook), as the progress bars are; the line is written by a timer thread,
    so the phase itself is not slowed.
    """

    def __init__(self, message: str, enabled: bool = True, delay: float = 2.0) -> None:
        self.message, self.delay = message, delay
        self.enabled = bool(enabled) and stderr_is_terminal()
        self._shown = False

    def __enter__(self) -> "status":
        if self.enabled:
            import threading
            import time
            self._t0 = time.perf_counter()
            self._lock = threading.Lock()
            self._timer = threading.Timer(self.delay, self._show)
            self._timer.daemon = True
            self._timer.start()
        return self

    def _show(self) -> None:
        with self._lock:
            if not self._shown:
                sys.stderr.write(f"{self.message} ...\n")
                sys.stderr.flush()
                self._shown = True

    def __exit__(self, *exc: Any) -> None:
        if not self.enabled:
            return
        import time
        self._timer.cancel()
        with self._lock:
            if self._shown:
                sys.stderr.write(f"{self.message}: done in {time.perf_counter() - self._t0:.1f} s\n")
                sys.stderr.flush()
            self._shown = True   # a timer that fires late stays silent
