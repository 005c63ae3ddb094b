"""Launch one run config anywhere: this process, several processes (accelerate), or a Hugging Face Job.

The same config trains on each target; only ``target`` changes. Pure functions build the commands, scripts
and job payloads (`accelerate_cmd`, `bundle`, `hf_jobs`); `hub_io` is the thin layer that talks to the Hub.
"""

TARGETS = ("local", "accelerate", "hf-jobs")
