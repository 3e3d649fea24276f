"""What every container and volume pytest-mlab makes carries, on any daemon, and the user its
commands run as: clean-up finds them by these labels, and the image made for remote hosts
(:mod:`.runtime_tarball`) names the same user and HOME."""

LABEL = "pytest-mlab"  # every container we create has it
OWNER_LABEL = "pytest-mlab.owner"  # "host:pid:start" of the process that created it
RUN_LABEL = "pytest-mlab.run"  # the run id
#: Epoch seconds until which the owner may still use it. Its owner's pid can be judged only on the
#: owner's machine; past this time, what a machine left that never came back is swept from anywhere.
LEASE_LABEL = "pytest-mlab.lease-until"
LEASE_GRACE = 3600.0  # seconds beyond a run's max_time before its container counts as abandoned
DATA_LEASE = 24 * 3600.0  # seconds a data volume of another machine is kept once no container uses it
SANDBOX_UID = 65532  # the "nonroot" user of distroless images; owns nothing on a usual host
HOME = "/tmp/home"
