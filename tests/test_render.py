"""Rendering draws the arms without touching the simulation, with or without OpenGL."""

import numpy as np
import pytest

from reacher import ReacherEnvironment
from reacher.render import MatplotlibView, MujocoView, record, to_gif


def random_policy(seed):
    rng = np.random.default_rng(seed)
    return lambda info: np.clip(rng.standard_normal((len(info.agents), 4)), -1, 1)


def mujoco_view_or_skip(physics, *size):
    try:
        return MujocoView(physics, *size)
    except Exception as error:  # no OpenGL context on this machine
        pytest.skip(f"no OpenGL context: {error}")


@pytest.mark.parametrize("view_class", ["mujoco", "matplotlib"])
def test_rendering_does_not_change_the_episode(view_class):
    """Same seed, same actions: identical scores and final states with and without frames."""
    plain, drawn = ReacherEnvironment(seed=3, verbose=False), ReacherEnvironment(seed=3, verbose=False)
    view = (
        mujoco_view_or_skip(drawn.physics, 160, 90)
        if view_class == "mujoco"
        else MatplotlibView(drawn.physics, 160, 90)
    )
    frames, drawn_scores = record(drawn, random_policy(0), steps=40, every=10, view=view)
    _, plain_scores = record(plain, random_policy(0), steps=40, every=40, view=lambda: None)
    np.testing.assert_array_equal(drawn_scores, plain_scores)
    np.testing.assert_array_equal(drawn.physics.observe(), plain.physics.observe())
    assert len(frames) == 5 and all(f.shape == (90, 160, 3) and f.dtype == np.uint8 for f in frames)
    assert len({f.tobytes() for f in frames}) == 5, "the arms move, so every frame differs"


def test_frame_shows_arms_and_goals():
    env = ReacherEnvironment(seed=0, verbose=False)
    frames, _ = record(env, random_policy(0), steps=20, every=20, view=MatplotlibView(env.physics, 320, 180))
    frame = frames[-1]  # at reset the arms hang straight down: from above, only dots
    blue = (frame[..., 2] > 150) & (frame[..., 0] < 100)  # arms
    green = (frame[..., 1] > 150) & (frame[..., 0] < 180) & (frame[..., 2] < 180)  # goals
    assert blue.sum() > 100 and green.sum() > 100


def test_make_view_falls_back_without_opengl(monkeypatch):
    import reacher.render as render

    def no_gl(*args, **kwargs):
        raise RuntimeError("no OpenGL context")

    monkeypatch.setattr(render, "MujocoView", no_gl)
    view = render.make_view(ReacherEnvironment(seed=0, verbose=False).physics, 64, 36)
    assert isinstance(view, MatplotlibView) and "no OpenGL context" in view.reason


def test_gif_holds_every_frame():
    import io

    from PIL import Image

    frames = [np.full((20, 30, 3), v, np.uint8) for v in (0, 120, 240)]
    data = to_gif(frames, fps=10)
    gif = Image.open(io.BytesIO(data))
    assert data[:6] == b"GIF89a" and gif.n_frames == 3 and gif.size == (30, 20)
