"""The figures pair what they compare, and tell the variants apart."""
import matplotlib

matplotlib.use("Agg")

from continuous_control.figures import COLORS, plot_ablations  # noqa: E402
from continuous_control.variants import VARIANTS  # noqa: E402


def fake(seed, level):
    return {"summary": {"seed": seed, "solved_at": None}, "scores": {"mean": [level] * 100}}


def test_every_variant_has_a_color_of_its_own():
    assert set(COLORS) == set(VARIANTS) and len(set(COLORS.values())) == len(COLORS)


def test_each_ablation_panel_pairs_the_full_agent_on_the_ablations_seeds():
    results = {"full": [fake(k, 38) for k in range(5)], "uniform": [fake(k, 36) for k in range(3)],
               "n3": [fake(k, 37) for k in (3, 4)]}
    fig = plot_ablations(results)
    legends = [[t.get_text() for t in ax.get_legend().get_texts()] for ax in fig.axes if ax.get_legend()]
    assert legends[0][0].endswith("(seeds 0, 1, 2)") and legends[0][1].startswith("uniform replay")
    assert legends[1][0].endswith("(seeds 3, 4)")
