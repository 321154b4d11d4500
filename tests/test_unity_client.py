"""The real unityagents 0.4.0 client drives the built-in executable as it would a Unity build.

unityagents allows one UnityEnvironment per Python process, so each client runs in its own.
"""
import os
import subprocess
import sys
import textwrap
import time

import pytest

from reacher import BUILT_IN_EXECUTABLE

pytest.importorskip("unityagents", reason="the unityagents 0.4.0 client is part of requirements")
psutil = pytest.importorskip("psutil", reason="psutil comes with ipykernel, part of requirements")
pytestmark = pytest.mark.skipif(sys.platform == "win32", reason="the built-in executable is a POSIX shell "
                                "script (reacher/Reacher_Linux_NoVis/Reacher.x86_64); Windows cannot launch it")

CLIENT = textwrap.dedent("""
    import sys, numpy as np
    import reacher                      # first: on numpy 2 it gives the client the np.float_ it uses
    from unityagents import UnityEnvironment
    worker = int(sys.argv[1])
    env = UnityEnvironment(file_name=sys.argv[2], worker_id=worker, seed=worker, no_graphics=True)
    name = env.brain_names[0]
    assert env.brains[name].vector_action_space_size == 4
    info = env.reset(train_mode=True)[name]
    assert info.vector_observations.shape == (20, 33)
    steps, score = 0, np.zeros(20)
    while True:
        info = env.step(np.clip(np.random.randn(20, 4), -1, 1))[name]
        steps += 1
        score += info.rewards
        if np.any(info.local_done):
            break
    assert steps == 1001 and all(info.local_done) and all(info.max_reached), steps
    assert np.allclose(info.vector_observations[:, 1], -4.0)     # the next episode's start
    info = env.reset(train_mode=True, config={"goal_speed": 0.0})[name]
    assert np.all(info.vector_observations[:, 32] == 0.0)
    env.step(np.zeros((20, 4)))
    print("PID", env.proc1.pid, "SCORE", score.mean(), flush=True)
    env.close()
""")


def alive(pid):
    """True if pid runs and is not a zombie (psutil: the same answer on Linux, macOS and Windows)."""
    try:
        return psutil.Process(pid).status() != psutil.STATUS_ZOMBIE
    except psutil.NoSuchProcess:
        return False


def test_two_clients_drive_the_executable_and_leave_nothing_behind(tmp_path):
    script = tmp_path / "client.py"
    script.write_text(CLIENT)
    env = dict(os.environ, REACHER_PYTHON=sys.executable)
    base = 20 + os.getpid() % 2000          # ports 5025-7025: clear of a default Unity run
    clients = [subprocess.Popen([sys.executable, str(script), str(base + k), BUILT_IN_EXECUTABLE],
                                stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, env=env, cwd=tmp_path)
               for k in range(2)]
    outputs = [c.communicate(timeout=600) for c in clients]
    for client, (out, err) in zip(clients, outputs):
        assert client.returncode == 0, err[-3000:]
        assert "'Academy' started successfully!" in err
    pids = [int(out.split("PID")[1].split()[0]) for out, _ in outputs]
    deadline = time.monotonic() + 30       # give the killed servers time to go
    while any(alive(p) for p in pids) and time.monotonic() < deadline:
        time.sleep(0.2)
    assert not any(alive(p) for p in pids), "an environment process outlived its client"
