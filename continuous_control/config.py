"""The checks of the lesson's `Config` and of its agent's inputs, the seed streams, `FIELD=VALUE` text typed by
its annotations, and a run's setup."""

import ast
import atexit
import dataclasses
import math
import os
import shutil
import tempfile
import types
import typing

import numpy as np
import torch

# field: (test, the allowed range in words). Fields not named here are checked by type only; a Config class may add
# its own fields' ranges as a class attribute RANGES (the report's ablations do, experiments/ablations.py).
RANGES = {
    **dict.fromkeys(("seed", "warmup", "learn_every_until"), (lambda v: v >= 0, ">= 0")),
    **dict.fromkeys(
        ("n_step", "buffer_size", "batch_size", "learn_every", "learn_every_later", "beta_steps", "priority_window"),
        (lambda v: v >= 1, ">= 1"),
    ),
    **dict.fromkeys(("actor_lr", "critic_lr", "grad_clip", "priority_offset"), (lambda v: 0 < v < math.inf, "> 0")),
    **dict.fromkeys(("noisy_sigma0", "action_noise"), (lambda v: 0 <= v < math.inf, ">= 0")),
    **dict.fromkeys(("tau", "ou_kappa"), (lambda v: 0 < v <= 1, "in (0, 1]")),
    "gamma": (lambda v: 0 <= v <= 1, "in [0, 1] (0: a bandit, each reward alone)"),
    "n_step_ramp": (lambda v: v >= 0, ">= 0 (0: no ramp)"),
    "hidden": (
        lambda v: len(v) >= 1 and all(type(h) is int and h >= 1 for h in v),
        "one or more layer sizes, each >= 1",
    ),
    "alpha": (lambda v: 0 <= v < math.inf, ">= 0 (0: uniform replay)"),
    "beta_start": (lambda v: 0 <= v <= 1, "in [0, 1]"),
    # the agent runs on these two; torch knows more ("meta", "mps", ...) that would fail only at act()
    "device": (lambda v: v.split(":")[0] in ("cpu", "cuda"), "'cpu', 'cuda' or 'cuda:<index>'"),
}


def _types(annotation) -> tuple:
    """The types a field accepts: `float | None` gives (float, NoneType); a float field takes an int too."""
    union = isinstance(annotation, types.UnionType) or typing.get_origin(annotation) is typing.Union
    kinds = typing.get_args(annotation) if union else (annotation,)
    return tuple(k for kind in kinds for k in ((float, int) if kind is float else (kind,)))


def check_config(cfg) -> None:
    """ValueError naming the first field of `cfg` of the wrong type or out of range: refused now, not episodes later."""
    hints, ranges = typing.get_type_hints(type(cfg)), {**RANGES, **getattr(type(cfg), "RANGES", {})}
    for field in dataclasses.fields(cfg):
        value, kinds = getattr(cfg, field.name), _types(hints[field.name])
        # a bool is an int to Python, never to a Config
        if not (bool in kinds if isinstance(value, bool) else isinstance(value, kinds)):
            names = " or ".join(dict.fromkeys("None" if k is type(None) else k.__name__ for k in kinds))
            raise ValueError(f"Config.{field.name} must be {names}, got {value!r}")
        if field.name in ranges:
            test, allowed = ranges[field.name]
            if not test(value):
                raise ValueError(f"Config.{field.name} must be {allowed}, got {value!r}")
    if not cfg.batch_size <= cfg.warmup <= cfg.buffer_size:
        raise ValueError(
            f"Config needs batch_size <= warmup <= buffer_size (the first update samples a full batch "
            f"from what the warm-up stored), got {cfg.batch_size}, {cfg.warmup}, {cfg.buffer_size}"
        )
    if hasattr(cfg, "device"):
        torch.empty(0, device=cfg.device)  # an unknown or absent device fails here, with torch's reason


def refuse_non_finite(step: int, **arrays) -> None:
    """Stop at a NaN or an infinity in a state or a reward, naming the arm and the step: once stored,
    it would spread through the replay into every network."""
    for name, x in arrays.items():
        bad = ~np.isfinite(np.asarray(x)).reshape(len(x), -1).all(1)
        if bad.any():
            raise ValueError(
                f"step {step}: arm {int(np.argmax(bad))} has a non-finite value in its {name} "
                f"({np.asarray(x)[np.argmax(bad)]})"
            )


def seed_streams(seed: int) -> dict:
    """A 64-bit seed for each source of randomness, from independent streams spawned by one SeedSequence."""
    names = ("goals", "replay", "weights", "noise")
    streams = np.random.SeedSequence(seed).spawn(len(names))
    return {name: int(seq.generate_state(1, np.uint64)[0]) for name, seq in zip(names, streams)}


def parse_overrides(config_class, pairs: list) -> dict:
    """{field: value} from `FIELD=VALUE` strings, each VALUE a Python literal (`(64, 64)`) or a plain word for a
    string field; the Config made from them checks the values."""
    hints = typing.get_type_hints(config_class)
    overrides = {}
    for pair in pairs:
        name, sep, text = pair.partition("=")
        if not sep:
            raise ValueError(f"{pair!r}: expected FIELD=VALUE")
        if name not in hints:
            raise ValueError(f"Config has no field {name!r}: one of {', '.join(hints)}")
        kinds = _types(hints[name])
        try:
            value = ast.literal_eval(text)
        except (ValueError, SyntaxError):
            value = text  # a word: right for a string field, refused by the Config otherwise
        if isinstance(value, list) and tuple in kinds:
            value = tuple(value)
        if type(value) is int and kinds[0] is float:  # `tau=1` means 1.0
            value = float(value)
        overrides[name] = value
    return overrides


def env_flag(name: str) -> bool:
    """An on/off setting from the environment (`make run RESUME=1`); anything but 1/0-like words is refused."""
    value = os.environ.get(name, "").strip().lower()
    if value in ("1", "true", "yes", "on"):
        return True
    if value in ("", "0", "false", "no", "off"):
        return False
    raise ValueError(f"{name}={os.environ[name]!r}: expected 1, true or yes (on), or 0, false or no (off)")


def run_setup(run_dir: str = "checkpoints") -> tuple[bool, bool, str]:
    """SMOKE and RESUME from the environment, and the run's folder (for a smoke run, a temporary one removed at
    exit)."""
    smoke, resume = env_flag("SMOKE"), env_flag("RESUME")
    if smoke:
        run_dir = tempfile.mkdtemp(prefix="reacher-smoke-")
        atexit.register(shutil.rmtree, run_dir, ignore_errors=True)
    return smoke, resume, run_dir
