"""The agent side by side with Stable-Baselines3's TD3 and SAC on the same arms (benchmarks/peers.py):
with RL-Zoo's settings (td3, sac, td3_zoo, sac_zoo) and configured like the agent (td3_like, sac_like).

One call each, for Report.ipynb and the README (never trains; reads results/ and results/peers/):

    results = peer_results()           # {"full": runs, "td3": runs, ...}: peers with results only, the full agent on their seeds
    peers_table(results)               # Markdown: one row per agent, with its verdict against the full agent
    peers_intervals(results)           # Markdown: each peer's paired difference from the agent, with its intervals
    peers_figure(results)              # the learning curves of all of them (a matplotlib figure)
    python -m experiments.peers        # prints the table and the text, writes doc/peers.png (make peers)

Verdicts follow experiments/claims.py's rule (seed k against seed k, at least claims.MIN_SEEDS
pairs, the mean paired difference's 95% t-interval, corrected for the peers compared, excluding zero); minutes to solve are judged by the same rule, lower being
better, only where every paired run solved and all of them were made on one kind of processor and
shared the machine alike (summary.json's machine and concurrent_runs): a run alone is not faster than
one that shared two cores.
"""
import os

import numpy as np

from benchmarks.peers import LABELS as PEER_LABELS
from benchmarks.peers import PEERS
from continuous_control.results import ROOT, TARGET_SCORE, WINDOW, load_variant, processor_of
from experiments import claims
from experiments.claims import METRICS, run_stats, span
from experiments.tables import markdown_table

PEERS_ROOT = os.path.join("results", "peers")
FIGURE = os.path.join(ROOT, "doc", "peers.png")
LABELS = {"full": "this agent (full)", **PEER_LABELS}
COLORS = {"full": "#1f4e9c", "td3": "#d62728", "sac": "#2ca02c", "td3_zoo": "#ff9896", "sac_zoo": "#98df8a",
          "td3_like": "#7b1113", "sac_like": "#145a14"}
STYLES = {"td3_like": "--", "sac_like": "--"}          # configured like the agent: dashed, the rest solid
MINUTES = ("minutes", "minutes to solve", -1)


def peer_results(root: str = "results", peers_root: str = PEERS_ROOT) -> dict:
    """{"full": the full agent's runs on the seeds the peers ran, then each peer with results: runs}."""
    peers = {name: runs for name in PEERS if (runs := load_variant(name, peers_root))}
    seeds = {run["summary"]["seed"] for runs in peers.values() for run in runs}
    full = [run for run in load_variant("full", root) if not seeds or run["summary"]["seed"] in seeds]
    return {"full": full, **peers} if full else peers


def _checked(results: dict) -> dict:
    if "full" not in results or not results["full"]:
        raise ValueError("no runs of the full agent to compare with: results/full/seed<k>/ (make experiments)")
    unknown = set(results) - set(LABELS)
    if unknown:
        raise ValueError(f"unknown agents {sorted(unknown)}: expected 'full' and peers of {sorted(PEERS)}")
    return results


def all_solved(results: dict, name: str) -> bool:
    """Whether every run of the peer and of the full agent on their paired seeds solved the task."""
    seeds = set(claims.paired_seeds(results, name))
    return all(run["summary"]["solved_at"] for n in (name, "full") for run in results[n]
               if run["summary"]["seed"] in seeds)


def timed_alike(results: dict, name: str) -> bool:
    """Whether the peer's runs and the full agent's on their paired seeds were all made on one kind of
    processor and shared the machine alike (minutes compare only then)."""
    seeds = set(claims.paired_seeds(results, name))
    return len({(processor_of(run["summary"]), run["summary"].get("concurrent_runs", 1))
                for n in (name, "full") for run in results[n] if run["summary"]["seed"] in seeds}) == 1


def paired(results: dict, name: str) -> bool:
    """Whether the peer has a seed in common with the full agent's runs (a comparison needs one)."""
    return bool(claims.paired_seeds(results, name))


def comparisons(results: dict) -> dict:
    """{peer: [claims.Comparison for each of claims.METRICS, then minutes to solve]} against the
    full agent. Minutes are compared only where every paired run solved (a run that never solves
    is not faster for stopping at episode 100) and all were timed alike (`timed_alike`)."""
    names = [name for name in _checked(results) if name != "full" and paired(results, name)]
    family = claims.family_size(results, names)
    return {name: [claims.compare(results, name, m, family=family)
                   for m in (*METRICS, *([MINUTES[0]] if all_solved(results, name) and timed_alike(results, name) else []))]
            for name in names}


def better(c) -> bool | None:
    """claims.better, with minutes (fewer is better) added."""
    if c.metric != MINUTES[0]:
        return claims.better(c)
    return None if c.verdict in ("no clear difference", claims.TOO_FEW) else c.verdict == "lower"


def name_of(metric: str) -> str:
    return MINUTES[1] if metric == MINUTES[0] else METRICS[metric][0]


def verdict(cs: list) -> str:
    """A peer's comparisons in a phrase: where it is clearly better or worse than the full agent."""
    if all(c.verdict == claims.TOO_FEW for c in cs):
        return claims.too_few(cs, "the agent")
    worse = [name_of(c.metric) for c in cs if better(c) is False]
    good = [name_of(c.metric) for c in cs if better(c) is True]
    parts = (["clearly worse than the agent on " + ", ".join(worse)] if worse else []) + (
        ["clearly better on " + ", ".join(good)] if good else [])
    return "; ".join(parts) or "no clear difference from the agent on any measure"


def row(name: str, runs: list, verdicts: dict) -> list:
    stats = [run_stats(r) for r in runs]
    get = lambda key: [st[key] for st in stats]
    evals = [st for st in stats if st["eval"] is not None]
    evaluation = "-" if not evals else (f"{span('eval', [st['eval'] for st in evals], 2)} "
                                        f"({min(st['eval_worst_arm'] for st in evals):.2f})")
    solved = [r["summary"]["solved_at"] for r in runs]
    return [LABELS[name], ", ".join(str(st["seed"]) for st in stats),
            ", ".join(str(f) if f else "never" for f in get("first_30")),
            f"{span('mean_1_100', get('mean_1_100'))} ({min(get('worst_arm_1_100')):.1f})",
            ", ".join(str(s) if s else f"not by {WINDOW}" for s in solved),
            minutes(runs, get("minutes")), evaluation,
            verdicts.get(name, "(the reference)" if name == "full" else "(no seed in common with the agent's runs)")]


def minutes(runs: list, values: list) -> str:
    """Minutes to solve, or for the run's 100 episodes where it did not solve: the range over seeds,
    then whether all solved and how the runs shared the machine."""
    solved = sum(bool(r["summary"]["solved_at"]) for r in runs)
    notes = ([] if solved == len(runs) else ["never solved"] if not solved else [f"solved in {solved} of {len(runs)}"])
    return f"{span('eval', values)} ({'; '.join(notes + [claims.sharing(runs)])})"


def peers_table(results: dict | None = None) -> str:
    """One row per agent: seeds, first episode with a mean of 30 per seed, mean of episodes 1-100
    (worst arm), solved at per seed, minutes, noise-free score (worst arm), verdict against the agent."""
    results = _checked(peer_results() if results is None else results)
    if len(results) == 1:
        return "(no peer results yet: `make peers`)"
    verdicts = {name: verdict(cs) for name, cs in comparisons(results).items()}
    return markdown_table(["agent", "seeds", "first episode with mean ≥ 30, per seed",
                           "mean of episodes 1-100 (worst arm)", "solved at, per seed",
                           "minutes to solve (or for 100 episodes)",
                           "noise-free score (worst arm)", "against the agent, seeds paired"],
                          [row(name, runs, verdicts) for name, runs in results.items()])


def peers_intervals(results: dict | None = None) -> str:
    """Each peer against the agent on the primary measure, seed k with seed k, by claims.py's rule (the
    peers with enough seeds in common are the family): the table of section 5.1 of the report."""
    results = _checked(peer_results() if results is None else results)
    names = [name for name in results if name != "full" and paired(results, name)]
    rows = claims.interval_rows(results, claims.PRIMARY, names, "full") if names else []
    if not rows:
        return "(no peer results yet: `make peers`)"
    return markdown_table(claims.INTERVAL_HEADER, [[LABELS[r[0]]] + r[1:] for r in rows])


def peers_figure(results: dict | None = None, path: str | None = None):
    """Every agent's 20-arm mean per episode, the mean over its seeds and the band from the worst
    to the best seed; also written to `path` if given (doc/peers.png: `python -m experiments.peers`)."""
    import matplotlib.pyplot as plt
    results = _checked(peer_results() if results is None else results)
    fig, ax = plt.subplots(figsize=(9, 4.5))
    for name, runs in results.items():
        c = np.array([run["scores"]["mean"][:WINDOW] for run in runs])
        x = np.arange(1, c.shape[1] + 1)
        ax.fill_between(x, c.min(0), c.max(0), color=COLORS[name], alpha=.15, lw=0)
        seeds = ", ".join(str(run["summary"]["seed"]) for run in runs)
        ax.plot(x, c.mean(0), color=COLORS[name], ls=STYLES.get(name, "-"), lw=2.5 if name == "full" else 1.5,
                label=f"{LABELS[name]} (seed{'s' * (len(runs) > 1)} {seeds})")
    ax.axhline(TARGET_SCORE, color="k", ls="--", lw=1)
    ax.set(xlabel="episode", ylabel="score, mean of the 20 arms", ylim=(0, 41), xlim=(0, WINDOW + 1))
    ax.grid(alpha=.3)
    ax.legend(loc="upper left", bbox_to_anchor=(1.01, 1.0), fontsize=8, borderaxespad=0)   # beside the curves, not on them
    ax.set_title("The agent and Stable-Baselines3 on the same 20 arms: mean over seeds, band from worst to best seed",
                 fontsize=10)
    if path is not None:
        os.makedirs(os.path.dirname(path), exist_ok=True)
        fig.savefig(path, dpi=100, bbox_inches="tight")
    return fig


if __name__ == "__main__":
    import matplotlib
    matplotlib.use("Agg")
    print(peers_table(), peers_intervals(), sep="\n\n")
    peers_figure(path=FIGURE)
    print(f"wrote {os.path.relpath(FIGURE, ROOT)}")
