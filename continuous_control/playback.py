"""Watching a trained policy: saved networks, rendered replays and the notebook's replay panel."""

import io
import os

import numpy as np

from reacher.physics import ACTION_SIZE, OBSERVATION_SIZE

from .files import MIB, FileRefused, parse_json, read_folder
from .provenance import ROOT
from .results import EVAL_SEED, NETWORKS, POLICY_LIMIT, acting, from_safetensors


def load_networks(run_dir: str = "checkpoints") -> dict:
    """A run's saved networks, rebuilt from the agent's classes and its config.json, their numbers from
    networks.safetensors (data only), both read once and checked against the folder's manifest."""
    from .agent import Actor, Critic, NoisyActor, TwinCritic
    from .networks import Normalizer

    run = os.path.join(ROOT, run_dir)
    files = read_folder(run, {"config.json": MIB, NETWORKS: POLICY_LIMIT}, names=("config.json", NETWORKS))
    cfg = parse_json(files["config.json"], os.path.join(run, "config.json"))
    try:
        hidden, noisy = tuple(cfg["hidden"]), cfg.get("exploration", "noisynet") == "noisynet"  # an ablation's
        sizes = OBSERVATION_SIZE, ACTION_SIZE
        actor = (lambda: NoisyActor(*sizes, hidden, cfg["noisy_sigma0"])) if noisy else (lambda: Actor(*sizes, hidden))
        critic = TwinCritic(*sizes, hidden) if cfg.get("clipped_double_q") else Critic(*sizes, hidden)
    except (TypeError, KeyError, ValueError, AttributeError) as error:
        raise FileRefused(f"{os.path.join(run, 'config.json')}: not a configuration of this agent ({error})") from None
    nets = {"actor": actor(), "actor_target": actor(), "critic": critic, "normalizer": Normalizer(OBSERVATION_SIZE)}
    wanted = {f"{name}.{k}": tuple(v.shape) for name, net in nets.items() for k, v in net.state_dict().items()}
    tensors = from_safetensors(files[NETWORKS], os.path.join(run, NETWORKS), wanted, "config.json")
    for name, net in nets.items():
        net.load_state_dict({k[len(name) + 1 :]: v for k, v in tensors.items() if k.startswith(f"{name}.")})
        if noisy and name.startswith("actor"):
            net.set_noise(None)  # the mean weights: the noise-free policy
    return nets


def policy_of(nets: dict):
    """The exported policy, the noise-free target actor behind the normaliser, as `policy(info) -> actions`."""
    actor, norm = nets["actor_target"], nets["normalizer"]
    return acting(lambda states: actor(norm(states)))


def play_scores(policies: dict, episodes: int, seed: int):
    """Each `policy(states) -> actions` (tensors) for `episodes` episodes on the goals of environment seed `seed`:
    a table of its arms' mean score over the episodes, their mean, worst and best."""
    import pandas as pd

    from reacher import ReacherEnvironment, play

    rows = {}
    for name, policy in policies.items():
        arms = play(ReacherEnvironment(seed=seed, verbose=False), acting(policy), episodes).mean(0)
        rows[name] = {"mean": arms.mean(), "worst arm": arms.min(), "best arm": arms.max()}
    return pd.DataFrame(rows).T.round(2)


def render_replay(
    policy,
    steps: int = 300,
    every: int = 6,
    width: int = 480,
    height: int = 270,
    seed: int = EVAL_SEED,
    config: dict = None,
    **camera,
):
    """Frames of `policy(info) -> actions` on goals unseen in training, each arm's score, the renderer's name."""
    from reacher import ReacherEnvironment
    from reacher.render import make_view, record

    env = ReacherEnvironment(seed=seed, verbose=False)
    env.reset(config=config or {})
    view = make_view(env.physics, width, height, **camera)
    frames, scores = record(env, policy, steps, every, view)
    view.close()
    env.close()
    return frames, scores, view.name


def png(frame: np.ndarray) -> bytes:
    from PIL import Image

    buffer = io.BytesIO()
    Image.fromarray(frame).save(buffer, format="PNG")
    return buffer.getvalue()


class WithFallback:
    """A widget shown live where a kernel runs, and as a still image (or text) where none does (GitHub, HTML)."""

    def __init__(self, widget, still: bytes, text: str):
        self.widget, self.still, self.text = widget, still, text

    def _repr_mimebundle_(self, **kwargs):
        data = self.widget._repr_mimebundle_(**kwargs)
        data.update({"image/png": self.still, "text/plain": self.text})
        return data


def replay_panel(policy, steps: int = 200, every: int = 4, width: int = 480, height: int = 270) -> None:
    """The noise-free policy on unseen goals: choose the goals' speed and size, press *replay*, play or scrub."""
    import ipywidgets as widgets
    from IPython.display import display

    def replay(speed=1.0, size=5.0):
        frames, scores, renderer = render_replay(
            acting(policy), steps, every, width, height, config={"goal_speed": speed, "goal_size": size}
        )
        return [png(f) for f in frames], scores, renderer

    frames, scores, renderer = replay()
    picture = widgets.Image(value=frames[len(frames) // 2], format="png", width=width)
    scrub = widgets.IntSlider(len(frames) // 2, 0, len(frames) - 1, description="frame")
    play = widgets.Play(value=scrub.value, min=0, max=len(frames) - 1, interval=80)
    widgets.jslink((play, "value"), (scrub, "value"))
    speed = widgets.FloatSlider(1.0, min=0.0, max=3.0, step=0.25, description="goal speed")
    size = widgets.FloatSlider(5.0, min=1.0, max=8.0, step=0.5, description="goal size")
    again = widgets.Button(description="replay")
    status = widgets.Label(f"{len(frames)} frames; mean score over these {steps} steps {scores.mean():.2f}")

    def rerun(_):
        nonlocal frames
        status.value = "rendering..."
        frames, new_scores, _ = replay(speed.value, size.value)
        scrub.max = play.max = len(frames) - 1
        scrub.value = 0
        picture.value = frames[0]
        status.value = f"{len(frames)} frames; mean score over these {steps} steps {new_scores.mean():.2f}"

    scrub.observe(lambda change: setattr(picture, "value", frames[change["new"]]), names="value")
    again.on_click(rerun)
    panel = widgets.VBox([widgets.HBox([speed, size, again]), picture, widgets.HBox([play, scrub]), status])
    display(
        WithFallback(
            panel,
            frames[len(frames) // 2],
            "[replay panel: needs a running kernel; its middle frame is shown as an image]",
        )
    )
    print(
        f"Replay: {len(frames)} frames ({renderer}), goals of environment seed {EVAL_SEED}; "
        f"mean score of the 20 arms over these {steps} steps {scores.mean():.2f} "
        f"(worst arm {scores.min():.2f}, best {scores.max():.2f})"
    )
