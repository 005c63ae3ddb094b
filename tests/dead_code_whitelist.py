"""Names `vulture` finds no use of in src/ that are used all the same (tests/test_dead_code.py).

Each group says who uses them. Add a name only with its reason; a name no longer reported must go (the test
says which). vulture matches names, not owners: ``_.name`` marks every definition of ``name`` used.
"""
# ruff: noqa: B018



class _Used:
    """``_.name`` marks ``name`` used for vulture, which reads this file; importing it (pytest's doctest
    collection does) does nothing."""

    def __getattr__(self, name: str) -> None:
        return None


_ = _Used()

# Called by a library, not by our code: transformers' TrainerCallback hooks and TrainerControl flags; what
# tokenizers, argparse, zipfile, inspect read; Python's module __getattr__; TRL's environment protocol
# (`reset(**example)` gets the dataset row) and the environment methods TRL offers the model as tools.
_.on_log
_.on_step_end
_.should_save
_.should_training_stop
_.padding_side
_.pre_tokenizer
_.decoder
_.compress_type
_.external_attr
_.__signature__
_.__getattr__
_.example
_.calculate
_.run_python
_._close_pools  # @atexit.register

# Named in a string: the task registry ("module:ATTR" in tasks/__init__.py), the failure recipes' reward specs
# (demos/failures.py), the Hugging Face job script (launch/hf_jobs.py runs `job_entry.run_job`).
_.HARD_TASK
_.MBPP_TASK
_.HUB_TASK
_.EASY_TASK  # wordle-easy, looked up by name in agentgrpo.tasks._BUILTIN
_.task_with_options
_.efficiency_proxy
_.length_bonus
_.run_job

# API for a user's own TRL script and for callers of the readers (docs/heal.md, docs/doctor.md): what the
# live doctor and the tail report, the doctor's Finding fields (written by to_dict), the heal callback.
_.HealCallback
_.resume_healed
_.planned
_.stopped_by
_.rows_parsed
_.bytes_read
_.records_parsed
_.explained_by
_.first_sign
_.is_failure  # Finding's doctest
_.find_dicts  # the console reader's entry; tests hold it equal to find_dicts_by_line
_.read_preflight  # preflight.json read back (tests/test_preflight_train.py)
_.new_run_dir  # benchmarks/preflight_signal.py
_.run_dir_path  # RunPlan reads like the options it replaced (tests/test_validate_before_load.py)
_.build_offline_file  # rebuilds the shipped BFCL file (docs/tasks.md)
# Documented crash recovery (heal/rollback.py's docstring) that nothing in src/ calls yet: issue 37, item 5.
_.finish_pending

# sandbox/ is being rewritten on another branch: what vulture reports there is left to that work.
_.memory_mb
_.compare_mb  # Limits fields are read by name from the dict the job and the comparison process receive
_.allowed_names  # the allow-list as names: tests/test_sandbox_allowlist.py (docs table), benchmarks/sandbox_syscalls.py
_.running  # training/watchdog.py: the watchdogs armed now, read by tests/conftest.py (none may outlive a test)
_.__path__  # doctor/readers/wandbrun.py: the import system reads a stand-in package's __path__
_.file_size_mb
_.max_processes
_.max_open_files
_.output_bytes
_.value_bytes
_.from_dict
_.CLONE_NEWCGROUP
_.MS_RDONLY
_.MS_REMOUNT
_.PR_SET_DUMPABLE
_.__call__
_.__repr__
_.pids
_.duration_s
