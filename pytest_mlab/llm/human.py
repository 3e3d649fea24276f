"""``human``: you are the LLM. Each prompt is shown in the terminal and your typed answer is the
completion, ended by a line holding only ``.`` (or end of input). The same console answers the
Request Help action when a human is present. Needs the terminal, so it cannot run under xdist.
"""

from __future__ import annotations

import sys
from contextlib import AbstractContextManager, nullcontext
from typing import Any, Callable, TextIO

from pytest_mlab.llm.base import Completion
from pytest_mlab.llm.provider import Request, offline_completion

END = "."


class Console:
    """Prompts and answers on a pair of text streams; ``suspend`` lifts pytest's output capture."""

    def __init__(self, stdin: TextIO | None = None, stdout: TextIO | None = None,
                 suspend: Callable[[], AbstractContextManager[Any]] = nullcontext) -> None:
        self.stdin = stdin
        self.stdout = stdout
        self.suspend = suspend

    def ask(self, heading: str, text: str) -> str:
        """Show ``text`` under ``heading``; return the lines typed up to a lone ``.`` or EOF."""
        with self.suspend():
            stdin, stdout = self.stdin or sys.stdin, self.stdout or sys.stdout  # the real ones once suspended
            write = stdout.write
            write(f"\n===== {heading} =====\n{text.rstrip()}\n")
            write(f"===== type your answer; end it with a line holding only '{END}' =====\n")
            stdout.flush()
            lines = []
            while True:
                line = stdin.readline()
                if not line or line.rstrip("\r\n") == END:
                    break
                lines.append(line.rstrip("\r\n"))
        return "\n".join(lines)

    def help(self, question: str) -> str:
        """The ``human`` callable of the Request Help action."""
        return self.ask("the agent asks for help", question)


class HumanProvider:
    cacheable = False
    billed = False

    def __init__(self, console: Console) -> None:
        self.console = console
        self.calls = 0

    def answer(self, request: Request, errors: list[dict[str, Any]]) -> Completion:
        self.calls += 1
        heading = f"LLM call {self.calls}: role {request.role}" + (f", {request.purpose}" if request.purpose else "")
        if request.stop:
            heading += f" (stop at {', '.join(map(repr, request.stop))})"
        text = self.console.ask(heading, request.prompt)
        for stop in request.stop:  # a model would have stopped there too
            if stop and stop in text:
                text = text[:text.index(stop)]
        return offline_completion(request, text)
