"""What the lesson uses but does not teach, so that a reader of Continuous_Control.ipynb never has
to open it: checkpoints and resume (checkpoints.py), the progress display (progress.py), a run's
result files and their loaders (results.py), figures (figures.py), replays (replay.py), the
report's variants (variants.py).

`agent.py` is the notebook's own agent, exported from its cells tagged `export`
(`python -m continuous_control.export`): import it as `continuous_control.agent`. This file does
not import it, so that the notebook, which defines the same classes inline, never loads a copy.
"""
from .checkpoints import code_fingerprint
from .config import check_config
from .figures import plot_diagnostics, plot_scores
from .networks import Networks
from .replay import replay_panel
from .results import TARGET_SCORE, load_run
from .training import TrainingRun

__all__ = ["Networks", "TARGET_SCORE", "TrainingRun", "check_config", "code_fingerprint", "load_run", "plot_diagnostics",
           "plot_scores", "replay_panel"]
