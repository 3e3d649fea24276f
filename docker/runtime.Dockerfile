# pytest-mlab/runtime:1, the image remote docker hosts run unless a task names its own: its own
# Python, the agents' packages from the task runtime's lock (what agents' scripts, starters and
# measure steps import; never pytest-mlab or the harness's packages), and a shell.
# For hosts that reach an image registry and PyPI; a host that reaches neither imports a tarball
# of this machine's task runtime instead (pytest-mlab image tarball / import; docs/docker-images.md).
#
# Build it on (or for) the host, from the repository root, which is the build context:
#   docker -H tcp://HOST:2376 build -f docker/runtime.Dockerfile -t pytest-mlab/runtime:1 .
FROM python:3.11-slim

LABEL pytest-mlab.image=runtime

ENV PIP_NO_CACHE_DIR=1 \
    PIP_DISABLE_PIP_VERSION_CHECK=1 \
    PIP_ROOT_USER_ACTION=ignore \
    UV_NO_CACHE=1 \
    PATH=/opt/task-runtime/bin:$PATH

# The agents' environment from the same lock as every other sandbox's (pytest_mlab/task_runtime),
# with the same tool: a virtual environment holding exactly the lock's packages, bytecode compiled,
# torch's CPU build from PyTorch's index. It comes first on PATH, so python3 is its interpreter.
COPY pytest_mlab/task_runtime/requirements.lock /opt/task-runtime.lock
RUN pip install uv \
    && uv venv --python /usr/local/bin/python3 /opt/task-runtime \
    && uv pip sync --python /opt/task-runtime/bin/python --compile-bytecode \
        --extra-index-url https://download.pytorch.org/whl/cpu --index-strategy unsafe-best-match \
        /opt/task-runtime.lock \
    && pip uninstall -y uv

# The sandbox user (uid 65532, "nonroot"), with its HOME in the /tmp the sandbox mounts. The slim
# image already has /bin/sh, cat, mkdir, rm, ls, env and sleep, and /tmp with mode 1777.
RUN groupadd --gid 65532 nonroot \
    && useradd --uid 65532 --gid 65532 --home-dir /tmp/home --no-create-home --shell /bin/sh nonroot
