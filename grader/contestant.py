"""The contestant: runs a submission's code on the judge's inputs, inside the sandbox, and sends back plain data.

Trusted by: nobody. Nothing it sends counts as a verdict: the judge compares it with the reference's
answers. It holds the given code of the student edition and the student's cells, no hidden test and no
reference. It runs as PID 1 of the sandbox's own PID namespace (`grader.sandbox`), which no process in
it can kill or stop, and talks to the judge on its stdin and stdout, one line (`grader.wire`) a message:

- first `{"given": [sources]}`: the edition's given code and stubs, run once here (no student code);
- then, per blank, `{"blank", "source", "inputs"}` (the student's cell, the judge's inputs), or
  `{"program": cells}` (the visible checks, for a student's own check), each run in a forked child that makes
  itself a fresh box first (`grader.confine`: its own writable place and IPC, no capability, a seccomp
  filter), then has a CPU-time limit, a memory limit and no descriptor but its reply pipe. Its reply is read
  whole, within `REPLY` bytes and a wall-clock bound; then every other process of the sandbox is killed, so
  nothing a request leaves reaches the next.
"""

import contextlib
import ctypes
import io
import os
import resource
import select
import signal
import sys
import time
import traceback

from grader import cases, confine, wire

REPLY = wire.REPLY  # bytes a child's reply may hold
WALL = 3  # a child's wall-clock bound, in multiples of its CPU bound: for code that waits rather than computes


def _error(error: BaseException, cell: dict | None = None) -> str:
    """One line a student can act on: the error, and for a bare `assert` the line of the cell that failed."""
    text = f"{type(error).__name__}: {error}"
    frames = [f for f in traceback.extract_tb(error.__traceback__) if not f.filename.startswith(("/", "<"))]
    if isinstance(error, NotImplementedError) and frames:  # nbgrader's stub, met in a blank's code
        text += f"{frames[-1].name}, in {frames[-1].filename}, is still the stub as handed out"
    if cell is not None and isinstance(error, AssertionError) and not str(error):
        lines = [f.lineno for f in traceback.extract_tb(error.__traceback__) if f.filename == cell["name"]]
        source = cell["source"].splitlines()
        if lines and 0 < lines[-1] <= len(source):
            text += f"{source[lines[-1] - 1].strip()} (line {lines[-1]} of {cell['name']})"
    return " ".join(text.split())[:500]


def _run_case(ns: dict, blank: str, source: str | None, inputs: dict) -> dict:
    if source is not None:
        exec(compile(source, blank, "exec"), ns)
    return {"outputs": cases.run(blank, ns, inputs)}


def _run_program(ns: dict, cells: list, first: bool = False) -> dict:
    failed = {}
    for cell in cells:
        try:
            exec(compile(cell["source"], cell["name"], "exec"), ns)
        except BaseException as error:  # a check that fails, or a cell that raises: named, and the next runs
            if cell["kind"] in ("graded", "student", "check"):  # a check before it may need another blank
                failed[cell["name"]] = _error(error, cell)
                if first:
                    break
    return {"failed": failed}


def _child(ns: dict, request: dict, write: int, memory: int, cpu: float) -> None:
    """In the forked child: limits, nothing but the reply pipe, then the student's code; never returns."""
    try:
        confine.fresh_box()
        with open("/proc/self/statm") as statm:
            pages = int(statm.read().split()[0]) * os.sysconf("SC_PAGE_SIZE")
        resource.setrlimit(resource.RLIMIT_AS, (pages + memory, pages + memory))
        resource.setrlimit(resource.RLIMIT_CPU, (int(cpu), int(cpu) + 1))
        devnull = os.open(os.devnull, os.O_RDWR)
        for fd in (0, 1, 2):
            os.dup2(devnull, fd)
        os.closerange(3, write)
        os.closerange(write + 1, 1 << 16)
        sys.stdout = sys.stderr = io.StringIO()
        if "program" in request:
            reply = _run_program(ns, request["program"], bool(request.get("first")))
        else:
            reply = _run_case(ns, request["blank"], request.get("source"), request["inputs"])
        data = wire.encode(reply)
    except BaseException as error:  # MemoryError and SystemExit included: the reply says what it was
        try:
            data = wire.encode({"error": _error(error), "trace": traceback.format_exc()[-1500:]})
        except BaseException:
            data = b'{"error": "the reply could not be written"}\n'
    view = memoryview(data)
    while view:
        view = view[os.write(write, view[: 1 << 16]) :]
    os._exit(0)


def _reap_all(bound: float = 5.0) -> None:
    """As PID 1 of the namespace: end every other process in it (a fork made meanwhile included), collect them."""
    deadline = time.monotonic() + bound
    while time.monotonic() < deadline:
        with contextlib.suppress(ProcessLookupError):
            os.kill(-1, signal.SIGKILL)
        try:
            while os.waitpid(-1, os.WNOHANG)[0]:
                pass
        except ChildProcessError:
            return
        time.sleep(0.01)
    raise SystemExit("processes of the sandbox outlived their kill")  # the judge then starts a fresh sandbox


def _fork(ns: dict, request: dict, memory: int, cpu: float, wall: float) -> dict:
    read, write = os.pipe()
    pid = os.fork()
    if pid == 0:
        os.close(read)
        _child(ns, request, write, memory, cpu)
    os.close(write)
    chunks, size, deadline = [], 0, time.monotonic() + wall
    reply = status = None
    while True:
        left = deadline - time.monotonic()
        if left <= 0:
            reply = {"error": f"TimeoutError: no answer in {wall:g} s (a loop that waits, or sleeps?)"}
            break
        if not select.select([read], [], [], min(left, 0.25))[0]:
            if status is not None:  # ended, but a process it left holds the pipe open
                continue
            done, code = os.waitpid(pid, os.WNOHANG | os.WUNTRACED)
            if done and os.WIFSTOPPED(code):  # stopped by a signal: it will never answer
                reply = {"error": "the code's process stopped itself (a signal?)"}
                break
            if done:
                status = code
            continue
        chunk = os.read(read, 1 << 16)
        if not chunk:
            break
        size += len(chunk)
        if size > REPLY:
            reply = {"error": f"a reply of more than {REPLY} bytes"}
            break
        chunks.append(chunk)
        if b"\n" in chunk:  # the answer is one line: whatever its processes still hold open, it is complete
            break
    os.close(read)
    with contextlib.suppress(ProcessLookupError):
        os.kill(pid, signal.SIGKILL)
    if status is None or os.WIFSTOPPED(status):
        _, status = os.waitpid(pid, 0)
    _reap_all()  # the child's box (its mounts and IPC) goes with its last process
    if reply is None:
        data = b"".join(chunks)
        if not data:
            killed = os.WIFSIGNALED(status) and os.WTERMSIG(status) in (signal.SIGXCPU, signal.SIGKILL)
            reply = {
                "error": f"TimeoutError: the code used its {cpu:g} s of processor time (a loop that never ends?)"
                if killed
                else "the code's process died without an answer (out of memory?)"
            }
        elif data.count(b"\n") != 1 or not data.endswith(b"\n"):
            reply = {"error": "the reply was not one line"}
        else:
            return {"raw": data}
    return reply


def main() -> None:
    """The sandbox's PID 1: given code once, then one forked child per request."""
    libc = ctypes.CDLL(None, use_errno=True)
    libc.prctl(4, 0, 0, 0, 0)  # PR_SET_DUMPABLE 0: no child can read or write this process's memory
    for sig in (signal.SIGTERM, signal.SIGINT, signal.SIGHUP, signal.SIGUSR1, signal.SIGUSR2, signal.SIGPIPE):
        signal.signal(sig, signal.SIG_IGN)  # as PID 1, only signals it handles reach it from inside
    protocol_in, protocol_out = os.fdopen(os.dup(0), "rb"), os.fdopen(os.dup(1), "wb")
    devnull = os.open(os.devnull, os.O_RDWR)
    for fd in (0, 1, 2):
        os.dup2(devnull, fd)
    sys.stdout = sys.stderr = io.StringIO()
    import matplotlib

    matplotlib.use("Agg")
    import numba  # noqa: F401
    import numpy as np
    import torch
    import torch._dynamo  # noqa: F401  (Adam's step imports it on first use)

    torch.set_num_threads(1)
    ns = {"__name__": "__main__"}
    first = wire.decode(protocol_in.readline(wire.LIMIT))
    for source in first["given"]:
        exec(compile(source, "given", "exec"), ns)
    tree = ns["SumTree"](4, ns["walk_step"])  # numba's compilations of the given code, paid once before the forks
    tree[np.arange(2)] = np.ones(2)
    sys.stdout = sys.stderr = io.StringIO()
    protocol_out.write(wire.encode({"ready": True}))
    protocol_out.flush()
    limits = first.get("limits", {})
    memory, cpu = int(limits.get("memory", 4 << 30)), float(limits.get("cpu", 10))
    while True:
        line = protocol_in.readline(wire.LIMIT)
        if not line:
            return
        request = wire.decode(line)
        seconds = float(request.get("cpu") or cpu)  # a program of the whole lesson may ask for more
        reply = _fork(ns, request, memory, seconds, WALL * seconds)
        if "raw" in reply:
            protocol_out.write(reply["raw"])
        else:
            protocol_out.write(wire.encode(reply))
        protocol_out.flush()


if __name__ == "__main__":
    main()
