"""Drill: train reliable LLM agents with reinforcement learning.

Environments are deterministic Python; rubrics score the event log an episode leaves;
policies range from scripted baselines to LoRA-trained language models.
"""

__version__ = "0.1.0"
