"""Benchmarks: environment and training speed, calibration against the Unity build, a published learner."""
