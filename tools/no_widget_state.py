"""Drop the saved widget state from executed notebooks (nbconvert keeps one already in the file): where no
kernel runs (GitHub, nbviewer) it would shadow the still image or text the output also carries."""

import sys

import nbformat


def main(paths: list[str]) -> None:
    for path in paths:
        nb = nbformat.read(path, as_version=4)
        if nb.metadata.pop("widgets", None) is not None:
            nbformat.write(nb, path)
            print(f"{path}: saved widget state removed")


if __name__ == "__main__":
    main(sys.argv[1:])
