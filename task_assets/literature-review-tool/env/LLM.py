"""Large language model calls for the tool you write: ``complete_text(prompt, log_file)``.

The prompt goes to the model named by the environment variable MLAB_TOOL_LLM_MODEL (default
gpt-4o-mini; any litellm model string, with that provider's API key in the environment), and
prompt and answer are appended to ``log_file``. When MLAB_TOOL_LLM_SCRIPT names a YAML file,
the answers come from it instead, with no network: the grader runs your tool this way. Such a
file holds ``rules`` (a list of ``{pattern: REGEX, reply: TEXT}``; the first rule whose pattern
is found in the prompt answers, case-insensitively) and a ``default`` reply.
"""

import os
import re

DEFAULT_MODEL = "gpt-4o-mini"


def complete_text(prompt: str, log_file: str = None, max_tokens: int = 1000, **kwargs) -> str:
    """The model's answer to ``prompt`` (one user message)."""
    script = os.environ.get("MLAB_TOOL_LLM_SCRIPT")
    answer = _scripted(prompt, script) if script else _litellm(prompt, max_tokens, **kwargs)
    for path in (log_file, os.environ.get("MLAB_TOOL_LLM_LOG")):
        if path:
            with open(path, "a", encoding="utf-8") as log:
                log.write(f"===== PROMPT =====\n{prompt}\n===== ANSWER =====\n{answer}\n")
    return answer


def _scripted(prompt: str, script: str) -> str:
    import yaml

    with open(script, encoding="utf-8") as handle:
        responses = yaml.safe_load(handle) or {}
    for rule in responses.get("rules", []):
        if re.search(rule["pattern"], prompt, flags=re.IGNORECASE):
            return str(rule["reply"])
    return str(responses.get("default", ""))


def _litellm(prompt: str, max_tokens: int, **kwargs) -> str:
    os.environ.setdefault("LITELLM_LOCAL_MODEL_COST_MAP", "True")
    try:
        import litellm
    except ImportError:
        raise RuntimeError("no language model can be called from here (litellm is not installed, and there is no "
                           "network or API key); set MLAB_TOOL_LLM_SCRIPT to a YAML file of scripted answers to try "
                           "your tool, as the grader does") from None

    response = litellm.completion(model=os.environ.get("MLAB_TOOL_LLM_MODEL", DEFAULT_MODEL),
                                  messages=[{"role": "user", "content": prompt}], max_tokens=max_tokens, **kwargs)
    return response.choices[0].message.content or ""
