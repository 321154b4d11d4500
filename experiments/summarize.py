"""Print a markdown table of the headless runs in results/ (one row per variant and seed)."""
import glob
import json
import os

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))


def rows(variant: str = "*"):
    for path in sorted(glob.glob(os.path.join(ROOT, "results", variant, "seed*", "summary.json"))):
        s = json.load(open(path))
        yield s.get("variant", "?"), s["seed"], s


def main():
    print("| variant | seed | solved at episode | first episode with mean >= 30 | minutes to solve | noise-free eval, 5 episodes |")
    print("|---|---|---|---|---|---|")
    for variant, seed, s in rows():
        minutes = s["wall_seconds_to_solve"] / 60 if s["wall_seconds_to_solve"] else None
        evals = s.get("eval_noise_free_5", [])
        print(f"| {variant} | {seed} | {s['solved_at'] or 'not solved'} | {s['first_episode_mean_30'] or '-'} | "
              f"{f'{minutes:.1f}' if minutes else '-'} | {sum(evals) / len(evals):.2f} "
              f"({min(evals):.2f} to {max(evals):.2f}) |")


if __name__ == "__main__":
    main()
