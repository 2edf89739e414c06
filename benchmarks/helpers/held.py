"""Run a long untimed job (making a 10M-access trace: up to 36 minutes) in shared CPU-lock holds of at most
HOLD seconds, the job stopped (SIGSTOP) between holds, so that a timed run waiting for the exclusive lock gets
in (the machine's lock protocol: shared holds under ~5 minutes).

    python -m benchmarks.helpers.held JOBDIR TAG -- command ...

Each hold is ``/work/locks/srun python -m benchmarks.helpers.held --step ...``; the job's output goes to
JOBDIR/TAG.log, its exit status to JOBDIR/TAG.rc, the times it was stopped to JOBDIR/TAG.holds. A stop
lands anywhere: the traced call it interrupts records the pause in its duration.
"""
from __future__ import annotations

import os
import signal
import subprocess
import sys
import time

HOLD = 230
"""Seconds of one shared hold."""
SRUN = "/work/locks/srun"


def _tree(leader: int) -> list[int]:
    """The job's processes: the leader's session and every descendant of it (mpiexec's proxy and ranks call
    setsid, leaving the session)."""
    parent, out = {}, set()
    for p in os.listdir("/proc"):
        if p.isdigit():
            try:
                with open(f"/proc/{p}/stat") as f:
                    parent[int(p)] = int(f.read().rsplit(")", 1)[1].split()[1])
                if os.getsid(int(p)) == leader:
                    out.add(int(p))
            except (OSError, ValueError, IndexError):
                pass
    grew = True
    while grew:
        grew = False
        for p, pp in parent.items():
            if pp in out and p not in out:
                out.add(p)
                grew = True
    out.discard(os.getpid())
    return sorted(out)


def _signal(leader: int, sig: int) -> None:
    for p in _tree(leader):
        try:
            os.kill(p, sig)
        except OSError:
            pass


def step(jobs: str, tag: str, cmd: list[str]) -> None:
    """One hold: start (with ``cmd``) or continue the job, let it run HOLD seconds at most, stop it."""
    rc, leader_file = os.path.join(jobs, f"{tag}.rc"), os.path.join(jobs, f"{tag}.sid")
    if cmd:
        with open(os.path.join(jobs, f"{tag}.log"), "ab") as log:
            p = subprocess.Popen(["sh", "-c", '"$@"; echo $? > "$0"', rc, *cmd], start_new_session=True,
                                 stdout=log, stderr=subprocess.STDOUT)
        with open(leader_file, "w") as f:
            f.write(str(p.pid))
    with open(leader_file) as f:
        leader = int(f.read())
    _signal(leader, signal.SIGCONT)
    t = time.monotonic()
    while time.monotonic() - t < HOLD:
        if os.path.exists(rc):
            return
        time.sleep(0.5)
    for _ in range(2):  # a process started while the first pass ran
        _signal(leader, signal.SIGSTOP)
    with open(os.path.join(jobs, f"{tag}.holds"), "a") as f:
        f.write(f"stopped {time.strftime('%H:%M:%S')}\n")


def main(argv: list[str]) -> int:
    if argv[0] == "--step":
        step(argv[1], argv[2], argv[3:])
        return 0
    jobs, tag, cmd = argv[0], argv[1], argv[3:]
    os.makedirs(jobs, exist_ok=True)
    first = True
    while not os.path.exists(os.path.join(jobs, f"{tag}.rc")):
        subprocess.run([SRUN, sys.executable, __file__, "--step", jobs, tag] + (cmd if first else []))
        first = False
        time.sleep(1)  # a timed run waiting at the turnstile goes first
    with open(os.path.join(jobs, f"{tag}.rc")) as f:
        return int(f.read().strip() or 1)


if __name__ == "__main__":
    raise SystemExit(main(sys.argv[1:]))
