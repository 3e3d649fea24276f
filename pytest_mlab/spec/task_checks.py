"""What a Task spec's schema cannot say: limits within sane bounds, tags pytest can select by,
and import names (not pip names) under ``requires.packages``.

Bounds: a count of steps above 1,000,000, a time above 30 days or a size above 16 TiB is a
typo, not a plan; it would only make runs that never end or numbers that overflow reports.
"""

from __future__ import annotations

import re

from pytest_mlab.spec.units import parse_duration, parse_size

# the most of each count a spec may set
COUNT_BOUNDS = {"max_steps": 1_000_000, "pids": 4_194_304, "snapshot_files": 10_000_000,
                "workspace_files": 10_000_000, "workspace_depth": 10_000, "gpus": 64}
MAX_SECONDS = 30 * 86400.0  # the longest limit on time: 30 days
MAX_BYTES = 16 << 40  # the largest limit on bytes: 16 TiB
DURATIONS = ("max_time", "execute_timeout", "timeout")
SIZES = ("output_limit", "memory", "snapshot_bytes", "snapshot_file_size", "disk")

MARK_KEYWORDS = ("and", "or", "not")  # the words of ``-m`` expressions
# markers pytest acts on (a tag 'skip' would skip every item of the task), and names it refuses
PYTEST_MARKERS = ("skip", "skipif", "xfail", "parametrize", "usefixtures", "filterwarnings",
                  "parameterize", "parametrise", "parameterise")

# pip names (normalised: lower case, runs of '-_.' as '-') whose import name differs
PIP_NAMES = {
    "scikit-learn": "sklearn", "scikit-image": "skimage", "pillow": "PIL", "pyyaml": "yaml",
    "opencv-python": "cv2", "opencv-python-headless": "cv2", "opencv-contrib-python": "cv2",
    "beautifulsoup4": "bs4", "python-dateutil": "dateutil", "protobuf": "google.protobuf",
    "pytorch": "torch", "torch-geometric": "torch_geometric", "sentence-transformers": "sentence_transformers",
    "huggingface-hub": "huggingface_hub", "faiss-cpu": "faiss", "faiss-gpu": "faiss", "python-dotenv": "dotenv",
    "tensorflow-gpu": "tensorflow", "pymupdf": "fitz", "msgpack-python": "msgpack",
    "typing-extensions": "typing_extensions",
}


def limit_value(key: str, value: str | int | float) -> float | int:
    """A limit (of ``limits:`` or ``metric.measure:``) as runs use it: seconds, bytes or a count.
    ValueError says what is wrong, for the spec's author."""
    if key in DURATIONS:
        seconds = parse_duration(value)
        if seconds > MAX_SECONDS:
            raise ValueError(f"{value!r} is longer than 30 days, the longest limit pytest-mlab accepts")
        return seconds
    if key in SIZES:
        size = parse_size(value)
        if size > MAX_BYTES:
            raise ValueError(f"{value!r} is more than 16T, the largest limit pytest-mlab accepts")
        return size
    count = int(value)
    if count > COUNT_BOUNDS[key]:
        raise ValueError(f"{value!r} is more than {COUNT_BOUNDS[key]:,}, the most pytest-mlab accepts")
    return count


def tag_problem(tag: str) -> str | None:
    """Why ``tag`` cannot be a pytest marker that ``-m`` selects by; None when it can."""
    if tag in MARK_KEYWORDS:
        return (f"'{tag}' cannot be a tag: -m reads and, or and not as its own words, so no expression "
                f"could select it; rename it (e.g. '{tag}-tasks')")
    if tag in PYTEST_MARKERS:
        return f"'{tag}' cannot be a tag: pytest itself acts on (or refuses) a marker of that name; rename it"
    return None


def package_problem(name: str) -> str | None:
    """Why ``name`` is not an import name (what ``requires.packages`` lists); None when it is one."""
    suggestion = PIP_NAMES.get(re.sub(r"[-_.]+", "-", name).lower())
    if suggestion is not None and suggestion != name:
        return f"'{name}' is a pip name: use the import name '{suggestion}'"
    if not name or not all(part.isidentifier() for part in name.split(".")):
        return (f"'{name}' is not an import name: import names are Python identifiers, dotted "
                f"(e.g. sklearn, google.protobuf); write the name you import, not the one you pip install")
    return None
