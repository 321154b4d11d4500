"""The PhysX frame pipeline (reacher/physx.py): the cap before the joint solve, joints held,
the chosen joint model's behaviour, and no NaN, inf or overflow under hostile actions."""

import itertools

import numpy as np
import pytest

from reacher import BRAIN_NAME, ReacherEnvironment, physx
from reacher.physics import (
    DEFAULT_JOINT_MODEL,
    DRAG_FACTOR,
    FRAME_DT,
    GRAVITY,
    JOINT_MODELS,
    MAX_ANGULAR_SPEED,
    ReacherPhysics,
)

HALF_PI = np.pi / 2


def pre_solve_pose(physics):
    """Rotations (n, 2, 3, 3), axes (n, 4, 3) and points (n, 6, 3) of the current pose."""
    n = physics.num_agents
    quats, axes, points = np.empty((n, 2, 4)), np.empty((n, 4, 3)), np.empty((n, 6, 3))
    physx.pose(physics._model_id, physics.coords, physics._origins_m, quats, axes, points)
    return axes, points


def one_frame(physics, actions):
    """Step one physics frame directly (no goal motion, no reward)."""
    hands = np.empty((1, physics.num_agents, 3))
    physx.step(
        physics._model_id,
        physics.coords,
        physics.velocities,
        physics.torques(actions),
        physics._origins_m,
        physics._inertia,
        1,
        FRAME_DT,
        GRAVITY,
        DRAG_FACTOR,
        MAX_ANGULAR_SPEED,
        hands,
        physics._qpos,
        physics._axes,
    )


def test_cap_and_drag_act_on_each_body_before_the_solver():
    """PhysX's guarantee is on the velocity the solver receives (steps 1-3), not the observation."""
    physics = ReacherPhysics(20, seed=0)
    physics.reset()
    rng = np.random.default_rng(0)
    for _ in range(100):
        actions = np.sign(rng.standard_normal((20, 4)))
        free = physics.free_velocities(actions)
        speeds = np.linalg.norm(free[:, :, 1], axis=-1)
        assert speeds.max() <= MAX_ANGULAR_SPEED + 1e-9
        physics.step(actions)
    # Drag alone, on a body spinning below the cap with no torque: w *= 1 - 0.05 dt.
    physics.velocities[:] = 0.0
    physics.velocities[:, 1, 1] = [0.0, 2.0, 0.0]
    free = physics.free_velocities(np.zeros((20, 4)))
    np.testing.assert_allclose(free[:, 1, 1], [[0.0, 2.0 * DRAG_FACTOR, 0.0]] * 20)


def test_observed_angular_speed_may_exceed_the_cap_after_the_solver(env):
    """As in PhysX: the joint solve redistributes momentum, so observed speeds can pass 7 rad/s."""
    env.reset()
    rng = np.random.default_rng(0)
    fastest = 0.0
    for _ in range(300):
        obs = env.step(np.sign(rng.standard_normal((20, 4))))[BRAIN_NAME].vector_observations
        fastest = max(fastest, np.linalg.norm(obs[:, [7, 8, 9, 20, 21, 22]].reshape(20, 2, 3), axis=2).max())
    assert MAX_ANGULAR_SPEED < fastest < 50.0


def test_torque_along_the_link_is_capped_together_with_the_swing():
    """The upper arm along +X (hinges: shoulder z at -90 degrees). A torque about world X spins it
    about its own axis (inertia 0.122): 24.6 rad/s in one frame, so the cap shrinks the whole
    angular velocity and the swing that a torque about Z makes falls to a fraction."""
    swing_only, with_spin = (ReacherPhysics(1, seed=0) for _ in range(2))
    for physics in (swing_only, with_spin):
        physics.set_pose(np.array([[0.0, HALF_PI, 0.0, 0.0]]))
        np.testing.assert_allclose(physics.pivots[0, 1] - physics.pivots[0, 0], [7.02, 0, 0], atol=1e-9)
    one_frame(swing_only, np.array([[0.0, 1.0, 0.0, 0.0]]))
    one_frame(with_spin, np.array([[1.0, 1.0, 0.0, 0.0]]))
    swing = lambda p: abs(p.velocities[0, 0, 1, 2])  # A's angular velocity about world z
    assert swing(with_spin) < 0.5 * swing(swing_only)


@pytest.mark.parametrize("joint_model", JOINT_MODELS)
def test_joints_hold_and_velocities_are_those_of_the_pose_before_the_frame(joint_model):
    """After a frame, the bodies' velocities are a motion of the joints at the pose the solver
    saw (PhysX keeps them Cartesian): angular velocities along the coordinate axes, centres of
    mass moving rigidly about the pivots."""
    physics = ReacherPhysics(20, seed=1, joint_model=joint_model)
    physics.reset()
    rng = np.random.default_rng(1)
    for _ in range(40):
        physics.step(rng.uniform(-1, 1, (20, 4)))
    axes, points = pre_solve_pose(physics)
    one_frame(physics, rng.uniform(-1, 1, (20, 4)))
    v, w = physics.velocities[:, :, 0], physics.velocities[:, :, 1]
    for i in range(20):
        # w_A in the span of the shoulder's axes; w_B - w_A in the span of the elbow's.
        for rel, basis in ((w[i, 0], axes[i, :2]), (w[i, 1] - w[i, 0], axes[i, 2:])):
            coef = np.linalg.lstsq(basis.T, rel, rcond=None)[0]
            np.testing.assert_allclose(basis.T @ coef, rel, atol=1e-9)
    shoulder, elbow, com_a, com_b = points[:, 0], points[:, 1], points[:, 2], points[:, 3]
    np.testing.assert_allclose(v[:, 0], np.cross(w[:, 0], com_a - shoulder), atol=1e-9)
    np.testing.assert_allclose(
        v[:, 1], np.cross(w[:, 0], elbow - shoulder) + np.cross(w[:, 1], com_b - elbow), atol=1e-9
    )
    assert np.abs(w).max() > 0.5  # the arms do move
    # The links keep their lengths (the pivots are held exactly).
    np.testing.assert_allclose(np.linalg.norm(physics.pivots[:, 1] - physics.pivots[:, 0], axis=1), 7.02)
    np.testing.assert_allclose(np.linalg.norm(physics.hand - physics.pivots[:, 1], axis=1), 6.0)


def test_chosen_joint_model_is_two_hinges_x_then_z():
    """Pins the calibration's choice (doc/calibration.md): each joint's relative rotation is
    Rx(a) Rz(b), so its row 0 has no z part, and a link can twist about its own axis (which
    Unity's locked angular Y would forbid; the calibration prefers the hinges nonetheless)."""
    assert DEFAULT_JOINT_MODEL == "hinges_xz"
    physics = ReacherPhysics(20, seed=2)
    physics.reset()
    rng = np.random.default_rng(2)
    for _ in range(200):
        physics.step(rng.uniform(-1, 1, (20, 4)))
    rot = physics.data.xmat[1:41].reshape(20, 2, 3, 3)
    shoulder, elbow = rot[:, 0], np.einsum("nji,njk->nik", rot[:, 0], rot[:, 1])
    np.testing.assert_allclose(shoulder[:, 0, 2], 0.0, atol=1e-9)
    np.testing.assert_allclose(elbow[:, 0, 2], 0.0, atol=1e-9)
    # Twist of the elbow about the forearm's axis (swing-twist decomposition about local y).
    q = physics._qpos[:, 1]
    twist = 2 * np.degrees(np.abs(np.arctan2(q[:, 2], q[:, 0])))
    assert twist.max() > 1.0


@pytest.mark.parametrize("joint_model", JOINT_MODELS)
@pytest.mark.parametrize(
    "pose", [(0, HALF_PI), (0, -HALF_PI), (HALF_PI, 0), (-HALF_PI, 0)], ids=["+X", "-X", "-Z", "+Z"]
)  # the upper arm's direction with hinges_xz
def test_no_gimbal_lock_along_the_axes(joint_model, pose):
    """A link pointing along +-X or +-Z stays finite and can still be swung out of that pose."""
    physics = ReacherPhysics(4, seed=0, joint_model=joint_model)
    start = np.zeros((4, 4))
    start[:, :2] = pose
    start[:, 2:] = pose  # the elbow bent the same way
    physics.set_pose(start)
    hand = physics.hand.copy()
    actions = np.array([[1, 0, 0, 0], [0, 1, 0, 0], [-1, 1, 1, -1], [0, 0, 1, 1]], float)
    for _ in range(30):
        obs, _ = physics.step(actions)
        assert np.isfinite(obs).all() and np.isfinite(physics.velocities).all()
    assert np.linalg.norm(physics.hand - hand, axis=1).max() > 0.5


def constant_combinations():
    return np.array(list(itertools.product([-1.0, 0.0, 1.0], repeat=4)))


def hostile(kind, rng, step, n):
    if kind == "constant":
        combos = constant_combinations()
        return combos[(np.arange(n) + step // 1001 * n) % len(combos)]
    if kind == "bang-bang":
        return np.where((np.arange(n)[:, None] + step) % 2 == 0, 1.0, -1.0) * np.sign(np.arange(4) - 1.5)
    if kind == "bias":
        return 0.17 + 0.05 * rng.standard_normal((n, 4))
    return rng.uniform(-1, 1, (n, 4))


@pytest.mark.parametrize("kind", ["constant", "bang-bang", "bias", "uniform"])
def test_never_nan_inf_or_overflow(kind):
    """20 arms for several episodes of each hostile policy: observations stay finite and
    bounded (positions within reach, speeds far below overflow). For constant actions, the 81
    combinations of -1, 0, +1 on the four axes take turns over the arms and episodes."""
    env = ReacherEnvironment(seed=5, verbose=False)
    env.reset()
    rng = np.random.default_rng(5)
    episodes = 5 if kind == "constant" else 2
    for step in range(1001 * episodes):
        obs = env.step(hostile(kind, rng, step, 20))[BRAIN_NAME].vector_observations
        assert np.isfinite(obs).all(), (kind, step)
        assert np.abs(obs[:, [0, 1, 2, 13, 14, 15]]).max() <= 14.1
        assert np.abs(obs[:, [7, 8, 9, 10, 11, 12, 20, 21, 22, 23, 24, 25]]).max() < 500.0


@pytest.mark.parametrize("joint_model", JOINT_MODELS)
def test_every_joint_model_stays_finite_under_bias_and_bang_bang(joint_model):
    env = ReacherEnvironment(seed=6, verbose=False, joint_model=joint_model)
    env.reset()
    rng = np.random.default_rng(6)
    for step in range(1001):
        kind = "bias" if step < 500 else "bang-bang"
        obs = env.step(hostile(kind, rng, step, 20))[BRAIN_NAME].vector_observations
        assert np.isfinite(obs).all() and np.abs(obs).max() < 500.0


def test_unknown_joint_model_is_named():
    with pytest.raises(ValueError, match="unknown joint model 'ball'"):
        ReacherPhysics(2, joint_model="ball")
