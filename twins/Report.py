# ---
# jupyter:
#   jupytext:
#     formats: ipynb,twins//py:percent
#     text_representation:
#       extension: .py
#       format_name: percent
#       format_version: '1.3'
#       jupytext_version: 1.19.6
#   kernelspec:
#     display_name: Python 3 (ipykernel)
#     language: python
#     name: python3
# ---

# %% [markdown]
# # Report: DDPG with n-step targets, prioritized replay and NoisyNet on the 20-arm Reacher
#
# This report describes the agent trained in [`Continuous_Control.ipynb`](Continuous_Control.ipynb),
# shows that it solves the 20-agent Reacher, and measures over several seeds what each of its three
# extensions contributes. It **only reads** saved results and never trains:
#
# * `checkpoints/`: the notebook's solving run (`make run`);
# * `results/<variant>/seed<k>/`: headless runs of the same agent (`continuous_control/agent.py`,
#   exported from the notebook) for ten seeds of the full agent and of most ablations
#   (`make experiments`), Stable-Baselines3's TD3 and SAC on the same arms (`make peers`), and the
#   replica measured against the Unity build (`make calibrate`).
#
# Every run trained on this project's **built-in Reacher**, a replica of the course's Unity
# environment ([`doc/environment.md`](doc/environment.md)); section 7 measures how faithful it is.
# Every table comes from one table of runs (`experiments/runs.py`, one row per run folder, with
# the commit and processor that made it), every comparison from one rule (`experiments/stats.py`),
# and every number in the prose is computed in the cell that states it.

# %%
import glob
import os

import matplotlib.pyplot as plt
import numpy as np
import pandas as pd
from IPython.display import HTML, Markdown, display

from continuous_control.figures import history_of, plot_diagnostics, plot_scores, q_reference
from continuous_control.files import read_json
from continuous_control.playback import load_networks, policy_of, render_replay
from continuous_control.provenance import ROOT
from continuous_control.results import load_run
from experiments import report, runs, stats
from experiments.peers import LABELS as PEER_LABELS
from experiments.published_learner import UNITY_LOG
from experiments.variants import CHANGES, LABELS
from reacher.render import to_gif

# %%
pd.set_option("display.max_colwidth", 120)
table = runs.load()
agent = table[table.group == "agent"]
full = agent[agent.variant == "full"].set_index("seed")
solving = load_run("checkpoints")
ablations = [v for v in LABELS if v != "full" and v in set(agent.variant)]
primary = report.verdicts(table, ablations)
effects = report.effects(table)

# %% [markdown]
# ## Which extensions measurably help
#
# Each variant changes one thing in the full agent, and is compared with it seed by seed, each seed
# against the full agent's run of that seed on the same kind of processor (section 4 gives the rule:
# an exact sign-flip permutation test, Holm's correction over the 14 variants, and the 95% interval
# that inverts the same test). The variants run on 3 seeds only (named below) can never reach a verdict,
# yet count in Holm's correction, which makes it stricter for the others. On the primary measure, the mean
# score of episodes 1-100:
#
# * **$n$-step targets help.** 1-step targets, the one variant that changes only them, are worse in
#   every seed. 5-step targets from episode 1 are worse too, which speaks for the ramp of $n$; plain
#   DDPG, without all three extensions, is worse, which does not say which of them matters.
# * **Learning every step throughout is better** than the default schedule, which learns every 8th
#   step after episode 20 to save time: the default trades a little score for more than half the time.
# * **Prioritized replay and NoisyNet show no clear difference.** Uniform replay scores lower in most
#   seeds, and its 95% interval includes zero but reaches a loss of three quarters of what 1-step targets
#   lose: a gain of prioritized replay is neither shown nor ruled out, and section 5 finds where any gain
#   would come from, favouring new transitions. No exploration noise at all scores lower in most seeds
#   and its 95% interval lies below zero, without a verdict after Holm's correction; even so, that would
#   speak for exploration noise, not for NoisyNet: OU action noise in place of NoisyNet is lower in as
#   many seeds as it is higher, so NoisyNet's gain over OU action noise is not shown.
#
# On the secondary measures, clipped double-Q and learning every step are better on episodes 91-100, and
# 1-step targets are worse on every measure but the first episode at 30. The numbers behind these words:

# %%
one = primary.loc[LABELS["one_step"]]
ou, none, uni = (primary.loc[LABELS[v]] for v in ("action_noise", "no_noise", "uniform"))
pairs = stats.paired(table, "learn_every_step", measure="minutes")
Markdown(
    f"1-step targets: {one['mean']:+.2f}, worse in {one.worse_in} of {one.seeds} seeds. Uniform replay: "
    f"{uni['mean']:+.2f}, lower in {uni.worse_in} of {uni.seeds}, 95% interval {uni.low_95:.2f} to {uni.high_95:.2f} "
    f"({uni.low_95 / one['mean']:.0%} of 1-step targets' {one['mean']:+.2f} at its low end). "
    f"No exploration noise: {none['mean']:+.2f}, lower in {none.worse_in} of {none.seeds}, 95% interval "
    f"{none.low_95:.2f} to {none.high_95:.2f}, Holm's p {none.p_holm:.2f}. OU action noise instead of NoisyNet: "
    f"{ou['mean']:+.2f}, higher in {ou.better_in} seeds and lower in {ou.worse_in}, p {ou.p:.2f}. Learning every "
    f"step took a median {pairs.variant.median():.1f} minutes to episode 100 against {pairs.baseline.median():.1f} "
    f"for the full agent on the same processor kind ({', '.join(table[table.variant == 'learn_every_step'].processor.unique())}), "
    f"x{(pairs.variant / pairs.baseline).median():.2f} (median of the seeds' ratios), longer in "
    f"{(pairs.d > 0).sum()} of {len(pairs)} seeds. Holm's family: {len(primary)} variants, "
    f"{'; '.join(primary.index[primary.seeds < 6])} on {primary.seeds.min()} seeds."
)

# %%
ten = [v for v in ablations if (agent.variant == v).sum() >= 10]
moved = []
for m, (what, _) in runs.MEASURES.items():
    alone, all_of_them = report.verdicts(table, ten, m), report.verdicts(table, ablations, m)
    for v in alone.index[alone.verdict != all_of_them.verdict[alone.index]]:
        moved.append(f"{v}, {what}: {alone.verdict[v]} (Holm's p {alone.p_holm[v]:.3f})")
Markdown(f"With the {len(ten)} ten-seed variants alone in the family, the verdicts that change: {'; '.join(moved)}.")

# %% [markdown]
# Every clear result, beside the mean of the full agent's runs it was paired with (same seeds, same kind of
# processor) for scale:

# %%
clear = effects[effects.verdict != "no clear difference"].reset_index()
partners = [stats.paired(table, v, measure=m).baseline.mean().round(2) for m, v in zip(clear.measure, clear.variant)]
clear.insert(2, "full agent", partners)
clear.assign(variant=clear.variant.map(LABELS))[
    ["measure", "variant", "full agent", "seeds", "mean", "low_95", "high_95", "p_holm", "verdict"]
]

# %% [markdown]
# ## 1. The learning algorithm
#
# **DDPG** (Lillicrap et al. 2016) learns a deterministic policy $\mu_\theta(s)$, the *actor*, and
# its action-value $Q_\phi(s, a)$, the *critic*, off-policy from a replay buffer. The critic
# regresses on a bootstrapped target computed with slowly moving copies $\mu_{\theta'}, Q_{\phi'}$:
# after each update $\phi' \leftarrow \tau\phi + (1-\tau)\phi'$ (likewise $\theta'$). The actor
# follows the critic's action gradient, minimising $-Q_\phi(s, \mu_\theta(s))$. All 20 arms act
# with the same actor and feed one buffer. The agent makes one update per environment step (20
# transitions) up to episode `learn_every_until`, then one every `learn_every_later` steps, and $n$
# grows from 1 over the first episodes (`n_step_ramp`).
#
# 1. **$n$-step targets.** $y_t = \sum_{k=0}^{n-1}\gamma^k r_{t+k} + \gamma^n Q_{\phi'}(s_{t+n},
#    \mu_{\theta'}(s_{t+n}))$: a reward reaches the critic $n$ times faster, at the price of an
#    uncorrected off-policy bias (as in D4PG and Rainbow).
# 2. **Prioritized replay** (Schaul et al. 2016). Transition $i$ has the priority
#    $p_i = |\delta_i| + c$ and is drawn with probability $P(i) = p_i^\alpha / \sum_k p_k^\alpha$
#    from a sum tree; its squared TD error is weighted by
#    $w_i = (N P(i))^{-\beta} / \max_j (N P(j))^{-\beta}$, the maximum over the batch. $\beta$ grows
#    linearly from `beta_start` toward 1 over `beta_steps` environment steps; it would undo the bias of
#    prioritized sampling fully only at 1, which these runs do not reach (section 2 gives its value).
# 3. **NoisyNet** (Fortunato et al. 2018). The actor's weights are $W = \bar W + \sigma^W \odot
#    \varepsilon^W$ with learned $\sigma^W$ and factorised Gaussian noise, which here follows an
#    Ornstein-Uhlenbeck process in time; one noise sample drives all 20 arms, and the target actor
#    uses the mean weights $\bar W$.
#
# States are standardised by a running mean and variance and clamped to $\pm 5$ (a `Normalizer` in front
# of both networks). The Reacher's 1001-step limit is a clock, not a terminal state: targets bootstrap
# through it.
#
# ### 1.1 Hyperparameters
#
# The solving run's saved configuration; the meanings are the docstrings of `Config`, whose section
# numbers are the lesson's (`Continuous_Control.ipynb`).

# %%
report.hyperparameters(solving["config"])

# %% [markdown]
# ### 1.2 Network architectures
#
# Rebuilt from the agent's classes and loaded from the saved weights (strictly: a layer that did
# not match would fail here). The actor is three `NoisyLinear` layers, ReLU between them and
# $\tanh$ at the output; the critic takes state and action concatenated. NoisyNet's learned
# $\sigma$ started at `noisy_sigma0` $/\sqrt{\text{inputs}}$.

# %%
nets = load_networks("checkpoints")
display(report.layers(nets["actor"]), report.layers(nets["critic"]))

# %% [markdown]
# ## 2. The solving run
#
# The notebook's run (`checkpoints/`). The environment counts as solved when the average over 100
# consecutive episodes of the 20-arm mean score reaches 30; "solved at episode $E$" means
# episodes $E-99, \dots, E$ average at least 30, so 100 is the earliest possible.

# %%
s = solving["summary"]
Markdown(
    f"Seed {s['seed']} on the {s['environment']}, {s['processor']}, commit {s['commit']}: solved at episode "
    f"{s['solved_at']}; first episode with a 20-arm mean of 30: {runs.measure('checkpoints')['first_30']}; "
    f"mean of episodes 1-100: {np.mean(solving['scores']['mean'][:100]):.2f}."
)

# %%
fig, ax = plt.subplots(figsize=(9, 4.5))
plot_scores(history_of(solving), ax, "Continuous_Control.ipynb, seed 0, built-in replica")
plt.show()

# %% [markdown]
# What learning saw, per episode (`diagnostics.csv`): the critic's mean $Q$ against the ceiling
# $r_\max/(1-\gamma)$ and the return earned, the losses, $|\delta|$, NoisyNet's $\sigma$, the share
# of young transitions, the never-replayed backlog, a new transition's priority and $\beta$.

# %%
plot_diagnostics(
    solving["diagnostics"],
    "What learning saw, per episode",
    q_reference(solving["scores"]["mean"], solving["config"]["gamma"]),
)
plt.show()
beta = runs.episodes("diagnostics.csv").query("episode == 100").beta
Markdown(
    f"$\\beta$ at episode 100, in all {len(beta)} runs of the agent and its variants: at most {beta.max():.3f}, "
    "short of 1: the importance weights undo only part of prioritized sampling's bias."
)

# %% [markdown]
# ## 3. Across seeds
#
# The full agent on ten seeds (`results/full/`). Beside each mean, the worst and the best arm (an
# arm's own mean over episodes 1-100), and the exported policy without noise on goals the run never
# saw (5 episodes).

# %%
display(Markdown(f"Made on {', '.join(full.processor.unique())}, {full.runs_at_once.max()} runs at a time at most."))
full[
    [
        "solved_at",
        "first_30",
        "mean_1_100",
        "worst_arm_1_100",
        "best_arm_1_100",
        "mean_91_100",
        "eval",
        "eval_worst_arm",
        "minutes",
    ]
].round(2)

# %%
Markdown(
    f"All {len(full)} seeds solved at episode {full.solved_at.max():.0f} or earlier. Median first episode at "
    f"30: {full.first_30.median():g} (latest {full.first_30.max()}); median mean of episodes 1-100: "
    f"{full.mean_1_100.median():.2f} (worst seed {full.mean_1_100.min():.2f}); noise-free worst arm at least "
    f"{full.eval_worst_arm.min():.2f}."
)

# %%
report.curves_figure({"": {"full": list(full.index)}}, "Full agent: mean over ten seeds, band from worst to best")
plt.show()

# %% [markdown]
# ## 4. Ablations: what each extension contributes
#
# Each variant changes one thing in the full agent, all else equal (same hyperparameters, same
# seeds); plain DDPG removes all three extensions. Every ablation runs exactly 100 episodes; the
# full agent's runs are cut to their first 100.

# %%
pd.DataFrame(
    {
        "change to Config": pd.Series(CHANGES).map(lambda c: ", ".join(f"{k}={v!r}" for k, v in c.items())),
        "seeds": agent.groupby("variant").seed.size(),
    }
).loc[list(CHANGES)].rename(index=LABELS)

# %% [markdown]
# **The rule.** A variant and the full agent are paired seed by seed: seed $k$ fixes each episode's
# goals and the initial weights. The pair is like for like: the full agent's run of seed $k$ on the
# same kind of processor, for the same results version (the processor check below shows why: the
# same seed differs from episode 1 on another processor). The full agent ran on both kinds, so every
# variant has its partners (`experiments/stats.py` refuses any other pair). On the differences $d_k$
# (variant minus full agent) we give the mean; the p-value of an exact sign-flip permutation test over
# all $2^K$ flips of the signs (it assumes only that the $d_k$ are symmetric about zero when nothing
# differs, so one large difference cannot hide ten of the same sign); that p corrected by Holm's
# step-down method over the family (`p_holm`); and the 95% interval of that one comparison, `low_95` to
# `high_95`, which inverts the same test: every shift $m$ for which the sign-flip test of $d_k - m$ gives
# $p \ge 0.05$. It is exact and needs no resampling (with 10 seeds its ends are the 25th smallest and the
# 25th largest of the 1023 means of the nonempty subsets of the $d_k$), and zero lies outside it exactly
# when p < 0.05. A variant is **better** or **worse** where Holm's p is below 0.05; anything else is
# **no clear difference**, which is not "no effect". An interval can exclude zero where the verdict is
# "no clear difference": the interval is of one comparison alone, while the verdict corrects for the
# family. With $K$ seeds the smallest possible p is $2/2^K$: fewer than 6 seeds (0.0625 for 5, 0.25 for
# 3) can never give a verdict, and get no interval. The primary measure, named before the ten-seed runs,
# is the mean of episodes 1-100; each other measure is a family of its own.

# %%
display(primary[["seeds", "mean", "low_95", "high_95", "better_in", "worse_in", "p", "p_holm", "verdict"]])
report.interval_figure(primary)
plt.show()
apart = effects[(effects.verdict == "no clear difference") & ((effects.low_95 > 0) | (effects.high_95 < 0))]
Markdown(
    f"On every measure, {len(apart)} of the {len(effects)} comparisons have a 95% interval that excludes zero "
    "and no verdict after Holm's correction."
)

# %% [markdown]
# Every measure, by the same rule: the mean paired difference and the verdict.

# %%
pd.concat(
    {runs.MEASURES[m][0]: report.verdicts(table, ablations, m)[["mean", "verdict"]] for m in runs.MEASURES}, axis=1
)

# %% [markdown]
# rliable's summaries (Agarwal et al. 2021) for the ten-seed variants: the interquartile mean of
# each side and the probability that a run of the variant beats a run of the full agent, each
# with a 95% bootstrap interval.

# %%
report.summaries(table, [v for v in ablations if (agent.variant == v).sum() >= 10])

# %% [markdown]
# How each effect builds up: the paired difference of the mean of episodes 1 to $E$, for each episode
# $E$, which at $E = 100$ is the primary measure.

# %%
report.ablations_figure(table)
plt.show()

# %% [markdown]
# **The processor check.** Seed $k$ fixes the draws, but another kind of processor rounds the
# arithmetic differently from the first updates on, and training amplifies it. `results/processor_check/`
# holds the full agent made again, same code and seeds, on another processor than `results/full/`. It
# is the one comparison that pairs across processors, on purpose; uncorrected on every measure, to be as
# ready as it can be to find an effect. It is also the partner of the variants run on that processor.

# %%
check = {
    runs.MEASURES[m][0]: stats.compare(table, ["full"], measure=m, group="processor_check", like=False).iloc[0]
    for m in runs.MEASURES
}
pd.DataFrame(check).T[["seeds", "mean", "low_95", "high_95", "p", "verdict"]].infer_objects().round(3)

# %%
made = table[table.variant.eq("full") & table.group.isin(["agent", "processor_check"])]
made.groupby(["group", "processor"]).seed.size()

# %% [markdown]
# ## 5. What prioritized replay does at this replay ratio
#
# After episode 20 the agent makes one update on a batch of 256 for every 160 new transitions,
# into a buffer of a million, about 50 episodes. Per variant, the range over its seeds of: the
# newest transitions' (the last 1000 added) share of the draws over their share of the buffer after
# episode 20; at episode 100, the share of the buffer never replayed and the sampling probability
# it holds; and a new transition's priority over the mean $|\delta|$.

# %%
report.replay_use()

# %% [markdown]
# With the full agent's rule for a new transition's priority, prioritized replay leaves less of the
# buffer never replayed than uniform replay does, and new transitions, which enter at many times the
# mean $|\delta|$, are drawn more often than their share of the buffer; at the mean priority they are
# drawn about as uniform replay draws them. Whether any of the rules for a new
# transition's priority beats uniform replay, each paired with it seed by seed, like for like: uniform
# replay ran on one kind of processor, so only the seeds run there take part. None is clearly better or
# worse than uniform replay. The largest priority ever (Schaul et al.'s rule) has only 4 seeds there, and
# with 4 paired seeds the smallest possible p is $2/2^4 = 0.125$: that comparison cannot reach a verdict.

# %%
uniform_made_on = agent[agent.variant == "uniform"].processor.unique()
rules = report.verdicts(
    table[table.processor.isin(uniform_made_on)], ["full", "all_time_max_priority", "mean_priority"], baseline="uniform"
)
display(rules)
level = stats.comparison(stats.paired(table, "mean_priority", baseline="uniform"), True)
Markdown(
    f"At the mean priority, prioritized replay is level with uniform replay ({level['mean']:+.2f}, p {level['p']:.2f}, "
    f"{level['seeds']} seeds): whatever edge prioritized replay has here seems to come from favouring new transitions."
)

# %% [markdown]
# ## 6. The critic's overestimation, and clipped double-Q
#
# The most any policy can earn from a state is $r_\max/(1-\gamma)$, the ceiling; a mean $Q$ above
# it cannot be right. Beside it, the return the arms earned, estimated from the episode's score.
# Every variant at episode 100:

# %%
report.q_at_100()

# %% [markdown]
# A Monte-Carlo check of the solving run's critic (`experiments/overestimation.py`): the discounted
# return of the noise-free policy, summed from the rewards received on unseen goals, against the
# critic's $Q(s, \mu(s))$ on the same states; and the same for a clipped double-Q critic (seed 0).

# %%
report.overestimation()

# %% [markdown]
# The single critic of the full agent overestimates: its $Q$ passes the ceiling. Clipped
# double-Q's $\min(Q_1, Q_2)$ falls below the return, the underestimate Fujimoto et al. accept.
# The 1-step critics are below the return earned at episode 100, but they may not have converged,
# so these runs cannot say whether the overestimate comes with the $n$-step target.
#
# **Should clipped double-Q be the default?** The rule, fixed before its ten seeds ran: only if it
# is clearly better on the primary measure and costs at most 15% more time, measured side by side
# (`benchmarks/cost.py`, `make benchmark`).

# %%
cost = report.read_json("results/benchmarks/cost_clipped_double_q.json")
display(effects.xs("clipped_double_q", level="variant")[["seeds", "mean", "low_95", "high_95", "p_holm", "verdict"]])
Markdown(
    f"Time: x{cost['ratio_median']['wall']:.2f} wall (median of {cost['pairs']} side-by-side pairs, range "
    f"{cost['ratio_range']['wall'][0]:.2f} to {cost['ratio_range']['wall'][1]:.2f}, {cost['machine']})."
)

# %% [markdown]
# It is not clearly better on the primary measure, so by the rule the default keeps one critic; it
# stays in the lesson (its section 7.2) as `Config(clipped_double_q=True)`. There the two critics' loss is
# the mean of their two losses (half of TD3's sum), and the priorities come from critic 1's TD errors. It is better on episodes
# 91-100, where the single critic's overestimate is largest, which makes it a candidate for the later
# episodes (section 10).
#
# ### 6.1 The weak arm
#
# Without noise most arm-episodes score close to the most possible, but a few score well below.
# `experiments/weak_arm.py` plays the solving run's noise-free policy on unseen goals, splits the
# arm-episodes by the direction of their goal's orbit, and plays it again with the Reacher's mirror
# symmetry ($x \to -x$) applied at evaluation, so that every goal orbits one way:

# %%
by_direction, per_seed = report.weak_arm()
by_direction

# %% [markdown]
# The same test on every seed's exported policy (5 evaluation episodes): the mean score of goals
# orbiting each way, and the worst arm as trained and mirrored each way.

# %%
per_seed

# %% [markdown]
# The weaker direction differs between seeds, so mirroring at evaluation into one direction is no
# fix. The variant `mirror`, which mirrors states, actions and stored transitions in training, is
# symmetric by construction; section 4 gives its verdict on every measure.

# %% [markdown]
# ## 7. How faithful the replica is
#
# `make calibrate` (`benchmarks/calibration.py`, details in
# [`doc/calibration.md`](doc/calibration.md)) plays random actions and four actors that course
# students trained **on the Unity build**, without noise, on the replica. The replica's joint model was
# chosen on these measures: of the three joint models, the one that came closest on the four actors
# ([`doc/environment.md`](doc/environment.md)). Their scores below are therefore not independent
# evidence of fidelity. What is: the replica follows a specification read from the Unity build's
# sources (`doc/environment.md`), which tests check number by number (a reset state printed by the
# Udacity build reproduced bit for bit, `tests/test_physics.py`; the frame step, `tests/test_physx.py`),
# and a published course learner trained on the replica, below.

# %%
unity = report.read_json("doc/published.json")["unity_calibration"]
calibration = report.calibration()
display(calibration)
Markdown(
    f"On the Unity build (the specification): random play scores {unity['random_low']} to {unity['random_high']} "
    f"a 20-arm episode, such actors {unity['published_actors_low']:g} to {unity['published_actors_high']:g}. On "
    f"the replica, random play scores {calibration.loc['random_normal', 'mean']:.2f}."
)

# %% [markdown]
# Trained actors probe the dynamics, not learning. A published course learner, re-expressed and
# trained on the replica next to its own Unity log (`make learner`,
# [`doc/published_learner.md`](doc/published_learner.md)), probes learning, and nothing in the replica
# was chosen on it: three seeds, far fewer than a verdict needs.

# %%
learner = [read_json(p) for p in sorted(glob.glob(os.path.join(ROOT, "results", "published_learner", "*.json")))]
slower = sum(np.mean(r["scores"]) < np.mean(UNITY_LOG[: len(r["scores"])]) for r in learner)
Markdown(
    f"In {slower} of its {len(learner)} seeds it learned more slowly on the replica than in its Unity log (a lower "
    "mean over the episodes it ran than the log's over the same episodes), so the replica is not shown to be as "
    "easy to learn on as the Unity build."
)

# %% [markdown]
# ## 8. Published course results and Stable-Baselines3
#
# **Unity builds**, as printed in students' repositories (`doc/published.json`). "Solved at episode
# $E$" puts every row in this project's convention. Not a controlled comparison: one run per
# author, other agents, other hardware, and a replica here.

# %%
report.published()[["build", "printed", "convention", "window_end", "wall_time", "hardware"]]

# %% [markdown]
# **Stable-Baselines3 on the same 20 arms** (`make peers`, `experiments/peers.py`): TD3 and SAC with
# RL-Zoo's MuJoCo hyperparameters on the agent's update schedule, on RL-Zoo's own schedule, and
# configured like the agent. A peer's seed $k$ shares neither the agent's training goals nor its
# weights, so nothing pairs a peer's run with one of the agent's: each peer's runs and the full agent's
# ten are two samples. The test is an exact two-sample permutation test of the difference of the
# means (every split of the pooled runs), with Holm's correction over the peers; `better_than` is the
# probability that a run of the peer beats a run of the agent. On the primary measure, episodes 1-100,
# every peer is worse. On episodes 91-100, SAC on RL-Zoo's schedule is better than the agent (below): those
# are training episodes, with exploration on. On the noise-free evaluation it is level with the agent.
# SAC on the agent's update schedule barely learns in 100 episodes; on RL-Zoo's schedule or configured
# like the agent, it learns.

# %%
peers = [v for v in PEER_LABELS if v in set(table[table.group == "peers"].variant)]
peer_means = table[table.group == "peers"].groupby("variant").mean_1_100.mean().round(2)
display(stats.unpaired(table, peers).assign(peer_mean=peer_means).round(4).rename(index=PEER_LABELS))
late = stats.unpaired(table, peers, measure="mean_91_100")
zoo = table[(table.group == "peers") & (table.variant == "sac_zoo")].mean_91_100
evaluation = stats.unpaired(table, peers, measure="eval")
zoo_eval = table[(table.group == "peers") & (table.variant == "sac_zoo")]["eval"]
display(late.round(4).rename(index=PEER_LABELS))
Markdown(
    f"Episodes 91-100: {', '.join(PEER_LABELS[p] for p in late.index[late.verdict == 'better'])} better, "
    f"{', '.join(PEER_LABELS[p] for p in late.index[late.verdict == 'worse'])} worse, the rest no clear difference. "
    f"SAC on RL-Zoo's schedule: {zoo.mean():.2f} against the agent's {full.mean_91_100.mean():.2f}, Holm's p "
    f"{late.p_holm['sac_zoo']:.3f}; all {len(zoo)} of its seeds score above all {len(full)} of the agent's "
    f"(best {full.mean_91_100.max():.2f}, its lowest {zoo.min():.2f}). "
    f"Noise-free evaluation: {zoo_eval.mean():.2f} against the agent's {full['eval'].mean():.2f}, p "
    f"{evaluation.p['sac_zoo']:.2f}: level."
)

# %%
report.peers_figure(table)
plt.show()

# %% [markdown]
# ## 9. What the replay shows
#
# The exported policy without noise, 300 steps from a reset on unseen goals, every 6th step;
# rendered by MuJoCo where an OpenGL context exists, else drawn from above with matplotlib.

# %%
frames, scores, renderer = render_replay(policy_of(nets), steps=300, every=6)
HTML(f'<img src="data:image/gif;base64,{__import__("base64").b64encode(to_gif(frames)).decode()}" width="480">')

# %% [markdown]
# ## 10. Future work
#
# * **A run on a Unity build**, to say whether the replica's episode counts carry over.
# * **The learning schedule.** Learning every step throughout scores better on episodes 1-100, 91-100 and
#   the worst arm, and takes more than twice the time (the saved wall times, above); the default learns
#   every 8th step after episode 20. Schedules between the two would say what each point of score costs.
# * **Clipped double-Q late in training.** It is better on episodes 91-100 and not on 1-100: switching
#   to it once the scores are high is a variant worth its ten seeds.
# * **More seeds where the data leans one way.** No exploration noise has a 95% interval below zero on
#   the primary measure (section 4) and no verdict after correction; mirroring and uniform replay each
#   lean one way in most seeds, with intervals that just include zero.
# * **Replay at a higher replay ratio.** Prioritized replay shows no clear gain at one update per 160 new
#   transitions; more updates per transition, a buffer small enough to be replayed, or recency
#   without priorities would say whether its recency matters.
# * **The critic's overestimation**: a smaller $n$ late in training, or $\lambda$-returns.
# * **The arm-episodes far below the rest** (section 6.1): following their trajectories.
#
# ## 11. Compute
#
# The training behind this report, from every run's saved wall time (hours):

# %%
(table.groupby("group").minutes.sum() / 60).round(1)

# %% [markdown]
# ### 11.1 On a GPU
#
# `python -m benchmarks.devices` trains seed 0 for 100 episodes on each device of one machine, and prints
# the wall time, the time per update and per environment step, and the scores. The GPU path
# (`continuous_control/devices.py`: the replay on the GPU, each update and each step's actions as CUDA graphs)
# has not been timed on this code yet, so this report gives no GPU speed.
