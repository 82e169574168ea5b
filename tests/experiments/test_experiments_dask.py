"""Sweeps on a Dask cluster (``executor=``): the replicate chunks of a robustness experiment and the
methods of a selection simulation, run as tasks on two worker processes, give exactly the local
run's result for the same seed."""
from __future__ import annotations

import importlib.util

import pandas as pd
import pytest

from pyterrier_noise import InputError
from pyterrier_noise.experiments import robustness_experiment
from pyterrier_noise.judges import RandomFlips, RankBiasedFlips

pytestmark = [pytest.mark.slow,   # two worker processes start (about 5 s)
              pytest.mark.skipif(importlib.util.find_spec("distributed") is None,
                                 reason="the 'dask' extra (distributed) is not installed")]

MEASURES = ["RBP(p=0.8)", "AP", "nDCG@10"]


@pytest.fixture(scope="module")
def client():
    import distributed   # imported where used: collecting the quick subset does not load it
    with distributed.LocalCluster(n_workers=2, threads_per_worker=1, processes=True, dashboard_address=":0") \
            as cluster, distributed.Client(cluster) as c:
        yield c


def _same(a, b) -> None:
    assert a.frames().keys() == b.frames().keys()
    for name, frame in a.frames().items():
        pd.testing.assert_frame_equal(frame, b.frames()[name], check_exact=True, obj=name)
    for m in a.measures:
        assert (a.means[m] == b.means[m]).all()


@pytest.mark.parametrize("model", [RandomFlips(0.9, 0.1), "rank-biased"],
                         ids=["random", "rank-biased"])
def test_robustness_on_a_cluster_equals_the_local_run(coll, client, model):
    if model == "rank-biased":   # a model that holds runs, sampled chunk by chunk from start=
        model = RankBiasedFlips(0.85, 0.1, coll.runs)
    args = (coll.runs, coll.topics, coll.qrels, MEASURES, model)
    kw = dict(n_replicates=23, seed=7, baseline=0, correction="holm", chunk_size=4, keep_pvalues=True)
    local = robustness_experiment(*args, **kw)
    remote = robustness_experiment(*args, **kw, executor=client)
    _same(local, remote)
    for m in MEASURES:
        assert (local.p_observed[m] == remote.p_observed[m]).all()
    named = robustness_experiment(*args, **kw, executor="dask")   # the current client
    _same(local, named)


def test_selection_methods_on_a_cluster_equal_the_local_run(coll, client):
    from pyterrier_noise.selection import compare_methods
    kw = dict(methods=("A", "C"), checkpoints=(40, 80), seed=3)
    local_summary, local = compare_methods(coll.runs, coll.qrels, **kw)
    remote_summary, remote = compare_methods(coll.runs, coll.qrels, **kw, executor=client)
    pd.testing.assert_frame_equal(local_summary, remote_summary, check_exact=True)
    for m in kw["methods"]:
        pd.testing.assert_frame_equal(local[m].systems, remote[m].systems, check_exact=True)
        pd.testing.assert_frame_equal(local[m].judgments, remote[m].judgments, check_exact=True)


def test_an_unknown_executor_is_refused(coll):
    with pytest.raises(InputError, match="executor must be"):
        robustness_experiment(coll.runs, coll.topics, coll.qrels, ["AP"], RandomFlips(0.9, 0.1), n_replicates=2,
                              executor="spark")
