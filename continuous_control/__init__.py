"""What the lesson uses but does not teach, so that a reader of Continuous_Control.ipynb never has
to open it: the seed streams and the input checks (config.py), the GPU's path (devices.py), checkpoints
and resume (checkpoints.py), a run's bookkeeping (training.py), its result files (results.py), the
progress display (progress.py), figures (figures.py), replays of a trained policy (playback.py), the
report's variants (variants.py) and ablations (ablations.py); networks.py moves the networks and caches
numba's compilations.

`agent.py` is the notebook's own agent, exported from its cells tagged `export`
(`python -m continuous_control.export`): import it as `continuous_control.agent`. This file does
not import it, so that the notebook, which defines the same classes inline, never loads a copy,
and it imports nothing that displays: training runs without IPython, widgets or matplotlib.
"""
from .checkpoints import code_fingerprint
from .config import check_config, refuse_non_finite, seed_streams
from .devices import for_device
from .networks import Networks, compiled
from .training import TrainingRun

__all__ = ["Networks", "TrainingRun", "check_config", "code_fingerprint", "compiled", "for_device", "refuse_non_finite",
           "seed_streams"]
