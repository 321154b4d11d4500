"""doc/'s figures and the README's result tables, from checkpoints/ and results/ (never trains).

    python -m experiments.figures       # doc/banner.png, doc/replay_frame.png, doc/learning_curve.png,
                                        # doc/ablations.png, doc/peers.png (after `make peers`), then the
                                        # README's tables (experiments/summarize.py)
"""
import os

import reacher  # noqa: F401  (first: on a headless Linux machine it selects MuJoCo's EGL backend)
from continuous_control.figures import history_of, plot_ablations, plot_scores
from continuous_control.replay import load_networks, policy_of, render_replay
from continuous_control.results import ROOT, load_results, load_run, save_evaluation
from experiments.peers import peer_results, peers_figure

DOC = os.path.join(ROOT, "doc")


def main() -> None:
    import matplotlib
    matplotlib.use("Agg")
    import matplotlib.pyplot as plt
    from PIL import Image

    from experiments.summarize import write
    os.makedirs(DOC, exist_ok=True)
    save_evaluation("checkpoints")          # once per run: the README's run block reads it
    policy = policy_of(load_networks("checkpoints"))
    frames, _, renderer = render_replay(policy, steps=60, every=60, width=1200, height=400,
                                        eye=(0.0, 34.0, 22.0), lookat=(0.0, -6.0, -27.0))
    Image.fromarray(frames[-1]).save(os.path.join(DOC, "banner.png"))
    frames, _, _ = render_replay(policy)
    Image.fromarray(frames[len(frames) // 2]).save(os.path.join(DOC, "replay_frame.png"))
    fig, ax = plt.subplots(figsize=(9, 4.5))
    run = load_run("checkpoints")
    plot_scores(history_of(run), ax, f"Continuous_Control.ipynb, seed {run['summary']['seed']}, built-in replica")
    fig.savefig(os.path.join(DOC, "learning_curve.png"), dpi=100, bbox_inches="tight")
    plot_ablations(load_results()).savefig(os.path.join(DOC, "ablations.png"), dpi=100, bbox_inches="tight")
    peers = peer_results()
    if len(peers) > 1 and "full" in peers:                  # after `make peers`
        peers_figure(peers, path=os.path.join(DOC, "peers.png"))
    print(f"wrote doc/banner.png, doc/replay_frame.png ({renderer}), doc/learning_curve.png, doc/ablations.png"
          + (", doc/peers.png" if len(peers) > 1 else ""))
    write()


if __name__ == "__main__":
    main()
