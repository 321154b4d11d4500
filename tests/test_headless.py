"""A headless Linux machine whose libEGL cannot be loaded imports, trains and draws: no GL library
is needed until a frame is asked for, and then the frame is matplotlib's drawing."""

import os
import subprocess
import sys
import textwrap

import pytest

pytestmark = pytest.mark.skipif(not sys.platform.startswith("linux"), reason="libEGL and LD_LIBRARY_PATH are Linux's")

SCRIPT = textwrap.dedent("""
    import sys
    import numpy as np
    import reacher, reacher.gym, continuous_control
    from continuous_control.agent import Agent, Config
    assert not any(m.split(".")[0] == "OpenGL" or m in ("mujoco.egl", "mujoco.osmesa") for m in sys.modules)
    env = reacher.ReacherEnvironment(seed=0, verbose=False)
    states = env.reset(train_mode=True)[reacher.BRAIN_NAME].vector_observations
    agent = Agent(Config(buffer_size=1_000, batch_size=16, warmup=40, hidden=(16, 16)), 33, 4, 20)
    agent.begin_episode(1)
    for _ in range(4):
        actions = agent.act(states)
        info = env.step(actions)[reacher.BRAIN_NAME]
        agent.step(states, actions, np.asarray(info.rewards), info.vector_observations, False)
        states = info.vector_observations
    from reacher.render import make_view
    view = make_view(env.physics, 64, 36)
    frame = view()
    one = reacher.gym.ReacherEnv(render_mode="rgb_array")
    one.reset(seed=0)
    print("UPDATES", agent.updates, "VIEW", type(view).__name__, frame.shape, "GYM", one.render().shape)
    print("REASON", view.reason)
""")


def test_no_loadable_libegl_still_imports_trains_and_draws_with_matplotlib(tmp_path):
    for name in ("libEGL.so", "libEGL.so.1"):  # present but not loadable, as a broken install is
        (tmp_path / name).write_bytes(b"")
    chosen = ("MUJOCO_GL", "PYOPENGL_PLATFORM", "DISPLAY", "WAYLAND_DISPLAY")  # headless, no backend chosen
    env = {k: v for k, v in os.environ.items() if k not in chosen}
    env["LD_LIBRARY_PATH"] = os.pathsep.join(filter(None, [str(tmp_path), env.get("LD_LIBRARY_PATH")]))
    done = subprocess.run(
        [sys.executable, "-c", SCRIPT], capture_output=True, text=True, env=env, cwd=tmp_path, timeout=300
    )
    assert done.returncode == 0, done.stderr[-3000:]
    assert "VIEW MatplotlibView (36, 64, 3) GYM (360, 480, 3)" in done.stdout, done.stdout
    assert int(done.stdout.split("UPDATES")[1].split()[0]) > 0, "the agent learned"
    assert "egl" in done.stdout.split("REASON")[1], "the fallback says why"


def test_importing_the_agent_loads_no_display_code():
    """Training needs no notebook stack: the agent imports no IPython, widgets or matplotlib."""
    code = (
        "import sys, continuous_control.agent, experiments.runs, experiments.stats; "
        "print([m for m in ('IPython', 'ipywidgets', 'matplotlib') if m in sys.modules])"
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=300, check=True)
    assert out.stdout.strip() == "[]"
