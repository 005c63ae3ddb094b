"""The memory ceiling for all of a job's processes together (a memory cgroup, where root can write one)."""

from __future__ import annotations

import os

import pytest

from agentgrpo.sandbox import CRASHED, FAILED, PASSED, Limits, Sandbox, cgroup

PROGRAM = """
import os, time

def touch(mb):
    x = bytearray(mb << 20)
    for i in range(0, len(x), 4096):
        x[i] = 1
    return x

def children(n, mb):
    pids = []
    for _ in range(n):
        pid = os.fork()
        if pid == 0:
            touch(mb)
            os._exit(0)
        pids.append(pid)
    return [os.waitstatus_to_exitcode(os.waitpid(p, 0)[1]) for p in pids]

def parent_biggest(child_mb):
    # as much as RLIMIT_AS leaves this process (its own address space measured, 16 MB to spare): the
    # parent alone always fits, so only the ceiling for all processes together can stop it
    import resource
    with open("/proc/self/status") as fh:
        size_mb = next(int(line.split()[1]) for line in fh if line.startswith("VmSize:")) >> 10
    own_mb = (resource.getrlimit(resource.RLIMIT_AS)[0] >> 20) - size_mb - 16
    r, w = os.pipe()
    pid = os.fork()
    if pid == 0:
        keep = touch(child_mb)
        os.write(w, b"x")
        time.sleep(30)
        os._exit(0)
    os.read(r, 1)
    keep = touch(own_mb)
    return len(keep) >> 20 == own_mb
"""
# ceiling 256 + 16 + 64 = 336 MB: a child of 130 MB and the parent's ~220 MB pass it together, and the
# parent (the bigger) is what the OOM killer takes
LIMITS = Limits(wall_s=20, cpu_s=10, memory_mb=256, scratch_mb=16, max_processes=16)


def _job_cgroups() -> list[str]:
    found = cgroup._own_memory_cgroup()
    if found is None:
        return []
    return [e for e in os.listdir(found[0]) if e.startswith(f"agentgrpo-{os.getpid()}-")]


def _cgroup_of(worker_pid: int) -> str:
    """The job cgroup that holds the worker's template (a child of the worker)."""
    base = cgroup._own_memory_cgroup()[0]
    for name in _job_cgroups():
        with open(os.path.join(base, name, "cgroup.procs")) as fh:
            for pid in fh.read().split():
                try:
                    with open(f"/proc/{pid}/stat") as stat:
                        if int(stat.read().rsplit(")", 1)[1].split()[1]) == worker_pid:
                            return os.path.join(base, name)
                except OSError:
                    continue
    raise AssertionError(f"no job cgroup holds a child of worker {worker_pid}")


@pytest.fixture(scope="module")
def box():
    with Sandbox(workers=1, limits=LIMITS) as sandbox:
        if not sandbox.isolation["memory"].startswith("cgroup"):
            pytest.skip(f"no memory cgroup here: {sandbox.isolation['problems']}")
        path = cgroup._own_memory_cgroup()[0]
        with open("/proc/swaps") as fh:
            swap = len(fh.read().splitlines()) > 1
        if swap and sandbox.isolation["memory"].startswith("cgroup v1") and not os.path.exists(
            os.path.join(path, "memory.memsw.limit_in_bytes")
        ):
            pytest.skip("swap without memsw accounting: the ceiling holds for RAM only and jobs would swap")
        yield sandbox


def test_processes_under_rlimit_as_cannot_together_pass_the_ceiling(box):
    assert box.run(PROGRAM, ["assert children(1, 100) == [0]"]).status == PASSED  # control: under the ceiling
    # four processes of 200 MB each are each under RLIMIT_AS (256 MB) but together past 384 MB
    verdict = box.run(PROGRAM, ["assert children(4, 200) == [0, 0, 0, 0]"])
    assert verdict.status == FAILED, verdict


def test_a_job_killed_for_the_ceiling_says_so(box):
    """Each process stays under RLIMIT_AS by its own measure (the job's baseline address space differs
    between machines: 19 MB here, so a fixed 240 of 256 MB hit RLIMIT_AS first, a MemoryError, 'failed')."""
    assert box.run(PROGRAM, ["assert parent_biggest(0) is True"]).status == PASSED  # control: alone, it fits
    verdict = box.run(PROGRAM, ["assert parent_biggest(130) is True"])
    assert verdict.status == CRASHED, verdict
    assert "memory ceiling" in verdict.reason
    assert box.run(PROGRAM, ["assert children(1, 100) == [0]"]).status == PASSED  # the next job is unaffected


def test_the_job_cannot_reach_its_cgroup(box):
    probe = "import os\ndef look():\n    return sorted(os.listdir('/sys'))"
    assert box.run(probe, ["assert look() == []"]).status == PASSED


def test_job_cgroups_are_removed_with_the_pool_and_a_lost_worker():
    before = set(_job_cgroups())
    with Sandbox(workers=1, limits=LIMITS) as sandbox:
        sandbox.run(PROGRAM, ["assert children(1, 10) == [0]"])
        if not sandbox.isolation["memory"].startswith("cgroup"):
            pytest.skip("no memory cgroup here")
        first = set(_job_cgroups()) - before
        assert len(first) == 1
        os.kill(sandbox.pids()[0], 9)  # the worker is lost: replaced, its cgroup removed
        assert sandbox.run(PROGRAM, ["assert children(1, 10) == [0]"]).status == PASSED
        second = set(_job_cgroups()) - before
        assert len(second) == 1 and second != first
    assert set(_job_cgroups()) - before == set()


def test_without_root_there_is_no_cgroup_and_the_reason_is_given(monkeypatch):
    monkeypatch.setattr(os, "geteuid", lambda: 1000)
    problems: list[str] = []
    assert cgroup.create("agentgrpo-test", problems) is None
    assert "not root" in problems[0] and "RLIMIT_AS" in problems[0]


@pytest.mark.parametrize(
    ("mount_point", "mount_root", "path", "expected"),
    [
        ("/sys/fs/cgroup/memory", "/", "/a/b", "/sys/fs/cgroup/memory/a/b"),
        ("/sys/fs/cgroup/memory", "/docker/x", "/docker/x/y", "/sys/fs/cgroup/memory/y"),
        ("/sys/fs/cgroup", "/", "/", "/sys/fs/cgroup/"),
    ],
)
def test_cgroup_paths_are_found_under_their_mount(mount_point, mount_root, path, expected):
    assert cgroup._join(mount_point, mount_root, path) == expected


def test_the_ceiling_follows_per_call_limits_up_and_down(box):
    ceilings = []
    for memory_mb in (256, 1024, 128, 512):
        limits = Limits(wall_s=20, cpu_s=10, memory_mb=memory_mb, max_processes=16)
        assert box.run(PROGRAM, ["assert children(1, 10) == [0]"], limits=limits).status == PASSED
        path = _cgroup_of(box.pids()[0])
        limit_file = "memory.max" if box.isolation["memory"].startswith("cgroup v2") else "memory.limit_in_bytes"
        with open(os.path.join(path, limit_file)) as fh:
            ceilings.append(int(fh.read()) >> 20)
    assert ceilings == [256 + 64 + 64, 1024 + 64 + 64, 128 + 64 + 64, 512 + 64 + 64]


def test_job_processes_are_what_the_oom_killer_takes_first(box):
    probe = "def adj():\n    with open('/proc/self/oom_score_adj') as fh:\n        return int(fh.read())"
    assert box.run(probe, ["assert adj() == 1000"]).status == PASSED


def test_cgroups_of_a_killed_trainer_are_removed_by_the_next_pool(box):
    pid = os.fork()
    if pid == 0:
        os._exit(0)
    os.waitpid(pid, 0)  # a trainer that is gone
    stale = os.path.join(cgroup._own_memory_cgroup()[0], f"agentgrpo-{pid}-1")
    os.mkdir(stale)
    live = _cgroup_of(box.pids()[0])  # this process's own pool keeps its cgroup
    with Sandbox(workers=1, limits=LIMITS):
        assert not os.path.exists(stale)
        assert os.path.exists(live)
