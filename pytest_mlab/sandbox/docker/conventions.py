"""What every container and volume pytest-mlab makes carries, on any daemon, and the user its
commands run as: clean-up finds them by these labels, and the image made for remote hosts
(:mod:`.runtime_tarball`) names the same user and HOME."""

LABEL = "pytest-mlab"  # every container we create has it
OWNER_LABEL = "pytest-mlab.owner"  # "host:pid:start" of the process that created it
RUN_LABEL = "pytest-mlab.run"  # the run id
SANDBOX_UID = 65532  # the "nonroot" user of distroless images; owns nothing on a usual host
HOME = "/tmp/home"
