"""One LLM client over litellm, plus offline providers (scripted, replay, human).

litellm is imported lazily: importing this package never touches the network.
"""

from pytest_mlab.llm.base import (LLM, ROLES, BudgetExhausted, Completion, LLMError, ProviderError, TimeLimitReached,
                                  TokenLimitExceeded)

__all__ = ["LLM", "ROLES", "BudgetExhausted", "Completion", "LLMError", "ProviderError", "TimeLimitReached",
           "TokenLimitExceeded"]
