"""Reading and watching a trained policy: a run's policy (policy.json and policy.safetensors) and saved networks,
their scores on unseen goals, rendered replays and the notebook's replay panel."""

import io
import os

import numpy as np
import torch
import torch.nn as nn

from reacher.physics import ACTION_SIZE, OBSERVATION_SIZE

from .files import MIB, FileRefused, parse_json, read_folder
from .provenance import ROOT
from .results import (
    EVAL_SEED,
    NETWORKS,
    POLICY,
    POLICY_LIMIT,
    POLICY_WEIGHTS,
    acting,
    evaluate_policy,
    from_safetensors,
)

MAX_WIDTH, MAX_LAYERS = 4096, 8  # the widest and deepest actor a policy.json may describe


def check_architecture(spec, path: str) -> dict:
    """policy.json's fields, every one checked: FileRefused naming the file and the field."""

    def refuse(what: str):
        raise FileRefused(f"{path}: {what}; refused")

    size = lambda n: type(n) is int and 1 <= n <= MAX_WIDTH
    if not isinstance(spec, dict) or set(spec) != {"state_size", "action_size", "hidden", "clip", "mirror"}:
        refuse("it is not a policy's architecture (state_size, action_size, hidden, clip, mirror)")
    if not size(spec["state_size"]) or not size(spec["action_size"]):
        refuse(f"state_size and action_size must be whole numbers from 1 to {MAX_WIDTH}")
    hidden = spec["hidden"]
    if not (isinstance(hidden, list) and 1 <= len(hidden) <= MAX_LAYERS and all(map(size, hidden))):
        refuse(f"hidden must be 1 to {MAX_LAYERS} layer widths, each from 1 to {MAX_WIDTH}")
    if type(spec["clip"]) is not float or not 0 < spec["clip"] <= 1e6:
        refuse("clip must be a positive number")
    mirror = spec["mirror"]
    if mirror is not None:
        signs = lambda x, n: isinstance(x, list) and len(x) == n and all(v in (1.0, -1.0) for v in x)
        if not (
            isinstance(mirror, dict)
            and set(mirror) == {"index", "states", "actions"}
            and type(mirror["index"]) is int
            and 0 <= mirror["index"] < spec["state_size"]
            and signs(mirror["states"], spec["state_size"])
            and signs(mirror["actions"], spec["action_size"])
        ):
            refuse("mirror must be null, or an index below state_size and signs (1 or -1) of states and actions")
    return spec


class Policy(nn.Module):
    """A saved policy as `load_policy` gives it: states as a tensor or a numpy array, of any float dtype, one per
    row (one per arm) or a single state; actions of the same kind and shape (numpy for numpy). What it computes
    is fixed by this class: the normaliser, linear layers with ReLU, tanh, and the mirror if there is one."""

    def __init__(self, spec: dict, tensors: dict, path: str):
        super().__init__()
        from .agent import Actor
        from .networks import Normalizer

        self.path, self.state_size = path, spec["state_size"]
        self.norm = Normalizer(spec["state_size"], spec["clip"])
        self.actor = Actor(spec["state_size"], spec["action_size"], tuple(spec["hidden"]))
        for prefix, net in (("normalizer.", self.norm), ("actor.", self.actor)):
            net.load_state_dict({k[len(prefix) :]: v for k, v in tensors.items() if k.startswith(prefix)})
        self.eval().requires_grad_(False)
        mirror = spec["mirror"]
        self.mirror = mirror and (
            mirror["index"],
            torch.tensor(mirror["states"], dtype=torch.float32),
            torch.tensor(mirror["actions"], dtype=torch.float32),
        )

    def network(self, x: torch.Tensor) -> torch.Tensor:
        if not self.mirror:
            return self.actor(self.norm(x))
        index, states, actions = self.mirror  # as experiments.ablations.MirroredPolicy computes it
        flip = x[:, index] < 0
        y = self.actor(self.norm(torch.where(flip[:, None], x * states, x)))
        return torch.where(flip[:, None], y * actions, y)

    def forward(self, states):
        x = torch.as_tensor(states)
        if x.ndim not in (1, 2) or x.shape[-1] != self.state_size or not x.is_floating_point():
            raise ValueError(
                f"{self.path} takes float states of {self.state_size} numbers, one per row (shape (arms, "
                f"{self.state_size}) or ({self.state_size},)); got {x.dtype} of shape {tuple(x.shape)}"
            )
        with torch.no_grad():
            actions = self.network(x.reshape(-1, self.state_size).to(torch.float32))
        actions = actions[0] if x.ndim == 1 else actions
        return actions.numpy() if isinstance(states, np.ndarray) else actions


def policy_tensors(spec: dict) -> dict:
    """{name: shape} of the tensors a policy of architecture `spec` holds."""
    sizes = [spec["state_size"], *spec["hidden"], spec["action_size"]]
    wanted = {f"normalizer.{k}": (spec["state_size"],) for k in ("mean", "var")} | {"normalizer.count": ()}
    for i, (n_in, n_out) in enumerate(zip(sizes[:-1], sizes[1:])):
        wanted |= {f"actor.layers.{i}.weight": (n_out, n_in), f"actor.layers.{i}.bias": (n_out,)}
    return wanted


def load_policy(path: str) -> Policy:
    """A run folder's policy (`path`: the folder, or any file in it, such as the actor.pt2 that older code
    loaded), rebuilt from policy.json and policy.safetensors, read once each and checked against the folder's
    manifest: data only, no program. An exported program (actor.pt2) is written for deployers, never read here.
    FileRefused, naming the file, for anything else."""
    folder = path if os.path.isdir(path) else os.path.dirname(path)
    files = read_folder(folder, {POLICY: MIB, POLICY_WEIGHTS: POLICY_LIMIT}, names=(POLICY, POLICY_WEIGHTS))
    where = lambda name: os.path.join(folder, name)
    spec = check_architecture(parse_json(files[POLICY], where(POLICY)), where(POLICY))
    tensors = from_safetensors(files[POLICY_WEIGHTS], where(POLICY_WEIGHTS), policy_tensors(spec), POLICY)
    if (tensors["normalizer.var"] < 0).any() or not tensors["normalizer.count"] > 0:
        raise FileRefused(f"{where(POLICY_WEIGHTS)}: its normaliser's variance or count is negative; refused")
    return Policy(spec, tensors, where(POLICY_WEIGHTS))


def evaluate(run_dir: str, seed: int, episodes: int = 5) -> dict:
    """The run's policy (`load_policy`) on unseen goals (`evaluate_policy`)."""
    return evaluate_policy(load_policy(run_dir), seed, episodes)


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
