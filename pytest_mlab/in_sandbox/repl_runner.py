"""The Python REPL action's runner (:mod:`pytest_mlab.actions.repl`), run inside the sandbox as
``python -c SOURCE``, with the new command and the run's earlier successful ones as JSON on its
standard input: it replays the earlier ones with their output discarded, then runs the new one the
way the interactive interpreter does (the value of a final expression is printed)."""

import ast
import contextlib
import io
import json
import sys
import traceback

#: Exit status when the new command raised: it is not kept for later commands.
FAILED = 3

if __name__ == "__main__":
    payload = json.loads(sys.stdin.read())
    namespace = {"__name__": "__main__"}
    for earlier in payload["history"]:
        with contextlib.redirect_stdout(io.StringIO()), contextlib.redirect_stderr(io.StringIO()):
            try:
                exec(compile(earlier, "<earlier command>", "exec"), namespace)
            except BaseException:
                pass
    try:
        tree = ast.parse(payload["command"], "<command>")
        last = tree.body[-1] if tree.body else None
        if isinstance(last, ast.Expr):
            tree.body.pop()
            exec(compile(tree, "<command>", "exec"), namespace)
            value = eval(compile(ast.Expression(last.value), "<command>", "eval"), namespace)
            if value is not None:
                print(repr(value))
        else:
            exec(compile(tree, "<command>", "exec"), namespace)
    except SystemExit:
        pass
    except BaseException:
        traceback.print_exc()
        sys.stdout.flush()
        sys.exit(FAILED)
