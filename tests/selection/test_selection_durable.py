"""Judging sessions that cannot be lost: the creation race, damaged files, backups and recovery, the
oracle's identity and SIGKILL at start-up (issue 14)."""
from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest

from pyterrier_noise.selection import JudgingSession, QrelsOracle, SessionError

from test_selection_session import FakeSelector, _child_prelude, steps

TESTS = Path(__file__).resolve().parents[1]
REPO = TESTS.parent


pytestmark = pytest.mark.collection(n_topics=5, n_systems=6, n_docs_per_topic=60, depth=20, pool_depth=5, seed=3)


_RACER = """
import json, sys, time
from pyterrier_noise.synthetic import make_collection
from pyterrier_noise.selection import JudgingSession, QrelsOracle, SessionError, SessionLockedError
c = make_collection(n_topics=5, n_systems=6, n_docs_per_topic=60, depth=20, pool_depth=5, seed=3)
qo = QrelsOracle(c.true_qrels)
print("ready", flush=True)
for line in sys.stdin:
    path, t0 = line.split()
    t0 = int(t0)
    time.sleep(max(0.0, (t0 - time.time_ns()) / 1e9 - 0.005))   # sleep to 5 ms before the start time,
    while time.time_ns() < t0:   # then both racers spin on one shared start time
        pass
    started = time.time_ns()
    events = []
    out = {}
    try:
        with JudgingSession(path, runs=c.runs, selector_factory=FakeSelector) as s:
            rep = s.run(qo, budget=15, on_step=lambda e: events.append([e.seq, e.action, e.qid, e.docno, e.label]))
        out["ok"] = rep.n_judged
    except SessionLockedError as e:
        out["locked"] = str(e)
    except SessionError as e:
        out["refused"] = str(e)
    out["events"] = events
    out["started"] = started
    print(json.dumps(out), flush=True)
"""


@pytest.mark.slow
def test_creation_race_never_loses_the_winners_file(tmp_path, coll):
    """Two processes create the same new session file at one instant, 50 times: the file and every
    judgment any process reported survive; a process that cannot judge gets a clear refusal."""
    code = _child_prelude(True, False) + _RACER
    procs = [subprocess.Popen([sys.executable, "-c", code], stdin=subprocess.PIPE, stdout=subprocess.PIPE,
                              stderr=subprocess.PIPE, text=True, cwd=REPO) for _ in range(2)]
    try:
        for p in procs:
            assert p.stdout.readline().strip() == "ready", p.stderr.read()
        close = 0
        diffs = []
        for trial in range(50):
            path = tmp_path / f"race{trial}.sqlite"
            t0 = time.time_ns() + 100_000_000
            for p in procs:
                p.stdin.write(f"{path} {t0}\n")
                p.stdin.flush()
            outs = [json.loads(p.stdout.readline()) for p in procs]
            diffs.append(outs[0]["started"] - outs[1]["started"])
            close += abs(diffs[-1]) < 100_000
            assert path.exists(), (trial, outs)
            assert not list(tmp_path.glob(f".race{trial}.sqlite.*")), "a temporary file was left behind"
            with JudgingSession(path, selector_factory=FakeSelector) as s:
                h = s.history
                assert sorted(s.judged_qrels(include_initial=False)["docno"]) == sorted(h["docno"])
                got = [[int(r.seq), r.action, r.qid, r.docno, float(r.label)] for r in h.itertuples()]
            for o in outs:
                assert got[:len(o["events"])] == o["events"], (trial, o)   # every reported judgment is there
                assert set(o) & {"ok", "locked", "refused"}
                if "locked" in o:
                    assert "open in another process" in o["locked"]
            if any("ok" in o for o in outs):
                assert len(got) == 15
        print(f"{close} of 50 trials started within 0.1 ms", diffs)
    finally:
        for p in procs:
            p.stdin.close()
            p.wait(timeout=60)


def test_losing_the_creation_race_opens_the_winners_file_and_deletes_nothing(tmp_path, coll, monkeypatch):
    """Deterministic interleaving: another process publishes the file while this one is building its
    copy; this one then treats the file as an existing session (it never deletes it)."""
    import pyterrier_noise.selection.session as session_mod
    path = tmp_path / "s.sqlite"
    real = session_mod.publish

    def racing_publish(p, write):
        monkeypatch.setattr(session_mod, "publish", real)   # the winner publishes normally
        with JudgingSession(p, runs=coll.runs, selector_factory=FakeSelector) as winner:
            winner.run(QrelsOracle(coll.true_qrels), budget=7)
        return real(p, write)

    monkeypatch.setattr(session_mod, "publish", racing_publish)
    # same runs and settings: the loser resumes the winner's session (its 7 judgments are there)
    with JudgingSession(path, runs=coll.runs, selector_factory=FakeSelector) as loser:
        assert loser.n_judged == 7
    monkeypatch.setattr(session_mod, "publish", real)
    path.unlink()
    monkeypatch.setattr(session_mod, "publish", racing_publish)
    # other settings: a clear refusal, and the winner's file and judgments stay
    with pytest.raises(SessionError, match="created with p=0.8, not 0.5"):
        JudgingSession(path, runs=coll.runs, p=0.5, selector_factory=FakeSelector)
    monkeypatch.setattr(session_mod, "publish", real)
    with JudgingSession(path, selector_factory=FakeSelector) as s:
        assert s.n_judged == 7
    assert sorted(x.name for x in tmp_path.iterdir()) == ["s.sqlite"]   # no temporary file left


def test_a_failed_creation_leaves_nothing(tmp_path, coll):
    with pytest.raises(SessionError, match="needs the runs"):
        JudgingSession(tmp_path / "new.sqlite", selector_factory=FakeSelector)
    with pytest.raises(Exception, match="'p'"):
        JudgingSession(tmp_path / "new.sqlite", runs=coll.runs, p=1.5, selector_factory=FakeSelector)
    assert list(tmp_path.iterdir()) == []


def _judged_session(path, coll, budget=20):
    with JudgingSession(path, runs=coll.runs, selector_factory=FakeSelector) as s:
        s.run(QrelsOracle(coll.true_qrels), budget=budget)
        return steps(s)


def _spoil(path, offset, n=3000):
    data = bytearray(path.read_bytes())
    data[offset:offset + n] = (b"\xde\xad\xbe\xef" * (n // 4 + 1))[:len(data[offset:offset + n])]
    path.write_bytes(bytes(data))


@pytest.mark.parametrize("where", ["middle", "last page"])
def test_damaged_file_is_detected_at_open_and_recovered(tmp_path, coll, where, capsys):
    from pyterrier_noise import cli
    path = tmp_path / "s.sqlite"
    whole = _judged_session(path, coll)
    size = path.stat().st_size
    _spoil(path, size // 2 if where == "middle" else size - 4096 + 8, 4000)
    with pytest.raises(SessionError) as err:
        JudgingSession(path, selector_factory=FakeSelector)
    msg = str(err.value)
    assert "damaged" in msg and "--recover" in msg and "cannot repair" in msg
    # the command line: a sentence and exit status 2, no traceback
    code = cli.main(["judge", "--session", str(path), "--export", str(tmp_path / "q.txt")])
    out = capsys.readouterr()
    assert code == 2 and "Traceback" not in out.err and "damaged" in out.err
    # recover what is readable: with the runs given in case their stored copy is the damaged part
    code = cli.main(["judge", "--session", str(path), "--recover", str(tmp_path / "new.sqlite"),
                     str(coll.write_trec(tmp_path / "c") / "runs")])
    out = capsys.readouterr()
    assert code == 0, out.err
    with JudgingSession(tmp_path / "new.sqlite", selector_factory=FakeSelector) as s:
        got = steps(s)
        assert got == whole[:len(got)] or set(got) <= set(whole)   # only judgments the file held
        s.run(QrelsOracle(coll.true_qrels), budget=25)             # the recovered session judges on
        assert s.n_judged == 25


def test_backup_of_an_open_session_and_after_sigkill(tmp_path, coll, capsys):
    from pyterrier_noise import cli
    path = tmp_path / "s.sqlite"
    with JudgingSession(path, runs=coll.runs, selector_factory=FakeSelector) as s:
        s.run(QrelsOracle(coll.true_qrels), budget=12)
        s.backup(tmp_path / "b.sqlite")
        with pytest.raises(SessionError, match="exists already"):
            s.backup(tmp_path / "b.sqlite")
        whole = steps(s)
    with JudgingSession(tmp_path / "b.sqlite", selector_factory=FakeSelector) as b:
        assert steps(b) == whole
    assert not Path(str(tmp_path / "b.sqlite") + "-wal").exists()
    assert cli.main(["judge", "--session", str(path), "--backup", str(tmp_path / "c.sqlite")]) == 0
    assert "backed up" in capsys.readouterr().out
    with JudgingSession(tmp_path / "c.sqlite", selector_factory=FakeSelector) as c:
        assert steps(c) == whole


def test_a_session_refuses_another_oracle_and_says_what_differs(tmp_path, coll):
    from pyterrier_noise.selection import NoisyOracle
    path = tmp_path / "s.sqlite"
    with JudgingSession(path, runs=coll.runs, selector_factory=FakeSelector) as s:
        s.run(QrelsOracle(coll.true_qrels), budget=5)
        s.run(QrelsOracle(coll.true_qrels), budget=7)   # the same oracle again: fine
        with pytest.raises(SessionError, match=r"missing policy was 'nonrel', now 'bypass'"):
            s.run(QrelsOracle(coll.true_qrels, missing="bypass"), budget=9)
        with pytest.raises(SessionError, match=r"the qrels \(fingerprint\) was '[0-9a-f]{12}\.\.\.'"):
            s.run(QrelsOracle(coll.qrels), budget=9)
        with pytest.raises(SessionError, match="kind of oracle was 'qrels', now 'noisy'"):
            s.run(NoisyOracle(QrelsOracle(coll.true_qrels), tpr=0.9, fpr=0.1, seed=1), budget=9)
        s.run(lambda q, d: 0, budget=8)   # a function (or a person) is not checked
        assert s.n_judged == 8
    with JudgingSession(path, selector_factory=FakeSelector) as s:   # stored in the file
        with pytest.raises(SessionError, match="another oracle"):
            s.run(QrelsOracle(coll.true_qrels, missing="bypass"), budget=9)
    noisy = tmp_path / "n.sqlite"
    with JudgingSession(noisy, runs=coll.runs, selector_factory=FakeSelector) as s:
        s.run(NoisyOracle(QrelsOracle(coll.true_qrels), tpr=0.9, fpr=0.1, seed=1), budget=3)
        with pytest.raises(SessionError, match="noise seed was 1, now 2"):
            s.run(NoisyOracle(QrelsOracle(coll.true_qrels), tpr=0.9, fpr=0.1, seed=2), budget=4)


def test_select_and_judge_spend_no_judgment_on_a_topic_without_qrels(tmp_path, coll, capsys):
    import pandas as pd

    from pyterrier_noise import cli
    from pyterrier_noise.io import write_trec_qrels
    d = coll.write_trec(tmp_path / "c")
    q = coll.true_qrels
    topics = sorted(q["qid"].unique())
    gone = topics[:2]   # two of the five topics lose every judgment
    qrels = tmp_path / "partial.txt"
    write_trec_qrels(q[~q["qid"].isin(gone)], qrels)
    for flag, spent in (([], False), (["--judge-unknown-topics"], True)):
        out = tmp_path / f"sel{len(flag)}"
        with pytest.warns(Warning, match=r"2 of 5 topics of the runs have no judgment .*" + repr(gone[0])):
            code = cli.main(["select", "--method", "C", "--budget", "40", str(qrels), str(d / "runs"),
                             "--out", str(out)] + flag)
        assert code == 0, capsys.readouterr().err
        j = pd.read_csv(out / "judgments.tsv", sep="\t", dtype={"qid": str, "docno": str})
        assert len(j) == 40
        assert j["qid"].isin(gone).any() == spent
    session = tmp_path / "s.sqlite"
    with pytest.warns(Warning, match="no judgment is spent on them"):
        code = cli.main(["judge", "--session", str(session), "--budget", "30", "--qrels", str(qrels), str(d / "runs")])
    assert code == 0, capsys.readouterr().err
    with JudgingSession(session) as s:
        h = s.history
        assert len(h) == 30 and not h["qid"].isin(gone).any()
    # resuming with the same command is accepted (the quota is stored with the session)
    assert cli.main(["judge", "--session", str(session), "--budget", "35", "--qrels", str(qrels), str(d / "runs")]) == 0


_KILLED = """
import os, signal, sys
import pyterrier_noise.selection.session as session_mod
import pyterrier_noise.selection.durable as durable
import pyterrier_noise.selection.store as store_mod
from pyterrier_noise.synthetic import make_collection
from pyterrier_noise.selection import JudgingSession, QrelsOracle
point = {point!r}
def die(where):
    if where == point:
        os.kill(os.getpid(), signal.SIGKILL)
real_publish, real_link, real_connect = session_mod.publish, durable.os.link, store_mod._connect
def publish(path, write):
    def w(c):
        die("before writing")
        write(c)
        die("written, not closed")
    return real_publish(path, w)
def link(a, b):
    die("before publishing")
    real_link(a, b)
    die("published, not opened")
def connect(path, t):
    c = real_connect(path, t)
    die("opened")
    return c
session_mod.publish, durable.os.link, store_mod._connect = publish, link, connect
c = make_collection(n_topics=5, n_systems=6, n_docs_per_topic=60, depth=20, pool_depth=5, seed=3)
s = JudgingSession({path!r}, runs=c.runs, selector_factory=FakeSelector)
s.run(QrelsOracle(c.true_qrels), budget=10, on_step=lambda e: die("step %d" % e.seq))
print("finished", flush=True)
"""


@pytest.mark.slow
@pytest.mark.parametrize("point", ["before writing", "written, not closed", "before publishing",
                                   "published, not opened", "opened", "step 1", "step 6"])
def test_sigkill_during_creation_and_start_up(tmp_path, coll, point):
    """A SIGKILL at each step of creating a session: the path holds either nothing or a whole
    session, and running again gives the session an uninterrupted run gives."""
    path = tmp_path / "s.sqlite"
    code = _child_prelude(True, False) + _KILLED.format(point=point, path=str(path))
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, cwd=REPO, timeout=120)
    assert out.returncode == -signal.SIGKILL, out.stderr
    published = point not in ("before writing", "written, not closed", "before publishing")
    assert path.exists() == published
    if published:
        with JudgingSession(path, selector_factory=FakeSelector) as s:
            assert s.n_judged == (int(point.split()[1]) if point.startswith("step") else 0)
    leftovers = [p for p in tmp_path.iterdir() if p.name.startswith(".s.sqlite.")]
    assert len(leftovers) <= 2   # a killed creator's temporary file (and journal) stays; never the session
    out = subprocess.run([sys.executable, "-c", _child_prelude(True, False) + _KILLED.format(point="", path=str(path))],
                         capture_output=True, text=True, cwd=REPO, timeout=120)
    assert out.stdout.strip() == "finished", out.stderr
    whole = _judged_session(tmp_path / "whole.sqlite", coll, budget=10)
    with JudgingSession(path, selector_factory=FakeSelector) as s:
        assert steps(s) == whole


@pytest.mark.slow
def test_sigkill_at_random_moments_from_start_up_loses_nothing(tmp_path, coll):
    """Kills at random moments from the process's start (import, creation, judging): no reported
    judgment is lost, a backup taken after the kill holds the -wal file's judgments, and the resumed
    session equals an uninterrupted one."""
    import numpy as np
    rng = np.random.default_rng(14)
    whole = _judged_session(tmp_path / "whole.sqlite", coll, budget=30)
    code_for = _child_prelude(True, False) + """
import time
from pyterrier_noise.synthetic import make_collection
from pyterrier_noise.selection import JudgingSession, QrelsOracle
c = make_collection(n_topics=5, n_systems=6, n_docs_per_topic=60, depth=20, pool_depth=5, seed=3)
def slow(q, d, o=QrelsOracle(c.true_qrels)):
    time.sleep(0.01)
    return o.judge(q, d)
s = JudgingSession(PATH, runs=c.runs, selector_factory=FakeSelector)
s.run(slow, budget=30, on_step=lambda e: print(e.seq, e.action, e.qid, e.docno, e.label, flush=True))
"""
    for trial in range(12):
        path = tmp_path / f"k{trial}.sqlite"
        child = subprocess.Popen([sys.executable, "-c", code_for.replace("PATH", repr(str(path)))], stdout=subprocess.PIPE,
                                 stderr=subprocess.PIPE, text=True, cwd=REPO)
        try:   # a random moment: not measured, any moment must be safe (a child done before it is not killed)
            child.wait(timeout=float(rng.uniform(0.0, 4.0)))
        except subprocess.TimeoutExpired:
            child.send_signal(signal.SIGKILL)
        rest, _ = child.communicate(timeout=60)
        reported = [line.split() for line in rest.splitlines()]
        if not path.exists():
            assert not reported
            continue
        with JudgingSession(path, selector_factory=FakeSelector) as s:
            s.backup(tmp_path / f"b{trial}.sqlite")
            got = [list(map(str, (r.seq, r.action, r.qid, r.docno, r.label))) for r in s.history.itertuples()]
            assert got[:len(reported)] == [[a, b, c_, d, str(float(e))] for a, b, c_, d, e in reported]
            s.run(QrelsOracle(coll.true_qrels), budget=30)
            assert steps(s) == whole
        with JudgingSession(tmp_path / f"b{trial}.sqlite", selector_factory=FakeSelector) as b:
            assert b.n_judged >= len(reported)


@pytest.mark.slow   # a signal test
def test_sigkill_during_a_qrels_run_loses_no_reported_judgment(tmp_path, coll):
    """A qrels oracle's steps are committed without waiting for the disk: a process killed in the
    middle of such a run still leaves every step it reported in the file, and the resumed session
    equals an uninterrupted one."""
    whole = _judged_session(tmp_path / "whole.sqlite", coll, budget=30)
    path = tmp_path / "k.sqlite"
    code = _child_prelude(True, False) + f"""
import time
from pyterrier_noise.synthetic import make_collection
from pyterrier_noise.selection import JudgingSession, QrelsOracle
c = make_collection(n_topics=5, n_systems=6, n_docs_per_topic=60, depth=20, pool_depth=5, seed=3)
def told(e):
    print(e.seq, e.action, e.qid, e.docno, e.label, flush=True)
    time.sleep(0.05)
s = JudgingSession({str(path)!r}, runs=c.runs, selector_factory=FakeSelector)
s.run(QrelsOracle(c.true_qrels), budget=30, on_step=told)
"""
    child = subprocess.Popen([sys.executable, "-c", code], stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                             text=True, cwd=REPO)
    reported = []
    for line in child.stdout:
        reported.append(line.split())
        if len(reported) == 10:
            os.kill(child.pid, signal.SIGKILL)
            break
    child.wait(timeout=60)
    assert child.returncode == -signal.SIGKILL and len(reported) == 10
    with JudgingSession(path, selector_factory=FakeSelector) as s:
        got = [list(map(str, (r.seq, r.action, r.qid, r.docno, r.label))) for r in s.history.itertuples()]
        assert got[:10] == [[a, b, c_, d, str(float(e))] for a, b, c_, d, e in reported]
        s.run(QrelsOracle(coll.true_qrels), budget=30)
        assert steps(s) == whole
