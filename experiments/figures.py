"""doc/'s figures, and the tables that the lesson reads (the measured effects, the critics' Q), from
checkpoints/ and results/ (never trains); `make report` runs it.

    python -m experiments.figures       # doc/banner.png, doc/replay_frame.png, doc/learning_curve.png,
                                        # doc/ablations.png, doc/peers.png, doc/effects.csv, doc/critic_q.csv,
                                        # doc/plain.csv
"""

import os

from continuous_control.figures import history_of, plot_scores
from continuous_control.playback import load_networks, policy_of, render_replay
from continuous_control.provenance import ROOT
from continuous_control.results import load_run
from experiments import report, runs

DOC = os.path.join(ROOT, "doc")
EFFECTS = os.path.join(DOC, "effects.csv")
CRITIC_Q = os.path.join(DOC, "critic_q.csv")
PLAIN = os.path.join(DOC, "plain.csv")


def plain_seeds(table):
    """The lesson's section 3 reads it: each saved seed of plain DDPG (results/plain), as the table of runs has it."""
    plain = table[(table.group == "agent") & (table.variant == "plain")]
    columns = ["seed", "solved_at", "first_30", "mean_1_100", "minutes", "processor"]
    return plain[columns].round({"mean_1_100": 2, "minutes": 1})


def main() -> None:
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt
    from PIL import Image

    policy = policy_of(load_networks("checkpoints"))
    frames, _, renderer = render_replay(
        policy, steps=60, every=60, width=1200, height=400, eye=(0.0, 34.0, 22.0), lookat=(0.0, -6.0, -27.0)
    )
    Image.fromarray(frames[-1]).save(os.path.join(DOC, "banner.png"))
    frames, _, _ = render_replay(policy)
    Image.fromarray(frames[len(frames) // 2]).save(os.path.join(DOC, "replay_frame.png"))
    fig, ax = plt.subplots(figsize=(9, 4.5))
    run = load_run("checkpoints")
    plot_scores(history_of(run), ax, f"Continuous_Control.ipynb, seed {run['summary']['seed']}, built-in replica")
    fig.savefig(os.path.join(DOC, "learning_curve.png"), dpi=100, bbox_inches="tight")
    table = runs.load()
    report.effects(table).to_csv(EFFECTS)
    report.critic_q().to_csv(CRITIC_Q)
    plain_seeds(table).to_csv(PLAIN, index=False)
    report.ablations_figure(table).savefig(os.path.join(DOC, "ablations.png"), dpi=100, bbox_inches="tight")
    report.peers_figure(table).savefig(os.path.join(DOC, "peers.png"), dpi=100, bbox_inches="tight")
    print(
        f"wrote doc/banner.png, doc/replay_frame.png ({renderer}), doc/learning_curve.png, doc/ablations.png, "
        "doc/peers.png, doc/effects.csv, doc/critic_q.csv, doc/plain.csv"
    )


if __name__ == "__main__":
    main()
