"""Start reacher.serve, or say at once which package this interpreter lacks (standard library only): to stderr
and to the file the unityagents client reads when the process ends (reacher/client_hook.py), so that the
client reports it at once instead of waiting for an answer that cannot come."""

import os
import runpy
import sys
import tempfile

NEEDED = ("numpy", "mujoco", "grpc", "communicator_objects")


def port(argv: list) -> str:
    return argv[argv.index("--port") + 1] if "--port" in argv[:-1] else "5005"


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
            with open(os.path.join(tempfile.gettempdir(), f"reacher-serve-{port(sys.argv)}.err"), "w") as f:
                f.write(reason)
            sys.exit(3)
    sys.argv[0] = "reacher.serve"
    runpy.run_module("reacher.serve", run_name="__main__", alter_sys=True)


if __name__ == "__main__":
    main()
