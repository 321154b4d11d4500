"""Every pin in requirements.txt has a binary wheel for every Python and platform students use.

    python -m tools.wheels                 # the whole matrix; exit 1 naming every gap
    python -m tools.wheels --python 3.14   # one Python

For each pin it reads the files PyPI lists for that version (one JSON request per pin, nothing
downloaded) and checks, by the wheels' tags as pip decides (`packaging.tags`), that one installs on
CPython 3.11 to 3.14 on manylinux x86_64 and aarch64, macOS arm64 and x86_64, and Windows amd64.
torch is skipped (its CPU wheels come from PyTorch's index); a gap named in KNOWN is reported only.
"""

import argparse
import json
import os
import re
import sys
import urllib.request
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

from packaging import tags
from packaging.utils import canonicalize_name, parse_wheel_filename

from continuous_control.provenance import ROOT

INDEX = "https://pypi.org/simple"
PYTHONS = ("3.11", "3.12", "3.13", "3.14")
MANYLINUX = lambda arch: [f"manylinux_2_{k}_{arch}" for k in range(28, 16, -1)] + [f"manylinux2014_{arch}"]
PLATFORMS = {
    "manylinux x86_64": MANYLINUX("x86_64"),
    "manylinux aarch64": MANYLINUX("aarch64"),
    "macOS arm64": list(tags.mac_platforms((14, 0), "arm64")),
    "macOS x86_64": list(tags.mac_platforms((13, 0), "x86_64")),
    "Windows amd64": ["win_amd64"],
}
SKIPPED = {"torch": "its CPU wheels come from PyTorch's own index (download.pytorch.org), not PyPI"}
INTEL_MAC = (
    "numba publishes no macOS x86_64 wheel since 0.63, the first release for CPython 3.14, and torch "
    "none since 2.3: the project does not install on an Intel Mac"
)
KNOWN = {(name, "macOS x86_64"): INTEL_MAC for name in ("numba", "llvmlite", "ray")}


def pins(path: str = os.path.join(ROOT, "requirements.txt")) -> list[tuple[str, str]]:
    """(name, version) of each `name==version` line of a requirements file, comments dropped."""
    found = []
    for line in Path(path).read_text().splitlines():
        line = line.split("#", 1)[0].strip()
        if line:
            match = re.fullmatch(r"([A-Za-z0-9_.\-]+)==([A-Za-z0-9_.+\-]+)", line)
            if not match:
                raise ValueError(f"{path}: {line!r} is not an exact pin (name==version)")
            found.append(match.groups())
    return found


def supported(python: str, platforms: list[str]) -> set:
    """The wheel tags pip accepts on CPython `python` on those platforms, as packaging computes them."""
    version = tuple(int(x) for x in python.split("."))
    return set(tags.cpython_tags(version, platforms=platforms)) | set(
        tags.compatible_tags(version, f"cp{version[0]}{version[1]}", platforms=platforms)
    )


def wheel_tags(name: str, version: str) -> list[set]:
    """The tag set of each wheel that PyPI lists for name==version."""
    request = urllib.request.Request(
        f"{INDEX}/{canonicalize_name(name)}/", headers={"Accept": "application/vnd.pypi.simple.v1+json"}
    )
    files = json.load(urllib.request.urlopen(request, timeout=60))["files"]
    wheels = [
        parse_wheel_filename(f["filename"]) for f in files if f["filename"].endswith(".whl") and not f.get("yanked")
    ]
    return [set(wheel) for _, v, _, wheel in wheels if str(v) == version]


def gaps(pins_: list, pythons) -> list[tuple[str, str, str]]:
    with ThreadPoolExecutor(max_workers=8) as pool:
        listed = dict(zip(pins_, pool.map(lambda pin: wheel_tags(*pin), pins_)))
    return [
        (f"{name}=={version}", python, platform)
        for (name, version), wheels in listed.items()
        for python in pythons
        for platform, platform_tags in PLATFORMS.items()
        if not set().union(*wheels) & supported(python, platform_tags)
    ]


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--python", nargs="+", default=list(PYTHONS))
    parser.add_argument("--requirements", default=os.path.join(ROOT, "requirements.txt"))
    args = parser.parse_args(argv)
    checked = [pin for pin in pins(args.requirements) if pin[0] not in SKIPPED]
    for name, reason in SKIPPED.items():
        print(f"skipped {name}: {reason}")
    try:
        missing = gaps(checked, args.python)
    except OSError as error:  # urllib's URLError, a DNS failure, a time-out: no index
        reason = getattr(error, "reason", error)
        print(
            f"wheel matrix: not checked, the package index {INDEX} cannot be reached ({reason}); "
            "`make wheels` needs the network"
        )
        return 2
    known = [(pin, python, platform) for pin, python, platform in missing if (pin.split("==")[0], platform) in KNOWN]
    for pin, python, platform in missing:
        reason = KNOWN.get((pin.split("==")[0], platform))
        print(
            f"{'known gap' if reason else 'NO WHEEL'}: {pin} for CPython {python} on {platform}"
            + (f" ({reason})" if reason else "")
        )
    total = len(checked) * len(args.python) * len(PLATFORMS)
    print(
        f"wheel matrix: {total - len(missing)} of {total} combinations have a wheel, {len(known)} known gaps, "
        f"{len(missing) - len(known)} unexpected ({len(checked)} pins; CPython {', '.join(args.python)}; "
        f"{', '.join(PLATFORMS)})"
    )
    return 1 if len(missing) > len(known) else 0


if __name__ == "__main__":
    sys.exit(main())
