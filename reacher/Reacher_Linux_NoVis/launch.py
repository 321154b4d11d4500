"""Start reacher.serve, or say at once which package this interpreter lacks (standard library only): to stderr
and to the file the unityagents client reads when the process ends (reacher/client_hook.py), so that the
client reports it at once instead of waiting for an answer that cannot come."""

import importlib.util
import os
import runpy
import sys

NEEDED = ("numpy", "mujoco", "grpc", "communicator_objects")


def write_reason(text: str) -> None:
    """client_hook.write_reason, loaded by path (importing `reacher` would need the packages missing here)."""
    path = os.path.join(os.path.dirname(os.path.dirname(os.path.abspath(__file__))), "client_hook.py")
    spec = importlib.util.spec_from_file_location("reacher_client_hook_writer", path)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    module.write_reason(text)


def main() -> None:
    for name in NEEDED:
        try:
            __import__(name)
        except ImportError as error:
            reason = (
                f"{sys.executable} cannot serve the built-in Reacher: {error}. Set REACHER_PYTHON to the "
                f"python of the project's environment (.venv/bin/python), or run `make` to build it."
            )
            print(reason, file=sys.stderr)
            write_reason(reason)
            sys.exit(3)
    sys.argv[0] = "reacher.serve"
    runpy.run_module("reacher.serve", run_name="__main__", alter_sys=True)


if __name__ == "__main__":
    main()
