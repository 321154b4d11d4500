"""How close the built-in Reacher is to the Unity build, on the measures its joint model was chosen on.

    python -m benchmarks.calibration                     # every joint model, writes results/calibration/
    python -m benchmarks.calibration --report            # doc/calibration.md and doc/calibration.png
    python -m benchmarks.calibration --joint-models none --label "replica v1"   # an older replica's API

For each joint model of the replica (reacher/physx.py), environment seed 777: random play (Unity: 0.10
to 0.15), the scripted controller and, noise-free, actors that students trained on the Unity build
(Unity: 35 to 39; read from CALIBRATION_DIR, default ../shared/calibration, whose README gives sources).
The default joint model is the one that came closest on these actors (doc/environment.md), so their
scores are not independent evidence of fidelity.
"""

import argparse
import glob
import io
import os
import platform
import time
from pathlib import Path

import numpy as np

from continuous_control.files import MANIFEST, MIB, FileRefused, read_archive, read_listed_json
from continuous_control.provenance import ROOT, host
from continuous_control.results import write_json
from reacher import ReacherEnvironment, play, scripted_actions

CALIBRATION_DIR = os.environ.get("CALIBRATION_DIR", os.path.join(ROOT, "..", "shared", "calibration"))
RESULTS = os.path.join(ROOT, "results", "calibration")
# The published actors: repository, commit, file. Their weights stay outside: only one repository has a licence.
ACTORS = {
    "1jsingh": ("1jsingh/rl_reacher", "85bc46fc", "trained_models/ddpg/ddpg_actor.pth"),
    "AnKra": (
        "AnKra/udacity-deep-reinforcement-learning-continuous-control-project",
        "646f4218",
        "checkpoint_actor.pth",
    ),
    "ChrisPalmerNZ": ("ChrisPalmerNZ/DRLND_p2_continuous_control", "876e3f57", "final_checkpoint_actor.pth"),
    "GrayWizard": ("GrayWizard/DRLND-Project2-ContinuousControl", "e4405195", "checkpoint_actor.pth"),
}
UNITY = {"random": (0.10, 0.15), "trained": (35.0, 39.5)}


def load_actor(name: str, folder: str = CALIBRATION_DIR):
    """A published actor as a numpy function of (n, 33) observations -> (n, 4) actions."""
    path = os.path.join(folder, f"{name}.npz")
    if not os.path.exists(path):
        raise FileNotFoundError(
            f"calibration actor {path} not found; set CALIBRATION_DIR to the folder "
            f"holding {', '.join(a + '.npz' for a in ACTORS)}"
        )
    weights, layers = read_actor(path)

    def act(x):
        x = np.asarray(x, np.float32)
        for layer in layers:
            kind, _, key = layer.partition(":")
            if kind == "linear":
                x = x @ weights[f"{key}.weight"].T + weights[f"{key}.bias"]
            elif kind == "batchnorm":  # inference mode, PyTorch's eps
                x = (x - weights[f"{key}.running_mean"]) / np.sqrt(weights[f"{key}.running_var"] + 1e-5) * weights[
                    f"{key}.weight"
                ] + weights[f"{key}.bias"]
            elif kind in ("relu", "tanh"):
                x = np.maximum(x, 0) if kind == "relu" else np.tanh(x)
            else:
                raise ValueError(f"{path}: unknown layer {layer!r}")
        return x

    try:  # 33 observations in, 4 actions out, every number finite: else the file is no actor
        out = act(np.zeros((1, 33)))
        assert out.shape == (1, 4) and np.isfinite(out).all()
    except (KeyError, ValueError, AssertionError):
        raise FileRefused(f"{path} is not an actor of 33 observations and 4 actions: refused") from None
    return act


def read_actor(path: str, limit: int = 64 * MIB) -> tuple[dict, list]:
    """An actor file's arrays and its layers ("linear:KEY", "batchnorm:KEY", "relu", "tanh"), read by the
    project's reader (a regular file, bounded, never through a symlink) and refused, naming it, if it is not one."""
    data, _ = read_archive(path, limit)  # a regular file, bounded, each array once, no expansion past the bound
    try:
        with np.load(io.BytesIO(data), allow_pickle=False) as saved:
            weights = {name: saved[name] for name in saved.files}
        layers = [str(layer) for layer in weights.pop("layers")]
    except (OSError, ValueError, KeyError) as error:
        reason = f"{type(error).__name__}: {str(error)[:200]}"
        raise FileRefused(f"{path} is not an actor file ({reason}): refused") from None
    if any(w.dtype.kind != "f" or not np.isfinite(w).all() for w in weights.values()):
        raise FileRefused(f"{path} holds an array that is not finite floating-point numbers: refused")
    return weights, layers


def measure(joint_model, episodes: int, seed: int = 777, actors=tuple(ACTORS)) -> dict:
    rng = np.random.default_rng(seed)
    policies = {
        "random_normal": lambda info, env: np.clip(rng.standard_normal((len(info.agents), 4)), -1, 1),
        "random_uniform": lambda info, env: rng.uniform(-1, 1, (len(info.agents), 4)),
        "scripted": lambda info, env: scripted_actions(env.physics),
    }
    for name in actors:
        actor = load_actor(name)
        policies[name] = lambda info, env, actor=actor: actor(info.vector_observations)
    result, kwargs = {}, {} if joint_model is None else {"joint_model": joint_model}
    for name, policy in policies.items():
        env = ReacherEnvironment(seed=seed, verbose=False, **kwargs)
        s = play(env, lambda info, policy=policy, env=env: policy(info, env), episodes)
        per_arm = s.mean(0)
        result[name] = {
            "episode_means": s.mean(1).round(4).tolist(),
            "mean": round(float(s.mean()), 4),
            "worst_arm": round(float(per_arm.min()), 4),
            "best_arm": round(float(per_arm.max()), 4),
            "arms_at_zero": round(float((s == 0).mean()), 4),
        }
    return result


def write_report(
    folder=RESULTS,
    out_md=os.path.join(ROOT, "doc", "calibration.md"),
    out_png=os.path.join(ROOT, "doc", "calibration.png"),
):
    runs = [read_listed_json(p) for p in sorted(glob.glob(os.path.join(folder, "*.json"))) if not p.endswith(MANIFEST)]
    if not runs:
        raise FileNotFoundError(f"no calibration results in {folder}; run benchmarks/calibration.py first")
    # The chosen model first, then the other joint models, then older replicas.
    runs.sort(key=lambda r: (r["joint_model"] != r.get("default"), r.get("default") is None, r["label"]))
    actors = [a for a in ACTORS if all(a in r["results"] for r in runs)]
    lines = [
        "# Calibration: the built-in Reacher against the Unity build",
        "",
        "Made by `make calibrate` (`benchmarks/calibration.py`) from `results/calibration/`; do not edit by hand.",
        "Every replica number: environment seed 777, noise-free actors, 20 arms, "
        f"{runs[0]['episodes']} episodes per measure, on {runs[0]['machine']}.",
        "",
        'Unity numbers (`doc/environment.md`, "Calibration figures"): random play 0.10 to 0.15 per '
        "episode with about half the arms at 0; trained agents 37 to 39.5; the published actors below "
        "scored 35 to 39 on the Unity build. The chosen joint model is the one that came closest on these actors, "
        "so their scores are not independent evidence of fidelity (`doc/environment.md`).",
        "",
        "| replica | random (normal) | arms at 0 | random (uniform) | scripted | "
        + " | ".join(f"{a} mean (worst arm)" for a in actors)
        + " | mean of the actors | lowest actor |",
        "|" + "---|" * (6 + len(actors) + 1),
    ]
    for r in runs:
        res = r["results"]
        means = [res[a]["mean"] for a in actors]
        lines.append(
            f"| {r['label']} | {res['random_normal']['mean']:.3f} | {res['random_normal']['arms_at_zero']:.0%} | "
            f"{res['random_uniform']['mean']:.3f} | {res['scripted']['mean']:.2f} | "
            + " | ".join(f"{res[a]['mean']:.1f} ({res[a]['worst_arm']:.1f})" for a in actors)
            + f" | {np.mean(means):.1f} | {min(means):.1f} |"
        )
    lines += [
        "",
        "The actors' sources. Their weights are not part of this project (only the first repository "
        "carries a licence): fetch them from these repositories and convert them to the `.npz` format "
        "that `benchmarks/calibration.py` reads (`load_actor`), in the folder that the environment variable "
        "`CALIBRATION_DIR` names. Without them the transfer test is skipped and says why.",
        "",
    ]
    lines += [f"- {a}: github.com/{repo} @ {commit}, `{path}`" for a, (repo, commit, path) in ACTORS.items()]
    Path(out_md).write_text("\n".join(lines) + "\n")
    _figure(runs, actors, out_png)
    print(f"wrote {out_md} and {out_png}")


def _figure(runs, actors, path):
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    fig, (left, right) = plt.subplots(1, 2, figsize=(11, 3.8), gridspec_kw={"width_ratios": [3, 1]})
    width = 0.8 / len(runs)
    names = actors + ["scripted"]
    for j, r in enumerate(runs):
        x = np.arange(len(names)) + (j - (len(runs) - 1) / 2) * width
        left.bar(x, [r["results"][a]["mean"] for a in names], width, label=r["label"])
        left.scatter(x, [r["results"][a]["worst_arm"] for a in names], color="k", s=8, zorder=3)
        right.bar(j, r["results"]["random_normal"]["mean"], 0.7)
    left.axhspan(*UNITY["trained"], color="0.85", zorder=0, label="Unity: trained agents")
    left.set_xticks(np.arange(len(names)), names)
    left.set_ylabel("score (bar: mean, dot: worst arm)")
    left.legend(fontsize=7, loc="lower left")
    right.axhspan(*UNITY["random"], color="0.85", zorder=0)
    right.set_xticks(range(len(runs)), [r["label"] for r in runs], rotation=30, ha="right", fontsize=7)
    right.set_title("random play (grey: Unity)", fontsize=9)
    fig.tight_layout()
    fig.savefig(path, dpi=110)
    plt.close(fig)


def positive(text: str) -> int:
    """A whole number >= 1 (argparse names the option when this refuses)."""
    if not text.strip().isdigit() or int(text) < 1:
        raise argparse.ArgumentTypeError(f"{text!r} is not a whole number >= 1")
    return int(text)


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument(
        "--joint-models",
        nargs="+",
        default=["hinges_xz", "hinges_zx", "swing"],
        help="'none' for a replica without joint models (an older commit)",
    )
    parser.add_argument("--episodes", type=positive, default=2)
    parser.add_argument("--label", help="name of the replica in the table (default: the joint model)")
    parser.add_argument("--report", action="store_true", help="only write doc/calibration.md from the results")
    args = parser.parse_args(argv)
    if args.report:
        return write_report()
    os.makedirs(RESULTS, exist_ok=True)
    try:
        from reacher.physics import DEFAULT_JOINT_MODEL
    except ImportError:  # an older replica, before joint models
        DEFAULT_JOINT_MODEL = None
    for model in args.joint_models:
        joint_model = None if model == "none" else model
        start = time.perf_counter()
        result = measure(joint_model, args.episodes)
        label = args.label or f"{model}" + (" (chosen)" if model == DEFAULT_JOINT_MODEL else "")
        record = {
            "label": label,
            "joint_model": model,
            "default": DEFAULT_JOINT_MODEL if joint_model else None,
            "episodes": args.episodes,
            "seconds": round(time.perf_counter() - start, 1),
            "machine": f"{host()}, Python {platform.python_version()}",
            "results": result,
        }
        name = label.split(" (")[0].replace(" ", "_")
        write_json(os.path.join(RESULTS, f"{name}.json"), record, listed=True)  # renamed into place, and listed
        print(label, {k: (v["mean"], v["worst_arm"]) for k, v in result.items()}, f"{record['seconds']} s", flush=True)
    write_report()


if __name__ == "__main__":
    main()
