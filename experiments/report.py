"""Report.ipynb's tables and figures, built from saved runs (never trains).

The report is a sequence of short calls to this module: each builder takes runs as
`continuous_control.results.load_run` returns them (or `load_results`'s {variant: [runs]}) and
returns Markdown text, or a matplotlib figure; `show` displays Markdown in the notebook. Every
number the report states is computed here or in experiments/claims.py, from the files; the prose
around them is the report's own, written by hand, and tests/test_report.py checks the numbers
that prose rests on.

    run, results = load_run("checkpoints"), load_results()
    show(hyperparameter_table(run["config"]), beta_sentence(run["config"]))
    show(seeds_table(results["full"]), goals_table(results["full"]))
    show(ablation_table(results), interval_table(results), measures_table(results))

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
from continuous_control.results import ROOT, TARGET_SCORE, WINDOW, first_episode_at, load_variant
from continuous_control.variants import CHANGES, LABELS, VARIANTS
from experiments import claims
from experiments.claims import METRICS, run_stats, span
from experiments.published import PUBLISHED, UNITY_CALIBRATION
from experiments.tables import markdown_table
from reacher.physics import FRAMES_PER_STEP, MAX_STEPS, REWARD_PER_FRAME

AGENT = os.path.join(ROOT, "continuous_control", "agent.py")
CALIBRATION = os.path.join(ROOT, "results", "calibration")
REPLAY_STEPS, REPLAY_EVERY = 300, 6          # section 4: 300 steps from a reset, a frame every 6th step
PROCESSOR_CHECK = os.path.join("results", "processor_check")   # the full agent made again on another processor
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


# --- 2. The solving run ----------------------------------------------------------------------

def solving_run_table(run: dict) -> str:
    """The solving run in one table: where it ran, when it was solved, how early it was good."""
    s, mean = run["summary"], run["scores"]["mean"]
    st = run_stats(run, episodes=len(mean))
    rows = [("environment, seed, machine", f"{s['environment']}; seed {s['seed']}; {s['machine']}"),
            ("solved at episode (episodes E-99 to E average 30 or more)", s["solved_at"] or f"not in {len(mean)} episodes"),
            ("minutes to solve (or to the end)", f"{(s['wall_seconds_to_solve'] or s['wall_seconds']) / 60:.1f}"),
            ("first episode whose 20-arm mean reached 30", first_episode_at(mean) or "never"),
            ("the first episode from which every later one scores above 30 / above 35",
             " / ".join(str(from_episode(mean, level) or "-") for level in (TARGET_SCORE, TARGET_SCORE + 5))),
            (f"mean of episodes 1-{WINDOW}", f"{np.mean(mean[:WINDOW]):.2f}"),
            ("median episode score", f"{np.median(mean):.1f}"),
            ("each arm's own mean over all episodes: worst arm, best arm",
             f"{st['worst_arm_1_100']:.2f}, {st['best_arm_1_100']:.2f}")]
    return markdown_table(["", "the notebook's run"], rows)


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


def replay_measures(run: dict) -> dict:
    """How a run replayed, after the fast episodes (from its diagnostics): new transitions' share of the
    draws over their share of the buffer; and at the end, the share of the buffer never replayed, the
    sampling probability it held, and a new transition's priority over the last episode's mean |TD error|."""
    d = run["diagnostics"]
    later = d["episode"] > run["config"]["fast_episodes"]
    return {"young": float(np.mean(d["young_share"][later]) / np.mean(d["young_share_stored"][later])),
            "unreplayed": 100 * float(d["unreplayed_share"][-1]), "mass": 100 * float(d["unreplayed_mass"][-1]),
            "entry": float(d["max_priority"][-1] / d["td_abs"][-1]) if run["config"]["alpha"] > 0 else None}   # none uniform


def replay_table(results: dict, variants=("full", "all_time_max_priority", "mean_priority", "uniform",
                                         "learn_every_step")) -> str:
    """Prioritized replay at this replay ratio: `replay_measures` per variant, the range over its seeds."""
    rows = []
    for v in (v for v in variants if v in results):
        m = [replay_measures(r) for r in results[v] if "unreplayed_mass" in r.get("diagnostics", {})]
        if m:
            get = lambda key, digits=1: "-" if m[0][key] is None else span("eval", [x[key] for x in m], digits)
            rows.append([LABELS[v], len(m), get("young"), get("unreplayed", 0), get("mass", 0), get("entry")])
    return markdown_table(["variant", "seeds", "new transitions' share of the draws / of the buffer (after the fast episodes)",
                           "% of the buffer never replayed (end)", "% of the sampling probability they hold (end)",
                           "a new transition's priority / mean abs(TD error) (end)"], rows)


def q_table(results: dict) -> str:
    """The critic's mean Q at episode 100 against the ceiling and the return the arms earned then, per variant."""
    rows = []
    for v, runs in results.items():
        runs = [r for r in runs if "diagnostics" in r and len(r["diagnostics"]["q"]) >= WINDOW]
        if runs:
            ref = [q_reference(r["scores"]["mean"][:WINDOW], r["config"]["gamma"]) for r in runs]
            q = [r["diagnostics"]["q"][WINDOW - 1] for r in runs]
            rows.append([LABELS[v], len(runs), span("eval", q, 2), span("eval", [x["earned"][-1] for x in ref], 2),
                         f"{sum(a > x['ceiling'] for a, x in zip(q, ref))} of {len(runs)}", f"{ref[0]['ceiling']:.2f}"])
    return markdown_table(["variant", "seeds", "critic's mean Q, episode 100", "return earned, episode 100",
                           "seeds with Q above the ceiling", "ceiling r_max / (1 - gamma)"], rows)


# --- 3. Across seeds -------------------------------------------------------------------------

def seeds_table(runs: list) -> str:
    """One row per seed: solve episode, first episode at 30, scores with their worst and best arm, minutes."""
    rows = []
    for run in runs:
        st = run_stats(run)
        rows.append([st["seed"], run["summary"]["solved_at"] or "not solved", st["first_30"] or "never",
                     with_arms(st["mean_1_100"], st["worst_arm_1_100"], st["best_arm_1_100"]),
                     f"{st['mean_91_100']:.1f}", f"{st['minutes']:.1f} ({claims.sharing([run])})",
                     with_arms(st["eval"], st["eval_worst_arm"], st["eval_best_arm"], 2)])
    return markdown_table(["seed", "solved at episode", "first episode at 30",
                           "mean of episodes 1-100 (worst arm, best arm)", "mean of episodes 91-100",
                           "minutes to solve (runs at a time)", "noise-free evaluation (worst arm, best arm)"], rows)


def goals_table(runs: list) -> str:
    """The score goals on the distribution of the seeds (experiments.claims.score_goals)."""
    return markdown_table(["goal", f"the {len(runs)} seeds", "met"],
                          [(goal, found, "yes" if met else "no") for goal, found, met in claims.score_goals(runs)])


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
    """The results with the full agent cut to the seeds the ablations pair with (`claims.paired_seeds`);
    all of its runs if none pairs."""
    seeds = {k for v in results if v != "full" and "full" in results for k in claims.paired_seeds(results, v)}
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


def interval_table(results: dict, metric: str = claims.PRIMARY, variants=None, baseline: str = "full") -> str:
    """The paired differences from the baseline (the full agent unless named) on one measure (the primary
    by default), with their intervals: `variants` (default: every one with results) form the family."""
    rows = claims.interval_rows(paired(results) if baseline == "full" else results, metric, variants, baseline)
    return (f"Baseline: {LABELS[baseline]}.\n\n" + markdown_table(claims.INTERVAL_HEADER, [[LABELS[r[0]]] + r[1:] for r in rows])
            if rows else "(no ablation results yet)")


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


def measures_table(results: dict) -> str:
    """Every measure by the same rule: per variant and measure, the mean paired difference, its corrected
    interval and the verdict (each measure its own family)."""
    family = {m: {p.variant: p for p in claims.paired_family(paired(results), m)} for m in METRICS}
    cell = lambda p: (p.verdict if p.verdict == claims.TOO_FEW else
                      f"{p.mean:+.2f} [{p.corrected[0]:+.2f}, {p.corrected[1]:+.2f}] {p.verdict}")
    rows = [[LABELS[v]] + [cell(family[m][v]) for m in METRICS] for v in family[claims.PRIMARY]]
    return markdown_table(["variant"] + [METRICS[m][0] for m in METRICS], rows) if rows else "(no ablation results yet)"


def processor_check(results: dict, root: str = PROCESSOR_CHECK) -> str:
    """The full agent made again with the same code and seeds on another kind of processor (<root>/full/),
    minus results/full/, seed by seed on every measure: the processor's own effect, which pairing a
    variant with the full agent across processors takes to be nil. Each measure is one comparison,
    uncorrected, so the check is as ready as it can be to find an effect."""
    again = load_variant("full", root)
    if not again or "full" not in results:
        return (f"(no runs in {root}/full/ yet: `python -m experiments.run --variant full --seeds 0 1 2 "
                f"--episodes 200 --results {root}` on another kind of processor makes them)")
    kinds = lambda runs: claims.processors(runs) or "processors not named"
    both = {"full": results["full"], "again": again}
    cs = [claims.compare(both, "again", m) for m in METRICS]
    rows = [[METRICS[c.metric][0], len(c.seeds), f"{c.mean:+.2f}", f"[{c.corrected[0]:+.2f}, {c.corrected[1]:+.2f}]",
             f"{c.above} / {c.below}", c.verdict] for c in cs]
    return (f"The full agent on {kinds(again)} minus the same code and seed on {kinds(results['full'])}, seeds "
            f"{claims.seed_list(cs[0].seeds)}:\n\n" + markdown_table(
                ["measure", "paired seeds", "mean difference", "95% interval", "seeds higher / lower", "verdict"], rows))


def mean_over_seeds(results: dict, variant: str, seeds: set) -> float:
    """The variant's mean of episodes 1-100, averaged over `seeds`."""
    return float(np.mean([run_stats(r)["mean_1_100"] for r in results[variant] if r["summary"]["seed"] in seeds]))


def gap_decomposition(results: dict) -> str:
    """The gap from the full agent to plain DDPG, split at the 1-step variant: means over the seeds on
    which all three pair (`claims.paired_seeds`)."""
    if not {"full", "one_step", "plain"} <= set(results):
        return "(needs the full agent, the 1-step variant and plain DDPG in `results/`)"
    seeds = set(claims.paired_seeds(results, "one_step")) & set(claims.paired_seeds(results, "plain"))
    if not seeds:
        return "(needs the full agent, the 1-step variant and plain DDPG on common seeds)"
    full, one, plain = (mean_over_seeds(results, v, seeds) for v in ("full", "one_step", "plain"))
    return (f"Seeds {claims.seed_list(sorted(seeds))}. Full agent {full:.2f}, 1-step {one:.2f}, plain DDPG {plain:.2f}. Removing the $n$-step target changes "
            f"the mean by {one - full:+.2f} (full to 1-step); removing prioritized replay and NoisyNet as well, at "
            f"$n = 1$, by {plain - one:+.2f} (1-step to plain); all three together by {plain - full:+.2f} (full to "
            "plain). These are differences of means over the seeds; the interval tables above say which of them the seeds resolve.")


COST = os.path.join(ROOT, "results", "benchmarks", "cost_clipped_double_q.json")
MAX_TIME_RATIO = 1.15          # clipped double-Q becomes the default only at 15% more time or less


def decision_table(results: dict, variant: str = "clipped_double_q", cost: str = COST) -> str:
    """The default's rule, criterion by criterion: clearly better on the primary measure (section 5.1's
    family and corrected interval), and at most MAX_TIME_RATIO times the time (the median wall-time ratio
    of benchmarks/cost.py's pairs); each measured, and met or not."""
    p = {p.variant: p for p in claims.paired_family(paired(results), claims.PRIMARY)}.get(variant)
    scores = ("not run yet", "no") if p is None else (claims.TOO_FEW, "no") if p.verdict == claims.TOO_FEW else (
        f"{p.mean:+.2f}, corrected interval [{p.corrected[0]:+.2f}, {p.corrected[1]:+.2f}], {len(p.seeds)} seeds: "
        f"{p.verdict}", "yes" if p.verdict == "better" else "no")
    c = json.load(open(cost)) if os.path.exists(cost) else None
    time = ("not measured yet", "no") if c is None else (
        f"wall x{c['ratio_median']['wall']:.2f}, CPU x{c['ratio_median']['cpu']:.2f} (medians of {c['pairs']} pairs)",
        "yes" if c["ratio_median"]["wall"] <= MAX_TIME_RATIO else "no")
    return markdown_table(["criterion", "measured", "met"], [
        ("clearly better on the mean of episodes 1-100 (corrected interval above zero)", *scores),
        (f"at most {MAX_TIME_RATIO - 1:.0%} more time", *time)])


def cost_table(path: str = COST) -> str:
    """What clipped double-Q costs in time against the default (benchmarks/cost.py): the ratios' median and range."""
    if not os.path.exists(path):
        return "(not measured yet: `make benchmark`)"
    c = json.load(open(path))
    rows = [[kind, f"{c['ratio_median'][kind]:.2f}", f"{c['ratio_range'][kind][0]:.2f} to {c['ratio_range'][kind][1]:.2f}"]
            for kind in ("wall", "cpu")]
    return (f"`{' '.join(c['change'])}` against the default: {c['pairs']} pairs of `{c['short_run']}`, run in turn on "
            f"{c['machine']}, {c['date']}.\n\n" + markdown_table(["time", "ratio, median", "range"], rows))


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
