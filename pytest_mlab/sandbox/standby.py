"""The next command's process, started as soon as a command ends and already inside the sandbox's
cgroups when the command comes.

A process that writes itself into a cgroup v1 ``cgroup.procs`` after a pause waits for a kernel
RCU grace period: 6 to 15 ms on a quiet machine, which was most of what a local command cost
beyond the original MLAgentBench's plain subprocess. The sandbox therefore starts the next
command's shell when a command ends: the shell joins the cgroups and sets the limits off the
step's path (while the harness snapshots and the agent thinks), then reads the command line from
its stdin and execs it with stdin from /dev/null, as a freshly started command runs. It is the
sandbox's own child, so waiting for it, reaping it (its CPU count) and killing it are those of
any command. No agent code runs beside a waiting standby: every process in the cgroups is killed
before the next one starts.
"""

from __future__ import annotations

import shlex
import subprocess
from pathlib import Path

_EXIT_UNUSED = 125  # the shell's exit code when its stdin closed before a command came

#: Reads ``N`` and then ``N`` lines, one argument each, from stdin, then execs them.
_READ_AND_EXEC = (
    f"IFS= read -r n || exit {_EXIT_UNUSED}; set --; "
    f'while [ "$n" -gt 0 ]; do IFS= read -r a || exit {_EXIT_UNUSED}; set -- "$@" "$a"; n=$((n - 1)); done; '
    'cd {cwd} && exec "$@" </dev/null'
)


class Standby:
    """A shell in the sandbox's cgroups, waiting on its stdin for the argv it will exec."""

    def __init__(self, proc: subprocess.Popen, environment: dict[str, str]) -> None:  # type: ignore[type-arg]
        self.proc = proc
        self.environment = environment

    @classmethod
    def start(cls, limit_steps: list[str], cwd: Path, environment: dict[str, str]) -> Standby:
        """Start the shell: ``limit_steps`` are the shell commands that join the cgroups and set
        the rlimits (``Limits.shell_steps``)."""
        # cd again once the command comes: the workspace may have been put back in place meanwhile
        script = " && ".join([*limit_steps, f"{{ {_READ_AND_EXEC.format(cwd=shlex.quote(str(cwd)))}; }}"])
        proc = subprocess.Popen(["/bin/sh", "-c", script, "mlab-standby"], cwd=cwd, env=environment,
                                stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                                start_new_session=True, close_fds=True)
        return cls(proc, environment)

    def fits(self, argv: list[str], environment: dict[str, str], stdin: str | None) -> bool:
        """Whether this shell can run the command: the same environment, nothing for its stdin,
        and no argument a line cannot carry."""
        return (stdin is None and environment == self.environment
                and not any("\n" in arg or "\0" in arg for arg in argv))

    def run(self, argv: list[str]) -> subprocess.Popen | None:  # type: ignore[type-arg]
        """Hand the shell the command; its process, or None if the shell is gone (killed between
        commands, say), in which case it has been reaped and the caller starts the command afresh."""
        assert self.proc.stdin is not None
        if self.proc.poll() is not None:  # ended while it waited: nothing to hand over
            self.discard()
            return None
        payload = "".join(f"{line}\n" for line in (str(len(argv)), *argv)).encode("utf-8", "surrogateescape")
        try:
            self.proc.stdin.write(payload)
            self.proc.stdin.close()
        except OSError:  # BrokenPipeError: the shell has ended
            self.discard()
            return None
        return self.proc

    def discard(self) -> None:
        """End an unused shell: closing its stdin makes it exit; kill it if it does not at once."""
        proc = self.proc
        try:
            if proc.stdin is not None:
                proc.stdin.close()
        except OSError:
            pass
        try:
            proc.wait(timeout=0.5)
        except subprocess.TimeoutExpired:
            proc.kill()
            proc.wait()
        for stream in (proc.stdout, proc.stderr):
            if stream is not None:
                stream.close()
