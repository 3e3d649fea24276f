"""pytest-mlab: MLAgentBench rebuilt as a pytest plugin."""

import os as _os

# litellm fetches a model price map from the network at import time unless told otherwise;
# the harness must stay offline by default, so set this before anything can import litellm.
_os.environ.setdefault("LITELLM_LOCAL_MODEL_COST_MAP", "True")

__version__ = "0.1.0"
