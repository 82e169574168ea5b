"""The floor of W1 as a whole process: only decompress and parse the run files with Arrow into arrays.

No validation, no alignment, no evaluation, no output: a fresh Python process imports pyarrow,
decompresses and parses every TREC run file of a directory with Arrow's CSV reader (qid and docno
dictionary-encoded, rank and score as numbers), ``os.cpu_count()`` files at a time in threads
(decompression and parsing release the GIL), and turns the columns into numpy arrays.  Whatever
``pyterrier-noise eval`` does beyond this is its own cost (benchmarks/w1_process.py compares them).

With ``--tuned`` the floor reads as ``pyterrier-noise eval``'s reader does (pyterrier_noise.io.reader):
ISA-L's gzip decoder (the ``isal`` package) instead of Arrow's zlib, each file parsed in one block
with qid and docno as plain strings, then encoded once for all files.  The plain floor is the one
issue 19 defines; the tuned one shows what is left of the command's own cost once reading is as
fast as this machine reads.

Usage:  python benchmarks/floor_parse.py [--tuned] [RUN_DIR]      (default: the TREC-COVID round-1 runs)
"""
from __future__ import annotations

import os
import sys
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

import numpy as np
import pyarrow as pa
import pyarrow.csv as pcsv

DEFAULT = Path(__file__).resolve().parents[2] / "shared" / "data" / "trec-covid-round1" / "runs"
WORDS = pa.dictionary(pa.int32(), pa.string())


def parse(path: Path) -> tuple[np.ndarray, ...]:
    """(qid codes, docno codes, rank, score) of one run file (plain or gzip)."""
    with pa.input_stream(str(path), compression="detect") as fh:
        data = fh.read()
    first = bytes(data[:512]).split(b"\n", 1)[0]
    delim = "\t" if b"\t" in first else " "   # the runs are tab- or space-separated
    t = pcsv.read_csv(pa.py_buffer(data),
                      read_options=pcsv.ReadOptions(column_names=["qid", "q0", "docno", "rank", "score", "tag"],
                                                    use_threads=False),
                      parse_options=pcsv.ParseOptions(delimiter=delim),
                      convert_options=pcsv.ConvertOptions(
                          include_columns=["qid", "docno", "rank", "score"],
                          column_types={"qid": WORDS, "docno": WORDS, "rank": pa.int64(), "score": pa.float64()}))
    q = t.column("qid").combine_chunks()
    d = t.column("docno").combine_chunks()
    return (q.indices.to_numpy(zero_copy_only=False), d.indices.to_numpy(zero_copy_only=False),
            t.column("rank").to_numpy(), t.column("score").to_numpy())


def parse_tuned(path: Path) -> pa.Table:
    """qid, docno (plain strings), rank and score of one run file: ISA-L inflates, one block parses."""
    from isal import isal_zlib   # zlib's interface: releases the GIL while it inflates
    data = path.read_bytes()
    if data[:2] == b"\x1f\x8b":
        data = isal_zlib.decompress(data, 31)   # 31: a gzip member (these files have one each)
    first = data[:512].split(b"\n", 1)[0]
    delim = "\t" if b"\t" in first else " "
    return pcsv.read_csv(pa.py_buffer(data),
                         read_options=pcsv.ReadOptions(column_names=["qid", "q0", "docno", "rank", "score", "tag"],
                                                       use_threads=False, block_size=len(data) + 1),
                         parse_options=pcsv.ParseOptions(delimiter=delim),
                         convert_options=pcsv.ConvertOptions(
                             include_columns=["qid", "docno", "rank", "score"],
                             column_types={"qid": pa.string(), "docno": pa.string(), "rank": pa.int64(),
                                           "score": pa.float64()}))


def main() -> int:
    args = sys.argv[1:]
    tuned = "--tuned" in args
    args = [a for a in args if a != "--tuned"]
    root = Path(args[0]) if args else DEFAULT
    files = sorted(p for p in root.iterdir() if p.is_file())
    with ThreadPoolExecutor(os.cpu_count() or 1) as pool:
        parts = list(pool.map(parse_tuned if tuned else parse, files))
    if tuned:   # one encoding of every file's strings together, into arrays
        import pyarrow.compute as pc
        parts = [(pc.dictionary_encode(pa.chunked_array([t.column("qid").chunk(0) for t in parts])),
                  pc.dictionary_encode(pa.chunked_array([t.column("docno").chunk(0) for t in parts])),
                  np.concatenate([t.column("rank").to_numpy() for t in parts]),
                  np.concatenate([t.column("score").to_numpy() for t in parts]))]
    n = sum(len(p[2]) for p in parts)
    print(f"{len(files)} files, {n} lines", file=sys.stderr)
    return 0


if __name__ == "__main__":
    sys.exit(main())
