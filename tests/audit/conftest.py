from __future__ import annotations

import os
from collections.abc import Iterator

import pytest


@pytest.fixture(autouse=True, scope="package")
def _private_cache(tmp_path_factory: pytest.TempPathFactory) -> Iterator[None]:
    """Environments that build data on first use (the synthetic inbox) build it in a private folder."""
    old = os.environ.get("DRILL_CACHE")
    os.environ["DRILL_CACHE"] = str(tmp_path_factory.mktemp("drill-cache"))
    yield
    if old is None:
        os.environ.pop("DRILL_CACHE")
    else:
        os.environ["DRILL_CACHE"] = old
