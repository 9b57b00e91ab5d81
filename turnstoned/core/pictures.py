"""Pictures sent with a prompt: checked and made into the content parts a vision model reads."""

from __future__ import annotations

import base64
import binascii
import os
from pathlib import Path
from typing import Any

from turnstoned import protocol as p
from turnstoned.core.errors import EngineError
from turnstoned.places import is_credential

MAX_BYTES = 4 << 20
TYPES = {".png": "image/png", ".jpg": "image/jpeg", ".jpeg": "image/jpeg", ".gif": "image/gif",
         ".webp": "image/webp"}
_MAGIC = ((b"\x89PNG\r\n\x1a\n", "image/png"), (b"\xff\xd8\xff", "image/jpeg"),
          (b"GIF8", "image/gif"), (b"RIFF", "image/webp"))


def _bad(message: str) -> EngineError:
    return EngineError(p.ErrorCode.INVALID_PARAMS, message)


def part(image: p.ImageInput, cwd: Path) -> dict[str, Any]:
    """``{"type": "image_url", ...}`` with the picture as a data URL."""
    if image.path:
        path = Path(image.path) if os.path.isabs(image.path) else cwd / image.path
        real = os.path.realpath(path)
        if is_credential(real):
            raise _bad(f"{image.path} is in a credential store: not sent")
        try:
            if os.path.getsize(real) > MAX_BYTES:
                raise _bad(f"{image.path} is larger than 4 MB")
            data = Path(real).read_bytes()
        except OSError as exc:
            raise _bad(f"{image.path} cannot be read: {exc.strerror}") from exc
    elif image.data:
        if len(image.data) > MAX_BYTES * 4 // 3 + 4:
            raise _bad("the picture is larger than 4 MB")
        try:
            data = base64.b64decode(image.data, validate=True)
        except (binascii.Error, ValueError) as exc:
            raise _bad(f"the picture's data is not base64: {exc}") from exc
    else:
        raise _bad("an image item needs data or a path")
    mime = next((m for magic, m in _MAGIC if data.startswith(magic)), None)
    if mime is None:
        raise _bad("the picture is not a PNG, JPEG, GIF or WebP image")
    encoded = base64.b64encode(data).decode("ascii")
    return {"type": "image_url", "image_url": {"url": f"data:{mime};base64,{encoded}"}}
