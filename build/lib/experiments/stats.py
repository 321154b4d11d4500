"""Paired comparisons of variants across seeds, with scipy: one rule, one vocabulary.

    stats.compare(table, ["one_step", "uniform"])      # a row per variant against the full agent

**The rule.** Variant and baseline are paired seed by seed (seed k against seed k: the same goals,
the same initial weights). On the differences d_k (variant minus baseline):
- the mean, and a bootstrap interval of the mean (`scipy.stats.bootstrap`, BCa) at the level
  1 - 0.05 / m for a family of m comparisons (Bonferroni), so that all m hold together with 95%;
- the p-value of a sign-flip permutation test (`scipy.stats.permutation_test`, exact: all 2^K
  flips), which asks only that d_k be symmetric about zero when nothing differs, so one large
  difference cannot hide ten of the same sign;
- Holm's step-down correction over the family (every variant compared on that measure).
A variant is **better** or **worse** where Holm's p is below 0.05, in the direction of the mean;
everything else is **no clear difference**, which is never "no effect". With K seeds the smallest
p a permutation test can give is 2 / 2^K, so three seeds (0.25) can never reach a verdict, and
fewer than MIN_SEEDS get no interval.

Beside them, rliable's summaries (Agarwal et al. 2021), computed with scipy: the interquartile
mean of each side and the probability that a run of the variant beats a run of the baseline, each
with a 95% bootstrap interval.
"""
import numpy as np
import pandas as pd
from scipy import stats

from continuous_control.variants import LABELS

from .runs import MEASURES, PRIMARY

ALPHA = 0.05
RESAMPLES = 9999
MIN_SEEDS = 5       # fewer give no interval: 3 values have only 10 distinct bootstrap resamples


def holm(p) -> np.ndarray:
    """Holm's adjusted p-values, in the order given."""
    p = np.asarray(p, float)
    order = np.argsort(p)
    adjusted = np.maximum.accumulate((len(p) - np.arange(len(p))) * p[order])
    out = np.empty_like(p)
    out[order] = np.minimum(adjusted, 1)
    return out


def interval(statistic, *samples, paired: bool = False, level: float = 1 - ALPHA) -> tuple:
    """A bootstrap interval (BCa; percentile where BCa is undefined, as for identical values)."""
    rng = np.random.default_rng(0)
    for method in ("BCa", "percentile"):
        with np.errstate(all="ignore"):
            ci = stats.bootstrap(samples, statistic, n_resamples=RESAMPLES, method=method, paired=paired,
                                 confidence_level=level, rng=rng, vectorized=True).confidence_interval
        if np.isfinite(ci.low) and np.isfinite(ci.high):
            return float(ci.low), float(ci.high)
    return float(ci.low), float(ci.high)


def iqm(x, axis=-1):
    return stats.trim_mean(x, 0.25, axis=axis)


def improvement(x, y, axis=-1):
    """P(X > Y) + P(X = Y) / 2 over every pair of a run of x and a run of y."""
    x, y = np.expand_dims(x, -1), np.expand_dims(y, -2)
    return ((x > y) + 0.5 * (x == y)).mean(axis=(-1, -2))


def paired(table: pd.DataFrame, variant: str, baseline: str = "full", measure: str = PRIMARY,
           group: str = "agent", baseline_group: str = "agent") -> pd.DataFrame:
    """The seeds both have, each with both values and their difference d (variant minus baseline)."""
    def side(name, g):
        return table[(table.group == g) & (table.variant == name)].set_index("seed")[measure]
    both = pd.concat({"variant": side(variant, group), "baseline": side(baseline, baseline_group)}, axis=1).dropna()
    return both.assign(d=both.variant - both.baseline)


def comparison(pairs: pd.DataFrame, higher_is_better: bool, level: float = 1 - ALPHA) -> dict:
    """The numbers of one paired comparison (Holm's p and the verdict come with its family)."""
    d = pairs.d.to_numpy()
    sign = 1 if higher_is_better else -1
    row = {"seeds": len(d), "mean": d.mean(), "low": np.nan, "high": np.nan, "p": 1.0,
           "better_in": int((sign * d > 0).sum()), "worse_in": int((sign * d < 0).sum())}
    if len(d) >= MIN_SEEDS:
        row["low"], row["high"] = interval(np.mean, d, level=level)
    if len(d) >= 2:
        row["p"] = stats.permutation_test((d,), np.mean, permutation_type="samples", n_resamples=np.inf,
                                          vectorized=True).pvalue
    return row


def compare(table: pd.DataFrame, variants, baseline: str = "full", measure: str = PRIMARY,
            group: str = "agent", baseline_group: str = "agent") -> pd.DataFrame:
    """One family: each variant against the baseline on one measure, corrected, with verdicts."""
    higher, level = MEASURES[measure][1], 1 - ALPHA / len(variants)
    rows = {v: comparison(paired(table, v, baseline, measure, group, baseline_group), higher, level) for v in variants}
    out = pd.DataFrame.from_dict(rows, orient="index")
    out["p_holm"] = holm(out.p)
    good = (out["mean"] > 0) == higher
    out["verdict"] = np.where(out.p_holm >= ALPHA, "no clear difference", np.where(good, "better", "worse"))
    return out


def summaries(table: pd.DataFrame, variant: str, baseline: str = "full", measure: str = PRIMARY) -> dict:
    """rliable's interquartile means and probability of improvement, with 95% bootstrap intervals."""
    pairs = paired(table, variant, baseline, measure)
    x, y = pairs.variant.to_numpy(), pairs.baseline.to_numpy()
    if not MEASURES[measure][1]:
        x, y = -x, -y                   # "improvement" is then a lower value
    return {"iqm": iqm(pairs.variant), "iqm_interval": interval(iqm, pairs.variant.to_numpy()),
            "iqm_baseline": iqm(pairs.baseline), "iqm_baseline_interval": interval(iqm, pairs.baseline.to_numpy()),
            "p_improvement": improvement(x, y), "p_improvement_interval": interval(improvement, x, y)}



def effect(table: pd.DataFrame, variant: str) -> pd.Series:
    """A variant's row in the report's primary family: every ablation against the full agent."""
    agent = set(table[table.group == "agent"].variant)
    return compare(table, [v for v in LABELS if v != "full" and v in agent]).loc[variant]
