"""Names of the failure modes the live doctor can stop a run on."""

FAILURE_MODES = ("hacking", "collapse", "length_gaming", "kl_blowup", "stall", "tool_misuse")
