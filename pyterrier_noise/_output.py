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

Every refusal is an :class:`~pyterrier_noise._validation.InputError` naming the path.
"""
from __future__ import annotations

import json
import os
import shutil
from contextlib import contextmanager
from pathlib import Path
from typing import Any, Iterator

from ._validation import InputError

__all__ = ["MANIFEST", "OutputDirectory", "atomic_file", "atomic_write", "check_output_file"]

#: the name of the manifest an :class:`OutputDirectory` writes
MANIFEST = "manifest.json"
#: the prefix of temporary names (left behind only by a process that was killed)
TMP_PREFIX = ".pyterrier-noise-tmp-"
_SHOWN = 5   # how many file names a refusal shows


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
    try:
        fd = os.open(probe, os.O_CREAT | os.O_EXCL | os.O_WRONLY, 0o600)
        os.close(fd)
        os.unlink(probe)
    except OSError as exc:
        raise InputError(f"{what}: cannot write in {directory} ({_reason(exc)})") from None


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
    tmp = path.parent / f"{TMP_PREFIX}{os.getpid()}-{path.name}"
    try:
        yield tmp
        os.replace(tmp, path)
    except OSError as exc:
        raise InputError(f"{what} {path}: cannot write the file ({_reason(exc)})") from None
    finally:
        if tmp.exists():
            tmp.unlink()


def atomic_write(path: str | Path, data: bytes) -> Path:
    """Write ``data`` to ``path`` under a temporary name, then :func:`os.replace` it into place."""
    path = Path(path)
    tmp = path.parent / f"{TMP_PREFIX}{os.getpid()}-{path.name}"
    try:
        tmp.write_bytes(data)
        os.replace(tmp, path)
    finally:
        if tmp.exists():
            tmp.unlink()
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
        _check_parent(p / "x", self.what) if not p.exists() else _probe(p, self._label())
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

    def write(self, name: str, data: bytes | str) -> Path:
        """Write one file atomically and record it for the manifest."""
        if isinstance(data, str):
            data = data.encode("utf-8")
        try:
            path = atomic_write(self.path / name, data)
        except OSError as exc:
            raise InputError(f"{self._label()}: cannot write {name} ({_reason(exc)})") from None
        self.files.append(name)
        return path

    @contextmanager
    def staging(self) -> Iterator[Path]:
        """A temporary directory inside the output for a library function that writes a directory;
        on success each file in it is moved into place with :func:`os.replace` and recorded."""
        stage = self.path / f"{TMP_PREFIX}{os.getpid()}"
        try:
            stage.mkdir()
            yield stage
            for src in sorted(stage.rglob("*")):
                if src.is_file():
                    rel = src.relative_to(stage)
                    dest = self.path / rel
                    dest.parent.mkdir(parents=True, exist_ok=True)
                    os.replace(src, dest)
                    self.files.append(rel.as_posix())
        except OSError as exc:
            raise InputError(f"{self._label()}: cannot write the output ({_reason(exc)})") from None
        finally:
            shutil.rmtree(stage, ignore_errors=True)

    def finish(self, info: dict[str, Any] | None = None) -> Path:
        """Remove the earlier output's files that this run did not rewrite, then write ``manifest.json``:
        ``command``, ``files`` (every file written, in order) and ``info``."""
        written = set(self.files)
        for name in sorted(self.previous - written - {MANIFEST}):
            try:
                (self.path / name).unlink()
            except FileNotFoundError:
                pass
            except OSError as exc:
                raise InputError(f"{self._label()}: cannot remove the earlier {name} ({_reason(exc)})") from None
        manifest = {"command": self.command, **(info or {}), "files": list(self.files)}
        text = json.dumps(manifest, indent=1) + "\n"
        try:
            return atomic_write(self.path / MANIFEST, text.encode("utf-8"))
        except OSError as exc:
            raise InputError(f"{self._label()}: cannot write {MANIFEST} ({_reason(exc)})") from None
