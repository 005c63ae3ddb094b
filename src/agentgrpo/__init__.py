"""agentgrpo: train tool-using LLM agents on outcomes with GRPO (built on TRL's GRPOTrainer)."""

__version__ = "0.1.0"
