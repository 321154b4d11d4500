# ---
# jupyter:
#   jupytext:
#     formats: ipynb,scripts//py:percent
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
# shows that it solves the 20-agent Reacher, and measures, over several seeds, what each of its
# three extensions contributes. It **only reads** saved results and never trains:
#
# * `checkpoints/`: the notebook's solving run: configuration, weights, per-episode scores;
# * `results/<variant>/seed<k>/`: headless runs of the same agent for several seeds of the full
#   agent and of each ablation, made by `make experiments` (`python -m experiments.run --all`).
#   The agent is `continuous_control/agent.py`, exported from the training notebook's cells
#   tagged `export`, so the experiments run exactly the code the notebook teaches;
# * `results/calibration/`: the replica measured against the Unity build (`make calibrate`).
#
# **Where the numbers come from.** Every result in this report is computed from those files
# when the report runs; none is typed into the text (the prose names only settings of the
# configuration, such as the 20 arms or a batch of 256, and the hyperparameter table prints
# those from the code). The tables and figures are built by `experiments/report.py` (the
# comparisons by `experiments/claims.py`), so each cell below is one short call. The prose
# around them is written by hand, and `tests/test_report.py` checks, on the saved results, every
# fact it rests on. Every run trained on this project's **built-in Reacher**, a
# replica of the course's Unity environment (`reacher/`, described number by number in
# [`doc/environment.md`](doc/environment.md)); section 6 measures how faithful it is. The only
# numbers from Unity builds are the published ones in sections 6 and 7, each with its source
# (`experiments/published.py`), and they are never put in the same column as the replica's.

# %%
import os

import matplotlib.pyplot as plt
from IPython.display import HTML, display

import reacher                     # first: on a headless Linux machine it selects MuJoCo's EGL backend
from continuous_control.replay import load_networks
from continuous_control.results import load_results, load_run
from experiments import report
from experiments.peers import peer_results, peers_figure, peers_intervals, peers_table
from experiments.report import show
from experiments.overestimation import overestimation_table
from experiments.summarize import compute_block, describe_runs
from experiments.weak_arm import across_seeds_table, weak_arm_table

RUN_DIR = os.environ.get("REPORT_RUN_DIR", "checkpoints")    # the solving run; tests point it elsewhere
solving, results = load_run(RUN_DIR), load_results(need=("full",))
cfg, full = solving["config"], results["full"]

# %% [markdown]
# ## 1. The learning algorithm
#
# **DDPG** (deep deterministic policy gradient, Lillicrap et al. 2016) learns a deterministic
# policy $\mu_\theta(s)$, the *actor*, and its action-value $Q_\phi(s, a)$, the *critic*, off-policy
# from a replay buffer. The critic regresses on a bootstrapped target computed with slowly moving
# copies $\mu_{\theta'}, Q_{\phi'}$ of both networks: after each update,
# $\phi' \leftarrow \tau\phi + (1-\tau)\phi'$ (likewise $\theta'$). This Polyak averaging is an
# exponential moving average of the learned weights with a time constant of $1/\tau$ updates:
# each target lags its network by about that many updates. The actor follows the critic's action
# gradient, minimising $-Q_\phi(s, \mu_\theta(s))$. All 20 arms act with the same actor and feed
# one shared buffer. The agent makes one update on a batch after every environment step (20
# transitions) in its first episodes and after every few steps later (`fast_episodes`,
# `learn_every_later` in the table below), and $n$ grows from 1 over the first episodes
# (`n_step_ramp`); both schedules are explained in the training notebook (sections 3 and 6.2),
# and section 5 measures each with an ablation that removes it.
#
# Three extensions, each tested by removing it in section 5:
#
# 1. **$n$-step targets.** The critic's target sums $n$ real rewards before bootstrapping,
#    $y_t = \sum_{k=0}^{n-1}\gamma^k r_{t+k} + \gamma^n Q_{\phi'}(s_{t+n}, \mu_{\theta'}(s_{t+n}))$,
#    so a reward reaches the critic $n$ times faster and the target leans less on the critic's
#    own early errors, at the price of more variance and an uncorrected off-policy bias: the $n-1$
#    intermediate actions came from older, noisy policies (no Retrace or tree-backup correction;
#    D4PG and Rainbow accept the same bias).
# 2. **Prioritized replay** (Schaul et al. 2016). Transition $i$ has the priority
#    $p_i = |\delta_i| + c$, its last TD error plus a small constant $c$ (`priority_offset`) that
#    keeps every transition in play, and is sampled with probability
#    $P(i) = p_i^\alpha / \sum_k p_k^\alpha$ from a sum tree; each sample's squared TD error is
#    weighted by $w_i = (N P(i))^{-\beta} / \max_j (N P(j))^{-\beta}$. The maximum is taken
#    over the batch, so the correction is exact only up to a per-batch scale; $\beta$ grows
#    linearly from `beta_start` to 1 over `beta_steps` environment steps (section 1.1 gives
#    both, and the $\beta$ a run solved at episode 100 stops at).
# 3. **NoisyNet** (Fortunato et al. 2018). Exploration comes from learned, factorised Gaussian
#    noise on the actor's weights, $W = \bar W + \sigma^W \odot \varepsilon^W$ (mean weights
#    $\bar W$, learned noise scales $\sigma^W$; $W$, not $w$, which is an importance weight above),
#    rather than from noise added to actions. Here the
#    acting noise $\varepsilon$ follows an Ornstein-Uhlenbeck process in time with mean-reversion
#    rate $\kappa$ (`ou_kappa`; each $\varepsilon$ still $\mathcal{N}(0, 1)$), so a perturbed policy
#    lasts about $1/\kappa$ steps rather than one. One noise sample drives
#    all 20 arms at a time (section 5 tests one sample per arm, as action noise has), the target
#    actor uses the mean weights $\bar W$ (a departure from Fortunato et al.), and $\sigma^W$ learns
#    only through $-Q$, which does not reward exploring (section 1.2 shows where it went).
#
# Two further details matter. States are standardised by a running mean and variance of all
# states seen (a `Normalizer` in front of both networks, saved with them). And the Reacher's
# 1001-step limit is a clock, not a terminal state: targets bootstrap through it, and the step
# that reports `done` (whose next state already belongs to the next episode) is not stored.
# The notebook derives each piece and checks each class as it is defined.

# %% [markdown]
# ### 1.1 Hyperparameters
#
# Read from the solving run's saved `config.json` (`checkpoints/`, or the run named by
# `REPORT_RUN_DIR`); the descriptions are the docstrings of `Config` in
# `continuous_control/agent.py`, the agent exported from the notebook, and the section numbers in
# them are the notebook's.

# %%
show(report.hyperparameter_table(cfg), report.beta_sentence(cfg))

# %% [markdown]
# ### 1.2 Network architectures
#
# Rebuilt from the agent's own classes with the saved configuration, then loaded from the saved
# weights (`load_state_dict` is strict, so a printed layer that did not match the saved model
# would fail here).

# %%
nets = load_networks(RUN_DIR)
show(report.architecture_tables(nets, cfg))

# %% [markdown]
# Both networks read the state through the `Normalizer` (running mean and variance of the 33
# inputs, the standardised values clipped to $\pm 5$). The actor is three `NoisyLinear` layers
# with ReLU after the two hidden ones and $\tanh$ at the output (actions in $[-1, 1]$); acting
# without noise uses the mean weights $\bar W$. The critic takes state and action concatenated
# at its input (37 values), two ReLU layers and a linear output. The last column shows how
# NoisyNet used its freedom: a learned noise scale below its initial value means the actor turned
# that layer's exploration down. Nothing in DDPG's actor loss, $-Q_\phi(s, \mu_\theta(s))$,
# rewards exploring, so $\sigma^W$ moves only as far as it happens to raise $Q$ (the notebook's
# section 5.2 says why it then tends to shrink).

# %% [markdown]
# ## 2. Rewards per episode of the solving run
#
# The notebook's run (`checkpoints/`). The environment counts as solved when the
# average over 100 consecutive episodes of the 20-agent mean score reaches +30; "solved at
# episode $E$" means episodes $E-99, \dots, E$ average at least 30.

# %%
show(report.solving_run_table(solving))
report.solving_run_figure(solving)
plt.show()

# %% [markdown]
# What learning saw in the solving run, per episode (`diagnostics.csv`): the critic's mean
# $Q(s, a)$ and losses over the episode's updates, the mean $|\delta|$, NoisyNet's mean $\sigma^W$
# per layer, the share of young transitions among the sampled and the stored, the largest
# priority and $\beta$.

# %%
report.diagnostics_figure(solving)
plt.show()

# %% [markdown]
# ### 2.1 What prioritized replay does at this replay ratio
#
# After its fast episodes the agent makes one update on a batch of 256 for every 160 new
# transitions (`learn_every_later` steps of 20 arms), into a buffer of a million transitions, about
# 50 episodes. A new transition enters at a high priority: the largest of the last
# `priority_window` updates (the variant `all_time_max_priority` keeps the largest ever, as Schaul
# et al. do; `mean_priority` enters it at the mean priority instead; a variant not yet run has no
# row). The table reads each run's diagnostics after the fast episodes. Its first column: the share
# of the sampled transitions that were among the last 1000 added, over their share of the buffer
# (1 means drawn as often as any other). Then, at the end of the run: the share of the buffer never
# replayed, the sampling probability those transitions held, and a new transition's priority over
# the last episode's mean $|\delta|$ (none under uniform replay). Learning every step throughout
# makes eight times the later updates per new transition.

# %%
show(report.replay_table(results))

# %% [markdown]
# Read together, the columns say what prioritization does here. Under uniform replay a large part
# of the buffer has not been replayed at all by the end of a run. Prioritized replay shrinks that
# backlog, but the transitions never replayed hold most of the sampling probability, because each
# entered at a priority many times the TD errors of those already replayed: the next batches draw
# them first. At this ratio prioritized replay is therefore mostly a **recency** rule: what it
# sets is the share of each batch that goes to transitions not yet replayed, mostly the newest,
# while the old ones share what probability is left by their TD errors. Whether that helps the
# scores is asked here against uniform replay itself, on the primary measure: the full agent (new
# transitions at the recent largest priority), the largest priority ever, and the mean priority,
# which stops favouring the new, each paired by seed with uniform replay (a variant with no seed
# paired has no row).

# %%
show(report.interval_table(results, variants=("full", "all_time_max_priority", "mean_priority"), baseline="uniform"))

# %% [markdown]
# Entering at the mean priority, a new transition is drawn no more often than any other (the first
# table's first column), and the backlog left at the end is about uniform replay's: what remains of
# prioritization is the choice among stored transitions by their TD errors, and on the primary measure
# the seeds cannot tell that variant from uniform replay: its interval holds zero near its middle.
# New transitions at the largest priority ever (the rule of Schaul et al.), which draws the new
# transitions first more strongly still, are **clearly better** than uniform replay, the interval
# widened for this table's comparisons above zero. Most of that rule's seeds were made on the AMD
# EPYC and all of uniform replay's on the Intel Xeon, so the verdict leans on the processor check of
# section 5.1; on the seeds both made on one processor the rule is ahead too. The full agent, whose
# rule (the largest recent priority) lies between the two, is ahead of uniform replay on average, but
# its interval holds zero: no verdict. So prioritized replay earns its place here by replaying the
# newest transitions first, not by its choice among the old ones, which alone shows nothing; and the
# full agent's rule is not clearly different from the largest priority ever (section 5.1).

# %% [markdown]
# ### 2.2 The critic's overestimation
#
# The most any policy can earn from a state is the reward of every step in the goal for ever,
# $r_\text{max}/(1-\gamma)$, the ceiling. A critic's mean $Q$ above it cannot be right. Beside
# it, the return the arms earned, estimated from each episode's score as its mean reward per step
# earned for ever (`q_reference`; the estimate errs high early in an episode, when the arms are
# still reaching their goals, and low late in it). The table reads every variant's episode 100.

# %%
show(report.q_table(results))

# %% [markdown]
# A Monte-Carlo check on the solving run's own critic: the discounted return of the noise-free
# policy, summed from the rewards the arms really received (`experiments/overestimation.py`, on
# goals unseen in training), against the critic's $Q(s, \mu(s))$ on the same states.

# %%
show(overestimation_table())

# %% [markdown]
# On the states its own noise-free policy visits, the solving run's critic values them above the
# return the policy really earns from them, even against that return's upper bound, and its mean
# $Q$ passes the ceiling that no policy can reach: the critic overestimates. Per arm (the last two
# columns), $Q$ varies less than the true return does, so the gap is largest on the arms that
# earn least (section 3.1 says why some earn less). The same check on a critic of clipped
# double-Q (its seed 0, the second row, where it has run) finds the opposite error: $\min(Q_1, Q_2)$
# falls below the return, the underestimate that Fujimoto et al. accept in exchange. The first
# table adds a pattern across
# variants: with 1-step targets (and in plain DDPG) the critic's $Q$ at episode 100 sits below the
# return earned; in the full agent's runs ($n = 5$), and in the 3- and 10-step runs, at or above
# the ceiling. So the overestimate comes with the $n$-step target. A table of means cannot say whether it costs score; clipped double-Q, the
# standard remedy (the notebook's section 2.3), runs on ten seeds, and section 5.2 states the
# rule by which it becomes the default, with its cost.

# %% [markdown]
# ## 3. Across seeds
#
# The notebook's configuration for several seeds (`results/full/`), each trained until solved.
# Every score comes with its worst and best arm: an arm's score over episodes 1-100 is its own
# mean over those episodes, and without noise its mean over the 5 evaluation episodes (the
# exported policy on goals the run never saw, environment seed 10000 + seed). A mean over 20
# arms can hide one arm that fails, and these columns would show it.

# %%
show(describe_runs(full), report.seeds_table(full))
report.seeds_figure(full)
plt.show()

# %% [markdown]
# The project's score goals, set before the ten seeds ran and judged on their distribution rather
# than on one run:

# %%
show(report.goals_table(full))

# %% [markdown]
# Where a goal is missed, the seeds table says which seeds miss it; section 3.1 looks at what lies
# behind a low noise-free worst arm.

# %% [markdown]
# ### 3.1 The weak arm
#
# Without noise most arm-episodes of a policy score close to the most possible, but a few score
# well below the rest, and the worst arm of a seed (section 3's table) is the arm that drew them in
# its five evaluation episodes. Each arm's goal orbits at a random speed, one way
# or the other (the sign of the goal speed, the last observation). `experiments/weak_arm.py`
# plays the solving run's noise-free policy on unseen goals and splits the arm-episodes by the
# direction of their goal's orbit; then it plays the same policy with the Reacher's mirror
# symmetry ($x \to -x$) applied at evaluation only, so that every goal is seen orbiting the way
# the policy tracks better (and, as a control, the other way).

# %%
show(weak_arm_table())

# %% [markdown]
# The arm-episodes that fall furthest short of the others are goals orbiting backwards, the slow
# ones more than the fast: the policy tracks one orbit direction worse than the other. Mirrored
# into the forward direction, the same backward goals score as the forward ones; mirrored the
# other way (the control), the forward goals lose score, their worst most. So the cause is in the policy, not in an arm or a goal,
# and which arm of a seed is "the weak arm" is the accident of which arm drew slow backward goals in
# the five evaluation episodes. (Here "worst" is the worst single arm-episode; in the next table,
# as in section 3's, it is the worst arm's mean over its evaluation episodes.) The same test on
# every seed's exported policy, on its own evaluation goals (`make experiments`, whose last step is `python -m experiments.run --analyses`):

# %%
show(across_seeds_table())

# %% [markdown]
# The weaker direction differs between seeds, backward in some and forward in others. So mirroring
# at evaluation into one fixed direction is no fix: whichever direction is chosen, some seed's worst
# arm loses score. A fix would have to come from training: the variant `mirror` mirrors states,
# actions and stored transitions so that the networks see one direction only, which makes the policy
# symmetric by construction (a test checks it). Yet its noise-free worst arm falls below 37 in at
# least one of its seeds, which no seed of the full agent does (section
# 5's table gives each variant's worst arm, and section 5.1 pairs them on every measure). So the learned asymmetry is one cause of the arm-episodes far below the rest,
# not the only one, and removing it in training did not remove them.

# %% [markdown]
# ## 4. What the replay shows: the trained arms
#
# The exported policy (the target actor, see the notebook's section 9) without noise, 300 steps
# (of 1001) from a reset on goals unseen in training,
# every 6th step. Rendered with MuJoCo's offscreen renderer when an OpenGL context exists
# (`MUJOCO_GL=egl` on a headless Linux machine), else drawn from above with matplotlib. Arms are
# blue, hands white, goals green; a still frame is in `doc/replay_frame.png`
# (`python -m experiments.figures`).

# %%
frames, replay_scores, renderer = report.replay(nets)
print(report.replay_text(frames, replay_scores, renderer))
display(HTML(report.gif_html(frames)))

# %% [markdown]
# The same replay as a strip of stills, for renderers that show no animation:

# %%
report.stills_figure(frames)
plt.show()

# %% [markdown]
# ## 5. Ablations: what each extension contributes
#
# Each variant changes one thing in the full agent, all else equal (same hyperparameters, same
# seeds); plain DDPG removes all three extensions. The line above the first table names the code and
# the machines that made the runs; a run whose configuration is not today's is made again by
# `make experiments`. The ablation table's minutes name the processor beside how the runs shared the
# machine: minutes compare only like with like. Every ablation runs
# exactly 100 episodes, solved or not; the full agent's runs are cut to their first 100
# episodes and compared on the same seeds, so every number covers the same episodes.
# "Solved by episode 100" means that episodes 1-100 average at least 30. The variants are
# those of `continuous_control/variants.py`; one not yet run by `make experiments` is marked so.

# %%
show(describe_runs([run for runs in results.values() for run in runs]), report.variants_table(results))

# %% [markdown]
# The table gives, for each variant, the range over its seeds from the worst to the best seed;
# next to each mean, the worst and the best arm of any of its seeds (an arm's own mean over the
# episodes, as in section 3). The full agent's row covers the ablations' seeds only.

# %%
show(report.ablation_table(results))
report.ablation_figure(results)
plt.show()

# %% [markdown]
# ### 5.1 What the data support
#
# Every comparison below follows one rule (`experiments/claims.py`), and a test recomputes each
# from the saved scores. A variant is compared with the full agent **seed by seed**, seed $k$ against
# seed $k$: the seed fixes each episode's goals and the initial weights, whatever the processor.
# Another kind of processor may round later arithmetic differently, and training amplifies that as
# it amplifies any change of the agent. We take this to add noise, which the intervals measure with
# the rest, and no systematic effect, and check it at the end of this section with the full agent
# made again on another processor (the ablation table names each variant's processor). The paired
# differences $d_k$ (variant minus full agent on seed $k$, over $K$ paired seeds), their mean
# $\bar d$, and the 95% t-interval $\bar d \pm t_{1-0.05/(2m),\,K-1}\, s_d / \sqrt{K}$, **widened
# for the $m$ variants** compared on the same measure (Bonferroni). A variant is called better or
# worse only where that corrected interval excludes zero; anything else is "no clear difference",
# and fewer than three paired seeds get no verdict. "No clear difference" means the interval holds
# zero, not that there is no effect: with three seeds and many variants the corrected interval is
# several times wider than the uncorrected one, and only a large effect clears it. Holm's p is the
# paired t-test's p-value adjusted by Holm's step-down method for the same family (below $0.05$ where
# Bonferroni's interval excludes zero, and sometimes where it does not). The interquartile mean and
# the probability that a variant's run beats a full agent's run are given on ten seeds only. A run
# that never reached 30 counts as episode 101 on the first-episode measure: there a verdict orders
# runs, and its interval is no measure of size. The **primary measure**, named before the ten-seed
# runs, is the mean of episodes 1-100; the others are secondary.
#
# The primary measure first, with its intervals:

# %%
show(report.interval_table(results))
report.interval_figure(results)
plt.show()

# %% [markdown]
# Every measure, by the same rule (each measure its own family): the mean paired difference, its
# corrected 95% interval, and the verdict.

# %%
show(report.measures_table(results))

# %% [markdown]
# How much of the gap between the full agent and plain DDPG each step explains, on the mean of
# episodes 1-100 (means over the seeds on which all three pair; the cell says when there are none): removing the $n$-step target alone (the 1-step
# variant), and then prioritized replay and NoisyNet together at $n = 1$ (1-step against plain).

# %%
show(report.gap_decomposition(results))

# %% [markdown]
# **The processor check.** Pairs across processors rest on the assumption above: that another kind
# of processor adds noise and no systematic effect. `results/processor_check/` holds the full agent
# made again, same code and seeds, on another kind of processor than `results/full/`; the table
# gives the difference seed by seed on every measure, each measure uncorrected, so that the check is
# as ready as it can be to find an effect.

# %%
show(report.processor_check(results))

# %% [markdown]
# It finds no clear difference on any measure, as the assumption needs. It cannot rule out an
# effect smaller than its intervals; a variant whose difference from the full agent is no larger than
# that, with its runs made on the other processor, is one the pairing cannot resolve either way.

# %% [markdown]
# ### 5.2 Clipped double-Q: should it be the default?
#
# Clipped double-Q (TD3's target, the notebook's section 2.3) attacks the overestimation of
# section 2.2. The rule, fixed before its ten seeds ran: it becomes the default only if it is
# clearly better on the primary measure (section 5.1's corrected interval above zero) and costs at
# most 15% more time, measured side by side in one session. Its cost, from `benchmarks/cost.py`
# (`make benchmark`): short runs with the same mix of updates and environment steps as a whole
# run, with and without it, in turn, the ratio taken pair by pair.

# %%
show(report.cost_table())

# %% [markdown]
# The rule, criterion by criterion:

# %%
show(report.decision_table(results))

# %% [markdown]
# **Decision: the default keeps one critic.** On its ten seeds clipped double-Q is not clearly
# better on the primary measure, so the rule keeps it off whatever its cost. It does what it is
# for: its critic's $Q$ at episode 100 stays below the ceiling in every seed (section 2.2's table),
# where the single critic's passes it; removing the overestimate made no clear difference on the
# primary measure (section 5.1's table of every measure gives the secondary ones). It stays in the notebook (section 2.3) as a switch, `Config(clipped_double_q=True)`.

# %% [markdown]
# ## 6. How faithful the replica is
#
# The replica is measured against the Unity build by `make calibrate`
# (`benchmarks/calibration.py`, details in [`doc/calibration.md`](doc/calibration.md)): random play,
# and four actors that course students trained **on the Unity build** and published, run without
# noise on the replica. Nothing in the replica was fitted to them, so they probe its dynamics
# and observations: on a faithful replica each should score what such actors score on Unity.
# The Unity column is the specification's (`experiments/published.py`, from
# `doc/environment.md`); the replica column is measured.

# %%
show(report.calibration_table())

# %%
show(report.calibration_text())

# %% [markdown]
# What this means for comparing with Unity numbers. Most policies that are good on Unity are good
# on the replica too, so the replica's final scores are roughly on Unity's scale; four actors and
# a few episodes each are a small sample, random play scores a little above Unity's range, and
# the actor that scores lowest here was trained on the one-arm build (section 7), which may
# account for part of its gap.
# Neither makes episode counts or minutes comparable: how fast a learner improves depends on
# details of the dynamics that a few trained actors do not pin down, and the machines differ. So
# the replica's results stay in their own table in section 7.

# %% [markdown]
# ## 7. Compared with published course results
#
# **Unity builds**, as printed in the students' own repositories (`experiments/published.py`).
# Course notebooks count "solved in $N$ episodes" two ways: as the episode $E$ where the
# 100-episode window that first averages 30 ends, or as $E - 100$, the episodes before that
# window. The column "solved at episode $E$" puts every row in the first convention, the one this
# project uses; "as printed" keeps the author's words.

# %%
show(report.published_table())

# %% [markdown]
# **This project, on the built-in replica** (section 3), in the same convention. A separate
# table: different physics, different machines.

# %%
show(report.replica_table(full, solving))

# %% [markdown]
# Not a controlled comparison: one published run per author, different agents, different
# hardware, and for this project an environment that is a replica (section 6). The published
# runs show what the course's Unity build asked of the students' learners; the replica's column
# shows this agent on this project's environment. Note also that $E = 100$ is the floor: under
# the course's criterion no run can be solved earlier.

# %% [markdown]
# ### 7.1 Stable-Baselines3 on the same arms and seeds
#
# What a user would pick instead of writing DDPG by hand is a well-kept library. Through the
# replica's Gymnasium interface (`reacher/gym.py`), `make peers` trains Stable-Baselines3's TD3
# and SAC on the same 20 arms and the same seeds, for 100 episodes, with
# RL-Zoo's MuJoCo hyperparameters and this agent's update schedule (`benchmarks/peers.py` names
# each hyperparameter and its source; each run's `config.json` holds what ran), and evaluates each
# final policy noise-free on the agent's unseen goals. The rows "RL-Zoo's schedule" train the
# same peers with RL-Zoo's own update schedule, an update every step of the 20 arms, several
# times the agent's updates (`python -m benchmarks.peers --runs td3_zoo sac_zoo`), and the rows
# "configured like the agent" give the peers this agent's standardised observations, $n$-step
# targets, network sizes and schedule. The agent's own hyperparameters were chosen on this
# environment and RL-Zoo's on others, which favours the agent. The full agent's row holds its seeds
# in common with the peers, paired seed by seed. A peer's seed $k$ meets the agent's evaluation
# goals, not its training goals or weights, so these pairs are looser than the ablations'. Verdicts follow the rule of section 5.1 (the peers form the family),
# and minutes are compared only where every paired run solved and all were made on one kind of
# processor and shared the machine alike (the minutes column says how many runs ran at a time).

# %%
peers = peer_results()
show(peers_table(peers), peers_intervals(peers))
peers_figure(peers)
plt.show()

# %% [markdown]
# ## 8. Future work
#
# * **A run on a Unity build.** The replica's fidelity is measured with trained actors (section 6),
#   not with learning; one Unity run of this agent would say whether its episode counts carry over.
# * **Replay that earns its place.** At this replay ratio prioritized replay acts mostly as a
#   recency rule (section 2.1): new transitions at the largest priority ever beat uniform replay,
#   and at the mean priority, which leaves only its choice among old transitions, they did not.
#   What is left to try: more updates per new transition in the later episodes together with a
#   recency rule (learning every step alone, the variant `learn_every_step`, shows no clear
#   difference from the full agent in section 5.1), a buffer small enough to be replayed, or recency without priorities (each new transition replayed once, then uniform
#   replay), which would say whether recency alone is the gain.
# * **The critic's overestimation** (section 2.2) has a known remedy, clipped double-Q, whose ten
#   seeds section 5.2 judges; a smaller $n$ late in training, or $\lambda$-returns over the stored
#   windows, would attack the part of it that comes with the $n$-step target.
# * **The arm-episodes far below the rest** (section 3.1). A policy that tracks one orbit direction
#   worse explains some of them, but a policy symmetric by construction (the variant `mirror`) still
#   has them. Following those arm-episodes' trajectories (where the hand is when the goal passes)
#   would say what else fails; adding each transition's mirror image to the buffer, rather than
#   mirroring the states, would keep both directions in training.
# * **A criterion that sees early learning.** The full runs are solved at the earliest episode the
#   criterion allows, while their 20-arm mean reaches 30 far earlier (section 3's table): the
#   noise-free score of the policy saved after each episode would show when it is really good.

# %% [markdown]
# ## 9. Compute
#
# The training behind this report, summed from every run's saved wall time:

# %%
show(compute_block(RUN_DIR))
