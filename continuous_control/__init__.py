"""What the lesson uses but does not teach, so that a reader of Continuous_Control.ipynb never has
to open it: moving networks between devices and the GPU's speed path (devices.py), checkpoints and resume (checkpoints.py),
a run's bookkeeping (training.py), its result files (results.py), the progress display
(progress.py), figures (figures.py) and replays of a trained policy (playback.py). The report's
variants and ablations are experiments/'s.

`agent.py` is the notebook's own agent, exported from its cells tagged `export`
(`python -m continuous_control.export`): import it as `continuous_control.agent`. This file does
not import it, so that the notebook, which defines the same classes inline, never loads a copy,
and it imports nothing that displays: training runs without IPython, widgets or matplotlib.
"""
from .checkpoints import code_fingerprint
from .config import check_config
from .devices import use_gpu
from .networks import Networks
from .training import TrainingRun

__all__ = ["Networks", "TrainingRun", "check_config", "code_fingerprint", "use_gpu"]
