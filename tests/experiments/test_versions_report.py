"""The report section of a label-versions experiment: its tables and the conclusion computed from them."""
from __future__ import annotations

import re

import numpy as np

from collection_helpers import random_collection
from pyterrier_noise.experiments import versions_experiment
from pyterrier_noise.report import build_report
from pyterrier_noise.report.versions import versions_conclusion


def _result():
    runs, q = random_collection(8, n_runs=5, n_topics=8)
    rng = np.random.default_rng(1)
    noisy = q.assign(label=np.where(rng.random(len(q)) < 0.5, rng.integers(0, 3, len(q)), q["label"]))
    mild = q.assign(label=np.where(rng.random(len(q)) < 0.1, rng.integers(0, 3, len(q)), q["label"]))
    return versions_experiment(runs, None, {"nist": q, "noisy": noisy, "mild": mild}, ["AP", "P@5"])


def test_conclusion_names_the_farthest_version_with_its_numbers():
    res = _result()
    s = res.summary[(res.summary["measure"] == "AP") & (res.summary["version"] != "nist")]
    worst = s.loc[s["kendall_tau"].idxmin()]
    text = versions_conclusion(res, "AP")
    assert f"is {worst['version']!r}" in text
    assert f"tau {worst['kendall_tau']:.3f}" in text
    assert f"up to {int(worst['max_rank_change'])} ranks" in text
    n_sig = int(res.significance.query("measure == 'AP' and version == 'nist'")["significant"].iloc[0])
    assert f"of the {n_sig:,} pairs significant" in text


def test_report_page_holds_the_section_and_the_policy():
    res = _result()
    page = build_report("versions", versions=res).html()
    assert "Whose judgments?" in page
    assert "as trec_eval treats it" in page                    # the unjudged policy, stated
    text = re.sub(r"<[^>]+>", " ", page)
    for m in res.measures:
        assert versions_conclusion(res, m).split(":")[0] in text.replace("&#x27;", "'")
    assert "Cohen" in page and "Krippendorff" in page
