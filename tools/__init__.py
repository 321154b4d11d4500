"""Project tooling that is neither the lesson nor an experiment: the tasks behind `make` (tasks.py) and what
`make run` shows on the terminal (terminal.py), the student edition and its course (student.py), notebooks kept
without widget state (no_widget_state.py), the test run's kernel plugin (pytest_ipc.py), and the wheel checks for
students' machines and the GPU machine (wheels.py, device_wheels.py)."""
