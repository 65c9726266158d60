#!/usr/bin/python3
"""Checks a safetensors checkpoint with a parser of its own, independent of frugal's reader.

usage: check_checkpoint.py FILE.safetensors [EXPECTED.json]

Without EXPECTED.json it validates the file and lists each tensor (dtype, shape, zlib crc32
of its bytes, and the range of its values). With it, EXPECTED.json maps every tensor name
to {"dtype": ..., "shape": [...], "crc32": ...} (dtype as the file's code, "F32", or as
frugal's name, "float32"; crc32 an integer or a "0x..." string, as frugal's tensor_crc32
gives it), and every tensor must match: same names, dtypes, shapes and checksums. Exit
status: 0 all matched, 1 a mismatch, 2 a malformed file or bad arguments.
"""
import json
import struct
import sys
import zlib

import numpy as np

# The format's dtype codes: element size, numpy type to read values with (bfloat16 has no
# numpy type: its bits are widened to float32 by hand), and frugal's name for the dtype.
DTYPES = {
    "F32": (4, np.float32, "float32"),
    "F64": (8, np.float64, "float64"),
    "F16": (2, np.float16, "float16"),
    "BF16": (2, None, "bfloat16"),
    "I32": (4, np.int32, "int32"),
    "I64": (8, np.int64, "int64"),
    "U8": (1, np.uint8, "uint8"),
    "BOOL": (1, np.uint8, "bool"),
}
FRUGAL_NAMES = {v[2]: k for k, v in DTYPES.items()}


class Malformed(Exception):
    pass


def no_duplicates(pairs):
    seen = {}
    for key, value in pairs:
        if key in seen:
            raise Malformed(f"duplicate key {key!r} in the header")
        seen[key] = value
    return seen


def read_safetensors(path):
    """Returns (metadata, [(name, dtype, shape, bytes)] in offset order); raises Malformed."""
    with open(path, "rb") as f:
        blob = f.read()
    if len(blob) < 8:
        raise Malformed(f"{len(blob)} bytes: too short for the 8-byte header length")
    (n,) = struct.unpack("<Q", blob[:8])
    if n > len(blob) - 8:
        raise Malformed(f"header length {n} goes beyond the file of {len(blob)} bytes")
    try:
        header = json.loads(blob[8:8 + n].decode("utf-8"), object_pairs_hook=no_duplicates)
    except (UnicodeDecodeError, json.JSONDecodeError) as e:
        raise Malformed(f"invalid JSON header: {e}")
    if not isinstance(header, dict):
        raise Malformed("the header is not a JSON object")
    data = blob[8 + n:]
    metadata = header.pop("__metadata__", {})
    if not isinstance(metadata, dict) or not all(isinstance(v, str) for v in metadata.values()):
        raise Malformed("__metadata__ is not an object of strings")
    entries = []
    for name, info in header.items():
        if not isinstance(info, dict) or set(info) != {"dtype", "shape", "data_offsets"}:
            raise Malformed(f"tensor {name!r}: expected exactly dtype, shape and data_offsets")
        dtype, shape, offsets = info["dtype"], info["shape"], info["data_offsets"]
        if dtype not in DTYPES:
            raise Malformed(f"tensor {name!r}: unknown dtype {dtype!r}")
        if not isinstance(shape, list) or not all(isinstance(d, int) and d >= 0 for d in shape):
            raise Malformed(f"tensor {name!r}: shape must be a list of non-negative integers")
        if (not isinstance(offsets, list) or len(offsets) != 2 or not all(isinstance(o, int) for o in offsets)
                or not 0 <= offsets[0] <= offsets[1]):
            raise Malformed(f"tensor {name!r}: data_offsets must be [begin, end], 0 <= begin <= end")
        need = DTYPES[dtype][0] * int(np.prod(shape, dtype=object))
        if need != offsets[1] - offsets[0]:
            raise Malformed(f"tensor {name!r}: shape {shape} of {dtype} needs {need} bytes, "
                            f"data_offsets {offsets} span {offsets[1] - offsets[0]}")
        entries.append((offsets[0], offsets[1], name, dtype, shape))
    entries.sort(key=lambda e: (e[0], e[1]))
    cursor, tensors = 0, []
    for begin, end, name, dtype, shape in entries:
        if begin != cursor:
            raise Malformed(f"tensor {name!r}: begins at {begin}, expected {cursor} (overlap or gap)")
        if end > len(data):
            raise Malformed(f"tensor {name!r}: ends at {end}, past the {len(data)} data bytes (truncated)")
        tensors.append((name, dtype, shape, data[begin:end]))
        cursor = end
    if cursor != len(data):
        raise Malformed(f"{len(data) - cursor} trailing bytes after the last tensor")
    return metadata, tensors


def value_range(dtype, shape, raw):
    if not raw:
        return "empty"
    np_type = DTYPES[dtype][1]
    if np_type is None:  # bfloat16: the top half of a float32
        values = (np.frombuffer(raw, dtype="<u2").astype(np.uint32) << 16).view(np.float32)
    else:
        values = np.frombuffer(raw, dtype=np.dtype(np_type).newbyteorder("<"))
    if dtype == "BOOL" and values.max() > 1:
        return "INVALID bool bytes"
    finite = values[np.isfinite(values)] if values.dtype.kind == "f" else values
    bad = values.size - finite.size
    text = f"range [{finite.min()}, {finite.max()}]" if finite.size else "no finite values"
    return text + (f", {bad} non-finite" if bad else "")


def expected_crc(value):
    if isinstance(value, int):
        return value
    if isinstance(value, str):
        return int(value, 0)
    raise ValueError(f"crc32 must be an integer or a string, not {value!r}")


def main(argv):
    if len(argv) >= 2 and argv[1] in ("-h", "--help"):
        print(__doc__.strip())
        return 0
    if len(argv) not in (2, 3):
        print(__doc__.strip(), file=sys.stderr)
        return 2
    path = argv[1]
    try:
        metadata, tensors = read_safetensors(path)
    except (OSError, Malformed) as e:
        print(f"{path}: {e}", file=sys.stderr)
        return 2
    if len(argv) == 2:
        for key, value in sorted(metadata.items()):
            print(f"metadata {key} = {value}")
        for name, dtype, shape, raw in tensors:
            print(f"{name}  {dtype} {shape}  crc32=0x{zlib.crc32(raw):08x}  {value_range(dtype, shape, raw)}")
        print(f"{path}: {len(tensors)} tensors, valid")
        return 0

    try:
        with open(argv[2]) as f:
            expected = json.load(f)
        if not isinstance(expected, dict):
            raise ValueError("not a JSON object of tensor names")
    except (OSError, ValueError) as e:
        print(f"{argv[2]}: {e}", file=sys.stderr)
        return 2
    failures = 0
    found = {name for name, _, _, _ in tensors}
    for name, dtype, shape, raw in tensors:
        crc = zlib.crc32(raw)
        want = expected.get(name)
        if want is None:
            print(f"EXTRA     {name}: {dtype} {shape} is in the file but not in {argv[2]}")
            failures += 1
            continue
        problems = []
        try:
            want_dtype = FRUGAL_NAMES.get(want["dtype"], want["dtype"])
            if want_dtype != dtype:
                problems.append(f"dtype {dtype} != expected {want['dtype']}")
            if list(want["shape"]) != shape:
                problems.append(f"shape {shape} != expected {want['shape']}")
            if expected_crc(want["crc32"]) != crc:
                problems.append(f"crc32 0x{crc:08x} != expected 0x{expected_crc(want['crc32']):08x}")
        except (KeyError, TypeError, ValueError) as e:
            problems.append(f"bad expectation {want!r}: {e}")
        if problems:
            print(f"MISMATCH  {name}: " + "; ".join(problems))
            failures += 1
        else:
            print(f"ok        {name}: {dtype} {shape} crc32=0x{crc:08x}")
    for name in expected:
        if name not in found:
            print(f"MISSING   {name}: expected but not in the file")
            failures += 1
    print(f"{path}: {len(tensors)} tensors, {failures} problem(s)")
    return 1 if failures else 0


if __name__ == "__main__":
    sys.exit(main(sys.argv))
