"""Pictures of the arms: MuJoCo's offscreen renderer when OpenGL is available, matplotlib otherwise.

The OpenGL backend is picked at the first view: `MUJOCO_GL` if set, GLFW with a display, else EGL or OSMesa.
"""

import functools
import importlib
import io
import os
import subprocess
import sys

import numpy as np

from .play import play

# From in front of the grid and above it, down the rows (MuJoCo frame: origins x -40..40, z -61.1..0).
LOOKAT = np.array([0.0, -6.0, -30.5])
EYE = np.array([0.0, 62.0, 56.0])
FLOOR = np.array([0.0, -15.0, -30.5])  # drawn only, below the arms' reach


def _refresh(physics) -> None:
    """Goal spheres to the goals and every derived position up to date; no time passes."""
    import mujoco

    physics.sync_goal_bodies()
    mujoco.mj_forward(physics.model, physics.data)


HEADLESS_BACKENDS = ("egl", "osmesa")  # tried in this order where Linux has no display
# A context and MuJoCo's drawing state in it: what a frame needs of the backend.
PROBE = (
    "import mujoco; c = mujoco.GLContext(8, 8); c.make_current(); "
    "mujoco.MjrContext(mujoco.MjModel.from_xml_string('<mujoco/>'), 150)"
)


@functools.cache
def headless_backend() -> tuple[str | None, str]:
    """The first of HEADLESS_BACKENDS that works here, and why each before it did not. Each is tried in a
    subprocess: a failed try cannot be undone in this one (PyOpenGL keeps the platform of its first import)."""
    reasons = []
    for backend in HEADLESS_BACKENDS:
        try:
            tried = subprocess.run(
                [sys.executable, "-c", PROBE],
                env={**os.environ, "MUJOCO_GL": backend},
                capture_output=True,
                text=True,
                timeout=60,
            )
        except subprocess.TimeoutExpired:
            reasons.append(f"{backend}: no context within 60 s")
            continue
        if tried.returncode == 0:
            return backend, ""
        reasons.append(f"{backend}: {(tried.stderr.strip().splitlines() or ['failed'])[-1]}")
    return None, "; ".join(reasons)


def gl_context(width: int, height: int):
    """An OpenGL context for offscreen drawing; raises where none can be made."""
    import mujoco

    if os.environ.get("MUJOCO_GL") or not (sys.platform.startswith("linux") and not os.environ.get("DISPLAY")):
        if not hasattr(mujoco, "GLContext"):  # MUJOCO_GL=disable
            raise RuntimeError(f"MUJOCO_GL={os.environ.get('MUJOCO_GL')!r} gives MuJoCo no OpenGL context")
        return mujoco.GLContext(width, height)  # the backend mujoco chose as it was imported
    backend, reason = headless_backend()
    if backend is None:
        raise RuntimeError(f"no OpenGL context on this headless machine ({reason})")
    return importlib.import_module(f"mujoco.{backend}").GLContext(width, height)


class MujocoView:
    """MuJoCo's offscreen drawing with a fixed camera and a floor drawn into the scene only."""

    name = "MuJoCo offscreen renderer"

    def __init__(self, physics, width: int = 640, height: int = 360, eye=EYE, lookat=LOOKAT):
        import mujoco

        self.mujoco, self.physics = mujoco, physics
        vis = physics.model.vis.global_  # the offscreen buffer's size: drawing only
        vis.offwidth, vis.offheight = max(vis.offwidth, width), max(vis.offheight, height)
        self.gl = gl_context(width, height)  # raises without an OpenGL backend
        try:
            self.gl.make_current()
            self.context = mujoco.MjrContext(physics.model, mujoco.mjtFontScale.mjFONTSCALE_150.value)
        except Exception:
            self.gl.free()
            raise
        mujoco.mjr_setBuffer(mujoco.mjtFramebuffer.mjFB_OFFSCREEN.value, self.context)
        self.scene = mujoco.MjvScene(physics.model, maxgeom=10_000)
        self.option = mujoco.MjvOption()
        self.camera = mujoco.MjvCamera()  # only a handle: its pose is set in __call__
        self.rect = mujoco.MjrRect(0, 0, width, height)
        self.pixels = np.empty((height, width, 3), np.uint8)
        self.eye = np.asarray(eye, float)
        forward = np.asarray(lookat, float) - self.eye
        self._forward = forward / np.linalg.norm(forward)
        self._up = np.cross(np.cross(self._forward, [0.0, 1.0, 0.0]), self._forward)  # y up on screen
        self._up /= np.linalg.norm(self._up)

    def __call__(self) -> np.ndarray:
        """The current state as an RGB array of shape (height, width, 3)."""
        mj, scene = self.mujoco, self.scene
        _refresh(self.physics)
        mj.mjv_updateScene(
            self.physics.model, self.physics.data, self.option, None, self.camera, mj.mjtCatBit.mjCAT_ALL.value, scene
        )
        # MuJoCo's free camera assumes z is up; the replica keeps Unity's y up, so place it directly.
        for cam in scene.camera:
            cam.pos[:] = self.eye
            cam.forward[:] = self._forward
            cam.up[:] = self._up
        if scene.ngeom < scene.maxgeom:  # the floor, a plane with its normal along +y
            rot = np.array([[1, 0, 0], [0, 0, 1], [0, -1, 0]], float)
            mj.mjv_initGeom(
                scene.geoms[scene.ngeom],
                mj.mjtGeom.mjGEOM_PLANE,
                np.array([300.0, 300.0, 1.0]),
                FLOOR,
                rot.flatten(),
                np.array([0.85, 0.85, 0.82, 1], np.float32),
            )
            scene.ngeom += 1
        self.gl.make_current()
        mj.mjr_render(self.rect, scene, self.context)
        mj.mjr_readPixels(self.pixels, None, self.rect, self.context)
        return np.flipud(self.pixels).copy()  # OpenGL's rows run from the bottom up

    def close(self) -> None:
        if self.context is not None:
            self.gl.make_current()
            self.context.free()
            self.gl.free()
            self.context = None


class MatplotlibView:
    """A plain drawing from above when no OpenGL context exists: arms as lines, goals as circles."""

    name = "matplotlib drawing (no OpenGL context)"

    def __init__(self, physics, width: int = 640, height: int = 360):
        from matplotlib.backends.backend_agg import FigureCanvasAgg
        from matplotlib.figure import Figure

        self.physics = physics
        self.fig = Figure(figsize=(width / 100, height / 100), dpi=100)
        self.canvas = FigureCanvasAgg(self.fig)

    def __call__(self) -> np.ndarray:
        p = self.physics
        _refresh(p)
        points = np.stack([p.pivots[:, 0], p.pivots[:, 1], p.hand], axis=1)
        self.fig.clf()
        self.fig.set_facecolor("#f2f2ee")
        ax = self.fig.add_axes([0, 0, 1, 1])
        # Top view: x to the right, -z (away from the viewer in the MuJoCo view) upward.
        for arm in points:
            ax.plot(arm[:, 0], -arm[:, 2], color="#3366e6", lw=3, solid_capstyle="round")
        ax.scatter(points[:, 0, 0], -points[:, 0, 2], s=30, color="#808080", zorder=3)
        ax.scatter(points[:, 2, 0], -points[:, 2, 2], s=40, color="white", edgecolor="k", zorder=4)
        goals = p.data.mocap_pos
        ax.scatter(goals[:, 0], -goals[:, 2], s=300, color="#1acc33", alpha=0.5, zorder=2)
        ax.set(xlim=(-55, 55), ylim=(-12, 74), aspect="equal")
        ax.axis("off")
        self.canvas.draw()
        return np.asarray(self.canvas.buffer_rgba())[..., :3].copy()

    def close(self) -> None:
        self.fig.clf()


def make_view(physics, width: int = 640, height: int = 360, **camera):
    """MujocoView if an OpenGL context can be made, else MatplotlibView."""
    try:
        return MujocoView(physics, width, height, **camera)
    except Exception as error:  # no display, no EGL/OSMesa library, or MUJOCO_GL disabled
        view = MatplotlibView(physics, width, height)
        view.reason = f"{type(error).__name__}: {str(error).splitlines()[0]}"
        return view


def record(env, policy, steps: int, every: int, view) -> tuple[list, np.ndarray]:
    """Play `steps` steps of `policy(info) -> actions` from a reset: a frame every `every` steps, each agent's score."""
    frames = []
    scores = play(env, policy, steps=steps, on_step=lambda t, info: frames.append(view()) if t % every == 0 else None)
    return frames, scores[0]


def to_gif(frames: list, fps: float = 12) -> bytes:
    """An endlessly looping animated GIF of RGB frames."""
    from PIL import Image

    images = [Image.fromarray(f) for f in frames]
    buf = io.BytesIO()
    images[0].save(
        buf, format="GIF", save_all=True, append_images=images[1:], duration=int(1000 / fps), loop=0, optimize=False
    )
    return buf.getvalue()
