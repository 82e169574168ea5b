"""Evidence benchmark: cheap (LLM-like) judges plus a small gold sample on TREC-COVID round 1.

The NIST qrels of round 1 (8,691 judged pairs, grades 0-2, 30 topics) are the truth; the 143 runs
are evaluated by P@10 and RBP(p=0.8).  A simulated cheap judge relabels every judged pair by a
confusion matrix by grade whose errors depend on rank (rates below); a gold sample of 100, 300 or
1,000 pairs is drawn by the stratified design (cheap label x rank-weight bins, inclusion
probabilities known) and labelled with the NIST grade.  Each of ``--studies`` simulated studies
draws new cheap labels and a new gold sample.  Per method (naive, Goldberg et al. 2017, PPI, PPI++,
gold-only) it reports:

* coverage of the 95% intervals of every system's mean and of every pair's difference, against
  the NIST value on these 30 topics (collection scope; the naive interval is today's t interval);
* the interval width relative to gold-only (median over systems of the ratio of standard errors,
  then the median over studies);
* bias and RMSE of the system means; Kendall's tau of the ranking against NIST's;
* significance conclusions (topics scope, two-sided 0.05, no multiplicity correction) against
  NIST's paired t-tests: kept (same direction), lost, gained, reversed, per study on average.

nDCG@10 is estimated under the pair design too, by the ratio estimator (DCG@10 and the topic's
counts per grade by the rectifier, their ratio per topic, a linearised variance); it has no
Goldberg et al. row.  nDCG@10 and AP are also estimated under the topic design: the gold judge
labels every pair of 4 or 8 random topics (about 1,160 or 2,320 pairs), and PPI runs over topics
(``--topic-budgets``).  ``--measures`` and ``--designs`` run a subset of the rows.

AP is estimated under the pair design too (``--measures AP --designs pairs``, results in
``cheap_judges_ap.json``): prediction-powered inference on the per-topic ratio of AP's numerator and
its number of relevant documents (``pyterrier_noise.correction.ap_pair``), with no Goldberg et al. row.
Below ``ap_pair.MIN_RELEVANT_PER_TOPIC`` sampled relevant pairs per topic on average (or with a topic
whose sample holds none) AP is not estimated (NaN); such studies are left out of the AP rows' scores
and counted in ``valid`` (the share of studies with an estimate).  ``--ap-min-relevant 0`` turns the
minimum off, to measure the estimator where it is not valid; each row reports ``relevant_per_topic``,
the mean number of sampled relevant pairs per topic.

``--sampling srs`` draws a plain simple random sample of pairs instead of the stratified plan and
analyses it as ``calibrate`` does a gold file given without a design: post-stratified by cheap label
x rank weight (``correction.design.post_stratify``); ``--sampling srs-pooled`` analyses the same
samples as one stratum (the analysis before post-stratification), for comparison.  ``--sampling
active`` draws by the active design, with a probability column that is over-confident: each pair's
stated error is uniform on 1-30% whatever its actual error (about 36% on average).

A second, rank-independent judge (``--judges flat``: the deep-rank confusion for every pair, the
assumption of Goldberg et al. 2017) shows when their correction works.

Pairs: a seeded random subset of ``--pairs`` of the 10,153 pairs (all of them with ``--pairs 0``)
keeps the default run under about ten minutes on two shared cores.

The cheap judge's rates are approximations chosen to look like published LLM judges, not fitted:
UMBRELA (Upadhyay et al. 2024) reports Cohen's kappa of about 0.3-0.5 between GPT-4o grades and
TREC Deep Learning assessors, and Thomas et al. (2024) report that LLM graders are lenient on
non-relevant documents that look topical; so the judge below agrees with NIST on about 64% of the
round-1 pairs (Cohen's kappa about 0.36 graded, 0.42 for relevant / not relevant), calls more
non-relevant documents relevant when some run ranks them in its top 10, and is more accurate on
highly relevant documents than on partially relevant ones.

Goldberg et al.'s correction is fitted within rank strata by default (one confusion matrix for the
pairs some run ranks in its top 10, one for the others: ``CheapStudy(goldberg_rank_bins=[10])``).
``--goldberg-variants`` runs several forms of it on the same gold samples, comma-separated, each
``BINS[:SE]``: ``none`` (one matrix for every pair, as in the paper), ``10`` or ``10-100`` (rank-bin
edges), and ``:bootstrap`` for the calibration variance by their parametric bootstrap (Alg 1)
instead of the delta method; ``--methods`` restricts the other methods (gold-only always runs: the
widths are relative to it).  Each Goldberg row also reports ``se_ratio``: the median over systems
of the root mean squared SE over the empirical SD of the estimate across studies (1: the SE is
right on average; above 1: too large) and ``se_ratio_robust``, the median SE over the
interquartile range / 1.349 (the same, insensitive to the few studies whose calibration is nearly
singular); ``err_se_spearman``: the median over systems of Spearman's correlation, across
studies, between the estimate's absolute error and its SE (positive: the studies with the largest
errors also have the widest intervals); ``not_identified``: the share of studies in which a confusion
matrix that carries weight in the measure is not identified by the gold sample (``|det J| / sd(det J)
< 2``, ``CheapStudy.goldberg_diagnostics``), with the coverage of those studies and of the others
(``cov_sys_identified``, ``cov_sys_not_identified``, and the same for pairs).

Usage:  python benchmarks/cheap_judges.py [--studies 500] [--budgets 100,300,1000] [--topic-budgets 4,8]
        [--pairs 500] [--judges rank,flat] [--measures 'P@10,RBP(p=0.8),nDCG@10'] [--designs pairs,topics]
        [--methods naive,goldberg,ppi,ppi++,gold] [--goldberg-variants 10] [--seed 0]
        [--sampling stratified|srs|srs-pooled]
        (writes benchmarks/results/cheap_judges.json)
"""
from __future__ import annotations

import argparse
import json
import sys
import time
import warnings
from pathlib import Path

import numpy as np

ROOT = Path(__file__).resolve().parents[1]
DATA = ROOT.parent / "shared" / "data" / "trec-covid-round1"
sys.path.insert(0, str(ROOT))

#: P(cheap grade | NIST grade): rows NIST 0, 1, 2; columns cheap 0, 1, 2
CONFUSION_DEEP = np.array([[0.82, 0.13, 0.05],
                           [0.25, 0.45, 0.30],
                           [0.07, 0.23, 0.70]])
#: the same for pairs that some run ranks in its top 10 (more lenient on non-relevant documents)
CONFUSION_TOP = np.array([[0.62, 0.25, 0.13],
                          [0.18, 0.47, 0.35],
                          [0.04, 0.21, 0.75]])
METHODS = ("naive", "goldberg", "ppi", "ppi++", "gold")
MEASURES = ("P@10", "RBP(p=0.8)", "nDCG@10")
#: the pair-design methods of the measures that are not linear in the gains (nDCG: a ratio estimator)
RATIO_METHODS = ("naive", "ppi", "ppi++", "gold")
TOPIC_MEASURES = ("nDCG@10", "AP")


def draw_cheap(truth: np.ndarray, top: np.ndarray, rng: np.random.Generator, rank_dependent: bool = True) -> np.ndarray:
    """One cheap judge's grades for every pair (vectorised over pairs); ``rank_dependent=False``: the
    deep-rank confusion for every pair (errors independent of rank, Goldberg et al.'s assumption)."""
    g = truth.astype(np.int64)
    if not rank_dependent:
        top = np.zeros_like(top)
    cum = np.where(top[:, None], np.cumsum(CONFUSION_TOP, axis=1)[g], np.cumsum(CONFUSION_DEEP, axis=1)[g])
    u = rng.random(len(g))
    return (u[:, None] >= cum[:, :-1]).sum(axis=1).astype(np.float64)


def goldberg_variants(text: str) -> dict[str, tuple[str, str]]:
    """``--goldberg-variants`` as ``{label: (bins, se)}``; the label names the method in the tables
    (``goldberg`` for the package's default, rank bins [10] with the delta method)."""
    out = {}
    for item in (x.strip() for x in text.split(",") if x.strip()):
        bins, _, se = item.partition(":")
        se = se or "delta"
        if se not in ("delta", "bootstrap") or not (bins == "none" or all(b.isdigit() for b in bins.split("-"))):
            raise SystemExit(f"--goldberg-variants: {item!r} is not BINS[:SE] (BINS none or e.g. 10-100)")
        label = "goldberg" if (bins, se) == ("10", "delta") else f"goldberg[{bins},{se}]"
        out[label] = (bins, se)
    return out


GOLDBERG_FORMS = {("none", "delta"): "one matrix", ("10", "delta"): "ranks 1-10, 11+",
                  ("10", "bootstrap"): "ranks 1-10, 11+, bootstrap"}


def goldberg_tables(results: list) -> dict:
    """The Goldberg tables of docs/evidence/cheap-judges.md, as ``{name: {columns, rows}}`` (raw values; the
    page rounds them): ``goldberg_strata`` (coverage, width, bias, conclusions of each form),
    ``goldberg_se`` (the delta method against the bootstrap and against the estimate's spread) and
    ``goldberg_identification`` (the share of studies where a confusion matrix that carries weight is
    not identified, ``|det J| / sd(det J) < 2``, and the coverage in those studies and in the others)."""
    rows = [r for r in results if r["method"] == "goldberg"]
    form = {id(r): GOLDBERG_FORMS.get((r["goldberg_rank_bins"], r["goldberg_se"]),
                                      f"ranks {r['goldberg_rank_bins']}, {r['goldberg_se']}") for r in rows}
    main_cols = ["measure", "judge", "gold pairs", "form", "coverage, systems", "coverage, pairs", "SE / gold-only",
                 "bias", "RMSE", "Kendall tau", "kept", "lost", "gained", "reversed"]
    keys = ["measure", "judge", "budget", None, "cov_sys", "cov_pair", "width", "bias", "rmse", "tau", "kept", "lost",
            "gained", "reversed"]
    strata = [[form[id(r)] if k is None else r.get(k) for k in keys] for r in rows
              if r["goldberg_se"] == "delta"]
    se_cols = ["measure", "judge", "gold pairs", "SE / spread", "SE / spread, robust", "Spearman (error, SE)",
               "coverage, delta", "coverage, bootstrap", "SE / gold-only, bootstrap"]
    se = []
    for r in rows:
        if (r["goldberg_rank_bins"], r["goldberg_se"]) != ("10", "delta"):
            continue
        boot = next((b for b in rows if b["goldberg_se"] == "bootstrap" and b["goldberg_rank_bins"] == "10" and
                     (b["measure"], b["judge"], b["budget"]) == (r["measure"], r["judge"], r["budget"])), None)
        se.append([r["measure"], r["judge"], r["budget"], r.get("se_ratio"), r.get("se_ratio_robust"),
                   r.get("err_se_spearman"), r["cov_sys"], boot["cov_sys"] if boot else None,
                   boot["width"] if boot else None])
    ident_cols = ["measure", "judge", "gold pairs", "form", "not identified", "coverage, systems, identified",
                  "coverage, systems, not identified", "coverage, pairs, identified", "coverage, pairs, not identified"]
    ident = [[r["measure"], r["judge"], r["budget"], form[id(r)], r.get("not_identified"), r.get("cov_sys_identified"),
              r.get("cov_sys_not_identified"), r.get("cov_pair_identified"), r.get("cov_pair_not_identified")]
             for r in rows if r["goldberg_se"] == "delta" and "not_identified" in r]
    return {"goldberg_strata": {"columns": main_cols, "rows": strata}, "goldberg_se": {"columns": se_cols, "rows": se},
            "goldberg_identification": {"columns": ident_cols, "rows": ident}}


AP_COLUMNS = ["judge", "gold pairs", "relevant pairs per topic", "method", "studies with an estimate",
              "coverage, systems", "coverage, pairs", "SE / gold-only", "bias", "RMSE", "Kendall tau", "kept", "lost",
              "gained", "reversed"]


def ap_tables(results: list) -> dict:
    """AP's pair-design table of docs/evidence/cheap-judges.md (``ap_pairs``): per judge, budget and method, the
    sampled relevant pairs per topic, the share of studies with an estimate (in %; below the minimum
    none: "not estimated") and, where estimated, coverage, width, bias and conclusions."""
    rows = []
    for r in results:
        if r["measure"] != "AP" or r["design"] == "topics":
            continue
        head = [r["judge"], r["budget"], r.get("relevant_per_topic"), r["method"], 100.0 * r.get("valid", 1.0)]
        if r.get("valid", 1.0) == 0:
            rows.append(head + ["not estimated"] + [None] * (len(AP_COLUMNS) - len(head) - 1))
            continue
        width = r.get("width")
        rows.append(head + [r["cov_sys"], r["cov_pair"], None if width is None or width != width else width,
                            r["bias"], r["rmse"], r["tau"], r["kept"], r["lost"], r["gained"], r["reversed"]])
    return {"ap_pairs": {"columns": AP_COLUMNS, "rows": rows}} if rows else {}


def markdown(table: dict) -> str:
    """A stored table as the page prints it (3 decimals, bias 4 with a sign, counts 1)."""
    out = ["| " + " | ".join(table["columns"]) + " |", "|" + "---|" * len(table["columns"])]
    for row in table["rows"]:
        cells = []
        for col, x in zip(table["columns"], row):
            cells.append("" if x is None else str(x) if not isinstance(x, float) else
                         f"{x:.0f}%" if col.startswith("studies with") else
                         f"{x:.1f}" if col.startswith("relevant pairs") else
                         f"{x:+.4f}" if col == "bias" else f"{x:.4f}" if col == "RMSE" else
                         f"{x:.1f}" if col in ("kept", "lost", "gained", "reversed") else
                         f"{x:.2f}" if col.startswith("Spearman") else f"{x:.3f}")
        out.append("| " + " | ".join(cells) + " |")
    return "\n".join(out)


def top_and_importance(aligned, ii: np.ndarray, jj: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """Whether each judged pair is in some run's top 10 (the cheap judge's errors depend on it), and the
    design's rank weights: P@10's and RBP's, whatever --measures says (the same gold samples in every run)."""
    from pyterrier_noise.correction import CheapStudy
    from pyterrier_noise.measures import to_spec
    jp = aligned.judged_positions()
    best = np.full(len(aligned.table), np.iinfo(np.int64).max)
    np.minimum.at(best, jp["jidx"], jp["pos"])
    importance = CheapStudy(aligned, [to_spec(m)[0] for m in MEASURES[:2]], pairs=(ii[:1], jj[:1])).importance()
    return best < 10, importance


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--studies", type=int, default=500)
    ap.add_argument("--budgets", default="100,300,1000", help="gold pairs (pair design)")
    ap.add_argument("--topic-budgets", default="4,8", help="gold topics (topic design, nDCG@10 and AP)")
    ap.add_argument("--pairs", type=int, default=500, help="random subset of pairs of runs (0: all)")
    ap.add_argument("--judges", default="rank,flat",
                    help="pair-design judges: rank (errors depend on rank) and/or flat (they do not)")
    ap.add_argument("--measures", default=",".join(MEASURES),
                    help="pair-design measures, comma-separated (nDCG@k by the ratio estimator)")
    ap.add_argument("--designs", default="pairs,topics", help="pairs and/or topics")
    ap.add_argument("--methods", default=",".join(METHODS), help="pair-design methods, comma-separated")
    ap.add_argument("--goldberg-variants", default="10",
                    help="forms of Goldberg et al.'s correction: BINS[:SE], BINS none or rank-bin edges joined by "
                         "'-' (e.g. 10 or 10-100), SE delta (default) or bootstrap")
    ap.add_argument("--seed", type=int, default=0)
    ap.add_argument("--soft", action="store_true",
                    help="also 'ppi soft' and 'ppi++ soft' (P@10, RBP): the prediction is the judge's calibrated "
                         "probability of relevance given its grade and whether a run ranks the pair in its top 10")
    ap.add_argument("--sampling", default="stratified", choices=["stratified", "srs", "srs-pooled", "active"],
                    help="the pair design's gold sample: stratified (planned, the default), srs (a simple random "
                         "sample given without a design: calibrate's analysis, post-stratified by cheap label x "
                         "rank weight), srs-pooled (the same sample as one stratum, the analysis before post-stratification) "
                         "or active (the active design with an over-confident probability column)")
    ap.add_argument("--ap-min-relevant", type=float, default=None,
                    help="AP, pair design: the fewest sampled relevant pairs per topic (mean) for an estimate "
                         "(default the package's; 0: no minimum)")
    ap.add_argument("--out", default=None, help="default benchmarks/results/cheap_judges.json "
                    "(cheap_judges_ap.json when --measures is AP alone)")
    args = ap.parse_args()
    if args.out is None:     # AP under the pair design keeps its own results file
        ap_only = [m.strip() for m in args.measures.split(",") if m.strip()] == ["AP"]
        args.out = str(ROOT / "benchmarks" / "results" / ("cheap_judges_ap.json" if ap_only else "cheap_judges.json"))
    if not DATA.exists():
        print(f"real data not available: {DATA} is absent", file=sys.stderr)
        return 2
    from pyterrier_noise.correction import CheapStudy, Estimates, ap_pair, sample_pairs, sample_topics
    from pyterrier_noise.correction.design import post_stratify
    from pyterrier_noise.correction.estimators import p_value
    from pyterrier_noise.engine import AlignedRuns
    from pyterrier_noise.measures import to_spec
    from pyterrier_noise.stats import all_pairs, kendall_tau
    from scipy import stats

    if args.ap_min_relevant is not None:
        ap_pair.MIN_RELEVANT_PER_TOPIC = args.ap_min_relevant
    t0 = time.time()
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        aligned = AlignedRuns.build(DATA / "runs", DATA / "qrels-rnd1.txt")
    names = tuple(m.strip() for m in args.measures.split(";" if ";" in args.measures else ",") if m.strip())
    designs = {d.strip() for d in args.designs.split(",") if d.strip()}
    specs = [to_spec(m)[0] for m in names]
    chosen = tuple(m.strip() for m in args.methods.split(",") if m.strip())
    variants = goldberg_variants(args.goldberg_variants) if "goldberg" in chosen else {}
    base = tuple(m for m in METHODS if m in chosen and m != "goldberg")
    computed = tuple(dict.fromkeys(base + ("gold",)))
    soft_methods = tuple(f"{m} soft" for m in ("ppi", "ppi++") if m in chosen) if args.soft else ()
    methods_of = {s: (base + tuple(variants) + (soft_methods if s.family in ("P", "RBP") else ())
                      if s.family in ("P", "DCG", "RBP") else
                      tuple(m for m in RATIO_METHODS if m in chosen)) for s in specs}
    R = aligned.n_runs
    rng = np.random.default_rng(args.seed)
    ii, jj = np.triu_indices(R, 1)
    sub = np.sort(rng.choice(len(ii), args.pairs, replace=False)) if 0 < args.pairs < len(ii) else np.arange(len(ii))
    study = CheapStudy(aligned, specs, pairs=(ii[sub], jj[sub]))
    gstudies = {label: CheapStudy(aligned, specs, pairs=(ii[sub], jj[sub]), goldberg_se=se, n_replicates=500,
                                  goldberg_rank_bins=None if bins == "none" else [int(b) for b in bins.split("-")])
                for label, (bins, se) in variants.items()}
    truth_labels = aligned.table.labels
    N = len(truth_labels)
    top, importance = top_and_importance(aligned, ii, jj)
    truth = study.per_topic(truth_labels)
    T = aligned.n_topics
    ref = {}
    for s in specs:
        per = truth[s]
        p_all = all_pairs(per).pvalue[sub]
        diff = per.mean(axis=1)[study.i] - per.mean(axis=1)[study.j]
        ref[s] = dict(mean=per.mean(axis=1), diff=diff, sig=p_all < 0.05, sign=np.sign(diff))
    print(f"aligned {R} runs x {T} topics, {N} judged pairs ({top.mean():.0%} in some run's top 10), "
          f"{len(sub)} pairs of runs; {time.time() - t0:.1f} s", flush=True)

    keys = ("cov_sys", "cov_pair", "width", "bias", "rmse", "tau", "kept", "lost", "gained", "reversed", "lam",
            "_v", "_se2", "valid", "_unid")

    def score(acc: dict, specs_: list, methods: tuple, ref_: dict, coll: dict, tops: dict | None) -> None:
        """One study's coverage, width, bias, tau and conclusions, appended to ``acc``."""
        for s in specs_:
            r = ref_[s]
            gse = coll[s].systems["gold"][1]
            for m in methods:
                v, se = coll[s].systems[m]
                dv, dse = coll[s].pairs[m]
                a = acc[(s, m)]
                if m != "naive" and np.isnan(v).all():    # AP below its minimum: no estimate in this study
                    a["valid"].append(0.0)
                    continue
                a["valid"].append(1.0)
                a["cov_sys"].append(np.mean(np.abs(v - r["mean"]) <= coll[s].quantile(m, "systems") * se))
                a["cov_pair"].append(np.mean(np.abs(dv - r["diff"]) <= coll[s].quantile(m, "pairs") * dse))
                with np.errstate(divide="ignore", invalid="ignore"):
                    ratio = np.where(gse > 0, se / gse, np.nan)      # all NaN where AP's gold-only is not estimated
                    a["width"].append(np.nanmedian(ratio) if np.isfinite(ratio).any() else np.nan)
                a["bias"].append(np.mean(v - r["mean"]))
                if m.startswith("goldberg"):
                    a["_v"].append(v)
                    a["_se2"].append(se ** 2)
                a["rmse"].append(np.sqrt(np.mean((v - r["mean"]) ** 2)))
                a["tau"].append(kendall_tau(v, r["mean"]) if np.isfinite(v).all() else np.nan)
                # topics scope for the tests: the naive se already is; the others add topic sampling
                if tops is not None and m in tops[s].pairs:
                    tv, tse = tops[s].pairs[m]
                    dfp = tops[s].df.get(m, (None, np.full(len(tv), np.inf)))[1]
                else:
                    tv = dv
                    tse = dse if m == "naive" else np.sqrt(dse ** 2 + coll[s].topic_var[m][1])
                    dfp = coll[s].df.get(m, (None, np.full(len(tv), np.inf)))[1]
                sig = p_value(tv, tse, dfp) < 0.05
                same = np.sign(tv) == r["sign"]
                a["kept"].append(int((sig & r["sig"] & same).sum()))
                a["reversed"].append(int((sig & r["sig"] & ~same).sum()))
                a["lost"].append(int((~sig & r["sig"]).sum()))
                a["gained"].append(int((sig & ~r["sig"]).sum()))
                if m == "ppi++" and coll[s].lam is not None:
                    a["lam"].append(float(np.median(coll[s].lam[0])))

    def summarise(acc: dict, specs_: list, names: tuple, methods: tuple, ref_: dict, budget: int, design: str,
                  gold_pairs: float, judge: str = "rank", extra: dict | None = None) -> None:
        for s, name in zip(specs_, names):
            for m in methods:
                if (s, m) not in acc:
                    continue
                row = {"measure": name, "judge": judge, "design": design, "budget": budget,
                       "gold_pairs": round(gold_pairs),
                       "method": m, "studies": args.studies, "nist_significant_pairs": int(ref_[s]["sig"].sum()),
                       **(extra or {})}
                if m.startswith("goldberg"):
                    row["method"] = "goldberg"
                    row["goldberg_rank_bins"], row["goldberg_se"] = variants[m]
                    # studies where a confusion matrix with weight is not identified (|det J| / sd(det J) < 2),
                    # and the coverage of the studies where every one is, and of the others
                    unid = np.array(acc[(s, m)]["_unid"], dtype=bool)
                    row["not_identified"] = float(unid.mean())
                    for key in ("cov_sys", "cov_pair"):
                        cv = np.array(acc[(s, m)][key])
                        row[key + "_identified"] = float(cv[~unid].mean()) if (~unid).any() else None
                        row[key + "_not_identified"] = float(cv[unid].mean()) if unid.any() else None
                    vv, se2 = np.array(acc[(s, m)]["_v"]), np.array(acc[(s, m)]["_se2"])
                    with np.errstate(divide="ignore", invalid="ignore"):
                        row["se_ratio"] = float(np.nanmedian(np.sqrt(np.nanmean(se2, axis=0)) /
                                                             np.nanstd(vv, axis=0, ddof=1)))
                        q75, q25 = np.nanpercentile(vv, [75, 25], axis=0)
                        err = np.abs(vv - ref_[s]["mean"])
                        rho = [stats.spearmanr(err[:, k], se2[:, k], nan_policy="omit")[0] for k in range(err.shape[1])]
                        row["err_se_spearman"] = float(np.nanmedian(rho))
                        row["se_ratio_robust"] = float(np.nanmedian(np.sqrt(np.nanmedian(se2, axis=0)) /
                                                                    ((q75 - q25) / 1.349)))
                for key, vals in acc[(s, m)].items():
                    if vals and not key.startswith("_"):   # width: the median over studies (a near-singular
                        row[key] = float(np.nanmedian(vals) if key == "width" else np.nanmean(vals))  # fit)
                results.append(row)

    results: list = []
    grades = np.array([0.0, 1.0, 2.0])
    settings = [(j, int(b)) for j in args.judges.split(",") if j.strip() for b in args.budgets.split(",")]
    for judge, budget in (settings if "pairs" in designs else []):
        acc = {(s, m): {k: [] for k in keys} for s in specs for m in methods_of[s]}
        agree, relevant = [], []
        t1 = time.time()
        for k in range(args.studies):
            srng = np.random.default_rng([args.seed, budget, k] + ([1] if judge == "flat" else []))
            cheap = draw_cheap(truth_labels, top, srng, rank_dependent=(judge == "rank"))
            agree.append(float((cheap == truth_labels).mean()))
            if args.sampling == "active":     # an over-confident judge: stated error 1-30%, actual about 36%
                err = srng.uniform(0.01, 0.3, len(cheap))
                smp = sample_pairs(cheap, budget, design="active", importance=importance,
                                   probability=np.where(cheap >= 1, 1 - err, err), seed=int(srng.integers(2 ** 31)))
            elif args.sampling == "stratified":
                smp = sample_pairs(cheap, budget, design="stratified", importance=importance,
                                   seed=int(srng.integers(2 ** 31)))
            else:           # a plain random sample; analysed post-stratified (srs) or as one stratum (srs-pooled)
                smp = sample_pairs(cheap, budget, design="uniform", seed=int(srng.integers(2 ** 31)))
                if args.sampling == "srs":
                    smp = post_stratify(cheap, smp.rows, importance)
            relevant.append(float(np.bincount(aligned.table.topic_index[smp.rows], weights=truth_labels[smp.rows] >= 1,
                                              minlength=T).mean()))
            with warnings.catch_warnings():
                warnings.simplefilter("ignore")
                coll = study.estimate(cheap, truth_labels[smp.rows], smp, methods=computed, scope="collection",
                                      grades=grades)
                if soft_methods:   # the calibrated P(NIST relevant | cheap grade, top 10): a judge's honest distribution
                    post = np.zeros((2, 3))
                    for t in (0, 1):
                        for c in range(3):
                            prior = np.bincount(truth_labels[top == bool(t)].astype(int), minlength=3)
                            conf = CONFUSION_TOP if (t and judge == "rank") else CONFUSION_DEEP
                            joint = prior * conf[:, c]
                            post[t, c] = joint[1:].sum() / joint.sum()
                    q = post[top.astype(int), cheap.astype(int)]
                    cs = study.estimate(cheap, truth_labels[smp.rows], smp, methods=("ppi", "ppi++"),
                                        scope="collection", soft=q)
                    for s in specs:
                        if s.family in ("P", "RBP"):
                            for m in soft_methods:
                                b_ = m.split()[0]
                                coll[s].systems[m], coll[s].pairs[m] = cs[s].systems[b_], cs[s].pairs[b_]
                                coll[s].df[m], coll[s].topic_var[m] = cs[s].df[b_], cs[s].topic_var[b_]
                tops_g = {s: Estimates({}, {}, study.i, study.j, df={}) for s in specs}
                for label, gst in gstudies.items():
                    c = gst.estimate(cheap, truth_labels[smp.rows], smp, methods=("goldberg",), grades=grades)
                    diag = gst.goldberg_diagnostics     # a matrix with weight that the gold sample does not identify
                    for s, name in zip(specs, names):
                        if (s, label) not in acc:       # a measure Goldberg et al.'s correction does not cover (AP)
                            continue
                        if diag is not None and name not in set(diag["measure"]):
                            raise SystemExit(f"measure {name!r} is not named so in goldberg_diagnostics: write it as "
                                             f"one of {sorted(set(diag['measure']))}")
                        d = diag[(diag["measure"] == name) & (diag["weight"] > 0)] if diag is not None else None
                        acc[(s, label)]["_unid"].append(bool(d is None or len(d) == 0 or not d["identified"].all()))
                    # Goldberg's topics-scope SE swaps the judge-noise term for the query-sampling one
                    t = gst.estimate(cheap, truth_labels[smp.rows], smp, methods=("goldberg",), scope="topics",
                                     grades=grades)
                    for s in (s for s in specs if (s, label) in acc):
                        coll[s].systems[label], coll[s].pairs[label] = c[s].systems["goldberg"], c[s].pairs["goldberg"]
                        coll[s].topic_var[label] = c[s].topic_var["goldberg"]
                        tops_g[s].systems[label], tops_g[s].pairs[label] = t[s].systems["goldberg"], t[s].pairs["goldberg"]
            for s in specs:
                score(acc, [s], methods_of[s], ref, coll, tops_g)
            if (k + 1) % 100 == 0:
                print(f"  budget {budget}: {k + 1} studies, {time.time() - t1:.0f} s", flush=True)
        summarise(acc, specs, names, tuple(dict.fromkeys(base + tuple(variants) + RATIO_METHODS + soft_methods)), ref,
                  budget,
                  {"stratified": "pairs (stratified)", "srs": "pairs (SRS, post-stratified)",
                   "srs-pooled": "pairs (SRS, one stratum)", "active": "pairs (active)"}[args.sampling], budget, judge,
                  dict(relevant_per_topic=float(np.mean(relevant)), ap_min_relevant=ap_pair.MIN_RELEVANT_PER_TOPIC))
        print(f"{judge} judge, budget {budget}: cheap judge agrees with NIST on {np.mean(agree):.1%} of pairs; "
              f"{time.time() - t1:.0f} s", flush=True)

    # the topic design for the measures that are not linear in the gains (nDCG, AP)
    tspecs = [to_spec(m)[0] for m in TOPIC_MEASURES]
    tstudy = CheapStudy(aligned, tspecs, pairs=(ii[sub], jj[sub]))
    ttruth = tstudy.per_topic(truth_labels)
    tref = {}
    for s in tspecs:
        per = ttruth[s]
        diff = per.mean(axis=1)[tstudy.i] - per.mean(axis=1)[tstudy.j]
        tref[s] = dict(mean=per.mean(axis=1), diff=diff, sig=all_pairs(per).pvalue[sub] < 0.05, sign=np.sign(diff))
    size = np.diff(aligned.table.topic_start)
    tmethods = ("naive", "ppi", "ppi++", "gold")
    for n_topics in [int(b) for b in args.topic_budgets.split(",") if b.strip() and "topics" in designs]:
        acc = {(s, m): {k: [] for k in keys} for s in tspecs for m in tmethods}
        pairs_judged = []
        t1 = time.time()
        for k in range(args.studies):
            srng = np.random.default_rng([args.seed, 10_000 + n_topics, k])
            cheap = draw_cheap(truth_labels, top, srng)
            topics = sample_topics(T, n_topics, seed=int(srng.integers(2 ** 31)))
            pairs_judged.append(size[topics].sum())
            coll = tstudy.estimate(cheap, truth_labels, topics, methods=tmethods, scope="collection")
            tops = tstudy.estimate(cheap, truth_labels, topics, methods=tmethods, scope="topics")
            score(acc, tspecs, tmethods, tref, coll, tops)
        summarise(acc, tspecs, TOPIC_MEASURES, tmethods, tref, n_topics, "topics", float(np.mean(pairs_judged)))
        print(f"topic design, {n_topics} gold topics (about {np.mean(pairs_judged):.0f} pairs): "
              f"{time.time() - t1:.0f} s", flush=True)

    for row in results:
        if row["method"] == "goldberg":
            row["variant"] = f"ranks {row['goldberg_rank_bins']}, {row['goldberg_se']}"
    header = ("measure", "judge", "design", "gold_pairs", "method", "variant", "se_ratio", "se_ratio_robust", "cov_sys", "cov_pair", "width", "bias", "rmse", "tau", "kept", "lost",
              "gained", "reversed", "valid", "relevant_per_topic")
    print("| " + " | ".join(header) + " |")
    print("|" + "---|" * len(header))
    for row in results:
        cells = []
        for h in header:
            x = row.get(h, float("nan"))
            cells.append("" if h in ("variant", "se_ratio", "se_ratio_robust", "relevant_per_topic") and h not in row else
                         f"{x:.3f}" if isinstance(x, float) and h in ("cov_sys", "cov_pair", "width", "tau", "se_ratio",
                                                                 "se_ratio_robust", "valid") else
                         f"{x:+.4f}" if h == "bias" else f"{x:.4f}" if h == "rmse" else
                         f"{x:.1f}" if isinstance(x, float) else str(x))
        print("| " + " | ".join(cells) + " |")
    out = Path(args.out)
    out.parent.mkdir(parents=True, exist_ok=True)
    info = {"command": "python benchmarks/cheap_judges.py " + " ".join(sys.argv[1:]),
            "date": time.strftime("%Y-%m-%d %H:%M UTC", time.gmtime()), "runs": R, "topics": T,
            "judged_pairs": N, "pairs_of_runs": int(len(sub)), "studies": args.studies, "seed": args.seed,
            "confusion_deep": CONFUSION_DEEP.tolist(), "confusion_top10": CONFUSION_TOP.tolist(),
            "seconds": round(time.time() - t0, 1), "results": results}
    info["tables"] = {**(goldberg_tables(results) if variants else {}), **ap_tables(results)}
    if info["tables"]:
        for table in info["tables"].values():
            print(markdown(table))
    out.write_text(json.dumps(info, indent=1) + "\n")
    print(f"wrote {out} ({time.time() - t0:.0f} s)")
    return 0


if __name__ == "__main__":
    sys.exit(main())
