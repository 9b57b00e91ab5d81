"""The output guard: what a tool result may hold before the model reads it.

``check`` redacts credentials (``secrets``, which sees through line tags, line numbers,
colour escapes and diff signs) and flags prompt injection and other risky content
(``scan``) with linear patterns under a time budget (``rules``);
``advisory`` words what it found for the model and the editor. Pure: no I/O,
no model. The optional second look (``rater``) is worded and read here too: what a
model is asked about a flagged result, and the advisory after its verdict; the core
makes that side call.
"""

from turnstoned.guard import rater
from turnstoned.guard.rules import Finding
from turnstoned.guard.scan import REDACTION_NOTICE, GuardResult, advisory, check

__all__ = ["REDACTION_NOTICE", "Finding", "GuardResult", "advisory", "check", "rater"]
