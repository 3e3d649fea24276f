# pytest-mlab/runtime:1, the image remote docker hosts run unless a task names its own: its own
# Python, the packages the tasks' starter code, data recipes and graders use, and a shell.
# For hosts that reach an image registry and PyPI; a host that reaches neither imports a tarball
# of the harness's own Python instead (pytest-mlab image tarball / import; docs/docker-images.md).
#
# Build it on (or for) the host, from the repository root, which is the build context:
#   docker -H tcp://HOST:2376 build -f docker/runtime.Dockerfile -t pytest-mlab/runtime:1 .
FROM python:3.11-slim

LABEL pytest-mlab.image=runtime

ENV PIP_NO_CACHE_DIR=1 \
    PIP_DISABLE_PIP_VERSION_CHECK=1 \
    PIP_ROOT_USER_ACTION=ignore

# torch first and pinned, as the README's set-up installs it, here from PyTorch's CPU index so that
# pip cannot resolve the multi-GB CUDA build; the project's extras then find it satisfied.
RUN pip install --index-url https://download.pytorch.org/whl/cpu torch==2.13.0

# The package list is the project's own `tasks` extra (pyproject.toml), not a copy of it.
COPY pyproject.toml README.md /opt/pytest-mlab/
COPY pytest_mlab /opt/pytest-mlab/pytest_mlab
RUN pip install "/opt/pytest-mlab[tasks]"
# the CLRS task's clrs package, without its declared dependencies (the full tensorflow and a 2022
# tfds-nightly); the tasks extra holds what it imports
RUN pip install --no-deps dm-clrs==2.0.0

# The sandbox user (uid 65532, "nonroot"), with its HOME in the /tmp the sandbox mounts. The slim
# image already has /bin/sh, cat, mkdir, rm, ls, env and sleep, and /tmp with mode 1777.
RUN groupadd --gid 65532 nonroot \
    && useradd --uid 65532 --gid 65532 --home-dir /tmp/home --no-create-home --shell /bin/sh nonroot
