"""Create-if-absent on a local (or NFS-free POSIX) filesystem: write a temp file, then hard-link
it to the target. link(2) fails atomically when the target exists, so two writers can never
both win, and the target appears complete or not at all."""
from __future__ import annotations

import os
import uuid


def create_if_absent(path: str, data: bytes) -> bool:
    parent = os.path.dirname(path) or "."
    os.makedirs(parent, exist_ok=True)
    tmp = os.path.join(parent, f".{os.path.basename(path)}.{uuid.uuid4()}.tmp")
    try:
        with open(tmp, "wb") as f:
            f.write(data)
        try:
            os.link(tmp, path)
            return True
        except FileExistsError:
            return False
    finally:
        try:
            os.unlink(tmp)
        except FileNotFoundError:
            pass
