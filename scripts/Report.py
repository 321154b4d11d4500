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
# those from the code). The tables, figures and computed sentences
# are built by `experiments/report.py` (the comparisons by `experiments/claims.py`), so each
# cell below is one short call. Every run trained on this project's **built-in Reacher**, a
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
from experiments.peers import peer_results, peers_figure, peers_table, peers_text
from experiments.report import show
from experiments.summarize import compute_block, describe_runs

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
# `continuous_control/agent.py`, the agent exported from the notebook.

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
# NoisyNet used its freedom (computed from the saved weights):

# %%
show(report.sigma_sentence(nets, cfg))

# %% [markdown]
# ## 2. Rewards per episode of the solving run
#
# The notebook's run (`checkpoints/`). The environment counts as solved when the
# average over 100 consecutive episodes of the 20-agent mean score reaches +30; "solved at
# episode $E$" means episodes $E-99, \dots, E$ average at least 30.

# %%
show(report.solving_run_text(solving))
report.solving_run_figure(solving)
plt.show()

# %%
show(report.levels_text(solving))

# %% [markdown]
# What learning saw in the solving run, per episode (`diagnostics.csv`): the critic's mean
# $Q(s, a)$ and losses over the episode's updates, the mean $|\delta|$, NoisyNet's mean $\sigma^W$
# per layer, the share of young transitions among the sampled and the stored, the largest
# priority and $\beta$.

# %%
report.diagnostics_figure(solving)
plt.show()
show(report.diagnostics_text(solving))

# %% [markdown]
# ### 2.1 A new transition's priority: the recent maximum against the largest ever
#
# Prioritized replay (Schaul et al. 2016) inserts each new transition at the largest priority
# seen so far. That maximum is set in the first episodes, when the TD errors are large, and can
# stay above the later ones, so that new transitions take a large share of the sampling. The
# agent inserts them at the largest priority of the last `priority_window` updates instead
# (notebook section 4.2); the ablation `all_time_max_priority` keeps the largest ever. Below,
# from each run's diagnostics: how much more often new transitions were replayed than their share
# of the buffer, where a new transition's priority ended against the TD errors, and how much of
# the sampling probability the transitions never replayed held at the end; then the scores,
# compared by the claims rule of section 5.1.

# %%
show(report.priority_text(results))

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

# %%
show(report.seeds_text(full))

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
# Each variant changes one thing in the full agent, all else equal (same code, same
# hyperparameters, same seeds); plain DDPG removes all three extensions. Every ablation runs
# exactly 100 episodes, solved or not; the full agent's runs are cut to their first 100
# episodes and compared on the same seeds, so every number covers the same episodes.
# "Solved by episode 100" means that episodes 1-100 average at least 30. The variants are
# those of `continuous_control/variants.py`; one not yet run by `make experiments` is marked so.

# %%
show(report.variants_table(results))

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
# from the saved scores. A variant is compared with the full agent **seed by seed**: the paired
# differences $d_k$ (variant minus full agent on seed $k$), their mean $\bar d$, and the 95%
# t-interval $\bar d \pm t_{1-\alpha/(2m),\,n-1}\, s_d / \sqrt{n}$, **widened for the $m$ variants**
# compared on the same measure (Bonferroni, $\alpha = 0.05$). A variant is called higher, lower,
# sooner or later only where that corrected interval excludes zero; anything else is "no clear
# difference", and fewer than three paired seeds get no verdict. "No clear difference" means the
# interval holds zero, not that there is no effect. The **primary measure**, named before the
# ten-seed runs, is the mean of episodes 1-100; the others are secondary.
#
# The primary measure first, with its intervals:

# %%
show(report.interval_table(results))
report.interval_figure(results)
plt.show()

# %% [markdown]
# Every measure, by the same rule:

# %%
show(report.comparison_lines(results))

# %% [markdown]
# How much of the gap between the full agent and plain DDPG each step explains, on the mean of
# episodes 1-100 (means over the paired seeds): removing the $n$-step target alone (the 1-step
# variant), and then prioritized replay and NoisyNet together at $n = 1$ (1-step against plain).

# %%
show(report.gap_decomposition(results))

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
# What this means for comparing with Unity numbers:

# %%
show(report.calibration_consequences())

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
# runs show what the course's Unity build asked of a plain DDPG learner; the replica's column
# shows this agent on this project's environment. Note also that $E = 100$ is the floor: under
# the course's criterion no run can be solved earlier.

# %% [markdown]
# ### 7.1 Stable-Baselines3 on the same arms: a controlled comparison
#
# What a user would pick instead of writing DDPG by hand is a well-kept library. Through the
# replica's Gymnasium interface (`reacher/gym.py`), `make peers` trains Stable-Baselines3's TD3
# and SAC on the same 20 arms, the same seeds and the same machine, for 100 episodes, with
# RL-Zoo's MuJoCo hyperparameters and this agent's update schedule (`benchmarks/peers.py` names
# each hyperparameter and its source; each run's `config.json` holds what ran), and evaluates each
# final policy noise-free on the agent's unseen goals. The rows "RL-Zoo's schedule" train the
# same peers with RL-Zoo's own update schedule, an update every step of the 20 arms, several
# times the agent's updates (`python -m benchmarks.peers --runs td3_zoo sac_zoo`). The full
# agent's rows are its seeds of section 3; verdicts follow the rule of section 5.1, and minutes
# are compared only where every paired run solved and all shared the machine alike (the line
# above the table says how many runs ran at a time).

# %%
peers = peer_results()
show(peers_table(peers), peers_text(peers))
peers_figure(peers)
plt.show()

# %% [markdown]
# ## 8. Future work
#
# Each item follows from a result above; the sentences in bold are computed from the data.

# %%
show(report.future_work(results, cfg))

# %% [markdown]
# ## 9. Compute
#
# The training behind this report, summed from every run's saved wall time:

# %%
show(compute_block(RUN_DIR))
