"""Report.ipynb's tables, figures and computed sentences, built from saved runs (never trains).

The report is a sequence of short calls to this module: each builder takes runs as
`continuous_control.results.load_run` returns them (or `load_results`'s {variant: [runs]}) and
returns Markdown text, or a matplotlib figure; `show` displays Markdown in the notebook. Every
number the report states is computed here or in experiments/claims.py, from the files.

    run, results = load_run("checkpoints"), load_results()
    show(hyperparameter_table(run["config"]), beta_sentence(run["config"]))
    show(seeds_table(results["full"]), seeds_text(results["full"]))
    show(ablation_table(results), comparison_lines(results), future_work(results, run["config"]))

Where the full agent is set against the ablations, it is cut to the ablations' seeds (`paired`),
and each comparison pairs seed k with seed k (experiments/claims.py).
"""
import ast
import base64
import glob
import inspect
import json
import os

import numpy as np

import reacher  # noqa: F401  (first: on a headless Linux machine it selects MuJoCo's EGL backend)
from continuous_control.figures import history_of, plot_ablations, plot_diagnostics, plot_scores, plot_seeds, q_reference
from continuous_control.results import ROOT, TARGET_SCORE, WINDOW, first_episode_at
from continuous_control.variants import CHANGES, LABELS, VARIANTS
from experiments import claims
from experiments.claims import METRICS, all_comparisons, run_stats, span
from experiments.published import PUBLISHED, UNITY_CALIBRATION
from experiments.tables import markdown_table
from reacher.physics import FRAMES_PER_STEP, MAX_STEPS, REWARD_PER_FRAME

AGENT = os.path.join(ROOT, "continuous_control", "agent.py")
CALIBRATION = os.path.join(ROOT, "results", "calibration")
REPLAY_STEPS, REPLAY_EVERY = 300, 6          # section 4: 300 steps from a reset, a frame every 6th step
NOT_ACTORS = ("random_normal", "random_uniform", "scripted")    # calibration measures that are no actor


def show(*parts: str) -> None:
    """Display each non-empty part as Markdown (in a notebook)."""
    from IPython.display import Markdown, display
    for part in parts:
        if part:
            display(Markdown(part))


def with_arms(mean, worst, best, digits: int = 1) -> str:
    """A score with its worst and best arm: "35.8 (35.6, 36.1)"; "-" for no score."""
    return "-" if mean is None else f"{mean:.{digits}f} ({worst:.{digits}f}, {best:.{digits}f})"


def change(variant: str) -> str:
    """What a variant changes in `Config`, as code: "`n_step=1`, `alpha=0.0`"."""
    return ", ".join(f"`{k}={v!r}`" for k, v in CHANGES[variant].items()) or "none (the notebook's `Config`)"


# --- 1.1 Hyperparameters ---------------------------------------------------------------------

def config_docs(path: str = AGENT) -> dict:
    """{field: docstring} of the agent's `Config` dataclass (a docstring under each field), read
    with `ast` from continuous_control/agent.py, the agent exported from the notebook."""
    tree = ast.parse(open(path).read())
    body = next(n for n in ast.walk(tree) if isinstance(n, ast.ClassDef) and n.name == "Config").body
    return {field.target.id: doc.value.value
            for field, doc in zip(body, body[1:])
            if isinstance(field, ast.AnnAssign) and isinstance(doc, ast.Expr) and isinstance(doc.value, ast.Constant)}


def hyperparameter_table(cfg: dict, docs: dict = None) -> str:
    """One row per saved hyperparameter: name, value, and the docstring of its `Config` field."""
    docs = config_docs() if docs is None else docs
    return markdown_table(["hyperparameter", "value", "meaning"],
                          [(f"`{k}`", f"`{v}`", docs.get(k, "(not a field of the current `Config`)"))
                           for k, v in cfg.items()])


def beta_at(cfg: dict, steps: int) -> float:
    """The importance-sampling exponent after `steps` environment steps (linear from beta_start to 1)."""
    return min(1.0, cfg["beta_start"] + (1 - cfg["beta_start"]) * steps / cfg["beta_steps"])


def beta_sentence(cfg: dict) -> str:
    """How far beta gets in a run solved at episode 100."""
    return (f"$\\beta$ grows from {cfg['beta_start']} to 1 over {cfg['beta_steps']:,} steps (about "
            f"{cfg['beta_steps'] / MAX_STEPS:.0f} episodes): a run solved at episode {WINDOW} stops at "
            f"$\\beta \\approx {beta_at(cfg, WINDOW * MAX_STEPS):.2f}$.")


# --- 1.2 Architectures -----------------------------------------------------------------------

def layer_rows(net, sigma0: float) -> list:
    """One row per layer with weights: its shape, its parameters and, for a NoisyLinear, the
    learned noise scale against its initial value sigma0 / sqrt(fan_in)."""
    rows = []
    for name, module in net.named_modules():
        params = dict(module.named_parameters(recurse=False))
        if not params:
            continue
        w = params.get("weight", params.get("weight_mean"))
        sigma = params.get("weight_sigma")
        noise = f"{sigma.abs().mean():.4f} (initial {sigma0 * w.shape[1] ** -0.5:.4f})" if sigma is not None else "-"
        rows.append((f"`{name}`", type(module).__name__, f"{w.shape[1]} -> {w.shape[0]}",
                     f"{sum(p.numel() for p in params.values()):,}", noise))
    return rows


def architecture_tables(nets: dict, cfg: dict) -> str:
    """The actor's and the critic's layers, each under its title with its count of learned parameters."""
    header = ["layer", "type", "inputs -> outputs", "learned parameters", "mean sigma of the weights"]
    parts = []
    for title, net in [("Actor", nets["actor"]), ("Critic", nets["critic"])]:
        parts.append(f"**{title}** ({sum(p.numel() for p in net.parameters()):,} learned parameters)\n\n"
                     + markdown_table(header, layer_rows(net, cfg["noisy_sigma0"])))
    return "\n\n".join(parts)


def sigma_shares(net, sigma0: float) -> list:
    """(name, share) for each NoisyLinear: its mean learned sigma over its initial sigma0 / sqrt(fan_in)."""
    return [(name, (m.weight_sigma.abs().mean() / (sigma0 * m.weight_mean.shape[1] ** -0.5)).item())
            for name, m in net.named_modules() if hasattr(m, "weight_sigma")]


def sigma_sentence(nets: dict, cfg: dict) -> str:
    """Where NoisyNet's learned noise scale ended, layer by layer, and which way overall."""
    shares = sigma_shares(nets["actor"], cfg["noisy_sigma0"])
    if not shares:
        return f"This actor has no noisy layers (exploration `{cfg.get('exploration', 'noisynet')}`)."
    overall = ("NoisyNet turned its own exploration down overall." if np.mean([x for _, x in shares]) < 1
               else "NoisyNet kept or raised its exploration overall.")
    return ("By the end of training the noise scale of the actor's layers stood at "
            + ", ".join(f"{share:.0%} (`{name}`)" for name, share in shares) + " of its initial value: " + overall)


# --- 2. The solving run ----------------------------------------------------------------------

def solving_run_text(run: dict) -> str:
    """Where the run was made, when it was solved (or not), and its worst and best arm."""
    s, mean = run["summary"], run["scores"]["mean"]
    lines = [f"Environment: {s['environment']}; seed {s['seed']}; machine: {s['machine']}."]
    solved = s["solved_at"]
    if solved:
        lines.append(f"Solved at episode {solved}: episodes {solved - WINDOW + 1}-{solved} average "
                     f"{run['scores']['avg100'][solved - 1]:.2f}, after {s['wall_seconds_to_solve'] / 60:.1f} minutes.")
    else:
        lines.append(f"Not solved in its {len(mean)} episodes ({s['wall_seconds'] / 60:.1f} minutes).")
    last = min(50, len(mean))
    lines.append(f"First episode whose 20-arm mean reached {TARGET_SCORE:g}: {first_episode_at(mean) or 'none'}; "
                 f"mean of the last {last} episodes: {np.mean(mean[-last:]):.2f}.")
    st = run_stats(run, episodes=len(mean))
    lines.append(f"Each arm's own mean over all {len(mean)} episodes: worst arm {st['worst_arm_1_100']:.2f}, "
                 f"best arm {st['best_arm_1_100']:.2f} (20-arm mean {st['mean_1_100']:.2f}).")
    return "\n".join(f"* {line}" for line in lines)


def solving_run_figure(run: dict):
    """The run's learning curve: per-episode mean, worst-best arm band, 100-episode average."""
    import matplotlib.pyplot as plt
    fig, ax = plt.subplots(figsize=(9, 4.5))
    plot_scores(history_of(run), ax, f"Continuous_Control.ipynb: seed {run['summary']['seed']} on the built-in replica")
    return fig


def from_episode(means, threshold: float):
    """The first episode from which every episode scores above threshold (None if the last does not)."""
    above = np.asarray(means) > threshold
    below = np.flatnonzero(~above)
    return None if not above[-1] else (int(below[-1]) + 2 if len(below) else 1)


def diagnostics_figure(run: dict):
    """The run's diagnostics per episode (continuous_control.figures.plot_diagnostics), or None."""
    if "diagnostics" not in run:
        return None
    reference = q_reference(run["scores"]["mean"], run["config"]["gamma"])
    return plot_diagnostics(run["diagnostics"], "What learning saw, per episode", reference)


def levels_text(run: dict) -> str:
    """How early the run was good: the earliest-solve note, the episodes above 30 and 35, the median."""
    mean, lines = run["scores"]["mean"], []
    if run["summary"]["solved_at"] == WINDOW:
        lines.append(f"Solved at episode {WINDOW} is the earliest the criterion allows: the mean of the first "
                     f"{WINDOW} episodes is already {np.mean(mean[:WINDOW]):.2f}.")
    for level in (TARGET_SCORE, TARGET_SCORE + 5):
        start = from_episode(mean, level)
        if start:
            lines.append(f"Every episode from episode {start} on scores above {level:g}.")
    lines.append(f"Median episode score: {np.median(mean):.1f}.")
    return " ".join(lines)


def last_fast_episode(run: dict) -> int:
    """The run's last episode that learned every step: its configuration's `fast_episodes`."""
    return run["config"].get("fast_episodes", 20)


def later_episodes(run: dict):
    """The mask of the diagnostics' episodes after the fast ones (once the buffer holds many
    episodes), or None for a run without diagnostics or without such episodes."""
    d = run.get("diagnostics")
    later = None if d is None else d["episode"] > last_fast_episode(run)
    return later if later is not None and later.any() else None


def diagnostics_text(run: dict) -> str:
    """Are new transitions replayed more often than old ones? The share of sampled transitions that
    were added in the last 1000 insertions (about one episode) against their share of the buffer,
    averaged over the episodes after the fast ones; and the never-replayed backlog at the end.
    Empty for a run without diagnostics."""
    later = later_episodes(run)
    if later is None:
        return ""
    d = run["diagnostics"]
    sampled, stored = float(np.mean(d["young_share"][later])), float(np.mean(d["young_share_stored"][later]))
    first, last = int(d["episode"][later][0]), int(d["episode"][later][-1])
    text = (f"Over episodes {first}-{last}, {sampled:.1%} of the sampled transitions had been added in the last 1000 "
            f"insertions (about one episode), against {stored:.1%} of the buffer: ")
    ratio = sampled / stored if stored else float("inf")
    window = run["config"].get("priority_window", 0)
    entry = f"the largest priority of the last {window} updates" if window else "the largest priority so far"
    text += (f"new transitions were replayed {ratio:.1f} times as often as their share, as each enters at "
             f"{entry} ({d['max_priority'][-1]:.3f} at the end, against a mean |TD error| of "
             f"{float(np.mean(d['td_abs'][later])):.3f} in those episodes)." if ratio > 1.5 else
             f"new transitions were replayed about as often as their share ({ratio:.1f} times).")
    if "unreplayed_mass" in d:
        text += (f" At episode {int(d['episode'][-1])}, {d['unreplayed_share'][-1]:.1%} of the stored transitions had "
                 f"never been replayed, and they held {d['unreplayed_mass'][-1]:.1%} of the sampling probability.")
    return text


def young_replay(run: dict):
    """(sampled young share / stored young share, a new transition's priority at the end) over the
    episodes after the fast ones; None without diagnostics."""
    later = later_episodes(run)
    if later is None:
        return None
    d = run["diagnostics"]
    return float(np.mean(d["young_share"][later]) / np.mean(d["young_share_stored"][later])), float(d["max_priority"][-1])


def priority_text(results: dict) -> str:
    """The largest-priority question, settled on the seeds of both rules: how much more often new
    transitions were replayed than their share, a new transition's final priority, then the scores'
    verdict by the claims rule (the full agent is the recent-window rule)."""
    if not {"full", "all_time_max_priority"} <= set(results):
        return "(needs results of the full agent and of `all_time_max_priority`)"
    pair = {v: results[v] for v in ("full", "all_time_max_priority")}
    lines = []
    for variant in ("all_time_max_priority", "full"):
        runs = [r for r in pair[variant] if young_replay(r) is not None]
        if not runs:
            continue
        ratios, entry = zip(*map(young_replay, runs))
        td = [float(r["diagnostics"]["td_abs"][-1]) for r in runs]
        if not all(np.isfinite(x) and x > 0 for x in td):
            raise ValueError(f"{LABELS[variant]}: the last episode's mean |δ| is {td}; a run with no update in it?")
        # Sampling goes as p^alpha: how many times as often a new transition is drawn as one at that mean.
        drawn = [(e / (x + r["config"]["priority_offset"])) ** r["config"]["alpha"] for e, x, r in zip(entry, td, runs)]
        rule = (change(variant) if variant != "full" else f"`priority_window={runs[0]['config'].get('priority_window', 0)}`")
        ends = sorted({last_fast_episode(r) for r in runs})
        line = (f"* {LABELS[variant]} ({rule}): after episode {'/'.join(map(str, ends))} (the last fast one), new "
                f"transitions were replayed {span('eval', ratios)} times their share of the buffer; a new transition's "
                f"priority at the end, {span('eval', entry, 3)}, had it drawn {span('eval', drawn)} times as often as a "
                f"transition at the last episode's mean |δ| in the sampled batches")
        mass = [r["diagnostics"]["unreplayed_mass"][-1] for r in runs if "unreplayed_mass" in r["diagnostics"]]
        if mass:
            line += (f"; transitions never replayed held {span('eval', [100 * m for m in mass], 0)}% of the sampling "
                     f"probability at the end")
        lines.append(line + f" (seeds {', '.join(str(r['summary']['seed']) for r in runs)}).")
    return "\n".join(lines + ["", comparison_lines(pair)])


# --- 3. Across seeds -------------------------------------------------------------------------

def seeds_table(runs: list) -> str:
    """One row per seed: solve episode, first episode at 30, scores with their worst and best arm, minutes."""
    rows = []
    for run in runs:
        st = run_stats(run)
        rows.append([st["seed"], run["summary"]["solved_at"] or "not solved", st["first_30"] or "never",
                     with_arms(st["mean_1_100"], st["worst_arm_1_100"], st["best_arm_1_100"]),
                     f"{st['mean_91_100']:.1f}", f"{st['minutes']:.1f}",
                     with_arms(st["eval"], st["eval_worst_arm"], st["eval_best_arm"], 2)])
    return markdown_table(["seed", "solved at episode", "first episode at 30",
                           "mean of episodes 1-100 (worst arm, best arm)", "mean of episodes 91-100",
                           "minutes to solve", "noise-free evaluation (worst arm, best arm)"], rows)


def seeds_text(runs: list) -> str:
    """The seeds in one paragraph: how many solved and when, their scores and worst arms, their minutes."""
    stats = [run_stats(run) for run in runs]
    pick = lambda key: [st[key] for st in stats if st[key] is not None] or [None]
    solved = [r["summary"]["solved_at"] for r in runs]
    text = (f"{sum(x is not None for x in solved)} of {len(runs)} seeds solved, at episode "
            f"{span('first_30', [x for x in solved if x] or [None])}")
    if min(x or 10**6 for x in solved) == WINDOW:
        text += f" ({WINDOW} is the earliest the criterion allows)"
    text += (f"; the 20-arm mean first reached 30 at episode {span('first_30', pick('first_30'))}. Over episodes "
             f"1-100 the seeds average {span('mean_1_100', pick('mean_1_100'))}, and the worst arm of any seed "
             f"{min(pick('worst_arm_1_100')):.1f}.")
    if pick("eval") != [None]:
        text += (f" Without noise the exported policies score {span('eval', pick('eval'))}, their worst arms "
                 f"{span('eval', pick('eval_worst_arm'))}.")
    return text + f" {minutes_by_sharing(runs)}"


def minutes_by_sharing(runs: list) -> str:
    """Minutes to solve, a range for each number of runs that shared the machine (not comparable across)."""
    groups = {}
    for run in runs:
        groups.setdefault(run["summary"].get("concurrent_runs", 1), []).append(run)
    parts = [f"{span('eval', [run_stats(r)['minutes'] for r in rs])} minutes "
             f"{'alone' if k == 1 else f'{k} runs at a time'} (seed{'s' if len(rs) > 1 else ''} "
             f"{', '.join(str(r['summary']['seed']) for r in rs)})" for k, rs in sorted(groups.items())]
    return "A run took " + " and ".join(parts) + "."


def seeds_figure(runs: list):
    """Every seed's per-episode mean and 100-episode average."""
    import matplotlib.pyplot as plt
    fig, ax = plt.subplots(figsize=(9, 4))
    plot_seeds(runs, ax)
    ax.set_title(f"Full agent, {len(runs)} seeds: per-episode mean (thin) and 100-episode average (thick)")
    return fig


# --- 4. Replay -------------------------------------------------------------------------------

def replay(nets: dict):
    """The exported policy (target actor, no noise) on unseen goals: frames, each arm's score, renderer."""
    from continuous_control.replay import policy_of, render_replay
    return render_replay(policy_of(nets), steps=REPLAY_STEPS, every=REPLAY_EVERY)


def replay_text(frames: list, scores, renderer: str) -> str:
    """The renderer, the frames, and the arms' scores over the replayed steps against the most possible."""
    most = REPLAY_STEPS * FRAMES_PER_STEP * float(REWARD_PER_FRAME)
    return (f"rendered with: {renderer}, {len(frames)} frames\n"
            f"score over these {REPLAY_STEPS} steps, mean of the 20 arms: {scores.mean():.2f} (of at most "
            f"{most:.2f}); worst arm {scores.min():.2f}, best arm {scores.max():.2f}")


def gif_html(frames: list, fps: float = 12) -> str:
    """An <img> with the replay as an inline GIF: JupyterLab, nbconvert's HTML, nbviewer and GitHub draw it."""
    from reacher.render import to_gif
    gif = base64.b64encode(to_gif(frames, fps=fps)).decode()
    return f'<img src="data:image/gif;base64,{gif}" alt="replay of the trained arms" width="480">'


def stills_figure(frames: list, count: int = 4):
    """`count` frames of the replay side by side, each titled with its step."""
    import matplotlib.pyplot as plt
    fig, axes = plt.subplots(1, count, figsize=(3.5 * count, 2.3))
    for ax, k in zip(np.atleast_1d(axes), np.linspace(0, len(frames) - 1, count).astype(int)):
        ax.imshow(frames[k])
        ax.set_title(f"step {k * REPLAY_EVERY}", fontsize=9)
        ax.axis("off")
    fig.tight_layout()
    return fig


# --- 5. Ablations ----------------------------------------------------------------------------

def paired(results: dict) -> dict:
    """The results with the full agent cut to the seeds the ablations ran (all of its runs if
    there is no ablation)."""
    seeds = {run["summary"]["seed"] for v, runs in results.items() if v != "full" for run in runs}
    if not seeds:
        return dict(results)
    cut = {v: [r for r in runs if v != "full" or r["summary"]["seed"] in seeds] for v, runs in results.items()}
    return {v: runs for v, runs in cut.items() if runs}


def variants_table(results: dict) -> str:
    """Every variant of continuous_control.variants: its change to `Config` and the seeds it ran."""
    rows = [[LABELS[v], change(v),
             ", ".join(str(r["summary"]["seed"]) for r in results.get(v, [])) or "not run yet"] for v in VARIANTS]
    return markdown_table(["variant", "change to `Config`", "seeds in `results/`"], rows, escape=False)


def ablation_row(variant: str, runs: list) -> list:
    """A variant's row: seeds, first episode at 30 per seed, ranges over the seeds, worst and best arms."""
    stats = [run_stats(r) for r in runs]
    get = lambda key: [st[key] for st in stats]
    evals = [st for st in stats if st["eval"] is not None]
    evaluation = ("-" if not evals else
                  f"{span('eval', [st['eval'] for st in evals], 2)} ({min(st['eval_worst_arm'] for st in evals):.2f}, "
                  f"{max(st['eval_best_arm'] for st in evals):.2f})")
    return [LABELS[variant], ", ".join(str(st["seed"]) for st in stats),
            ", ".join(str(f) if f else "never" for f in get("first_30")),
            f"{span('mean_1_100', get('mean_1_100'))} ({min(get('worst_arm_1_100')):.1f}, "
            f"{max(get('best_arm_1_100')):.1f})",
            span("mean_91_100", get("mean_91_100")), f"{sum(get('solved_by_100'))} of {len(stats)}",
            evaluation, span("eval", get("minutes")) + f" ({claims.sharing(runs)})"]


def ablation_table(results: dict) -> str:
    """One row per variant with results, the full agent on the ablations' seeds."""
    if not any(v != "full" for v in results):
        return "(no ablation results yet: `make experiments`)"
    return markdown_table(["variant", "seeds", "first episode at 30, per seed",
                           "mean of episodes 1-100 (worst arm, best arm)", "mean of episodes 91-100",
                           "solved by episode 100", "noise-free evaluation (worst arm, best arm)",
                           "minutes (runs sharing the machine; compare only like with like)"],
                          [ablation_row(v, runs) for v, runs in paired(results).items()])


def interval_table(results: dict, metric: str = claims.PRIMARY) -> str:
    """The paired differences from the full agent on one measure (the primary by default), with their intervals."""
    rows = claims.interval_rows(paired(results), metric)
    return markdown_table(claims.INTERVAL_HEADER, [[LABELS[r[0]]] + r[1:] for r in rows]) if rows else "(no ablation results yet)"


def interval_figure(results: dict, metric: str = claims.PRIMARY):
    """Each variant's mean paired difference from the full agent with its 95% interval, uncorrected (thin)
    and corrected (thick): a verdict where the thick bar misses zero."""
    import matplotlib.pyplot as plt
    family = [p for p in claims.paired_family(paired(results), metric) if p.verdict != claims.TOO_FEW]
    fig, ax = plt.subplots(figsize=(8, 0.4 * len(family) + 1.2))
    for y, p in enumerate(family):
        ax.plot(p.corrected, [y, y], color="C0", lw=4, alpha=0.5)
        ax.plot(p.interval, [y, y], color="k", lw=1)
        ax.plot(p.mean, y, "ko", ms=4)
    ax.axvline(0, color="k", lw=0.8, ls="--")
    ax.invert_yaxis()
    ax.set_yticks(range(len(family)), [f"{LABELS[p.variant]} ({len(p.seeds)} seeds)" for p in family], fontsize=8)
    ax.set_xlabel(f"{METRICS[metric][0]}: variant minus full agent, paired by seed")
    ax.set_title("Mean paired difference, 95% interval (thin) and corrected for the family (thick)", fontsize=9)
    return fig


def ablation_figure(results: dict):
    """One panel per ablation against the full agent on the ablation's own seeds."""
    return plot_ablations(results)


def comparison_lines(results: dict) -> str:
    """Each variant's verdict against the full agent, then every metric's comparison, by claims' rule."""
    lines, comparisons = [], all_comparisons(paired(results))
    for variant, cs in comparisons.items():
        lines.append(f"* **{LABELS[variant]}** ({change(variant)}): {claims.summary_line(cs)}.")
        lines += [f"    * {c.text}" for c in cs]
    if not lines:
        return "(no ablation results yet: `make experiments`)"
    return claims.rule_sentence(comparisons) + "\n\n" + "\n".join(lines)


def mean_over_seeds(results: dict, variant: str) -> float:
    """The mean of episodes 1-100, averaged over the variant's paired seeds."""
    return float(np.mean([run_stats(r)["mean_1_100"] for r in paired(results)[variant]]))


def gap_decomposition(results: dict) -> str:
    """The gap from the full agent to plain DDPG, split at the 1-step variant (means over the paired seeds)."""
    if not {"full", "one_step", "plain"} <= set(results):
        return "(needs the full agent, the 1-step variant and plain DDPG in `results/`)"
    full, one, plain = (mean_over_seeds(results, v) for v in ("full", "one_step", "plain"))
    return (f"Full agent {full:.2f}, 1-step {one:.2f}, plain DDPG {plain:.2f}. Removing the $n$-step target changes "
            f"the mean by {one - full:+.2f} (full to 1-step); removing prioritized replay and NoisyNet as well, at "
            f"$n = 1$, by {plain - one:+.2f} (1-step to plain); all three together by {plain - full:+.2f} (full to "
            "plain). These are differences of means over the seeds; section 5.1 says which of them the seeds resolve.")


# --- 6. Fidelity -----------------------------------------------------------------------------

def calibration(folder: str = CALIBRATION) -> dict:
    """The measures of the chosen joint model (the replica's default) from results/calibration/."""
    runs = [json.load(open(p)) for p in sorted(glob.glob(os.path.join(folder, "*.json")))]
    return next(r for r in runs if r["joint_model"] == r.get("default"))


def calibration_actors(measured: dict) -> list:
    """The measured Unity-trained actors: the published ones first (section 7's order), then the others."""
    actors = [k for k in measured if k not in NOT_ACTORS]
    published = [p["actor"] for p in PUBLISHED if p["actor"] in actors]
    return published + [a for a in actors if a not in published]


def calibration_table(folder: str = CALIBRATION) -> str:
    """The replica's random play and Unity-trained actors next to the Unity build's specification."""
    from benchmarks.calibration import measure
    chosen = calibration(folder)
    measured, u = chosen["results"], UNITY_CALIBRATION
    rows = [["random play (clipped normal actions), 20-arm mean per episode",
             f"{u['random_low']:.2f} to {u['random_high']:.2f}", f"{measured['random_normal']['mean']:.2f}"],
            ["arms that never score under random play", u["random_arms_at_zero"],
             f"{measured['random_normal']['arms_at_zero']:.0%}"]]
    rows += [[f"{a}'s actor, trained on Unity: mean (worst arm, best arm)",
              f"{u['published_actors_low']:.0f} to {u['published_actors_high']:.0f} (such actors on Unity)",
              with_arms(measured[a]["mean"], measured[a]["worst_arm"], measured[a]["best_arm"])]
             for a in calibration_actors(measured)]
    seed = inspect.signature(measure).parameters["seed"].default          # the seed the measures ran on
    return (f"Replica: joint model `{chosen['joint_model']}`; environment seed {seed}, {chosen['episodes']} episodes "
            f"per measure; {chosen['machine']}.\n\n"
            + markdown_table(["measure", "Unity build (specification)", "built-in replica (measured)"], rows))


def calibration_split(folder: str = CALIBRATION) -> tuple:
    """(scores, actors at or above Unity's low end, actors below it), from the chosen joint model."""
    measured = calibration(folder)["results"]
    actors = calibration_actors(measured)
    scores = {a: measured[a]["mean"] for a in actors}
    inside = [a for a in actors if scores[a] >= UNITY_CALIBRATION["published_actors_low"]]
    return scores, inside, [a for a in actors if a not in inside]


def calibration_text(folder: str = CALIBRATION) -> str:
    """Random play against Unity's range, and how many Unity-trained actors score as on Unity."""
    u, random_mean = UNITY_CALIBRATION, calibration(folder)["results"]["random_normal"]["mean"]
    scores, inside, outside = calibration_split(folder)
    text = (f"Random play scores {random_mean:.2f} on the replica, "
            + ("inside" if u["random_low"] <= random_mean <= u["random_high"] else "outside")
            + f" Unity's {u['random_low']:.2f} to {u['random_high']:.2f}. {len(inside)} of {len(scores)} "
            f"Unity-trained actors score {u['published_actors_low']:.0f} or more on the replica "
            f"({', '.join(f'{a} {scores[a]:.1f}' for a in inside)})")
    if outside:
        text += f"; {', '.join(f'{a} {scores[a]:.1f}' for a in outside)} {'scores' if len(outside) == 1 else 'score'} lower"
    return text + "."


def calibration_consequences(folder: str = CALIBRATION) -> str:
    """What the calibration means for comparing with Unity numbers."""
    scores, inside, outside = calibration_split(folder)
    if len(inside) * 2 > len(scores):
        lines = ["Most policies that are good on Unity are good on the replica too, so the replica's final "
                 "scores (sections 3 and 5) are on Unity's scale, within the spread of these actors."]
    else:
        lines = ["Most policies that are good on Unity score lower on the replica, so even the replica's final "
                 "scores (sections 3 and 5) may not carry over to Unity."]
    lowest = min(scores, key=scores.get) if scores else None
    for p in PUBLISHED:                              # an actor trained on another build than the 20-arm one
        if p["actor"] in outside and "1 arm" in p["build"]:
            where = "the lowest here" if p["actor"] == lowest else "below Unity's range here"
            lines.append(f"{p['actor']}'s actor, {where}, was trained on the one-arm build (section 7).")
    lines.append("Neither makes episode counts or minutes comparable: how fast a learner improves depends on details "
                 "of the dynamics that a few trained actors do not pin down, and the machines differ. So the "
                 "replica's results stay in their own table in section 7.")
    return " ".join(lines)


# --- 7. Published results --------------------------------------------------------------------

def published_table() -> str:
    """The course students' runs on Unity builds, as printed, each with its counting convention."""
    rows = [[f"[{p['author']}]({p['url']}) ({p['file']} @ {p['commit']})", p["build"], p["printed"],
             p["convention"], p["window_end"], p["wall_time"], p["hardware"]] for p in PUBLISHED]
    return markdown_table(["source", "environment", "as printed", "counting convention", "solved at episode $E$",
                           "wall time", "hardware"], rows, escape=False)


def replica_table(runs: list, solving: dict) -> str:
    """This project's runs on the replica, in the same convention: the seeds, then the notebook's run."""
    rows = [[f"seed {run['summary']['seed']} (`results/full/`)", run["summary"]["environment"],
             run["summary"]["solved_at"] or "not solved", f"{run_stats(run)['minutes']:.1f}", run["summary"]["machine"]]
            for run in runs]
    s = solving["summary"]
    rows.append([f"the notebook's run (`{solving['dir']}/`)", s["environment"], s["solved_at"] or "not solved",
                 f"{(s['wall_seconds_to_solve'] or s['wall_seconds']) / 60:.1f}", s["machine"]])
    return markdown_table(["run", "environment", "solved at episode $E$", "minutes", "machine"], rows)


# --- 8. Future work --------------------------------------------------------------------------

def future_work(results: dict, cfg: dict) -> str:
    """The future-work items as a Markdown list, each following from a comparison by claims' rule
    (bold: computed from the data)."""
    verdicts = {v: {c.metric: c for c in cs} for v, cs in all_comparisons(paired(results)).items()
                if any(c.verdict != claims.TOO_FEW for c in cs)}       # too few seeds: nothing to build on yet
    names = lambda variant, good: [METRICS[m][0] for m, c in verdicts.get(variant, {}).items()
                                   if claims.better(c) is good]
    ideas = []
    if "no_noise" in verdicts:
        if names("no_noise", False):
            ideas.append(f"**Without exploration noise the agent is clearly worse on {', '.join(names('no_noise', False))}.** "
                         "Exploration matters here; the open question is which kind, and how much of it NoisyNet "
                         "keeps as its learned noise scale falls (section 1.2).")
        else:
            ideas.append("**Without any exploration noise the agent is not clearly worse on any measure.** Twenty arms "
                         "chasing moving goals may explore for the agent; more seeds would tell whether a small "
                         "difference hides under the spread, and whether the noise is worth its cost.")
    for variant in ("action_noise", "per_arm_noise"):
        if names(variant, True):
            ideas.append(f"**{LABELS[variant]} is clearly better than the full agent on {', '.join(names(variant, True))}.** "
                         "A candidate for the default, after more seeds.")
        elif names(variant, False):
            ideas.append(f"**{LABELS[variant]} is clearly worse on {', '.join(names(variant, False))}.**")
    consistent = {v: [METRICS[m][0] for m, c in cs.items() if claims.better(c) is None
                      and (c.below if METRICS[m][1] < 0 else c.above) == len(c.seeds)] for v, cs in verdicts.items()}
    consistent = {v: found for v, found in consistent.items() if found}
    if consistent:
        ideas.append("**Better in every seed pair, but inside the seed-to-seed spread:** "
                     + "; ".join(f"{LABELS[v]} on {', '.join(found)}" for v, found in consistent.items())
                     + ". Too few seeds to call these (section 5.1); they are the first candidates for more seeds.")
    if "uniform" in verdicts and not names("uniform", False):
        ideas.append("**Uniform replay is not clearly worse than prioritized replay on any measure.** Prioritized "
                     "replay costs a sum tree and a priority update on every learning step; either show a gain "
                     "with more seeds or a larger $\\alpha$, or drop it.")
    steps = [v for v in ("one_step", "n3", "n10") if v in verdicts]
    if steps:
        ideas.append(f"**The choice of $n$** against the full agent's $n = {cfg['n_step']}$: "
                     + "; ".join(f"{LABELS[v]}: {claims.summary_line(list(verdicts[v].values()))}" for v in steps)
                     + ". $\\lambda$-returns over the stored windows would average over $n$ instead of choosing it.")
    schedules = [v for v in ("no_ramp", "learn_every_step") if v in verdicts]
    if schedules:
        ideas.append("**The schedules** (the $n$ ramp, the later learning interval): "
                     + "; ".join(f"{LABELS[v]}: {claims.summary_line(list(verdicts[v].values()))}" for v in schedules)
                     + ". A schedule that no ablation shows to matter is a candidate for removal, one less thing to "
                       "explain.")
    ideas += _seeds_and_criterion(results)
    ideas.append("**One run on a Unity build.** The replica's fidelity is measured with trained actors "
                 "(section 6), not with learning; a Unity run of this agent would say whether its episode counts "
                 "carry over.")
    return "\n".join(f"* {idea}" for idea in ideas)


def _seeds_and_criterion(results: dict) -> list:
    """The future-work items on more seeds (with their cost) and on a criterion that sees early learning."""
    ideas = []
    ablation_runs = [r for v, runs in results.items() if v != "full" for r in runs]
    if ablation_runs:
        seeds = len({r["summary"]["seed"] for r in ablation_runs})
        hours = np.mean([r["summary"]["wall_seconds"] for r in ablation_runs]) / 3600
        variants = len(results) - 1
        ideas.append(f"**More seeds for the small effects.** {seeds} seeds resolve only differences larger than the "
                     f"seed-to-seed spread; ten seeds for each of the {variants} variants would take about "
                     f"{10 * variants * hours:.0f} hours of training at the rate of section 5's runs.")
    full = results.get("full", [])
    if full and all(r["summary"]["solved_at"] == WINDOW for r in full):
        firsts = [f for f in (first_episode_at(r["scores"]["mean"]) for r in full) if f] or [None]
        ideas.append(f"**A criterion that sees early learning.** Every full run is solved at episode {WINDOW}, the "
                     f"earliest the criterion allows, though its 20-arm mean first reached 30 at episode "
                     f"{span('first_30', firsts)} (section 3); the noise-free score of the policy saved after each "
                     "episode would show when it is really good.")
    return ideas
