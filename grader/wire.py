"""Plain data between the judge and a contestant: one JSON line a message, arrays as raw bytes.

Trusted by: the judge, which decodes whatever a contestant sends as hostile. An array travels as its dtype
(one of `DTYPES`), its shape and its bytes in base64: never pickled, never a subclass, so what the judge
compares is numbers and nothing that can run or lie. `decode` refuses, naming the problem, a line over
`LIMIT` bytes (`REPLY` for an answer), nesting deeper than `DEPTH`, an unknown dtype, a shape of more than
`LIMIT` bytes, or bytes that do not fill the shape. Decoding is linear in the line's length, and any error
in it is a WireError.
"""

import base64
import json
import math

import numpy as np

DTYPES = {"|b1", "|i1", "|u1", "<i2", "<i4", "<i8", "<u2", "<u4", "<u8", "<f2", "<f4", "<f8"}
LIMIT = 16 << 20  # bytes in one message
REPLY = 4 << 20  # bytes in one answer: the largest a harness sends is about 0.2 MiB
DEPTH = 8


class WireError(ValueError):
    """A message that is not plain data as this module writes it."""


def _plain(x, depth=0):
    if depth > DEPTH:
        raise WireError(f"nested deeper than {DEPTH}")
    if x is None or isinstance(x, (bool, int, float, str)):
        return x
    if isinstance(x, (np.generic, np.ndarray)):
        x = np.ascontiguousarray(x)
        if x.dtype.str not in DTYPES:
            raise WireError(f"an array of dtype {x.dtype} cannot be sent")
        return {"~array": [x.dtype.str, list(x.shape), base64.b64encode(x.tobytes()).decode("ascii")]}
    if isinstance(x, dict):
        return {str(k): _plain(v, depth + 1) for k, v in x.items()}
    if isinstance(x, (list, tuple)):
        return [_plain(v, depth + 1) for v in x]
    raise WireError(f"a {type(x).__name__} is not plain data")


def encode(message) -> bytes:
    """One line: `message` (None, bools, numbers, strings, arrays, and lists and dicts of them)."""
    return json.dumps(_plain(message), allow_nan=True).encode("ascii") + b"\n"


def _array(spec) -> np.ndarray:
    if not (isinstance(spec, list) and len(spec) == 3):
        raise WireError("an array is [dtype, shape, bytes]")
    dtype, shape, data = spec
    if dtype not in DTYPES:
        raise WireError(f"unknown dtype {dtype!r}")
    if not (isinstance(shape, list) and len(shape) <= 8 and all(type(n) is int and 0 <= n < LIMIT for n in shape)):
        raise WireError(f"bad shape {str(shape)[:80]}")
    if not isinstance(data, str):
        raise WireError("an array's bytes are a base64 string")
    size = math.prod(shape) * np.dtype(dtype).itemsize  # Python's integers: no overflow
    if size > LIMIT or len(data) != 4 * ((size + 2) // 3):
        raise WireError(f"{len(data)} characters of base64 do not fill the shape {shape} of {dtype}")
    try:
        raw = base64.b64decode(data, validate=True)
    except ValueError as error:  # binascii.Error
        raise WireError(f"bad base64: {error}") from None
    if len(raw) != size:
        raise WireError(f"{len(raw)} bytes do not fill the shape {shape} of {dtype}")
    return np.frombuffer(raw, dtype=dtype).reshape(shape).copy()


def _restore(x, depth=0):
    if depth > DEPTH:
        raise WireError(f"nested deeper than {DEPTH}")
    if isinstance(x, dict):
        if set(x) == {"~array"}:
            return _array(x["~array"])
        return {k: _restore(v, depth + 1) for k, v in x.items()}
    if isinstance(x, list):
        return [_restore(v, depth + 1) for v in x]
    return x


def decode(line: bytes, limit: int = LIMIT):
    """The message of one line, as `encode` wrote it; WireError if it is anything else."""
    if len(line) > limit:
        raise WireError(f"a message of {len(line)} bytes, over the limit of {limit}")
    codes = np.frombuffer(line, np.uint8)  # JSON's parser recurses: bound the nesting before it sees the line
    level = np.cumsum(np.isin(codes, (91, 123)).astype(np.int64) - np.isin(codes, (93, 125)))
    depth = int(level.max(initial=0))
    if depth > 2 * DEPTH + 4:
        raise WireError(f"nested deeper than {DEPTH}")
    try:
        message = json.loads(line)
    except (ValueError, UnicodeDecodeError, RecursionError) as error:
        raise WireError(f"not JSON: {str(error)[:100]}") from None
    try:
        return _restore(message)
    except WireError:
        raise
    except (ValueError, TypeError, OverflowError, MemoryError, RecursionError) as error:
        raise WireError(f"not plain data: {type(error).__name__}") from None
