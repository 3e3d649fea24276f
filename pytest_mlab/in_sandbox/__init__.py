"""Code that runs inside a run's sandbox, not in the harness: the harness copies or passes each
module's source in. This package is not importable there, so its modules use the standard
library only and import nothing of pytest_mlab; the harness imports them only for their file
and their constants."""
