"""Model access over OpenAI-compatible chat completions.

The ``openai`` SDK is imported only when a turn first calls a model
(`turnstoned.llm.openai_chat`), never on the daemon's startup path.
"""

from turnstoned.llm.types import ModelError, ModelReply, RawToolCall

__all__ = ["ModelError", "ModelReply", "RawToolCall"]
