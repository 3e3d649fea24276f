"""The docker backend: every command of a sandbox runs in a container, on a daemon of this machine
(the workspace bind-mounted, :mod:`.local_daemon`) or of another one (the workspace moved by
archive, :mod:`.remote`).

What the two share is :mod:`.container`. Around it: which daemon a process uses (:mod:`.hosts`,
reached through :mod:`.daemon`), the image a container runs (:mod:`.image`, and for hosts that
reach no registry :mod:`.runtime_tarball`), the GPUs it gets (:mod:`.gpus`), its CPU time
(:mod:`.cpu`), the data volumes of remote hosts (:mod:`.data_volumes`) and the removal of what
killed sessions left (:mod:`.leftovers`).
"""
