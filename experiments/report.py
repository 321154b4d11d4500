"""The report's tables and figures beyond the table of runs (runs.py) and its statistics (stats.py).

Each function returns a pandas DataFrame or a matplotlib figure; Report.ipynb shows them and its
prose, written by hand, computes any number it states in place.
"""

import ast
import glob
import os

import numpy as np
import pandas as pd

from continuous_control import files
from continuous_control.figures import q_reference
from continuous_control.files import MANIFEST, read_listed_json
from continuous_control.provenance import ROOT
from continuous_control.results import TARGET_SCORE, WINDOW

from . import runs, stats
from .variants import COLORS, LABELS


def results_of(folder: str) -> list:
    """The JSON results in a results/ folder, its manifest aside."""
    return [p for p in sorted(glob.glob(os.path.join(folder, "*.json"))) if os.path.basename(p) != MANIFEST]


def read_json(path: str) -> dict:
    """A JSON file by its path in the project: results/'s own through their folder's manifest (refused, naming
    the file, where it disagrees); others (doc/) as they are."""
    full = os.path.join(ROOT, path)
    return read_listed_json(full) if path.startswith("results/") else files.read_json(full)


def hyperparameters(cfg: dict) -> pd.DataFrame:
    """The saved configuration, each field with the docstring under it in the agent's `Config`."""
    with open(os.path.join(ROOT, "continuous_control", "agent.py"), encoding="utf-8") as f:
        tree = ast.parse(f.read())
    body = next(n for n in ast.walk(tree) if isinstance(n, ast.ClassDef) and n.name == "Config").body
    docs = {
        field.target.id: doc.value.value
        for field, doc in zip(body, body[1:])
        if isinstance(field, ast.AnnAssign) and isinstance(doc, ast.Expr) and isinstance(doc.value, ast.Constant)
    }
    return pd.DataFrame({"value": pd.Series(cfg).astype(str), "meaning": pd.Series(docs)}).loc[list(cfg)]


def layers(net) -> pd.DataFrame:
    """One row per layer with weights: its type and shape, its parameters, NoisyNet's mean sigma."""
    rows = {}
    for name, module in net.named_modules():
        params = dict(module.named_parameters(recurse=False))
        if params:
            w = params.get("weight", params.get("weight_mean"))
            sigma = params.get("weight_sigma")
            rows[name] = {
                "type": type(module).__name__,
                "inputs": w.shape[1],
                "outputs": w.shape[0],
                "parameters": sum(p.numel() for p in params.values()),
                "mean sigma": np.nan if sigma is None else sigma.abs().mean().item(),
            }
    return pd.DataFrame.from_dict(rows, orient="index").dropna(axis=1, how="all")


ROUNDING = {"mean": 2, "low_95": 2, "high_95": 2, "p": 4, "p_holm": 4}


def verdicts(table: pd.DataFrame, variants, measure: str = runs.PRIMARY, **kw) -> pd.DataFrame:
    """`stats.compare` with the variants' labels, rounded for reading."""
    family = stats.compare(table, variants, measure=measure, **kw)
    return family.rename(index=lambda v: LABELS.get(v, v)).round(ROUNDING)


def effects(table: pd.DataFrame) -> pd.DataFrame:
    """Every ablation against the full agent on every measure, paired like for like (`stats.compare`):
    the table of verdicts that the lesson reads from doc/effects.csv and the report's prose follows."""
    agent = set(table[table.group == "agent"].variant)
    variants = [v for v in LABELS if v != "full" and v in agent]
    out = pd.concat({m: stats.compare(table, variants, measure=m) for m in runs.MEASURES}, names=["measure", "variant"])
    return out.round(ROUNDING)


def summaries(table: pd.DataFrame, variants) -> pd.DataFrame:
    """rliable's IQM and probability of improvement against the full agent, for the ten-seed variants."""
    rows = {LABELS[v]: stats.summaries(table, v) for v in variants}
    return pd.DataFrame.from_dict(rows, orient="index").map(
        lambda x: f"{x[0]:.2f} to {x[1]:.2f}" if isinstance(x, tuple) else round(float(x), 2)
    )


def replay_use(variants=("full", "all_time_max_priority", "mean_priority", "uniform", "learn_every_step")):
    """Prioritized replay at this replay ratio, per run, from its diagnostics: the newest transitions'
    share of the draws over their share of the buffer after episode 20 (1: drawn like any other); at
    episode 100 the share of the buffer never replayed, the sampling probability it holds, and a new
    transition's priority over the mean |TD error|."""
    d = runs.episodes("diagnostics.csv")
    d = d[d.variant.isin(variants) & (d.episode <= WINDOW)]
    later, last = d[d.episode > 20].groupby(["variant", "seed"]), d[d.episode == WINDOW].set_index(["variant", "seed"])
    out = pd.DataFrame(
        {
            "newest drawn / stored": later.young_share.mean() / later.young_share_stored.mean(),
            "never replayed %": 100 * last.unreplayed_share,
            "their probability %": 100 * last.unreplayed_mass,
            "new priority / mean |TD|": last.max_priority / last.td_abs,
        }
    )
    out.loc["uniform", "new priority / mean |TD|"] = np.nan  # no priorities under uniform replay
    return out.groupby("variant").agg(["min", "max"]).round(1).loc[[v for v in variants if v in out.index]]


def q_at_100(gamma: float = 0.99) -> pd.DataFrame:
    """Per variant, the critic's mean Q at episode 100 against the return earned and the ceiling."""
    d = runs.episodes("diagnostics.csv")
    d = d[d.episode == WINDOW].set_index(["variant", "seed"])
    s = runs.episodes("scores.csv")
    s = s[s.episode == WINDOW].set_index(["variant", "seed"])
    ceiling = q_reference([0], gamma)["ceiling"]
    both = pd.DataFrame({"q": d.q, "earned": q_reference(s["mean"], gamma)["earned"]}).dropna()
    out = both.groupby("variant").agg(
        q_min=("q", "min"),
        q_max=("q", "max"),
        earned_min=("earned", "min"),
        earned_max=("earned", "max"),
        seeds=("q", "size"),
    )
    out["seeds above the ceiling"] = (both.q > ceiling).groupby("variant").sum()
    return (
        out.loc[[v for v in LABELS if v in out.index]].rename(index=LABELS).round(2).assign(ceiling=round(ceiling, 2))
    )


def critic_q(variants=("full", "one_step", "clipped_double_q"), root: str = runs.RESULTS) -> pd.DataFrame:
    """Per variant (the lesson's section 8 reads it, doc/critic_q.csv): its seeds, their critics' mean Q in
    episodes 80 and 100 and the return earned in episode 100 (`q_reference`), each the mean over the seeds."""
    rows = []
    for variant in variants:
        saved = [
            runs.read_run(folder) for group, v, _, folder in runs.run_folders(root) if (group, v) == ("agent", variant)
        ]
        if not saved:
            continue
        q = np.array([r["diagnostics"]["q"][:WINDOW] for r in saved])
        earned = np.array([q_reference(r["scores"]["mean"][:WINDOW], r["config"]["gamma"])["earned"] for r in saved])
        rows.append(
            {
                "variant": variant,
                "seeds": len(saved),
                "q_80": q[:, 79].mean(),
                "q_100": q[:, 99].mean(),
                "earned_100": earned[:, 99].mean(),
            }
        )
    return pd.DataFrame(rows).set_index("variant").round(4)


def overestimation() -> pd.DataFrame:
    """experiments/overestimation.py's checks: the critic's Q against Monte-Carlo returns."""
    rows = [read_listed_json(p) for p in results_of(os.path.join(ROOT, "results", "overestimation"))]
    return (
        pd.DataFrame(rows)
        .set_index("run")[["seed", "q", "q_min", "mc_return", "mc_return_upper", "difference", "ceiling"]]
        .round(3)
    )


def weak_arm() -> tuple:
    """experiments/weak_arm.py's two tables: the solving run by orbit direction, and every seed."""
    one = read_json("results/weak_arm.json")["summary"]
    by_direction = pd.DataFrame({(c, d): one[c][d] for c in one for d in one[c]}).T[
        ["count", "mean", "mean_slow", "mean_fast", "worst"]
    ]
    seeds = read_json("results/weak_arm_seeds.json")["seeds"]
    per_seed = pd.DataFrame({(k, c): r[c] for k, r in seeds.items() for c in r if c != "run"}).T
    return by_direction.astype({"count": int}).round(2), per_seed.round(2).unstack()


def calibration() -> pd.DataFrame:
    """The replica's random play and Unity-trained actors (benchmarks/calibration.py), default joint model."""
    for path in results_of(os.path.join(ROOT, "results", "calibration")):
        chosen = read_listed_json(path)
        if chosen["joint_model"] == chosen.get("default"):
            return pd.DataFrame(chosen["results"]).T.drop(columns="episode_means").astype(float).round(2)
    raise FileNotFoundError("results/calibration/: no run of the default joint model (make calibrate)")


def interval_figure(family: pd.DataFrame, measure: str = runs.PRIMARY):
    """Each variant's mean paired difference with its 95% interval (the sign-flip test inverted), coloured by
    the verdict, which Holm's correction over the family gives; no interval for fewer than 6 seeds."""
    import matplotlib.pyplot as plt

    fig, ax = plt.subplots(figsize=(8, 0.4 * len(family) + 1.2))
    colors = {"better": "C2", "worse": "C3", "no clear difference": "0.5"}
    for y, (_, row) in enumerate(family.iterrows()):
        ax.plot([row.low_95, row.high_95], [y, y], color=colors[row.verdict], lw=3)
        ax.plot(row["mean"], y, "ko", ms=4)
    ax.axvline(0, color="k", lw=0.8, ls="--")
    ax.invert_yaxis()
    ax.set_yticks(range(len(family)), [f"{n} ({r.seeds} seeds)" for n, r in family.iterrows()], fontsize=8)
    ax.set_xlabel(f"{runs.MEASURES[measure][0]}: variant minus full agent, paired by seed")
    ax.set_title(
        "Mean paired difference and its 95% interval, each comparison alone;\n"
        "colour: Holm's verdict over the family (green better, red worse, grey no clear difference)",
        fontsize=9,
    )
    return fig


def curves_figure(groups: dict, title: str, episodes: int = WINDOW, labels: dict = LABELS):
    """One panel per entry {title: {variant: seeds}}: each variant's mean over its seeds of the 20-arm
    score per episode, with a band from the worst to the best seed. A seed is a number (the variant's own
    run) or (group, seed) (the variant's run in that group). A variant without a color of its own (a peer)
    takes the next one after the variants'."""
    import matplotlib.pyplot as plt

    scores = (
        pd.concat([runs.episodes("scores.csv", group=g).assign(group=g) for g in ("agent", "processor_check", "peers")])
        .query("episode <= @episodes")
        .pivot_table(index="episode", columns=["group", "variant", "seed"], values="mean")
    )
    rows = (len(groups) + 1) // 2
    fig, axes = plt.subplots(
        rows,
        2 if len(groups) > 1 else 1,
        figsize=(11, 3.2 * rows + 0.6),
        sharey=True,
        squeeze=False,
        layout="constrained",
    )  # room for the suptitle above the panels
    for ax, (name, members) in zip(axes.flat, groups.items()):
        for k, (variant, seeds) in enumerate(members.items()):
            own = "agent" if ("agent", variant) in scores.columns.droplevel(2) else "peers"
            c = scores[[(*s[:1], variant, s[1]) if isinstance(s, tuple) else (own, variant, s) for s in seeds]]
            (line,) = ax.plot(
                c.index,
                c.mean(axis=1),
                color=COLORS.get(variant, f"C{k}"),
                lw=2,
                label=f"{labels.get(variant, variant)} ({len(seeds)} seeds)",
            )
            ax.fill_between(c.index, c.min(axis=1), c.max(axis=1), color=line.get_color(), alpha=0.15, lw=0)
        ax.axhline(TARGET_SCORE, color="k", ls="--", lw=1)
        ax.set(title=name, xlabel="episode", ylim=(0, 41))
        ax.set_ylabel("20-arm mean score")
        ax.grid(alpha=0.3)
        ax.legend(loc="lower right", fontsize=8)
    for ax in axes.flat[len(groups) :]:
        ax.axis("off")
    fig.suptitle(title)
    return fig


def ablations_figure(table: pd.DataFrame, measure_window: int = WINDOW):
    """Each ablation minus the full agent's runs it is paired with (the same seeds and processor), as the
    primary measure accrues: for each episode E, the paired difference of the means of episodes 1 to E.
    At E = 100 each line ends at the variant's effect (`mean` in the table of effects), on an axis of its own."""
    import matplotlib.pyplot as plt

    scores = (
        pd.concat([runs.episodes("scores.csv", group=g).assign(group=g) for g in ("agent", "processor_check")])
        .query("episode <= @measure_window")
        .pivot_table(index="episode", columns=["group", "variant", "seed"], values="mean")
    )
    so_far = scores.expanding().mean()
    agent = table[table.group == "agent"]
    variants = [v for v in LABELS if v != "full" and v in set(agent.variant)]
    rows = (len(variants) + 1) // 2
    fig, axes = plt.subplots(rows, 2, figsize=(11, 2.6 * rows + 0.6), squeeze=False, layout="constrained")
    for ax, variant in zip(axes.flat, variants):
        pairs = stats.paired(table, variant)
        d = pd.DataFrame(
            {k: so_far[("agent", variant, k)] - so_far[(partner, "full", k)] for k, partner in pairs.partner.items()}
        )
        (line,) = ax.plot(
            d.index, d.mean(axis=1), color=COLORS[variant], lw=2, label=f"{LABELS[variant]} ({len(d.columns)} seeds)"
        )
        ax.fill_between(d.index, d.min(axis=1), d.max(axis=1), color=line.get_color(), alpha=0.15, lw=0)
        ax.axhline(0, color="k", lw=0.8)
        ax.set(title=LABELS[variant], xlabel="episode E", ylabel="minus full agent")
        ax.grid(alpha=0.3)
        ax.legend(loc="best", fontsize=8)
    for ax in axes.flat[len(variants) :]:
        ax.axis("off")
    fig.suptitle(
        "Each ablation minus the full agent, paired by seed and processor: mean of episodes 1 to E\n"
        "mean over the seeds, band from worst to best seed; at E = 100, the effect on the primary measure"
    )
    return fig


def peers_figure(table: pd.DataFrame):
    """The full agent's ten seeds and every peer's seeds, on the same 20 arms."""
    from .peers import LABELS as PEER_LABELS

    full = table[(table.group == "agent") & (table.variant == "full")]
    peers = table[table.group == "peers"]
    members = {
        "full": sorted(full.seed),
        **{p: sorted(peers[peers.variant == p].seed) for p in PEER_LABELS if p in set(peers.variant)},
    }
    return curves_figure(
        {"": members},
        "The agent and Stable-Baselines3's TD3 and SAC on the same 20 arms",
        labels={**LABELS, **PEER_LABELS},
    )


def published() -> pd.DataFrame:
    """Course students' runs on Unity builds, as printed in their repositories (doc/published.json)."""
    return pd.DataFrame(read_json("doc/published.json")["runs"]).set_index("author")
