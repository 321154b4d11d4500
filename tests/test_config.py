"""Config refuses, when it is made, every value that would break learning later, naming the field."""

import dataclasses

import pytest

from continuous_control.agent import Config
from continuous_control.config import check_config, parse_overrides
from experiments.ablations import Ablation

# (the values, the rule they break: the test's name)
RULES = [
    ({"grad_clip": -1.0}, "grad_clip must be > 0"),
    ({"grad_clip": 0.0}, "grad_clip must be > 0"),
    ({"tau": 2.0}, "tau must be in (0, 1]"),
    ({"tau": 0.0}, "tau must be in (0, 1]"),
    ({"gamma": 1.5}, "gamma must be in [0, 1]"),
    ({"gamma": -0.1}, "gamma must be in [0, 1]"),
    ({"actor_lr": 0.0}, "actor_lr must be > 0"),
    ({"critic_lr": -1e-3}, "critic_lr must be > 0"),
    ({"buffer_size": 5000, "warmup": 6000}, "batch_size <= warmup <= buffer_size"),
    ({"batch_size": 512, "warmup": 256}, "batch_size <= warmup <= buffer_size"),
    ({"batch_size": 0}, "batch_size must be >= 1"),
    ({"n_step": 0}, "n_step must be >= 1"),
    ({"n_step_ramp": -1}, "n_step_ramp must be >= 0"),
    ({"hidden": (0,)}, "hidden must be one or more layer sizes"),
    ({"hidden": ()}, "hidden must be one or more layer sizes"),
    ({"hidden": (64, 2.5)}, "hidden must be one or more layer sizes"),
    ({"learn_every": 0}, "learn_every must be >= 1"),
    ({"learn_every_later": 0}, "learn_every_later must be >= 1"),
    ({"alpha": -0.5}, "alpha must be >= 0"),
    ({"beta_start": 1.5}, "beta_start must be in [0, 1]"),
    ({"beta_steps": 0}, "beta_steps must be >= 1"),
    ({"priority_offset": 0.0}, "priority_offset must be > 0"),
    ({"priority_window": 0}, "priority_window must be >= 1"),
    ({"exploration": "epsilon"}, "exploration must be one of"),
    ({"exploration": "gaussian"}, "exploration must be one of"),
    ({"exploration": "ou", "noise_per_arm": True}, "noise_per_arm=True needs exploration='noisynet'"),
    ({"new_priority": "largest"}, "new_priority must be one of 'recent', 'largest_ever', 'mean'"),
    ({"ou_kappa": 0.0}, "ou_kappa must be in (0, 1]"),
    ({"action_noise": -0.1}, "action_noise must be >= 0"),
    ({"noisy_sigma0": -0.1}, "noisy_sigma0 must be >= 0"),
    ({"seed": -1}, "seed must be >= 0"),
    ({"seed": 1.5}, "seed must be int"),
    ({"batch_size": True}, "batch_size must be int"),
    ({"noise_per_arm": 1}, "noise_per_arm must be bool"),
    ({"clipped_double_q": 1}, "clipped_double_q must be bool"),
    ({"gamma": "0.99"}, "gamma must be float or int"),
]


@pytest.mark.parametrize("changes", [changes for changes, _ in RULES], ids=[rule for _, rule in RULES])
def test_a_value_that_breaks_learning_is_refused_by_name(changes):
    kind = Config if set(changes) <= set(Config.__dataclass_fields__) else Ablation
    with pytest.raises(ValueError, match=r"^Config\b") as refused:
        kind(**changes)
    for field, value in changes.items():  # each field given, and the value it was given
        assert field in str(refused.value) and repr(value) in str(refused.value)


def test_the_edges_of_each_range_are_accepted():
    Config(
        gamma=1.0,
        tau=1.0,
        alpha=0.0,
        beta_start=0.0,
        n_step=1,
        n_step_ramp=0,
        priority_window=1,
        batch_size=64,
        warmup=64,
        buffer_size=64,
        clipped_double_q=True,
    )
    Ablation(exploration="none", action_noise=0.0, ou_kappa=1.0, learn_every=1, seed=0, new_priority="mean")
    Ablation(noise_per_arm=True, exploration="noisynet")


@dataclasses.dataclass
class WithOptional:
    limit: float | None = None
    size: tuple = (1,)

    def __post_init__(self):
        check_config(self)


def test_text_is_typed_by_the_annotations_optional_included():
    assert parse_overrides(Ablation, ["clipped_double_q=True", "tau=1", "exploration=ou", "hidden=[64, 64]"]) == {
        "clipped_double_q": True,
        "tau": 1.0,
        "exploration": "ou",
        "hidden": (64, 64),
    }
    assert parse_overrides(WithOptional, ["limit=None"]) == {"limit": None}
    assert parse_overrides(WithOptional, ["limit=30"]) == {"limit": 30.0}
    with pytest.raises(ValueError, match=r"Config\.limit\b.*'x'"):
        WithOptional(**parse_overrides(WithOptional, ["limit=x"]))


@pytest.mark.parametrize("device", ["meta", "mps", "cuda x"])
def test_a_device_the_agent_cannot_run_on_is_refused_at_once(device):
    with pytest.raises(ValueError, match=rf"Config\.device\b.*{device!r}"):  # the field and the value
        Config(device=device)
