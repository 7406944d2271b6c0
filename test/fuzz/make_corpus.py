#!/usr/bin/env python3
"""Writes the seed corpora of test/fuzz: a few tiny valid and invalid files per reader.

Run from anywhere; it rewrites test/fuzz/corpus/{npy,idx,safetensors}/. Only the standard
library is needed, so the files do not depend on NumPy's or safetensors' versions.
"""
import gzip
import json
import pathlib
import struct

root = pathlib.Path(__file__).resolve().parent / "corpus"


def npy(shape, descr="<f4", data=b"", major=1, order="False", extra=""):
    dict_ = f"{{'descr': '{descr}', 'fortran_order': {order}, 'shape': {shape}, {extra}}}"
    prefix = 10 if major == 1 else 12
    dict_ += " " * ((64 - (prefix + len(dict_) + 1) % 64) % 64) + "\n"
    size = struct.pack("<H" if major == 1 else "<I", len(dict_))
    return b"\x93NUMPY" + bytes([major, 0]) + size + dict_.encode() + data


def idx(type_code, dims, data):
    return bytes([0, 0, type_code, len(dims)]) + b"".join(struct.pack(">I", d) for d in dims) + data


def st(header, data=b""):
    text = json.dumps(header, separators=(",", ":")).encode() if not isinstance(header, bytes) else header
    return struct.pack("<Q", len(text)) + text + data


corpora = {
    "npy": {
        "f32_2x3.npy": npy("(2, 3)", data=struct.pack("<6f", *range(6))),
        "u8_scalar.npy": npy("()", "|u1", b"\x07"),
        "bool_3.npy": npy("(3,)", "|b1", b"\x01\x00\x01"),
        "i32_v2.npy": npy("(2,)", "<i4", struct.pack("<2i", -1, 5), major=2),
        "f16_py2_long.npy": npy("(1L, 1L)", "<f2", b"\x00\x3c"),
        "empty_0x4.npy": npy("(0, 4)", "<u4"),
        "bad_shape.npy": npy("(2, x)", data=b"\0" * 8),
        "fortran.npy": npy("(1,)", order="True", data=b"\0" * 4),
        "truncated.npy": npy("(4,)", data=b"\0" * 5),
        "i8_3.npy": npy("(3,)", "|i1", b"\x80\xff\x7f"),
        "u16_2.npy": npy("(2,)", "<u2", struct.pack("<2H", 0, 65535)),
        "i64_2.npy": npy("(2,)", "<i8", struct.pack("<2q", -(2**63), 2**53 + 1)),
        "f64_short.npy": npy("(2,)", "<f8", struct.pack("<d", 0.1)),
        "c8_unsupported.npy": npy("(1,)", "<c8", b"\0" * 8),
    },
    "idx": {
        "u8_2x3.idx": idx(0x08, [2, 3], bytes(range(6))),
        "i32_3.idx": idx(0x0C, [3], struct.pack(">3i", 258, -2, 7)),
        "f32_1x2.idx": idx(0x0D, [1, 2], struct.pack(">2f", 1.5, -2.0)),
        "u8_2x2.idx.gz": gzip.compress(idx(0x08, [2, 2], b"\x01\x02\x03\x04"), mtime=0),
        "empty_0x28.idx": idx(0x08, [0, 28], b""),
        "bad_magic.idx": b"\x01\x00\x08\x01\x00\x00\x00\x01\x07",
        "truncated.idx.gz": gzip.compress(idx(0x08, [4, 4], b"\x05" * 9), mtime=0)[:-6],
    },
    "safetensors": {
        "mixed.safetensors": st(
            {"__metadata__": {"format": "pt"},
             "a": {"dtype": "F32", "shape": [2], "data_offsets": [0, 8]},
             "b": {"dtype": "I32", "shape": [1, 1], "data_offsets": [8, 12]},
             "c": {"dtype": "U8", "shape": [3], "data_offsets": [12, 15]},
             "d": {"dtype": "F16", "shape": [], "data_offsets": [15, 17]}},
            struct.pack("<2f", 1.0, -2.0) + struct.pack("<i", -3) + b"\x07\x08\xff\x00\x3c"),
        "bool_u32.safetensors": st(
            {"m": {"dtype": "BOOL", "shape": [2], "data_offsets": [0, 2]},
             "n": {"dtype": "U32", "shape": [1], "data_offsets": [2, 6]}},
            b"\x01\x00\xff\xff\xff\xff"),
        "empty.safetensors": st(b"{}      "),
        "overlap.safetensors": st(
            {"a": {"dtype": "U8", "shape": [4], "data_offsets": [0, 4]},
             "b": {"dtype": "U8", "shape": [2], "data_offsets": [2, 4]}}, b"abcd"),
        "not_json.safetensors": st(b'{"a":[1e400,'),
        "f64.safetensors": st({"x": {"dtype": "F64", "shape": [1], "data_offsets": [0, 8]}},
                              b"\0" * 8),
        "wide_narrow.safetensors": st(
            {"a": {"dtype": "I64", "shape": [1], "data_offsets": [0, 8]},
             "b": {"dtype": "U64", "shape": [1], "data_offsets": [8, 16]},
             "c": {"dtype": "I16", "shape": [2], "data_offsets": [16, 20]},
             "d": {"dtype": "U16", "shape": [1], "data_offsets": [20, 22]},
             "e": {"dtype": "I8", "shape": [2], "data_offsets": [22, 24]}},
            struct.pack("<qQ2hH2b", -5, 2**64 - 1, -32768, 7, 65535, -128, 127)),
        "i64_short.safetensors": st({"x": {"dtype": "I64", "shape": [2], "data_offsets": [0, 8]}},
                                    b"\0" * 8),
        "bf16_unsupported.safetensors": st(
            {"x": {"dtype": "BF16", "shape": [1], "data_offsets": [0, 2]}}, b"\0\0"),
    },
}

for reader, files in corpora.items():
    folder = root / reader
    folder.mkdir(parents=True, exist_ok=True)
    for old in folder.iterdir():
        old.unlink()
    for name, content in files.items():
        (folder / name).write_bytes(content)
