"""The report's comparisons follow their stated rule, match the saved scores, and reach the text.

The rule (experiments/claims.py): a variant is higher / lower / sooner / later than the full agent
only if it is on that side in every seed pair and the ranges over the seeds do not overlap.
"""
import csv
import json
import os
import re

import nbformat
import numpy as np
import pytest

from continuous_control.results import first_episode_at, load_results, load_run
from experiments import claims, report

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))


def fake_run(folder, seed, means, eval_arms=None, **summary):
    """A run folder as experiments/run.py leaves it: every arm scores the episode's mean, except arm 0
    (1 below) and arm 1 (1 above); `summary` adds to or replaces the summary's entries."""
    os.makedirs(folder)
    means = np.asarray(means, float)
    arms = np.repeat(means[:, None], 20, axis=1)
    arms[:, 0] -= 1.0                                  # arm 0 is the worst arm, 1 below the mean
    arms[:, 1] += 1.0
    with open(os.path.join(folder, "scores.csv"), "w") as f:
        f.write("episode,mean,min,max,avg100,wall_seconds\n")
        for i, m in enumerate(means):
            f.write(f"{i + 1},{m},{m - 1},{m + 1},{means[max(0, i - 99):i + 1].mean()},{i + 1}\n")
    np.savetxt(os.path.join(folder, "arm_scores.csv"), np.column_stack([np.arange(1, len(means) + 1), arms]),
               delimiter=",", header="episode," + ",".join(f"arm{k}" for k in range(20)), comments="")
    eval_arms = [means[-1]] * 20 if eval_arms is None else eval_arms
    json.dump({"seed": seed, "solved_at": None, "wall_seconds": 60.0, "wall_seconds_to_solve": None,
               "episodes": len(means), "environment": "fake", "machine": "fake machine",
               "eval_noise_free_5": [float(np.mean(eval_arms))] * 5, "eval_arm_means": list(map(float, eval_arms)),
               **summary},
              open(os.path.join(folder, "summary.json"), "w"))
    json.dump({"seed": seed}, open(os.path.join(folder, "config.json"), "w"))
    return load_run(str(folder))


def ramp(level, reach=30):
    """100 episodes rising linearly to `level` by episode `reach`, then flat."""
    return np.minimum(np.arange(1, 101) * level / reach, level)


def results_from(tmp_path, full_levels, variant_levels, **kw):
    return {"full": [fake_run(tmp_path / "full" / str(k), k, ramp(x, **kw)) for k, x in enumerate(full_levels)],
            "v": [fake_run(tmp_path / "v" / str(k), k, ramp(x, **kw)) for k, x in enumerate(variant_levels)]}


def test_lower_in_every_pair_and_outside_the_spread_is_lower(tmp_path):
    c = claims.compare(results_from(tmp_path, [36, 37, 38], [31, 32, 33.2]), "v", "mean_91_100")
    assert (c.above, c.below, c.verdict) == (0, 3, "lower") and c.corrected[1] < 0
    assert claims.better(c) is False
    assert "**lower** (difference -4.93, 95% interval corrected for 1 comparison [" in c.text


def test_every_pair_on_one_side_but_inside_the_spread_is_no_clear_difference(tmp_path):
    """Differences +1, +1.5, +0.2: mean 0.9, standard error 0.38, t(0.975, 2) 4.30: the interval spans zero."""
    c = claims.compare(results_from(tmp_path, [33, 35, 37], [34, 36.5, 37.2]), "v", "mean_91_100")
    assert (c.above, c.below) == (3, 0) and c.corrected[0] < 0 < c.corrected[1]
    assert c.verdict == "no clear difference" and claims.better(c) is None


def test_the_family_widens_the_interval(tmp_path):
    """The same differences: a verdict alone, none when corrected for 11 comparisons (level 1 - 0.05/11)."""
    results = results_from(tmp_path, [36, 37, 38], [33.5, 34, 36])
    alone, among = (claims.compare(results, "v", "mean_91_100", family=k) for k in (1, 11))
    assert alone.verdict == "lower" and among.verdict == "no clear difference"
    assert among.corrected[0] < alone.corrected[0] and among.mean == alone.mean


def test_fewer_than_three_seeds_get_no_verdict_however_far_apart(tmp_path):
    c = claims.compare(results_from(tmp_path, [20, 21], [38, 39]), "v", "mean_91_100")
    assert c.above == 2 and c.verdict == claims.TOO_FEW and claims.better(c) is None
    assert "38.00 to 39.00 against 20.00 to 21.00 on 2 seeds; the rule needs 3" in c.text


def test_first_episode_at_30_sooner_and_never(tmp_path):
    # Reaching the level at episode 10 against 40: each run crosses 30 when level * t / reach >= 30.
    fast = {"full": [fake_run(tmp_path / "f" / str(k), k, ramp(36, reach=40)) for k in range(3)],
            "v": [fake_run(tmp_path / "v" / str(k), k, ramp(36, reach=10)) for k in range(3)],
            "never": [fake_run(tmp_path / "n" / str(k), k, ramp(25)) for k in range(3)]}
    sooner = claims.compare(fast, "v", "first_30")
    assert sooner.verdict == "sooner" and claims.better(sooner) is True
    never = claims.compare(fast, "never", "first_30")
    assert never.verdict == "later" and "never against" in never.text and claims.better(never) is False


def test_worst_arm_comes_from_the_arms_not_the_mean(tmp_path):
    run = fake_run(tmp_path / "r", 0, np.full(100, 35.0), eval_arms=[39.0] * 19 + [15.3])
    st = claims.run_stats(run)
    assert st["worst_arm_1_100"] == pytest.approx(34.0) and st["best_arm_1_100"] == pytest.approx(36.0)
    assert st["eval_worst_arm"] == pytest.approx(15.3) and st["eval"] == pytest.approx((19 * 39 + 15.3) / 20)


def test_arms_are_read_from_the_run_not_from_its_folder(tmp_path):
    """run_stats takes the per-arm scores that load_run loaded (run["arms"]), not a second read."""
    run = fake_run(tmp_path / "r", 0, np.full(100, 35.0))
    assert run["arms"].shape == (100, 20)
    run["arms"] = run["arms"].copy()
    run["arms"][:, 5] = 12.0
    assert claims.run_stats(run)["worst_arm_1_100"] == pytest.approx(12.0)


def test_first_episode_at_30_is_the_packages_one(tmp_path):
    means = np.r_[np.linspace(0, 29.9, 20), [30.0], np.full(79, 29.0)]       # only episode 21 reaches 30
    run = fake_run(tmp_path / "r", 0, means)
    assert claims.run_stats(run)["first_30"] == first_episode_at(means) == 21
    assert claims.run_stats(fake_run(tmp_path / "n", 0, np.full(100, 29.99)))["first_30"] is None


# --- the committed results -------------------------------------------------------------------

RESULTS = load_results()
needs_results = pytest.mark.skipif(len(RESULTS) < 2, reason="no ablation results in results/")


def column(path, name, rows=100):
    with open(os.path.join(ROOT, path)) as f:
        return [float(r[name]) for r in csv.DictReader(f)][:rows]


@needs_results
def test_each_comparison_matches_the_saved_scores_and_the_rule():
    """Recomputed here from the CSV files with the csv module and scipy, not with the module under test."""
    from scipy import stats
    full = {r["summary"]["seed"] for r in RESULTS["full"]}
    pairs = {v: sorted(full & {r["summary"]["seed"] for r in runs}) for v, runs in RESULTS.items() if v != "full"}
    family = sum(len(seeds) >= 3 for seeds in pairs.values())
    for variant, seeds in pairs.items():
        if not seeds:
            continue
        ours = [np.mean(column(f"results/{variant}/seed{k}/scores.csv", "mean")[:100]) for k in seeds]
        theirs = [np.mean(column(f"results/full/seed{k}/scores.csv", "mean")[:100]) for k in seeds]
        c = claims.all_comparisons(RESULTS)[variant][list(claims.METRICS).index("mean_1_100")]
        assert c.seeds == seeds and c.family == family
        assert np.allclose(c.variant_values, ours, atol=1e-3) and np.allclose(c.full_values, theirs, atol=1e-3)
        d = np.subtract(ours, theirs)
        half = stats.t.ppf(1 - 0.05 / (2 * family), len(d) - 1) * d.std(ddof=1) / np.sqrt(len(d))
        expected = "higher" if d.mean() - half > 0 else "lower" if d.mean() + half < 0 else "no clear difference"
        expected = expected if len(seeds) >= 3 else claims.TOO_FEW
        assert c.verdict == expected, (variant, ours, theirs)
        if len(seeds) >= 3:
            assert c.corrected == pytest.approx((d.mean() - half, d.mean() + half), abs=1e-3)


@needs_results
def test_the_report_states_every_comparison_as_computed():
    """Report.ipynb shows section 5.1's tables exactly as claims.py computes them from results/ now."""
    notebook = nbformat.read(os.path.join(ROOT, "Report.ipynb"), as_version=4)
    shown = "\n".join(out.get("data", {}).get("text/markdown", "") for c in notebook.cells if c.cell_type == "code"
                      for out in c.get("outputs", []))
    if not shown:
        pytest.skip("Report.ipynb has no outputs (not executed yet: `make report`); test_notebooks.py requires them")
    for table in (report.interval_table(RESULTS), report.measures_table(RESULTS)):
        assert table in shown, "Report.ipynb does not show, or shows stale, section 5.1's tables"


@needs_results
def test_the_readme_states_every_verdict_as_computed():
    readme = open(os.path.join(ROOT, "README.md")).read()
    for variant, comparisons in claims.all_comparisons(RESULTS).items():
        assert claims.summary_line(comparisons) in readme, f"README's ablation table is stale for {variant}"


def test_the_reports_prose_types_no_result():
    """Numbers in the report's Markdown cells would go stale: results are computed in code cells.
    Allowed: formulas ($...$), code, links, and the course's constants (30, 100, section numbers)."""
    report = nbformat.read(os.path.join(ROOT, "Report.ipynb"), as_version=4)
    for c in report.cells:
        if c.cell_type != "markdown":
            continue
        text = re.sub(r"\$[^$]*\$|`[^`]*`|\([^)]*\.(md|py|png|ipynb)[^)]*\)|\[[^\]]*\]\([^)]*\)"
                      r"|sections? [\d.]+( and [\d.]+)?|^#+ .*$", "", c.source, flags=re.M)
        assert not re.search(r"\d+\.\d+", text), f"a decimal number typed in the report's prose: {c.source[:200]}"
        assert not re.search(r"\b\d+ (of|out of) \d+\b", text), f"a count typed in the report's prose: {c.source[:200]}"


def test_every_readme_block_is_what_the_saved_results_give_today(monkeypatch):
    """`make run` (and `make report`) rewrite the README's blocks; a result or a sentence changed
    since without rewriting them leaves the README stale, and this fails. The blocks read saved files
    only: on another machine (cores, processor), with no evaluation run, they are the same text."""
    import platform
    from continuous_control import results
    from experiments.summarize import BLOCKS
    monkeypatch.setattr(os, "cpu_count", lambda: 8)
    monkeypatch.setattr(platform, "machine", lambda: "arm64")

    def no_evaluation(*args, **kwargs):
        raise AssertionError("a README block ran an evaluation instead of reading the saved one")
    monkeypatch.setattr(results, "evaluate", no_evaluation)
    readme = open(os.path.join(ROOT, "README.md")).read()
    for name, make in BLOCKS.items():
        found = re.search(rf"<!-- begin: {name} -->\n(.*?)\n<!-- end: {name} -->", readme, re.S)
        assert found, f"README.md has no {name} block"
        assert found.group(1) == make(), f"README.md's {name} block is stale: make report"


def test_the_run_block_needs_the_saved_evaluation(tmp_path, monkeypatch):
    from experiments import summarize
    fake_run(str(tmp_path / "run"), 0, np.full(3, 10.0), config=None)
    summary = json.load(open(tmp_path / "run" / "summary.json"))
    del summary["eval_noise_free_5"]
    json.dump(summary, open(tmp_path / "run" / "summary.json", "w"))
    with open(tmp_path / "run" / "config.json", "w") as f:
        json.dump({"seed": 0}, f)
    with pytest.raises(ValueError, match="no noise-free evaluation: `make report` saves it"):
        summarize.run_block(str(tmp_path / "run"))


# --- the paired statistics ----------------------------------------------------------------------

def test_the_t_interval_is_the_textbook_one():
    """diffs 1, 2, 3: mean 2, standard error 1/sqrt(3), t(0.975, 2 df) = 4.3027."""
    lo, hi = claims.t_interval([1.0, 2.0, 3.0], 0.95)
    assert lo == pytest.approx(2 - 4.302653 / 3 ** 0.5, abs=1e-5) and hi == pytest.approx(2 + 4.302653 / 3 ** 0.5, abs=1e-5)
    assert claims.t_interval([0.5, 0.5, 0.5], 0.95) == (0.5, 0.5)
    assert claims.t_p_value([0.5, 0.5, 0.5]) == 0.0 and claims.t_p_value([0.0, 0.0, 0.0]) == 1.0


def test_holm_adjusts_step_down():
    np.testing.assert_allclose(claims.holm([0.01, 0.04, 0.03]), [0.03, 0.06, 0.06])
    np.testing.assert_allclose(claims.holm([0.5, 0.6]), [1.0, 1.0])


def test_interquartile_mean_and_probability_of_improvement():
    assert claims.interquartile_mean([1, 2, 3, 4, 100, 6, 7, 8]) == pytest.approx(5.0)   # 3, 4, 6, 7
    assert claims.probability_of_improvement([2, 3], [1, 3], +1) == pytest.approx(2.5 / 4)
    assert claims.probability_of_improvement([2, 3], [1, 3], -1) == pytest.approx(1.5 / 4)


def test_a_verdict_only_where_the_corrected_interval_excludes_zero(tmp_path):
    """Ten seeds. "down" is 2 lower in every seed, give or take 0.1: worse, on any correction. "noisy"
    differs by +-3 around +0.1: no verdict. The family of two widens both intervals (Bonferroni)."""
    rng = np.random.default_rng(0)
    full = 30 + rng.normal(0, 1, 10)
    down, noisy = full - 2 + rng.normal(0, 0.1, 10), full + 0.1 + rng.normal(0, 3, 10)
    results = {name: [fake_run(tmp_path / name / str(k), k, ramp(x)) for k, x in enumerate(levels)]
               for name, levels in (("full", full), ("down", down), ("noisy", noisy))}
    family = {p.variant: p for p in claims.paired_family(results, "mean_91_100")}
    d = family["down"]
    np.testing.assert_allclose(d.diffs, down - full, atol=1e-9)
    assert d.verdict == "worse" and d.corrected[1] < 0 and d.corrected[0] < d.interval[0]
    assert family["noisy"].verdict == "no clear difference" and family["noisy"].corrected[0] < 0 < family["noisy"].corrected[1]
    assert d.p_holm == pytest.approx(min(1.0, 2 * d.p))
    alone = claims.paired_family({"full": results["full"], "down": results["down"]}, "mean_91_100")[0]
    assert alone.corrected == pytest.approx(alone.interval)          # a family of one: no correction
    faster = {"full": results["full"], "up": [fake_run(tmp_path / "up" / str(k), k, ramp(40, reach=15 + k % 2))
                                              for k in range(10)]}
    (sooner,) = claims.paired_family(faster, "first_30")           # fewer episodes to 30 is better
    assert sooner.mean < 0 and sooner.verdict == "better"


def test_fewer_than_three_paired_seeds_give_no_verdict(tmp_path):
    results = results_from(tmp_path, [36, 37], [30, 31])
    (p,) = claims.paired_family(results, "mean_91_100", ["v"])
    assert p.verdict == claims.TOO_FEW and "too few seeds" in p.text


def test_runs_pair_by_seed_whatever_processor_made_them(tmp_path):
    """Seed k of a variant pairs with seed k of the full agent, made on the same processor or not; a seed
    the full agent lacks is left out of the pairs, the family and the verdict."""
    kinds = ["x86_64 (Chip A), 2 cores, torch threads 1", "x86_64 (Chip B), 2 cores, torch threads 1"]
    results = {"full": [fake_run(tmp_path / "full" / str(k), k, ramp(36 + k), machine=kinds[0]) for k in range(3)],
               "v": [fake_run(tmp_path / "v" / str(k), k, ramp(30 + k), machine=kinds[k == 2]) for k in range(4)],
               "w": [fake_run(tmp_path / "w" / str(k), k, ramp(30 + k)) for k in range(3, 6)]}
    assert claims.paired_seeds(results, "v") == [0, 1, 2] and claims.paired_seeds(results, "w") == []
    results["u"] = [fake_run(tmp_path / "u" / str(k), k, ramp(30 + k)) for k in range(3)]   # names no processor
    assert claims.paired_seeds(results, "u") == [0, 1, 2]
    del results["u"]
    c = claims.compare(results, "v", "mean_91_100")
    assert c.seeds == [0, 1, 2] and c.verdict == "lower"
    assert claims.family_size(results, ["v", "w"]) == 1
    assert [p.variant for p in claims.paired_family(results, "mean_91_100")] == ["v"]
    none = claims.compare(results, "w", "mean_91_100")
    assert none.verdict == claims.TOO_FEW and none.seeds == []
    assert "0 seeds in common with the full agent, the rule needs 3" in claims.too_few([none])
    assert "no seed in common; the rule needs 3" in none.text
    assert set(report.paired(results)) == {"full", "v", "w"} and len(report.paired(results)["full"]) == 3


def test_the_score_goals_are_read_from_the_seeds(tmp_path):
    """Ten seeds reaching 36 by episode 12 (first 30 at 10) and evaluated at 39.4 with a worst arm of 38,
    except seed 9: it reaches 30 at episode 17 and its worst arm scores 30."""
    runs = []
    for k in range(10):
        reach = 17 * 36 / 30 if k == 9 else 12
        arms = [39.4] * 19 + [30.0 if k == 9 else 38.0]
        runs.append(fake_run(tmp_path / str(k), k, ramp(36, reach=reach), eval_arms=arms))
    goals = {goal: (found, met) for goal, found, met in claims.score_goals(runs)}
    assert goals["every seed solved at episode 100"] == ("10 of 10", True)
    assert goals["first episode with a mean of 30: median 12 or earlier"] == ("10", True)
    assert goals["first episode with a mean of 30: the latest seed 16 or earlier"] == ("17", False)
    assert goals["noise-free: worst arm 37 or more in at least 9 of 10 seeds"] == ("9 of 10", True)
    assert goals["mean of episodes 1-100: worst seed 34 or more"][1] is (min(claims.run_stats(r)["mean_1_100"] for r in runs) >= 34)
    assert claims.fmt("first_30", 12.5) == "12.5" and claims.fmt("first_30", 12.0) == "12"   # a median between two


def test_the_lessons_effect_sentences_state_the_family_corrected_interval(tmp_path):
    """claims.effects, as the lesson's evidence cells call it: the numbers of paired_family, the family's size,
    the verdict and what it reads from the interval; too few seeds and no runs are said so."""
    flat = lambda level: np.full(100, float(level))
    make = lambda name, levels: [fake_run(tmp_path / name / str(k), k, flat(x)) for k, x in enumerate(levels)]
    results = {"full": make("full", [36, 37, 38, 39]), "one_step": make("one", [33, 33.5, 35.5, 35]),
               "uniform": make("uni", [36.5, 36.5, 38.5, 38.5]), "no_ramp": make("nr", [30, 31])}
    text = claims.effects("one_step", "uniform", "no_ramp", "mean_priority", results=results).data.splitlines()
    family = {p.variant: p for p in claims.paired_family(results, claims.PRIMARY)}
    one = family["one_step"]
    assert text[:2] == ["The full agent, seeds 0-3: mean of episodes 1-100 36.00 to 39.00.", ""]
    text = text[2:]
    assert len(text) == 4 and one.verdict == "worse" and family["uniform"].verdict == "no clear difference"
    from continuous_control.variants import LABELS
    assert text[0] == (f"* **{LABELS['one_step']}** minus the full agent, seeds 0-3 paired: mean of episodes 1-100 "
                       f"{one.mean:+.2f} on average (lower in 4 of 4 seeds); 95% interval "
                       f"[{one.interval[0]:+.2f}, {one.interval[1]:+.2f}]; widened for the 2 variants of the report's "
                       f"family (Bonferroni), [{one.corrected[0]:+.2f}, {one.corrected[1]:+.2f}]: **worse** (the widened "
                       f"interval excludes zero).")
    assert "(lower in 2 of 4 seeds)" in text[1]
    assert text[1].endswith("**no clear difference** (the widened interval holds zero).")
    assert "no verdict yet, 2 paired seed(s) (0, 1); the rule needs 3." in text[2]
    assert text[3] == "* `mean_priority`: no runs in results/ yet (`make experiments`)."
