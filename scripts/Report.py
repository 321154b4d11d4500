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
# * `results/<variant>/seed<k>/`: headless runs of the same code for five seeds of the full agent
#   and three seeds of each ablation, made by `make experiments` (`experiments/run.py --all`).
#   `experiments/notebook.py` executes the training notebook's definition cells, so the
#   experiments run exactly the code the notebook teaches;
# * `results/calibration/`: the replica measured against the Unity build (`make calibrate`).
#
# **Where the numbers come from.** Every number in this report is computed from those files
# when the report runs; none is typed into the text. Every run trained on this project's
# **built-in Reacher**, a replica of the course's Unity environment (`reacher/`, described
# number by number in [`doc/environment.md`](doc/environment.md)); section 6 measures how
# faithful it is. The only numbers from Unity builds are the published ones in sections 6 and 7,
# each with its source (`experiments/published.py`), and they are never put in the same column as
# the replica's.

# %%
import base64
import html
import json
import os

import matplotlib.pyplot as plt
import numpy as np
from IPython.display import HTML, Markdown, display

import reacher                     # first: on a headless Linux machine it selects MuJoCo's EGL backend
from experiments import claims
from experiments.claims import METRICS, all_comparisons, run_stats, span
from experiments.figures import (ROOT, VARIANT_LABELS, load_results, load_run, load_networks, plot_ablations,
                                 plot_learning_curve, plot_seeds, render_replay)
from experiments.notebook import config_docs
from experiments.published import PUBLISHED, UNITY_CALIBRATION
from experiments.run import VARIANTS
from experiments.summarize import compute_block, describe_runs
from reacher.render import to_gif

RUN_DIR = os.environ.get("REPORT_RUN_DIR", "checkpoints")    # the solving run; tests point it elsewhere
solving = load_run(RUN_DIR)
results = load_results()
cfg = solving["config"]


def cell(value) -> str:
    """A table cell: | and < escaped, so that a description such as |TD error| cannot break the table."""
    return html.escape(str(value), quote=False).replace("|", "&#124;")


def table(header, rows, escape=True):
    """A markdown table from a header and rows of cells."""
    lines = ["| " + " | ".join(header) + " |", "|" + "---|" * len(header)]
    lines += ["| " + " | ".join(cell(c) if escape else str(c) for c in row) + " |" for row in rows]
    return Markdown("\n".join(lines))


def with_arms(mean, worst, best, digits=1) -> str:
    """A score with its worst and best arm."""
    return "-" if mean is None else f"{mean:.{digits}f} ({worst:.{digits}f}, {best:.{digits}f})"


# %% [markdown]
# ## 1. The learning algorithm
#
# **DDPG** (deep deterministic policy gradient, Lillicrap et al. 2016) learns a deterministic
# policy $\mu_\theta(s)$, the *actor*, and its action-value $Q_\phi(s, a)$, the *critic*, off-policy
# from a replay buffer. The critic regresses on a bootstrapped target computed with slowly moving
# copies $\mu_{\theta'}, Q_{\phi'}$ of both networks (Polyak averaging
# $\phi' \leftarrow \tau\phi + (1-\tau)\phi'$); the actor follows the critic's action gradient,
# minimising $-Q_\phi(s, \mu_\theta(s))$. All 20 arms act with the same actor and feed one shared
# buffer. The agent makes one update on a batch after every environment step (20 transitions)
# in its first episodes and after every few steps later (`fast_episodes`, `learn_every_later`
# in the table below), and $n$ grows from 1 over the first episodes (`n_step_ramp`); both
# schedules are explained in the training notebook (sections 3.4 and 3.8).
#
# Three extensions, each tested by removing it in section 5:
#
# 1. **$n$-step targets.** The critic's target sums $n$ real rewards before bootstrapping,
#    $y_t = \sum_{k=0}^{n-1}\gamma^k r_{t+k} + \gamma^n Q_{\phi'}(s_{t+n}, \mu_{\theta'}(s_{t+n}))$,
#    so a reward reaches the critic $n$ times faster and the target leans less on the critic's
#    own early errors, at the price of more variance and an uncorrected off-policy bias: the $n-1$
#    intermediate actions came from older, noisy policies (no Retrace or tree-backup correction;
#    D4PG and Rainbow accept the same bias).
# 2. **Prioritized replay** (Schaul et al. 2016). Transition $i$ is sampled with probability
#    $P(i) = p_i / \sum_k p_k$, $p_i = (|\delta_i| + \epsilon)^\alpha$, from a sum tree; each
#    sample's squared TD error is weighted by $w_i = (N P(i))^{-\beta} / \max_j w_j$. The maximum is
#    taken over the batch, so the correction is exact only up to a per-batch scale; $\beta$ grows
#    linearly from `beta_start` to 1 over `beta_steps` environment steps (section 1.1 gives both,
#    and the $\beta$ a run solved at episode 100 stops at).
# 3. **NoisyNet** (Fortunato et al. 2018). Exploration comes from learned, factorised Gaussian
#    noise on the actor's weights, $w = \mu^w + \sigma^w \odot \varepsilon^w$, rather than from
#    noise added to actions. Here the acting noise $\varepsilon$ follows an Ornstein-Uhlenbeck
#    process in time (each $\varepsilon$ still $\mathcal{N}(0, 1)$), so a perturbed policy lasts
#    about $1/\theta$ steps, long enough to move an arm with inertia. One noise sample drives all
#    20 arms at a time (section 5 tests one sample per arm, as action noise has), the target
#    actor uses the mean weights (a departure from Fortunato et al.), and $\sigma$ learns only
#    through $-Q$, which does not reward exploring (section 1.2 shows where it went).
#
# Two further details matter. States are standardised by a running mean and variance of all
# states seen (a `Normalizer` in front of both networks, saved with them). And the Reacher's
# 1001-step limit is a clock, not a terminal state: targets bootstrap through it, and the step
# that reports `done` (whose next state already belongs to the next episode) is not stored.
# The notebook derives each piece and checks each class as it is defined.

# %% [markdown]
# ### 1.1 Hyperparameters
#
# Read from `checkpoints/config.json`, the configuration the solving run saved; the descriptions
# are the docstrings of the notebook's `Config`.

# %%
docs = config_docs()
display(table(["hyperparameter", "value", "meaning"],
              [(f"`{k}`", f"`{v}`", docs.get(k, "")) for k, v in cfg.items()]))
steps_100 = 100 * 1001                      # environment steps in 100 episodes of 1001 steps
beta_100 = min(1.0, cfg["beta_start"] + (1 - cfg["beta_start"]) * steps_100 / cfg["beta_steps"])
display(Markdown(f"$\\beta$ grows from {cfg['beta_start']} to 1 over {cfg['beta_steps']:,} steps (about "
                 f"{cfg['beta_steps'] / 1001:.0f} episodes): a run solved at episode 100 stops at "
                 f"$\\beta \\approx {beta_100:.2f}$."))

# %% [markdown]
# ### 1.2 Network architectures
#
# Rebuilt from the notebook's own classes with the saved configuration, then loaded from the
# saved weights (`load_state_dict` is strict, so a printed layer that did not match the saved
# model would fail here).

# %%
nets = load_networks(RUN_DIR)
actor, critic = nets["actor"], nets["critic"]


def layers(net):
    """One row per layer with weights: its shape, its parameters and, for a NoisyLinear, the
    learned noise scale against its initial value sigma0 / sqrt(fan_in)."""
    rows = []
    for name, module in net.named_modules():
        params = dict(module.named_parameters(recurse=False))
        if not params:
            continue
        w = params.get("weight", params.get("weight_mu"))
        sigma = params.get("weight_sigma")
        noise = (f"{sigma.abs().mean():.4f} (initial {cfg['noisy_sigma0'] * w.shape[1] ** -0.5:.4f})"
                 if sigma is not None else "-")
        rows.append((f"`{name}`", type(module).__name__, f"{w.shape[1]} -> {w.shape[0]}",
                     f"{sum(p.numel() for p in params.values()):,}", noise))
    return rows


header = ["layer", "type", "inputs -> outputs", "learned parameters", "mean sigma of the weights"]
for title, net in [("Actor", actor), ("Critic", critic)]:
    display(Markdown(f"**{title}** ({sum(p.numel() for p in net.parameters()):,} learned parameters)"))
    display(table(header, layers(net)))

# %% [markdown]
# Both networks read the state through the `Normalizer` (running mean and variance of the 33
# inputs, the standardised values clipped to $\pm 5$). The actor is three `NoisyLinear` layers
# with ReLU after the two hidden ones and $\tanh$ at the output (actions in $[-1, 1]$); acting
# without noise uses the mean weights $\mu$. The critic takes state and action concatenated at
# its input (37 values), two ReLU layers and a linear output. The last column shows how NoisyNet
# used its freedom (computed from the saved weights):

# %%
def sigma_change(net):
    """Each NoisyLinear's mean learned sigma as a share of its initial sigma0 / sqrt(fan_in)."""
    return [(name, (m.weight_sigma.abs().mean() / (cfg["noisy_sigma0"] * m.weight_mu.shape[1] ** -0.5)).item())
            for name, m in net.named_modules() if hasattr(m, "weight_sigma")]


shares = sigma_change(actor)
if shares:
    display(Markdown("By the end of training the noise scale of the actor's layers stood at "
                     + ", ".join(f"{share:.0%} (`{name}`)" for name, share in shares)
                     + " of its initial value: " + ("NoisyNet turned its own exploration down overall."
                                                    if np.mean([x for _, x in shares]) < 1 else
                                                    "NoisyNet kept or raised its exploration overall.")))

# %% [markdown]
# ## 2. Rewards per episode of the solving run
#
# The notebook's run (`checkpoints/`). The environment counts as solved when the
# average over 100 consecutive episodes of the 20-agent mean score reaches +30; "solved at
# episode $E$" means episodes $E-99, \dots, E$ average at least 30.

# %%
s = solving["summary"]
mean = solving["scores"]["mean"]
print(f"Environment: {s['environment']}; seed {s['seed']}; machine: {s['machine']}")
if s["solved_at"]:
    print(f"Solved at episode {s['solved_at']}: episodes {s['solved_at'] - 99}-{s['solved_at']} average "
          f"{solving['scores']['avg100'][s['solved_at'] - 1]:.2f}, after {s['wall_seconds_to_solve'] / 60:.1f} minutes.")
else:
    print(f"Not solved in its {s['episodes']} episodes ({s['wall_seconds'] / 60:.1f} minutes).")
print(f"First episode whose 20-agent mean reached 30: {s['first_episode_mean_30']}; "
      f"mean of the last 50 episodes: {mean[-50:].mean():.2f}.")
st = run_stats(solving, episodes=len(mean))
print(f"Each arm's own mean over all {len(mean)} episodes: worst arm {st['worst_arm_1_100']:.2f}, "
      f"best arm {st['best_arm_1_100']:.2f} (20-arm mean {st['mean_1_100']:.2f}).")
fig, ax = plt.subplots(figsize=(9, 4.5))
plot_learning_curve(solving, ax, f"Continuous_Control.ipynb: seed {s['seed']} on the built-in replica")
plt.show()

# %%
def from_episode(threshold):
    """The first episode from which every episode scores above threshold (None if the last does not)."""
    above = mean > threshold
    below = np.flatnonzero(~above)
    return None if not above[-1] else (int(below[-1]) + 2 if len(below) else 1)


lines = []
if s["solved_at"] == 100:
    lines.append(f"Solved at episode 100 is the earliest the criterion allows: the mean of the first 100 "
                 f"episodes is already {mean[:100].mean():.2f}.")
for level in (30, 35):
    start = from_episode(level)
    if start:
        lines.append(f"Every episode from episode {start} on scores above {level}.")
lines.append(f"Median episode score: {np.median(mean):.1f}.")
display(Markdown(" ".join(lines)))

# %% [markdown]
# ## 3. Across seeds
#
# The notebook's configuration for five seeds (`results/full/`), each trained until solved.
# Every score comes with its worst and best arm: an arm's score over episodes 1-100 is its own
# mean over those episodes, and without noise its mean over the 5 evaluation episodes (the
# exported policy on goals the run never saw, environment seed 10000 + seed). A mean over 20
# arms can hide one arm that fails, and these columns would show it.

# %%
full = results["full"]
full_stats = [run_stats(run) for run in full]
display(Markdown(describe_runs(full)))
display(table(["seed", "solved at episode", "first episode at 30", "mean of episodes 1-100 (worst arm, best arm)",
               "mean of episodes 91-100", "minutes to solve", "noise-free evaluation (worst arm, best arm)"],
              [[st["seed"], run["summary"]["solved_at"] or "not solved", st["first_30"] or "never",
                with_arms(st["mean_1_100"], st["worst_arm_1_100"], st["best_arm_1_100"]), f"{st['mean_91_100']:.1f}",
                f"{st['minutes']:.1f}", with_arms(st["eval"], st["eval_worst_arm"], st["eval_best_arm"], 2)]
               for run, st in zip(full, full_stats)]))
fig, ax = plt.subplots(figsize=(9, 4))
plot_seeds(full, ax)
ax.set_title(f"Full agent, {len(full)} seeds: per-episode mean (thin) and 100-episode average (thick)")
plt.show()

# %%
solved = [r["summary"]["solved_at"] for r in full]
pick = lambda key: [st[key] for st in full_stats]
firsts = [f for f in pick("first_30") if f]
shared = max(r["summary"].get("concurrent_runs", 1) for r in full)
text = (f"{sum(x is not None for x in solved)} of {len(full)} seeds solved, at episode "
        f"{span('first_30', [x for x in solved if x] or [None])}")
if min(x or 10**6 for x in solved) == 100:
    text += " (100 is the earliest the criterion allows)"
text += (f"; the 20-arm mean first reached 30 at episode {span('first_30', firsts or [None])}. Over episodes "
         f"1-100 the seeds average {span('mean_1_100', pick('mean_1_100'))}, and the worst arm of any seed "
         f"{min(pick('worst_arm_1_100')):.1f}. Without noise the exported policies score "
         f"{span('eval', pick('eval'))}, their worst arms {span('eval', pick('eval_worst_arm'))}. "
         f"A run took {span('eval', pick('minutes'))} minutes to solve"
         + (", sharing the machine's two cores with one other run." if shared == 2 else "."))
display(Markdown(text))

# %% [markdown]
# ## 4. What the replay shows: the trained arms
#
# The exported policy (the target actor, see the notebook's section 7) without noise, 300 steps
# (of 1001) from a reset on goals unseen in training,
# every 6th step. Rendered with MuJoCo's offscreen renderer when an OpenGL context exists
# (`MUJOCO_GL=egl` on a headless Linux machine), else drawn from above with matplotlib. Arms are
# blue, hands white, goals green; a still frame is in `doc/replay_frame.png`
# (`python experiments/figures.py`).

# %%
frames, replay_scores, renderer = render_replay(steps=300, every=6, nets=nets)
print(f"rendered with: {renderer}, {len(frames)} frames")
print(f"score over these 300 steps, mean of the 20 arms: {replay_scores.mean():.2f} (of at most 12.00); "
      f"worst arm {replay_scores.min():.2f}, best arm {replay_scores.max():.2f}")
# An <img> with the GIF inline: JupyterLab, nbconvert's HTML, nbviewer and GitHub all draw it.
gif = base64.b64encode(to_gif(frames, fps=12)).decode()
display(HTML(f'<img src="data:image/gif;base64,{gif}" alt="replay of the trained arms" width="480">'))

# %% [markdown]
# The same replay as a strip of stills, for renderers that show no animation:

# %%
fig, axes = plt.subplots(1, 4, figsize=(14, 2.3))
for ax, k in zip(axes, np.linspace(0, len(frames) - 1, 4).astype(int)):
    ax.imshow(frames[k])
    ax.set_title(f"step {k * 6}", fontsize=9)
    ax.axis("off")
fig.tight_layout()
plt.show()

# %% [markdown]
# ## 5. Ablations: what each extension contributes
#
# Each variant changes one thing in the full agent, all else equal (same code, same
# hyperparameters, same seeds); plain DDPG removes all three extensions. Every ablation runs
# exactly 100 episodes, solved or not; the full agent's runs are cut to their first 100
# episodes and compared on the same seeds, so every number covers the same episodes.
# "Solved by episode 100" means that episodes 1-100 average at least 30.

# %%
def change(variant):
    return ", ".join(f"`{k}={v!r}`" for k, v in VARIANTS[variant].items()) or "none (the notebook's `Config`)"


display(table(["variant", "change to `Config`"], [[VARIANT_LABELS[v], change(v)] for v in results], escape=False))

# %% [markdown]
# The table gives, for each variant, the range over its seeds from the worst to the best seed;
# next to each mean, the worst and the best arm of any of its seeds (an arm's own mean over the
# episodes, as in section 3).

# %%
paired = sorted({run["summary"]["seed"] for v, runs in results.items() if v != "full" for run in runs})
by_variant = {v: [run_stats(r) for r in runs if v != "full" or r["summary"]["seed"] in paired]
              for v, runs in results.items()}


def describe(variant, stats):
    get = lambda key: [st[key] for st in stats]
    return [VARIANT_LABELS[variant], ", ".join(str(st["seed"]) for st in stats),
            ", ".join(str(f) if f else "never" for f in get("first_30")),
            f"{span('mean_1_100', get('mean_1_100'))} ({min(get('worst_arm_1_100')):.1f}, {max(get('best_arm_1_100')):.1f})",
            span("mean_91_100", get("mean_91_100")),
            f"{sum(get('solved_by_100'))} of {len(stats)}",
            f"{span('eval', get('eval'), 2)} ({min(get('eval_worst_arm')):.2f}, {max(get('eval_best_arm')):.2f})",
            span("eval", get("minutes"))]


display(table(["variant", "seeds", "first episode at 30, per seed", "mean of episodes 1-100 (worst arm, best arm)",
               "mean of episodes 91-100", "solved by episode 100", "noise-free evaluation (worst arm, best arm)",
               "minutes"], [describe(v, st) for v, st in by_variant.items()]))
plot_ablations({v: [r for r in runs if r["summary"]["seed"] in paired] for v, runs in results.items()})
plt.show()

# %% [markdown]
# ### 5.1 What the data support
#
# Every comparison below follows one rule (`experiments/claims.py`), and a test recomputes each
# from the saved scores. A variant is compared with the full agent **seed by seed**, and called
# higher, lower, sooner or later only when it is on that side **in every pair and the two ranges
# over the seeds do not overlap**; anything else is "no clear difference", with the count of
# pairs on each side. With three seeds that rule sees only large effects: "no clear difference"
# means the effect, if any, is smaller than the seed-to-seed spread, not that there is none.

# %%
comparisons = all_comparisons({v: [r for r in runs if v != "full" or r["summary"]["seed"] in paired]
                               for v, runs in results.items()})
lines = []
for variant, cs in comparisons.items():
    lines.append(f"* **{VARIANT_LABELS[variant]}** ({change(variant)}): {claims.summary_line(cs)}.")
    lines += [f"    * {c.text}" for c in cs]
display(Markdown("\n".join(lines)))

# %% [markdown]
# How much of the gap between the full agent and plain DDPG each step explains, on the mean of
# episodes 1-100 (means over the paired seeds): removing the $n$-step target alone (the 1-step
# variant), and then prioritized replay and NoisyNet together at $n = 1$ (1-step against plain).

# %%
if {"full", "one_step", "plain"} <= set(by_variant):
    avg = {v: np.mean([st["mean_1_100"] for st in by_variant[v]]) for v in ("full", "one_step", "plain")}
    gap, nstep, rest = avg["full"] - avg["plain"], avg["full"] - avg["one_step"], avg["one_step"] - avg["plain"]
    display(Markdown(
        f"Full agent {avg['full']:.2f}, 1-step {avg['one_step']:.2f}, plain DDPG {avg['plain']:.2f}. Removing the "
        f"$n$-step target changes the mean by {-nstep:+.2f} (full to 1-step); removing prioritized replay and "
        f"NoisyNet as well, at $n = 1$, by {-rest:+.2f} (1-step to plain); all three together by {-gap:+.2f} "
        "(full to plain). These are differences of means over the seeds; section 5.1 says which of them the "
        "seeds resolve."))

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
calibration = {}
folder = os.path.join(ROOT, "results", "calibration")       # ROOT: the report may run from another folder
for name in sorted(os.listdir(folder)):
    data = json.load(open(os.path.join(folder, name)))
    calibration[data["joint_model"]] = data
chosen = next(d for d in calibration.values() if d["joint_model"] == d.get("default"))
measured = chosen["results"]
actors = [p["actor"] for p in PUBLISHED if p["actor"] in measured]
actors += [a for a in ("AnKra",) if a in measured]
u = UNITY_CALIBRATION
rows = [["random play (clipped normal actions), 20-arm mean per episode", f"{u['random_low']:.2f} to {u['random_high']:.2f}",
         f"{measured['random_normal']['mean']:.2f}"],
        ["arms that never score under random play", u["random_arms_at_zero"],
         f"{measured['random_normal']['arms_at_zero']:.0%}"]]
rows += [[f"{a}'s actor, trained on Unity: mean (worst arm, best arm)",
          f"{u['published_actors_low']:.0f} to {u['published_actors_high']:.0f} (such actors on Unity)",
          with_arms(measured[a]["mean"], measured[a]["worst_arm"], measured[a]["best_arm"])] for a in actors]
display(Markdown(f"Replica: joint model `{chosen['joint_model']}`; environment seed 777, "
                 f"{chosen['episodes']} episodes per measure; {chosen['machine']}."))
display(table(["measure", "Unity build (specification)", "built-in replica (measured)"], rows))

# %%
scores = {a: measured[a]["mean"] for a in actors}
inside = [a for a in actors if scores[a] >= u["published_actors_low"]]
outside = [a for a in actors if a not in inside]
random_mean = measured["random_normal"]["mean"]
text = (f"Random play scores {random_mean:.2f} on the replica, "
        + ("inside" if u["random_low"] <= random_mean <= u["random_high"] else "outside")
        + f" Unity's {u['random_low']:.2f} to {u['random_high']:.2f}. "
        f"{len(inside)} of {len(actors)} Unity-trained actors score {u['published_actors_low']:.0f} or more on the "
        f"replica ({', '.join(f'{a} {scores[a]:.1f}' for a in inside)})")
if outside:
    text += (f"; {', '.join(f'{a} {scores[a]:.1f}' for a in outside)} "
             f"{'scores' if len(outside) == 1 else 'score'} lower")
display(Markdown(text + "."))

# %% [markdown]
# What this means for comparing with Unity numbers:

# %%
lines = []
if len(inside) * 2 > len(actors):
    lines.append("Most policies that are good on Unity are good on the replica too, so the replica's final "
                 "scores (sections 3 and 5) are on Unity's scale, within the spread of these actors.")
else:
    lines.append("Most policies that are good on Unity score lower on the replica, so even the replica's final "
                 "scores (sections 3 and 5) may not carry over to Unity.")
if "GrayWizard" in outside:
    lines.append("GrayWizard's actor, the lowest here, was trained on the one-arm build (section 7).")
lines.append("Neither makes episode counts or minutes comparable: how fast a learner improves depends on details "
             "of the dynamics that a few trained actors do not pin down, and the machines differ. So the "
             "replica's results stay in their own table in section 7.")
display(Markdown(" ".join(lines)))

# %% [markdown]
# ## 7. Compared with published course results
#
# **Unity builds**, as printed in the students' own repositories (`experiments/published.py`).
# Course notebooks count "solved in $N$ episodes" two ways: as the episode $E$ where the
# 100-episode window that first averages 30 ends, or as $E - 100$, the episodes before that
# window. The column "solved at episode $E$" puts every row in the first convention, the one this
# project uses; "as printed" keeps the author's words.

# %%
unity_rows = [[f"[{p['author']}]({p['url']}) ({p['file']} @ {p['commit']})", p["build"], p["printed"],
               p["convention"], p["window_end"], p["wall_time"], p["hardware"]] for p in PUBLISHED]
display(table(["source", "environment", "as printed", "counting convention", "solved at episode $E$",
               "wall time", "hardware"], unity_rows, escape=False))

# %% [markdown]
# **This project, on the built-in replica** (section 3), in the same convention. A separate
# table: different physics, different machines.

# %%
display(table(["run", "environment", "solved at episode $E$", "minutes", "machine"],
              [[f"seed {st['seed']} (`results/full/`)", run["summary"]["environment"], run["summary"]["solved_at"],
                f"{st['minutes']:.1f}", run["summary"]["machine"]] for run, st in zip(full, full_stats)]
              + [["the notebook's run (`checkpoints/`)", solving["summary"]["environment"],
                  solving["summary"]["solved_at"] or "not solved",
                  f"{(solving['summary']['wall_seconds_to_solve'] or solving['summary']['wall_seconds']) / 60:.1f}",
                  solving["summary"]["machine"]]]))

# %% [markdown]
# Not a controlled comparison: one published run per author, different agents, different
# hardware, and for this project an environment that is a replica (section 6). The published
# runs show what the course's Unity build asked of a plain DDPG learner; the replica's column
# shows this agent on this project's environment. Note also that $E = 100$ is the floor: under
# the course's criterion no run can be solved earlier.

# %% [markdown]
# ## 8. Future work
#
# Each item follows from a result above; the sentences in bold are computed from the data.

# %%
verdicts = {v: {c.metric: c for c in cs} for v, cs in comparisons.items()}
ideas = []


def clearly(variant, metric, good):
    c = verdicts.get(variant, {}).get(metric)
    return c is not None and claims.better(c) is good


if "no_noise" in verdicts:
    if any(clearly("no_noise", m, False) for m in METRICS):
        ideas.append("**Without exploration noise the agent is clearly worse on "
                     + ", ".join(METRICS[m][0] for m in METRICS if clearly("no_noise", m, False))
                     + ".** Exploration matters here; the open question is which kind, and how much of it "
                       "NoisyNet keeps as its learned noise scale falls (section 1.2).")
    else:
        ideas.append("**Without any exploration noise the agent is not clearly worse on any measure.** Twenty arms "
                     "chasing moving goals may explore for the agent; more seeds would tell whether a small "
                     "difference hides under the spread, and whether the noise is worth its cost.")
for variant in ("action_noise", "per_arm_noise"):
    if variant in verdicts:
        worse = [METRICS[m][0] for m in METRICS if clearly(variant, m, False)]
        good = [METRICS[m][0] for m in METRICS if clearly(variant, m, True)]
        label = VARIANT_LABELS[variant]
        if good:
            ideas.append(f"**{label} is clearly better than the full agent on {', '.join(good)}.** "
                         "A candidate for the default, after more seeds.")
        elif worse:
            ideas.append(f"**{label} is clearly worse on {', '.join(worse)}.**")
consistent = {v: [METRICS[m][0] for m, c in cs.items() if claims.better(c) is None and not c.apart
                   and (c.below if METRICS[m][1] < 0 else c.above) == len(c.seeds)]
              for v, cs in verdicts.items()}
consistent = {v: names for v, names in consistent.items() if names}
if consistent:
    ideas.append("**Better in every seed pair, but inside the seed-to-seed spread:** "
                 + "; ".join(f"{VARIANT_LABELS[v]} on {', '.join(names)}" for v, names in consistent.items())
                 + ". Too few seeds to call these (section 5.1); they are the first candidates for more seeds.")
if "uniform" in verdicts and not any(clearly("uniform", m, False) for m in METRICS):
    ideas.append("**Uniform replay is not clearly worse than prioritized replay on any measure.** Prioritized "
                 "replay costs a sum tree and a priority update on every learning step; either show a gain "
                 "with more seeds or a larger $\\alpha$, or drop it.")
steps = [v for v in ("one_step", "n3", "n10") if v in verdicts]
if steps:
    parts = [f"{VARIANT_LABELS[v]}: {claims.summary_line(list(verdicts[v].values()))}" for v in steps]
    ideas.append(f"**The choice of $n$** against the full agent's $n = {cfg['n_step']}$: " + "; ".join(parts)
                 + ". $\\lambda$-returns over the stored windows would average over $n$ instead of choosing it.")
ablation_runs = [r for v, runs in results.items() if v != "full" for r in runs]
if ablation_runs:
    per_run = np.mean([r["summary"]["wall_seconds"] for r in ablation_runs]) / 3600
    ideas.append(f"**More seeds for the small effects.** {len(paired)} seeds resolve only differences larger than "
                 f"the seed-to-seed spread; ten seeds for each of the {len(results) - 1} variants would take about "
                 f"{10 * (len(results) - 1) * per_run:.0f} hours of training at the rate of section 5's runs.")
if all(r["summary"]["solved_at"] == 100 for r in full):
    ideas.append("**A criterion that sees early learning.** Every full run is solved at episode 100, the earliest "
                 f"the criterion allows, though its 20-arm mean first reached 30 at episode "
                 f"{span('first_30', firsts or [None])} (section 3); the noise-free score of the policy saved after "
                 "each episode would show when it is really good.")
ideas.append("**One run on a Unity build.** The replica's fidelity is measured with trained actors "
             "(section 6), not with learning; a Unity run of this agent would say whether its episode counts "
             "carry over.")
display(Markdown("\n".join(f"* {idea}" for idea in ideas)))

# %% [markdown]
# ## 9. Compute
#
# The training behind this report, summed from every run's saved wall time:

# %%
display(Markdown(compute_block()))
