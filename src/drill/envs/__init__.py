"""Drill's bundled environments, one package each, every one exposing `load(**options) -> Env`."""
