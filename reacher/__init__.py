"""The built-in Reacher: a replica of the Unity Reacher of the course (ML-Agents 0.4.0), with the
Python API of `unityagents.UnityEnvironment`. MuJoCo holds the model; each physics frame is
stepped as PhysX 3.3 steps it (`physx.py`). See `doc/environment.md`."""
# MUJOCO_GL is left alone: mujoco loads the backend it names as it is imported, so a broken one (a libEGL
# that cannot load) would break every import. reacher/render.py picks a backend when a view is first made.
from .client_hook import install_hook
from .controller import scripted_actions
from .environment import (
    BRAIN_NAME,
    BrainInfo,
    BrainParameters,
    ReacherEnvironment,
    UnityActionException,
    UnityEnvironmentException,
)
from .physics import ReacherPhysics
from .play import play
from .unity import BUILT_IN_EXECUTABLE, find_unity_build, open_environment

# The unityagents 0.4.0 client on numpy 2, with bounded waits (client_hook.py). `make` installs the hook
# for every program of the environment; importing reacher installs it where that was not done.
install_hook()

__all__ = ["BRAIN_NAME", "BUILT_IN_EXECUTABLE", "BrainInfo", "BrainParameters", "ReacherEnvironment",
           "ReacherPhysics", "UnityActionException", "UnityEnvironmentException", "find_unity_build",
           "open_environment", "play", "scripted_actions"]
