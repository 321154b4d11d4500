"""Every comparison the report and the README state, computed from results/ by one stated rule.

    stats = run_stats(run)                      # one run's numbers, with its worst and best arm
    c = compare(results, "one_step", "mean_1_100")
    c.verdict, c.text                           # "lower", "mean of episodes 1-100: **lower** (higher in 0 of 3 seeds, ...)"

**The rule.** A variant is compared with the full agent seed by seed (seed k against seed k; the
ablations have seeds 0-2). With fewer than MIN_SEEDS pairs there is no verdict. Otherwise it is
called higher (or lower, sooner, later) only when the two ranges over the seeds do not overlap
(then it is on the same side in every pair too); otherwise "no clear difference", with the count
of pairs on each side. A difference inside the seed-to-seed spread is reported as no clear
difference, never as "no effect".

**What a verdict is worth.** With no effect at all, 3 runs against 3 fall into ranges apart by
chance with probability at most 2 / C(6, 3) = 0.1 (`chance_apart`; ties and seeds shared within
a pair make it rarer). Over the report's many comparisons
a few such verdicts are expected by chance alone (`expected_by_chance`, stated where they are
listed): one verdict is a lead to re-run with more seeds, not a finding.
"""
from math import comb
from dataclasses import dataclass

import numpy as np

from continuous_control.results import TARGET_SCORE, WINDOW, first_episode_at

EPISODES = WINDOW       # every variant is compared over its first 100 episodes
MIN_SEEDS = 3           # fewer paired seeds give no verdict: with 1 or 2, chance alone sets them apart too often
NEVER = EPISODES + 1    # "first episode at 30" of a run that never reached 30, for ordering only


def run_stats(run: dict, episodes: int = EPISODES) -> dict:
    """A run's numbers over its first `episodes` episodes, each mean with its worst and best arm.

    first_30: the first episode whose 20-arm mean reached 30 (None: never).
    mean_1_100, worst_arm_1_100, best_arm_1_100: the 20-arm mean of episodes 1-100; the arms'
      own means over those episodes, lowest and highest.
    mean_91_100: the 20-arm mean of episodes 91-100 (where the run settled).
    solved_by_100: whether episodes 1-100 average at least 30 (solved at episode 100).
    eval, eval_worst_arm, eval_best_arm: the exported policy without noise, 5 episodes on unseen
      goals: the 20-arm mean, and the arms' own means, lowest and highest.
    minutes: the run's wall time (to solve, for the full agent; its 100 episodes, for an ablation).
    """
    mean = np.asarray(run["scores"]["mean"][:episodes])
    arms = np.asarray(run["arms"])[:episodes].mean(0)
    s = run["summary"]
    return {"seed": s["seed"],
            "first_30": first_episode_at(mean, TARGET_SCORE),
            "mean_1_100": float(mean.mean()), "worst_arm_1_100": float(arms.min()), "best_arm_1_100": float(arms.max()),
            "mean_91_100": float(mean[-10:].mean()),
            "solved_by_100": bool(len(mean) == episodes and mean.mean() >= TARGET_SCORE),
            **evaluation(s),
            "minutes": (s["wall_seconds_to_solve"] or s["wall_seconds"]) / 60}


def evaluation(summary: dict) -> dict:
    """The noise-free evaluation's mean, worst and best arm (None for a run not evaluated)."""
    if "eval_noise_free_5" not in summary:
        return {"eval": None, "eval_worst_arm": None, "eval_best_arm": None}
    arms = summary["eval_arm_means"]
    return {"eval": float(np.mean(summary["eval_noise_free_5"])),
            "eval_worst_arm": float(min(arms)), "eval_best_arm": float(max(arms))}


def sharing(runs: list) -> str:
    """How the runs shared the machine (summary.json's concurrent_runs): "alone", "2 at a time", or both."""
    counts = sorted({r["summary"].get("concurrent_runs", 1) for r in runs})
    return " and ".join("alone" if k == 1 else f"{k} at a time" for k in counts)


# What each compared quantity is called, and which way is better: +1 higher, -1 lower (sooner).
METRICS = {
    "first_30": ("first episode at 30", -1),
    "mean_1_100": ("mean of episodes 1-100", +1),
    "worst_arm_1_100": ("worst arm's mean over episodes 1-100", +1),
    "mean_91_100": ("mean of episodes 91-100", +1),
    "eval": ("noise-free evaluation", +1),
    "eval_worst_arm": ("worst arm without noise", +1),
}


def fmt(metric: str, value, digits: int = 1) -> str:
    if metric == "first_30":
        return "never" if value is None or value >= NEVER else str(int(value))
    return f"{value:.{digits}f}"


def span(metric: str, values, digits: int = 1) -> str:
    """The range of values over seeds, "lo to hi" (one value when they print alike)."""
    lo, hi = fmt(metric, min(values), digits), fmt(metric, max(values), digits)
    return lo if lo == hi else f"{lo} to {hi}"


@dataclass
class Comparison:
    variant: str
    metric: str
    seeds: list          # the paired seeds
    variant_values: list
    full_values: list
    above: int           # pairs where the variant's value is larger
    below: int           # pairs where it is smaller
    apart: bool          # the two ranges do not overlap
    verdict: str         # "higher", "lower", "sooner", "later", "no clear difference" or TOO_FEW

    @property
    def text(self) -> str:
        name, _ = METRICS[self.metric]
        n = len(self.seeds)
        if self.verdict == TOO_FEW:
            return (f"{name}: {TOO_FEW} ({span(self.metric, self.variant_values, 2)} against "
                    f"{span(self.metric, self.full_values, 2)} on {n} seed{'s' if n > 1 else ''}; the rule needs {MIN_SEEDS})")
        if self.metric == "first_30":
            counts = f"sooner in {self.below} of {n} seeds, later in {self.above}"
        else:
            counts = f"higher in {self.above} of {n} seeds, lower in {self.below}"
        # Two decimals: ranges that are apart by less than 0.1 must not print alike.
        ranges = (f"{span(self.metric, self.variant_values, 2)} against {span(self.metric, self.full_values, 2)}, "
                  f"ranges {'apart' if self.apart else 'overlapping'}")
        return f"{name}: **{self.verdict}** ({counts}; {ranges})"


TOO_FEW = "no verdict, too few seeds"


def chance_apart(n: int, m: int) -> float:
    """The chance that n runs and m runs of equal worth (exchangeable) fall into ranges that do not
    overlap, one above the other either way: 2 orderings out of C(n + m, n)."""
    return 2 / comb(n + m, n)


def expected_by_chance(comparisons: list) -> float:
    """How many of these verdicts chance alone would give if no variant changed anything."""
    return sum(chance_apart(len(c.seeds), len(c.seeds)) for c in comparisons if c.verdict != TOO_FEW)


def too_few(comparisons: list, baseline: str = "the full agent") -> str:
    """What a variant (or peer) whose comparisons all have too few seeds is told."""
    n = len(comparisons[0].seeds)
    return f"no verdict yet: {n} seed{'s' if n > 1 else ''} in common with {baseline}, the rule needs {MIN_SEEDS}"


def chance_sentence(comparisons: dict) -> str:
    """How many verdicts a set of comparisons ({name: [Comparison]}) gave, against how many chance
    alone would give if nothing made a difference."""
    judged = [c for cs in comparisons.values() for c in cs if c.verdict != TOO_FEW]
    if not judged:
        return ""
    called = sum(c.verdict != "no clear difference" for c in judged)
    # At most: ties (whole episodes) and seeds shared within a pair make ranges apart rarer than
    # for exchangeable continuous values, and the measures are correlated, so the count varies more.
    return (f"{called} of the {len(judged)} comparisons with enough seeds gave a verdict; if no change made any "
            f"difference, chance alone would give at most about {expected_by_chance(judged):.1f} "
            f"(`claims.chance_apart`), and correlated measures tend to come together.")


def value(stats: dict, metric: str) -> float:
    v = stats[metric]
    return NEVER if v is None else v


def compare(results: dict, variant: str, metric: str, baseline: str = "full") -> Comparison:
    """The variant against the baseline on one metric, paired by seed, by the module's rule."""
    ours = {s["seed"]: s for s in map(run_stats, results[variant])}
    theirs = {s["seed"]: s for s in map(run_stats, results[baseline])}
    seeds = sorted(set(ours) & set(theirs))
    if not seeds:
        raise ValueError(f"{variant} and {baseline} share no seed")
    a = [value(ours[k], metric) for k in seeds]
    b = [value(theirs[k], metric) for k in seeds]
    above = sum(x > y for x, y in zip(a, b))
    below = sum(x < y for x, y in zip(a, b))
    apart = min(a) > max(b) or max(a) < min(b)
    verdict = "no clear difference"
    if len(seeds) < MIN_SEEDS:
        verdict = TOO_FEW
    elif apart and above == len(seeds):
        verdict = "later" if metric == "first_30" else "higher"
    elif apart and below == len(seeds):
        verdict = "sooner" if metric == "first_30" else "lower"
    return Comparison(variant, metric, seeds, a, b, above, below, apart, verdict)


def better(c: Comparison) -> bool | None:
    """True if the variant is clearly better than the baseline, False if clearly worse, None if neither."""
    if c.verdict in ("no clear difference", TOO_FEW):
        return None
    return (c.verdict in ("higher", "later")) == (METRICS[c.metric][1] > 0)


def all_comparisons(results: dict) -> dict:
    """{variant: [Comparison for each metric]} for every variant with results other than full."""
    return {v: [compare(results, v, m) for m in METRICS] for v in results if v != "full" and "full" in results}


def summary_line(comparisons: list) -> str:
    """One variant's comparisons in a phrase: which metrics are clearly better or worse than the full agent's."""
    if all(c.verdict == TOO_FEW for c in comparisons):
        return too_few(comparisons)
    worse = [METRICS[c.metric][0] for c in comparisons if better(c) is False]
    good = [METRICS[c.metric][0] for c in comparisons if better(c) is True]
    parts = []
    if worse:
        parts.append("clearly worse than the full agent on " + ", ".join(worse))
    if good:
        parts.append("clearly better on " + ", ".join(good))
    return "; ".join(parts) if parts else "no clear difference from the full agent on any measure"
