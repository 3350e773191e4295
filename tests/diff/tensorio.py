"""Tensor files for the diff and exec suites: .npy (through numpy) and
safetensors (written here: the `safetensors` package is not installed).

safetensors layout: an 8-byte little-endian header length N, N bytes of JSON
{name: {"dtype", "shape", "data_offsets": [begin, end]}} (padded with spaces
to a multiple of 8, as the reference writer pads it), then the data section,
where the tensors' byte ranges tile the section exactly in header order.

bf16 has no numpy dtype: a bf16 tensor travels as a float32 .npy (cli.md:
inputs are read from float32 arrays, outputs written as float32) and as raw
16-bit patterns in safetensors.
"""

import json
import struct

import numpy as np
import torch

ST_DTYPE = {
    torch.float64: "F64", torch.float32: "F32", torch.float16: "F16",
    torch.bfloat16: "BF16", torch.int64: "I64", torch.int32: "I32",
    torch.int16: "I16", torch.int8: "I8", torch.uint8: "U8", torch.bool: "BOOL",
}


def to_numpy(t):
    """The array tgc reads or writes for tensor t: bf16 becomes float32."""
    t = t.detach().contiguous()
    if t.dtype == torch.bfloat16:
        t = t.to(torch.float32)
    return t.numpy().copy()


def tensor_bytes(t):
    """Raw little-endian bytes of t in C order (bf16 as its bit patterns)."""
    t = t.detach().contiguous()
    if t.dtype == torch.bfloat16:
        return t.view(torch.int16).numpy().tobytes()
    return t.numpy().tobytes()


def safetensors_image(entries, pad=True):
    """bytes of a safetensors file. entries: list of (name, torch.Tensor) or
    (name, dtype_string, shape, raw_bytes) for hand-made (possibly invalid)
    records; data is laid out in list order."""
    header, blobs, off = {}, [], 0
    for e in entries:
        if isinstance(e[1], torch.Tensor):
            name, t = e
            dt, shape, raw = ST_DTYPE[t.dtype], list(t.shape), tensor_bytes(t)
        else:
            name, dt, shape, raw = e
        header[name] = {"dtype": dt, "shape": list(shape), "data_offsets": [off, off + len(raw)]}
        blobs.append(raw)
        off += len(raw)
    return header_image(header, b"".join(blobs), pad)


def header_image(header, data, pad=True):
    """bytes of a safetensors file from a header dict (or raw JSON text) and
    the data section."""
    text = header if isinstance(header, (str, bytes)) else json.dumps(header, separators=(",", ":"))
    if isinstance(text, str):
        text = text.encode("utf-8")
    if pad:
        text += b" " * (-len(text) % 8)
    return struct.pack("<Q", len(text)) + text + data


def write_safetensors(path, entries):
    with open(path, "wb") as f:
        f.write(safetensors_image(entries))


def write_npy(path, t):
    np.save(path, to_numpy(t), allow_pickle=False)


ST_DTYPES = {"F64": (np.float64, None), "F32": (np.float32, None), "F16": (np.float16, None),
             "BF16": (np.int16, torch.bfloat16), "I64": (np.int64, None), "I32": (np.int32, None),
             "I16": (np.int16, None), "I8": (np.int8, None), "U8": (np.uint8, None),
             "BOOL": (np.bool_, None)}


def read_safetensors(path):
    with open(path, "rb") as f:
        data = f.read()
    (n,) = struct.unpack_from("<Q", data, 0)
    header = json.loads(data[8:8 + n])
    base = 8 + n
    out = {}
    for name, e in header.items():
        if name == "__metadata__":
            continue
        npdt, view = ST_DTYPES[e["dtype"]]
        b, en = e["data_offsets"]
        a = np.frombuffer(data[base + b:base + en], dtype=npdt).copy().reshape(e["shape"])
        t = torch.from_numpy(a)
        out[name] = t.view(view) if view is not None else t
    return out
