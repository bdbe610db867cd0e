"""The vLLM in-process backend, for machines with a CUDA GPU (`pip install 'drill[vllm]'`).

Prompts are rendered with the model's chat template exactly as the local backend renders them
(`drill.models.chat_template`) and sent to vLLM as token ids, so `prompt_token_ids` are known.
`token_ids` are the sampled ids, stop string or end-of-turn token included; `logprobs` are vLLM's
logprobs of the sampled tokens. Row i of a seeded batch uses seed + i. vLLM is imported only when
this backend is built; without CUDA or without vLLM it raises `ModelLoadError` saying which.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from drill.core.types import Generation, ToolSpec
from drill.models.base import Message, ModelLoadError, SamplingParams
from drill.models.chat_template import ChatTemplate


def cuda_available() -> bool:
    import torch

    return bool(torch.cuda.is_available())


class VLLMChatModel:
    """A model served by an in-process `vllm.LLM`."""

    def __init__(self, model: str, **engine_options: Any) -> None:
        if not model:
            raise ModelLoadError("vllm:MODEL needs a model name or folder, e.g. vllm:Qwen/Qwen2.5-0.5B-Instruct")
        if not cuda_available():
            raise ModelLoadError(f"vllm:{model} needs a CUDA GPU and torch sees none; use `--policy llm --model "
                                 f"{model}` (transformers) or `openai:{model}` against a vLLM server")
        try:
            import vllm
        except ImportError as exc:
            raise ModelLoadError(f"vllm:{model} needs vLLM: pip install 'drill[vllm]' ({exc})") from exc
        self.model_id = model
        self.llm = vllm.LLM(model=model, **engine_options)
        self.tokenizer = self.llm.get_tokenizer()
        self.template = ChatTemplate(self.tokenizer, model)
        self.native_tools: bool = self.template.native_tools

    def generate(self, conversations: Sequence[Sequence[Message]], tools: Sequence[ToolSpec] | None,
                 params: SamplingParams) -> list[Generation]:
        import vllm

        if not conversations:
            return []
        prompts = [self.template.prompt_token_ids(c, tools) for c in conversations]
        sampling = [
            vllm.SamplingParams(
                n=1, temperature=params.temperature, top_p=params.top_p, max_tokens=params.max_new_tokens,
                seed=None if params.seed is None else params.seed + row, logprobs=0, stop=list(params.stop),
                include_stop_str_in_output=True,
            )
            for row in range(len(prompts))
        ]
        outputs = self.llm.generate([{"prompt_token_ids": p} for p in prompts], sampling, use_tqdm=False)
        generations = []
        for prompt, output in zip(prompts, outputs):
            completion = output.outputs[0]
            token_ids = list(completion.token_ids)
            logprobs = [float(step[token].logprob) for step, token in zip(completion.logprobs or [], token_ids)]
            generations.append(Generation(text=completion.text, prompt_token_ids=prompt, token_ids=token_ids,
                                          logprobs=logprobs, model=self.model_id,
                                          finish_reason=completion.finish_reason or ""))
        return generations
