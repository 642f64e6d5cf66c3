"""Run shell commands side by side and report each one whole: ``parallel_runs.py CMD [CMD ...]``.

CI's machine has two cores and one pytest process of this suite keeps about one of them busy (a
kernel compiles on one thread), so the suite's two halves, or the OpenGL and Dawn runs, take half
the wall time when they run at once. Each command's output goes to a log file under
``$PARALLEL_LOGS`` (default ``.logs/``); when all have ended their logs are printed one after the
other with the exit status and seconds of each, and the exit status is that of the first command
that failed (0 when all passed). ``PARALLEL_JOBS=1`` runs them one at a time instead (for a
machine with one core, or to read a run's output as it comes).
"""

from __future__ import annotations

import os
import subprocess
import sys
import time
from pathlib import Path
from typing import IO


def _run_all(commands: list[str], jobs: int, logs: Path) -> list[tuple[str, int, float, Path]]:
    """Run ``commands`` with at most ``jobs`` at once; return (command, status, seconds, log)."""
    logs.mkdir(parents=True, exist_ok=True)
    pending = list(enumerate(commands))
    running: dict[int, tuple[subprocess.Popen[bytes], float, Path, IO[bytes]]] = {}
    done: dict[int, tuple[str, int, float, Path]] = {}
    while pending or running:
        while pending and len(running) < jobs:
            index, command = pending.pop(0)
            log = logs / f"run-{os.getpid()}-{index + 1}.log"
            handle = log.open("wb")
            print(f"[{index + 1}] started: {command}", flush=True)
            process = subprocess.Popen(command, shell=True, stdout=handle, stderr=subprocess.STDOUT)
            running[index] = (process, time.monotonic(), log, handle)
        for index, (process, start, log, handle) in list(running.items()):
            status = process.poll()
            if status is None:
                continue
            handle.close()
            seconds = time.monotonic() - start
            done[index] = (commands[index], status, seconds, log)
            print(f"[{index + 1}] ended with status {status} after {seconds:.0f} s", flush=True)
            del running[index]
        time.sleep(0.5)
    return [done[i] for i in range(len(commands))]


def main(argv: list[str]) -> int:
    """Run the commands in ``argv``; print their logs; return the first failing status or 0."""
    if not argv:
        print(__doc__, file=sys.stderr)
        return 2
    jobs = max(1, int(os.environ.get("PARALLEL_JOBS", "0") or 0) or min(len(argv), os.cpu_count() or 1))
    logs = Path(os.environ.get("PARALLEL_LOGS", ".logs"))
    results = _run_all(argv, jobs, logs)
    first_failure = 0
    for index, (command, status, seconds, log) in enumerate(results):
        print(f"\n===== [{index + 1}] {command}: status {status}, {seconds:.0f} s =====", flush=True)
        sys.stdout.flush()
        with log.open("rb") as handle:
            sys.stdout.buffer.write(handle.read())
        sys.stdout.flush()
        if status and not first_failure:
            first_failure = status
    return first_failure


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
