"""`make run` followed by `make test` passes: the main job leaves a consistent project.

At SMOKE size: a fresh run of the notebook's code into a temporary folder, Report.ipynb executed
against it (as `make run` does through `make report`), then the report's strict comparison (as
`make test` does), which must pass on the freshly executed outputs.
"""
import os
import subprocess
import sys

import nbformat
from nbclient import NotebookClient

from continuous_control.agent import Config, train
from reacher import ReacherEnvironment

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))


def test_fresh_run_then_report_then_strict_comparison(tmp_path, monkeypatch):
    run_dir = str(tmp_path / "checkpoints")
    train(Config(buffer_size=5_000, batch_size=32, warmup=500), ReacherEnvironment(seed=0, verbose=False), run_dir, 2,
          live=False)

    monkeypatch.setenv("REPORT_RUN_DIR", run_dir)
    report = nbformat.read(os.path.join(ROOT, "Report.ipynb"), as_version=4)
    NotebookClient(report, timeout=600, kernel_name="python3", resources={"metadata": {"path": ROOT}}).execute()
    executed = tmp_path / "Report.ipynb"
    nbformat.write(report, str(executed))
    text = executed.read_text()
    assert run_dir in text or "Not solved in its 2 episodes" in text      # it read the fresh run

    strict = subprocess.run([sys.executable, "-m", "pytest", str(executed), "--nbval", "--nbval-current-env",
                             "--nbval-sanitize-with", os.path.join(ROOT, "tests", "report_sanitize.cfg"),
                             "-q", "-p", "no:cacheprovider", "-p", "tools.pytest_ipc", "--rootdir", str(tmp_path)],
                            cwd=str(tmp_path), capture_output=True, text=True, timeout=900)
    assert strict.returncode == 0, strict.stdout[-3000:]
