"""The one prompt type: how a language-model policy is prompted and samples, declared once.

`PolicyOptions` holds every prompt setting with its one default; `drill eval`, `drill watch`, the trainer's
rollouts and its held-out evaluation all build it, and the command-line flags are derived from its
fields (`PROMPT_FLAGS`). `LLMOptions` adds which model and server to use.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Literal

from drill.models.base import SamplingParams

ToolListing = Literal["schema", "compact"]
TOOL_LISTINGS: tuple[str, ...] = ("schema", "compact")
AGENT_INSTRUCTIONS = (
    "You are an agent working in an environment, one turn at a time. Each user message shows what you "
    "observe now. On every turn, act by calling exactly one tool."
)


@dataclass(frozen=True)
class Demonstration:
    """One worked example shown to a role before its own conversation: what it saw and a good reply."""

    role: str
    observation: str
    """The observation as the model would see it (a user message)."""
    reply: str
    """The reply, as a tool call in the prompt's reply format (an assistant message)."""


@dataclass(frozen=True)
class PolicyOptions:
    """How an LLMPolicy prompts and samples. One default per setting, for every command."""

    sampling: SamplingParams = field(default_factory=SamplingParams)
    """Sampling for every reply. With a seed, each `act` call derives its own seed from the inputs, so the same
    inputs give the same actions (policies are stateless) while turns and episodes get different draws."""
    react: bool = False
    """Thought/Action replies instead of plain tool calls."""
    max_history_turns: int = 8
    """At most this many of the role's earlier turns are shown."""
    max_prompt_chars: int = 12_000
    """Earlier turns are dropped, oldest first, until the prompt's characters fit (about 3,000 tokens)."""
    instructions: str = AGENT_INSTRUCTIONS
    """The generic part of the system prompt, before the role's brief."""
    tool_listing: ToolListing = "schema"
    """`schema`: each tool's JSON Schema; `compact`: one signature line per tool (see `compact_signature`)."""
    prefill: str = ""
    """The start of every reply, continued by the model. Its tokens are prompt, never trained on."""
    demonstrations: tuple[Demonstration, ...] = ()
    """Worked examples, shown to the role they belong to (see `drill.models.policy.demonstrations`)."""

    def __post_init__(self) -> None:
        problem = tool_listing_problem(self.tool_listing)
        if problem is not None:
            raise ValueError(problem)


def tool_listing_problem(value: str) -> str | None:
    """What is wrong with a tool listing's name, or None: the one check, for every command and config."""
    if value not in TOOL_LISTINGS:
        return f"unknown tool listing {value!r}; choose from {', '.join(TOOL_LISTINGS)}"
    return None


@dataclass(frozen=True)
class LLMOptions:
    """Which model serves an LLM policy, and how it is prompted."""

    model: str | None = None
    """Local HF folder or hub id for `llm`; the base model for `lora:` when the adapter does not name one."""
    base_url: str | None = None
    """OpenAI-compatible endpoint for `openai:MODEL`, e.g. http://localhost:8000/v1."""
    api_key_env: str = "OPENAI_API_KEY"
    """Environment variable holding the API key for `openai:`."""
    prompt: PolicyOptions = field(default_factory=PolicyOptions)
    device: str = "auto"
    """Where local models (`llm`, `lora:`) run: `auto` (CUDA when present, else CPU), `cpu`, `cuda`, `cuda:N`.
    On CUDA in bfloat16, as the trainer runs them."""


@dataclass(frozen=True)
class PromptFlag:
    """A command-line flag for one prompt setting: eval, watch and train read these, so none is declared twice."""

    name: str
    flag: str
    default: object
    help: str


_DEFAULT = PolicyOptions()
PROMPT_FLAGS: tuple[PromptFlag, ...] = (
    PromptFlag("max_new_tokens", "--max-new-tokens", _DEFAULT.sampling.max_new_tokens,
               "Tokens an LLM policy may generate per turn."),
    PromptFlag("temperature", "--temperature", _DEFAULT.sampling.temperature, "LLM sampling temperature (0 = greedy)."),
    PromptFlag("react", "--react", _DEFAULT.react, "Thought/Action prompting instead of plain tool calls (SFT then "
                                                   "trains on the source's thoughts too)."),
    PromptFlag("tool_listing", "--tool-listing", _DEFAULT.tool_listing,
               "How tools are listed in the prompt: schema (JSON Schema) or compact (one signature line per tool; "
               "far fewer tokens for small models)."),
    PromptFlag("prefill", "--prefill", _DEFAULT.prefill,
               "Text every LLM reply starts with (the model continues it; its tokens are prompt, never trained on), "
               "e.g. '<tool_call>\\n{\"name\": \"submit_resolution\", \"arguments\": {'; \\n and \\t are read "
               "as newline and tab. Not for openai:."),
    PromptFlag("max_history_turns", "--max-history-turns", _DEFAULT.max_history_turns,
               "At most this many of the role's earlier turns are shown in its prompt (0: none). Each is an "
               "observation and a reply, so in long episodes they are most of the prompt's tokens."),
    PromptFlag("demos", "--demos", 0, "Show the LLM this many worked examples: the oracle's first turn on the first "
                                      "N training tasks."),
)
