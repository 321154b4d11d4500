"""Make the course's unityagents 0.4.0 client work unchanged on numpy 2, and never wait forever.

`python -m reacher.client_hook --install` (run by `make`) writes `reacher_unityagents.pth`, which loads this
file at start-up to register an import hook, and records this interpreter for the built-in executable.
When a program imports `unityagents`, the hook changes the client:
- `np.float_`, which numpy 2 removed and the client's `step` checks actions against, is given back;
- each wait for the environment ends with an exception when its process has exited, or after
  REACHER_CLIENT_TIMEOUT seconds (default 120; a value that is not positive is refused before any launch);
- a start that fails or is interrupted gives its port back and ends the process it launched;
- a command the environment refuses (status 500) raises UnityEnvironmentException with its reason;
- the gRPC server listens on loopback only (the client's own listens on every interface), and no longer
  shares its port: a second environment on a busy `worker_id` fails at once;
- a message whose shape is not the environment's (a brain it never declared, more than MAX_AGENTS agents, an
  observation of another length, a value not finite) raises UnityEnvironmentException naming it;
- the built-in executable is launched with a secret of its own (SECRET_ENV), which each of its calls carries:
  any other process that calls the port is refused, so only the executable this client launched feeds it;
- a call the client will not answer (it closed, or the caller went away) ends, so none keeps the process alive;
- the executable leaves the reason it exited in a folder this client made for that launch (mkdtemp), read
  as a regular file of at most ERROR_LIMIT bytes, never through a link, never waiting on a FIFO.
"""

import importlib.abc
import importlib.machinery
import math
import os
import secrets
import shutil
import stat
import sys
import tempfile
import threading
import time

PTH_NAME = "reacher_unityagents.pth"
PYTHON_RECORD = os.path.join(os.path.dirname(os.path.abspath(__file__)), "Reacher_Linux_NoVis", "python.path")
ERROR_STATUS = 500  # a command the environment refused; header.message says why
POLL_SECONDS = 0.1
MAX_AGENTS = 1000  # as many arms as the built-in environment allows (reacher.physics.MAX_ARMS)
MAX_SIZE = 10_000  # the longest observation or action a brain may declare
ERRORS_ENV, SECRET_ENV = "REACHER_SERVE_ERRORS", "REACHER_SERVE_SECRET"  # handed to the built-in executable
SECRET_KEY = "reacher-secret"  # the gRPC metadata that carries the secret
ERROR_NAME, ERROR_LIMIT = "error.txt", 4096  # the executable's reason for exiting, in the launch's own folder
BUILT_IN = os.path.realpath(os.path.join(os.path.dirname(os.path.abspath(__file__)), "Reacher_Linux_NoVis"))


def timeout_seconds() -> float:
    value = os.environ.get("REACHER_CLIENT_TIMEOUT", "120")
    try:
        seconds = float(value)
    except ValueError:
        raise ValueError(f"REACHER_CLIENT_TIMEOUT={value!r} is not a number of seconds") from None
    if not seconds > 0:
        raise ValueError(f"REACHER_CLIENT_TIMEOUT={value!r} must be a positive number of seconds")
    return seconds


def _give_numpy_float_back() -> None:
    import numpy as np

    if "float_" not in np.__dict__:
        np.float_ = np.float64


def _wait(communicator, what: str):
    """The next message from the environment, waiting at most timeout_seconds() and not past its exit."""
    from unityagents.exception import UnityEnvironmentException, UnityTimeOutException

    conn, process = communicator.unity_to_external.parent_conn, getattr(communicator, "process", None)
    deadline = time.monotonic() + timeout_seconds()
    while not conn.poll(POLL_SECONDS):
        if process is not None and process.poll() is not None:
            communicator.is_open = False
            code = process.returncode
            ended = f"was killed by signal {-code}" if code < 0 else f"exited with code {code}"
            reason = read_reason(getattr(communicator, "errors", None))  # the built-in executable's, if any
            said = f"It said: {reason}" if reason else "Its own output (stderr) says why."
            raise UnityEnvironmentException(f"The environment process (pid {process.pid}) {ended} {what}. {said}")
        if time.monotonic() > deadline:
            raise UnityTimeOutException(
                f"The environment sent nothing for {timeout_seconds():.0f} s {what} "
                f"(REACHER_CLIENT_TIMEOUT sets the bound)."
            )
    return conn.recv()


def _declared_sizes(output) -> dict:
    """{brain: observation length} from the environment's first message, each brain's sizes checked."""
    from unityagents.exception import UnityEnvironmentException

    sizes = {}
    for brain in output.rl_initialization_output.brain_parameters:
        observed = brain.vector_observation_size * brain.num_stacked_vector_observations
        if not (0 < observed <= MAX_SIZE and 0 < brain.vector_action_size <= MAX_SIZE):
            raise UnityEnvironmentException(
                f"The environment declared brain {brain.brain_name!r} with observations of {observed} and actions "
                f"of {brain.vector_action_size}: each must be from 1 to {MAX_SIZE:,}."
            )
        sizes[brain.brain_name] = observed
    if not sizes:
        raise UnityEnvironmentException("The environment declared no brain.")
    return sizes


def _check_shape(sizes: dict, output) -> None:
    """Refuse, naming it, an answer whose shape is not that of the environment that declared `sizes`."""
    from unityagents.exception import UnityEnvironmentException

    for name, infos in output.rl_output.agentInfos.items():
        agents = infos.value
        if name not in sizes:
            what = f"which it never declared (it declared {sorted(sizes)})"
        elif len(agents) > MAX_AGENTS:
            what = f"with {len(agents):,} agents, more than {MAX_AGENTS:,}"
        else:
            lengths = [len(agent.stacked_vector_observation) for agent in agents]
            values = [a.reward for a in agents] + [x for a in agents for x in a.stacked_vector_observation]
            if any(n != sizes[name] for n in lengths):
                k = next(k for k, n in enumerate(lengths) if n != sizes[name])
                what = f"an observation of {lengths[k]} values for agent {k}; it declared {sizes[name]}"
            elif not all(map(math.isfinite, values)):
                what = "a reward or an observation that is not a finite number"
            else:
                continue
        raise UnityEnvironmentException(f"The environment sent brain {name!r} {what}.")


def read_reason(folder) -> str | None:
    """The reason the executable left in `folder` (made by this client for its launch), if any: a regular file
    only, opened without following a link or waiting on a FIFO, at most ERROR_LIMIT bytes read."""
    if not folder:
        return None
    try:
        fd = os.open(os.path.join(folder, ERROR_NAME), os.O_RDONLY | os.O_NOFOLLOW | os.O_NONBLOCK)
    except OSError:
        return None
    try:
        if not stat.S_ISREG(os.fstat(fd).st_mode):
            return None
        return os.read(fd, ERROR_LIMIT).decode("utf-8", "replace").strip() or None
    finally:
        os.close(fd)


def write_reason(text: str) -> None:
    """For the executable: `text` as the reason it exits, in the folder its client made for it (ERRORS_ENV), as a
    new file (O_EXCL|O_NOFOLLOW); nothing where it was started by hand."""
    folder = os.environ.get(ERRORS_ENV)
    if not folder:
        return
    try:
        flags = os.O_WRONLY | os.O_CREAT | os.O_EXCL | os.O_NOFOLLOW | os.O_NONBLOCK
        fd = os.open(os.path.join(folder, ERROR_NAME), flags, 0o600)
    except OSError:
        return
    with os.fdopen(fd, "w") as f:
        f.write(text[:ERROR_LIMIT])


def _servicer(module, secret):
    """The client's gRPC servicer, refusing calls that do not carry `secret` (where there is one), and ending any
    call it will not answer (closed, or its caller gone) instead of waiting on it for ever."""
    import grpc

    class Checked(module.UnityToExternalServicerImplementation):
        closed = False

        def Exchange(self, request, context):
            if secret is not None and dict(context.invocation_metadata()).get(SECRET_KEY) != secret:
                context.abort(grpc.StatusCode.PERMISSION_DENIED, "only the executable this client launched calls it")
            self.child_conn.send(request)
            while not self.child_conn.poll(POLL_SECONDS):
                if self.closed or not context.is_active():
                    context.abort(grpc.StatusCode.CANCELLED, "the client closed, or the caller went away")
            return self.child_conn.recv()

        Initialize = Exchange

    servicer = Checked()
    _open_servicers.add(servicer)
    return servicer


_open_servicers = set()


def _close_servicers() -> None:
    """At exit, before Python joins the gRPC server's threads: every call still waiting ends."""
    for servicer in list(_open_servicers):
        servicer.closed = True


if hasattr(threading, "_register_atexit"):  # run before the thread pools are joined (later ones run first)
    threading._register_atexit(_close_servicers)


def _send(self, inputs) -> None:
    """The trainer's inputs to the environment, as one message of status 200."""
    from communicator_objects import UnityMessage

    message = UnityMessage()
    message.header.status = 200
    message.unity_input.CopyFrom(inputs)
    self.unity_to_external.parent_conn.send(message)


def _initializer(module):
    """RpcCommunicator.initialize: serve on loopback, wait for the launched environment, check its sizes."""
    from concurrent.futures import ThreadPoolExecutor

    import grpc
    from communicator_objects import UnityMessage, add_UnityToExternalServicer_to_server
    from unityagents.exception import UnityTimeOutException

    def initialize(self, inputs):
        self.server = grpc.server(ThreadPoolExecutor(max_workers=10), options=[("grpc.so_reuseport", 0)])
        self.unity_to_external = _servicer(module, getattr(self, "secret", None))
        add_UnityToExternalServicer_to_server(self.unity_to_external, self.server)
        try:
            bound = self.server.add_insecure_port(f"127.0.0.1:{self.port}")  # loopback: no other host drives it
        except RuntimeError:
            bound = 0
        if not bound:
            raise UnityTimeOutException(
                f"Port {self.port} (worker_id {self.worker_id}) is in use, by another environment or program: "
                f"close that environment, or pass another worker_id."
            )
        answering = False  # whether the environment's last call waits for an answer
        try:
            self.server.start()
            # Anything left in the class-wide pipe by an earlier environment in this process is not ours.
            while self.unity_to_external.parent_conn.poll():
                self.unity_to_external.parent_conn.recv()
            aca_param, answering = _wait(self, "before it started").unity_output, True
            self.sizes = _declared_sizes(aca_param)
            self.is_open = True
            _send(self, inputs)
            answering = False
            started, answering = _wait(self, "while it started"), True
            _check_shape(self.sizes, started.unity_output)
            return aca_param
        except BaseException:
            # A start that failed or was interrupted (Ctrl-C) gives its port back, so a retry can take it; a
            # call of the environment's that waits is answered with a close (400), so nothing waits on.
            self.is_open = False
            if answering:
                self.unity_to_external.parent_conn.send(UnityMessage(header={"status": 400}))
            self.server.stop(None).wait()
            raise

    return initialize


def _patch_communicator(module) -> None:
    from unityagents.exception import UnityEnvironmentException

    RpcCommunicator = module.RpcCommunicator
    construct = RpcCommunicator.__init__

    def __init__(self, *args, **kwargs):
        timeout_seconds()  # UnityEnvironment makes this first: a bad bound fails before any launch or port
        construct(self, *args, **kwargs)

    initialize = _initializer(module)

    def exchange(self, inputs):
        if not self.is_open:
            raise UnityEnvironmentException("The environment is closed, or its process has ended.")
        _send(self, inputs)
        output = _wait(self, "before answering")
        if output.header.status == ERROR_STATUS:
            raise UnityEnvironmentException(f"The environment refused the command: {output.header.message}")
        if output.header.status != 200:
            return None
        try:
            _check_shape(self.sizes, output.unity_output)
        except UnityEnvironmentException:
            self.close()  # nothing more it sends is trusted: the environment is told to stop, and its process ends
            if getattr(self, "process", None) is not None:
                self.process.kill()
            raise
        return output.unity_output

    close = RpcCommunicator.close

    def closing(self):
        servicer = getattr(self, "unity_to_external", None)
        if servicer is not None:
            servicer.closed = True  # a call still waiting ends
            _open_servicers.discard(servicer)
        try:
            close(self)
        finally:
            if getattr(self, "errors", None):
                shutil.rmtree(self.errors, ignore_errors=True)

    RpcCommunicator.__init__, RpcCommunicator.initialize, RpcCommunicator.exchange = __init__, initialize, exchange
    RpcCommunicator.close = closing


def _patch_environment(module) -> None:
    UnityEnvironment = module.UnityEnvironment
    launch, send = UnityEnvironment.executable_launcher, UnityEnvironment.send_academy_parameters

    def executable_launcher(self, file_name, *args, **kwargs):
        communicator = self.communicator
        if os.path.realpath(os.path.dirname(file_name.strip())) == BUILT_IN:  # the project's own executable
            communicator.errors = tempfile.mkdtemp(prefix="reacher-serve-")  # this launch's, private (0700)
            communicator.secret = secrets.token_hex(32)
            handed = {ERRORS_ENV: communicator.errors, SECRET_ENV: communicator.secret}
            saved = {k: os.environ.get(k) for k in handed}
            os.environ.update(handed)  # inherited by the process launched now, and by no later one
            try:
                launch(self, file_name, *args, **kwargs)
            finally:
                for k, v in saved.items():
                    os.environ.pop(k) if v is None else os.environ.__setitem__(k, v)
        else:
            launch(self, file_name, *args, **kwargs)
        communicator.process = self.proc1  # so that a wait can tell a dead process from a slow one

    def send_academy_parameters(self, *args, **kwargs):
        try:
            return send(self, *args, **kwargs)
        except BaseException:
            self._close()  # the client only does this on a timeout: the launched process goes too
            raise

    UnityEnvironment.executable_launcher = executable_launcher
    UnityEnvironment.send_academy_parameters = send_academy_parameters


PATCHES = {"unityagents.environment": _patch_environment, "unityagents.rpc_communicator": _patch_communicator}


class _PatchingLoader(importlib.abc.Loader):
    def __init__(self, loader, patch):
        self.loader, self.patch = loader, patch

    def create_module(self, spec):
        return self.loader.create_module(spec)

    def exec_module(self, module):
        _give_numpy_float_back()
        self.loader.exec_module(module)
        self.patch(module)
        module._reacher_patched = True


class _Finder(importlib.abc.MetaPathFinder):
    """Finds the client's modules as Python would, and patches each once it has run."""

    reacher_client_hook = True  # one finder, even if this file is loaded twice (the .pth and open_environment)

    def find_spec(self, name, path=None, target=None):
        if name not in PATCHES:
            return None
        spec = importlib.machinery.PathFinder.find_spec(name, path)
        if spec is None or spec.loader is None:
            return None
        spec.loader = _PatchingLoader(spec.loader, PATCHES[name])
        return spec


def install_hook() -> None:
    """Register the import hook (idempotent); a client imported before this is patched at once."""
    if not any(getattr(f, "reacher_client_hook", False) for f in sys.meta_path):
        sys.meta_path.insert(0, _Finder())
    for name, patch in PATCHES.items():
        module = sys.modules.get(name)
        if module is not None and not module.__dict__.get("_reacher_patched"):
            _give_numpy_float_back()
            patch(module)
            module._reacher_patched = True


def install(site_packages: str | None = None) -> list[str]:
    """Write the .pth into this interpreter's site-packages and record the interpreter for the executable."""
    import sysconfig

    target = os.path.join(site_packages or sysconfig.get_path("purelib"), PTH_NAME)
    # The .pth loads this file by path (importing `reacher` would load mujoco), and nothing once the project moved.
    pth = (
        f"import os, importlib.util as u; p = {os.path.abspath(__file__)!r}; s = os.path.exists(p) and "
        "u.spec_from_file_location('reacher_client_hook', p); m = s and u.module_from_spec(s); "
        "s and s.loader.exec_module(m); m and m.install_hook()\n"
    )
    files = {target: pth, PYTHON_RECORD: sys.executable + "\n"}
    for path, text in files.items():
        with open(path + ".tmp", "w") as f:
            f.write(text)
        os.replace(path + ".tmp", path)
    return list(files)


if __name__ == "__main__":
    import argparse

    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--install", action="store_true", help="write the .pth and record this interpreter")
    if parser.parse_args().install:
        for path in install():
            print(f"wrote {path}")
    else:
        parser.print_help()
