"""Drill's cache folder: generated inboxes, the embedded model's dequantized copy. `$DRILL_CACHE`, else
`~/.cache/drill`. Everything in it can be deleted; it is rebuilt on the next use."""

from __future__ import annotations

import os
from pathlib import Path


def cache_dir(explicit: str | Path | None = None) -> Path:
    """`explicit`, else `$DRILL_CACHE`, else `~/.cache/drill`."""
    if explicit:
        return Path(explicit)
    if os.environ.get("DRILL_CACHE"):
        return Path(os.environ["DRILL_CACHE"])
    return Path.home() / ".cache" / "drill"
