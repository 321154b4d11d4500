"""A scripted controller: proportional-derivative control of each hand toward its goal.

It is no learner. It shows that the replica's dynamics and reward geometry allow the scores that
trained agents reach on the Unity build (spec, "What a quick one-arm prototype showed"):

    F = kp (goal - hand) + kd (goal velocity - hand velocity)      a force at the hand
    Q = J^T F + bias                                               joint torques, with gravity
                                                                   and Coriolis compensated
and the 4 joint torques Q are produced by the two world-axis body torques the action sets:
joint j feels axis_j . (torque on every body beyond it), a 4x4 linear system per arm.
It reads the simulation's state directly, so it works only on the built-in Reacher.
"""
from __future__ import annotations

import mujoco
import numpy as np

from .physics import FRAME_DT, TORQUE_SCALE, ReacherPhysics, _FLIP, _cross


def scripted_actions(physics: ReacherPhysics, kp: float = 40.0, kd: float = 20.0) -> np.ndarray:
    """Actions (num_agents, 4) in [-1, 1] that drive every hand toward its moving goal."""
    m, d = physics.model, physics.data
    mujoco.mj_forward(m, d)                               # fresh bias forces for this state
    n = physics.num_agents
    axes, anchors = physics._axes, physics._anchors       # (n, 4, 3), world, MuJoCo frame
    hand = physics._geoms[:, 2]
    jacobian = _cross(axes, hand[:, None] - anchors)      # (n, 4, 3): column j is d hand / d q_j
    hand_vel = np.einsum("nj,njk->nk", physics._qvel, jacobian)
    goal = physics.goal_position().astype(np.float64)     # Unity frame, relative to the origin
    rate = np.deg2rad(physics.goal_speed.astype(np.float64)) / FRAME_DT        # rad/s
    goal_vel = np.stack([goal[:, 2], np.zeros(n), -goal[:, 0]], 1) * rate[:, None]
    goal_m = goal * _FLIP + physics._origins_m
    force = kp * (goal_m - hand) + kd * (goal_vel * _FLIP - hand_vel)
    wanted = np.einsum("njk,nk->nj", jacobian, force) + d.qfrc_bias.reshape(n, 4)
    # Joint j's torque from the actions: A's torque (-a0, 0, a1) reaches only the shoulder
    # joints, B's (-a2, 0, a3) all four (MuJoCo frame, times 150).
    effect = np.zeros((n, 4, 4))
    effect[:, :, 2] = -axes[:, :, 0]
    effect[:, :, 3] = axes[:, :, 2]
    effect[:, :2, 0] = -axes[:, :2, 0]
    effect[:, :2, 1] = axes[:, :2, 2]
    actions = np.einsum("nij,nj->ni", np.linalg.pinv(TORQUE_SCALE * effect), wanted)
    return np.clip(actions, -1.0, 1.0)
