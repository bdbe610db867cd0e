"""Copilot: a productivity co-pilot sandbox (mail, calendar, drive, chat) with L1-L5 tasks and safety rules.

`CopilotEnv` is the world and its rules, `rubric()` scores its episodes, `baselines` holds the random, heuristic and
oracle policies, and `SPEC` registers it for `drill eval/watch/train copilot`. See README.md.
"""

from __future__ import annotations

from drill.envs.copilot.baselines import baselines
from drill.envs.copilot.env import CopilotEnv
from drill.envs.copilot.rubric import rubric
from drill.envs.copilot.spec import SPEC
from drill.envs.copilot.tasks import CopilotTask

__all__ = ["SPEC", "CopilotEnv", "CopilotTask", "baselines", "rubric"]
