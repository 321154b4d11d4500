"""Read the saved runs and draw the report's figures; `python experiments/figures.py` writes doc/.

    load_run("checkpoints")           # the solving run: config, summary, per-episode scores
    load_variant("uniform")           # every seed in results/uniform/
    plot_learning_curve(run, ax)      # rewards per episode, 100-episode average, the line at 30
    plot_variants(results, ax)        # mean across seeds with a min-max band, per variant

Everything here reads checkpoints/ and results/ (small CSV and JSON files) and never trains.
"""
import glob
import json
import os
import sys

import numpy as np

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
DOC = os.path.join(ROOT, "doc")
TARGET = 30.0
VARIANT_ORDER = ["full", "one_step", "n3", "n10", "uniform", "action_noise", "per_arm_noise", "no_noise", "plain"]
VARIANT_LABELS = {
    "full": "full: 5-step + prioritized + NoisyNet",
    "one_step": "1-step targets",
    "n3": "3-step targets",
    "n10": "10-step targets",
    "uniform": "uniform replay",
    "action_noise": "OU action noise instead of NoisyNet",
    "per_arm_noise": "NoisyNet, one noise sample per arm",
    "no_noise": "no exploration noise",
    "plain": "plain DDPG (none of the three)",
}
COLORS = {"full": "C0", "one_step": "C1", "n3": "C8", "n10": "C9", "uniform": "C2", "action_noise": "C3",
          "per_arm_noise": "C4", "no_noise": "C5", "plain": "C7"}


def load_run(path: str) -> dict:
    """config.json, summary.json and scores.csv of one run folder, the scores as numpy columns."""
    path = os.path.join(ROOT, path)
    scores = np.genfromtxt(os.path.join(path, "scores.csv"), delimiter=",", names=True)
    return {"dir": os.path.relpath(path, ROOT), "config": json.load(open(os.path.join(path, "config.json"))),
            "summary": json.load(open(os.path.join(path, "summary.json"))),
            "scores": {name: scores[name] for name in scores.dtype.names}}


def load_variant(variant: str, root: str = "results") -> list:
    """Every seed's run in <root>/<variant>/, by seed."""
    folders = sorted(glob.glob(os.path.join(ROOT, root, variant, "seed*")),
                     key=lambda p: int(p.rsplit("seed", 1)[1]))
    return [load_run(os.path.relpath(p, ROOT)) for p in folders
            if os.path.exists(os.path.join(p, "summary.json"))]


def load_results(root: str = "results") -> dict:
    """{variant: [runs]} for the variants that have results in <root>, in the report's order."""
    found = {v: load_variant(v, root) for v in VARIANT_ORDER}
    return {v: runs for v, runs in found.items() if runs}


def curves(runs: list, episodes: int) -> np.ndarray:
    """Per-episode 20-agent means of the runs, cut to the first `episodes` (seeds x episodes)."""
    return np.array([run["scores"]["mean"][:episodes] for run in runs])


def plot_learning_curve(run: dict, ax, title: str = None) -> None:
    """The notebook's own `plot_scores` (one drawing of a learning curve in the project) on a saved run."""
    from experiments.notebook import load_definitions
    s = run["scores"]
    history = {key: s[key] for key in ("mean", "min", "max", "avg100")}
    history["solved_at"] = run["summary"]["solved_at"]
    load_definitions()["plot_scores"](history, TARGET, ax)
    if title:
        ax.set_title(title)


def plot_seeds(runs: list, ax) -> None:
    """Every seed's per-episode mean (thin) and 100-episode average (thick)."""
    for i, run in enumerate(runs):
        s = run["scores"]
        seed = run["summary"]["seed"]
        ax.plot(s["episode"], s["mean"], color=f"C{i}", lw=.8, alpha=.6)
        ax.plot(s["episode"], s["avg100"], color=f"C{i}", lw=2,
                label=f"seed {seed}: solved at {run['summary']['solved_at']}")
    ax.axhline(TARGET, color="C3", ls="--", lw=1)
    ax.set_xlabel("episode")
    ax.set_ylabel("score; thick: 100-episode average")
    ax.set_ylim(0, 41)
    ax.grid(alpha=.3)
    ax.legend(loc="upper left", fontsize=8)


def plot_variants(results: dict, ax, episodes: int = 100) -> None:
    """Per variant: the mean across seeds of the per-episode score, and the band from the worst
    to the best seed."""
    for variant, runs in results.items():
        c = curves(runs, episodes)
        x = np.arange(1, c.shape[1] + 1)
        ax.fill_between(x, c.min(0), c.max(0), color=COLORS[variant], alpha=.15, lw=0)
        ax.plot(x, c.mean(0), color=COLORS[variant], lw=2, label=f"{VARIANT_LABELS[variant]} ({len(runs)} seed{'s' if len(runs) > 1 else ''})")
    ax.axhline(TARGET, color="k", ls="--", lw=1)
    ax.set_xlabel("episode")
    ax.set_ylabel("score, mean of the 20 agents")
    ax.set_ylim(0, 41)
    ax.set_xlim(0, episodes + 1)
    ax.grid(alpha=.3)
    ax.legend(loc="lower right", fontsize=8)


def plot_ablations(results: dict, episodes: int = 100):
    """One panel per ablation, each against the full agent: mean across seeds, min-max band."""
    import matplotlib.pyplot as plt
    others = [v for v in results if v != "full"]
    rows = max(1, (len(others) + 1) // 2)
    fig, axes = plt.subplots(rows, 2, figsize=(11, 3.2 * rows + 0.6), sharex=True, sharey=True, squeeze=False)
    for ax, variant in zip(axes.flat, others):
        plot_variants({v: results[v] for v in ("full", variant) if v in results}, ax, episodes)
        ax.set_title(VARIANT_LABELS[variant], fontsize=10)
        ax.legend(loc="lower right", fontsize=8)
    for ax in axes.flat[len(others):]:
        ax.axis("off")
    for ax in axes[:-1].flat:
        ax.set_xlabel("")
    for ax in axes[:, 1]:
        ax.set_ylabel("")
    fig.suptitle("Each ablation against the full agent: mean of the seeds' 20-agent scores, band from worst to best seed")
    fig.tight_layout()
    return fig


def load_networks(run_dir: str = "checkpoints") -> dict:
    """The saved actor, critic and state normaliser of a run, rebuilt from the notebook's own
    classes and its saved configuration; `load_state_dict` is strict, so a mismatch fails here."""
    import torch
    from experiments.notebook import load_definitions
    ns = load_definitions()
    run = os.path.join(ROOT, run_dir)
    cfg = json.load(open(os.path.join(run, "config.json")))
    nets = {"actor": ns["Actor"](33, 4, tuple(cfg["hidden"]), noisy=cfg["exploration"] == "noisynet",
                                 sigma0=cfg["noisy_sigma0"]),
            "critic": ns["Critic"](33, 4, tuple(cfg["hidden"])),
            "normalizer": ns["Normalizer"](33)}
    if os.path.exists(os.path.join(run, "actor_target.pt")):     # the exported policy's actor
        nets["actor_target"] = ns["Actor"](33, 4, tuple(cfg["hidden"]), noisy=cfg["exploration"] == "noisynet",
                                           sigma0=cfg["noisy_sigma0"])
    for name, net in nets.items():
        net.load_state_dict(torch.load(os.path.join(run, f"{name}.pt")))
    for name in ("actor", "actor_target"):
        if name in nets:
            nets[name].set_noise(None)     # mean weights: the noise-free policy
    return nets


def noise_free_policy(nets: dict):
    """The exported policy (the target actor, or the actor of runs that saved no target) without
    noise behind its state normaliser, as `policy(info) -> actions`."""
    import torch
    actor, norm = nets.get("actor_target", nets["actor"]), nets["normalizer"]

    def policy(info):
        with torch.no_grad():
            return actor(norm(torch.as_tensor(info.vector_observations, dtype=torch.float32))).numpy()
    return policy


def render_replay(steps: int = 300, every: int = 6, width: int = 480, height: int = 270, seed: int = 10_000,
                  nets: dict = None, **camera):
    """Frames of the trained arms without noise on goals unseen in training, the agents' scores
    over those steps, and the renderer's name."""
    from reacher import ReacherEnvironment
    from reacher.render import make_view, record
    env = ReacherEnvironment(seed=seed, verbose=False)
    view = make_view(env.physics, width, height, **camera)
    frames, scores = record(env, noise_free_policy(nets or load_networks()), steps, every, view)
    view.close()
    env.close()
    return frames, scores, view.name


def main() -> None:
    """Write doc/banner.png, doc/replay_frame.png, doc/learning_curve.png, doc/ablations.png, and
    the README's result tables (experiments/summarize.py)."""
    import reacher                    # first: on a headless Linux machine it selects MuJoCo's EGL backend
    import matplotlib
    matplotlib.use("Agg")
    import matplotlib.pyplot as plt
    from PIL import Image
    os.makedirs(DOC, exist_ok=True)

    nets = load_networks()
    frames, _, renderer = render_replay(steps=60, every=60, width=1200, height=400, nets=nets,
                                        eye=(0.0, 34.0, 22.0), lookat=(0.0, -6.0, -27.0))
    Image.fromarray(frames[-1]).save(os.path.join(DOC, "banner.png"))
    frames, _, _ = render_replay(nets=nets)
    Image.fromarray(frames[len(frames) // 2]).save(os.path.join(DOC, "replay_frame.png"))

    fig, ax = plt.subplots(figsize=(9, 4.5))
    plot_learning_curve(load_run("checkpoints"), ax, "Continuous_Control.ipynb, seed 0, built-in replica")
    fig.savefig(os.path.join(DOC, "learning_curve.png"), dpi=100, bbox_inches="tight")
    fig = plot_ablations(load_results())
    fig.savefig(os.path.join(DOC, "ablations.png"), dpi=100, bbox_inches="tight")
    print(f"wrote doc/banner.png, doc/replay_frame.png ({renderer}), doc/learning_curve.png, doc/ablations.png")
    from experiments.summarize import write
    write()


if __name__ == "__main__":
    sys.path.insert(0, ROOT)
    main()
