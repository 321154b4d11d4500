"""The lesson's plots, drawn from a run's history or from its saved run folder (results.py); the report's own
figures are experiments/report.py's."""

import numpy as np

from .results import TARGET_SCORE, WINDOW


def plot_scores(history: dict, ax, title: str = None) -> None:
    """Per-episode 20-arm mean, the worst-best arm band, the average of the last 100 episodes, the solve line."""
    ax.clear()
    episodes = np.arange(1, len(history["mean"]) + 1)
    ax.fill_between(episodes, history["min"], history["max"], alpha=0.25, label="worst to best of the 20 arms")
    ax.plot(episodes, history["mean"], lw=1.5, label="mean of the 20 arms")
    ax.plot(episodes, history["avg100"], lw=2, label=f"mean of the last {WINDOW} episodes (so far, before {WINDOW})")
    ax.axhline(TARGET_SCORE, color="k", ls="--", lw=1, label=f"solved: {TARGET_SCORE:g}")
    if history.get("solved_at"):
        ax.axvline(history["solved_at"], color="g", ls=":", label=f"solved at episode {history['solved_at']}")
    ax.set(xlabel="episode", ylabel="score", ylim=(0, 41))
    ax.legend(loc="lower right")
    ax.grid(alpha=0.3)
    if title:
        ax.set_title(title)


def history_of(run: dict) -> dict:
    """A saved run's scores in the form `plot_scores` takes."""
    history = {key: run["scores"][key] for key in ("mean", "min", "max", "avg100")}
    history["solved_at"] = run["summary"]["solved_at"]
    return history


def q_reference(scores, gamma: float) -> dict:
    """What to read a critic's mean Q against: the ceiling r_max / (1 - gamma), the most any policy earns,
    and the return earned, (score / steps) / (1 - gamma), which errs high early in an episode."""
    from reacher.physics import FRAMES_PER_STEP, MAX_STEPS, REWARD_PER_FRAME

    r_max = float(REWARD_PER_FRAME) * FRAMES_PER_STEP
    return {"ceiling": r_max / (1 - gamma), "earned": np.asarray(scores) / MAX_STEPS / (1 - gamma)}


def plot_diagnostics(diag: dict, title: str = None, reference: dict = None):
    """A run's diagnostics.csv, per episode, one quantity per panel; Q with `reference` (`q_reference`) if given."""
    import matplotlib.pyplot as plt

    x = diag["episode"]
    panels = [
        ("mean Q(s, a) of the sampled batches", [("q", "critic's mean Q")]),
        ("critic loss (weighted squared TD error)", [("critic_loss", "critic loss")]),
        ("actor loss, -Q(s, mu(s))", [("actor_loss", "actor loss")]),
        ("mean |TD error|", [("td_abs", "|TD error|")]),
        (
            "NoisyNet: mean sigma of each layer's weights",
            [(k, f"layer {k[6:]}") for k in diag if k.startswith("sigma_")],
        ),
        (
            "transitions added in the last 1000 insertions",
            [("young_share", "share of the sampled"), ("young_share_stored", "share of the stored")],
        ),
        (
            "transitions never replayed yet",
            [
                (k, label)
                for k, label in (
                    ("unreplayed_mass", "share of the sampling probability"),
                    ("unreplayed_share", "share of the stored"),
                )
                if k in diag
            ],
        ),
        ("a new transition's priority p", [("max_priority", "p")]),
        ("importance-sampling exponent beta", [("beta", "beta")]),
    ]
    panels = [(name, lines) for name, lines in panels if lines]
    columns = (len(panels) + 2) // 3
    fig, axes = plt.subplots(3, columns, figsize=(4.4 * columns, 8.4), sharex=True, squeeze=False)
    for ax in axes.flat[len(panels) :]:
        ax.set_visible(False)
    for ax, (name, lines) in zip(axes.flat, panels):
        for key, label in lines:
            ax.plot(x, diag[key], lw=1.5, label=label)
        if name.startswith("mean Q") and reference:
            ax.axhline(
                reference["ceiling"],
                color="k",
                ls="--",
                lw=1,
                label=f"ceiling r_max/(1-gamma) = {reference['ceiling']:.2f}",
            )
            ax.plot(x, reference["earned"][: len(x)], color="C2", lw=1, label="return earned (from the scores)")
        ax.set_title(name, fontsize=10)
        ax.grid(alpha=0.3)
        if len(lines) > 1 or (name.startswith("mean Q") and reference):
            ax.legend(fontsize=8)
    for ax in axes[-1]:
        ax.set_xlabel("episode")
    if title:
        fig.suptitle(title)
    fig.tight_layout()
    return fig
