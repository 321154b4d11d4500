"""The sandbox a contestant runs in: bubblewrap (`bwrap`), one per submission, sharing nothing, in control groups.

Trusted by: the judge, which builds it. Inside there is no network (a network namespace of its own), no
other process (a PID namespace of its own, whose PID 1 is the contestant), the user `nobody`, no variable of
the caller's environment. PID 1 holds CAP_SYS_ADMIN in the sandbox's own user namespace, only to make each
request a fresh box (`grader.confine`), which drops it before any student code runs. Everything is
read-only (the root, `/dev` with only bubblewrap's device nodes, the system's libraries, this Python and its
packages, and the code the given cells import, bound file by file from the trusted edition: no solution, no GPU
path); a request's only writable place is its own tmpfs, which dies with it. It sees no course folder, no
hand-in, no Jupyter runtime folder and no other sandbox, and nothing of it lies in the host's temporary folder.

`Cgroup` puts the whole sandbox in control groups of its own, where the machine allows it (cgroup v1 as root,
or a delegated cgroup v2): a memory limit without swap and a process count for all its processes together,
and the processor time they use, which the judge reads to stop a request that spends more than its share
across processes. `limits()` says which of these this machine gives.
"""

import contextlib
import os
import secrets
import shlex
import shutil
import signal
import sys
import sysconfig
import time
from pathlib import Path

HERE = Path(__file__).resolve().parent
INSIDE = "/opt/contestant"  # where the sandbox sees the code the contestant imports
SCRATCH = "/scratch"  # its temporary folder (not /tmp, where the environment may lie, bound read-only)
CONTESTANT = ("__init__.py", "cases.py", "confine.py", "contestant.py", "wire.py")
PIDS = 64  # processes and threads of one sandbox, all together
PREFIX = "grader-"


def bwrap() -> str:
    path = shutil.which("bwrap") or next((p for p in ("/usr/bin/bwrap",) if os.path.exists(p)), None)
    if path is None:
        raise RuntimeError(
            "the judge needs bubblewrap (`bwrap`; Debian and Ubuntu: apt install bubblewrap) to keep a "
            "submission's code apart from the grading"
        )
    return path


def library() -> list[str]:
    """bwrap's arguments that bind, read-only and file by file, the packages a contestant imports: `grader`'s
    contestant side, and `continuous_control` without its exported agent (the given cells define it)."""
    import continuous_control

    source = Path(continuous_control.__file__).parent
    files = [(path, f"{INSIDE}/continuous_control/{path.name}") for path in sorted(source.glob("*.py"))]
    files = [(path, inside) for path, inside in files if path.name != "agent.py"]
    files += [(HERE / name, f"{INSIDE}/grader/{name}") for name in CONTESTANT]
    return [arg for path, inside in files for arg in ("--ro-bind", str(path), inside)]


def command() -> list[str]:
    """The contestant's command line: PID 1 of its own sandbox, `INSIDE` first on its path."""
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
        "--cap-add",
        "CAP_SYS_ADMIN",  # PID 1's, in the sandbox's user namespace, to make each request's box (grader.confine)
        "--die-with-parent",
        "--new-session",
        "--as-pid-1",
        "--clearenv",
        *[arg for key, value in env.items() for arg in ("--setenv", key, value)],
        *binds,
        *library(),
        "--proc",
        "/proc",
        "--dev",
        "/dev",
        "--remount-ro",
        "/dev",
        "--size",
        str(16 << 20),
        "--tmpfs",
        SCRATCH,  # PID 1's own, for what the libraries write as they load; each request mounts a new one over it
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


# --- control groups: limits on the sandbox as a whole ---

V1 = {"memory": "memory", "pids": "pids", "cpuacct": "cpuacct"}  # controller: the file prefix it owns


def _own_paths() -> dict:
    """{controller or "": this process's cgroup path} from /proc/self/cgroup ("" for cgroup v2)."""
    out = {}
    with contextlib.suppress(OSError):
        for line in Path("/proc/self/cgroup").read_text().splitlines():
            _, names, path = line.split(":", 2)
            for name in names.split(",") if names else [""]:
                out[name] = path
    return out


def _mounts() -> dict:
    """{controller or "": its mount point} of the mounted cgroup hierarchies."""
    out = {}
    with contextlib.suppress(OSError):
        for line in Path("/proc/self/mounts").read_text().splitlines():
            _, point, kind, options = line.split()[:4]
            if kind == "cgroup2":
                out.setdefault("", point)
            elif kind == "cgroup":
                for name in options.split(","):
                    if name in V1:
                        out[name] = point
    return out


class Cgroup:
    """The control groups of one sandbox (see the module's docstring); `folders` is empty where the machine
    gives none, and then only the per-process limits and the judge's clocks hold."""

    def __init__(self):
        self.folders, self.version, self.why = {}, None, ""
        own, mounts, name = _own_paths(), _mounts(), f"{PREFIX}{os.getpid()}-{secrets.token_hex(4)}"
        try:
            if all(c in mounts and c in own for c in V1):
                for c in V1:
                    self.folders[c] = Path(mounts[c] + own[c], name)
                    self.folders[c].mkdir()
                self.version = 1
            elif "" in mounts and "" in own:
                folder = Path(mounts[""] + own[""], name)
                folder.mkdir()
                self.folders[""] = folder
                got = set((folder / "cgroup.controllers").read_text().split())
                if not {"memory", "pids", "cpu"} <= got:
                    raise OSError(f"the cgroup v2 controllers delegated here are {sorted(got)}, not memory, pids, cpu")
                self.version = 2
            else:
                raise OSError("no cgroup hierarchy with the memory, pids and cpu controllers is mounted")
        except OSError as error:
            self.remove()
            self.why = str(error) or type(error).__name__

    def wrap(self, command: list[str]) -> list[str]:
        """`command`, started inside the sandbox's groups (a shell enters them, then becomes the command)."""
        if not self.folders:
            return command
        enter = " && ".join(f"echo $$ > {shlex.quote(str(f / 'cgroup.procs'))}" for f in self.folders.values())
        return ["/bin/sh", "-c", enter + ' && exec "$@"', "sh", *command]

    def limit(self, memory: int, pids: int = PIDS) -> None:
        """At most `memory` bytes more than now (no swap) and `pids` tasks, for every process together."""
        if self.version == 1:
            ceiling = int((self.folders["memory"] / "memory.usage_in_bytes").read_text()) + memory
            (self.folders["memory"] / "memory.limit_in_bytes").write_text(str(ceiling))
            with contextlib.suppress(OSError):  # no swap accounting on this kernel: no swap to limit
                (self.folders["memory"] / "memory.memsw.limit_in_bytes").write_text(str(ceiling))
            (self.folders["pids"] / "pids.max").write_text(str(pids))
        elif self.version == 2:
            folder = self.folders[""]
            ceiling = int((folder / "memory.current").read_text()) + memory
            (folder / "memory.max").write_text(str(ceiling))
            with contextlib.suppress(OSError):
                (folder / "memory.swap.max").write_text("0")
            (folder / "pids.max").write_text(str(pids))

    def cpu(self) -> float | None:
        """Seconds of processor time every process of the sandbox has used, or None where it cannot be read."""
        try:
            if self.version == 1:
                return int((self.folders["cpuacct"] / "cpuacct.usage").read_text()) / 1e9
            if self.version == 2:
                stat = (self.folders[""] / "cpu.stat").read_text().split()
                return int(stat[stat.index("usage_usec") + 1]) / 1e6
        except (OSError, ValueError):
            return None
        return None

    def kill(self, bound: float = 5.0) -> None:
        """Every process in the groups killed, and gone, within `bound` seconds."""
        deadline = time.monotonic() + bound
        for folder in self.folders.values():
            while time.monotonic() < deadline:
                try:
                    pids = [int(p) for p in (folder / "cgroup.procs").read_text().split()]
                except OSError:
                    break
                if not pids:
                    break
                for pid in pids:
                    with contextlib.suppress(ProcessLookupError):
                        os.kill(pid, signal.SIGKILL)
                time.sleep(0.01)

    def remove(self) -> None:
        self.kill()
        for folder in self.folders.values():
            with contextlib.suppress(OSError):
                folder.rmdir()
        self.folders = {}


def limits() -> list[str]:
    """What this machine cannot give the sandboxes, one plain sentence each (empty: every limit holds)."""
    from grader import confine

    missing = []
    group = Cgroup()
    if not group.folders:
        missing.append(
            f"no control groups ({group.why}): memory, processor time and processes are limited per process, "
            "not for a sandbox as a whole; the wall-clock bounds still hold"
        )
    group.remove()
    if confine.arch() not in confine.ARCHES:
        missing.append(f"no seccomp filter for {confine.arch()}: the judge refuses to grade on this machine")
    return missing
