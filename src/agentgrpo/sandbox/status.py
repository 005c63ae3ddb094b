"""The verdict vocabulary (no imports: the worker process loads this, and stays small)."""

PASSED = "passed"  # the program ran and every test passed
FAILED = "failed"  # the program ran; at least one test failed or raised
ERROR = "error"  # the program itself raised (syntax error, exception, exit) before any test ran
TIMEOUT = "timeout"  # wall-clock or CPU limit reached; the process tree was killed
CRASHED = "crashed"  # the process died before reporting (signal such as SIGSEGV, os._exit, killed itself)
OUTPUT_LIMIT = "output_limit"  # stdout or stderr went past the cap; the process tree was killed
INVALID = "invalid"  # the input was not a runnable program/tests (wrong type, empty, too large)
SANDBOX_ERROR = "sandbox_error"  # our side failed (worker lost twice, setup failure); not the program's fault

STATUSES = (PASSED, FAILED, ERROR, TIMEOUT, CRASHED, OUTPUT_LIMIT, INVALID, SANDBOX_ERROR)

# One test's outcome (`Verdict.outcomes`), decided by control flow in the trusted runner: "passed" only when
# the runner completed the test's code without an exception; never derived from any text.
TEST_PASSED = "passed"
TEST_FAILED = "failed"
TEST_NOT_RUN = "not run"
TEST_OUTCOMES = (TEST_PASSED, TEST_FAILED, TEST_NOT_RUN)
