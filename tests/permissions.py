"""Whether file permissions hold back this process: root (with its capabilities) reads a
folder of mode 000, so a test about an unreadable folder or file has nothing to show."""

from __future__ import annotations

import os
import tempfile

import pytest


def enforced() -> bool:
    """True when a folder of mode 000 cannot be listed by this process."""
    with tempfile.TemporaryDirectory() as scratch:
        probe = os.path.join(scratch, "probe")
        os.mkdir(probe, 0)
        try:
            os.listdir(probe)
        except PermissionError:
            return True
        finally:
            os.chmod(probe, 0o700)
    return False


needs_permissions = pytest.mark.skipif(
    os.geteuid() == 0 and not enforced(), reason="root reads a folder of mode 000"
)
