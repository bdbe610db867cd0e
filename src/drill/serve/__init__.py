"""OpenEnv-compatible serving of any registered environment (`drill serve ENV`), its client and its web page.

See docs/serving.md. The server needs `fastapi`, `uvicorn`, `websockets` and `openenv`. The client's names load on
first use, so `drill` commands that serve nothing (training on a machine without the serving packages) start
without them.
"""

from __future__ import annotations

from typing import Any

__all__ = ["RemoteEnv", "RemoteEnvError", "remote_spec"]


def __getattr__(name: str) -> Any:
    if name in __all__:
        from drill.serve import client

        return getattr(client, name)
    raise AttributeError(f"module 'drill.serve' has no attribute {name!r}")
