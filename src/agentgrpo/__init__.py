"""agentgrpo: train tool-using LLM agents on outcomes with GRPO (built on TRL's GRPOTrainer).

From Python, what the CLI does::

    import agentgrpo
    result = agentgrpo.train("configs/demo.yaml", max_steps=20, callbacks=[MyCallback()])
    plan = agentgrpo.validate({"model": "tiny", "max_steps": 10})   # every problem at once, no model loaded

In your own TRL script, the flight recorder and the live doctor are plain `TrainerCallback`s::

    from agentgrpo import LiveDoctor, Recorder
    trainer = GRPOTrainer(..., callbacks=[Recorder("runs/mine"), LiveDoctor(run_dir="runs/mine")])
    # then: agentgrpo doctor runs/mine

Heavy imports (torch, TRL) happen on first use, so ``import agentgrpo`` stays fast.
"""

from __future__ import annotations

__version__ = "0.1.0"

__all__ = ["DynamicSampling", "DynamicSamplingTrainer", "LiveDoctor", "LiveDoctorCallback", "Recorder",
           "resolve_plan", "tiny_model_path", "train", "validate"]


def tiny_model_path() -> str:
    """The embedded SFT'd tiny model's directory: an ordinary checkpoint for `from_pretrained` / TRL."""
    from agentgrpo.tiny.build import SHIPPED_SFT

    return str(SHIPPED_SFT)


def validate(config=None, /, *, train_dataset=None, eval_dataset=None, peft_config=None, **overrides):
    """Check ``config`` (a YAML path, a shipped config name, a dict, or None) with ``overrides`` applied.

    Runs every check `agentgrpo validate` runs (TRL's own GRPOConfig checks, the model is reachable, each
    tool answers a sample call) and returns the resolved config; raises `agentgrpo.errors.ConfigError`
    listing every problem. Loads no model.
    """
    from agentgrpo.config import config_path
    from agentgrpo.plan import resolve_plan

    objects = {"train_dataset": train_dataset, "eval_dataset": eval_dataset, "peft_config": peft_config}
    source = config if isinstance(config, dict) or config is None else config_path(str(config))
    return resolve_plan(source, overrides, deep=True, objects={k: v for k, v in objects.items() if v is not None})


def train(config=None, /, *, callbacks=(), train_dataset=None, eval_dataset=None, peft_config=None, **overrides):
    """Run what `agentgrpo train` runs: [SFT] -> eval -> GRPO -> eval -> curves, into the run directory.

    ``config`` is a YAML path, a shipped config name, a dict, or None; ``overrides`` are option=value pairs
    (any agentgrpo option, GRPOConfig field or LoRA field). ``rewards`` may hold functions. ``train_dataset``
    (a `datasets.Dataset` with a ``prompt`` column) replaces ``dataset_name``; ``peft_config`` is passed
    to GRPOTrainer as is; ``callbacks`` are added to the trainer. Returns the `RunResult`.
    """
    from agentgrpo.pipeline import run

    plan = validate(config, train_dataset=train_dataset, eval_dataset=eval_dataset, peft_config=peft_config,
                   **overrides)
    return run(plan, callbacks=list(callbacks))


def __getattr__(name: str):
    if name == "resolve_plan":  # config + overrides -> the checked RunPlan (without the deep checks)
        from agentgrpo.plan import resolve_plan

        return resolve_plan
    if name == "Recorder":
        from agentgrpo.training.recorder import Recorder

        return Recorder
    if name in ("LiveDoctor", "LiveDoctorCallback"):
        from agentgrpo.doctor.live import LiveDoctorCallback

        return LiveDoctorCallback
    if name == "DynamicSampling":  # the trainer's dynamic sampling settings (torch-free)
        from agentgrpo.training.dynamic_sampling_options import DynamicSampling

        return DynamicSampling
    if name == "DynamicSamplingTrainer":
        from agentgrpo.training.dynamic_trainer import DynamicSamplingTrainer

        return DynamicSamplingTrainer
    raise AttributeError(f"module 'agentgrpo' has no attribute {name!r}")
