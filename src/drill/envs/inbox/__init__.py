"""Inbox QA: answer questions about one person's email by searching and reading it (SQLite FTS5 store).

`load(**options)` gives an `InboxEnv` (by default over the synthetic Kestrel Dynamics inbox, built on
first use); `rubric(max_turns)` scores its episodes; `baselines` holds the random, heuristic and oracle
policies. Real mail goes in with `drill inbox ingest`, questions for it come from
`drill inbox generate-questions`. See README.md.
"""

from __future__ import annotations

from drill.envs.inbox.baselines import baselines
from drill.envs.inbox.env import InboxEnv
from drill.envs.inbox.questions import InboxQuestion
from drill.envs.inbox.rubric import rubric
from drill.envs.inbox.spec import SPEC, load

__all__ = ["SPEC", "InboxEnv", "InboxQuestion", "baselines", "load", "rubric"]
