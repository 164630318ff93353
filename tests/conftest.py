"""Shared fixtures: where Unleash's client specification lives."""

from __future__ import annotations

import os
from pathlib import Path

_DEFAULT_SPEC = Path(__file__).resolve().parents[1].parent / "shared" / "client-specification"


def client_spec_dir() -> Path:
    """``FLAGCORE_CLIENT_SPEC`` or ``../shared/client-specification`` beside the checkout."""
    return Path(os.environ.get("FLAGCORE_CLIENT_SPEC", _DEFAULT_SPEC))
