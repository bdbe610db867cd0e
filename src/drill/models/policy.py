"""`LLMPolicy`: a chat model acting in an environment, one batched `generate` call per `act`.

The prompt for the role that acts:

* system: `AGENT_INSTRUCTIONS`, then the role's brief (`Observation.instructions`), then how to
  call tools: when the backend passes tools natively (`ChatModel.native_tools`) the chat template or
  API shows them; otherwise the JSON tool protocol (`tool_protocol`) lists every tool inside
  `<tools>`, as its JSON Schema (`tool_listing="schema"`) or as one signature line
  (`"compact"`, e.g. `submit_resolution(resolution: string, citations: list of string, ...)`), and
  asks for one `<tool_call>{...}</tool_call>`. With `react=True` the reply form is `Thought: ...`
  then `Action: {"name": ..., "arguments": {...}}`.
* then the demonstrations for the role, if any: worked examples (an observation as a user message,
  a good reply as the assistant message), e.g. the oracle's first turn on training tasks
  (`demonstrations`);
* then the role's own earlier turns from `PolicyInput.history`: each observation it saw (with the
  error its previous action got, if any) as a user message and its raw output as the assistant
  message;
* then the current observation;
* then, with a `prefill`, the start of the reply (a trailing assistant message): the model continues
  from it. Its tokens are part of `Generation.prompt_token_ids`, so a trainer never trains on them,
  while the text that is parsed (and kept as `Action.raw`) is prefill + generated text.

Bounds: at most `max_history_turns` earlier turns, and the history is cut oldest first until the
prompt fits `max_prompt_chars` characters; the system prompt, the demonstrations and the current
observation are always kept whole, and a note says how many turns are not shown. `max_new_tokens`
bounds each reply.

Each reply is parsed by `drill.models.parsing`; a parse failure becomes `Action.unparseable`, which
the environment answers with the parser's message and an `invalid_action` event (the format
penalty). Every action carries the raw text and the `Generation` with its token ids and logprobs.
"""

from __future__ import annotations

import hashlib
import json
from collections.abc import Callable, Sequence
from dataclasses import dataclass, replace
from typing import Any

from drill.core.env import Env
from drill.core.policy import Policy, PolicyInput
from drill.core.types import Action, Generation, Observation, PolicyInfo, Task, ToolSpec
from drill.models.base import AdapterLoadError, ChatModel, Message, ModelLoadError, SamplingParams
from drill.models.parsing import parse_action
from drill.models.prompt import AGENT_INSTRUCTIONS, Demonstration, LLMOptions, PolicyOptions, ToolListing

__all__ = ["AGENT_INSTRUCTIONS", "BACKENDS", "Backend", "LLMPolicy", "PolicyOptions", "backend_for",
           "build_llm_policy", "demonstrations"]
HERMES_STOP = "</tool_call>"
REACT_STOP = "\nObservation:"


def tool_protocol(tools: Sequence[ToolSpec], react: bool, listing: ToolListing = "schema") -> str:
    """The JSON tool protocol written into the system prompt when the backend cannot pass tools natively."""
    if listing == "compact":
        lines = "\n".join(compact_signature(t) for t in tools)
        return (f"# Tools\n\nThe tools you can call:\n<tools>\n{lines}\n</tools>\n\n"
                + reply_format(react, native_tools=False))
    lines = "\n".join(json.dumps({"name": t.name, "description": t.description, "parameters": t.parameters})
                      for t in tools)
    return ("# Tools\n\nThe tools you can call, one JSON object per line (\"parameters\" is the JSON Schema of "
            f"the arguments):\n<tools>\n{lines}\n</tools>\n\n" + reply_format(react, native_tools=False))


def compact_signature(tool: ToolSpec) -> str:
    """One line for a tool: `name(arg: type, optional: type = default): description`, read from its JSON Schema."""
    properties: dict[str, Any] = tool.parameters.get("properties", {})
    required = set(tool.parameters.get("required", []))
    args = []
    for name, schema in properties.items():
        text = f"{name}: {_schema_type(schema)}"
        if name not in required:
            text += f" = {json.dumps(schema['default'])}" if "default" in schema else " (optional)"
        args.append(text)
    description = tool.description.strip().splitlines()[0] if tool.description.strip() else ""
    return f"{tool.name}({', '.join(args)})" + (f": {description}" if description else "")


def _schema_type(schema: dict[str, Any]) -> str:
    if "enum" in schema:
        return " | ".join(json.dumps(v) for v in schema["enum"])
    if "anyOf" in schema:
        return " or ".join(_schema_type(s) for s in schema["anyOf"])
    kind = schema.get("type", "any")
    if isinstance(kind, list):
        return " or ".join(kind)
    if kind == "array":
        return "list of " + _schema_type(schema.get("items", {}))
    low, high = schema.get("minimum"), schema.get("maximum")
    if low is not None and high is not None:
        return f"{kind} {low:g}-{high:g}"
    if low is not None:
        return f"{kind} >= {low:g}"
    if high is not None:
        return f"{kind} <= {high:g}"
    return str(kind)


def reply_format(react: bool, native_tools: bool) -> str:
    if react:
        return ("Reply in exactly this form, with one action:\n"
                "Thought: <your reasoning, in one or two sentences>\n"
                'Action: {"name": "<tool name>", "arguments": {"<argument>": <value>}}')
    if native_tools:
        return "Call exactly one tool per reply."
    return ("Reply with exactly one tool call, as JSON inside <tool_call></tool_call> tags, and nothing else:\n"
            '<tool_call>\n{"name": "<tool name>", "arguments": {"<argument>": <value>}}\n</tool_call>')


def render_observation(observation: Observation) -> str:
    if observation.error:
        return f"Error from the last action: {observation.error}\n\n{observation.content}"
    return observation.content


def render_action(action: Action) -> str:
    """What the model said on an earlier turn: its raw output, or the call written as a Hermes block."""
    if action.raw is not None:
        return action.raw
    return render_call(action.tool, action.arguments)


def render_call(tool: str, arguments: Any) -> str:
    """A tool call written as the protocol asks (`reply_format`): a Hermes block."""
    return f"<tool_call>\n{json.dumps({'name': tool, 'arguments': arguments})}\n</tool_call>"


def render_react(thought: str, tool: str, arguments: Any) -> str:
    """A thought and a tool call in the ReAct form `reply_format(react=True)` asks for, through the stop string
    a model's generation ends on (so SFT on it teaches where to stop)."""
    if "\n" in thought or not thought.strip():
        raise ValueError(f"a ReAct thought is one non-empty line, got {thought!r}")
    return f"Thought: {thought}\nAction: {json.dumps({'name': tool, 'arguments': arguments})}{REACT_STOP}"


def demonstrations(make_env: Callable[[], Env], tasks: Sequence[Task], policy: Policy | dict[str, Policy],
                   count: int, max_turns: int = 200) -> tuple[Demonstration, ...]:
    """Worked examples from the first `count` of `tasks` (pass training tasks, never held-out ones): each
    role's first turn played by `policy` (usually the oracle), as the observation and its call written as a
    Hermes block. An action that was not a valid call is a bug in the policy and raises."""
    from drill.core.rollout import run_episodes

    if count < 0:
        raise ValueError(f"the number of demonstrations must be >= 0, got {count}")
    if count == 0:
        return ()
    if len(tasks) < count:
        raise ValueError(f"{count} demonstrations asked for but only {len(tasks)} tasks to draw them from")
    shown: list[Demonstration] = []
    for episode in run_episodes(make_env, [(task, 0) for task in tasks[:count]], policy, None, max_turns):
        seen: set[str] = set()
        for turn in episode.turns:
            if turn.role in seen:
                continue
            seen.add(turn.role)
            if turn.action.parse_error is not None or any(e.name == "invalid_action" for e in turn.events):
                raise ValueError(f"demonstration from task {episode.task_id}: the {turn.policy!r} policy's "
                                 f"{turn.role} turn was rejected, so it cannot be shown as an example")
            shown.append(Demonstration(role=turn.role, observation=render_observation(turn.observation),
                                       reply=render_call(turn.action.tool, turn.action.arguments)))
    return tuple(shown)


class LLMPolicy:
    """A Policy backed by a ChatModel."""

    def __init__(self, model: ChatModel, info: PolicyInfo, options: PolicyOptions | None = None) -> None:
        self.model = model
        self._info = info
        self.options = options or PolicyOptions()

    @property
    def info(self) -> PolicyInfo:
        return self._info

    def system_prompt(self, observation: Observation) -> str:
        parts = [self.options.instructions, observation.instructions.strip()]
        if self.model.native_tools:
            parts.append(reply_format(self.options.react, native_tools=True))
        else:
            parts.append(tool_protocol(observation.tools, self.options.react, self.options.tool_listing))
        return "\n\n".join(p for p in parts if p)

    def conversation(self, item: PolicyInput) -> list[Message]:
        """The messages for one input, history bounded as the module docstring says."""
        system = {"role": "system", "content": self.system_prompt(item.observation)}
        current = {"role": "user", "content": render_observation(item.observation)}
        own = item.own_turns()
        shown = own[-self.options.max_history_turns:] if self.options.max_history_turns > 0 else []
        pairs = [[{"role": "user", "content": render_observation(t.observation)},
                  {"role": "assistant", "content": render_action(t.action)}] for t in shown]
        examples = [m for d in self.options.demonstrations if d.role == item.observation.role
                    for m in ({"role": "user", "content": d.observation}, {"role": "assistant", "content": d.reply})]
        fixed = len(system["content"]) + len(current["content"]) + sum(len(m["content"]) for m in examples)
        while pairs and fixed + sum(len(m["content"]) for p in pairs for m in p) > self.options.max_prompt_chars:
            pairs.pop(0)
        hidden = len(own) - len(pairs)
        messages = [m for p in pairs for m in p] + [current]
        if hidden:
            note = f"({hidden} earlier turn{'s' if hidden != 1 else ''} of yours not shown.)\n\n"
            messages[0] = {"role": "user", "content": note + messages[0]["content"]}
        prefill = [{"role": "assistant", "content": self.options.prefill}] if self.options.prefill else []
        return [system, *examples, *messages, *prefill]

    def act(self, inputs: Sequence[PolicyInput]) -> list[Action]:
        if not inputs:
            return []
        conversations = [self.conversation(item) for item in inputs]
        params = self._sampling(inputs)
        # Native tools are one list per generate call, so inputs are grouped by their tool set (one group
        # when every input is the same role); otherwise the tools are in each prompt and one call serves all.
        groups: dict[str, list[int]] = {}
        for index, item in enumerate(inputs):
            key = _tools_key(item.observation.tools) if self.model.native_tools else ""
            groups.setdefault(key, []).append(index)
        generations: list[Generation | None] = [None] * len(inputs)
        for indices in groups.values():
            tools = inputs[indices[0]].observation.tools if self.model.native_tools else None
            batch = self.model.generate([conversations[i] for i in indices], tools, params)
            if len(batch) != len(indices):
                raise RuntimeError(f"{self.model.model_id} returned {len(batch)} generations "
                                   f"for {len(indices)} prompts")
            for i, generation in zip(indices, batch):
                generations[i] = generation
        return [parse_action(self.options.prefill + g.text, g) for g in generations if g is not None]

    def _sampling(self, inputs: Sequence[PolicyInput]) -> SamplingParams:
        params = self.options.sampling
        if not self.model.native_tools and not params.stop:
            params = replace(params, stop=(REACT_STOP,) if self.options.react else (HERMES_STOP,))
        if params.seed is None:
            return params
        key = json.dumps([params.seed, [[i.task.id, i.seed, i.observation.role, i.observation.step] for i in inputs]])
        return replace(params, seed=int.from_bytes(hashlib.sha256(key.encode()).digest()[:4], "big") >> 1)


def _tools_key(tools: Sequence[ToolSpec]) -> str:
    return json.dumps([t.model_dump() for t in tools], sort_keys=True)


def _embedded(spec: str, options: LLMOptions) -> tuple[ChatModel, PolicyInfo]:
    from drill.models.local import load_embedded, load_local

    local = load_local(options.model) if options.model else load_embedded()
    return local, PolicyInfo(name="llm", kind="llm", model=local.model_id)


def _openai(spec: str, options: LLMOptions) -> tuple[ChatModel, PolicyInfo]:
    from drill.models.openai_backend import OpenAIChatModel

    if options.prompt.prefill:
        raise ModelLoadError(f"{spec}: --prefill needs a backend that renders the prompt itself (llm, lora:, vllm:); "
                             "the OpenAI chat API cannot continue a partial assistant reply")
    name = spec.removeprefix("openai:")
    model = OpenAIChatModel(name, base_url=options.base_url, api_key_env=options.api_key_env)
    return model, PolicyInfo(name=spec, kind="remote", model=name)


def _server(spec: str, options: LLMOptions) -> tuple[ChatModel, PolicyInfo]:
    from drill.models.local import EMBEDDED_MODEL_ID, load_tokenizer
    from drill.models.token_server import TokenServerChatModel

    name = spec.removeprefix("server:")
    tokenizer, model_id = load_tokenizer(options.model or EMBEDDED_MODEL_ID)
    model = TokenServerChatModel(name, options.base_url, tokenizer, model_id, options.api_key_env)
    return model, PolicyInfo(name=spec, kind="remote", model=name)


def _lora(spec: str, options: LLMOptions) -> tuple[ChatModel, PolicyInfo]:
    from drill.models.adapters import load_lora

    path = spec.removeprefix("lora:")
    if not path:
        raise AdapterLoadError("lora:PATH needs the path of an adapter folder, e.g. lora:runs/grpo/adapter")
    return load_lora(path, base_model=options.model)


def _vllm(spec: str, options: LLMOptions) -> tuple[ChatModel, PolicyInfo]:
    from drill.models.vllm_backend import VLLMChatModel

    model = VLLMChatModel(spec.removeprefix("vllm:"))
    return model, PolicyInfo(name=spec, kind="llm", model=model.model_id)


@dataclass(frozen=True)
class Backend:
    """One kind of model policy: how its `--policy` spec looks, what it is, and how to load it."""

    usage: str
    """The spec as a user writes it: `llm`, or a prefix and a placeholder such as `openai:MODEL`."""
    help: str
    load: Callable[[str, LLMOptions], tuple[ChatModel, PolicyInfo]]

    def matches(self, spec: str) -> bool:
        prefix, colon, _ = self.usage.partition(":")
        return spec.startswith(prefix + ":") if colon else spec == prefix


BACKENDS: tuple[Backend, ...] = (
    Backend("llm", "the embedded SmolLM2-135M-Instruct, or --model PATH_OR_HUB_ID", _embedded),
    Backend("openai:MODEL", "any OpenAI-compatible server at --base-url, key from --api-key-env", _openai),
    Backend("server:MODEL", "a server at --base-url that returns token ids (vLLM >= 0.10.2); the prompt is "
                            "rendered here with --model's tokenizer (default the embedded model's)", _server),
    Backend("lora:PATH", "a trained LoRA adapter on its base model; a load failure stops the command", _lora),
    Backend("vllm:MODEL", "vLLM in-process (CUDA and the vllm extra)", _vllm),
)
"""Every model backend. `drill.policies` builds the `--policy` help text from this table."""


def backend_for(spec: str) -> Backend | None:
    return next((b for b in BACKENDS if b.matches(spec)), None)


def build_llm_policy(spec: str, options: LLMOptions) -> LLMPolicy:
    """The policy for a model spec (see `BACKENDS`).

    Loading failures raise ModelLoadError (AdapterLoadError for `lora:`), a ValueError, which the CLI
    prints as one line before exiting non-zero. Models are cached per process, so building the same
    spec again is cheap.
    """
    backend = backend_for(spec)
    if backend is None:
        raise ModelLoadError(f"not a model policy: {spec!r}; use {', '.join(b.usage for b in BACKENDS)}")
    model, info = backend.load(spec, options)
    from drill.models.local import TransformersChatModel, place

    if isinstance(model, TransformersChatModel):  # local weights; a server or vLLM places its own
        model = place(model, options.device)
    return LLMPolicy(model, info, options.prompt)
