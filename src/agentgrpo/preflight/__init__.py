"""Preflight: check a run before spending compute.

- `audit` red-teams the rewards with adversarial completions (no model needed);
- `signal` samples the starting model and predicts how many GRPO groups will carry a learning signal;
- `fidelity` checks that the chat template re-renders the sampled tokens and is prefix-preserving.

`agentgrpo audit` and `agentgrpo check` run them; `agentgrpo train` runs both first (see `run_preflight`).
"""
