"""The facts that the prose of Report.ipynb and of the lesson states in words, checked on results/.

The prose is written by hand; where it says "clearly worse" or "no measurable gain", the verdict
behind it is checked here, so a new run that changes a finding fails this test until the words change.
"""
import glob
import os

import numpy as np
import pytest

from continuous_control.variants import LABELS
from experiments import report, runs, stats


@pytest.fixture(scope="module")
def table():
    return runs.load()


@pytest.fixture(scope="module")
def primary(table):
    return stats.compare(table, [v for v in LABELS if v != "full"]).verdict


def test_n_step_targets_and_their_ramp_help(primary):
    assert primary["one_step"] == primary["no_ramp"] == primary["plain"] == "worse"


def test_prioritized_replay_and_noisynet_show_no_measurable_gain(primary):
    for variant in ("uniform", "all_time_max_priority", "mean_priority", "action_noise", "no_noise", "per_arm_noise"):
        assert primary[variant] == "no clear difference", variant


def test_clipped_double_q_is_not_clearly_better_so_the_default_keeps_one_critic(primary):
    assert primary["clipped_double_q"] == "no clear difference"


def test_no_rule_for_new_priorities_is_clearly_better_than_uniform_replay(table):
    family = stats.compare(table, ["full", "all_time_max_priority", "mean_priority"], baseline="uniform")
    assert (family.verdict != "worse").all()


def test_the_processor_check_finds_no_clear_difference_on_any_measure(table):
    for measure in runs.MEASURES:
        row = stats.compare(table, ["full"], measure=measure, group="processor_check").loc["full"]
        assert row.seeds == 10 and row.verdict == "no clear difference", measure


def test_the_single_critic_overestimates_and_the_twin_critic_underestimates():
    checks = report.overestimation()
    single, twin = checks.loc["checkpoints"], checks.loc["runs-clipped_double_q-seed0"]
    assert single.q > single.ceiling and single.q > single.mc_return_upper
    assert twin.q_min < twin.mc_return


def test_the_one_step_critics_end_below_the_return_earned():
    q = report.q_at_100()
    assert (q.loc[LABELS["one_step"], "q_max"] < q.loc[LABELS["one_step"], "earned_min"])


def test_the_weaker_orbit_direction_differs_between_seeds():
    _, per_seed = report.weak_arm()
    gap = per_seed[("positive", "as_trained")] - per_seed[("negative", "as_trained")]
    assert (gap > 0).any() and (gap < 0).any()


def test_every_seed_of_the_full_agent_solves_by_episode_100(table):
    full = table[(table.group == "agent") & (table.variant == "full")]
    assert len(full) == 10 and (full.solved_at <= 100).all() and np.isfinite(full.eval_worst_arm).all()


def test_no_seed_of_the_published_learner_learned_as_fast_on_the_replica_as_on_unity():
    from benchmarks.published_learner import UNITY_LOG
    for path in sorted(glob.glob(os.path.join(os.path.dirname(runs.RESULTS), "results", "published_learner", "*.json"))):
        scores = runs.read_json(path)["scores"]
        assert np.mean(scores) < np.mean(UNITY_LOG[:len(scores)]), path
