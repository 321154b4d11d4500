"""Paired comparisons of variants across seeds, with scipy: one rule, one vocabulary.

    stats.compare(table, ["one_step", "uniform"])      # a row per variant against the full agent

**The rule.** Variant and baseline are paired seed by seed (seed k against seed k: the same goals,
the same initial weights) and like for like: seed k of the baseline run on the same processor for
the same results version, since the same seed on two processors differs from episode 1 on. Any other
pair is refused (`PairError`). On the differences d_k (variant minus baseline):
- the mean, and a bootstrap interval of the mean (`scipy.stats.bootstrap`, BCa) at the level
  1 - 0.05 / m for a family of m comparisons (Bonferroni), so that all m hold together with 95%;
  beside it the plain 95% interval of that comparison alone;
- the p-value of a sign-flip permutation test (`scipy.stats.permutation_test`, exact: all 2^K
  flips), which asks only that d_k be symmetric about zero when nothing differs, so one large
  difference cannot hide ten of the same sign;
- Holm's step-down correction over the family (every variant compared on that measure).
A variant is **better** or **worse** where Holm's p is below 0.05, in the direction of the mean;
everything else is **no clear difference**, which is never "no effect". With K seeds the smallest
p a permutation test can give is 2 / 2^K, so three seeds (0.25) can never reach a verdict, and
fewer than MIN_SEEDS get no interval.

Learners that share no seed with the agent (the peers) are compared with its ten seeds as two
samples instead (`unpaired`): an exact two-sample permutation test, Holm over the peers.

Beside them, rliable's summaries (Agarwal et al. 2021), computed with scipy: the interquartile
mean of each side and the probability that a run of the variant beats a run of the baseline, each
with a 95% bootstrap interval.
"""

import warnings

import numpy as np
import pandas as pd
from scipy import stats

from .runs import MEASURES, PRIMARY

ALPHA = 0.05
RESAMPLES = 9999
MIN_SEEDS = 5  # fewer give no interval: 3 values have only 10 distinct bootstrap resamples


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
        with np.errstate(all="ignore"), warnings.catch_warnings():
            warnings.simplefilter("ignore", stats.DegenerateDataWarning)  # then the percentile interval
            ci = stats.bootstrap(
                samples,
                statistic,
                n_resamples=RESAMPLES,
                method=method,
                paired=paired,
                confidence_level=level,
                rng=rng,
                vectorized=True,
            ).confidence_interval
        if np.isfinite(ci.low) and np.isfinite(ci.high):
            return float(ci.low), float(ci.high)
    return float(ci.low), float(ci.high)


def iqm(x, axis=-1):
    return stats.trim_mean(x, 0.25, axis=axis)


def improvement(x, y, axis=-1):
    """P(X > Y) + P(X = Y) / 2 over every pair of a run of x and a run of y."""
    x, y = np.expand_dims(x, -1), np.expand_dims(y, -2)
    return ((x > y) + 0.5 * (x == y)).mean(axis=(-1, -2))


class PairError(ValueError):
    """Two runs paired across processors or results versions: their difference would hold the machine's."""


def like_for_like(table: pd.DataFrame) -> pd.Series:
    """A run's arithmetic: the processor it ran on and the results version it was made for."""
    return table.processor.astype(str) + " / results " + table.version.astype(str)


def paired(
    table: pd.DataFrame,
    variant: str,
    baseline: str = "full",
    measure: str = PRIMARY,
    group: str = "agent",
    like: bool = True,
) -> pd.DataFrame:
    """The seeds both have, each with both values, their difference d (variant minus baseline) and the
    group of the baseline's run (`partner`).

    Seed k of the variant pairs with seed k of the baseline run with the same arithmetic (processor and
    results version), from the agent's runs or the processor check's. A seed whose partner ran only
    with another arithmetic is refused, naming both runs: the same seed on two processors differs from
    episode 1 on, by as much as most effects. `like=False` is the processor check, which pairs across
    processors on purpose."""

    def side(name, groups):
        rows = table[table.group.isin(groups) & (table.variant == name)]
        return rows.assign(arithmetic=like_for_like(rows) if like else "")

    mine = side(variant, [group])
    theirs = side(
        baseline, [g for g in ("agent", "processor_check") if (g, baseline) != (group, variant)] if like else ["agent"]
    )
    both = mine.merge(theirs, on=["seed", "arithmetic"], suffixes=("", "_baseline"))
    stray = mine[~mine.seed.isin(both.seed) & mine.seed.isin(theirs.seed)]
    if len(stray):
        k = stray.seed.iloc[0]
        other = theirs[theirs.seed == k].iloc[0]
        raise PairError(
            f"{group}/{variant} seed {k} ({stray.arithmetic.iloc[0]}) has no partner with its arithmetic: "
            f"{other.group}/{baseline} seed {k} ran on {other.arithmetic}"
        )
    both = (
        both.set_index("seed")[[measure, f"{measure}_baseline", "group_baseline"]]
        .set_axis(["variant", "baseline", "partner"], axis=1)
        .dropna()
    )
    return both.assign(d=both.variant - both.baseline)


def comparison(pairs: pd.DataFrame, higher_is_better: bool, level: float = 1 - ALPHA) -> dict:
    """The numbers of one paired comparison (Holm's p and the verdict come with its family)."""
    d = pairs.d.to_numpy()
    sign = 1 if higher_is_better else -1
    row = {
        "seeds": len(d),
        "mean": d.mean(),
        "low": np.nan,
        "high": np.nan,
        "low_95": np.nan,
        "high_95": np.nan,
        "p": 1.0,
        "better_in": int((sign * d > 0).sum()),
        "worse_in": int((sign * d < 0).sum()),
    }
    if len(d) >= MIN_SEEDS:
        row["low"], row["high"] = interval(np.mean, d, level=level)
        row["low_95"], row["high_95"] = interval(np.mean, d)
    if len(d) >= 2:
        row["p"] = stats.permutation_test(
            (d,), np.mean, permutation_type="samples", n_resamples=np.inf, vectorized=True
        ).pvalue
    return row


def family(rows: dict, measure: str) -> pd.DataFrame:
    """A family of comparisons on one measure: Holm's p and each verdict. `level` is what each of its
    intervals `low`-`high` holds alone (1 - 0.05 / m), so that all m hold together with 95%."""
    out = pd.DataFrame.from_dict(rows, orient="index")
    out["level"] = 1 - ALPHA / len(out)
    out["p_holm"] = holm(out.p)
    good = (out["mean"] > 0) == MEASURES[measure][1]
    out["verdict"] = np.where(out.p_holm >= ALPHA, "no clear difference", np.where(good, "better", "worse"))
    return out


def compare(
    table: pd.DataFrame,
    variants,
    baseline: str = "full",
    measure: str = PRIMARY,
    group: str = "agent",
    like: bool = True,
) -> pd.DataFrame:
    """One family: each variant against the baseline on one measure, paired, corrected, with verdicts."""
    level = 1 - ALPHA / len(variants)
    return family(
        {
            v: comparison(paired(table, v, baseline, measure, group, like), MEASURES[measure][1], level)
            for v in variants
        },
        measure,
    )


def unpaired(table: pd.DataFrame, variants, group: str = "peers", measure: str = PRIMARY) -> pd.DataFrame:
    """Other learners against the full agent's seeds as two samples: a peer's seed k shares neither goals
    nor weights with the agent's, so nothing pairs them. The difference of means with its bootstrap
    intervals, the exact two-sample permutation test (every split of the pooled runs), Holm over the family."""
    level = 1 - ALPHA / len(variants)
    full = table[(table.group == "agent") & (table.variant == "full")][measure].to_numpy()
    sign = 1 if MEASURES[measure][1] else -1
    rows = {}
    for v in variants:
        x = table[(table.group == group) & (table.variant == v)][measure].to_numpy()
        rows[v] = {
            "seeds": len(x),
            "baseline_seeds": len(full),
            "mean": x.mean() - full.mean(),
            "low": np.nan,
            "high": np.nan,
            "low_95": np.nan,
            "high_95": np.nan,
            "better_than": float(improvement(sign * x, sign * full)),
            "p": stats.permutation_test(
                (x, full), difference, permutation_type="independent", n_resamples=np.inf, vectorized=True
            ).pvalue,
        }
        if min(len(x), len(full)) >= 2:
            rows[v]["low"], rows[v]["high"] = interval(difference, x, full, level=level)
            rows[v]["low_95"], rows[v]["high_95"] = interval(difference, x, full)
    return family(rows, measure)


def difference(x, y, axis=-1):
    return x.mean(axis) - y.mean(axis)


def summaries(table: pd.DataFrame, variant: str, baseline: str = "full", measure: str = PRIMARY) -> dict:
    """rliable's interquartile means and probability of improvement, with 95% bootstrap intervals."""
    pairs = paired(table, variant, baseline, measure)
    x, y = pairs.variant.to_numpy(), pairs.baseline.to_numpy()
    if not MEASURES[measure][1]:
        x, y = -x, -y  # "improvement" is then a lower value
    return {
        "iqm": iqm(pairs.variant),
        "iqm_interval": interval(iqm, pairs.variant.to_numpy()),
        "iqm_baseline": iqm(pairs.baseline),
        "iqm_baseline_interval": interval(iqm, pairs.baseline.to_numpy()),
        "p_improvement": improvement(x, y),
        "p_improvement_interval": interval(improvement, x, y),
    }
