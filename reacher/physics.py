"""MuJoCo physics of the Unity Reacher: all arms in one model, stepped in lockstep.

Every number comes from `shared/reacher-spec.md` (cited below as "spec, <section>").

Frames. Unity is left-handed with y up; MuJoCo is right-handed. We simulate in a right-handed
frame with y up and z flipped, m = S u with S = diag(1, 1, -1). Positions and linear velocities
map as p_u = S p_m. Angular quantities (axial vectors) pick up the determinant of S:
w_u = -S w_m, torque_m = -S torque_u, and a rotation quaternion (w, x, y, z)_m becomes
(w, -x, -y, z)_u. Every body's MuJoCo frame is aligned with the world at rest, so the Unity
rotation of a link is that joint rotation followed by the rest rotation Euler(180, 0, 0).
"""
from __future__ import annotations

import mujoco
import numpy as np

# --- numbers from the spec ------------------------------------------------------------------
FRAME_DT = 0.02               # spec, Interface: one physics frame is 0.02 s
FRAMES_PER_STEP = 4           # spec, Interface: one env.step = 4 frames, same action on each
MAX_STEPS = 1001              # spec, Episodes: the 1001st step after a reset reports done
TORQUE_SCALE = 150.0          # spec, Actions: clamp to [-1, 1], times 150
MAX_ANGULAR_SPEED = 7.0       # spec, Bodies: Unity 2017's Rigidbody.maxAngularVelocity
DRAG_FACTOR = 1.0 - 0.05 * FRAME_DT  # spec, Bodies: angular drag 0.05 per frame
GOAL_RADIUS = 8.0             # spec, Goal motion: the goal circles at radius 8 ...
GOAL_HEIGHT = -1.0            # ... in the plane y = -1
HAND_RADIUS = 1.0             # spec, Bodies: hand sphere, world radius 1.0
REWARD_PER_FRAME = np.float32(0.01)  # spec, Reward: 0.01 per overlapping frame, float32 sums
DEFAULT_RESET_PARAMETERS = {"goal_speed": 1.0, "goal_size": 5.0}  # spec, Interface
OBSERVATION_SIZE = 33
ACTION_SIZE = 4
# Euler(180, 0, 0) as Unity's float32 quaternion (x, y, z, w): w = cos(pi/2) in float32.
REST_QUAT_W = np.float32(np.cos(np.float32(np.pi / 2)))   # -4.371139e-08, as the spec prints
# spec, Coordinates: the 20 agent origins, x in {-40..40} times z in {0, 20, 41.1, 61.1}.
ORIGIN_XS = (-40.0, -20.0, 0.0, 20.0, 40.0)
ORIGIN_ZS = (0.0, 20.0, 41.1, 61.1)
_FLIP = np.array([1.0, 1.0, -1.0])            # S: Unity <-> MuJoCo positions
_AXIAL_FLIP = -_FLIP                          # -S: Unity <-> MuJoCo angular vectors
_LIMIT2 = MAX_ANGULAR_SPEED ** 2
_YZX, _ZXY = np.array([1, 2, 0]), np.array([2, 0, 1])
# A step's reward for 0..4 overlapping frames: float32 sums of 0.01, as Unity adds them
# (so 4 frames give 0.03999999910593033, as the spec prints).
_FRAME_REWARD_SUMS = np.cumsum(np.r_[0.0, [REWARD_PER_FRAME] * FRAMES_PER_STEP].astype(np.float32), dtype=np.float32)


def agent_origins(num_agents: int) -> np.ndarray:
    """Unity world origins of the agents, row by row; rows past the scene's four go on at 20."""
    rows = -(-num_agents // len(ORIGIN_XS))
    zs = list(ORIGIN_ZS[:rows]) + [ORIGIN_ZS[-1] + 20.0 * k for k in range(1, rows - len(ORIGIN_ZS) + 1)]
    grid = [(x, 0.0, z) for z in zs for x in ORIGIN_XS]
    return np.array(grid[:num_agents])


def _arm_xml(i: int, origin_m: np.ndarray) -> str:
    """One arm in MuJoCo frame. Body frames sit at the joint pivots (spec, Bodies)."""
    x, _, z = origin_m
    return f"""
    <geom name="base{i}" type="sphere" size="0.5" pos="{x} 0 {z}" rgba=".5 .5 .5 1"/>
    <body name="A{i}" pos="{x} 0.02 {z}">
      <!-- shoulder pivot at (0, +0.02, 0); two swing hinges, world X then Z at rest; twist locked -->
      <joint name="shoulder_x{i}" axis="1 0 0"/>
      <joint name="shoulder_z{i}" axis="0 0 1"/>
      <!-- capsule r 0.5, centre y = -4, spans y -7..-1: segment -1.5..-6.5, relative to the pivot -->
      <inertial pos="0 -4.02 0" mass="1" diaginertia="2.75074 0.12206 2.75074"/>
      <geom name="upper{i}" type="capsule" fromto="0 -1.52 0 0 -6.52 0" size="0.5" rgba=".2 .4 .9 1"/>
      <body name="B{i}" pos="0 -7.02 0">
        <!-- elbow pivot at (0, -7, 0) -->
        <joint name="elbow_x{i}" axis="1 0 0"/>
        <joint name="elbow_z{i}" axis="0 0 1"/>
        <!-- capsule + hand: centre of mass at y = -11.4545, i.e. 4.4545 below the elbow -->
        <inertial pos="0 -4.4545 0" mass="1" diaginertia="3.85892 0.25682 3.85892"/>
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
        for i, o in enumerate(origins_m))
    # Only the base may touch its own forearm and hand: jointed pairs do not collide, arms are
    # 20 apart and the floor is out of reach (spec, Bodies), so every other pair is left out.
    pairs = "".join(f'<pair geom1="base{i}" geom2="fore{i}"/><pair geom1="base{i}" geom2="hand{i}"/>'
                    for i in range(num_agents))
    xml = f"""
<mujoco model="reacher">
  <compiler angle="radian"/>
  <option timestep="{FRAME_DT}" gravity="0 -9.81 0" integrator="Euler" iterations="12"/>
  <default><geom contype="0" conaffinity="0"/><joint type="hinge" damping="0"/></default>
  <worldbody>
    <light pos="0 60 30" dir="0 -1 -0.5" directional="true"/>
    {arms}
    {goals}
  </worldbody>
  <contact>{pairs}</contact>
</mujoco>"""
    return mujoco.MjModel.from_xml_string(xml)


def _cross(a: np.ndarray, b: np.ndarray) -> np.ndarray:
    """Cross product of (..., 3) arrays; np.cross costs several times more on small arrays."""
    return a[..., _YZX] * b[..., _ZXY] - a[..., _ZXY] * b[..., _YZX]


def _sq(v: np.ndarray) -> np.ndarray:
    """Squared norms of the rows of (n, 3)."""
    return np.einsum("ij,ij->i", v, v)


class ReacherPhysics:
    """The arms, the goals and the reward, vectorised over agents. No Python loop per agent.

    `reset()` and `step(actions)` return observations of shape (num_agents, 33) in Unity's
    conventions; `step` also returns the float32 rewards summed over the step's 4 frames.
    Episode bookkeeping (the 1001-step limit) lives in the environment class, not here.
    """

    def __init__(self, num_agents: int = 20, seed: int | None = 0):
        if int(num_agents) < 1:
            raise ValueError(f"num_agents must be at least 1, got {num_agents}")
        self.num_agents = n = int(num_agents)
        self.model = build_model(n)
        self.data = mujoco.MjData(self.model)
        self.rng = np.random.default_rng(seed)
        self.reset_parameters = dict(DEFAULT_RESET_PARAMETERS)
        self.origins = agent_origins(n)                       # Unity frame, float64
        self.origins32 = self.origins.astype(np.float32)
        self._origins_m = self.origins * _FLIP
        # Layout (asserted below): bodies world, A0, B0, A1, B1, ..., goals; geoms base0..base{n-1},
        # then upper_i, fore_i, hand_i per arm, then goals; 4 hinges per arm. So every per-arm
        # quantity is a reshaped view of MuJoCo's own arrays, and no step copies by index.
        d = self.data
        self._qpos = d.qpos.reshape(n, 4)
        self._qvel = d.qvel.reshape(n, 4)
        self._xfrc = d.xfrc_applied[1:1 + 2 * n].reshape(n, 2, 6)
        self._quats = d.xquat[1:1 + 2 * n].reshape(n, 2, 4)
        self._coms = d.xipos[1:1 + 2 * n].reshape(n, 2, 3)
        self._axes = d.xaxis.reshape(n, 4, 3)
        self._anchors = d.xanchor.reshape(n, 4, 3)
        self._geoms = d.geom_xpos[n:4 * n].reshape(n, 3, 3)       # upper, fore, hand centres
        assert self.model.body(2 * n).name == f"B{n - 1}" and self.model.geom(4 * n - 1).name == f"hand{n - 1}"
        self._goal_geoms = np.arange(4 * n, 5 * n)
        self.goal_degree = np.zeros(n, np.float32)
        self.goal_speed = np.zeros(n, np.float32)
        self.actions = np.zeros((n, ACTION_SIZE), np.float32)
        self._goal = self._goal_from_degrees(self.goal_degree)

    # --- reset -------------------------------------------------------------------------------
    def reset(self, agents: np.ndarray | None = None) -> np.ndarray:
        """Put the chosen agents (default: all) back to the start state; no physics step."""
        sel = slice(None) if agents is None else agents
        self._qpos[sel] = 0.0
        self._qvel[sel] = 0.0
        count = self.num_agents if agents is None else int(np.count_nonzero(agents))
        # spec, Goal motion: goalDegree an integer in [0, 360); goalSpeed uniform(-1, 1) * goal_speed
        self.goal_degree[sel] = self.rng.integers(0, 360, count)
        self.goal_speed[sel] = self.rng.uniform(-1.0, 1.0, count) * self.reset_parameters["goal_speed"]
        self.actions[sel] = 0.0
        self.model.geom_size[self._goal_geoms, 0] = 0.5 * self.reset_parameters["goal_size"]
        self._goal = self._goal_from_degrees(self.goal_degree)
        mujoco.mj_kinematics(self.model, self.data)
        return self.observe()

    def set_goal(self, degree, speed) -> np.ndarray:
        """Place the goals by hand (for tests and demos) and return the observation."""
        self.goal_degree[:] = degree
        self.goal_speed[:] = speed
        self._goal = self._goal_from_degrees(self.goal_degree)
        return self.observe()

    # --- step --------------------------------------------------------------------------------
    def step(self, actions: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        """Apply (num_agents, 4) actions for 4 frames; return observations and rewards."""
        n = self.num_agents
        a = self.actions
        np.minimum(np.maximum(actions, -1.0), 1.0, out=a, casting="unsafe")    # float32, as Unity
        torque = TORQUE_SCALE * a.reshape(n, 2, 2)      # [A, B] x [Unity x, Unity z]
        # spec, Actions: torque (150 a0, 0, 150 a1) on A, (150 a2, 0, 150 a3) on B, world axes.
        # Unity (x, 0, z) is the MuJoCo torque (-x, 0, z): axial vectors flip with handedness.
        self._xfrc[:, :, 3] = -torque[:, :, 0]
        self._xfrc[:, :, 5] = torque[:, :, 1]
        # spec, Goal motion: every frame, before the torques, goalDegree += goalSpeed (float32).
        degrees = np.empty((FRAMES_PER_STEP, n), np.float32)
        for k in range(FRAMES_PER_STEP):
            self.goal_degree += self.goal_speed
            degrees[k] = self.goal_degree
        goals = self._goal_from_degrees(degrees)                     # (4, n, 3), Unity frame
        self._goal = goals[-1]
        goals_m = goals * _FLIP + self._origins_m                    # world, MuJoCo frame
        hand = np.empty((FRAMES_PER_STEP, n, 3))
        for k in range(FRAMES_PER_STEP):
            mujoco.mj_step(self.model, self.data)
            self._qvel *= DRAG_FACTOR
            # mj_step leaves the position-derived quantities (axes, anchors, geom positions) at
            # the frame's start; the speed limit and the reward need them at its end.
            mujoco.mj_kinematics(self.model, self.data)
            self._limit_angular_speed()
            hand[k] = self._geoms[:, 2]
        # spec, Reward: 0.01 for every frame in which the hand sphere overlaps the goal sphere.
        reach2 = (HAND_RADIUS + 0.5 * self.reset_parameters["goal_size"]) ** 2
        offset = hand - goals_m
        hits = np.count_nonzero(np.einsum("fnk,fnk->fn", offset, offset) < reach2, axis=0)
        return self.observe(), _FRAME_REWARD_SUMS[hits]

    def _limit_angular_speed(self) -> None:
        """Emulate Unity's maxAngularVelocity = 7 rad/s, which MuJoCo does not have.

        If A spins faster than the limit, scale both shoulder rates down to it. B's angular
        velocity is A's plus the elbow's part w_e; scale the elbow rates by min(1, c), where c >= 0
        solves |w_A + c w_e|^2 = 7^2, i.e. a c^2 + 2 b c + d = 0 with d = |w_A|^2 - 49 <= 0.
        (c >= 1 exactly when B is already within the limit, so no separate test is needed.)
        """
        w = self.angular_velocities()                                # (n, 2, 3): A, B
        speed2 = np.einsum("nlk,nlk->nl", w, w)
        if speed2.max() <= _LIMIT2:
            return
        scale = np.sqrt(_LIMIT2 / np.maximum(speed2[:, 0], _LIMIT2))[:, None]
        self._qvel[:, :2] *= scale
        w_a, w_e = w[:, 0] * scale, w[:, 1] - w[:, 0]
        a, b = np.einsum("nk,nk->n", w_e, w_e), np.einsum("nk,nk->n", w_a, w_e)
        d = np.minimum(speed2[:, 0], _LIMIT2) - _LIMIT2
        c = (np.sqrt(b * b - a * d) - b) / (a + 1e-30)
        self._qvel[:, 2:] *= np.minimum(c, 1.0)[:, None]

    def angular_velocities(self) -> np.ndarray:
        """World angular velocities of A and B, (n, 2, 3), MuJoCo frame: each hinge adds its
        rate times its world axis, and B's is A's plus the elbow's two hinges."""
        return np.cumsum(self._qvel[:, :, None] * self._axes, axis=1)[:, 1::2]

    # --- goal and observation ----------------------------------------------------------------
    def goal_position(self) -> np.ndarray:
        """Goal centre relative to each origin, (num_agents, 3), Unity frame, float32."""
        return self._goal

    @staticmethod
    def _goal_from_degrees(degrees: np.ndarray) -> np.ndarray:
        """(8 sin, -1, 8 cos) of the angle, computed as Unity does: radians = deg * PI / 180 in
        float32, Mathf.Sin/Cos in double, rounded back to float32 (spec, Goal motion)."""
        rad = (degrees * np.float32(np.pi) / np.float32(180.0)).astype(np.float64)
        goal = np.empty(degrees.shape + (3,), np.float32)
        goal[..., 0] = np.sin(rad)
        goal[..., 1] = GOAL_HEIGHT / GOAL_RADIUS
        goal[..., 2] = np.cos(rad)
        goal *= np.float32(GOAL_RADIUS)
        return goal

    def observe(self) -> np.ndarray:
        """The 33 floats per agent, in Unity's order and conventions (spec, Observation)."""
        n = self.num_agents
        out = np.empty((n, OBSERVATION_SIZE), np.float32)
        links = out[:, :26].reshape(n, 2, 13)                        # A then B, 13 floats each
        # Positions: Unity keeps world positions in float32 and derives localPosition from them.
        rel = np.empty((n, 3, 3))
        rel[:, :2] = (self._geoms[:, :2] - self._origins_m[:, None]) * _FLIP   # capsule centres
        rel[:, 2] = self._goal
        pos = (rel + self.origins[:, None]).astype(np.float32) - self.origins32[:, None]
        links[:, :, 0:3] = pos[:, :2]
        out[:, 26:29] = pos[:, 2]
        # Rotations: the joint rotation (w, -x, -y, z) times the rest rotation Euler(180, 0, 0).
        q, c = self._quats, REST_QUAT_W                              # (n, 2, 4) as (w, x, y, z)
        w, x, y, z = q[..., 0], -q[..., 1], -q[..., 2], q[..., 3]
        links[:, :, 3] = w + c * x                                   # Unity order (x, y, z, w)
        links[:, :, 4] = c * y + z
        links[:, :, 5] = c * z - y
        links[:, :, 6] = c * w - x
        # Velocities: angular w_u = -S w_m; linear at each centre of mass, v_u = S v_m.
        omega = self.angular_velocities()
        links[:, :, 7:10] = omega * _AXIAL_FLIP
        spin = np.stack([omega[:, 0], omega[:, 0], omega[:, 1]], 1)
        shoulder, elbow = self._anchors[:, 0], self._anchors[:, 2]
        lever = np.stack([self._coms[:, 0] - shoulder, elbow - shoulder, self._coms[:, 1] - elbow], 1)
        v = _cross(spin, lever)             # v_A = w_A x r_A; v_B = w_A x (elbow) + w_B x r_B
        links[:, 0, 10:13] = v[:, 0] * _FLIP
        links[:, 1, 10:13] = (v[:, 1] + v[:, 2]) * _FLIP
        out[:, 29:32] = (0.0, 1.0, 0.0)     # hand.localPosition inside B: constant
        out[:, 32] = self.goal_speed
        return out

    # --- for rendering and controllers -------------------------------------------------------
    def sync_goal_bodies(self) -> None:
        """Move the goal spheres (drawn only) to the goals, for rendering."""
        self.data.mocap_pos[:] = self._origins_m + self.goal_position() * _FLIP
