"""Project tooling that is neither the lesson nor an experiment: the wheel matrix check."""
