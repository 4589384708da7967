#!/usr/bin/env python3
"""Dump the tokenizer.ggml.* metadata of GGUF files as JSON (development aid).

The tokenizer tests read these JSON files until kvrt has its own GGUF reader:

    tools/gguf_vocab_dump.py OUT_DIR FILE.gguf...

writes OUT_DIR/<file name>.json for each file, an object with one member per
tokenizer.ggml.* key (the key without its prefix). Only the metadata is read:
magic "GGUF", u32 version, u64 tensor count, u64 key/value count, then per key
a u64-length name, a u32 type and the value. Little-endian only.
"""
import json
import os
import struct
import sys

# GGUF value type -> struct format of a scalar of that type.
SCALARS = {0: "<B", 1: "<b", 2: "<H", 3: "<h", 4: "<I", 5: "<i", 6: "<f", 7: "<?",
           10: "<Q", 11: "<q", 12: "<d"}
STRING, ARRAY = 8, 9


class Reader:
    def __init__(self, data):
        self.data = data
        self.pos = 0

    def take(self, fmt):
        (value,) = struct.unpack_from(fmt, self.data, self.pos)
        self.pos += struct.calcsize(fmt)
        return value

    def string(self):
        length = self.take("<Q")
        raw = self.data[self.pos:self.pos + length]
        if len(raw) != length:
            raise ValueError("string runs past the end of the file")
        self.pos += length
        # Token texts are UTF-8 in every GGUF seen; keep invalid bytes visible.
        return raw.decode("utf-8", errors="surrogateescape")

    def value(self, kind):
        if kind in SCALARS:
            return self.take(SCALARS[kind])
        if kind == STRING:
            return self.string()
        if kind == ARRAY:
            elem_kind = self.take("<I")
            count = self.take("<Q")
            return [self.value(elem_kind) for _ in range(count)]
        raise ValueError(f"unknown GGUF value type {kind}")


def tokenizer_metadata(path):
    with open(path, "rb") as f:
        reader = Reader(f.read())
    if reader.data[:4] != b"GGUF":
        raise ValueError(f"{path}: not a GGUF file")
    reader.pos = 4
    version = reader.take("<I")
    if version not in (2, 3):
        raise ValueError(f"{path}: unsupported GGUF version {version}")
    reader.take("<Q")  # tensor count: the tensors are not needed here
    kv_count = reader.take("<Q")
    out = {}
    for _ in range(kv_count):
        key = reader.string()
        value = reader.value(reader.take("<I"))
        if key.startswith("tokenizer.ggml."):
            out[key[len("tokenizer.ggml."):]] = value
    return out


def main(argv):
    if len(argv) < 3:
        sys.exit(__doc__)
    out_dir = argv[1]
    os.makedirs(out_dir, exist_ok=True)
    for path in argv[2:]:
        target = os.path.join(out_dir, os.path.basename(path) + ".json")
        with open(target, "w", encoding="utf-8", errors="surrogateescape") as f:
            json.dump(tokenizer_metadata(path), f, ensure_ascii=False)
        print(target)


if __name__ == "__main__":
    main(sys.argv)
