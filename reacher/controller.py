"""A scripted controller: proportional-derivative control of each hand toward its goal.

No learner: it shows that the replica allows the scores trained agents reach on the Unity build. A
force at the hand, F = kp (goal - hand) + kd (goal velocity - hand velocity), gives the generalized
forces Q = J^T F - G (gravity G compensated), which the action's two body torques produce through
a 4x4 linear system per arm. It reads the simulation's state, so it works only on the built-in Reacher.
"""

from __future__ import annotations

import numpy as np

from .physics import _FLIP, FRAME_DT, GRAVITY, MASS, TORQUE_SCALE, ReacherPhysics, _cross


def scripted_actions(physics: ReacherPhysics, kp: float = 40.0, kd: float = 20.0) -> np.ndarray:
    """Actions (num_agents, 4) in [-1, 1] that drive every hand toward its moving goal."""
    n = physics.num_agents
    axes = physics._axes  # (n, 4, 3), world, MuJoCo frame
    anchors = physics.pivots[:, [0, 0, 1, 1]]  # each coordinate's pivot
    hand, coms = physics.hand, physics._coms
    jacobian = _cross(axes, hand[:, None] - anchors)  # (n, 4, 3): column k is d hand / d c_k
    v_b, w_b = physics.velocities[:, 1, 0], physics.velocities[:, 1, 1]
    hand_vel = v_b + _cross(w_b, hand - coms[:, 1])
    goal = physics._goal.astype(np.float64)  # Unity frame, relative to the origin
    rate = np.deg2rad(physics.goal_speed.astype(np.float64)) / FRAME_DT  # rad/s
    goal_vel = np.stack([goal[:, 2], np.zeros(n), -goal[:, 0]], 1) * rate[:, None]
    goal_m = goal * _FLIP + physics._origins_m
    force = kp * (goal_m - hand) + kd * (goal_vel * _FLIP - hand_vel)
    # Gravity's generalized force on coordinate k: axis_k . sum over moved bodies of r x (m g).
    weight = np.array([0.0, MASS * GRAVITY, 0.0])
    moments = _cross(
        coms[:, [0, 1, 1]] - physics.pivots[:, [0, 0, 1]], weight
    )  # A, B about the shoulder; B about the elbow
    gravity = np.empty((n, 4))
    gravity[:, :2] = np.einsum("njk,nk->nj", axes[:, :2], moments[:, 0] + moments[:, 1])
    gravity[:, 2:] = np.einsum("njk,nk->nj", axes[:, 2:], moments[:, 2])
    wanted = np.einsum("njk,nk->nj", jacobian, force) - gravity
    # Coordinate k's generalized force from the actions: A's torque (-a0, 0, a1) moves only the
    # shoulder's coordinates, B's (-a2, 0, a3) all four (MuJoCo frame, times 150).
    effect = np.zeros((n, 4, 4))
    effect[:, :, 2] = -axes[:, :, 0]
    effect[:, :, 3] = axes[:, :, 2]
    effect[:, :2, 0] = -axes[:, :2, 0]
    effect[:, :2, 1] = axes[:, :2, 2]
    actions = np.einsum("nij,nj->ni", np.linalg.pinv(TORQUE_SCALE * effect), wanted)
    return np.clip(actions, -1.0, 1.0)
