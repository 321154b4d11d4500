"""Benchmarks, speed and fidelity: environment and training speed, calibration against the Unity build, grading."""
