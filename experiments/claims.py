"""Every comparison the report and the README state, computed from results/ by one stated rule.

    stats = run_stats(run)                      # one run's numbers, with its worst and best arm
    c = compare(results, "one_step", "mean_1_100", family=11)
    c.verdict, c.text                           # "lower", "mean of episodes 1-100: **lower** (-1.71, ...)"

**The rule.** A variant is compared with the full agent seed by seed (seed k against seed k: the
same goals and initial weights, on whatever processor each was made; `results.paired_seeds`). The
primary measure, named before the ten-seed runs, is the mean of episodes 1-100; the others are secondary. For each variant and measure: the paired differences (variant minus full agent), their
mean, and a 95% t-interval, widened for the `family` comparisons made on the same measure
(Bonferroni: level 1 - 0.05 / family). A verdict (higher, lower, sooner, later) only where that
corrected interval excludes zero; otherwise "no clear difference", which is never "no effect".
With fewer than MIN_SEEDS pairs there is no verdict. `paired_family` gives the same numbers for a
whole family at once, with Holm's adjusted p-values, interquartile means and the probability of
improvement beside them.
"""
import re
from dataclasses import dataclass

import numpy as np

from continuous_control.results import TARGET_SCORE, WINDOW, first_episode_at, paired_seeds, processor_of

EPISODES = WINDOW       # every variant is compared over its first 100 episodes
MIN_SEEDS = 3           # fewer paired seeds give no verdict: with 1 or 2, chance alone sets them apart too often
NEVER = EPISODES + 1    # "first episode at 30" of a run that never reached 30, for ordering only
ALPHA = 0.05            # 95% intervals
PRIMARY = "mean_1_100"  # the primary measure, named before the ten-seed runs


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
    """How the runs shared the machine (summary.json's concurrent_runs) and on which kinds of processor,
    since minutes compare only like with like: "2 at a time, AMD EPYC", "alone and 2 at a time", ..."""
    counts = sorted({r["summary"].get("concurrent_runs", 1) for r in runs})
    shared = " and ".join("alone" if k == 1 else f"{k} at a time" for k in counts)
    kinds = processors(runs)
    return f"{shared}, {kinds}" if kinds else shared


def processors(runs: list) -> str:
    """The kinds of processor that made the runs, short (`short_processor`): "AMD EPYC and Intel Xeon",
    "AMD EPYC and one not recorded" where some run did not record its own, or "" where none is named."""
    kinds = {short_processor(processor_of(r["summary"])) for r in runs}
    named = sorted(kinds - {""})
    return " and ".join(named + (["one not recorded"] if named and "" in kinds else []))


def short_processor(name: str) -> str:
    """A processor's model name without trademarks and filler: "Intel(R) Xeon(R) Processor" -> "Intel Xeon"."""
    return " ".join(re.sub(r"\((R|TM|tm)\)|\bProcessor\b|\bCPU\b", " ", name).split())


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
        if value is None or value >= NEVER:
            return "never"
        return str(int(value)) if float(value).is_integer() else f"{value:.1f}"     # a median may fall between two
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
    mean: float          # the mean paired difference, variant minus full agent
    corrected: tuple     # its t-interval at level 1 - ALPHA / family
    family: int          # the comparisons made on this measure together
    verdict: str         # "higher", "lower", "sooner", "later", "no clear difference" or TOO_FEW

    @property
    def text(self) -> str:
        name = METRICS[self.metric][0] if self.metric in METRICS else self.metric
        n = len(self.seeds)
        if self.verdict == TOO_FEW and not n:
            return f"{name}: {TOO_FEW} (no seed in common; the rule needs {MIN_SEEDS})"
        if self.verdict == TOO_FEW:
            return (f"{name}: {TOO_FEW} ({span(self.metric, self.variant_values, 2)} against "
                    f"{span(self.metric, self.full_values, 2)} on {n} seed{'s' if n > 1 else ''}; the rule needs {MIN_SEEDS})")
        lo, hi = self.corrected
        return (f"{name}: **{self.verdict}** (difference {self.mean:+.2f}, 95% interval corrected for {self.family} "
                f"comparison{'s' * (self.family > 1)} [{lo:+.2f}, {hi:+.2f}]; {span(self.metric, self.variant_values, 2)} "
                f"against {span(self.metric, self.full_values, 2)}; higher in {self.above} of {n} seeds, lower in {self.below})")


TOO_FEW = "no verdict, too few seeds"


def too_few(comparisons: list, baseline: str = "the full agent") -> str:
    """What a variant (or peer) whose comparisons all have too few seeds is told."""
    n = len(comparisons[0].seeds)
    return (f"no verdict yet: {n} seed{'' if n == 1 else 's'} in common with {baseline}, "
            f"the rule needs {MIN_SEEDS}")


def rule_sentence(comparisons: dict) -> str:
    """How many verdicts a set of comparisons ({name: [Comparison]}) gave, and by what rule."""
    judged = [c for cs in comparisons.values() for c in cs if c.verdict != TOO_FEW]
    if not judged:
        return ""
    called = sum(c.verdict != "no clear difference" for c in judged)
    family = max(c.family for c in judged)
    return (f"{called} of the {len(judged)} comparisons with enough seeds gave a verdict: a verdict is a mean paired "
            f"difference whose 95% t-interval, widened for the {family} variants compared on the same measure "
            f"(Bonferroni), excludes zero. The primary measure is the mean of episodes 1-100.")


def value(stats: dict, metric: str) -> float:
    v = stats[metric]
    return NEVER if v is None else v


def compare(results: dict, variant: str, metric: str, baseline: str = "full", family: int = 1) -> Comparison:
    """The variant against the baseline on one metric, paired by seed (`paired_seeds`), by the module's
    rule, its interval corrected for `family` comparisons."""
    ours = {s["seed"]: s for s in map(run_stats, results[variant])}
    theirs = {s["seed"]: s for s in map(run_stats, results[baseline])}
    seeds = paired_seeds(results, variant, baseline)
    a = [value(ours[k], metric) for k in seeds]
    b = [value(theirs[k], metric) for k in seeds]
    d = np.subtract(a, b, dtype=float)
    above, below = int(np.sum(d > 0)), int(np.sum(d < 0))
    if len(seeds) < MIN_SEEDS:
        mean = float(d.mean()) if seeds else np.nan
        return Comparison(variant, metric, seeds, a, b, above, below, mean, (np.nan, np.nan), family, TOO_FEW)
    lo, hi = t_interval(d, 1 - ALPHA / family)
    verdict = "no clear difference"
    if lo > 0:
        verdict = "later" if metric == "first_30" else "higher"
    elif hi < 0:
        verdict = "sooner" if metric == "first_30" else "lower"
    return Comparison(variant, metric, seeds, a, b, above, below, float(d.mean()), (lo, hi), family, verdict)


def better(c: Comparison) -> bool | None:
    """True if the variant is clearly better than the baseline, False if clearly worse, None if neither."""
    if c.verdict in ("no clear difference", TOO_FEW):
        return None
    return (c.verdict in ("higher", "later")) == (METRICS[c.metric][1] > 0)


def family_size(results: dict, variants, baseline: str = "full") -> int:
    """The comparisons corrected together on one measure: the variants with MIN_SEEDS seeds or more in
    common with the baseline (at least 1)."""
    return max(sum(len(paired_seeds(results, v, baseline)) >= MIN_SEEDS for v in variants), 1)


def all_comparisons(results: dict) -> dict:
    """{variant: [Comparison for each metric]} for every variant with results other than full; the
    family of each measure is every variant with MIN_SEEDS seeds in common with the full agent."""
    if "full" not in results:
        return {}
    family = family_size(results, [v for v in results if v != "full"])
    return {v: [compare(results, v, m, family=family) for m in METRICS] for v in results if v != "full"}


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


# --- Paired statistics: the rule the report's verdicts follow ---------------------------------------
#
# One primary measure, named before the runs: the mean of episodes 1-100 (PRIMARY). For each variant
# and measure, the differences variant minus full agent on the same seeds, their mean, and a 95%
# t-interval (scipy.stats.t). Across a family of comparisons (the variants on one measure) the
# interval is widened by Bonferroni's correction, to level 1 - 0.05 / m; a verdict is given only
# where that corrected interval excludes zero. Holm's step-down p-values are reported beside it
# (every Bonferroni verdict is also a Holm rejection). With ten seeds, the interquartile mean of
# each side and the probability that a variant's run beats a full agent's run (both as rliable
# defines them) are given too.

@dataclass
class Paired:
    variant: str
    metric: str
    seeds: list
    diffs: np.ndarray        # variant minus baseline, seed by seed
    mean: float
    interval: tuple          # 95%, uncorrected
    corrected: tuple         # 1 - ALPHA / m, Bonferroni over the family
    p: float                 # paired t-test, two-sided
    p_holm: float
    iqm: tuple               # (variant, baseline): interquartile means over the seeds
    improvement: float       # P(variant's run better than a baseline run), ties counted half
    verdict: str             # "better", "worse", "no clear difference", or TOO_FEW

    @property
    def text(self) -> str:
        name = METRICS[self.metric][0]
        if self.verdict == TOO_FEW:
            return f"{name}: {TOO_FEW} ({len(self.seeds)} paired seeds)"
        lo, hi = self.corrected
        return (f"{name}: {self.mean:+.2f} [{lo:+.2f}, {hi:+.2f}] over {len(self.seeds)} seeds, "
                f"**{self.verdict}**")


def t_interval(diffs, level: float) -> tuple:
    """The t-interval of the mean of `diffs` at `level` (a point when they are all equal)."""
    from scipy import stats
    diffs = np.asarray(diffs, float)
    se = diffs.std(ddof=1) / np.sqrt(len(diffs))
    if se == 0:
        return float(diffs.mean()), float(diffs.mean())
    lo, hi = stats.t.interval(level, len(diffs) - 1, loc=diffs.mean(), scale=se)
    return float(lo), float(hi)


def t_p_value(diffs) -> float:
    """Two-sided p-value of the paired t-test that the mean difference is zero."""
    from scipy import stats
    diffs = np.asarray(diffs, float)
    if np.all(diffs == diffs[0]):
        return 1.0 if diffs[0] == 0 else 0.0
    return float(stats.ttest_1samp(diffs, 0.0).pvalue)


def holm(p_values) -> np.ndarray:
    """Holm's step-down adjusted p-values: the smallest family-wise level at which each is rejected."""
    p = np.asarray(p_values, float)
    order = np.argsort(p)
    m = len(p)
    adjusted = np.maximum.accumulate((m - np.arange(m)) * p[order])
    out = np.empty(m)
    out[order] = np.minimum(adjusted, 1.0)
    return out


def interquartile_mean(values) -> float:
    """The mean of the middle half (rliable's IQM): scipy's 25%-trimmed mean."""
    from scipy import stats
    return float(stats.trim_mean(np.asarray(values, float), 0.25))


def probability_of_improvement(ours, theirs, sign: int) -> float:
    """P(X > Y) + P(X = Y) / 2 for a run X of ours and Y of theirs (rliable's, unpaired); `sign` -1
    when lower is better."""
    x, y = sign * np.asarray(ours, float)[:, None], sign * np.asarray(theirs, float)[None, :]
    return float(np.mean((x > y) + 0.5 * (x == y)))


def paired_family(results: dict, metric: str, variants=None, baseline: str = "full") -> list:
    """Every variant (default: all with results) against the baseline on `metric`, by `compare` with the
    family's correction, and beside it the uncorrected interval, Holm's p, the IQMs and P(improvement)."""
    variants = [v for v in (variants or results) if v != baseline and v in results]
    family = family_size(results, variants, baseline)
    cs = [compare(results, v, metric, baseline, family) for v in variants if paired_seeds(results, v, baseline)]
    judged = [c for c in cs if c.verdict != TOO_FEW]
    holm_of = dict(zip((c.variant for c in judged),
                       holm([t_p_value(np.subtract(c.variant_values, c.full_values)) for c in judged])))
    sign, out = METRICS[metric][1], []
    for c in cs:
        a, b = np.asarray(c.variant_values, float), np.asarray(c.full_values, float)
        if c.verdict == TOO_FEW:
            out.append(Paired(c.variant, metric, c.seeds, a - b, c.mean, (np.nan, np.nan), (np.nan, np.nan), np.nan,
                              np.nan, (np.nan, np.nan), np.nan, TOO_FEW))
            continue
        good = better(c)
        out.append(Paired(c.variant, metric, c.seeds, a - b, c.mean, t_interval(a - b, 1 - ALPHA), c.corrected,
                          t_p_value(a - b), float(holm_of[c.variant]), (interquartile_mean(a), interquartile_mean(b)),
                          probability_of_improvement(a, b, sign),
                          "no clear difference" if good is None else "better" if good else "worse"))
    return out


def seed_list(seeds: list) -> str:
    """"0-9" for a run of three or more consecutive seeds, else "0, 1"."""
    return (f"{seeds[0]}-{seeds[-1]}" if len(seeds) > 2 and list(seeds) == list(range(seeds[0], seeds[-1] + 1))
            else ", ".join(map(str, seeds)))


def effect_sentence(p: Paired, family: int) -> str:
    """One variant's effect on p.metric in a sentence: the mean paired difference, in how many seeds it was
    lower, its 95% interval, the interval widened for the `family` of comparisons, and that one's verdict."""
    from continuous_control.variants import LABELS
    if p.verdict == TOO_FEW:
        return (f"**{LABELS[p.variant]}**: no verdict yet, {len(p.seeds)} paired seed(s) ({seed_list(p.seeds)}); "
                f"the rule needs {MIN_SEEDS}.")
    (lo, hi), (clo, chi) = p.interval, p.corrected
    reading = "the widened interval holds zero" if p.verdict == "no clear difference" else "the widened interval excludes zero"
    return (f"**{LABELS[p.variant]}** minus the full agent, seeds {seed_list(p.seeds)} paired: {METRICS[p.metric][0]} "
            f"{p.mean:+.2f} on average (lower in {int(np.sum(p.diffs < 0))} of {len(p.seeds)} seeds); 95% interval "
            f"[{lo:+.2f}, {hi:+.2f}]; widened for the {family} variants of the report's family (Bonferroni), "
            f"[{clo:+.2f}, {chi:+.2f}]: **{p.verdict}** ({reading}).")


def effects(*variants: str, metric: str = PRIMARY, results: dict = None):
    """The lesson's evidence cells: the full agent's level on the measure, then for each variant
    `effect_sentence`, from the runs in results/ (the report's, on the built-in replica), as Markdown."""
    from IPython.display import Markdown
    from continuous_control.results import load_results
    results = load_results() if results is None else results
    if "full" not in results:
        return Markdown("No runs of the full agent in results/ yet (`make experiments`).")
    family = {p.variant: p for p in paired_family(results, metric)}
    size = family_size(results, [v for v in results if v != "full"])
    full = sorted(map(run_stats, results["full"]), key=lambda st: st["seed"])
    level = (f"The full agent, seeds {seed_list([st['seed'] for st in full])}: {METRICS[metric][0]} "
             f"{span(metric, [value(st, metric) for st in full], 2)}.")
    return Markdown("\n".join([level, ""] + [f"* {effect_sentence(family[v], size)}" if v in family
                                              else f"* `{v}`: no runs in results/ yet (`make experiments`)." for v in variants]))


# --- The score goals, on the distribution of the seeds ------------------------------------------------

def score_goals(runs: list) -> list:
    """(goal, what the seeds give, met) for each of the issue's goals, from the full agent's runs."""
    st = [run_stats(r) for r in runs]
    firsts = [NEVER if s["first_30"] is None else s["first_30"] for s in st]
    means = [s["mean_1_100"] for s in st]
    evals = [s["eval"] for s in st if s["eval"] is not None]
    worst = [s["eval_worst_arm"] for s in st if s["eval_worst_arm"] is not None]
    solved = sum(s["solved_by_100"] for s in st)
    n = len(st)
    strong = sum(w >= 37 for w in worst)
    return [
        ("every seed solved at episode 100", f"{solved} of {n}", solved == n),
        ("first episode with a mean of 30: median 12 or earlier", fmt("first_30", np.median(firsts)) if n else "-",
         bool(n) and np.median(firsts) <= 12),
        ("first episode with a mean of 30: the latest seed 16 or earlier", fmt("first_30", max(firsts, default=NEVER)),
         bool(n) and max(firsts) <= 16),
        ("mean of episodes 1-100: median 35 or more", f"{np.median(means):.2f}" if n else "-", bool(n) and np.median(means) >= 35),
        ("mean of episodes 1-100: worst seed 34 or more", f"{min(means, default=np.nan):.2f}", bool(n) and min(means) >= 34),
        ("noise-free: median 39.3 or more", f"{np.median(evals):.2f}" if evals else "-", bool(evals) and np.median(evals) >= 39.3),
        ("noise-free: worst arm 37 or more in at least 9 of 10 seeds", f"{strong} of {len(worst)}",
         len(worst) >= 10 and strong >= 9),
    ]


def interval_rows(results: dict, metric: str = PRIMARY, variants=None, baseline: str = "full") -> list:
    """One row per variant (those with results), for a Markdown table: its paired seeds, the mean paired
    difference, the 95% interval uncorrected and corrected, Holm's p, the interquartile means, the
    probability that a variant's run beats a full agent's, and the verdict."""
    rows = []
    for p in paired_family(results, metric, variants, baseline):
        if p.verdict == TOO_FEW:
            rows.append([p.variant, len(p.seeds), "-", "-", "-", "-", "-", "-", TOO_FEW])
            continue
        ten = len(p.seeds) >= 10                  # IQM and P(improvement) mean little on fewer seeds
        rows.append([p.variant, len(p.seeds), f"{p.mean:+.2f}", f"[{p.interval[0]:+.2f}, {p.interval[1]:+.2f}]",
                     f"[{p.corrected[0]:+.2f}, {p.corrected[1]:+.2f}]", f"{p.p_holm:.3f}",
                     f"{p.iqm[0]:.2f} / {p.iqm[1]:.2f}" if ten else "-", f"{p.improvement:.2f}" if ten else "-", p.verdict])
    return rows


INTERVAL_HEADER = ["variant", "paired seeds", "mean difference (variant - baseline)", "95% interval",
                   "95% interval, corrected (Bonferroni)", "Holm's p", "IQM variant / baseline (10 seeds)",
                   "P(variant run better) (10 seeds)", "verdict"]
