"""Numbers from outside this project, each with its source: the report quotes them from here.

Two kinds, never mixed with this project's own results:

* `UNITY_CALIBRATION`: what the Unity build of the 20-arm Reacher scores under random play and
  with trained agents, as the environment's specification states it (`doc/environment.md`,
  "Calibration figures from the Unity build"; `../shared/reacher-spec.md`, "Calibration").
* `PUBLISHED`: course students' DDPG runs on Unity builds, as printed in their own repositories.
  The same students' trained actors are the calibration probes of `benchmarks/calibration.py`,
  so each row can be set next to what its actor scores on the replica.

**Counting conventions.** The course's criterion is met at the episode E where the average of
episodes E-99..E first reaches 30. Course notebooks print that as "solved in E episodes" (the
window's end) or as "solved in E - 100 episodes" (the episodes before the window). Each row
states which, and `window_end` is the episode E in this project's convention.
"""

UNITY_CALIBRATION = {
    "random_low": 0.10,
    "random_high": 0.15,
    "random_arms_at_zero": "about half",
    "trained_low": 37.0,
    "trained_high": 39.5,
    "published_actors_low": 35.0,
    "published_actors_high": 39.0,
    "source": "doc/environment.md, \"Calibration figures from the Unity build\" (from ../shared/reacher-spec.md)",
}

PUBLISHED = [
    {
        "author": "1jsingh",
        "url": "https://github.com/1jsingh/rl_reacher",
        "file": "Reacher-ddpg.ipynb",
        "commit": "6783d1ce",
        "build": "Unity build, 20 arms (Linux)",
        "printed": "Environment solved in 30 episodes! ... Avg Reward: 30.01 (after the line for epoch 130)",
        "convention": "E - 100: it prints i_epoch - 100",
        "window_end": 130,
        "wall_time": "not printed",
        "hardware": "CUDA GPU (the notebook prints cuda:0)",
        "actor": "1jsingh",
    },
    {
        "author": "ChrisPalmerNZ",
        "url": "https://github.com/ChrisPalmerNZ/DRLND_p2_continuous_control",
        "file": "report.md",
        "commit": "876e3f57",
        "build": "Unity build, 20 arms (Windows)",
        "printed": "Environment solved in 49 episodes! Average Score: 30.22 (after the line for episode 149)",
        "convention": "E - 100: it prints i_episode - score_window",
        "window_end": 149,
        "wall_time": "67.44 min, as printed",
        "hardware": "Windows 10 PC with a GTX 1080 GPU, as stated",
        "actor": "ChrisPalmerNZ",
    },
    {
        "author": "GrayWizard",
        "url": "https://github.com/GrayWizard/DRLND-Project2-ContinuousControl",
        "file": "Report.md (train_agent.py prints it)",
        "commit": "e4405195",
        "build": "Unity build, **1 arm** (train_agent.py opens Reacher_Windows_x86_One and uses agent 0)",
        "printed": "solve the environment with average score of +30 in 216 episodes",
        "convention": "E: train_agent.py prints i_episode",
        "window_end": 216,
        "wall_time": "not printed",
        "hardware": "not stated",
        "actor": "GrayWizard",
    },
]
