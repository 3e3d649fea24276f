"""What the original's log folders call tasks and experiments, and what we call them.

A run's folder is ``<experiment>/<task>/<run>/`` (``MLAgentBench/plot.py``, ``get_all_runs_with_log``),
and its ``env_log/<benchmark folder>/`` holds the task's copy; the task may go by its benchmark folder
name or by an older name that plot.py still maps (``print_task_labels``).
"""

from __future__ import annotations

#: The original's names for the paper's tasks (benchmark folders and plot.py's older names) -> ours.
ORIGINAL_TASKS = {
    "cifar10": "cifar10", "cifar10_training": "cifar10",
    "imdb": "imdb",
    "ogbn-arxiv": "ogbn-arxiv",
    "house-price": "house-price", "home-data-for-ml-course": "house-price", "kaggle_training_reg": "house-price",
    "spaceship-titanic": "spaceship-titanic", "kaggle_training_class": "spaceship-titanic",
    "amp-parkinsons-disease-progression-prediction": "parkinsons-disease",
    "fathomnet": "fathomnet", "fathomnet-out-of-sample-detection": "fathomnet",
    "feedback": "feedback", "feedback-prize-english-language-learning": "feedback",
    "identify-contrails": "identify-contrails",
    "google-research-identify-contrails-reduce-global-warming": "identify-contrails",
    "CLRS": "clrs",
    "babylm": "babylm", "BabyLM": "babylm",
    "llama-inference": "llama-inference", "speed-up": "llama-inference",
    "vectorization": "vectorization", "vectorisation": "vectorization",
    "literature-review-tool": "literature-review-tool",
    "bibtex-generation": "bibtex-generation",
}

#: The paper's experiments (plot.py's ``print_labels`` and its filter) -> our (agent, llm).
EXPERIMENTS = {
    "no_retrieval_gpt4": ("research-no-retrieval", "gpt-4"),
    "full_gpt4_long": ("research", "gpt-4"),
    "no_retrieval": ("research-no-retrieval", "claude-v1"),
    "react": ("react", None),
    "sanity_check": ("baseline", None),
}


def task_for(names: list[str], task_map: dict[str, str], known: set[str]) -> str | None:
    """Our task for the first of ``names`` (the run's benchmark folder, then its folder in the path)
    that ``task_map`` (the user's), the original's names or our own catalogue knows."""
    for name in names:
        for candidate in (task_map.get(name), ORIGINAL_TASKS.get(name), name):
            if candidate and candidate in known:
                return candidate
    return None


def agent_for(experiment: str, agent: str | None, llm: str | None) -> tuple[str, str | None]:
    """The (agent, llm) a run is filed under: what the user named (an agent named alone has no
    model), else the paper's experiment's pair, else the experiment's own name."""
    if agent:
        return agent, llm
    known_agent, known_llm = EXPERIMENTS.get(experiment, (experiment or "imported", None))
    return known_agent, llm if llm is not None else known_llm
