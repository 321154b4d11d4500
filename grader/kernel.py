"""The grading kernel: nbgrader runs each submission in it, sandboxed, and no student code runs in it.

    python -m grader.kernel CONNECTION_FILE     # the kernelspec's command (`python -m tools.student --grading-env`)

The kernel starts inside bubblewrap (`bwrap`), which shows it only the system's libraries, this
environment, the submission's folder and the kernel's connection file: not the course folder, the answer
key or the project's checkout. In the kernel, an IPython input transformer, loaded before any cell runs,
sees each cell as nbgrader sends it:
- a student's cell that defines a blank's function or class is noted, not run;
- a graded check (its visible part as the student edition has it, then nbgrader's hidden tests) becomes
  `__grade__(blank, hidden tests)`, which runs the check in a process of its own (`grader.Grader`);
- every other cell (the environment, figures, training, the replay) becomes `pass`: grading runs the
  checks only.
Student code therefore never runs in the kernel: it cannot patch what grades it, and a loop in it cannot
stop the kernel. A check cell fails with the check's message, or passes.
"""

import json
import os
import shutil
import sys
from pathlib import Path

import grader

BEGIN, END = grader.HIDDEN_BEGIN, grader.HIDDEN_END


class Transformer:
    """Turns each cell nbgrader sends into what the grading kernel runs (see the module's docstring)."""

    def __init__(self, edition=None):
        self.grader = grader.Grader(edition)
        self.checks = {c["source"].strip(): c["id"] for c in self.grader.edition if c["kind"] == "check" and c["id"]}
        self.names = {c["id"]: grader.defined_names(c["source"]) for c in self.grader.edition if c["kind"] == "blank"}
        self.given = {c["source"].strip() for c in self.grader.edition if c["kind"] != "blank"}
        self.sources = {}  # blank id: the last cell the student ran for it

    def __call__(self, lines: list[str]) -> list[str]:
        source = "".join(lines)
        visible, hidden = source, ""
        if BEGIN in source:
            visible, rest = source.split(BEGIN, 1)
            hidden = rest.split(END, 1)[0]
        check = self.checks.get(visible.strip())
        if check:
            return [f"__grade__({check[len('check-') :]!r}, {hidden!r})\n"]
        if hidden:
            return ["raise RuntimeError('this graded cell is not the course\\'s: its visible part was changed')\n"]
        if source.strip() not in self.given:
            defined = grader.defined_names(source)
            for blank, names in self.names.items():
                if names & defined:
                    self.sources[blank] = source
        return ["pass\n"]

    def grade(self, blank: str, hidden: str) -> None:
        """The check of `blank`, in a process of its own; raises AssertionError with its message if it fails."""
        result = self.grader.check(blank, self.sources.get(blank), hidden)
        print(result["output"][-2000:], end="")
        if result["failed"]:
            raise AssertionError(
                f"check-{blank} failed: " + "; ".join(f"{k}: {v}" for k, v in result["failed"].items())
            )
        print(f"check-{blank}: passed")


def load_ipython_extension(ip) -> None:
    transformer = Transformer()
    ip.input_transformers_post.append(transformer)
    ip.user_ns["__grade__"] = transformer.grade


def sandbox(command: list[str], folder: str, connection_file: str) -> list[str]:
    """`command` inside bubblewrap: read-only system and Python, this environment read-only, the submission's
    folder and the connection file's folder writable, a private /tmp, and nothing else of the machine."""
    bwrap = shutil.which("bwrap")
    if bwrap is None:
        raise SystemExit(
            "the grading kernel needs bubblewrap (`bwrap`; Debian: apt install bubblewrap), "
            "so that a submission cannot read the course folder"
        )
    # In order: a private /tmp first, so that what is bound below it (this environment, the submission) shows.
    binds = ["--tmpfs", "/tmp", "--ro-bind", "/usr", "/usr", "--ro-bind", "/etc", "/etc"]
    for link in ("/bin", "/lib", "/lib64", "/sbin"):
        if os.path.islink(link):
            binds += ["--symlink", os.readlink(link), link]
        elif os.path.isdir(link):
            binds += ["--ro-bind", link, link]
    for path in sorted({os.path.realpath(sys.base_prefix), os.path.realpath(sys.prefix)}):
        if not path.startswith("/usr/"):
            binds += ["--ro-bind", path, path]
    runtime = os.path.dirname(os.path.abspath(connection_file))
    return [
        bwrap,
        *binds,
        "--proc",
        "/proc",
        "--dev",
        "/dev",
        "--bind",
        folder,
        folder,
        "--bind",
        runtime,
        runtime,
        "--setenv",
        "HOME",
        "/tmp",
        "--setenv",
        "MPLCONFIGDIR",
        "/tmp",
        "--setenv",
        "TMPDIR",
        "/tmp",
        "--unsetenv",
        "JPY_PARENT_PID",  # a pid outside the sandbox's: bwrap's --die-with-parent does its job
        "--die-with-parent",
        "--unshare-pid",
        "--chdir",
        folder,
        "--",
        *command,
    ]


def main(argv=None) -> None:
    connection_file = (argv or sys.argv[1:])[0]
    kernel = [
        sys.executable,
        "-I",
        "-m",
        "ipykernel_launcher",
        "-f",
        os.path.abspath(connection_file),
        "--IPKernelApp.extensions=['grader.kernel']",
        "--IPKernelApp.ignore_cwd=True",
    ]
    command = sandbox(kernel, os.getcwd(), connection_file)
    os.execv(command[0], command)


def kernelspec(folder: str | Path, python: str, name: str = "continuous-control-grading") -> Path:
    """Write the grading kernel's kernelspec into `folder`/kernels/`name` (a Jupyter data directory)."""
    spec = Path(folder, "kernels", name)
    spec.mkdir(parents=True, exist_ok=True)
    (spec / "kernel.json").write_text(
        json.dumps(
            {
                "argv": [python, "-I", "-m", "grader.kernel", "{connection_file}"],
                "display_name": "Continuous Control (grading)",
                "language": "python",
            },
            indent=1,
        )
    )
    return spec


if __name__ == "__main__":
    main()
