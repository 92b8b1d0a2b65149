"""A deterministic `.npz` writer: same arrays, same bytes, whenever and wherever.

`np.savez` stamps every zip entry with the current time; here each entry gets a
fixed date_time and fixed permissions, entries are written in the given order,
and the array payload is numpy's own `.npy` format (numpy.lib.format).
"""

import io
import zipfile

import numpy as np
from numpy.lib import format as npy_format

_FIXED_DATE_TIME = (1980, 1, 1, 0, 0, 0)


def write_npz(path, arrays):
    """Writes `arrays` (an ordered mapping name -> array) to `path` as an uncompressed npz."""
    with zipfile.ZipFile(path, "w", compression=zipfile.ZIP_STORED) as zf:
        for name, array in arrays.items():
            buf = io.BytesIO()
            # np.asarray, not np.ascontiguousarray: that makes a 0-d array 1-d (shape (1,)).
            npy_format.write_array(buf, np.asarray(array, order="C"), allow_pickle=False)
            info = zipfile.ZipInfo(name + ".npy", date_time=_FIXED_DATE_TIME)
            info.compress_type = zipfile.ZIP_STORED
            info.create_system = 3  # unix
            info.external_attr = 0o644 << 16
            zf.writestr(info, buf.getvalue())
