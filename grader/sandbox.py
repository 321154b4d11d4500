"""The sandbox a contestant runs in: bubblewrap (`bwrap`), one per submission, sharing nothing.

Trusted by: the judge, which builds it. Inside there is no network (a network namespace of its own), no
other process (a PID namespace of its own, whose PID 1 is the contestant), no capability, the user
`nobody`, no variable of the caller's environment, and a private temporary folder of `TMP_BYTES`. It sees,
read-only: the system's libraries, this Python and its packages, and `library(...)`, a private copy of the
code the given cells import, made from the trusted edition (no solution, no GPU path). It sees no course
folder, no hand-in, no Jupyter runtime folder and no other sandbox.
"""

import os
import shutil
import sys
import sysconfig
import tempfile
from pathlib import Path

HERE = Path(__file__).resolve().parent
TMP_BYTES = 64 << 20
INSIDE = "/opt/contestant"  # where the sandbox sees `library()`
SCRATCH = "/scratch"  # its private temporary folder (not /tmp, where the environment may lie, bound read-only)
CONTESTANT = ("__init__.py", "cases.py", "contestant.py", "wire.py")


def bwrap() -> str:
    path = shutil.which("bwrap") or next((p for p in ("/usr/bin/bwrap",) if os.path.exists(p)), None)
    if path is None:
        raise RuntimeError(
            "the judge needs bubblewrap (`bwrap`; Debian and Ubuntu: apt install bubblewrap) to keep a "
            "submission's code apart from the grading"
        )
    return path


def library() -> str:
    """A new private folder with the packages a contestant imports: `grader`'s contestant side, and
    `continuous_control` without its exported agent (the given cells define it)."""
    import continuous_control

    folder = tempfile.mkdtemp(prefix="contestant-")
    source = Path(continuous_control.__file__).parent
    target = Path(folder, "continuous_control")
    target.mkdir()
    for path in source.glob("*.py"):
        if path.name != "agent.py":
            shutil.copyfile(path, target / path.name)
    Path(folder, "grader").mkdir()
    for name in CONTESTANT:
        shutil.copyfile(HERE / name, Path(folder, "grader", name))
    return folder


def command(lib: str) -> list[str]:
    """The contestant's command line: PID 1 of its own sandbox, `lib` first on its path."""
    binds = []
    for path in ("/usr", "/etc/ld.so.cache", "/etc/ld.so.conf", "/etc/ld.so.conf.d"):
        if os.path.exists(path):
            binds += ["--ro-bind", path, path]
    for link in ("/bin", "/lib", "/lib64", "/lib32", "/sbin"):
        if os.path.islink(link):
            binds += ["--symlink", os.readlink(link), link]
        elif os.path.isdir(link):
            binds += ["--ro-bind", link, link]
    prefixes = {os.path.realpath(sys.base_prefix)}
    for path in sorted(prefixes):
        if not path.startswith("/usr/"):
            binds += ["--ro-bind", path, path]
    if sys.prefix != sys.base_prefix:  # a virtual environment: its interpreter and packages, not what lies beside
        for name in ("pyvenv.cfg", "bin", "lib", "lib64"):
            path = os.path.join(sys.prefix, name)
            if os.path.lexists(path):
                binds += ["--ro-bind", os.path.realpath(path), path] if name != "lib64" else []
    for key in ("purelib", "platlib"):
        path = sysconfig.get_path(key)
        if not path.startswith(("/usr/", sys.prefix, sys.base_prefix)):
            binds += ["--ro-bind", path, path]
    env = {
        "PATH": "/usr/bin:/bin",
        "HOME": SCRATCH,
        "TMPDIR": SCRATCH,
        "MPLCONFIGDIR": SCRATCH,
        "NUMBA_CACHE_DIR": SCRATCH,
        "OMP_NUM_THREADS": "1",
        "LANG": "C.UTF-8",
    }
    return [
        bwrap(),
        "--unshare-all",
        "--unshare-user",
        "--uid",
        "65534",
        "--gid",
        "65534",
        "--cap-drop",
        "ALL",
        "--die-with-parent",
        "--new-session",
        "--as-pid-1",
        "--clearenv",
        *[arg for key, value in env.items() for arg in ("--setenv", key, value)],
        *binds,
        "--ro-bind",
        lib,
        INSIDE,
        "--proc",
        "/proc",
        "--dev",
        "/dev",
        "--size",
        str(TMP_BYTES),
        "--tmpfs",
        SCRATCH,
        "--remount-ro",
        "/",
        "--chdir",
        INSIDE,  # `python -m` looks here first: the library's packages before the environment's
        "--",
        os.path.join(sys.prefix, "bin", "python3") if sys.prefix != sys.base_prefix else sys.executable,
        "-s",
        "-m",
        "grader.contestant",
    ]
