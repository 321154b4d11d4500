"""The facts that the prose of Report.ipynb and of the lesson states in words, checked on results/.

The prose is written by hand; where it says "clearly worse" or "no measurable gain", the verdict
behind it is checked here, so a new run that changes a finding fails this test until the words change.
"""

import glob
import os

import numpy as np
import pandas as pd
import pytest

from experiments import report, runs, stats
from experiments.variants import LABELS


@pytest.fixture(scope="module")
def table():
    return runs.load()


@pytest.fixture(scope="module")
def effects(table):
    return report.effects(table)


@pytest.fixture(scope="module")
def primary(effects):
    return effects.loc[runs.PRIMARY]


def test_the_lessons_table_of_effects_is_the_one_the_results_give(effects):
    """doc/effects.csv, which the lesson reads, is what `make report` would write today."""
    saved = pd.read_csv(os.path.join(os.path.dirname(runs.RESULTS), "doc", "effects.csv"), index_col=[0, 1])
    pd.testing.assert_frame_equal(saved, effects, check_dtype=False, check_names=False)


def test_n_step_targets_and_their_ramp_help(primary):
    assert primary.verdict["one_step"] == primary.verdict["no_ramp"] == primary.verdict["plain"] == "worse"
    assert primary.worse_in["one_step"] == primary.worse_in["no_ramp"] == 10  # "in every seed"


def test_one_step_targets_are_worse_on_every_measure_but_the_first_episode_at_30(effects):
    verdicts = effects.xs("one_step", level="variant").verdict
    assert verdicts.drop("first_30").eq("worse").all() and verdicts["first_30"] == "no clear difference"


def test_learning_every_step_is_better_on_episodes_1_100_91_100_and_the_worst_arm(effects):
    verdicts = effects.xs("learn_every_step", level="variant").verdict
    assert (verdicts[["mean_1_100", "mean_91_100", "worst_arm_1_100"]] == "better").all()


def test_prioritized_replay_and_noisynet_get_no_verdict(primary):
    for variant in ("uniform", "all_time_max_priority", "mean_priority", "action_noise", "no_noise", "per_arm_noise"):
        assert primary.verdict[variant] == "no clear difference", variant


def test_uniform_replay_and_no_noise_lean_lower_their_plain_intervals_below_zero(primary):
    for variant in ("uniform", "no_noise"):
        row = primary.loc[variant]
        assert row.high_95 < 0 and row.worse_in > row.seeds / 2 and row.p_holm >= 0.05, variant
    assert primary.loc["no_noise", "high"] < 0  # "its intervals lie below zero"


def test_the_variants_that_lean_one_way_without_a_verdict_are_the_ones_named(primary):
    leaning = primary[(primary.verdict == "no clear difference") & ((primary.low_95 > 0) | (primary.high_95 < 0))]
    assert set(leaning.index) == {"mirror", "uniform", "mean_priority", "no_noise"}


def test_clipped_double_q_is_not_clearly_better_on_1_100_but_better_on_91_100_in_every_seed(effects):
    row = effects.xs("clipped_double_q", level="variant")
    assert row.verdict[runs.PRIMARY] == "no clear difference"
    assert row.verdict["mean_91_100"] == "better" and row.better_in["mean_91_100"] == row.seeds["mean_91_100"]


def test_each_interval_holds_the_level_the_lesson_names(primary):
    assert (primary.level.round(3) == 0.996).all() and len(primary) == 14


def test_no_rule_for_new_priorities_differs_clearly_from_uniform_replay_like_for_like(table):
    same = table[table.processor.isin(table[table.variant == "uniform"].processor)]
    family = stats.compare(same, ["full", "all_time_max_priority", "mean_priority"], baseline="uniform")
    assert (family.verdict == "no clear difference").all()


def test_the_processor_check_finds_no_clear_difference_on_any_measure(table):
    for measure in runs.MEASURES:
        row = stats.compare(table, ["full"], measure=measure, group="processor_check", like=False).loc["full"]
        assert row.seeds == 10 and row.verdict == "no clear difference", measure


def test_every_peer_is_worse_and_sac_on_the_agents_schedule_barely_learns(table):
    peers = sorted(set(table[table.group == "peers"].variant))
    assert len(peers) == 6 and (stats.unpaired(table, peers).verdict == "worse").all()
    sac = table[(table.group == "peers") & (table.variant == "sac")]
    others = table[(table.group == "peers") & table.variant.isin(["sac_zoo", "sac_like"])].groupby("variant").mean_1_100
    assert sac.mean_1_100.mean() < 5 and (others.mean() > 10).all()


def test_the_single_critic_overestimates_and_the_twin_critic_underestimates():
    checks = report.overestimation()
    single, twin = checks.loc["checkpoints"], checks.loc["runs-clipped_double_q-seed0"]
    assert single.q > single.ceiling and single.q > single.mc_return_upper
    assert twin.q_min < twin.mc_return


def test_the_one_step_critics_end_below_the_return_earned():
    q = report.q_at_100()
    assert q.loc[LABELS["one_step"], "q_max"] < q.loc[LABELS["one_step"], "earned_min"]


def test_the_weaker_orbit_direction_differs_between_seeds():
    _, per_seed = report.weak_arm()
    gap = per_seed[("positive", "as_trained")] - per_seed[("negative", "as_trained")]
    assert (gap > 0).any() and (gap < 0).any()


def test_every_seed_of_the_full_agent_solves_by_episode_100(table):
    full = table[(table.group == "agent") & (table.variant == "full")]
    assert len(full) == 10 and (full.solved_at <= 100).all() and np.isfinite(full.eval_worst_arm).all()


def test_no_seed_of_the_published_learner_learned_as_fast_on_the_replica_as_on_unity():
    from experiments.published_learner import UNITY_LOG

    for path in sorted(
        glob.glob(os.path.join(os.path.dirname(runs.RESULTS), "results", "published_learner", "*.json"))
    ):
        scores = runs.read_json(path)["scores"]
        assert np.mean(scores) < np.mean(UNITY_LOG[: len(scores)]), path
