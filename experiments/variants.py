"""The report's variants: what each changes in the agent's `Config`, and what it is called.

Ablations change one thing at a time, except plain DDPG, which removes all three extensions.
The order is the report's; "full" is the notebook's configuration. A change to a field the lesson's
`Config` lacks makes the run an `ablations.Ablation` (experiments/ablations.py), trained by `ablations.AblationAgent`.
"""

VARIANTS = {
    "full": ("full: 5-step + prioritized + NoisyNet", {}),
    "one_step": ("1-step targets", {"n_step": 1}),
    "n3": ("3-step targets", {"n_step": 3}),
    "n10": ("10-step targets", {"n_step": 10}),
    "no_ramp": ("5-step targets from episode 1 (no n ramp)", {"n_step_ramp": 0}),
    "uniform": ("uniform replay", {"alpha": 0.0}),
    "action_noise": ("OU action noise instead of NoisyNet", {"exploration": "ou"}),
    "per_arm_noise": ("NoisyNet, one noise sample per arm", {"noise_per_arm": True}),
    "no_noise": ("no exploration noise", {"exploration": "none"}),
    "all_time_max_priority": (
        "new transitions at the largest priority ever (Schaul et al.)",
        {"new_priority": "largest_ever"},
    ),
    "mean_priority": ("new transitions at the mean priority", {"new_priority": "mean"}),
    "clipped_double_q": ("clipped double-Q (TD3's target)", {"clipped_double_q": True}),
    "mirror": ("goals of one orbit direction mirrored into the other", {"mirror": True}),
    "learn_every_step": ("learning every step throughout", {"learn_every_later": 1}),
    "plain": ("plain DDPG (none of the three)", {"n_step": 1, "alpha": 0.0, "exploration": "ou"}),
}
# A saved run is current while its variant's changes (above) and this version are those it records:
# raise it when the training code changes what a run computes, and `make experiments` makes every
# run again. A new Config field with a default changes nothing and re-runs nothing.
RESULTS_VERSION = 1
LABELS = {name: label for name, (label, _) in VARIANTS.items()}
CHANGES = {name: changes for name, (_, changes) in VARIANTS.items()}
# The full agent in C0, every other variant in a color of its own.
COLORS = dict(zip(VARIANTS, [f"C{k}" for k in range(10)] + ["black", "gold", "teal", "purple", "olive", "navy"]))
