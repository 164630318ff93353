"""The Node packages some tests run (official SDKs, an OpenID provider): each test folder
pins its own with a lockfile, installed with ``npm ci`` only when missing."""

from __future__ import annotations

import fcntl
import shutil
import subprocess
from pathlib import Path


def installed(folder: Path, package: str, what: str) -> Path:
    """``folder``, its ``node_modules`` holding ``package`` (``npm ci`` when missing)."""
    node, npm = shutil.which("node"), shutil.which("npm")
    assert node, f"the {what} tests need node on PATH (CI has it)"
    assert npm, f"the {what} tests need npm on PATH (CI has it)"
    if (folder / "node_modules" / package).is_dir():
        return folder
    # Test workers (pytest -n 2) may both find it missing: one installs, the other waits.
    with (folder / ".npm-install.lock").open("w") as lock:
        fcntl.flock(lock, fcntl.LOCK_EX)
        if not (folder / "node_modules" / package).is_dir():
            done = subprocess.run(
                [npm, "ci", "--no-audit", "--no-fund"],
                cwd=folder,
                capture_output=True,
                text=True,
                timeout=300,
            )
            assert done.returncode == 0, f"npm ci failed (is npm reachable?): {done.stderr[-500:]}"
    return folder
