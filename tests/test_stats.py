"""The comparisons (experiments/stats.py): the rule on data whose answer is known, and every interval
and p-value the report and the lesson show, recomputed independently from the run folders' CSVs."""

import csv
import glob
import itertools
import json
import os

import numpy as np
import pandas as pd
import pytest
from scipy import stats as sp

from continuous_control.provenance import ROOT
from experiments import report, runs, stats
from experiments.variants import LABELS


def table_of(full, variant, measure="mean_1_100"):
    """A table of runs with these values for the full agent and a variant "v", seed by seed."""
    rows = [
        {"group": "agent", "variant": name, "seed": k, "processor": "P", "version": 1, measure: x}
        for name, values in (("full", full), ("v", variant))
        for k, x in enumerate(values)
    ]
    return pd.DataFrame(rows)


def test_a_pair_across_processors_or_results_versions_is_refused_naming_both_runs():
    t = table_of([35, 34, 36, 35, 34], [35.5, 33.6, 36.2, 34.7, 34.3])
    for column, value in (("processor", "Q"), ("version", 2)):
        other = t.copy()
        other.loc[(other.variant == "v") & (other.seed == 3), column] = value
        with pytest.raises(stats.PairError) as refused:
            stats.compare(other, ["v"])
        assert "agent/v seed 3" in str(refused.value) and "agent/full seed 3" in str(refused.value)


def test_a_variant_made_on_another_processor_pairs_with_the_full_agent_made_there():
    """The processor check's full agent is the partner of the variants run on its processor."""
    t = table_of([35.0] * 6, [36.0] * 6)
    t.loc[t.variant == "v", "processor"] = "Q"
    again = t[t.variant == "full"].assign(group="processor_check", processor="Q", mean_1_100=34.0)
    pairs = stats.paired(pd.concat([t, again]), "v")
    assert list(pairs.d) == [2.0] * 6 and set(pairs.partner) == {"processor_check"}
    assert stats.compare(pd.concat([t, again]), ["full"], group="processor_check", like=False).loc["full", "mean"] == -1


def test_the_peers_two_sample_test_is_exact_over_every_split():
    t = table_of([35, 34, 36, 35, 34, 36], [])
    t = pd.concat([t, pd.DataFrame({"group": "peers", "variant": "x", "seed": range(3), "mean_1_100": [30, 31, 36]})])
    row = stats.unpaired(t, ["x"]).loc["x"]
    pooled, observed = np.r_[35, 34, 36, 35, 34, 36, 30, 31, 36], 97 / 3 - 35
    splits = [np.mean(pooled[list(c)]) - np.mean(np.delete(pooled, c)) for c in itertools.combinations(range(9), 3)]
    assert row["mean"] == pytest.approx(observed)
    tail = min(np.mean(np.array(splits) <= observed + 1e-12), np.mean(np.array(splits) >= observed - 1e-12))
    assert row.p == pytest.approx(min(1, 2 * tail))  # two-sided: twice the smaller tail


def test_ten_of_ten_lower_with_one_large_difference_is_worse():
    """The case the t-interval missed: every seed lower, one by much more than the rest."""
    rng = np.random.default_rng(1)
    full = 35 + rng.normal(0, 0.3, 10)
    variant = full - np.r_[np.full(9, 0.8), 8.66]
    row = stats.compare(table_of(full, variant), ["v"]).loc["v"]
    assert row.p == pytest.approx(2 / 1024) and row.worse_in == 10 and row.verdict == "worse"
    assert row.high_95 < 0


def test_mixed_signs_are_no_clear_difference_and_three_seeds_never_decide():
    row = stats.compare(table_of([35, 34, 36, 35, 34, 36], [35.5, 33.6, 36.2, 34.7, 34.3, 35.8]), ["v"]).loc["v"]
    assert row.verdict == "no clear difference"
    three = stats.compare(table_of([35, 35, 35], [30, 31, 29]), ["v"]).loc["v"]
    assert three.p == pytest.approx(0.25) and three.verdict == "no clear difference" and np.isnan(three.low_95)


def test_on_a_measure_where_lower_is_better_earlier_is_better():
    row = stats.compare(table_of([15] * 10, list(range(5, 15)), "first_30"), ["v"], measure="first_30").loc["v"]
    assert row.verdict == "better" and row.better_in == 10


def test_holm_adjusts_in_step_down_order():
    np.testing.assert_allclose(stats.holm([0.01, 0.04, 0.03, 0.2]), [0.04, 0.09, 0.09, 0.2])


def test_the_interval_is_the_comparisons_own_whatever_the_family():
    """No interval is corrected for the family: a second variant changes Holm's p, not the interval."""
    rng = np.random.default_rng(2)
    full = 35 + rng.normal(0, 1, 10)
    t = table_of(full, full - 1 + rng.normal(0, 1, 10))
    alone = stats.compare(t, ["v"]).loc["v"]
    t = pd.concat([t, t[t.variant == "v"].assign(variant="w")])
    two = stats.compare(t, ["v", "w"]).loc["v"]
    assert (two.low_95, two.high_95, two["mean"]) == (alone.low_95, alone.high_95, alone["mean"])
    assert two.p_holm == pytest.approx(min(1, 2 * alone.p)) and "low" not in two and "level" not in two


def scipy_p(d, m=0.0):
    return sp.permutation_test((np.asarray(d) - m,), np.mean, permutation_type="samples", n_resamples=np.inf).pvalue


def scipy_p_two(x, y, m=0.0):
    return sp.permutation_test(
        (np.asarray(x) - m, y), lambda a, b, axis=-1: a.mean(axis) - b.mean(axis), n_resamples=np.inf, vectorized=True
    ).pvalue


def made_up_samples():
    rng = np.random.default_rng(7)
    samples = [rng.normal(mu, 1, k) for k in (6, 8, 10) for mu in (0.0, 0.5, 1.5)]
    return samples + [np.r_[np.full(9, -0.8), -8.66], np.r_[np.full(5, 0.3), -0.1, 0.2, 2.0, -1.0, 0.4]]


def saved_differences():
    table = runs.load()
    agent = set(table[table.group == "agent"].variant)
    return [
        stats.paired(table, v, measure=m).d.to_numpy()
        for m in runs.MEASURES
        for v in LABELS
        if v != "full" and v in agent
    ]


def assert_agrees(p, low, high, test, seeds_enough=True):
    """Zero outside [low, high] exactly when p < 0.05, and [low, high] is every shift the test keeps:
    scipy's own test, run afresh, keeps each end and rejects just beyond it."""
    if not seeds_enough:
        assert np.isnan(low) and np.isnan(high) and p >= 0.05
        return
    assert (low > 0 or high < 0) == (p < 0.05)
    assert test(0.0) == pytest.approx(p)
    step = 1e-9 * max(1.0, abs(low), abs(high))
    assert test(low) >= 0.05 and test(high) >= 0.05 and test(low - step) < 0.05 and test(high + step) < 0.05


@pytest.mark.parametrize("source", ["made up", "saved"])
def test_the_95_interval_agrees_with_its_own_test(source):
    samples = made_up_samples() if source == "made up" else saved_differences()
    decided = 0
    for d in samples:
        p, (low, high) = stats.sign_flips(d)
        assert_agrees(p, low, high, lambda m, d=d: scipy_p(d, m), len(d) >= 6)
        decided += p < 0.05
    assert 0 < decided < len(samples)  # both cases occur
    x, y = np.array([30.0, 31.0, 36.0]), np.array([35, 34, 36, 35, 34, 36, 33, 37, 35, 34.5])
    p, (low, high) = stats.splits(x, y)
    assert_agrees(p, low, high, lambda m: scipy_p_two(x, y, m))


def test_the_95_interval_is_deterministic_and_exact():
    """No resampling: the same numbers whatever the random state, and in any order of the seeds."""
    d = made_up_samples()[4]
    first = stats.sign_flips(d)
    np.random.seed(123)
    np.random.default_rng(5).normal(size=100)
    assert stats.sign_flips(d) == first == stats.sign_flips(d[::-1])
    table = runs.load()
    assert report.effects(table).equals(report.effects(table))
    # with 10 seeds the ends are the 25th smallest and 25th largest of the 1023 subset means
    k = np.arange(1, 11, dtype=float)
    means = sorted(np.mean(c) for r in range(1, 11) for c in itertools.combinations(k, r))
    assert stats.sign_flips(k)[1] == pytest.approx((means[24], means[-25]))


def test_the_probability_of_improvement_counts_pairs_of_runs():
    assert stats.improvement(np.array([1.0, 2.0, 3.0]), np.array([2.0, 2.0])) == pytest.approx((0 + 1 + 2) / 6)


# --- every published number, recomputed independently -------------------------------------------


def mean_1_100(folder):
    with open(os.path.join(folder, "scores.csv")) as f:
        return np.mean([float(r["mean"]) for r in csv.DictReader(f)][:100])


def by_seed(variant, where="results"):
    """{seed: (processor, mean of episodes 1-100)} of a variant's run folders."""
    out = {}
    for p in glob.glob(os.path.join(ROOT, where, variant, "seed*")):
        with open(os.path.join(p, "summary.json")) as f:
            out[int(p.rsplit("seed", 1)[1])] = (json.load(f)["processor"], mean_1_100(p))
    return out


def sign_flip_p(d):
    """Every one of the 2^K sign flips, by hand."""
    means = [abs(np.mean(np.multiply(d, signs))) for signs in itertools.product((1, -1), repeat=len(d))]
    return np.mean(np.array(means) >= abs(np.mean(d)) - 1e-12)


def test_every_verdict_interval_and_p_of_the_primary_family_recomputes_from_the_csvs():
    family = [v for v in LABELS if v != "full" and os.path.isdir(os.path.join(ROOT, "results", v))]
    published = stats.compare(runs.load(), family)
    full = {
        (p, k): x for where in ("results", "results/processor_check") for k, (p, x) in by_seed("full", where).items()
    }
    d = {v: np.array([x - full[p, k] for k, (p, x) in sorted(by_seed(v).items())]) for v in family}
    p = {v: sign_flip_p(x) for v, x in d.items()}
    order = sorted(family, key=p.get)
    holm, running = {}, 0.0
    for i, v in enumerate(order):
        running = max(running, min(1.0, (len(family) - i) * p[v]))
        holm[v] = running
    for v in family:
        row = published.loc[v]
        assert row.seeds == len(d[v]) and row["mean"] == pytest.approx(d[v].mean())
        assert row.p == pytest.approx(p[v]) and row.p_holm == pytest.approx(holm[v])
        good = d[v].mean() > 0
        assert row.verdict == ("no clear difference" if holm[v] >= 0.05 else "better" if good else "worse")
        if len(d[v]) >= 6:  # the interval: every shift the test, run afresh by scipy, does not reject
            assert_agrees(row.p, row.low_95, row.high_95, lambda m, x=d[v]: scipy_p(x, m))
        else:
            assert np.isnan(row.low_95) and np.isnan(row.high_95)
