"""Shared fixtures for the model tests: one embedded model per test session (loading takes ~20 s)."""

from __future__ import annotations

import pytest

from drill.models.local import TransformersChatModel, load_embedded


@pytest.fixture(scope="session")
def embedded_model() -> TransformersChatModel:
    """The embedded SmolLM2-135M-Instruct, loaded offline once; `load_embedded()` returns the same object."""
    return load_embedded()
