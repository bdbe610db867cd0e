"""Drill environments inside other training frameworks, in-process: `drill.integrations.trl` (TRL's
GRPOTrainer) and `drill.integrations.verifiers` (verifiers' `load_environment`)."""
