"""The wheel matrix check (tools/wheels.py) accepts exactly the wheels pip would install."""

import re

import pytest
from packaging.utils import parse_wheel_filename

from tools import wheels


def accepted(filename, python, platform):
    return bool(set(parse_wheel_filename(filename)[3]) & wheels.supported(python, wheels.PLATFORMS[platform]))


@pytest.mark.parametrize(
    "filename, python, platform, ok",
    [
        ("numba-0.63.1-cp314-cp314-manylinux2014_x86_64.manylinux_2_17_x86_64.whl", "3.14", "manylinux x86_64", True),
        ("numba-0.63.1-cp313-cp313-manylinux2014_x86_64.manylinux_2_17_x86_64.whl", "3.14", "manylinux x86_64", False),
        ("numpy-2.3.5-cp311-cp311-manylinux_2_27_x86_64.manylinux_2_28_x86_64.whl", "3.11", "manylinux x86_64", True),
        ("numpy-2.3.5-cp311-cp311-manylinux_2_27_x86_64.manylinux_2_28_x86_64.whl", "3.11", "manylinux aarch64", False),
        ("numba-0.63.1-cp311-cp311-macosx_11_0_arm64.whl", "3.11", "macOS arm64", True),
        ("numba-0.63.1-cp311-cp311-macosx_11_0_arm64.whl", "3.11", "macOS x86_64", False),
        ("pillow-13.0.0-cp311-cp311-macosx_10_10_universal2.whl", "3.11", "macOS x86_64", True),
        ("grpcio-1.85.1-cp39-abi3-win_amd64.whl", "3.14", "Windows amd64", True),
        ("tqdm-4.70.1-py3-none-any.whl", "3.14", "Windows amd64", True),
    ],
)
def test_a_wheel_counts_where_pip_would_install_it(filename, python, platform, ok):
    assert accepted(filename, python, platform) is ok


def test_only_exact_pins_are_accepted(tmp_path):
    good = tmp_path / "good.txt"
    good.write_text("# comment\nnumpy==2.3.5   # why\n\ntqdm==4.70.1\n")
    assert wheels.pins(str(good)) == [("numpy", "2.3.5"), ("tqdm", "4.70.1")]
    bad = tmp_path / "bad.txt"
    bad.write_text("numpy>=2\n")
    with pytest.raises(ValueError, match=re.escape(f"{bad}: 'numpy>=2'")):
        wheels.pins(str(bad))


def test_the_project_pins_every_requirement_exactly():
    names = [name for name, _ in wheels.pins()]
    assert "torch" in names and "numpy" in names and len(names) == len(set(names))


def test_with_no_network_the_matrix_says_so_in_one_line(monkeypatch, capsys):
    import urllib.error

    def offline(*args, **kwargs):
        raise urllib.error.URLError("Temporary failure in name resolution")

    monkeypatch.setattr(wheels.urllib.request, "urlopen", offline)
    assert wheels.main(["--python", "3.11"]) == 2
    lines = [line for line in capsys.readouterr().out.splitlines() if not line.startswith("skipped")]
    assert len(lines) == 1 and wheels.INDEX in lines[0] and "name resolution" in lines[0]
