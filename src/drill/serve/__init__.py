"""OpenEnv-compatible serving of any registered environment (`drill serve ENV`), its client and its web page.

See docs/serving.md. The server needs `fastapi`, `uvicorn`, `websockets` and `openenv`.
"""

from drill.serve.client import RemoteEnv, RemoteEnvError, remote_spec

__all__ = ["RemoteEnv", "RemoteEnvError", "remote_spec"]
