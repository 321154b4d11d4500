"""The figures pair what they compare, and tell the variants apart."""

import matplotlib

matplotlib.use("Agg")

from experiments import report, runs  # noqa: E402
from experiments.variants import COLORS, LABELS, VARIANTS  # noqa: E402


def test_every_variant_has_a_color_of_its_own():
    assert set(COLORS) == set(VARIANTS) and len(set(COLORS.values())) == len(COLORS)


def test_each_ablation_panel_pairs_the_full_agent_on_the_ablations_seeds_and_ends_at_the_effect():
    """Each panel: the variant minus its paired full-agent runs, the mean of episodes 1 to E, on an axis of
    its own; at E = 100 it is the variant's effect on the primary measure (the table of effects)."""
    table = runs.load()
    fig = report.ablations_figure(table)
    effects = report.effects(table).loc[runs.PRIMARY]
    panels = {ax.get_title(): ax for ax in fig.axes if ax.get_legend()}
    for variant in ("n3", "uniform", "learn_every_step"):
        seeds = (table[(table.group == "agent") & (table.variant == variant)]).seed.nunique()
        ax = panels[LABELS[variant]]
        assert [t.get_text() for t in ax.get_legend().get_texts()] == [f"{LABELS[variant]} ({seeds} seeds)"]
        x, y = ax.get_lines()[0].get_data()
        assert x[-1] == 100 and round(y[-1], 2) == effects.loc[variant, "mean"]
    low, high = panels[LABELS["learn_every_step"]].get_ylim()
    assert high - low < 1  # an effect of 0.24 shows, not lost on an axis of 0 to 41


def test_every_curve_plot_has_a_y_label_and_the_peers_plot_has_all_ten_seeds():
    table = runs.load()
    peers = report.peers_figure(table)
    ablations = report.ablations_figure(table)
    full = report.curves_figure({"": {"full": [0, 1]}}, "")
    for fig in (peers, ablations, full):
        assert all(ax.get_ylabel() for ax in fig.axes if ax.get_visible() and ax.lines)
    legend = [t.get_text() for t in peers.axes[0].get_legend().get_texts()]
    assert f"{LABELS['full']} ({(table.group.eq('agent') & table.variant.eq('full')).sum()} seeds)" in legend
    assert f"{LABELS['full']} (10 seeds)" in legend
