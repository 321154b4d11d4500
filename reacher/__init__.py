"""The built-in Reacher: a replica of the Unity Reacher of the course (ML-Agents 0.4.0), with the
Python API of `unityagents.UnityEnvironment`. MuJoCo holds the model; each physics frame is
stepped as PhysX 3.3 steps it (`physx.py`). See `doc/environment.md`."""
import os
import sys

# Rendering only (reacher/render.py): a headless Linux machine has no display for MuJoCo's
# default GLFW context, so ask for EGL unless a backend was chosen. It must be set before
# mujoco is first imported; a missing EGL library only surfaces when a renderer is made.
if sys.platform.startswith("linux") and not os.environ.get("DISPLAY") and "mujoco" not in sys.modules:
    os.environ.setdefault("MUJOCO_GL", "egl")

# The unityagents 0.4.0 client on numpy 2, with bounded waits (client_hook.py). `make` installs the hook
# for every program of the environment; importing reacher installs it where that was not done.
from .client_hook import install_hook  # noqa: E402

install_hook()

from .controller import scripted_actions
from .environment import (BRAIN_NAME, BrainInfo, BrainParameters, ReacherEnvironment,
                          UnityActionException, UnityEnvironmentException)
from .physics import ReacherPhysics
from .play import play
from .unity import BUILT_IN_EXECUTABLE, find_unity_build, open_environment

__all__ = ["BRAIN_NAME", "BUILT_IN_EXECUTABLE", "BrainInfo", "BrainParameters", "ReacherEnvironment",
           "ReacherPhysics", "UnityActionException", "UnityEnvironmentException", "find_unity_build",
           "open_environment", "play", "scripted_actions"]
