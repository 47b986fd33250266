"""NumPy arrays as Arrow arrays without `pa.array`.

`pa.array(ndarray)` first asks whether the object is a pandas Series, which imports pandas
when it is installed: about 0.2 s, once per process, paid by the first read of every
short-lived reader (a CLI command, a job reading one snapshot). Fixed-width arrays need no
conversion at all: their buffer becomes the Arrow array's data buffer as it is.
"""
from __future__ import annotations

import numpy as np
import pyarrow as pa


def from_numpy(values: np.ndarray) -> pa.Array:
    """A 1-D boolean or fixed-width numeric array as the Arrow array of the same type, no nulls."""
    values = np.ascontiguousarray(values)
    if values.dtype == np.bool_:  # Arrow packs booleans into bits, least significant first
        bits = np.packbits(values, bitorder="little")
        return pa.Array.from_buffers(pa.bool_(), len(values), [None, pa.py_buffer(bits)])
    return pa.Array.from_buffers(pa.from_numpy_dtype(values.dtype), len(values), [None, pa.py_buffer(values)])


def narrowable(arr: pa.Array) -> pa.Array:
    """A large_string/large_binary array slice copied out of its buffers, so that Arrow casts it
    back to 32-bit offsets (its cast checks the slice's absolute offsets, not its length)."""
    if arr.offset and (pa.types.is_large_string(arr.type) or pa.types.is_large_binary(arr.type)):
        return pa.concat_arrays([arr])
    return arr
