"""The real unityagents 0.4.0 client drives the built-in executable as it would a Unity build.

unityagents allows one UnityEnvironment per Python process, so each client runs in its own.
"""

import os
import shutil
import subprocess
import sys
import sysconfig
import textwrap
import time
from pathlib import Path

import pytest

from reacher import BUILT_IN_EXECUTABLE

pytest.importorskip("unityagents", reason="the unityagents 0.4.0 client is part of requirements")
psutil = pytest.importorskip("psutil", reason="psutil comes with ipykernel, part of requirements")


def loopback_works() -> bool:
    """Whether this machine can reach itself on 127.0.0.1: the client and the executable talk over it,
    and a network namespace with no interface up (`unshare -n`) has none."""
    import socket

    try:
        with socket.socket() as server:
            server.bind(("127.0.0.1", 0))
            server.listen()
            socket.create_connection(server.getsockname(), timeout=5).close()
        return True
    except OSError:
        return False


pytestmark = [
    pytest.mark.skipif(
        sys.platform == "win32",
        reason="the built-in executable is a POSIX shell script "
        "(reacher/Reacher_Linux_NoVis/Reacher.x86_64); Windows cannot launch it",
    ),
    pytest.mark.skipif(
        not loopback_works(),
        reason="no loopback interface (127.0.0.1 unreachable, as in "
        "`unshare -n`): the unityagents client and the executable talk over it",
    ),
]

CLIENT = textwrap.dedent("""
    import sys, numpy as np
    from unityagents import UnityEnvironment     # as the course does: nothing of this project imported
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
    assert not any(m == "reacher" or m.startswith("reacher.") for m in sys.modules)
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
    base = 20 + os.getpid() % 2000  # ports 5025-7025: clear of a default Unity run
    clients = [
        subprocess.Popen(
            [sys.executable, str(script), str(base + k), BUILT_IN_EXECUTABLE],
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            text=True,
            env=env,
            cwd=tmp_path,
        )
        for k in range(2)
    ]
    outputs = [c.communicate(timeout=600) for c in clients]
    for client, (_, err) in zip(clients, outputs):
        assert client.returncode == 0, err[-3000:]
        assert "'Academy' started successfully!" in err
    pids = [int(out.split("PID")[1].split()[0]) for out, _ in outputs]
    deadline = time.monotonic() + 30  # give the killed servers time to go
    while any(alive(p) for p in pids) and time.monotonic() < deadline:
        time.sleep(0.2)
    assert not any(alive(p) for p in pids), "an environment process outlived its client"


COURSE = (
    textwrap.dedent("""
    # The opening cells of the course's Continuous_Control.ipynb, as written there.
    from unityagents import UnityEnvironment
    import numpy as np
    import sys
    env = UnityEnvironment(file_name=sys.argv[1], worker_id=int(sys.argv[2]))
    brain_name = env.brain_names[0]
    brain = env.brains[brain_name]
    env_info = env.reset(train_mode=True)[brain_name]
    num_agents = len(env_info.agents)
    action_size = brain.vector_action_space_size
    states = env_info.vector_observations
    scores = np.zeros(num_agents)
    for t in range(50):
        actions = np.clip(np.random.randn(num_agents, action_size), -1, 1)
        env_info = env.step(actions)[brain_name]
        scores += env_info.rewards
        assert not np.any(env_info.local_done)
    project = sorted(m for m in sys.modules if m.split(".")[0] == "reacher")
    print("AGENTS", num_agents, "STATE", states.shape[1], "PROJECT", project)
""")
    + "{extra}\nenv.close()\n"
)


def run_client(
    tmp_path, extra: str = "", worker: int = 0, executable: str = BUILT_IN_EXECUTABLE, **environ
) -> subprocess.CompletedProcess:
    """The course's opening cells and `extra` in a fresh interpreter of this environment; at most 120 s."""
    script = tmp_path / f"course{worker}.py"
    script.write_text(COURSE.replace("{extra}", textwrap.dedent(extra)))
    env = {k: v for k, v in os.environ.items() if k not in ("REACHER_PYTHON", "PYTHONPATH")}
    return subprocess.run(
        [sys.executable, str(script), executable, str(worker or 30 + os.getpid() % 2000)],
        capture_output=True,
        text=True,
        cwd=tmp_path,
        timeout=120,
        env={**env, **environ},
    )


def test_the_course_notebook_runs_unchanged_on_numpy_2(tmp_path):
    import numpy

    done = run_client(tmp_path)
    assert done.returncode == 0, done.stderr[-3000:]
    assert "AGENTS 20 STATE 33 PROJECT []" in done.stdout
    assert int(numpy.__version__.split(".")[0]) >= 2 or "float_" in numpy.__dict__


REFUSED = """
    import time
    for bad, call in [("NaN actions", lambda: env.step(np.full((num_agents, 4), np.nan))),
                      ("goal_size", lambda: env.reset(config={"goal_size": -1.0}))]:
        start = time.monotonic()
        try:
            call()
        except Exception as error:
            print("REFUSED", type(error).__name__, round(time.monotonic() - start, 1), str(error).splitlines()[0])
    env.reset(train_mode=True)                                  # the environment is still up
    print("AFTER", len(env.step(np.zeros((num_agents, 4)))[brain_name].rewards))
"""


def test_bad_input_through_the_client_raises_at_once_and_the_environment_stays_up(tmp_path):
    done = run_client(tmp_path, REFUSED)
    assert done.returncode == 0, done.stderr[-3000:]
    refused = [line.split(" ", 3) for line in done.stdout.splitlines() if line.startswith("REFUSED")]
    assert [r[1] for r in refused] == ["UnityEnvironmentException"] * 2, done.stdout
    assert all(float(r[2]) < 10 for r in refused)
    assert "NaN" in refused[0][3] and "goal_size" in refused[1][3] and "[0, 100]" in refused[1][3]
    assert "AFTER 20" in done.stdout


ROGUE = """
import sys
import reacher.serve as serve

make, answers = serve._output_message, []


def output(co, info):  # the built-in's answers, the third (the second step's) of them altered
    message = make(co, info)
    answers.append(message)
    infos = message.unity_output.rl_output.agentInfos
    agents = infos["ReacherBrain"].value
    if len(answers) == 3:
        FAULT
    return message


serve._output_message = output
sys.exit(serve.main(sys.argv[1:]))
"""
SHAPES = {  # what a rogue environment sends: what the refusal names
    "del agents[3].stacked_vector_observation[-1]": "32 values for agent 3; it declared 33",
    "agents[5].reward = float('nan')": "not a finite number",
    "agents[0].stacked_vector_observation[7] = float('inf')": "not a finite number",
    "infos['Rogue'].CopyFrom(infos['ReacherBrain']); del infos['ReacherBrain']": "'Rogue' which it never declared",
    "[agents.add().CopyFrom(agents[0]) for _ in range(981)]": "1,001 agents, more than 1,000",
}


@pytest.mark.parametrize("fault", SHAPES)
def test_a_message_not_of_the_environments_shape_is_refused_naming_it(tmp_path, fault):
    (tmp_path / "rogue.py").write_text(ROGUE.replace("FAULT", fault))
    rogue = tmp_path / "Rogue.x86_64"
    rogue.write_text(f'#!/bin/sh\nexec "{sys.executable}" "{tmp_path / "rogue.py"}" "$@"\n')
    rogue.chmod(0o755)
    done = run_client(tmp_path, executable=str(rogue), worker=60 + os.getpid() % 2000 + list(SHAPES).index(fault))
    assert done.returncode != 0 and "AGENTS" not in done.stdout, done.stdout
    last = done.stderr.strip().splitlines()[-1]
    assert last.startswith("unityagents.exception.UnityEnvironmentException") and SHAPES[fault] in last, last


def test_a_server_killed_mid_run_ends_in_an_error_not_a_hang(tmp_path):
    done = run_client(
        tmp_path,
        """
        import os, signal
        os.kill(env.proc1.pid, signal.SIGKILL)
        try:
            env.step(np.zeros((num_agents, 4)))
        except Exception as error:
            print("ENDED", type(error).__name__, error)
    """,
    )
    assert "ENDED UnityEnvironmentException" in done.stdout and "killed by signal 9" in done.stdout, done.stderr[-3000:]


def test_a_second_client_on_a_busy_worker_id_is_refused_and_the_first_goes_on_and_listens_on_loopback_only(tmp_path):
    worker = 40 + os.getpid() % 2000
    first = subprocess.Popen(
        [
            sys.executable,
            "-c",
            textwrap.dedent(f"""
        import sys, time, numpy as np
        from unityagents import UnityEnvironment
        env = UnityEnvironment(file_name={BUILT_IN_EXECUTABLE!r}, worker_id={worker})
        name = env.brain_names[0]
        env.reset()
        print("READY", flush=True)
        sys.stdin.readline()
        for _ in range(100):
            env.step(np.zeros((20, 4)))
        print("FIRST DONE", flush=True)
        env.close()
    """),
        ],
        stdin=subprocess.PIPE,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )
    try:
        assert first.stdout.readline().strip() == "READY"
        process = psutil.Process(first.pid)
        connections = getattr(process, "net_connections", process.connections)(kind="inet")
        listening = {c.laddr for c in connections if c.status == psutil.CONN_LISTEN}
        loopback = {("127.0.0.1", 5005 + worker), ("::ffff:127.0.0.1", 5005 + worker)}  # IPv4, or IPv6's form of it
        assert listening and listening <= loopback, listening  # loopback only: no other host drives it
        second = run_client(tmp_path, worker=worker)
        assert second.returncode != 0
        assert f"(worker_id {worker})" in second.stderr and "in use" in second.stderr, second.stderr[-3000:]
        out, err = first.communicate("go\n", timeout=120)
        assert "FIRST DONE" in out, err[-3000:]
    finally:
        first.kill()


def test_an_interpreter_without_the_packages_fails_at_once_naming_the_package(tmp_path):
    bare = tmp_path / "bare" / "bin"
    subprocess.run([sys.executable, "-m", "venv", "--without-pip", str(bare.parent)], check=True, timeout=120)
    done = run_client(tmp_path, REACHER_PYTHON=str(bare / "python"))
    assert done.returncode != 0
    assert "No module named 'numpy'" in done.stderr and "REACHER_PYTHON" in done.stderr, done.stderr[-3000:]
    assert "took too long" not in done.stderr


RETRY = textwrap.dedent("""
    import os, signal, socket, sys, threading, psutil, numpy as np
    from unityagents import UnityEnvironment
    executable, worker, how, fake_python = sys.argv[1], int(sys.argv[2]), sys.argv[3], sys.argv[4]
    signal.signal(signal.SIGINT, signal.default_int_handler)     # as in a terminal, even where the runner ignores it
    if how == "bad timeout":
        os.environ["REACHER_CLIENT_TIMEOUT"] = "abc"
    else:
        os.environ["REACHER_PYTHON"] = fake_python           # an executable that never answers, or exits at once
    def interrupt_once_started():        # Ctrl-C while it waits for the executable, however busy the machine
        for _ in range(600):
            try:
                if any(p.name() == "sleep" for p in psutil.Process().children(recursive=True)):
                    break
            except psutil.Error:                # a child that ended while it was listed
                pass
            threading.Event().wait(0.05)
        os.kill(os.getpid(), signal.SIGINT)
    if how == "interrupted":
        threading.Thread(target=interrupt_once_started, daemon=True).start()
    try:
        UnityEnvironment(file_name=executable, worker_id=worker, no_graphics=True)
    except BaseException as error:
        print("FAILED", type(error).__name__, error, flush=True)
    _, children = psutil.wait_procs(psutil.Process().children(recursive=True), timeout=10)   # those still running
    with socket.socket(socket.AF_INET6) as probe:        # the client's server listens on [::]:port
        try:
            probe.bind(("::", 5005 + worker))
            print("PORT FREE", flush=True)
        except OSError as error:
            print("PORT HELD", error, flush=True)
    print("CHILDREN", len(children), flush=True)
    os.environ.pop("REACHER_PYTHON", None)
    os.environ["REACHER_CLIENT_TIMEOUT"] = "120"
    env = UnityEnvironment(file_name=executable, worker_id=worker, no_graphics=True)   # the retry, same process
    name = env.brain_names[0]
    env.reset(train_mode=True)
    print("RETRIED", len(env.step(np.zeros((20, 4)))[name].rewards), flush=True)
    env.close()
""")


FAILED_STARTS = {
    "bad timeout": "ValueError",
    "interrupted": "KeyboardInterrupt",
    "process exits": "UnityEnvironmentException",
}


@pytest.mark.parametrize("how", FAILED_STARTS)
def test_a_failed_or_interrupted_start_leaves_the_port_free_for_a_retry(tmp_path, how):
    fake = tmp_path / "python"
    fake.write_text("#!/bin/sh\nexec sleep 60\n" if how == "interrupted" else "#!/bin/sh\nexit 1\n")
    fake.chmod(0o755)
    script = tmp_path / "retry.py"
    script.write_text(RETRY)
    worker = 50 + os.getpid() % 2000 + list(FAILED_STARTS).index(how)
    env = {k: v for k, v in os.environ.items() if k not in ("REACHER_PYTHON", "REACHER_CLIENT_TIMEOUT")}
    done = subprocess.run(
        [sys.executable, str(script), BUILT_IN_EXECUTABLE, str(worker), how, str(fake)],
        capture_output=True,
        text=True,
        cwd=tmp_path,
        timeout=120,
        env=env,
    )
    failed = next((line for line in done.stdout.splitlines() if line.startswith("FAILED")), "")
    assert failed.split()[1:2] == [FAILED_STARTS[how]], done.stdout + done.stderr[-3000:]
    if how == "bad timeout":
        assert "REACHER_CLIENT_TIMEOUT" in failed
    assert "PORT FREE" in done.stdout and "CHILDREN 0" in done.stdout, done.stdout + done.stderr[-3000:]
    assert "RETRIED 20" in done.stdout, done.stdout + done.stderr[-3000:]


BY_HAND = textwrap.dedent("""
    import sys, numpy as np
    from unityagents import UnityEnvironment
    env = UnityEnvironment(file_name=sys.argv[1], worker_id=int(sys.argv[2]), no_graphics=True)
    name = env.brain_names[0]
    env.reset(train_mode=True)
    info = env.step(np.zeros((20, 4)))[name]
    print("STEPPED", len(info.rewards), "PROJECT", sorted(m for m in sys.modules if m.split(".")[0] == "reacher"))
    env.close()
""")


def test_the_by_hand_install_steps_give_the_course_a_working_client(tmp_path):
    """README's "Without make" steps, offline, in a fresh environment and a copy of the project: the
    packages of requirements.txt and unityagents (this environment's, as those pip commands leave them),
    `pip install --no-deps -e .`, `python -m reacher.client_hook --install`; then the course's code."""
    root, project = Path(__file__).resolve().parents[1], tmp_path / "project"
    project.mkdir()
    shutil.copy(root / "pyproject.toml", project)
    shutil.copy(root / "README.md", project)
    for package in ("reacher", "continuous_control", "experiments", "benchmarks", "tools"):
        shutil.copytree(root / package, project / package, ignore=shutil.ignore_patterns("__pycache__", "python.path"))
    venv = project / ".venv"
    subprocess.run(
        [getattr(sys, "_base_executable", sys.executable), "-m", "venv", "--without-pip", str(venv)],
        check=True,
        timeout=120,
    )
    python = str(venv / "bin" / "python")
    site = subprocess.run(
        [python, "-c", "import sysconfig; print(sysconfig.get_path('purelib'))"],
        capture_output=True,
        text=True,
        check=True,
    ).stdout.strip()
    # A path line only: this environment's own .pth files (its hook, its editable project) stay out.
    Path(site, "requirements.pth").write_text(sysconfig.get_path("purelib") + "\n")
    env = {k: v for k, v in os.environ.items() if k not in ("REACHER_PYTHON", "PYTHONPATH")}
    env.update(
        VIRTUAL_ENV=str(venv),
        PATH=f"{venv / 'bin'}{os.pathsep}{env.get('PATH', '')}",  # as activated
        PIP_NO_INDEX="1",
    )  # offline: everything needed is in place
    for step in (
        ["-m", "pip", "install", "--quiet", "--no-deps", "--no-build-isolation", "-e", "."],
        ["-m", "reacher.client_hook", "--install"],
    ):
        done = subprocess.run([python, *step], cwd=project, capture_output=True, text=True, timeout=300, env=env)
        assert done.returncode == 0, (step, done.stderr[-3000:])
    executable = project / "reacher" / "Reacher_Linux_NoVis" / "Reacher.x86_64"
    done = subprocess.run(
        [python, "-c", BY_HAND, str(executable), str(60 + os.getpid() % 2000)],
        capture_output=True,
        text=True,
        cwd=tmp_path,
        timeout=60,
        env=env,
    )
    assert done.returncode == 0, done.stderr[-3000:]
    assert "STEPPED 20 PROJECT []" in done.stdout, done.stdout
