"""The on-disk cache of parsed run files (pyterrier_noise.io.cache): hits parse no text, a changed
file is read again, a damaged entry is reported and replaced, processes filling one cache at once
leave it whole, and the columns are those of the uncached reader."""
from __future__ import annotations

import gzip
import os
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest

from pyterrier_noise.io import CoercionWarning, RunFileReader, write_trec_run
from pyterrier_noise.io import reader as reader_module

from collection_helpers import random_collection

ROOT = Path(__file__).resolve().parents[2]


@pytest.fixture
def run_files(tmp_path):
    """Three small run files, one of them gzip."""
    runs, _ = random_collection(5, n_runs=3, n_topics=6, n_docs=80, depth=40)
    paths = []
    for k, (name, frame) in enumerate(runs.items()):
        path = tmp_path / (f"{name}.gz" if k == 1 else name)
        write_trec_run(frame, path, name)
        paths.append(path)
    return paths


@pytest.fixture
def parses(monkeypatch):
    """The sizes of the texts parsed (parse_arrow_run's calls) from now on."""
    seen = []
    real = reader_module.parse_arrow_run

    def counting(data):
        seen.append(len(data))
        return real(data)
    monkeypatch.setattr(reader_module, "parse_arrow_run", counting)
    return seen


def _equal(a: tuple, b: tuple) -> bool:
    return all(np.array_equal(np.asarray(x, dtype=object) if getattr(x, "dtype", None) == object else np.asarray(x),
                              np.asarray(y, dtype=object) if getattr(y, "dtype", None) == object else np.asarray(y))
               for x, y in zip(a, b)) and len(a) == len(b)


@pytest.mark.parametrize("n_threads", [1, 2])
def test_second_reading_parses_no_text_and_gives_the_same_columns(run_files, tmp_path, parses, n_threads):
    uncached = RunFileReader(run_files, n_threads, cache=False).columns()
    assert len(parses) == len(run_files)
    cache = tmp_path / "cache"
    parses.clear()
    first = RunFileReader(run_files, n_threads, cache=cache).columns()
    assert len(parses) == len(run_files)   # a miss: parsed and stored
    assert len(list(cache.glob("run-*.arrow"))) == 3 and not list(cache.glob(".*.tmp"))
    parses.clear()
    second = RunFileReader(run_files, n_threads, cache=cache).columns()
    assert parses == []                                          # every file a hit
    assert _equal(uncached, first) and _equal(uncached, second)


def test_environment_variable_turns_the_cache_on(run_files, tmp_path, parses, monkeypatch):
    monkeypatch.setenv("PYTERRIER_NOISE_CACHE", str(tmp_path / "env-cache"))
    RunFileReader(run_files).columns()
    parses.clear()
    RunFileReader(run_files).columns()
    assert parses == [] and len(list((tmp_path / "env-cache").glob("*.arrow"))) == 3
    RunFileReader(run_files, cache=False).columns()   # False: no cache, whatever the environment says
    assert len(parses) == 3


def test_changed_bytes_of_the_same_size_and_time_are_read_again(run_files, tmp_path, parses):
    cache = tmp_path / "cache"
    RunFileReader(run_files, cache=cache).columns()
    path = run_files[0]
    st = os.stat(path)
    text = path.read_bytes()
    first_score = text.split(b"\n")[0].split(b" ")[4]
    changed = first_score.replace(first_score[-1:], b"9" if first_score[-1:] != b"9" else b"8")
    new = text.replace(first_score, changed, 1)
    assert len(new) == len(text) and new != text
    path.write_bytes(new)
    os.utime(path, ns=(st.st_atime_ns, st.st_mtime_ns))   # the same size, the same modification time
    assert os.stat(path).st_size == st.st_size and os.stat(path).st_mtime_ns == st.st_mtime_ns
    parses.clear()
    cols = RunFileReader(run_files, cache=cache).columns()
    assert parses == [len(gzip.decompress(new) if path.name.endswith('.gz') else new)]   # only the changed file
    assert _equal(cols, RunFileReader(run_files, cache=False).columns())
    assert float(changed) in cols[5]                              # its new score is read
    parses.clear()
    RunFileReader(run_files, cache=cache).columns()
    assert parses == []                                           # and its entry replaced


@pytest.mark.parametrize("damage", ["truncate", "garbage", "flip"])
def test_damaged_entry_is_reported_and_read_from_text(run_files, tmp_path, parses, damage):
    cache = tmp_path / "cache"
    expected = RunFileReader(run_files, cache=cache).columns()
    entries = sorted(cache.glob("run-*.arrow"))
    for entry in entries:
        data = entry.read_bytes()
        if damage == "truncate":
            entry.write_bytes(data[: len(data) // 2])
        elif damage == "garbage":
            entry.write_bytes(b"not an arrow file\n" * 10)
        else:   # an offset of the docno strings overwritten: the file's structure is intact
            import pyarrow as pa
            import pyarrow.ipc as ipc
            table = ipc.open_file(pa.memory_map(str(entry))).read_all()
            offsets = table.column("docno").chunk(0).buffers()[1].to_pybytes()
            at = data.find(offsets)
            assert at > 0
            entry.write_bytes(data[:at + 8] + b"\xff\xff\xff\x7f" + data[at + 12:])
    parses.clear()
    with pytest.warns(CoercionWarning, match="cache entry .* cannot be read") as seen:
        cols = RunFileReader(run_files, cache=cache).columns()
    assert len([w for w in seen if "cannot be read" in str(w.message)]) == len(run_files)
    assert len(parses) == len(run_files)
    assert _equal(cols, expected)
    parses.clear()
    assert _equal(RunFileReader(run_files, cache=cache).columns(), expected) and parses == []   # replaced


def test_files_the_validating_reader_reads_are_not_cached(tmp_path):
    path = tmp_path / "irregular"
    path.write_text("1 Q0 d1 1 2.0 r\n1  Q0 d2 2 1.0 r\n")   # two spaces: the validating reader's
    reading = RunFileReader([path], cache=tmp_path / "cache")
    assert reading.columns() is None
    assert not list((tmp_path / "cache").glob("*.arrow")) if (tmp_path / "cache").exists() else True


CHILD = """
import sys
from pyterrier_noise.io import RunFileReader
import numpy as np
cols = RunFileReader(sys.argv[2:], 2, cache=sys.argv[1]).columns()
print(float(np.sum(cols[5])), len(cols[0]))
"""


def test_two_processes_filling_one_cache_leave_it_whole(tmp_path):
    # larger files, so that the two processes write the same entries at the same time
    paths = []
    rng = np.random.default_rng(3)
    for r in range(4):
        path = tmp_path / f"big{r}.gz"
        lines = [f"{q} Q0 D{d} {k + 1} {s:.6f} big{r}\n"
                 for q in range(40) for k, (d, s) in enumerate(zip(rng.permutation(20_000)[:1000],
                                                                   np.sort(rng.normal(size=1000))[::-1]))]
        with gzip.open(path, "wt", compresslevel=1) as f:
            f.writelines(lines)
        paths.append(str(path))
    cache = tmp_path / "cache"
    env = {**os.environ, "PYTHONPATH": str(ROOT)}
    procs = [subprocess.Popen([sys.executable, "-c", CHILD, str(cache), *paths], env=env,
                              stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True) for _ in range(2)]
    outs = [p.communicate(timeout=120) for p in procs]
    assert [p.returncode for p in procs] == [0, 0], [e for _, e in outs]
    assert outs[0][0] == outs[1][0]
    assert "cannot" not in outs[0][1] + outs[1][1]
    assert len(list(cache.glob("run-*.arrow"))) == 4 and not list(cache.glob(".*.tmp"))
    import warnings
    with warnings.catch_warnings():
        warnings.simplefilter("error")   # every entry readable: no warning
        cached = RunFileReader(paths, cache=cache).columns()
    assert _equal(cached, RunFileReader(paths, cache=False).columns())
    assert f"{float(np.sum(cached[5]))} {len(cached[0])}" == outs[0][0].strip()
