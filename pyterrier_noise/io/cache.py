"""An optional on-disk cache of parsed run files, for evaluating the same runs again: each file's
Arrow table (qid, docno, rank, score, as :func:`~pyterrier_noise.io.read_arrow_run` parses it) is
kept as an Arrow IPC file and memory-mapped when read again, so a second evaluation of the same files
inflates and parses no text.

Off unless asked for: ``RunFileReader(paths, cache=DIR)`` in Python, ``--cache DIR`` on the command
line, or the environment variable ``PYTERRIER_NOISE_CACHE=DIR`` (``cache=True`` takes that variable,
else ``$XDG_CACHE_HOME/pyterrier-noise/runs``, by default ``~/.cache/pyterrier-noise/runs``).

An entry is found by the file's resolved path and is used only when the file's identity (size,
``mtime_ns``, inode, device) and the BLAKE2b hash of its bytes (gzip left compressed) are those the
entry was made from: a file changed in any way -- even to bytes of the same size under the same
modification time -- is read from text again and its entry replaced.  A hit reads the file's bytes
once to hash them, but never inflates or parses them.  Files the validating reader must read (an
irregular line) are not cached.

Entries are written to a temporary file in the cache directory and renamed into place
(``os.replace``, atomic on POSIX), so two processes filling the same cache never leave a partial
entry; the last one to finish wins, with the same content.  An entry that cannot be read back (cut
short, overwritten, not Arrow) is reported with a warning and the file is read from text again.

Standard library at import; pyarrow when an entry is read or written.
"""
from __future__ import annotations

import hashlib
import json
import os
import tempfile
from pathlib import Path
from typing import TYPE_CHECKING, Any, Callable

from .._validation import InputError, announce

if TYPE_CHECKING:  # pragma: no cover
    import pyarrow as pa

__all__ = ["CACHE_ENV", "cache_directory", "cached_run_table", "file_digest"]

#: the environment variable naming the cache directory (read when ``cache=None`` or ``True``)
CACHE_ENV = "PYTERRIER_NOISE_CACHE"
#: the version of an entry's layout: entries of another version are misses (and replaced)
FORMAT = 1
#: the key of the schema metadata that holds what an entry was made from
META_KEY = b"pyterrier_noise.run_cache"
#: the columns and types of a cached table (those read_arrow_run gives)
COLUMNS = (("qid", "string"), ("docno", "string"), ("rank", "double"), ("score", "double"))


def cache_directory(cache: Any = None) -> Path | None:
    """The cache directory ``cache`` asks for: a path; ``None``: the environment variable
    :data:`CACHE_ENV` if set, else no cache; ``True``: that variable, else the user's cache
    directory (``$XDG_CACHE_HOME/pyterrier-noise/runs``); ``False``: no cache."""
    if cache is False:
        return None
    if cache is None or cache is True:
        env = os.environ.get(CACHE_ENV, "")
        if env:
            return Path(env).expanduser()
        if cache is None:
            return None
        base = os.environ.get("XDG_CACHE_HOME") or Path.home() / ".cache"
        return Path(base) / "pyterrier-noise" / "runs"
    if isinstance(cache, (str, os.PathLike)):
        return Path(cache).expanduser()
    raise InputError(f"cache must be a directory, True, False or None, got {type(cache).__name__}")


def file_digest(path: os.PathLike) -> str:
    """The BLAKE2b hash (128 bits, hex) of a file's bytes, read in blocks (never whole in memory)."""
    h = hashlib.blake2b(digest_size=16)
    buf = bytearray(1 << 20)
    view = memoryview(buf)
    with open(path, "rb", buffering=0) as f:
        while n := f.readinto(buf):
            h.update(view[:n])
    return h.hexdigest()


def _identity(st: os.stat_result) -> dict:
    return {"size": st.st_size, "mtime_ns": st.st_mtime_ns, "inode": st.st_ino, "device": st.st_dev}


def _entry(directory: Path, path: Path) -> Path:
    """The entry file of a run file: named by a hash of its resolved path."""
    key = hashlib.blake2b(str(path).encode("utf-8", "surrogateescape"), digest_size=16).hexdigest()
    return directory / f"run-{key}.arrow"


def cached_run_table(path: os.PathLike, parse: Callable[[Path], Any], directory: Path) -> Any:
    """``parse(path)`` (a run file's Arrow table, or None when the validating reader must read it),
    taken from the cache in ``directory`` when its entry is current, else parsed and stored."""
    path = Path(path)
    try:
        resolved = path.resolve()
        st = os.stat(resolved)
    except OSError:
        return parse(path)   # the reader names what is wrong with the file
    entry = _entry(directory, resolved)
    table = _load(entry, resolved, st)
    if table is not None:
        return table
    table = parse(path)
    if table is not None:
        _store(entry, resolved, st, table)
    return table


def _load(entry: Path, path: Path, st: os.stat_result) -> pa.Table | None:
    """The table of a current entry; None for a miss (no entry, or one made from another version of
    the file), with a warning when the entry cannot be read (it is then replaced)."""
    if not entry.is_file():
        return None
    import pyarrow as pa
    import pyarrow.ipc as ipc
    try:
        reader = ipc.open_file(pa.memory_map(str(entry), "r"))
        made_from = json.loads(reader.schema.metadata[META_KEY])
    except (OSError, pa.ArrowException, KeyError, TypeError, ValueError) as exc:
        _corrupt(entry, path, exc)
        return None
    if made_from.get("format") != FORMAT or made_from.get("path") != str(path) or \
            made_from.get("identity") != _identity(st) or made_from.get("blake2b") != file_digest(path):
        return None   # another version of the file (or of the layout): read again, entry replaced
    try:
        table = reader.read_all()
        if [(f.name, str(f.type)) for f in table.schema] != list(COLUMNS):
            raise ValueError(f"columns {table.schema.names}, expected {[c for c, _ in COLUMNS]}")
        if table.num_rows != made_from.get("rows"):
            raise ValueError(f"{table.num_rows} rows, made from {made_from.get('rows')}")
        table.validate(full=True)   # offsets and UTF-8 of the strings: a damaged entry is refused
    except (OSError, pa.ArrowException, ValueError) as exc:
        _corrupt(entry, path, exc)
        return None
    return table.combine_chunks() if any(c.num_chunks != 1 for c in table.columns) else table


def _corrupt(entry: Path, path: Path, exc: BaseException) -> None:
    announce(f"{path}: its cache entry {entry} cannot be read ({type(exc).__name__}: {exc}); "
             "the run file is read from text again and the entry replaced")


def _store(entry: Path, path: Path, st: os.stat_result, table: pa.Table) -> None:
    """Write the entry of a file parsed into ``table`` (atomically: a temporary file renamed into
    place), unless the file changed while it was read; a cache that cannot be written is reported
    and left alone (the evaluation goes on)."""
    import pyarrow as pa
    import pyarrow.ipc as ipc
    try:
        digest = file_digest(path)
        if _identity(os.stat(path)) != _identity(st):
            return   # the file changed while it was read: no entry for a version never parsed whole
        made_from = {"format": FORMAT, "path": str(path), "identity": _identity(st), "blake2b": digest,
                     "rows": table.num_rows}
        entry.parent.mkdir(parents=True, exist_ok=True)
        fd, tmp = tempfile.mkstemp(dir=entry.parent, prefix=f".{entry.name}.", suffix=".tmp")
        try:
            with os.fdopen(fd, "wb") as f:
                schema = table.schema.with_metadata({META_KEY: json.dumps(made_from).encode()})
                with ipc.new_file(f, schema) as writer:
                    writer.write_table(table.replace_schema_metadata(schema.metadata))
            os.replace(tmp, entry)
        except BaseException:
            Path(tmp).unlink(missing_ok=True)
            raise
    except (OSError, pa.ArrowException) as exc:
        announce(f"{path}: cannot write its cache entry in {entry.parent} ({exc}); the run is not cached")
