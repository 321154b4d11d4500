"""The built-in Reacher: a replica of the course's Unity Reacher (ML-Agents 0.4.0) with the Python API of
`unityagents.UnityEnvironment`; MuJoCo holds the model, `physx.py` steps it as PhysX 3.3. See `doc/environment.md`."""

# MUJOCO_GL is left alone: a broken backend named at import would break every import (render.py picks one).
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

__all__ = [
    "BRAIN_NAME",
    "BUILT_IN_EXECUTABLE",
    "BrainInfo",
    "BrainParameters",
    "ReacherEnvironment",
    "ReacherPhysics",
    "UnityActionException",
    "UnityEnvironmentException",
    "find_unity_build",
    "open_environment",
    "play",
    "scripted_actions",
]
