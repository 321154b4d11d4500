"""MuJoCo model and physics of the Unity Reacher: all arms in one model, in lockstep.

Every number is from the specification, `doc/environment.md` (cited as "env, <section>"). MuJoCo
holds the model and its kinematics, `physx.py` steps each frame as PhysX 3.3 does, and this module
adds the goals, the reward and the observation.

Frames: Unity is left-handed, MuJoCo right-handed; we simulate with y up and z flipped, S = diag(1, 1, -1):
p_u = S p_m, axial vectors w_u = -S w_m, and a quaternion (w, x, y, z)_m is (w, -x, -y, z)_u.
"""

from __future__ import annotations

import numbers
import os

import numpy as np

try:
    import mujoco
except (AttributeError, ImportError, OSError) as error:  # MUJOCO_GL names a backend whose library is missing
    if not os.environ.get("MUJOCO_GL"):
        raise
    raise ImportError(
        f"MuJoCo could not load the OpenGL backend MUJOCO_GL={os.environ['MUJOCO_GL']!r} asks for "
        f"({type(error).__name__}: {error}). Install its library (osmesa: libosmesa6; egl: libegl1), or "
        "unset MUJOCO_GL: the Reacher needs OpenGL only to draw, and picks a backend itself"
    ) from error

from . import physx

FRAME_DT = 0.02  # env, Interface: one physics frame is 0.02 s
FRAMES_PER_STEP = 4  # env, Interface: one env.step = 4 frames, same action on each
MAX_STEPS = 1001  # env, Episodes: the 1001st step after a reset reports done
TORQUE_SCALE = 150.0  # env, Actions: clamp to [-1, 1], times 150
MAX_ANGULAR_SPEED = 7.0  # env, Bodies: Unity 2017's Rigidbody.maxAngularVelocity
DRAG_FACTOR = 1.0 - 0.05 * FRAME_DT  # env, One physics frame: angular drag 0.05, linear form
GRAVITY = -9.81  # env, Bodies: gravity (0, -9.81, 0)
MASS = 1.0  # env, Bodies: each link's mass
# env, Bodies: principal inertia about each link's centre of mass; the link's axis is local y.
INERTIA = np.array(
    [
        [2.75074, 0.12206, 2.75074],  # upper arm A (capsule)
        [3.85892, 0.25682, 3.85892],
    ]
)  # forearm B (capsule + hand sphere)
GOAL_RADIUS = 8.0  # env, Goal motion: the goal circles at radius 8 ...
GOAL_HEIGHT = -1.0  # ... in the plane y = -1
HAND_RADIUS = 1.0  # env, Bodies: hand sphere, world radius 1.0
REWARD_PER_FRAME = np.float32(0.01)  # env, Reward: 0.01 per overlapping frame, float32 sums
DEFAULT_RESET_PARAMETERS = {"goal_speed": 1.0, "goal_size": 5.0}  # env, Interface
# What a reset may set (Unity takes any float): more only aliases, or covers the neighbouring arms.
RESET_RANGES = {"goal_speed": (-360.0, 360.0), "goal_size": (0.0, 100.0)}
OBSERVATION_SIZE, ACTION_SIZE = 33, 4
# Euler(180, 0, 0) as Unity's float32 quaternion (x, y, z, w): w = cos(pi/2) in float32.
REST_QUAT_W = np.float32(np.cos(np.float32(np.pi / 2)))  # -4.371139e-08, as Unity prints
# env, Coordinates: the 20 agent origins, x in {-40..40} times z in {0, 20, 41.1, 61.1}.
ORIGIN_XS = (-40.0, -20.0, 0.0, 20.0, 40.0)
ORIGIN_ZS = (0.0, 20.0, 41.1, 61.1)
_FLIP = np.array([1.0, 1.0, -1.0])  # S: Unity <-> MuJoCo positions
_AXIAL_FLIP = -_FLIP  # -S: Unity <-> MuJoCo angular vectors
_YZX, _ZXY = np.array([1, 2, 0]), np.array([2, 0, 1])
# A step's reward for 0..4 overlapping frames, float32 sums as Unity's (4 give 0.03999999910593033).
_FRAME_REWARD_SUMS = np.cumsum(np.r_[0.0, [REWARD_PER_FRAME] * FRAMES_PER_STEP].astype(np.float32), dtype=np.float32)


# The most arms one environment holds, fifty times the course's 20: a million would take more than 11 GB before
# the first step.
MAX_ARMS = 1000


def agent_origins(num_agents: int) -> np.ndarray:
    """Unity world origins of the agents, row by row; rows past the scene's four go on at 20."""
    rows = -(-num_agents // len(ORIGIN_XS))
    zs = list(ORIGIN_ZS[:rows]) + [ORIGIN_ZS[-1] + 20.0 * k for k in range(1, rows - len(ORIGIN_ZS) + 1)]
    grid = [(x, 0.0, z) for z in zs for x in ORIGIN_XS]
    return np.array(grid[:num_agents])


def _cross(a: np.ndarray, b: np.ndarray) -> np.ndarray:
    """Cross product of (..., 3) arrays; np.cross costs several times more on small arrays."""
    return a[..., _YZX] * b[..., _ZXY] - a[..., _ZXY] * b[..., _YZX]


# The joint model closest to the Unity build in calibration (doc/calibration.md).
JOINT_MODELS = tuple(physx.JOINT_MODELS)
DEFAULT_JOINT_MODEL = "hinges_xz"


def _arm_xml(i: int, origin_m: np.ndarray) -> str:
    """One arm in MuJoCo frame, body frames at the pivots; ball joints, set by the joint model (env, Bodies)."""
    x, _, z = origin_m
    return f"""
    <geom name="base{i}" type="sphere" size="0.5" pos="{x} 0 {z}" rgba=".5 .5 .5 1"/>
    <body name="A{i}" pos="{x} 0.02 {z}">
      <joint name="shoulder{i}" type="ball"/>
      <!-- capsule r 0.5, centre y = -4, spans y -7..-1: segment -1.5..-6.5, relative to the pivot -->
      <inertial pos="0 -4.02 0" mass="{MASS}" diaginertia="{" ".join(map(str, INERTIA[0]))}"/>
      <geom name="upper{i}" type="capsule" fromto="0 -1.52 0 0 -6.52 0" size="0.5" rgba=".2 .4 .9 1"/>
      <body name="B{i}" pos="0 -7.02 0">
        <joint name="elbow{i}" type="ball"/>
        <!-- capsule + hand: centre of mass at y = -11.4545, i.e. 4.4545 below the elbow -->
        <inertial pos="0 -4.4545 0" mass="{MASS}" diaginertia="{" ".join(map(str, INERTIA[1]))}"/>
        <geom name="fore{i}" type="capsule" fromto="0 -0.5 0 0 -5.5 0" size="0.5" rgba=".2 .4 .9 1"/>
        <geom name="hand{i}" type="sphere" pos="0 -6 0" size="{HAND_RADIUS}" rgba=".9 .9 .9 1"/>
      </body>
    </body>"""


def build_model(num_agents: int) -> mujoco.MjModel:
    origins_m = agent_origins(num_agents) * _FLIP
    arms = "".join(_arm_xml(i, o) for i, o in enumerate(origins_m))
    goals = "".join(
        f'<body name="goal{i}" mocap="true" pos="{o[0]} {GOAL_HEIGHT} {o[2]}">'
        f'<geom name="goal{i}" type="sphere" size="2.5" contype="0" conaffinity="0" rgba=".1 .8 .2 .5"/></body>'
        for i, o in enumerate(origins_m)
    )
    xml = f"""
<mujoco model="reacher">
  <compiler angle="radian"/>
  <option timestep="{FRAME_DT}" gravity="0 {GRAVITY} 0"/>
  <default><geom contype="0" conaffinity="0"/></default>
  <worldbody>
    <light pos="0 60 30" dir="0 -1 -0.5" directional="true"/>
    {arms}
    {goals}
  </worldbody>
</mujoco>"""
    return mujoco.MjModel.from_xml_string(xml)


class ReacherPhysics:
    """The arms, the goals and the reward, vectorised over agents, in Unity's conventions (no step limit)."""

    def __init__(self, num_agents: int = 20, seed: int | None = 0, joint_model: str | None = None):
        if (
            isinstance(num_agents, bool)
            or not isinstance(num_agents, numbers.Integral)
            or not 1 <= num_agents <= MAX_ARMS
        ):
            raise ValueError(f"num_agents must be a whole number of arms from 1 to {MAX_ARMS}; got {num_agents!r}")
        self.joint_model = joint_model or DEFAULT_JOINT_MODEL
        if self.joint_model not in JOINT_MODELS:
            raise ValueError(f"unknown joint model {self.joint_model!r}; choose one of {list(JOINT_MODELS)}")
        self._model_id = physx.JOINT_MODELS[self.joint_model]
        self.num_agents = n = int(num_agents)
        self.model = build_model(n)
        self.data = mujoco.MjData(self.model)
        self.rng = np.random.default_rng(seed)
        self.reset_parameters = dict(DEFAULT_RESET_PARAMETERS)
        self.origins = agent_origins(n)  # Unity frame, float64
        self.origins32 = self.origins.astype(np.float32)
        self._origins_m = self.origins * _FLIP
        # Bodies world, A0, B0, A1, ..., goals; geoms base_i, upper_i, fore_i, hand_i, goals: per-arm views.
        d = self.data
        self._qpos = d.qpos.reshape(n, 2, 4)  # relative quaternions (w, x, y, z)
        self._quats = d.xquat[1 : 1 + 2 * n].reshape(n, 2, 4)
        self._coms = d.xipos[1 : 1 + 2 * n].reshape(n, 2, 3)
        self.pivots = d.xanchor.reshape(n, 2, 3)  # shoulder, elbow (world)
        self._geoms = d.geom_xpos[n : 4 * n].reshape(n, 3, 3)  # upper, fore, hand centres
        self.hand = self._geoms[:, 2]
        assert self.model.body(2 * n).name == f"B{n - 1}" and self.model.geom(4 * n - 1).name == f"hand{n - 1}"
        self._goal_geoms = np.arange(4 * n, 5 * n)
        self.coords = np.zeros((n, 4))  # the joint model's coordinates
        # Cartesian velocities kept between frames, as PhysX does: (n, A/B, linear of the CoM/angular, xyz), world.
        self.velocities = np.zeros((n, 2, 2, 3))
        self._axes = np.zeros((n, 4, 3))  # each coordinate's world axis (turning its child)
        self._inertia = np.ascontiguousarray(INERTIA)
        self.goal_degree, self.goal_speed = np.zeros(n, np.float32), np.zeros(n, np.float32)
        self.actions = np.zeros((n, ACTION_SIZE), np.float32)
        self._goal = self._goal_from_degrees(self.goal_degree)  # relative to each origin, Unity frame, float32
        self._pose()

    def reset(self) -> np.ndarray:
        """Put every agent back to the start state; no physics step."""
        self.coords[:] = 0.0
        self.velocities[:] = 0.0
        # env, Goal motion: goalDegree an integer in [0, 360); goalSpeed uniform(-1, 1) * goal_speed
        self.goal_degree[:] = self.rng.integers(0, 360, self.num_agents)
        self.goal_speed[:] = self.rng.uniform(-1.0, 1.0, self.num_agents) * self.reset_parameters["goal_speed"]
        self.actions[:] = 0.0
        self.model.geom_size[self._goal_geoms, 0] = 0.5 * self.reset_parameters["goal_size"]
        self._goal = self._goal_from_degrees(self.goal_degree)
        self._pose()
        return self.observe()

    def set_goal(self, degree, speed) -> np.ndarray:
        """Place the goals by hand (for tests and demos) and return the observation."""
        self.goal_degree[:] = degree
        self.goal_speed[:] = speed
        self._goal = self._goal_from_degrees(self.goal_degree)
        return self.observe()

    def set_pose(self, coords: np.ndarray) -> np.ndarray:
        """Place the arms by the joint model's coordinates (n, 4), at rest (for tests)."""
        self.coords[:] = coords
        self.velocities[:] = 0.0
        self._pose()
        return self.observe()

    def step(self, actions: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        """Apply (num_agents, 4) actions for 4 frames; return observations and rewards."""
        n = self.num_agents
        np.minimum(np.maximum(actions, -1.0), 1.0, out=self.actions, casting="unsafe")  # float32, as Unity
        torque = self.torques(self.actions)
        # env, Goal motion: every frame, before the torques, goalDegree += goalSpeed (float32).
        degrees = np.empty((FRAMES_PER_STEP, n), np.float32)
        for k in range(FRAMES_PER_STEP):
            self.goal_degree += self.goal_speed
            degrees[k] = self.goal_degree
        goals = self._goal_from_degrees(degrees)  # (4, n, 3), Unity frame
        self._goal = goals[-1]
        goals_m = goals * _FLIP + self._origins_m  # world, MuJoCo frame
        hand = np.empty((FRAMES_PER_STEP, n, 3))
        physx.step(
            self._model_id,
            self.coords,
            self.velocities,
            torque,
            self._origins_m,
            self._inertia,
            FRAMES_PER_STEP,
            FRAME_DT,
            GRAVITY,
            DRAG_FACTOR,
            MAX_ANGULAR_SPEED,
            hand,
            self._qpos,
            self._axes,
        )
        mujoco.mj_kinematics(self.model, self.data)
        # env, Reward: 0.01 for every frame in which the hand sphere overlaps the goal sphere.
        reach2 = (HAND_RADIUS + 0.5 * self.reset_parameters["goal_size"]) ** 2
        offset = hand - goals_m
        hits = np.count_nonzero(np.einsum("fnk,fnk->fn", offset, offset) < reach2, axis=0)
        return self.observe(), _FRAME_REWARD_SUMS[hits]

    @staticmethod
    def torques(actions: np.ndarray) -> np.ndarray:
        """World torques (n, 2 bodies, 3), MuJoCo frame, of actions (n, 4) in [-1, 1]."""
        # env, Actions: torque (150 a0, 0, 150 a1) on A, (150 a2, 0, 150 a3) on B, world axes.
        # Unity (x, 0, z) is the MuJoCo torque (-x, 0, z): axial vectors flip with handedness.
        torque = np.zeros((len(actions), 2, 3))
        torque[:, :, 0] = -TORQUE_SCALE * actions[:, 0::2]
        torque[:, :, 2] = TORQUE_SCALE * actions[:, 1::2]
        return torque

    def free_velocities(self, actions: np.ndarray) -> np.ndarray:
        """PhysX's steps 1-3 on the current velocities, before the joint solve (for tests; state unchanged)."""
        out = self.velocities.copy()
        physx.free_velocities(
            self._model_id,
            self.coords,
            out,
            self.torques(np.clip(actions, -1, 1)),
            self._origins_m,
            self._inertia,
            FRAME_DT,
            GRAVITY,
            DRAG_FACTOR,
            MAX_ANGULAR_SPEED,
        )
        return out

    def _pose(self) -> None:
        """Place the links from the coordinates (no time passes), and run MuJoCo's kinematics."""
        points = np.empty((self.num_agents, 6, 3))
        physx.pose(self._model_id, self.coords, self._origins_m, self._qpos, self._axes, points)
        mujoco.mj_kinematics(self.model, self.data)

    @staticmethod
    def _goal_from_degrees(degrees: np.ndarray) -> np.ndarray:
        """(8 sin, -1, 8 cos) of the angle, computed as Unity does: radians = deg * PI / 180 in
        float32, Mathf.Sin/Cos in double, rounded back to float32 (env, Goal motion)."""
        rad = (degrees * np.float32(np.pi) / np.float32(180.0)).astype(np.float64)
        goal = np.empty(degrees.shape + (3,), np.float32)
        goal[..., 0] = np.sin(rad)
        goal[..., 1] = GOAL_HEIGHT / GOAL_RADIUS
        goal[..., 2] = np.cos(rad)
        goal *= np.float32(GOAL_RADIUS)
        return goal

    def observe(self) -> np.ndarray:
        """The 33 floats per agent, in Unity's order and conventions (env, Observation)."""
        n = self.num_agents
        out = np.empty((n, OBSERVATION_SIZE), np.float32)
        links = out[:, :26].reshape(n, 2, 13)  # A then B, 13 floats each
        # Positions: Unity keeps world positions in float32 and derives localPosition from them.
        rel = np.empty((n, 3, 3))
        rel[:, :2] = (self._geoms[:, :2] - self._origins_m[:, None]) * _FLIP  # capsule centres
        rel[:, 2] = self._goal
        pos = (rel + self.origins[:, None]).astype(np.float32) - self.origins32[:, None]
        links[:, :, 0:3] = pos[:, :2]
        out[:, 26:29] = pos[:, 2]
        # Rotations: the link's rotation (w, -x, -y, z) times the rest rotation Euler(180, 0, 0).
        q, c = self._quats, REST_QUAT_W  # (n, 2, 4) as (w, x, y, z)
        w, x, y, z = q[..., 0], -q[..., 1], -q[..., 2], q[..., 3]
        links[:, :, 3] = w + c * x  # Unity order (x, y, z, w)
        links[:, :, 4] = c * y + z
        links[:, :, 5] = c * z - y
        links[:, :, 6] = c * w - x
        # Velocities as PhysX keeps them: angular w_u = -S w_m; linear of the centre of mass, S v_m.
        links[:, :, 7:10] = self.velocities[:, :, 1] * _AXIAL_FLIP
        links[:, :, 10:13] = self.velocities[:, :, 0] * _FLIP
        out[:, 29:32] = (0.0, 1.0, 0.0)  # hand.localPosition inside B: constant
        out[:, 32] = self.goal_speed
        return out

    def sync_goal_bodies(self) -> None:
        """Move the goal spheres (drawn only) to the goals, for rendering."""
        self.data.mocap_pos[:] = self._origins_m + self._goal * _FLIP
