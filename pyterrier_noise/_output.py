"""Output files and directories that a command owns: refused when they hold someone else's files,
written atomically, listed in a manifest.

One mechanism for every ``--out`` of the command line:

* :class:`OutputDirectory` -- a directory output.  A new or empty directory is used as it is; a
  directory holding files that this command did not write (files not listed in the directory's
  ``manifest.json`` of the same command) is refused with a sentence naming a few of them; a
  directory holding an earlier output of the same command is refused unless ``force``, which
  replaces exactly the files that earlier manifest lists.  Files are written under a temporary
  name and moved into place with :func:`os.replace`, so a reader never sees half a file and a
  failed run leaves the earlier output as it was; ``manifest.json`` lists every file written.
* :func:`atomic_file` -- a single output file, written under a temporary name beside it and
  renamed into place.

* :func:`check_outputs_apart` -- an output that is one of the inputs (the same file by device and
  inode, through a symlink, a hard link or a relative path), lies inside an input directory, or is a
  directory holding an input, is refused with a sentence naming both, before anything is read.
* Temporary names start with :data:`TMP_PREFIX` and the writing process's id; a leftover of a
  process that is gone (killed by SIGKILL) is removed by the next run writing there, and
  :func:`discard_temporaries` removes this process's own (the command line calls it on Ctrl-C).

Every refusal is an :class:`~pyterrier_noise._validation.InputError` naming the path.
"""
from __future__ import annotations

import json
import os
import re
import shutil
from contextlib import contextmanager
from pathlib import Path
from typing import Any, Iterator

from ._validation import InputError

__all__ = ["MANIFEST", "OutputDirectory", "atomic_file", "atomic_write", "check_output_file",
           "check_outputs_apart", "completed_outputs", "discard_temporaries", "outputs_mark",
           "remove_dead_temporaries"]

#: the name of the manifest an :class:`OutputDirectory` writes
MANIFEST = "manifest.json"
#: the prefix of temporary names (left behind only by a process that was killed)
TMP_PREFIX = ".pyterrier-noise-tmp-"
_SHOWN = 5   # how many file names a refusal shows
_TMP_PID = re.compile(re.escape(TMP_PREFIX) + r"(\d+)(?:-|$)")
#: this process's temporary files and folders not yet renamed into place
_LIVE: set[Path] = set()
#: output directories this process created and has not finished (removed, if still empty, on failure)
_CREATED: set[Path] = set()
#: outputs this process has completed (files renamed into place, directories finished), in order
_COMPLETE: list[Path] = []


def _alive(pid: int) -> bool:
    if pid == os.getpid():
        return True
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except OSError:   # EPERM: a process of another user holds that id
        return True
    return True


def _remove(path: Path) -> None:
    if path.is_dir() and not path.is_symlink():
        shutil.rmtree(path, ignore_errors=True)
    else:
        try:
            path.unlink()
        except OSError:
            pass


def remove_dead_temporaries(directory: str | Path) -> list[str]:
    """Remove the temporary files and folders in ``directory`` left by processes that are gone
    (a run killed by SIGKILL or a power cut); returns their names."""
    removed = []
    try:
        entries = list(os.scandir(directory))
    except OSError:
        return removed
    for e in entries:
        m = _TMP_PID.match(e.name)
        if m and not _alive(int(m.group(1))):
            _remove(Path(e.path))
            removed.append(e.name)
    return removed


def discard_temporaries() -> None:
    """Remove this process's temporary files and folders (an interrupted write: nothing is kept)."""
    for path in list(_LIVE):
        _remove(path)
        _LIVE.discard(path)
    for path in list(_CREATED):
        try:
            path.rmdir()   # only when empty
        except OSError:
            pass
        _CREATED.discard(path)


def _record(path: Path) -> None:
    """Count ``path`` as a completed output, unless it was written inside a stage that is not yet
    moved into place (a file of an unfinished :class:`OutputDirectory` is not an output yet)."""
    if not any(parent in _LIVE for parent in path.parents):
        _COMPLETE.append(path)


def outputs_mark() -> int:
    """How many outputs this process has completed so far (for :func:`completed_outputs`)."""
    return len(_COMPLETE)


def completed_outputs(since: int = 0) -> list[Path]:
    """The outputs this process has completed, in order, since :func:`outputs_mark` gave ``since``:
    files renamed into place and output directories whose manifest is written (a file inside a
    completed directory is not listed apart).  An interrupt that lands after them says they are
    kept, not that nothing was written."""
    recent = _COMPLETE[since:]
    folders = set(recent)
    return list(dict.fromkeys(p for p in recent if p.parent not in folders))


def _identity(path: Path) -> tuple[int, int] | None:
    try:
        st = os.stat(path)
    except (OSError, ValueError):
        return None
    return st.st_dev, st.st_ino


def _ancestors(path: Path) -> list[tuple[int, int]]:
    """Device and inode of every existing directory above ``path`` (symlinks resolved)."""
    ids = []
    for p in Path(os.path.realpath(path)).parents:
        i = _identity(p)
        if i is not None:
            ids.append(i)
    return ids


def check_outputs_apart(outputs: dict[str, str | Path], inputs: dict[str, str | Path]) -> None:
    """Refuse an output that would overwrite an input: the same file (same device and inode, so a
    symlink, a hard link or a relative path is seen through), a path inside an input directory, or
    an output directory holding an input.  ``outputs`` and ``inputs`` map a label (the option as
    typed, e.g. ``--out``, ``RUN``) to a path; raises :class:`InputError` naming both."""
    ins = []
    for label, path in inputs.items():
        i = _identity(Path(path))
        if i is not None:
            ins.append((label, Path(path), i, os.path.isdir(path)))
    for olabel, opath in outputs.items():
        opath = Path(opath)
        oid = _identity(opath)
        above = _ancestors(opath)
        for label, ipath, iid, is_dir in ins:
            if oid == iid:
                raise InputError(f"{olabel} {opath} is the same file as the input {label} {ipath}; writing it "
                                 "would destroy the input: choose another output path")
            if is_dir and iid in above:
                raise InputError(f"{olabel} {opath} is inside the input directory {label} {ipath}; choose an "
                                 "output outside it")
            if oid is not None and os.path.isdir(opath) and oid in _ancestors(ipath):
                raise InputError(f"{olabel} {opath} is a directory holding the input {label} {ipath}; choose "
                                 "another output directory")


def _few(names: list[str]) -> str:
    shown = ", ".join(names[:_SHOWN])
    return shown + (f" and {len(names) - _SHOWN} more" if len(names) > _SHOWN else "")


def _reason(exc: OSError) -> str:
    return exc.strerror or str(exc)


def _check_parent(path: Path, what: str) -> None:
    """Refuse, with a sentence, an output whose folder is missing, is a file or cannot be written."""
    parent = path.parent
    for p in (parent, *parent.parents):
        if p.exists():
            if not p.is_dir():
                raise InputError(f"{what} {path}: cannot write there: {p} is a file, not a directory")
            break
    if not parent.exists():
        try:
            parent.mkdir(parents=True, exist_ok=True)
        except OSError as exc:
            raise InputError(f"{what} {path}: cannot create the directory {parent} ({_reason(exc)})") from None
    _probe(parent, f"{what} {path}")


def _probe(directory: Path, what: str) -> None:
    """Create and remove a temporary file in ``directory``: the only test of writability that root obeys too."""
    probe = directory / f"{TMP_PREFIX}{os.getpid()}-probe"
    _LIVE.add(probe)   # an interrupt between creating and removing it still removes it
    try:
        fd = os.open(probe, os.O_CREAT | os.O_EXCL | os.O_WRONLY, 0o600)
        os.close(fd)
        os.unlink(probe)
    except OSError as exc:
        raise InputError(f"{what}: cannot write in {directory} ({_reason(exc)})") from None
    finally:
        _LIVE.discard(probe)


def check_output_file(path: str | Path, what: str = "--out") -> Path:
    """Refuse, before any work, an output file that is a directory or whose folder cannot be written."""
    path = Path(path)
    if path.is_dir():
        raise InputError(f"{what} {path}: is a directory; expected a file name")
    _check_parent(path, what)
    return path


@contextmanager
def atomic_file(path: str | Path, what: str = "--out") -> Iterator[Path]:
    """Yield a temporary path beside ``path`` (same suffix, so ``.gz`` still compresses); on success
    it is renamed to ``path`` with :func:`os.replace`, on failure removed.  The folder is checked
    first: a missing, non-directory or unwritable folder, or ``path`` being a directory, is an
    :class:`InputError` naming ``path``."""
    path = check_output_file(path, what)
    remove_dead_temporaries(path.parent)
    tmp = path.parent / f"{TMP_PREFIX}{os.getpid()}-{path.name}"
    _LIVE.add(tmp)
    try:
        yield tmp
        os.replace(tmp, path)
        _record(path)
    except OSError as exc:
        raise InputError(f"{what} {path}: cannot write the file ({_reason(exc)})") from None
    finally:
        if tmp.exists():
            tmp.unlink()
        _LIVE.discard(tmp)


def atomic_write(path: str | Path, data: bytes) -> Path:
    """Write ``data`` to ``path`` under a temporary name, then :func:`os.replace` it into place."""
    path = Path(path)
    tmp = path.parent / f"{TMP_PREFIX}{os.getpid()}-{path.name}"
    _LIVE.add(tmp)
    try:
        tmp.write_bytes(data)
        os.replace(tmp, path)
        _record(path)
    finally:
        if tmp.exists():
            tmp.unlink()
        _LIVE.discard(tmp)
    return path


class OutputDirectory:
    """A command's output directory (see the module docstring).

    ``OutputDirectory(path, command, force)`` checks the directory at once, before any work; then
    :meth:`write` (one file) or :meth:`staging` (a directory a library function writes into) and
    finally :meth:`finish`, which removes what an earlier output of ``force`` left and writes the
    manifest.
    """

    def __init__(self, path: str | Path, command: str, force: bool = False, what: str = "--out") -> None:
        self.path = Path(path)
        self.command = command
        self.what = what
        self.files: list[str] = []
        self.previous: set[str] = set()
        self._check(force)

    def _label(self) -> str:
        return f"{self.what} {self.path}"

    def _owned(self) -> set[str]:
        """Files the directory's manifest says an earlier run of this command wrote."""
        try:
            manifest = json.loads((self.path / MANIFEST).read_text(encoding="utf-8"))
        except (OSError, ValueError):
            return set()
        if not isinstance(manifest, dict) or manifest.get("command") != self.command:
            return set()
        files = manifest.get("files")
        return {f for f in files if isinstance(f, str)} | {MANIFEST} if isinstance(files, list) else set()

    def _check(self, force: bool) -> None:
        p = self.path
        if p.exists() and not p.is_dir():
            raise InputError(f"{self._label()}: is a file; expected a directory")
        if not p.exists():
            _CREATED.add(p)   # first: an interrupt once it exists still removes it (if empty)
            _check_parent(p / "x", self.what)
        else:
            _probe(p, self._label())
        remove_dead_temporaries(p)
        existing = sorted(x.name for x in p.iterdir() if not x.name.startswith(TMP_PREFIX))
        if not existing:
            return
        owned = self._owned()
        foreign = [n for n in existing if n not in owned]
        if foreign:
            raise InputError(f"{self._label()}: the directory holds {len(foreign)} file(s) that `{self.command}` "
                             f"did not write ({_few(foreign)}); choose a new or empty directory, or remove them")
        if not force:
            raise InputError(f"{self._label()}: the directory holds an earlier output of `{self.command}` "
                             f"({len(existing)} file(s), e.g. {_few(existing)}); give --force to replace it, "
                             "or choose another directory")
        self.previous = set(existing)

    def file(self, name: str) -> Path:
        """The final path of ``name`` in the directory (record it with :meth:`write` or :meth:`staging`)."""
        return self.path / name

    def _stage(self) -> Path:
        """The folder this run's files are built in (``.pyterrier-noise-tmp-PID/`` inside the output),
        moved into place by :meth:`finish`: an interrupted run leaves the earlier output as it was."""
        stage = self.path / f"{TMP_PREFIX}{os.getpid()}"
        if stage not in _LIVE:
            _remove(stage)
            _LIVE.add(stage)   # before it exists: an interrupt right after the mkdir still removes it
            stage.mkdir(parents=True)
        return stage

    def write(self, name: str, data: bytes | str) -> Path:
        """Write one file into the stage and record it for the manifest (moved into place by :meth:`finish`)."""
        if isinstance(data, str):
            data = data.encode("utf-8")
        try:
            dest = self._stage() / name
            dest.parent.mkdir(parents=True, exist_ok=True)
            dest.write_bytes(data)
        except OSError as exc:
            raise InputError(f"{self._label()}: cannot write {name} ({_reason(exc)})") from None
        if name not in self.files:
            self.files.append(name)
        return self.path / name

    @contextmanager
    def staging(self) -> Iterator[Path]:
        """The stage, for a library function that writes a directory; the files it holds afterwards
        are recorded and moved into place by :meth:`finish`.  On failure the stage is removed."""
        try:
            stage = self._stage()
            yield stage
            for src in sorted(stage.rglob("*")):
                rel = src.relative_to(stage).as_posix()
                if src.is_file() and rel not in self.files:
                    self.files.append(rel)
        except OSError as exc:
            self.discard()
            raise InputError(f"{self._label()}: cannot write the output ({_reason(exc)})") from None
        except BaseException:
            self.discard()
            raise

    def discard(self) -> None:
        """Remove the stage: nothing of this run is kept."""
        stage = self.path / f"{TMP_PREFIX}{os.getpid()}"
        _remove(stage)
        _LIVE.discard(stage)

    def finish(self, info: dict[str, Any] | None = None) -> Path:
        """Remove the earlier output's files that this run did not rewrite, then write ``manifest.json``:
        ``command``, ``files`` (every file written, in order) and ``info``."""
        written = set(self.files)
        stage = self.path / f"{TMP_PREFIX}{os.getpid()}"
        try:
            for name in self.files:
                dest = self.path / name
                dest.parent.mkdir(parents=True, exist_ok=True)
                os.replace(stage / name, dest)
        except OSError as exc:
            raise InputError(f"{self._label()}: cannot write the output ({_reason(exc)})") from None
        finally:
            self.discard()
        for name in sorted(self.previous - written - {MANIFEST}):
            try:
                (self.path / name).unlink()
            except FileNotFoundError:
                pass
            except OSError as exc:
                raise InputError(f"{self._label()}: cannot remove the earlier {name} ({_reason(exc)})") from None
        _CREATED.discard(self.path)
        manifest = {"command": self.command, **(info or {}), "files": list(self.files)}
        text = json.dumps(manifest, indent=1) + "\n"
        try:
            written = atomic_write(self.path / MANIFEST, text.encode("utf-8"))
        except OSError as exc:
            raise InputError(f"{self._label()}: cannot write {MANIFEST} ({_reason(exc)})") from None
        _COMPLETE.append(self.path)
        return written
