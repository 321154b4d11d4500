"""The grading kernel: nbgrader runs each submission in it, and no student code runs in it.

    python -m grader.kernel --key KEY CONNECTION_FILE     # the kernelspec's (`python -m tools.student --grading-env`)

Trusted by: the instructor. It is the judge (`grader.judge`), with the answer key `KEY`, behind an IPython
input transformer, loaded before any cell runs, that sees each cell as nbgrader sends it:
- a student's cell that defines a blank's function or class is noted as text, never run;
- a graded check (as the student edition has it) becomes `__grade__(blank)`: the judge grades that blank
  alone, the student's code running only in the submission's sandbox (`grader.sandbox`). Each blank is judged
  once: the course's nbgrader turns copies of a check into comments before the notebook runs
  (`grader.nbgrader_hooks`), and a copy that still reaches this kernel repeats the first verdict, at no cost;
- every other cell (the environment, figures, training, the replay) becomes `pass`.
No student code reaches this process: the sandbox has no network (this kernel's sockets), no view of other
processes (it cannot signal it) and no Jupyter runtime folder (its connection file). A hand-in that holds a
symbolic link, or that nbgrader's collect refused (`REFUSED` beside the notebook), is refused, and each graded
cell says so. The whole hand-in's grading is bounded (`grader.judge.HAND_IN`).
"""

import atexit
import os
import sys

import grader
from grader import judge


class Transformer:
    """Turns each cell nbgrader sends into what the grading kernel runs (see the module's docstring)."""

    def __init__(self, key: str | None, folder: str = "."):
        self.judge = judge.Judge()
        if key:
            self.judge.key = judge.read_key(key, self.judge.blanks())
        atexit.register(self.judge.close)  # its sandboxes, and their private copies of the code
        edition = self.judge.edition
        self.checks = {c["source"].strip(): c["id"] for c in edition if c["kind"] == "check" and c["id"]}
        self.names = {c["id"]: grader.defined_names(c["source"]) for c in edition if c["kind"] == "blank"}
        self.given = {c["source"].strip() for c in edition if c["kind"] != "blank"}
        self.sources = {}  # blank id: the last cell the student ran for it
        self.verdicts = {}  # blank id: the judge's verdict, given once
        self.refused = refused(folder)
        self.figures = saved_figures(folder)  # the student's own figures, by cell source: shown, never run

    def __call__(self, lines: list[str]) -> list[str]:
        source = "".join(lines)
        check = self.checks.get(source.strip())
        if check:
            return [f"__grade__({check[len('check-') :]!r})\n"]
        if source.strip() not in self.given:
            defined = grader.defined_names(source)
            for blank, names in self.names.items():
                if names & defined:
                    self.sources[blank] = source
        if self.figures.get(source.strip()):
            return [f"__show__({source.strip()!r})\n"]
        return ["pass\n"]

    def show(self, source: str) -> None:
        """The figures the student's run of this cell saved (PNG data, checked), for grading by hand."""
        from IPython.display import Image, display

        for png in self.figures.get(source, []):
            display(Image(data=png, format="png"))

    def grade(self, blank: str) -> None:
        """The judge's verdict on `blank`; raises AssertionError with the reason if the point is not earned."""
        if self.refused:
            raise AssertionError(f"check-{blank}: the hand-in is refused: {self.refused}")
        if blank not in self.verdicts:
            self.verdicts[blank] = self.judge.grade(blank, self.sources.get(blank))
        verdict = self.verdicts[blank]
        if not verdict["passed"]:
            raise AssertionError(f"check-{blank} failed: {verdict['why']}")
        print(f"check-{blank}: passed")


NOTEBOOK = "Continuous_Control.ipynb"
NOTEBOOK_BYTES = 64 << 20
PNG = b"\x89PNG\r\n\x1a\n"


def saved_figures(folder: str) -> dict:
    """{cell source: [PNG bytes]} of the hand-in's notebook as saved (nbgrader's submitted/ copy, where the
    student's outputs are): a regular file of bounded size, images that are PNG, at most 20 a cell. Anything
    else is left out: a figure that cannot be read is simply not shown."""
    import base64
    import json

    here = os.path.abspath(folder)
    parts = here.split(os.sep)
    candidates = [os.path.join(here, NOTEBOOK)]
    if len(parts) >= 4:  # course/autograded/<student>/<assignment>: its submitted copy
        candidates.append(os.sep.join([*parts[:-3], "submitted", parts[-2], parts[-1], NOTEBOOK]))
    for path in candidates:
        try:
            fd = os.open(path, os.O_RDONLY | os.O_NOFOLLOW | os.O_NONBLOCK)
        except OSError:
            continue
        with os.fdopen(fd, "rb") as file:
            if not os.path.isfile(path) or os.fstat(file.fileno()).st_size > NOTEBOOK_BYTES:
                continue
            try:
                notebook = json.loads(file.read(NOTEBOOK_BYTES + 1))
                figures = {}
                for cell in notebook.get("cells", [])[:1000]:
                    images = []
                    for output in cell.get("outputs", [])[:100] if cell.get("cell_type") == "code" else []:
                        data = output.get("data", {}).get("image/png") if isinstance(output, dict) else None
                        if isinstance(data, list):
                            data = "".join(x for x in data if isinstance(x, str))
                        png = base64.b64decode(data, validate=False) if isinstance(data, str) else b""
                        if png.startswith(PNG) and len(images) < 20:
                            images.append(png)
                    source = cell.get("source", "")
                    source = "".join(source) if isinstance(source, list) else source
                    if images and isinstance(source, str):
                        figures[source.strip()] = images
            except (ValueError, TypeError, AttributeError, RecursionError):
                continue
        if figures:
            return figures
    return {}


def refused(folder: str) -> str | None:
    """Why the hand-in in `folder` is refused, or None: a symbolic link under it (not followed), or the note of
    nbgrader's collect (`grader.nbgrader_hooks`), read without following a link."""
    for root, dirs, files in os.walk(folder):
        for name in dirs + files:
            if os.path.islink(os.path.join(root, name)):
                return f"a symbolic link ({os.path.relpath(os.path.join(root, name), folder)})"
    try:
        fd = os.open(os.path.join(folder, "REFUSED"), os.O_RDONLY | os.O_NOFOLLOW | os.O_NONBLOCK)
    except FileNotFoundError:
        return None
    except OSError:
        return "its note of refusal cannot be read"
    with os.fdopen(fd, "rb") as note:
        return " ".join(note.read(500).decode("utf-8", "replace").split()) or "refused at collection"


def load_ipython_extension(ip) -> None:
    transformer = Transformer(os.environ.get("GRADER_KEY"))
    ip.input_transformers_post.append(transformer)
    ip.user_ns["__grade__"] = transformer.grade
    ip.user_ns["__show__"] = transformer.show


def main(argv=None) -> None:
    args = list(sys.argv[1:] if argv is None else argv)
    if len(args) != 3 or args[0] != "--key":
        raise SystemExit("usage: python -m grader.kernel --key KEY CONNECTION_FILE")
    os.environ["GRADER_KEY"] = os.path.abspath(args[1])
    kernel = [
        sys.executable,
        "-I",
        "-m",
        "ipykernel_launcher",
        "-f",
        os.path.abspath(args[2]),
        "--IPKernelApp.extensions=['grader.kernel']",
        "--IPKernelApp.ignore_cwd=True",
    ]
    os.execv(kernel[0], kernel)


def kernelspec(folder, python: str, key: str, name: str = "continuous-control-grading"):
    """Write the grading kernel's kernelspec into `folder`/kernels/`name` (a Jupyter data directory)."""
    import json
    from pathlib import Path

    spec = Path(folder, "kernels", name)
    spec.mkdir(parents=True, exist_ok=True)
    (spec / "kernel.json").write_text(
        json.dumps(
            {
                "argv": [python, "-I", "-m", "grader.kernel", "--key", str(key), "{connection_file}"],
                "display_name": "Continuous Control (grading)",
                "language": "python",
            },
            indent=1,
        )
    )
    return spec


if __name__ == "__main__":
    main()
