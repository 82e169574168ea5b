"""The robustness experiment within a memory budget: run files read and aligned a chunk of files at a
time, and smaller chunks of replicates, give the same result as everything at once."""
from __future__ import annotations

import pandas as pd
import pytest

import pyterrier_noise as pn
from pyterrier_noise import InputError, NoiseWarning
from pyterrier_noise.experiments import robustness_experiment
from pyterrier_noise.experiments import robustness as robustness_module
from pyterrier_noise.judges import RandomFlips

MEASURES = ["RBP(p=0.8)", "AP", "nDCG@10"]


class Recording(RandomFlips):
    """Random flips that note the size of every chunk of replicates they draw."""
    sizes: list = []

    def sample_labels(self, table, n, seed=None, start=0):
        self.sizes.append(n)
        return super().sample_labels(table, n, seed=seed, start=start)


@pytest.fixture(scope="module")
def files(coll, tmp_path_factory):
    d = tmp_path_factory.mktemp("runs")
    for name, run in list(coll.runs.items())[:7]:
        pn.write_trec_run(run, d / f"{name}.gz" if name.endswith("1") else d / name)
    pn.write_trec_qrels(coll.qrels, d.parent / "qrels.txt")
    return sorted(d.iterdir()), d.parent / "qrels.txt"


def test_a_small_budget_aligns_file_chunks_and_gives_the_same_result(files, monkeypatch):
    runs, qrels = files
    built = []
    real = robustness_module.AlignedRuns.build
    monkeypatch.setattr(robustness_module.AlignedRuns, "build",
                        lambda r, *a, **k: built.append(len(r)) or real(r, *a, **k))
    kw = dict(n_replicates=13, seed=2, baseline=0, correction="holm", keep_pvalues=True, chunk_size=5)
    model = Recording(0.9, 0.1)
    whole = robustness_experiment(runs, None, qrels, MEASURES, model, memory=None, **kw)
    assert built == [len(runs)] and model.sizes == [5, 5, 3]
    built.clear()
    model.sizes.clear()
    with pytest.warns(NoiseWarning, match=rf"{len(runs)} run file\(s\) need more than the memory budget of 1 bytes"):
        small = robustness_experiment(runs, None, qrels, MEASURES, model, memory=1, **kw)
    assert built == [1] * len(runs) and model.sizes == [1] * 13   # one file a chunk, one replicate a chunk
    assert whole.names == small.names
    for name, frame in whole.frames().items():
        pd.testing.assert_frame_equal(frame, small.frames()[name], check_exact=True, obj=name)
    for m in MEASURES:
        assert (whole.means[m] == small.means[m]).all() and (whole.p_observed[m] == small.p_observed[m]).all()


@pytest.mark.parametrize("memory", [0, -1.0, float("nan")])
def test_a_budget_that_is_not_positive_is_refused(coll, memory):
    with pytest.raises(InputError, match="memory must be a positive number"):
        robustness_experiment(coll.runs, coll.topics, coll.qrels, ["AP"], RandomFlips(0.9, 0.1), n_replicates=2,
                              memory=memory)
