"""The PhysX frame pipeline (reacher/physx.py) conserves what it should: with no torque, drag or
speed cap, the arms' energy drifts only by the integration's error, which shrinks in proportion to
the frame time; with drag and the cap on, the energy of an unpowered arm never rises above where
it started, and falls."""

import mujoco
import numpy as np

from reacher import physx
from reacher.physics import DRAG_FACTOR, FRAME_DT, GRAVITY, INERTIA, MASS, MAX_ANGULAR_SPEED, ReacherPhysics

NO_DRAG, NO_CAP = 1.0, 1e9


def energy(p: ReacherPhysics) -> np.ndarray:
    """Each arm's kinetic energy (centre-of-mass motion and rotation about it, the principal inertia
    in the link's own axes) plus its potential energy in gravity along y."""
    mujoco.mj_kinematics(p.model, p.data)
    total = np.zeros(p.num_agents)
    rot = np.zeros(9)
    for i in range(p.num_agents):
        for b in range(2):
            v, w = p.velocities[i, b]
            mujoco.mju_quat2Mat(rot, p._quats[i, b])
            w_local = rot.reshape(3, 3).T @ w
            total[i] += 0.5 * MASS * v @ v + 0.5 * w_local @ (INERTIA[b] * w_local) - MASS * GRAVITY * p._coms[i, b, 1]
    return total


def unpowered(p: ReacherPhysics, frames: int, dt: float, drag: float, cap: float) -> None:
    hands = np.empty((frames, p.num_agents, 3))
    physx.step(
        p._model_id,
        p.coords,
        p.velocities,
        np.zeros((p.num_agents, 2, 3)),
        p._origins_m,
        p._inertia,
        frames,
        dt,
        GRAVITY,
        drag,
        cap,
        hands,
        p._qpos,
        p._axes,
    )


def swinging(seed: int, arms: int = 5) -> ReacherPhysics:
    """Arms released at rest from poses away from hanging straight down."""
    p = ReacherPhysics(num_agents=arms, seed=0)
    p.set_pose(np.random.default_rng(seed).uniform(-1.2, 1.2, (arms, 4)))
    return p


def test_energy_drift_without_drag_cap_or_torque_shrinks_in_proportion_to_dt():
    drifts = []
    for dt in (0.02, 0.01, 0.005):  # 4 seconds of swinging at each frame time
        p = swinging(1)
        before = energy(p)
        unpowered(p, int(round(4.0 / dt)), dt, NO_DRAG, NO_CAP)
        drifts.append(np.abs(energy(p) - before).max())
    ratios = np.array(drifts[:-1]) / np.array(drifts[1:])
    assert drifts[0] > 0.1, drifts  # the arms did swing and the measure sees the error
    assert np.all((ratios > 1.7) & (ratios < 2.3)), (drifts, ratios)


def test_energy_of_an_unpowered_arm_never_rises_with_drag_and_cap_on():
    p = swinging(2, arms=20)
    start = energy(p)
    levels = [start]
    for _ in range(300):  # 6 seconds, one frame at a time
        unpowered(p, 1, FRAME_DT, DRAG_FACTOR, MAX_ANGULAR_SPEED)
        levels.append(energy(p))
    levels = np.array(levels)
    assert np.all(levels <= start + 0.01), (levels - start).max()
    assert np.all(levels[-1] < start) and (start - levels[-1]).sum() > 10  # and the swing dies down
