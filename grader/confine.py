"""A fresh box for one request, made inside the sandbox by the contestant's forked child before any student code.

Trusted by: the judge, through the contestant (it runs there, on the contestant's side of the sandbox). The
sandbox's PID 1 holds one capability, CAP_SYS_ADMIN in the sandbox's own user namespace, for this alone: each
child it forks for a request
- unshares a mount and an IPC namespace, and mounts a new `/scratch` tmpfs of `TMP_BYTES` over the one before:
  its only writable place, gone with the child (the root and `/dev` are read-only, and so is PID 1's `/scratch`
  beneath it); no System V object outlives it either;
- drops every capability, sets no_new_privs, and installs a seccomp filter that refuses what a contestant
  never needs and a box cannot allow: new namespaces (`unshare`, `setns`, `clone` with a namespace flag),
  mounts, `ptrace` and reading other processes' memory, the kernel's keyrings (which outlive a process), `bpf`,
  `perf_event_open`, `userfaultfd`, io_uring (whose work bypasses seccomp), modules, `kexec`, `reboot`, swap,
  the clock and the like. `clone3` gets ENOSYS, so that the C library falls back to `clone`, whose flags the
  filter can read. A system call of another architecture kills the process.
Nothing a request's code leaves can reach the next request: its processes are killed by PID 1 afterwards, and
its files, IPC objects and keys have nowhere to live.
"""

import ctypes
import errno
import os
import platform
import struct

TMP_BYTES = 64 << 20  # the writable space of one request
SCRATCH = "/scratch"

CLONE_NEWNS, CLONE_NEWIPC = 0x00020000, 0x08000000
NAMESPACES = 0x7E020080  # every CLONE_NEW* flag: NS, CGROUP, UTS, IPC, USER, PID, NET and TIME
MS_NOSUID, MS_NODEV, MS_NOEXEC, MS_REC, MS_PRIVATE = 0x2, 0x4, 0x8, 0x4000, 0x40000

# The refused system calls, by name, and their numbers on each architecture the filter knows (the kernel's
# tables: arch/x86/entry/syscalls/syscall_64.tbl and include/uapi/asm-generic/unistd.h).
REFUSED = {
    # name: (x86_64, aarch64)
    "unshare": (272, 97),
    "setns": (308, 268),
    "mount": (165, 40),
    "umount2": (166, 39),
    "pivot_root": (155, 41),
    "chroot": (161, 51),
    "open_tree": (428, 428),
    "move_mount": (429, 429),
    "fsopen": (430, 430),
    "fsconfig": (431, 431),
    "fsmount": (432, 432),
    "fspick": (433, 433),
    "mount_setattr": (442, 442),
    "ptrace": (101, 117),
    "process_vm_readv": (310, 270),
    "process_vm_writev": (311, 271),
    "keyctl": (250, 219),
    "add_key": (248, 217),
    "request_key": (249, 218),
    "bpf": (321, 280),
    "perf_event_open": (298, 241),
    "userfaultfd": (323, 282),
    "io_uring_setup": (425, 425),
    "io_uring_enter": (426, 426),
    "io_uring_register": (427, 427),
    "init_module": (175, 105),
    "finit_module": (313, 273),
    "delete_module": (176, 106),
    "kexec_load": (246, 104),
    "kexec_file_load": (320, 294),
    "reboot": (169, 142),
    "swapon": (167, 224),
    "swapoff": (168, 225),
    "acct": (163, 89),
    "quotactl": (179, 60),
    "open_by_handle_at": (304, 265),
    "name_to_handle_at": (303, 264),
    "fanotify_init": (300, 262),
    "personality": (135, 92),
    "syslog": (103, 116),
    "settimeofday": (164, 170),
    "clock_settime": (227, 112),
    "clock_adjtime": (305, 266),
    "adjtimex": (159, 171),
    "sethostname": (170, 161),
    "setdomainname": (171, 162),
    "vhangup": (153, 58),
}
ARCHES = {"x86_64": (0, 0xC000003E, 56, 435), "aarch64": (1, 0xC00000B7, 220, 435)}  # column, AUDIT_ARCH, clone, clone3
X32 = 0x40000000  # x86_64's x32 ABI: the same calls under other numbers


def arch() -> str | None:
    """This machine's architecture, if the filter knows its system calls."""
    machine = platform.machine().lower()
    return {"amd64": "x86_64", "arm64": "aarch64"}.get(machine, machine) if machine else None


def program(machine: str) -> bytes:
    """The seccomp filter (classic BPF, `struct sock_filter` each) for `machine`."""
    if machine not in ARCHES:
        raise RuntimeError(f"no seccomp filter for the architecture {machine!r}: the sandbox cannot be confined")
    column, audit, clone, clone3 = ARCHES[machine]
    ld, jeq, jge, jset, ret = 0x20, 0x15, 0x35, 0x45, 0x06
    allow, kill = 0x7FFF0000, 0x80000000
    deny, nosys = 0x00050000 | errno.EPERM, 0x00050000 | errno.ENOSYS
    refused = sorted({numbers[column] for numbers in REFUSED.values()})
    # Layout: the checks, then four returns at fixed places from the end: ALLOW, the clone check, DENY, ENOSYS.
    head = [(ld, 0, 0, 4), (jeq, 1, 0, audit), (ret, 0, 0, kill), (ld, 0, 0, 0)]
    checks = [("ge", X32)] if machine == "x86_64" else []
    checks += [("nosys", clone3), ("clone", clone)] + [("deny", nr) for nr in refused]
    tail_start = len(head) + len(checks)
    clone_at = tail_start + 1  # after ALLOW: ld args[0] (its low word), jset, then ret ALLOW
    deny_at, nosys_at = tail_start + 4, tail_start + 5
    out = list(head)
    for k, (kind, value) in enumerate(checks):
        at = len(head) + k
        target = {"ge": deny_at, "nosys": nosys_at, "clone": clone_at, "deny": deny_at}[kind]
        out.append((jge if kind == "ge" else jeq, target - at - 1, 0, value))
    out += [(ret, 0, 0, allow), (ld, 0, 0, 16), (jset, 1, 0, NAMESPACES), (ret, 0, 0, allow)]
    out += [(ret, 0, 0, deny), (ret, 0, 0, nosys)]
    assert all(0 <= jt < 256 for _, jt, _, _ in out)
    return b"".join(struct.pack("=HBBI", *instruction) for instruction in out)


class _Program(ctypes.Structure):
    _fields_ = [("len", ctypes.c_ushort), ("filter", ctypes.c_void_p)]


def _check(result: int, what: str) -> None:
    if result != 0:
        raise OSError(ctypes.get_errno(), f"{what}: {os.strerror(ctypes.get_errno())}")


def fresh_box(scratch: str = SCRATCH, tmp_bytes: int = TMP_BYTES) -> None:
    """In a forked child, before anything of a submission runs: its own writable place and IPC, then no
    capability and the filter (see the module's docstring). Raises OSError if any step fails: the request
    then fails, and no student code has run."""
    libc = ctypes.CDLL(None, use_errno=True)
    _check(libc.unshare(CLONE_NEWNS | CLONE_NEWIPC), "unshare")
    _check(libc.mount(b"none", b"/", None, MS_REC | MS_PRIVATE, None), "mount --make-rprivate /")
    options = f"size={tmp_bytes},nr_inodes=4096,mode=1777".encode()
    flags = MS_NOSUID | MS_NODEV | MS_NOEXEC
    _check(libc.mount(b"tmpfs", scratch.encode(), b"tmpfs", flags, options), f"mount tmpfs {scratch}")
    # capset(2), version 3: no effective, permitted or inheritable capability left
    header = struct.pack("=Ii", 0x20080522, 0)
    _check(libc.syscall(_capset(), header, bytes(24)), "capset")
    _check(libc.prctl(38, 1, 0, 0, 0), "PR_SET_NO_NEW_PRIVS")
    code = program(arch())
    buffer = ctypes.create_string_buffer(code)
    prog = _Program(len(code) // 8, ctypes.cast(buffer, ctypes.c_void_p))
    _check(libc.prctl(22, 2, ctypes.byref(prog), 0, 0), "PR_SET_SECCOMP")


def _capset() -> int:
    return {"x86_64": 126, "aarch64": 91}[arch()]
