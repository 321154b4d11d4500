"""Serve the built-in Reacher to the real `unityagents` 0.4.0 client, as a Unity build would.

`UnityEnvironment(file_name="reacher/Reacher_Linux_NoVis/Reacher")` launches the executable next
to this file, which runs `python -m reacher.serve --port 5005`. In ML-Agents 0.4 Python is the gRPC
server: the environment calls `UnityToExternal.Exchange(UnityMessage)`, each request carrying its
output for the previous command (first the initialization output, answered with the seed), each
reply the next command: RESET (1) or STEP (0); a status other than 200 (400 on close) means stop.
The protobuf classes come from the client's own wheel (`communicator_objects`).
"""

from __future__ import annotations

import argparse
import math
import os
import sys

import numpy as np

from .client_hook import ERROR_STATUS, SECRET_ENV, SECRET_KEY, write_reason
from .environment import ACADEMY_NAME, BRAIN_NAME, ReacherEnvironment, UnityActionException, UnityEnvironmentException
from .physics import ACTION_SIZE, DEFAULT_RESET_PARAMETERS, OBSERVATION_SIZE

API_VERSION = "API-4"
STEP, RESET = 0, 1


def _output_message(co, info):
    message = co.UnityMessage(header=co.Header(status=200))
    rl_output = message.unity_output.rl_output
    rl_output.global_done = False
    agents = rl_output.agentInfos[BRAIN_NAME].value
    for i in range(len(info.agents)):  # the protocol has one message per agent
        agents.add(
            stacked_vector_observation=info.vector_observations[i].tolist(),
            reward=info.rewards[i],
            stored_vector_actions=info.previous_vector_actions[i].tolist(),
            done=info.local_done[i],
            max_step_reached=info.max_reached[i],
            id=info.agents[i],
        )
    return message


def serve(port: int, num_agents: int = 20, wait: float = 60) -> int:
    try:
        import communicator_objects as co
        import grpc
    except ImportError as error:
        print(
            f"reacher.serve needs the unityagents 0.4.0 client's packages: {error}\n"
            "Install them with: pip install --no-deps unityagents==0.4.0 protobuf==3.20.3 grpcio",
            file=sys.stderr,
        )
        return 2
    channel = grpc.insecure_channel(f"127.0.0.1:{port}")  # where the client listens (reacher/client_hook.py)
    try:
        grpc.channel_ready_future(channel).result(timeout=wait)
    except grpc.FutureTimeoutError:
        print(
            f"reacher.serve: no unityagents client listened on port {port} within {wait:g} s. This executable is "
            "started by the client, not by hand: UnityEnvironment(file_name=...) in Python starts it.",
            file=sys.stderr,
        )
        return 2
    call = co.UnityToExternalStub(channel).Exchange
    secret = ((SECRET_KEY, os.environ.get(SECRET_ENV, "")),)  # what the client that launched it checks
    exchange = lambda message: call(message, metadata=secret)
    message = co.UnityMessage(header=co.Header(status=200))
    init = message.unity_output.rl_initialization_output
    init.name, init.version, init.log_path = ACADEMY_NAME, API_VERSION, ""
    init.brain_parameters.add(
        brain_name=BRAIN_NAME,
        vector_observation_size=OBSERVATION_SIZE,
        num_stacked_vector_observations=1,
        vector_action_size=ACTION_SIZE,
        vector_action_descriptions=[""] * ACTION_SIZE,
        vector_action_space_type=1,
        vector_observation_space_type=1,
        brain_type=2,
    )  # continuous, External
    init.environment_parameters.float_parameters.update(DEFAULT_RESET_PARAMETERS)
    reply = exchange(message)
    seed = reply.unity_input.rl_initialization_input.seed
    env = ReacherEnvironment(num_agents=num_agents, seed=seed, verbose=False)
    reply = exchange(co.UnityMessage(header=co.Header(status=200)))
    while reply.header.status == 200:
        rl_input = reply.unity_input.rl_input
        if rl_input.command not in (RESET, STEP):  # QUIT (2)
            break
        try:
            if rl_input.command == RESET:
                config = dict(rl_input.environment_parameters.float_parameters)
                info = env.reset(train_mode=rl_input.is_training, config=config)[BRAIN_NAME]
            else:
                protos = rl_input.agent_actions[BRAIN_NAME].value
                actions = np.array([list(p.vector_actions) for p in protos], dtype=np.float64)
                info = env.step(actions)[BRAIN_NAME]
        except (UnityActionException, UnityEnvironmentException) as error:
            # refused: the reason, raised by the client (client_hook.py)
            reply = exchange(co.UnityMessage(header=co.Header(status=ERROR_STATUS, message=str(error))))
            continue
        reply = exchange(_output_message(co, info))
    channel.close()
    return 0


def seconds(text: str) -> float:
    """A wait: a finite number of seconds above 0 (argparse names the option when this refuses)."""
    try:
        value = float(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"{text!r} is not a number of seconds") from None
    if not (math.isfinite(value) and value > 0):
        raise argparse.ArgumentTypeError(f"{text!r} is not a finite number of seconds above 0")
    return value


def port(text: str) -> int:
    if not text.isdigit() or not 1 <= int(text) <= 65535:
        raise argparse.ArgumentTypeError(f"{text!r} is not a port (1 to 65535)")
    return int(text)


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--port", type=port, default=5005)
    parser.add_argument("--num-agents", type=int, default=20)
    parser.add_argument("--wait", type=seconds, default=60, help="seconds to wait for the client")
    args, _ = parser.parse_known_args(argv)  # and Unity player flags (-nographics, -batchmode): no graphics here
    try:
        return serve(args.port, args.num_agents, args.wait)
    except (UnityActionException, UnityEnvironmentException) as error:
        print(f"reacher.serve: {error}", file=sys.stderr)
        write_reason(str(error))  # for the client, in the folder it made for this launch (reacher/client_hook.py)
        return 1
    except Exception as error:  # the client went away (closed, killed): end quietly
        import grpc

        if isinstance(error, grpc.RpcError):
            return 0
        raise


if __name__ == "__main__":
    sys.exit(main())
