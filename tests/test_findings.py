"""The facts that the prose of Report.ipynb and of the lesson states in words, checked on results/.

The prose is written by hand; where it says "clearly worse" or "no measurable gain", the verdict
behind it is checked here, so a new run that changes a finding fails this test until the words change.
"""

import glob
import os

import numpy as np
import pandas as pd
import pytest

from continuous_control.files import read_json
from continuous_control.provenance import ROOT
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
    assert primary.loc["one_step", "seeds"] == 10  # README: "1-step targets are clearly worse"


def test_one_step_targets_are_worse_on_every_measure_but_the_first_episode_at_30(effects):
    verdicts = effects.xs("one_step", level="variant").verdict
    assert verdicts.drop("first_30").eq("worse").all() and verdicts["first_30"] == "no clear difference"


def test_learning_every_step_is_better_on_episodes_1_100_91_100_and_the_worst_arm(effects):
    verdicts = effects.xs("learn_every_step", level="variant").verdict
    assert (verdicts[["mean_1_100", "mean_91_100", "worst_arm_1_100"]] == "better").all()


def test_prioritized_replay_and_noisynet_get_no_verdict(primary):
    for variant in ("uniform", "all_time_max_priority", "mean_priority", "action_noise", "no_noise", "per_arm_noise"):
        assert primary.verdict[variant] == "no clear difference", variant


def test_uniform_replay_leans_lower_its_interval_includes_zero_no_noise_its_interval_below_zero(primary):
    uniform, none = primary.loc["uniform"], primary.loc["no_noise"]
    assert uniform.worse_in > uniform.seeds / 2 and uniform.low_95 < 0 < uniform.high_95  # "includes zero"
    assert none.worse_in > none.seeds / 2 and none.high_95 < 0 and none.p_holm >= 0.05  # "without a verdict"


def test_noisynets_gain_over_ou_action_noise_is_not_shown(primary):
    """ "OU action noise in place of NoisyNet is lower in as many seeds as it is higher": about -0.14, 5 seeds
    each way, p 0.59."""
    ou = primary.loc["action_noise"]
    assert ou.better_in == ou.worse_in == 5 and ou.verdict == "no clear difference"
    assert round(ou["mean"], 2) == -0.14 and round(ou.p, 2) == 0.59 and ou.low_95 < 0 < ou.high_95


def test_the_variants_that_lean_one_way_without_a_verdict_are_the_ones_named(primary):
    """Future work: no exploration noise has a 95% interval below zero and no verdict; mirroring and uniform
    replay lean one way in most seeds with intervals that include zero."""
    apart = primary[(primary.verdict == "no clear difference") & ((primary.low_95 > 0) | (primary.high_95 < 0))]
    assert set(apart.index) == {"no_noise"}
    for variant, side in (("mirror", "better_in"), ("uniform", "worse_in")):
        row = primary.loc[variant]
        assert row[side] > row.seeds / 2 and row.low_95 < 0 < row.high_95 and row.verdict == "no clear difference"


def test_the_table_of_effects_has_no_family_level_interval_and_each_interval_agrees_with_its_p(effects):
    assert not {"low", "high", "level"} & set(effects.columns) and len(effects.loc[runs.PRIMARY]) == 14
    has = effects.low_95.notna()
    assert ((effects.low_95[has] > 0) | (effects.high_95[has] < 0)).eq(effects.p[has] < 0.05).all()
    assert (effects.seeds[~has] < 6).all() and (effects.seeds[has] >= 6).all()
    apart = effects[(effects.verdict == "no clear difference") & ((effects.low_95 > 0) | (effects.high_95 < 0))]
    assert len(apart) == 9 and len(effects) == 84  # the count the final report gives; the Report computes it


def test_clipped_double_q_is_not_clearly_better_on_1_100_but_better_on_91_100_in_every_seed(effects):
    row = effects.xs("clipped_double_q", level="variant")
    assert row.verdict[runs.PRIMARY] == "no clear difference"
    assert row.verdict["mean_91_100"] == "better" and row.better_in["mean_91_100"] == row.seeds["mean_91_100"]


def test_learning_every_step_costs_more_than_twice_the_time_in_every_seed(table):
    """The saved wall times, each seed against the full agent's run on the same processor kind: medians
    9.9 and 4.2 minutes, x2.28 (median of the ratios), longer in 10 of 10 seeds ("less than half the time")."""
    pairs = stats.paired(table, "learn_every_step", measure="minutes")
    ratio = pairs.variant / pairs.baseline
    assert len(pairs) == 10 and (ratio > 2).all() and round(ratio.median(), 2) == 2.28
    assert (round(pairs.variant.median(), 1), round(pairs.baseline.median(), 1)) == (9.9, 4.2)
    runs_at_once = table.set_index(["group", "variant", "seed"]).runs_at_once
    assert {runs_at_once["agent", "learn_every_step", k] for k in pairs.index} == {
        runs_at_once[p, "full", k] for k, p in pairs.partner.items()
    }


def test_schauls_rule_against_uniform_replay_has_too_few_seeds_for_a_verdict(table):
    """Like for like with uniform replay: 4 paired seeds, whose smallest possible p is 2 / 2^4 = 0.125."""
    same = table[table.processor.isin(table[table.variant == "uniform"].processor)]
    row = stats.compare(same, ["full", "all_time_max_priority", "mean_priority"], baseline="uniform")
    assert row.seeds["all_time_max_priority"] == 4 and 2 / 2**4 == 0.125 > 0.05


def test_beta_stays_below_one_through_episode_100():
    """beta_start 0.4 toward 1 over 110000 steps, 1001 steps an episode: about 0.946 at episode 100."""
    beta = runs.episodes("diagnostics.csv").query("episode == 100").beta
    assert beta.round(3).eq(0.946).all() and (beta < 1).all()
    assert round(0.4 + 0.6 * 100 * 1001 / 110_000, 3) == 0.946


def test_prioritized_replay_replays_more_of_the_buffer_and_draws_new_transitions_more_often():
    """Report section 5, on the table it shows (the range over each variant's seeds)."""
    use = report.replay_use()
    assert use.loc["full", ("never replayed %", "max")] < use.loc["uniform", ("never replayed %", "min")]
    assert (
        use.loc["full", ("newest drawn / stored", "min")] > 1
        and use.loc["full", ("new priority / mean |TD|", "min")] > 10
    )
    assert use.loc["mean_priority", "newest drawn / stored"].round(1).eq(1.0).all()


def test_no_rule_for_new_priorities_differs_clearly_from_uniform_replay_like_for_like(table):
    same = table[table.processor.isin(table[table.variant == "uniform"].processor)]
    family = stats.compare(same, ["full", "all_time_max_priority", "mean_priority"], baseline="uniform")
    assert (family.verdict == "no clear difference").all()


def test_the_processor_check_finds_no_clear_difference_on_any_measure(table):
    for measure in runs.MEASURES:
        row = stats.compare(table, ["full"], measure=measure, group="processor_check", like=False).loc["full"]
        assert row.seeds == 10 and row.verdict == "no clear difference", measure


def test_every_peer_is_worse_on_1_100_and_sac_on_the_agents_schedule_barely_learns(table):
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
        scores = read_json(path)["scores"]
        assert np.mean(scores) < np.mean(UNITY_LOG[: len(scores)]), path


def test_on_91_100_sac_on_rl_zoos_schedule_is_better_than_the_agent_in_all_its_seeds(table):
    """39.53 against 38.36, Holm 0.035; all 3 of its seeds above all 10 of the agent's; SAC on the agent's
    schedule worse, every other peer no clear difference."""
    peers = sorted(set(table[table.group == "peers"].variant))
    late = stats.unpaired(table, peers, measure="mean_91_100")
    assert set(late.index[late.verdict == "better"]) == {"sac_zoo"} and set(late.index[late.verdict == "worse"]) == {
        "sac"
    }
    zoo = table[(table.group == "peers") & (table.variant == "sac_zoo")].mean_91_100
    full = table[(table.group == "agent") & (table.variant == "full")].mean_91_100
    assert (round(zoo.mean(), 2), round(full.mean(), 2), round(late.p_holm["sac_zoo"], 3)) == (39.53, 38.36, 0.035)
    assert len(zoo) == 3 and len(full) == 10 and zoo.min() > full.max()


def test_the_joint_model_was_chosen_on_the_four_calibration_actors():
    """doc/environment.md and Report section 7: the default joint model is the one closest on the actors,
    so their scores are not independent evidence."""
    saved = [read_json(p) for p in glob.glob(os.path.join(ROOT, "results", "calibration", "*.json"))]
    models = {r["joint_model"]: r for r in saved if r.get("default")}
    actors = ("1jsingh", "AnKra", "ChrisPalmerNZ", "GrayWizard")
    mean = {m: np.mean([r["results"][a]["mean"] for a in actors]) for m, r in models.items()}
    default = {r["default"] for r in models.values()}
    assert len(models) == 3 and default == {max(mean, key=mean.get)}


def test_the_published_learner_learned_more_slowly_on_the_replica_in_3_of_3_seeds():
    """README, doc/environment.md and Report section 7: "in 3 of 3 seeds"."""
    from experiments.published_learner import UNITY_LOG

    saved = [read_json(p) for p in glob.glob(os.path.join(ROOT, "results", "published_learner", "*.json"))]
    slower = [np.mean(r["scores"]) < np.mean(UNITY_LOG[: len(r["scores"])]) for r in saved]
    assert len(slower) == 3 and all(slower)


def test_no_gpu_timing_is_saved_so_none_is_stated():
    """README, doc/gpu.md and Report section 11.1 say the GPU path is not timed; doc/gpu.md names what is saved."""
    saved = sorted(os.listdir(os.path.join(ROOT, "results", "benchmarks")))
    assert saved == ["cost_clipped_double_q.json", "manifest.json"]  # the folder's one timing, and its manifest


def test_runs_are_not_bit_for_bit_the_same_across_processor_kinds(table):
    """README: the processor check's seeds, made on another processor kind, differ from results/full's."""
    pairs = stats.paired(table, "full", measure="mean_1_100", group="processor_check", like=False)
    full = table[(table.group == "agent") & (table.variant == "full")].set_index("seed").processor
    check = table[table.group == "processor_check"].set_index("seed").processor
    assert (full[pairs.index] != check[pairs.index]).all() and (pairs.d != 0).all()
    first = {
        g: runs.episodes("scores.csv", group=g).query("variant == 'full' and episode == 1").set_index("seed")["mean"]
        for g in ("agent", "processor_check")
    }
    assert (first["agent"] != first["processor_check"]).all()  # Report section 4: "differs from episode 1 on"


# --- the lesson's sentences ---


def test_the_lessons_table_of_plain_ddpg_seeds_is_the_one_the_results_give(table):
    """doc/plain.csv, which the lesson's section 3 reads, is what `make report` would write today."""
    from experiments.figures import PLAIN, plain_seeds

    saved = pd.read_csv(PLAIN)
    pd.testing.assert_frame_equal(saved, plain_seeds(table).reset_index(drop=True), check_dtype=False)


def test_plain_ddpg_solves_at_100_in_8_of_10_seeds_and_9_first_reach_30_by_episodes_12_to_26(table):
    plain = table[(table.group == "agent") & (table.variant == "plain")]
    assert len(plain) == 10 and (plain.solved_at == 100).sum() == 8 and plain.solved_at.isna().sum() == 2
    assert plain.first_30.between(12, 26).sum() == 9 and plain.first_30.min() == 12


def test_uniform_replay_is_lower_in_8_of_10_seeds(primary):
    assert primary.loc["uniform", "worse_in"] == 8 and primary.loc["uniform", "seeds"] == 10


def test_beta_reaches_about_0_95_by_episode_100():
    from continuous_control.agent import Agent, Config

    agent = Agent(Config(buffer_size=1000, batch_size=32, warmup=32, hidden=(8, 8)), 33, 4, 20)
    agent.steps = 100 * 1001
    assert round(agent.beta(), 2) == 0.95


def test_the_lessons_critics_the_default_past_the_ceiling_clipped_double_q_and_one_step_below_the_return_earned():
    """Section 8: the default's critics end past the ceiling r_max / (1 - gamma); with clipped double-Q, and with
    1-step targets, they end below the ceiling and below the return earned. From results/, as doc/critic_q.csv."""
    from continuous_control.figures import q_reference

    q = report.critic_q()
    ceiling = q_reference([0.0], 0.99)["ceiling"]
    assert q.loc["full", "q_100"] > ceiling
    for variant in ("clipped_double_q", "one_step"):
        assert q.loc[variant, "q_100"] < min(ceiling, q.loc[variant, "earned_100"]), variant
