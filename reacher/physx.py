"""One physics frame of the Unity Reacher, stepped as PhysX 3.3 steps it (MuJoCo integrates in joint space
and has no speed cap), compiled with numba and batched over the arms. Per body b (doc/environment.md, "One
physics frame"; PhysX 3.3 `PxsBodyCoreIntegrator.h`, `integrateCore`):

    1. v_b += g dt,  w_b += I_b^-1 tau_b dt      the whole world torque, the link axis included
    2. w_b *= 1 - 0.05 dt                        angular drag, PhysX's linear form
    3. w_b *= min(1, 7 / |w_b|)                  Rigidbody.maxAngularVelocity, the whole vector
    4. u = J s,  s = (J^T M J)^-1 J^T M u        the joint solve, the limit of PhysX's 12 iterations
    5. c += s dt                                 positions from the projected velocities

u: both bodies' 12 velocities (of the centres of mass), M their mass matrix, s the coordinate rates. The bodies
keep u between frames, as PhysX does: hence the chain's Coriolis couplings, and ~(w dt)^2 / 2 of energy lost a frame.
Joint models, two coordinates (a, b) a joint: HINGES_XZ, hinges about the parent's x then the child's z; HINGES_ZX,
the other order; SWING, PhysX's D6 joint with y locked: exp(phi), phi = (a, 0, b), turning about J_l(phi) (a, 0, b)'.
"""

import math

import numpy as np
from numba import njit

HINGES_XZ, HINGES_ZX, SWING = 0, 1, 2
JOINT_MODELS = {"hinges_xz": HINGES_XZ, "hinges_zx": HINGES_ZX, "swing": SWING}

# The arm (doc/environment.md, "Bodies"): lengths from each joint's pivot down the link's axis, local -y.
SHOULDER_HEIGHT = 0.02  # shoulder pivot above the agent's origin
ELBOW = 7.02  # elbow pivot below the shoulder pivot
COM_A = 4.02  # A's centre of mass below the shoulder pivot (capsule centre)
COM_B = 4.4545  # B's centre of mass below the elbow (capsule + hand sphere)
CENTRE_B = 3.0  # B's capsule centre below the elbow
HAND = 6.0  # hand sphere's centre below the elbow


@njit(cache=True)
def _relative_rotation(model, a, b, out):
    """The joint's relative rotation matrix (3, 3) from its two coordinates."""
    if model == SWING:
        t2 = a * a + b * b
        t = math.sqrt(t2)
        s = 0.5 - t2 / 48.0 if t < 1e-4 else math.sin(0.5 * t) / t  # sin(t/2) / t
        w, x, y, z = math.cos(0.5 * t), s * a, 0.0, s * b
    else:
        ca, sa, cb, sb = math.cos(0.5 * a), math.sin(0.5 * a), math.cos(0.5 * b), math.sin(0.5 * b)
        if model == HINGES_XZ:
            w, x, y, z = ca * cb, sa * cb, -sa * sb, ca * sb  # qx(a) qz(b)
        else:
            w, x, y, z = ca * cb, ca * sb, sa * sb, sa * cb  # qz(a) qx(b)
    out[0, 0] = 1 - 2 * (y * y + z * z)
    out[0, 1] = 2 * (x * y - w * z)
    out[0, 2] = 2 * (x * z + w * y)
    out[1, 0] = 2 * (x * y + w * z)
    out[1, 1] = 1 - 2 * (x * x + z * z)
    out[1, 2] = 2 * (y * z - w * x)
    out[2, 0] = 2 * (x * z - w * y)
    out[2, 1] = 2 * (y * z + w * x)
    out[2, 2] = 1 - 2 * (x * x + y * y)
    return w, x, y, z


@njit(cache=True)
def _local_axes(model, a, b, rel, out):
    """The two axes (2, 3), in the parent's frame, about which the coordinates turn the child."""
    out[:] = 0.0
    if model == HINGES_XZ:
        out[0, 0] = 1.0  # the parent's x
        out[1, :] = rel[:, 2]  # the child's z
    elif model == HINGES_ZX:
        out[0, 2] = 1.0  # the parent's z
        out[1, :] = rel[:, 0]  # the child's x
    else:
        # Columns x and z of J_l(phi) = I + p [phi]x + q [phi]x^2, phi = (a, 0, b).
        t2 = a * a + b * b
        if t2 < 1e-8:
            p, q = 0.5 - t2 / 24.0, 1.0 / 6.0 - t2 / 120.0
        else:
            t = math.sqrt(t2)
            p, q = (1 - math.cos(t)) / t2, (t - math.sin(t)) / (t2 * t)
        out[0, 0], out[0, 1], out[0, 2] = 1 + q * (a * a - t2), p * b, q * a * b
        out[1, 0], out[1, 1], out[1, 2] = q * a * b, -p * a, 1 + q * (b * b - t2)


@njit(cache=True)
def _arm_pose(model, c, origin, rot, axes, points, quats, rel, local):
    """Rotations of A and B (2, 3, 3), the 4 coordinate axes (4, 3), the points (6, 3): shoulder, elbow,
    A's and B's centres of mass, B's capsule centre, hand (world frame); and the joints' quaternions (2, 4)."""
    for j in range(2):
        w, x, y, z = _relative_rotation(model, c[2 * j], c[2 * j + 1], rel)
        quats[j, 0], quats[j, 1], quats[j, 2], quats[j, 3] = w, x, y, z
        _local_axes(model, c[2 * j], c[2 * j + 1], rel, local)
        if j == 0:  # the shoulder's parent is the fixed base
            rot[0] = rel
            axes[0:2] = local
        else:  # the elbow's parent is A: rotate both into the world
            for r in range(3):
                for k in range(3):
                    rot[1, r, k] = rot[0, r, 0] * rel[0, k] + rot[0, r, 1] * rel[1, k] + rot[0, r, 2] * rel[2, k]
            for m in range(2):
                for r in range(3):
                    axes[2 + m, r] = (
                        rot[0, r, 0] * local[m, 0] + rot[0, r, 1] * local[m, 1] + rot[0, r, 2] * local[m, 2]
                    )
    for k in range(3):
        down_a, down_b = rot[0, k, 1], rot[1, k, 1]  # each link's axis (local y), world
        points[0, k] = origin[k] + (SHOULDER_HEIGHT if k == 1 else 0.0)
        points[1, k] = points[0, k] - ELBOW * down_a
        points[2, k] = points[0, k] - COM_A * down_a
        points[3, k] = points[1, k] - COM_B * down_b
        points[4, k] = points[1, k] - CENTRE_B * down_b
        points[5, k] = points[1, k] - HAND * down_b


@njit(cache=True)
def _cross(a, b, out):
    out[0] = a[1] * b[2] - a[2] * b[1]
    out[1] = a[2] * b[0] - a[0] * b[2]
    out[2] = a[0] * b[1] - a[1] * b[0]


@njit(cache=True)
def _solve_spd(m, h, out, low):
    """out = m^-1 h for a small symmetric positive definite m, by Cholesky (low: scratch)."""
    n = m.shape[0]
    for i in range(n):
        for j in range(i + 1):
            s = m[i, j]
            for k in range(j):
                s -= low[i, k] * low[j, k]
            low[i, j] = math.sqrt(s) if i == j else s / low[j, j]
    for i in range(n):  # forward: low y = h
        s = h[i]
        for k in range(i):
            s -= low[i, k] * out[k]
        out[i] = s / low[i, i]
    for i in range(n - 1, -1, -1):  # backward: low^T out = y
        s = out[i]
        for k in range(i + 1, n):
            s -= low[k, i] * out[k]
        out[i] = s / low[i, i]


@njit(cache=True)
def _free_velocity(u, rot, torque, inertia, dt, gravity, drag, max_speed, tmp):
    """Steps 1-3 for one arm's two bodies, each on its own, before any joint acts."""
    for b in range(2):
        r = rot[b]
        # 1. gravity; the whole world torque through the world inverse inertia R I^-1 R^T
        u[b, 0, 1] += gravity * dt
        for k in range(3):
            tmp[k] = (r[0, k] * torque[b, 0] + r[1, k] * torque[b, 1] + r[2, k] * torque[b, 2]) * dt / inertia[b, k]
        for k in range(3):
            u[b, 1, k] += r[k, 0] * tmp[0] + r[k, 1] * tmp[1] + r[k, 2] * tmp[2]
        # 2. angular drag and 3. the speed cap, on the body's own angular velocity
        speed = 0.0
        for k in range(3):
            u[b, 1, k] *= drag
            speed += u[b, 1, k] * u[b, 1, k]
        speed = math.sqrt(speed)
        if speed > max_speed:
            for k in range(3):
                u[b, 1, k] *= max_speed / speed


@njit(cache=True)
def free_velocities(model, coords, velocities, torque, origins, inertia, dt, gravity, drag, max_speed):
    """Steps 1-3 alone for every arm (velocities updated in place): what the joint solve receives."""
    rot, rel, local = np.empty((2, 3, 3)), np.empty((3, 3)), np.empty((2, 3))
    axes, points, quats, tmp = np.empty((4, 3)), np.empty((6, 3)), np.empty((2, 4)), np.empty(3)
    for i in range(coords.shape[0]):
        _arm_pose(model, coords[i], origins[i], rot, axes, points, quats, rel, local)
        _free_velocity(velocities[i], rot, torque[i], inertia, dt, gravity, drag, max_speed, tmp)


@njit(cache=True)
def _jacobian(axes, points, rot, inertia, jt, mjt, lever, tmp):
    """4. the joint solve's J^T and (M J)^T: coordinate k turns the bodies beyond its joint at axis_k,
    axis_k x (com - pivot); M has mass 1 on the linear rows and R I R^T on the angular."""
    for k in range(4):
        pivot = 0 if k < 2 else 1
        if k < 2:
            for m in range(3):
                lever[m] = points[2, m] - points[pivot, m]
            _cross(axes[k], lever, jt[k, 0:3])
            jt[k, 3:6] = axes[k]
        for m in range(3):
            lever[m] = points[3, m] - points[pivot, m]
        _cross(axes[k], lever, jt[k, 6:9])
        jt[k, 9:12] = axes[k]
        for b in range(2):
            r = rot[b]
            mjt[k, 6 * b : 6 * b + 3] = jt[k, 6 * b : 6 * b + 3]
            for m in range(3):
                tmp[m] = (
                    r[0, m] * jt[k, 6 * b + 3] + r[1, m] * jt[k, 6 * b + 4] + r[2, m] * jt[k, 6 * b + 5]
                ) * inertia[b, m]
            for m in range(3):
                mjt[k, 6 * b + 3 + m] = r[m, 0] * tmp[0] + r[m, 1] * tmp[1] + r[m, 2] * tmp[2]


@njit(cache=True)
def _project(jt, mjt, flat, mq, h, s, low):
    """The body velocities `flat` projected onto the joints' rates s (J^T M J s = J^T M u), then u = J s."""
    for k in range(4):
        h[k] = 0.0
        for m in range(12):
            h[k] += mjt[k, m] * flat[m]
        for m in range(4):
            mq[k, m] = 0.0
            for e in range(12):
                mq[k, m] += mjt[k, e] * jt[m, e]
    _solve_spd(mq, h, s, low)
    for m in range(12):
        flat[m] = jt[0, m] * s[0] + jt[1, m] * s[1] + jt[2, m] * s[2] + jt[3, m] * s[3]


@njit(cache=True)
def _wrap(c):
    """The same swing rotation with |phi| <= pi."""
    for j in range(2):
        t = math.sqrt(c[2 * j] ** 2 + c[2 * j + 1] ** 2)
        if t > math.pi:
            c[2 * j] *= 1 - 2 * math.pi / t
            c[2 * j + 1] *= 1 - 2 * math.pi / t


@njit(cache=True)
def step(
    model, coords, velocities, torque, origins, inertia, frames, dt, gravity, drag, max_speed, hands, quats, axes_out
):
    """Advance every arm `frames` frames under world torques (n, 2, 3), coords (n, 4) and velocities (n, 2, 2, 3)
    in place; the hand after each frame into hands (frames, n, 3), the final pose into quats and axes_out."""
    rot, axes, points, tmp, lever = np.empty((2, 3, 3)), np.empty((4, 3)), np.empty((6, 3)), np.empty(3), np.empty(3)
    jt, mjt = np.zeros((4, 12)), np.zeros((4, 12))  # J^T (coordinate k -> the 12 body velocities), (M J)^T
    mq, h, s = np.empty((4, 4)), np.empty(4), np.empty(4)
    rel, local, low = np.empty((3, 3)), np.empty((2, 3)), np.empty((4, 4))
    for i in range(coords.shape[0]):
        c, u, flat = coords[i], velocities[i], velocities[i].reshape(12)
        _arm_pose(model, c, origins[i], rot, axes, points, quats[i], rel, local)
        for f in range(frames):
            _free_velocity(u, rot, torque[i], inertia, dt, gravity, drag, max_speed, tmp)
            _jacobian(axes, points, rot, inertia, jt, mjt, lever, tmp)
            _project(jt, mjt, flat, mq, h, s, low)
            # 5. positions from the projected rates
            for k in range(4):
                c[k] += s[k] * dt
            if model == SWING:
                _wrap(c)
            _arm_pose(model, c, origins[i], rot, axes, points, quats[i], rel, local)
            hands[f, i] = points[5]
        axes_out[i] = axes


@njit(cache=True)
def pose(model, coords, origins, quats, axes, points):
    """The pose of every arm without stepping: quats (n, 2, 4), axes (n, 4, 3), points (n, 6, 3)."""
    rot, rel, local = np.empty((2, 3, 3)), np.empty((3, 3)), np.empty((2, 3))
    for i in range(coords.shape[0]):
        _arm_pose(model, coords[i], origins[i], rot, axes[i], points[i], quats[i], rel, local)
