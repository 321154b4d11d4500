"""Open the Reacher: the built-in replica by default, or a Unity build through `unityagents`."""

from __future__ import annotations

import glob
import os

from .environment import ReacherEnvironment, UnityEnvironmentException

BUILT_IN_EXECUTABLE = os.path.join(os.path.dirname(__file__), "Reacher_Linux_NoVis", "Reacher.x86_64")


def find_unity_build(file_name: str) -> str:
    """The executable `unityagents` would launch for `file_name` (it strips the extension and globs
    for .x86_64, then .x86), checked before it tries: its own failures are vague, or come later."""
    if os.path.isdir(file_name.strip()):
        inside = sorted(
            glob.glob(os.path.join(file_name.strip(), "*.x86_64")) + glob.glob(os.path.join(file_name.strip(), "*.x86"))
        )
        raise UnityEnvironmentException(
            f"The Unity build '{file_name}' is a folder: give the executable file inside it"
            + (f", {inside[0]}" if inside else " (Reacher.x86_64, say)")
            + "."
        )
    stem = file_name.strip()
    for ext in (".app", ".exe", ".x86_64", ".x86"):
        stem = stem.replace(ext, "")
    candidates = glob.glob(stem + ".x86_64") or glob.glob(stem + ".x86")
    if not candidates:
        raise UnityEnvironmentException(
            f"No Unity build found at '{file_name}': expected an executable file '{stem}.x86_64' "
            f"(or '.x86'). Download the Reacher build for your system and unzip it there, or leave "
            f"the build unset to use the built-in replica."
        )
    path = candidates[0]
    if os.path.isdir(path):
        raise UnityEnvironmentException(f"The Unity build '{path}' is a folder: give the executable file inside it.")
    if not os.path.isfile(path) or not os.access(path, os.X_OK):
        raise UnityEnvironmentException(f"The Unity build '{path}' is not an executable file: run `chmod +x {path}`.")
    return path


def open_environment(unity_build: str | None = None, seed: int = 0, worker_id: int = 0, num_agents: int = 20):
    """An environment with the unityagents API: the in-process replica (fast: use it to train), or the Unity
    build at `unity_build` through the real unityagents client, one per process, each with its `worker_id`."""
    if not unity_build:
        return ReacherEnvironment(num_agents=num_agents, seed=seed)
    path = find_unity_build(unity_build)
    served = os.path.realpath(path) == os.path.realpath(BUILT_IN_EXECUTABLE)
    from .client_hook import install_hook

    install_hook()  # the client on numpy 2, with bounded waits and checked messages, where `make` did not install it
    try:
        from unityagents import UnityEnvironment
    except ImportError as error:
        raise UnityEnvironmentException(
            f"A Unity build needs the unityagents 0.4.0 client ({error}): "
            f"pip install --no-deps unityagents==0.4.0 protobuf==3.20.3 grpcio Pillow"
        ) from None
    env = UnityEnvironment(file_name=path, seed=seed, worker_id=worker_id, no_graphics=True)
    # What a results file should call it: the replica served over the client's protocol is no Unity build.
    env.description = "built-in replica, served to the unityagents client" if served else f"Unity build ({path})"
    return env
