"""Shared fixtures: where ../shared/data lives, and small synthetic runs generated in code."""
from __future__ import annotations

import functools
import gc
import os
from pathlib import Path

import pytest

SHARED_DATA = Path(__file__).resolve().parents[1].parent / "shared" / "data"
COVID = SHARED_DATA / "trec-covid-round1"
VASWANI = SHARED_DATA / "vaswani"


# The quick run is ``python -m pytest -m "not slow"``; CI runs everything.  A test is slow when it
# reads the real collections (the covid / vaswani fixtures), runs the reference tools or whole
# processes over every docs page and example, or brute-forces many orderings.
SLOW_FILES = {"test_reference.py", "test_docs.py", "test_docs_site.py", "test_examples.py", "test_pisa.py"}
SLOW_TESTS = {
    "test_expected_ties_equal_brute_force",          # every ordering of every tie group, many seeds
    "test_sigkill_loses_nothing_and_resumes_identically", "test_concurrent_writers_are_refused",
    "test_cli_interactive_in_tmux", "test_cli_interactive_in_a_subprocess",
    # whole processes (the interpreter, the imports, the exit status): about a second of CPU each
    "test_plot_rbp_ranges_returns_a_figure_without_pyplot", "test_eval_memory_option_gives_the_same_output",
    "test_the_real_process_exits_2_with_one_sentence", "test_eval_command_with_qrels_needing_a_word_says_it",
    # the quick run's longest (1.5 s or more each on this 2-core machine): plots drawn and saved, pages
    # rendered, ppi_py's import, enumerations, several commands or processes in one test
    "test_topic_design_equals_ppi_py", "test_save_only_some_files_writes_the_same_bytes", "test_from_arrays_and_plots",
    "test_rounds_ahead_keep_the_faster_assessor_busy", "test_too_many_runs_for_the_width_thin_the_labels_instead_of_piling_them",
    "test_tukey_replicates_and_interpolated_sf", "test_report_in_chunks_writes_the_same_page",
    "test_cli_writes_byte_identical_tables", "test_selection_ranges_label_runs_by_name_and_keep_the_axis_label",
    "test_distributions_at_143_runs", "test_ties_within_a_small_budget_prints_the_same_tables",
    "test_demo_ends_with_every_file_it_wrote_what_to_open_and_the_commands",
    "test_shared_reaches_nominal_coverage_and_independent_over_covers", "test_two_processes_filling_one_cache_leave_it_whole",
    "test_parallel_alignment_equals_serial", "test_robustness_force_without_plots_leaves_no_old_png",
    "test_base_never_falls_and_residual_never_rises_as_judgments_are_added",
    "test_linearised_variance_and_bias_by_enumeration", "test_any_sequence_of_interruptions_gives_the_same_session",
}


def _reference_corrections_without_gc() -> None:
    """statsmodels' ``multipletests`` (the tests' reference for p-value corrections) runs a full
    ``gc.collect()`` on every Holm call: in a test process holding thousands of objects that is
    0.1-0.7 s a call, and the brute-force references call it thousands of times.  The values do not
    depend on it, so the tests' copy runs with ``gc.collect`` a no-op for the call's duration."""
    try:
        from statsmodels.stats import multitest
    except ImportError:
        return
    original = multitest.multipletests

    @functools.wraps(original)
    def multipletests(*args, **kwargs):
        collect, gc.collect = gc.collect, (lambda generation=2: 0)
        try:
            return original(*args, **kwargs)
        finally:
            gc.collect = collect

    multitest.multipletests = multipletests


def _write_bytecode() -> None:
    """Bytecode is written during the test run even where ``PYTHONDONTWRITEBYTECODE=1`` is set (as in many
    container images): else every run compiles the package's modules again in each worker and each
    command-line process, and pytest rewrites every test module's asserts again, about 5 CPU-s a worker
    of the quick run's 60.  The files go to ``__pycache__/`` beside the sources (git-ignored), as ``pip
    install`` and the benchmarks (benchmarks/w1_process.py) byte-compile before running."""
    import sys
    sys.dont_write_bytecode = False


def _ctrl_c_delivered() -> None:
    """A shell's background job (``pytest ... &`` in a script) starts with Ctrl-C (SIGINT) ignored, and
    programs started from it inherit that: the tests that press Ctrl-C on a command would see it run to
    the end.  The test process takes Python's own handler back, so the commands it starts get SIGINT's
    default action, as from a terminal."""
    import signal
    if signal.getsignal(signal.SIGINT) == signal.SIG_IGN:
        signal.signal(signal.SIGINT, signal.default_int_handler)


def _reuse_freed_memory() -> None:
    """glibc hands an allocation above its mmap threshold (at most 32 MB) fresh pages from the kernel,
    and gives them back when it is freed, so every large array a test makes is page faults and pages
    zeroed again (about a tenth of the suite's CPU time was the kernel's).  In the processes that run
    tests, freed memory stays in the heap for the next array up to 256 MB an allocation and 512 MB
    at the top of the heap, as the commands do for their batch work (``batch_memory`` in
    ``cli/_process.py``).  Measured on the docs-number reruns of webber2012, moffat2007 and the
    uncertainty and robustness tables (-n 0): 44.5 to 41.5 CPU-s, a quarter fewer page faults, the
    same peak.  A test that grows the heap much still gives it back afterwards (GIVE_BACK_GROWTH)."""
    import sys
    if not sys.platform.startswith("linux"):
        return
    import ctypes
    try:
        mallopt = ctypes.CDLL(None).mallopt
    except (OSError, AttributeError):   # not glibc
        return
    m_trim_threshold, m_mmap_threshold = -1, -3
    mallopt(m_mmap_threshold, 256 * 2**20)
    mallopt(m_trim_threshold, 512 * 2**20)


def pytest_configure(config):
    _write_bytecode()
    _ctrl_c_delivered()
    if getattr(config, "workerinput", None) is not None or not getattr(config.option, "numprocesses", None):
        _reuse_freed_memory()   # where tests run: not in pytest-xdist's controller
    if getattr(config, "workerinput", None) is not None or not getattr(config.option, "numprocesses", None):
        _reference_corrections_without_gc()   # where tests run: not in pytest-xdist's controller
    if getattr(config.option, "numprocesses", None):
        config.option.loadscopereorder = False    # the controller hands the groups out as sorted below
    config.addinivalue_line("markers", "collection(**params): the synthetic collection the module's `coll` fixture "
                            "gives, make_collection(**params) (default_collection() when unmarked)")


#: session fixtures that are costly to build (the 143 TREC-COVID runs read, Vaswani indexed with PISA, the
#: reproductions on the synthetic collection): under pytest-xdist's ``--dist loadgroup`` (pyproject.toml's
#: addopts) each one's users run on one worker, so it is built once, not once per worker
SESSION_GROUPS = {"covid_collection": "covid_collection", "vaswani_pisa": "vaswani_pisa", "reproduced": "reproduced"}


#: the groups that take longest (a minute of CPU or more for the first two, 10-50 s the others), longest first:
#: under pytest-xdist they are handed out first, so that the short groups fill in around them and no long one
#: is left running alone at the end; the other groups follow, most tests first (pytest-xdist's own order)
LONG_GROUPS = ["covid_collection", "tests/docs/test_docs_numbers.py", "tests/docs/test_docs.py",
               "tests/reproduce/test_reproduce.py", "tests/docs/test_examples.py", "reproduced",
               "tests/selection/test_selection_durable.py", "tests/web/test_web_load.py",
               "tests/processes/test_worker_pool.py", "tests/experiments/test_versions_covid.py",
               "tests/web/test_web_browser.py", "vaswani_pisa"]


@pytest.hookimpl(tryfirst=True)      # before pytest-xdist reads the xdist_group markers
def pytest_collection_modifyitems(config, items):
    group_of = {}
    for item in items:
        fixtures = set(getattr(item, "fixturenames", ()))
        if (item.path.name in SLOW_FILES or getattr(item, "originalname", item.name) in SLOW_TESTS
                or fixtures & {"covid", "vaswani"}):
            item.add_marker(pytest.mark.slow)
        groups = [SESSION_GROUPS[f] for f in SESSION_GROUPS if f in fixtures]
        # one group a test: the first shared fixture it takes; the other tests of a file run on one
        # worker, so its module fixtures (``coll``, a demo's output, parsed sources) are built once, not
        # once on each worker
        group_of[item.nodeid] = groups[0] if groups else item.nodeid.split("::")[0]
        item.add_marker(pytest.mark.xdist_group(group_of[item.nodeid]))
    if getattr(config, "workerinput", None) is not None:   # a pytest-xdist worker: every worker sorts alike
        size = {}
        for g in group_of.values():
            size[g] = size.get(g, 0) + 1
        rank = {g: i for i, g in enumerate(LONG_GROUPS)}
        items.sort(key=lambda it: (rank.get(group_of[it.nodeid], len(rank)), -size[group_of[it.nodeid]]))


def pytest_collection_finish(session):
    """What collection left (the test items, the imported libraries) stays for the whole session: kept out
    of the garbage collector's full passes, which would otherwise walk it again and again.  Hypothesis is
    loaded first: its plugins register their random generators, a check that looks for referrers with
    ``gc.get_referrers``, which does not see frozen objects."""
    try:
        import hypothesis  # noqa: F401
    except ImportError:
        pass
    gc.collect()
    gc.freeze()


def pytest_unconfigure(config):
    """At the end pytest collects garbage five times over (to report exceptions raised in finalizers), each
    pass walking everything the session still holds (the modules, the cached collections and syntax trees):
    one pass here finds the garbage, under pytest's hook for those exceptions still, and freezes what is
    left, so that the five passes walk only what was made since."""
    gc.collect()
    gc.freeze()


def require(path: Path) -> Path:
    """Skip the calling test with a one-line reason when a shared data set is absent."""
    if not path.exists():
        pytest.skip(f"real data not available: {path} is absent (../shared/data is not beside the repo)")
    return path


@pytest.fixture(scope="session")
def covid() -> Path:
    return require(COVID)


@pytest.fixture(scope="session")
def vaswani() -> Path:
    return require(VASWANI)


@functools.lru_cache(maxsize=None)
def _synthetic(params: tuple) -> "SyntheticCollection":  # noqa: F821
    from pyterrier_noise.synthetic import default_collection, make_collection
    return make_collection(**dict(params)) if params else default_collection()


@pytest.fixture(scope="module")
def coll(request):
    """The synthetic collection of a test module: ``default_collection()``, or ``make_collection(**params)``
    for a module marked ``pytestmark = pytest.mark.collection(**params)`` (or a test parametrised with
    ``indirect=["coll"]`` and a dict of params).  Each collection is built once a session; every module gets
    its own deep copy, so a module may modify it."""
    params = getattr(request, "param", None)
    if params is None:
        marker = request.node.get_closest_marker("collection")
        params = marker.kwargs if marker else {}
    return _synthetic(tuple(sorted(params.items()))).copy()
@pytest.fixture(scope="session")
def vaswani_pisa(vaswani, tmp_path_factory):
    """Vaswani's 11,429 documents indexed once per session with pyterrier-pisa (one thread), in a
    temporary directory; shared by the PISA pipeline tests."""
    pisa = pytest.importorskip("pyterrier_pisa", reason="pyterrier-pisa is not installed")
    import gzip
    import re
    import warnings
    corpus = gzip.open(vaswani / "corpus.trec.gz", "rt").read()
    docs = re.findall(r"<DOCNO>\s*(\S+)\s*</DOCNO>(.*?)</DOC>", corpus, flags=re.S)
    assert len(docs) == 11429                       # Vaswani's corpus size
    index = pisa.PisaIndex(str(tmp_path_factory.mktemp("pisa") / "vaswani.pisa"), threads=1)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", UserWarning)  # pisa: "text_field not specified"
        index.index({"docno": d, "text": t.strip()} for d, t in docs)
    return index


#: data read once and shared by the consecutive tests that use it (an xdist group runs on one worker,
#: in collection order), by fixture name; dropped when the last of those tests is done
_HELD: dict = {}


def _give_back_memory() -> None:
    """Collect, then hand glibc's freed heap back to the system, so that the rest of the worker's
    tests (and the processes they fork, which inherit its size) do not carry the dropped data."""
    import ctypes
    import gc
    gc.collect()
    try:
        ctypes.CDLL(None).malloc_trim(0)
    except (OSError, AttributeError):   # not glibc
        pass


def _resident_bytes() -> int:
    """The process's resident set size now (0 where ``/proc`` is absent)."""
    try:
        with open("/proc/self/statm") as f:
            return int(f.read().split()[1]) * os.sysconf("SC_PAGE_SIZE")
    except (OSError, ValueError, IndexError, AttributeError):
        return 0


#: a worker whose resident size grew this much since it last gave memory back gives it back after the test:
#: the heavy tests (the docs reruns on TREC-COVID, the docs pages' examples) leave hundreds of MB of freed
#: heap behind, and the next heavy test of the worker would otherwise peak on top of it
GIVE_BACK_GROWTH = 256 * 2**20
_floor = [0]


@pytest.hookimpl(wrapper=True)
def pytest_runtest_teardown(item, nextitem):
    result = yield          # the finished module's fixtures are torn down by now
    names = [n for n in _HELD if n in item.fixturenames
             and (nextitem is None or n not in getattr(nextitem, "fixturenames", ()))]
    for name in names:
        del _HELD[name]
    resident = _resident_bytes()
    if names or resident > _floor[0] + GIVE_BACK_GROWTH:
        _give_back_memory()
        _floor[0] = _resident_bytes()
    else:
        _floor[0] = min(_floor[0], resident)
    return result


@pytest.fixture(scope="module")
def covid_collection(covid):
    """TREC-COVID round 1: (qrels, {run name: frame}), all 143 runs, read once for the tests that
    use it one after another (its xdist group) and dropped after the last of them.  Shared by every
    reference test: treat the frames as read-only."""
    if "covid_collection" not in _HELD:
        from pyterrier_noise import read_qrels, read_runs
        qrels = read_qrels(covid / "qrels-rnd1.txt")
        runs = read_runs(covid / "runs")
        assert len(runs) == 143
        _HELD["covid_collection"] = qrels, runs
    return _HELD["covid_collection"]
