"""The agent's own Python environment (the task runtime), apart from the harness's.

Agent scripts, starter code and measure steps run with the task runtime's interpreter; graders,
data recipes and the harness itself run with pytest's. The runtime is built by uv from
``requirements.lock`` (resolved from ``requirements.in``: the original MLAgentBench's packages
plus what our starters need) into a folder named after the lock's digest, so a changed lock gets
a new runtime and an unchanged one is built once per machine. :mod:`.choice` says which
interpreter this process's sandboxes use; :mod:`.build` builds the locked one; :mod:`.folders`
says what of an interpreter's installation a sandbox must mount.
"""
