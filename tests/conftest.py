"""Fixtures for the whole test run."""

from __future__ import annotations

import os
from collections.abc import Iterator

import pytest


@pytest.fixture(autouse=True, scope="session")
def _private_drill_cache(tmp_path_factory: pytest.TempPathFactory) -> Iterator[None]:
    """Environments that build data on first use (the synthetic inbox) build it once per test run in a private
    folder, never in the user's cache, which another process may be using."""
    old = os.environ.get("DRILL_CACHE")
    os.environ["DRILL_CACHE"] = str(tmp_path_factory.mktemp("drill-cache"))
    yield
    if old is None:
        os.environ.pop("DRILL_CACHE")
    else:
        os.environ["DRILL_CACHE"] = old
