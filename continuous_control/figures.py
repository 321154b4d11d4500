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


# The lesson's figures of one idea each, drawn with the reader's own classes (passed in), so that each shows what
# the code just written does.


def plot_soft_update(ddpg, updates: int = 1200) -> None:
    """One weight of the critic moved as learning might move it (a drift, then a reversal, plus noise), and the
    same weight of its target network after each of `ddpg`'s soft updates (2.2)."""
    import matplotlib.pyplot as plt
    import torch

    generator = torch.Generator().manual_seed(0)
    online, target = [], []
    with torch.no_grad():
        for k in range(updates):
            ddpg.critic.out.bias.add_(
                0.004 * (1 if k < updates // 2 else -1) + 0.03 * torch.randn(1, generator=generator)
            )
            ddpg.update_targets()
            online.append(ddpg.critic.out.bias.item())
            target.append(ddpg.critic_target.out.bias.item())
    tau = ddpg.cfg.tau
    fig, ax = plt.subplots(figsize=(8, 2.8))
    ax.plot(online, lw=0.8, label="the critic's weight (online)")
    ax.plot(target, lw=2, label=rf"its target, $\tau$ = {tau}: an average over about {1 / tau:.0f} updates")
    ax.set(
        xlabel="update",
        ylabel="weight (output bias)",
        title="The target network follows its network, smoothly and late",
    )
    ax.legend(loc="lower center", fontsize=8)
    plt.show()


def plot_nstep_windows(accumulator_class) -> None:
    """One arm's episode of 9 steps with n = 4: each stored transition as the rewards it sums (bar) and the state it
    bootstraps from (dot). The last step reports done: it is dropped, and the window flushes (4)."""
    import matplotlib.pyplot as plt

    acc = accumulator_class(n=4, gamma=0.9, num_agents=1, state_size=1, action_size=1)
    rows = []
    for t in range(9):
        state, next_state = np.full((1, 1), t, np.float32), np.full((1, 1), t + 1, np.float32)
        out = acc.push(state, np.zeros((1, 1), np.float32), np.ones(1), next_state, done=t == 8)
        for s, s_next, disc in zip(*(out[i] for i in (0, 3, 4))) if out is not None else ():
            rows.append((int(s[0]), int(round(np.log(disc) / np.log(0.9))), int(s_next[0]), t == 8))
    fig, ax = plt.subplots(figsize=(8, 2.8))
    for k, (start, length, boot, flushed) in enumerate(rows):
        colour = "tab:orange" if flushed else "tab:blue"
        ax.barh(k, length, left=start, height=0.5, color=colour, alpha=0.6)
        ax.plot(boot, k, "o", color=colour)
    ax.set(
        xlabel="step t of the episode (step 8 reports done and is dropped)",
        ylabel="stored transition",
        title=r"$n$-step returns (bars: rewards summed; dots: bootstrap state); orange: flushed at the episode's end",
    )
    ax.invert_yaxis()
    plt.show()


def plot_replay_draws(replay_class, importance_weights, cfg) -> None:
    """16 transitions with TD errors 0.1 to 3: how often `replay_class` draws each (200 batches of 256) against P(i),
    and the importance weight each gets, at the first beta and at 1 (5.2)."""
    import matplotlib.pyplot as plt

    zeros = np.zeros((16, 1), np.float32)
    buffer = replay_class(16, 1, 1, cfg.alpha, cfg.priority_offset, np.random.default_rng(0))
    buffer.add(zeros, zeros, np.zeros(16, np.float32), zeros, np.ones(16, np.float32))
    buffer.update_priorities(np.arange(16), np.linspace(0.1, 3.0, 16))
    drawn = np.concatenate([buffer.sample(256, cfg.beta_start)[0] for _ in range(200)])
    p, i = buffer.priorities[np.arange(16)], np.arange(16)
    fig, (left, right) = plt.subplots(1, 2, figsize=(10, 2.8))
    left.bar(i, np.bincount(drawn, minlength=16) / len(drawn), color="tab:blue", alpha=0.6, label="drawn")
    left.plot(i, p / buffer.priorities.total(), "k_", ms=12, mew=2, label=r"$P(i) = p_i^\alpha / \sum_k p_k^\alpha$")
    title = rf"Sampled as often as $P(i)$ says ($\alpha$ = {cfg.alpha})"
    left.set(xlabel="transition i (TD error growing)", ylabel="share of draws", title=title)
    left.legend(fontsize=8)
    for beta in (cfg.beta_start, 1.0):
        right.plot(i, importance_weights(p, buffer.priorities.total(), 16, beta), "o-", label=rf"$\beta$ = {beta}")
    right.set(xlabel="transition i", ylabel=r"weight $w_i$", title="The more often drawn, the less weight")
    right.legend(fontsize=8)
    plt.show()


def plot_exploration(noise_class, actor_class, cfg, state_size: int, action_size: int) -> None:
    """Left: noise correlated in time (OU, `noise_class`) against white noise of the same spread. Right: one state's
    actions (the first two) under 300 noise samples of a fresh noisy actor (`actor_class`), and its mean weights."""
    import matplotlib.pyplot as plt
    import torch

    generator = torch.Generator().manual_seed(0)
    ou = noise_class((1,), kappa=cfg.ou_kappa, scale=1.0, generator=generator)
    steps = np.arange(150)
    actor = actor_class(state_size, action_size, cfg.hidden, cfg.noisy_sigma0)
    s = torch.randn(1, state_size, generator=generator)
    with torch.no_grad():
        samples = []
        for _ in range(300):
            actor.set_noise(torch.randn(actor.noise_size, generator=generator))
            samples.append(actor(s)[0].numpy())
        actor.set_noise(None)
        mean_action = actor(s)[0].numpy()
    samples = np.array(samples)
    fig, (left, right) = plt.subplots(1, 2, figsize=(10, 2.8))
    left.plot(steps, [ou.sample().item() for _ in steps], label=rf"OU, $\kappa$ = {cfg.ou_kappa}")
    left.plot(steps, torch.randn(len(steps), generator=generator), lw=0.7, alpha=0.7, label="white")
    title = rf"OU noise: correlated over about $1/\kappa$ = {1 / cfg.ou_kappa:.0f} steps"
    left.set(xlabel="step", ylabel=r"noise $\varepsilon$", title=title)
    left.legend(fontsize=8)
    right.scatter(samples[:, 0], samples[:, 1], s=6, alpha=0.5, label="one noise sample each")
    right.plot(*mean_action[:2], "k*", ms=14, label="mean weights")
    title = rf"One state, 300 noise samples ($\sigma_0$ = {cfg.noisy_sigma0})"
    right.set(xlabel="torque 1", ylabel="torque 2", title=title)
    right.legend(fontsize=8)
    plt.show()


def plot_schedule(agent, episodes: int = 40) -> None:
    """Each episode's n (4) and steps between updates (3.3), read from `agent.begin_episode`."""
    import matplotlib.pyplot as plt

    x = np.arange(1, episodes + 1)
    schedule = []
    for episode in x:
        agent.begin_episode(episode)
        schedule.append((agent.nstep.n, agent.learn_every))
    schedule = np.array(schedule)
    fig, (left, right) = plt.subplots(1, 2, figsize=(10, 2.5))
    left.step(x, schedule[:, 0], where="post")
    left.set(xlabel="episode", ylabel="n", title="n-step targets: n grows from 1 (section 4)")
    right.step(x, schedule[:, 1], where="post", color="tab:green")
    title = f"Learning every {agent.cfg.learn_every} step(s), then every {agent.cfg.learn_every_later}"
    right.set(xlabel="episode", ylabel="steps between updates", title=title)
    plt.show()


def departures(c) -> str:
    """A markdown table: each departure of the Config `c` from the DDPG paper [1], why, and its ablation."""
    rows = [  # (what, the paper [1], this notebook, why, the ablation in Report.ipynb)
        (
            "hidden layers",
            "400, 300",
            ", ".join(map(str, c.hidden)),
            "a small task: fewer weights, cheaper steps",
            None,
        ),
        (
            "action enters the critic",
            "at the 2nd hidden layer",
            "with the state, at the input",
            "simpler, as in Spinning Up and CleanRL",
            None,
        ),
        (
            "learning rates: actor, critic",
            "1e-4, 1e-3",
            f"{c.actor_lr:g}, {c.critic_lr:g}",
            "one rate for both, as CleanRL",
            None,
        ),
        ("critic weight decay", "1e-2", "none", "none in TD3, Spinning Up or CleanRL either", None),
        (
            "final layers' initial weights",
            "uniform in +-3e-3",
            "uniform in +-1/sqrt(inputs), as every other layer",
            "PyTorch's default (NoisyNet's for the actor, 6.1); not ablated",
            None,
        ),
        ("tau, batch", "0.001, 64", f"{c.tau:g}, {c.batch_size}", "20 arms add 20 transitions a step", None),
        (
            "state scaling",
            "batch normalization",
            "running mean and variance, clamped at +-5 (2.1)",
            "the same statistics for acting and learning",
            None,
        ),
        ("critic gradient", "unclipped", f"norm clipped at {c.grad_clip:g}", "a guard against one huge TD error", None),
        (
            "targets",
            "1-step",
            f"{c.n_step}-step, n ramped from 1 (4)",
            "rewards reach the critic sooner",
            "1-step targets",
        ),
        (
            "replay",
            "uniform",
            f"prioritized, alpha {c.alpha:g} (5)",
            "favours new transitions; a gain neither shown nor ruled out (12)",
            "uniform replay",
        ),
        (
            "exploration",
            "OU action noise",
            "NoisyNet, OU-correlated noise (6)",
            "noise in the weights: it depends on the state",
            "OU action noise instead of NoisyNet",
        ),
        (
            "learning schedule",
            "every step",
            f"every step for {c.learn_every_until} episodes, then every {c.learn_every_later} (3.3)",
            "speed: learning every step scores better, but takes longer (3.3)",
            "learning every step throughout",
        ),
    ]
    lines = [f"| {what} | {paper} | {ours} | {why} | {ablation or '-'} |" for what, paper, ours, why, ablation in rows]
    return "| | Lillicrap et al. [1] | this notebook | why | ablation |\n|---|---|---|---|---|\n" + "\n".join(lines)
