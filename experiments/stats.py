"""Paired comparisons of variants across seeds, with scipy: one rule, one vocabulary.

    stats.compare(table, ["one_step", "uniform"])      # a row per variant against the full agent

**The rule.** Variant and baseline are paired seed by seed (seed k against seed k: the same goals,
the same initial weights) and like for like: seed k of the baseline run on the same processor for
the same results version, since the same seed on two processors differs from episode 1 on. Any other
pair is refused (`PairError`). On the differences d_k (variant minus baseline):
- the mean;
- the p-value of an exact sign-flip permutation test (all 2^K flips), which asks only that d_k be
  symmetric about zero when nothing differs, so one large difference cannot hide ten of the same sign;
- the 95% interval of that comparison alone, `low_95` to `high_95`: every shift m for which the same
  test of d_k - m gives p >= 0.05 (the test inverted; Hartigan 1969). It is exact and deterministic,
  and zero lies outside it exactly when p < 0.05. Its ends are subset means of the d_k: with 10 seeds
  the 25th smallest and the 25th largest of the 1023;
- Holm's step-down correction over the family (every variant compared on that measure).
A variant is **better** or **worse** where Holm's p is below 0.05, in the direction of the mean;
everything else is **no clear difference**, which is never "no effect". Holm's p is corrected for
the family and no interval is, so an interval can exclude zero where the verdict is no clear
difference: the interval is of one comparison alone. With K seeds the smallest p the test can give
is 2 / 2^K, so fewer than 6 seeds (0.0625 for 5, 0.25 for 3) can never reach a verdict, and get no
interval (it would be the whole line).

Learners that share no seed with the agent (the peers) are compared with its ten seeds as two
samples instead (`unpaired`): an exact two-sample permutation test (every split of the pooled runs),
its 95% interval for a shift of the peer's runs inverted the same way, Holm over the peers.

Beside them, rliable's summaries (Agarwal et al. 2021), computed with scipy: the interquartile
mean of each side and the probability that a run of the variant beats a run of the baseline, each
with a 95% bootstrap interval.
"""

import itertools
import math
import warnings
from fractions import Fraction

import numpy as np
import pandas as pd
from scipy import stats

from .runs import MEASURES, PRIMARY

ALPHA = 0.05
RESAMPLES = 9999  # rliable's bootstrap intervals (`summaries`)


def holm(p) -> np.ndarray:
    """Holm's adjusted p-values, in the order given."""
    p = np.asarray(p, float)
    order = np.argsort(p)
    adjusted = np.maximum.accumulate((len(p) - np.arange(len(p))) * p[order])
    out = np.empty_like(p)
    out[order] = np.minimum(adjusted, 1)
    return out


def inverted(swaps, scale: float, alpha: float = ALPHA) -> tuple:
    """An exact permutation test and its interval, from its `swaps`: for each rearrangement but the
    identity, the shift m at which it ties with the observed statistic (a rearrangement's statistic is
    at least the observed one exactly when its swap is at most m). Returns p at m = 0 and the closed
    interval of the m with p >= alpha; (nan, nan) where no data could give p < alpha. A swap within
    rounding of zero (1e-12 of the data's `scale`) is a tie with the observed statistic, as in scipy."""
    swaps = np.sort(np.where(np.abs(swaps) <= 1e-12 * scale, 0.0, swaps))
    total = len(swaps) + 1  # every rearrangement, the identity included
    p = min(1.0, 2 * (1 + min((swaps <= 0).sum(), (swaps >= 0).sum())) / total)
    # p(m) >= alpha exactly when at least j swaps lie at or below m and at least j at or above it.
    j = math.ceil(Fraction(alpha).limit_denominator(10**6) / 2 * total) - 1
    if j < 1:
        return p, (np.nan, np.nan)
    return p, (float(swaps[j - 1]), float(swaps[-j]))


def sign_flips(d) -> tuple:
    """The exact sign-flip test of the mean of d and its interval (`inverted`). Flipping the signs of
    the set S changes the statistic by -2 sum_S (d - m) / K: its swap is the mean of d over S."""
    d = np.asarray(d, float)
    flips = np.array(list(itertools.product((0, 1), repeat=len(d)))[1:], float)  # every nonempty S
    return inverted(flips @ d / flips.sum(axis=1), np.abs(d).max(initial=0))


def splits(x, y) -> tuple:
    """The exact two-sample permutation test of mean(x) - mean(y) over every split of the pooled runs,
    and its interval for a shift of x (`inverted`). A split that trades the set A of x's runs for the
    set B of y's (r of each) has the swap mean(x over A) - mean(y over B)."""
    x, y = np.asarray(x, float), np.asarray(y, float)
    n = len(x)
    into = np.zeros((math.comb(n + len(y), n), n + len(y)), bool)
    for row, chosen in enumerate(itertools.combinations(range(n + len(y)), n)):
        into[row, list(chosen)] = True  # the runs that form the first sample
    r = into[:, n:].sum(axis=1)
    out, moved = ~into[:, :n], into[:, n:]
    keep = r > 0  # the identity split trades nothing
    return inverted(((out @ x - moved @ y)[keep]) / r[keep], np.abs(np.r_[x, y]).max(initial=0))


def interval(statistic, *samples, paired: bool = False) -> tuple:
    """rliable's 95% bootstrap interval (BCa; percentile where BCa is undefined, as for identical values)."""
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
                confidence_level=1 - ALPHA,
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


def comparison(pairs: pd.DataFrame, higher_is_better: bool) -> dict:
    """The numbers of one paired comparison (Holm's p and the verdict come with its family)."""
    d = pairs.d.to_numpy()
    sign = 1 if higher_is_better else -1
    p, (low, high) = sign_flips(d) if len(d) else (1.0, (np.nan, np.nan))
    return {
        "seeds": len(d),
        "mean": d.mean(),
        "low_95": low,
        "high_95": high,
        "p": p,
        "better_in": int((sign * d > 0).sum()),
        "worse_in": int((sign * d < 0).sum()),
    }


def family(rows: dict, measure: str) -> pd.DataFrame:
    """A family of comparisons on one measure: Holm's p and each verdict. Each interval `low_95` to
    `high_95` is its comparison's alone, uncorrected; the verdict is corrected for the family."""
    out = pd.DataFrame.from_dict(rows, orient="index")
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
    return family(
        {v: comparison(paired(table, v, baseline, measure, group, like), MEASURES[measure][1]) for v in variants},
        measure,
    )


def unpaired(table: pd.DataFrame, variants, group: str = "peers", measure: str = PRIMARY) -> pd.DataFrame:
    """Other learners against the full agent's seeds as two samples: a peer's seed k shares neither goals
    nor weights with the agent's, so nothing pairs them. The difference of means, the exact two-sample
    permutation test (every split of the pooled runs) with its inverted 95% interval, Holm over the family."""
    full = table[(table.group == "agent") & (table.variant == "full")][measure].to_numpy()
    sign = 1 if MEASURES[measure][1] else -1
    rows = {}
    for v in variants:
        x = table[(table.group == group) & (table.variant == v)][measure].to_numpy()
        p, (low, high) = splits(x, full)
        rows[v] = {
            "seeds": len(x),
            "baseline_seeds": len(full),
            "mean": x.mean() - full.mean(),
            "low_95": low,
            "high_95": high,
            "better_than": float(improvement(sign * x, sign * full)),
            "p": p,
        }
    return family(rows, measure)


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
