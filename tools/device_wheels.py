"""Fill .whl/ (ignored) with the wheels the GPU machine's image lacks, for its Python, from the package index.

    python -m tools.device_wheels            # then pass carry [".whl"] to the GPU check (doc/gpu.md)

The image has torch, numpy, numba, matplotlib, pandas, scipy, tqdm and pytest (and more), for Python 3.12 on
x86-64 Linux, and reaches no index: what this project imports beyond them is MuJoCo and what it needs. Each is
taken at the version this environment has, so that both machines run the same physics.
"""

import argparse
import importlib.metadata
import os
import subprocess
import sys

from continuous_control.provenance import ROOT

FOLDER = os.path.join(ROOT, ".whl")
PYTHON = "3.12"
# manylinux tags, newest first: pip matches each exactly
PLATFORMS = [f"manylinux_2_{n}_x86_64" for n in (39, 35, 34, 31, 28, 27, 24, 17)] + [
    "manylinux2014_x86_64",
    "manylinux1_x86_64",
]
PACKAGES = ["mujoco", "mujoco-core", "mujoco-studio", "glfw", "pyopengl", "websockets"]


def command(package: str, folder: str = FOLDER, python: str = PYTHON) -> list[str]:
    """pip's download of one wheel of `package`, at this environment's version, for the GPU machine."""
    platforms = [arg for tag in PLATFORMS for arg in ("--platform", tag)]
    return [
        sys.executable,
        "-m",
        "pip",
        "download",
        "--quiet",
        "--no-deps",
        "--only-binary=:all:",
        "--python-version",
        python,
        "--implementation",
        "cp",
        *platforms,
        "-d",
        folder,
        f"{package}=={importlib.metadata.version(package)}",
    ]


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--folder", default=FOLDER)
    parser.add_argument("--python", default=PYTHON, help="the GPU machine's Python (major.minor)")
    args = parser.parse_args(argv)
    os.makedirs(args.folder, exist_ok=True)
    for package in PACKAGES:
        done = subprocess.run(command(package, args.folder, args.python), capture_output=True, text=True)
        if done.returncode:
            raise SystemExit(f"no wheel of {package} for CPython {args.python} on x86-64 Linux:\n{done.stderr[-2000:]}")
    print(f"{len(os.listdir(args.folder))} wheels in {args.folder}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
