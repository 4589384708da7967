#!/usr/bin/env python3
"""Rewrites a GGUF file with hostile edits, to reproduce the findings of issue 38
(docs/reliability.md) through the CLI on files `kvrt synth` made:

  tools/gguf_edit.py IN OUT [--set KEY JSON]... [--fill TENSOR NUMBER]... [--tokens N]

  --set KEY JSON       sets a metadata key: a JSON string is a GGUF string (so
                       "qwen2\\nerror: x" holds a real newline), an integer a u32,
                       a real number an f32; an existing key keeps its place;
                       @PATH reads the JSON from a file (for values past the
                       kernel's 128 KiB limit on one argument)
  --fill TENSOR NUMBER every element of an f32 tensor becomes NUMBER (1e19)
  --tokens N           tokenizer.ggml.tokens becomes N entries "t0", "t1", ...

The tensor data is copied byte for byte: only the metadata section changes
size, and the tensor offsets are relative to the aligned start of the data.
"""
import json
import struct
import sys

STRING, ARRAY = 8, 9
SCALAR_FORMATS = {0: "B", 1: "b", 2: "H", 3: "h", 4: "I", 5: "i", 6: "f", 7: "?", 10: "Q", 11: "q", 12: "d"}
F32 = 0  # ggml type of an f32 tensor


class Reader:
    def __init__(self, data):
        self.data, self.at = data, 0

    def take(self, fmt):
        (value,) = struct.unpack_from("<" + fmt, self.data, self.at)
        self.at += struct.calcsize("<" + fmt)
        return value

    def string(self):
        size = self.take("Q")
        self.at += size
        return self.data[self.at - size:self.at]

    def skip_value(self, kind):
        if kind == STRING:
            self.string()
        elif kind == ARRAY:
            element, count = self.take("I"), self.take("Q")
            for _ in range(count):
                self.skip_value(element)
        else:
            self.at += struct.calcsize("<" + SCALAR_FORMATS[kind])


def encode_string(text):
    return struct.pack("<Q", len(text)) + text


def encode_value(value):
    """(GGUF type, bytes) of a JSON value given with --set."""
    if isinstance(value, str):
        return STRING, encode_string(value.encode("utf-8"))
    if isinstance(value, bool):
        return 7, struct.pack("<?", value)
    if isinstance(value, int):
        return 4, struct.pack("<I", value)
    return 6, struct.pack("<f", value)


def parse(data):
    reader = Reader(data)
    magic, version = reader.take("4s"), reader.take("I")
    if magic != b"GGUF":
        sys.exit("not a GGUF file")
    tensor_count, kv_count = reader.take("Q"), reader.take("Q")
    entries = []  # [key bytes, type, value bytes]
    alignment = 32
    for _ in range(kv_count):
        key = reader.string()
        kind = reader.take("I")
        start = reader.at
        reader.skip_value(kind)
        entries.append([key, kind, data[start:reader.at]])
        if key == b"general.alignment":
            alignment = struct.unpack("<I", data[start:start + 4])[0]
    tensors = []  # (name, element count, ggml type, offset)
    infos_start = reader.at
    for _ in range(tensor_count):
        name = reader.string()
        dims = [reader.take("Q") for _ in range(reader.take("I"))]
        elements = 1
        for dim in dims:
            elements *= dim
        tensors.append((name, elements, reader.take("I"), reader.take("Q")))
    infos = data[infos_start:reader.at]
    data_start = -(-reader.at // alignment) * alignment
    return version, entries, infos, tensors, alignment, data[data_start:]


def main(argv):
    if len(argv) < 3:
        sys.exit(__doc__)
    source, destination, edits = argv[1], argv[2], argv[3:]
    with open(source, "rb") as f:
        version, entries, infos, tensors, alignment, payload = parse(f.read())
    payload = bytearray(payload)
    i = 0
    while i < len(edits):
        option = edits[i]
        if option == "--set":
            text = edits[i + 2]
            if text.startswith("@"):
                with open(text[1:], encoding="utf-8") as f:
                    text = f.read()
            key, (kind, value) = edits[i + 1].encode(), encode_value(json.loads(text))
            existing = [entry for entry in entries if entry[0] == key]
            if existing:
                existing[0][1:] = [kind, value]
            else:
                entries.append([key, kind, value])
            i += 3
        elif option == "--fill":
            name, number = edits[i + 1].encode(), float(edits[i + 2])
            matches = [t for t in tensors if t[0] == name]
            if not matches or matches[0][2] != F32:
                sys.exit(f"no f32 tensor {edits[i + 1]}")
            _, elements, _, offset = matches[0]
            payload[offset:offset + 4 * elements] = struct.pack("<f", number) * elements
            i += 3
        elif option == "--tokens":
            count = int(edits[i + 1])
            tokens = b"".join(encode_string(b"t%d" % n) for n in range(count))
            value = struct.pack("<IQ", STRING, count) + tokens
            for entry in entries:
                if entry[0] == b"tokenizer.ggml.tokens":
                    entry[1:] = [ARRAY, value]
                    break
            else:
                sys.exit("no tokenizer.ggml.tokens")
            i += 2
        else:
            sys.exit(f"unknown option {option}\n{__doc__}")
    head = struct.pack("<4sIQQ", b"GGUF", version, len(tensors), len(entries))
    head += b"".join(encode_string(key) + struct.pack("<I", kind) + value for key, kind, value in entries)
    head += infos
    head += b"\0" * (-len(head) % alignment)
    with open(destination, "wb") as f:
        f.write(head)
        f.write(payload)


if __name__ == "__main__":
    main(sys.argv)
