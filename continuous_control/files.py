"""Every file the project loads, read as hostile until checked, and the writes that nothing planted can redirect.

- `read_bytes`: a regular file only (never a symlink, FIFO, device or folder), at most `limit` bytes, read
  through one descriptor, so that what was checked is what is read;
- `read_json`: that, nested at most `DEPTH` deep, parsed, every failure a `FileRefused` naming the file;
- `create_new`: a file created afresh, never through a symlink or over a file someone else put there;
- `clear`: a planted symlink (or a stale file or folder) removed, never followed.

A refusal is one sentence that names the file and what is wrong with it.
"""

import collections
import errno
import hashlib
import io
import json
import os
import shutil
import stat
import zipfile

KIB, MIB, GIB = 1 << 10, 1 << 20, 1 << 30
DEPTH = 32  # the project's JSON is at most 3 deep


class FileRefused(ValueError):
    """A file the project will not read: it names the file and the reason."""


def read_bytes(path: str, limit: int) -> bytes:
    """The bytes of the regular file `path`, at most `limit` of them; FileRefused otherwise, FileNotFoundError
    where there is none."""
    flags = os.O_RDONLY | os.O_NOFOLLOW | os.O_NONBLOCK | getattr(os, "O_CLOEXEC", 0)
    try:
        fd = os.open(path, flags)
    except OSError as error:
        if error.errno == errno.ELOOP:
            raise FileRefused(f"{path} is a symbolic link; the project reads no file through one") from None
        raise
    with os.fdopen(fd, "rb", buffering=0) as f:
        info = os.fstat(fd)
        if not stat.S_ISREG(info.st_mode):
            raise FileRefused(f"{path} is not a regular file (a FIFO, a device or a folder); refused")
        if info.st_size > limit:
            raise FileRefused(f"{path} is {info.st_size:,} bytes, more than the {limit:,} it can be; refused")
        chunks, left = [], limit + 1
        while left > 0 and (chunk := f.read(min(left, 16 * MIB))):
            chunks.append(chunk)
            left -= len(chunk)
    data = b"".join(chunks)
    if len(data) > limit:
        raise FileRefused(f"{path} grew past {limit:,} bytes while it was read; refused")
    return data


def nesting(text: str) -> int:
    """How deep the arrays and objects of a JSON text nest (strings skipped)."""
    depth = deepest = 0
    inside = escaped = False
    for ch in text:
        if inside:
            if escaped:
                escaped = False
            elif ch == "\\":
                escaped = True
            elif ch == '"':
                inside = False
        elif ch == '"':
            inside = True
        elif ch in "[{":
            depth += 1
            deepest = max(deepest, depth)
        elif ch in "]}":
            depth -= 1
    return deepest


def read_archive(path: str, limit: int) -> tuple[bytes, list]:
    """A zip archive's bytes and member names, read by `read_bytes`: FileRefused, naming it, for one that is not a
    zip, holds a member twice (a reader would take one copy, a check the other), or expands past `limit`."""
    data = read_bytes(path, limit)
    try:
        with zipfile.ZipFile(io.BytesIO(data)) as archive:  # what it would expand to, before it does
            names, size = archive.namelist(), sum(i.file_size for i in archive.infolist())
    except zipfile.BadZipFile:
        raise FileRefused(f"{path} is not a zip archive; refused") from None
    twice = sorted(name for name, n in collections.Counter(names).items() if n > 1)
    if twice:
        raise FileRefused(f"{path}: its archive holds {twice[0]} more than once; refused")
    if size > limit:
        raise FileRefused(f"{path}: its archive expands to more than {limit:,} bytes; refused")
    return data, names


def read_json(path: str, limit: int = MIB):
    """A JSON file's data: FileRefused, naming it, for anything but a bounded, shallow, valid JSON file."""
    data = read_bytes(path, limit)
    try:
        text = data.decode("utf-8")
    except UnicodeDecodeError:
        raise FileRefused(f"{path} is not UTF-8 text: restore it from git or remove its run") from None
    if nesting(text) > DEPTH:
        raise FileRefused(f"{path} nests deeper than {DEPTH} levels, which no file of this project does; refused")
    try:
        return json.loads(text)
    except json.JSONDecodeError as error:
        raise FileRefused(f"{path} is not valid JSON ({error}): restore it from git or remove its run") from None


def clear(path: str) -> None:
    """Remove what is at `path`, if anything: a symlink itself (never what it points to), a file, or a folder."""
    if os.path.islink(path) or os.path.isfile(path):
        os.unlink(path)
    elif os.path.isdir(path):
        shutil.rmtree(path)


def create_new(path: str, mode: str = "w"):
    """`path` opened for writing as a new file: O_EXCL and O_NOFOLLOW, so that a symlink or file planted there
    (even between a check and the open) is never written through. Clear a stale one first (`clear`)."""
    flags = os.O_WRONLY | os.O_CREAT | os.O_EXCL | os.O_NOFOLLOW | getattr(os, "O_CLOEXEC", 0)
    return os.fdopen(os.open(path, flags, 0o644), mode)


MANIFEST = "manifest.json"  # a run folder's list of its files: each one's size and SHA-256, written last


def manifest(files: dict) -> str:
    """The manifest of `files` ({name: bytes or text}) as JSON text."""
    data = {name: (x.encode() if isinstance(x, str) else x) for name, x in files.items()}
    return json.dumps({name: {"bytes": len(x), "sha256": hashlib.sha256(x).hexdigest()} for name, x in data.items()})


def check_manifest(folder: str, limit: int = GIB) -> None:
    """Where `folder` has a manifest, every file it lists is there with its size and hash: FileRefused naming the
    first that is not (a file edited, damaged, or left from another write: a folder of two runs mixed)."""
    path = os.path.join(folder, MANIFEST)
    if not os.path.lexists(path):
        return
    listed = read_json(path)
    if not isinstance(listed, dict) or not all(
        isinstance(v, dict) and type(v.get("bytes")) is int and isinstance(v.get("sha256"), str)
        for v in listed.values()
    ):
        raise FileRefused(f"{path} is not a manifest of this project; refused")
    for name, expected in listed.items():
        file = os.path.join(folder, name)
        if os.path.basename(name) != name or name == MANIFEST:
            raise FileRefused(f"{path} lists {name!r}, which is no file of a run folder; refused")
        try:
            data = read_bytes(file, limit)
        except FileNotFoundError:
            raise FileRefused(f"{file} is missing, though {path} lists it: the folder is incomplete") from None
        if len(data) != expected["bytes"] or hashlib.sha256(data).hexdigest() != expected["sha256"]:
            raise FileRefused(
                f"{file} is not the file that {path} lists (edited, damaged, or left from another run's write); "
                "restore it from git or remove its run"
            )
