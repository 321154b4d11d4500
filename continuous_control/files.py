"""Every file the project loads, read as hostile until checked, and the writes that nothing planted can redirect.

- `read_bytes`: a regular file only (never a symlink, FIFO, device or folder), at most `limit` bytes, read
  through one descriptor, so that what was checked is what is read;
- `read_json`: that, nested at most `DEPTH` deep, parsed, every failure a `FileRefused` naming the file;
- `read_folder`: a folder's files as its manifest lists them, each read once, its size bounded before it is read
  and its bytes checked against the manifest: a reader parses those bytes, never the file again;
- `create_new`: a file created afresh, never through a symlink or over a file someone else put there;
- `replace_files`: files checked in memory first, then each written as a new file beside its place and renamed
  into it, the manifest last: a refusal, or a failure, leaves the folder as it was;
- `clear`: a planted symlink (or a stale file or folder) removed, never followed.

A refusal is one sentence that names the file and what is wrong with it.
"""

import collections
import contextlib
import errno
import hashlib
import io
import json
import os
import re
import shutil
import stat
import tempfile
import zipfile

KIB, MIB, GIB = 1 << 10, 1 << 20, 1 << 30
DEPTH = 32  # the project's JSON is at most 3 deep
DIGITS = 40  # the longest whole number a file of the project holds: a 128-bit random state (39 digits)


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
        chunks, left = [], min(limit, info.st_size) + 1  # one byte past its size: a file that grows is seen
        while left > 0 and (chunk := f.read(min(left, 16 * MIB))):
            chunks.append(chunk)
            left -= len(chunk)
    data = b"".join(chunks)
    if len(data) > min(limit, info.st_size):
        raise FileRefused(f"{path} grew past {min(limit, info.st_size):,} bytes while it was read; refused")
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
    return parse_json(read_bytes(path, limit), path)


def parse_json(data: bytes, path: str):
    """JSON bytes (read once, by the caller) as data: FileRefused naming `path` for anything but UTF-8 JSON nested
    at most DEPTH deep, with whole numbers of at most DIGITS digits and no NaN or infinity."""
    try:
        text = data.decode("utf-8")
    except UnicodeDecodeError:
        raise FileRefused(f"{path} is not UTF-8 text: restore it from git or remove its run") from None
    if nesting(text) > DEPTH:
        raise FileRefused(f"{path} nests deeper than {DEPTH} levels, which no file of this project does; refused")

    def whole(digits: str) -> int:
        if len(digits.lstrip("-")) > DIGITS:
            raise FileRefused(f"{path} holds a whole number of {len(digits):,} digits, more than {DIGITS}; refused")
        return int(digits)

    def constant(name: str):
        raise FileRefused(f"{path} holds {name}, which is not a number JSON knows; refused")

    try:
        return json.loads(text, parse_int=whole, parse_constant=constant)
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


def new_beside(path: str, mode: str = "wb"):
    """(a new file in `path`'s folder, its name): made with O_EXCL and O_NOFOLLOW (mkstemp) under a name no one
    could plant in advance, to be renamed onto `path` once written whole."""
    fd, name = tempfile.mkstemp(dir=os.path.dirname(path) or ".", prefix=f".{os.path.basename(path)}.", suffix=".tmp")
    os.chmod(fd, 0o644)  # as any other file the project writes (mkstemp makes it private)
    return os.fdopen(fd, mode), name


MANIFEST = "manifest.json"  # a run folder's list of its files: each one's size and SHA-256, written last
NAME = re.compile(r"[A-Za-z0-9_][A-Za-z0-9_.-]{0,99}")  # a file a folder of this project may list


def manifest(files: dict) -> str:
    """The manifest of `files` ({name: bytes or text}) as JSON text."""
    data = {name: (x.encode() if isinstance(x, str) else x) for name, x in files.items()}
    return json.dumps({name: {"bytes": len(x), "sha256": hashlib.sha256(x).hexdigest()} for name, x in data.items()})


def listed(folder: str, limit: int = MIB) -> dict:
    """{name: (bytes, sha256)} from `folder`'s manifest, every entry checked: FileRefused naming the manifest."""
    path = os.path.join(folder, MANIFEST)
    try:
        entries = read_json(path, limit)
    except FileNotFoundError:
        raise FileRefused(f"{folder} has no {MANIFEST}, so none of its files can be trusted; refused") from None
    if not isinstance(entries, dict) or not all(
        isinstance(v, dict)
        and set(v) == {"bytes", "sha256"}
        and type(v["bytes"]) is int
        and 0 <= v["bytes"] <= 64 * GIB
        and isinstance(v["sha256"], str)
        and re.fullmatch(r"[0-9a-f]{64}", v["sha256"])
        for v in entries.values()
    ):
        raise FileRefused(f"{path} is not a manifest of this project (name: bytes and sha256 of each file); refused")
    for name in entries:
        if not NAME.fullmatch(name) or name == MANIFEST:
            raise FileRefused(f"{path} lists {name!r}, which is no file of a folder of this project; refused")
    return {name: (v["bytes"], v["sha256"]) for name, v in entries.items()}


def read_folder(folder: str, limits: dict | None = None, default: int = 64 * MIB, names=None) -> dict:
    """{name: bytes} of every file `folder`'s manifest lists (or of `names` only, each of which it must list),
    each read once and checked: its listed size against its bound (`limits`, by name, else `default`) before a
    byte is read, then its bytes against the listed size and hash. A reader parses these bytes, never the file
    again: a file swapped after the check is never seen. FileRefused naming the file otherwise."""
    files, entries = {}, listed(folder)
    missing = sorted(set(names or ()) - set(entries))
    if missing:
        raise FileRefused(f"{os.path.join(folder, missing[0])} is not listed in {MANIFEST}, so it cannot be trusted")
    for name, (size, digest) in entries.items():
        if names is not None and name not in names:
            continue
        file = os.path.join(folder, name)
        limit = (limits or {}).get(name, default)
        if size > limit:
            raise FileRefused(f"{file} is listed as {size:,} bytes, more than the {limit:,} it can be; refused")
        try:
            data = read_bytes(file, size)  # never more than the manifest says: a larger file stops here
        except FileNotFoundError:
            raise FileRefused(f"{file} is missing, though {MANIFEST} lists it: the folder is incomplete") from None
        except FileRefused as error:
            if "bytes, more than the" not in str(error) and "grew past" not in str(error):
                raise
            raise FileRefused(f"{file} is not the file that {MANIFEST} lists (its size differs); refused") from None
        if len(data) != size or hashlib.sha256(data).hexdigest() != digest:
            raise FileRefused(
                f"{file} is not the file that {os.path.join(folder, MANIFEST)} lists (edited, damaged, or left from "
                "another run's write); restore it from git or remove its run"
            )
        files[name] = data
    return files


def read_listed_json(path: str, limit: int = MIB):
    """A JSON file of a folder under a manifest (results/'s own files), read once and checked against it
    (`read_folder`), then parsed (`parse_json`): FileRefused naming the file otherwise."""
    folder, name = os.path.split(path)
    return parse_json(read_folder(folder or ".", {name: limit}, names=(name,))[name], path)


def enlist(path: str, data: bytes) -> None:
    """`path`, just written whole with `data`, entered in its folder's manifest (made if there is none): its entry
    replaced, the others kept, the manifest written beside and renamed into place, one writer at a time."""
    folder, name = os.path.split(path)
    fd = os.open(folder or ".", os.O_RDONLY | getattr(os, "O_DIRECTORY", 0))
    try:
        if os.name != "nt":  # writers in parallel (the seeds of one experiment) take turns
            import fcntl

            fcntl.flock(fd, fcntl.LOCK_EX)
        present = os.path.lexists(os.path.join(folder, MANIFEST))
        entries = {n: {"bytes": b, "sha256": h} for n, (b, h) in (listed(folder) if present else {}).items()}
        entries[name] = {"bytes": len(data), "sha256": hashlib.sha256(data).hexdigest()}
        f, temporary = new_beside(os.path.join(folder, MANIFEST))
        with f:
            f.write(json.dumps(entries, indent=1, sort_keys=True).encode())
        os.replace(temporary, os.path.join(folder, MANIFEST))
    finally:
        os.close(fd)


def check_manifest(folder: str, limit: int = GIB) -> None:
    """Where `folder` has a manifest, every file it lists is there with its size and hash (`read_folder`)."""
    if os.path.lexists(os.path.join(folder, MANIFEST)):
        read_folder(folder, default=limit)


def replace_files(folder: str, files: dict, check=None) -> None:
    """`files` ({name: bytes or text}) into `folder` with a new manifest, checked first and written all or none.

    `check(files)`, given the files and their manifest in memory, raises (FileRefused, naming what) for a set that
    must not be written; then each file is written whole as a new file beside its place (O_EXCL|O_NOFOLLOW, a
    name no one could plant) and only then are they renamed into place, the manifest last. A refusal, a full disk
    or any other failure before the renames leaves the folder as it was; files of an earlier write that the new
    manifest does not list are removed after it is in place."""
    data = {name: (x.encode() if isinstance(x, str) else x) for name, x in files.items()}
    if not data or not all(NAME.fullmatch(name) and name != MANIFEST for name in data):
        raise FileRefused(f"{folder}: {sorted(data)!r} is not a set of files a folder of this project holds; refused")
    if not all(type(x) is bytes for x in data.values()):
        raise FileRefused(f"{folder}: a file's contents are not bytes or text; refused")
    data[MANIFEST] = manifest(data).encode()
    if check is not None:
        check(data)
    if os.path.islink(folder):
        raise FileRefused(f"{folder} is a symbolic link; the project writes no file through one")
    os.makedirs(folder, exist_ok=True)
    try:  # the files of the write before, removed once this one is in place
        before = set(listed(folder))
    except (FileRefused, OSError):  # none, or one that cannot be trusted: its files are left alone
        before = set()
    staged = {}
    try:
        for name, x in data.items():
            f, staged[name] = new_beside(os.path.join(folder, name))
            with f:
                f.write(x)
                f.flush()
                os.fsync(f.fileno())
    except BaseException as error:
        for temporary in staged.values():
            with contextlib.suppress(OSError):
                os.remove(temporary)
        if isinstance(error, OSError) and error.errno in (errno.ENOSPC, errno.EDQUOT):
            raise OSError(
                error.errno, f"The disk is full: the files of {folder} were not written, and nothing in it changed"
            ) from None
        raise
    for name in [*(n for n in data if n != MANIFEST), MANIFEST]:  # the manifest last: a cut leaves a refused mix
        os.replace(staged[name], os.path.join(folder, name))
    for name in before - set(data):
        with contextlib.suppress(FileNotFoundError):
            os.unlink(os.path.join(folder, name))
