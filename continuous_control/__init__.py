"""What the lesson uses but does not teach, so that a reader of Continuous_Control.ipynb never has
to open it: the acting copies of the policy (behaviour.py), the sum tree's array and compiled loops
(sumtree.py), the seed streams and the input checks (config.py), the GPU's path (devices.py),
checkpoints and resume (checkpoints.py), a run's bookkeeping (training.py), its result files
(results.py), the progress display (progress.py), figures (figures.py), a saved policy read back,
scored and replayed (playback.py) and the checks' stand-ins (probes.py); networks.py standardises the states, moves the
networks and caches numba's compilations. The report's variants and ablations
are experiments/'s.

`agent.py` is the notebook's own agent, exported from its cells tagged `export`
(`python -m continuous_control.export`): import it as `continuous_control.agent`. Each module imports a name from
the module that defines it, and this file imports none, so that the notebook, which defines the same classes
inline, never loads a copy of the agent, training runs without IPython, widgets or matplotlib, and
`continuous_control.provenance` (the project's `ROOT`, where a run ran, the code's version) imports without torch.
"""
