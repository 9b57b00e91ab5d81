"""Pictures with a prompt: sent to a vision model, refused for others, kept with the session."""

from __future__ import annotations

import base64
from collections.abc import Callable
from pathlib import Path

import pytest

from tests.conftest import RecordingSink
from tests.fakes.model_server import ScriptedModel, text
from tests.turnkit import start
from turnstoned import protocol as p
from turnstoned.core.engine import Engine
from turnstoned.core.errors import EngineError

PNG = base64.b64decode(
    "iVBORw0KGgoAAAANSUhEUgAAAAEAAAABCAYAAAAfFcSJAAAADUlEQVR42mP8z8BQDwAEhQGAhKmMIQAAAABJRU5ErkJggg==")


async def test_a_vision_model_gets_the_picture_and_resume_shows_it_again(
        make_engine: Callable[[str], Engine], sink: RecordingSink, model: ScriptedModel,
        tmp_path: Path) -> None:
    engine = make_engine("[model]\nsupports_vision = true\n")
    (tmp_path / "shot.png").write_bytes(PNG)
    model.push(text("a red dot"))
    sid = start(engine, tmp_path)
    engine.start_turn(sid, ["what is this?"], images=[
        p.ImageInput(path="shot.png"),
        p.ImageInput(data=base64.b64encode(PNG).decode(), mime_type="image/png")])
    done = await sink.wait_for("turn/completed", lambda e: True, 20)
    assert done["status"] == "completed"
    content = model.requests[0]["messages"][-1]["content"]
    assert content[0] == {"type": "text", "text": "what is this?"}
    urls = [x["image_url"]["url"] for x in content[1:]]
    assert urls == [f"data:image/png;base64,{base64.b64encode(PNG).decode()}"] * 2
    [item] = [i for i in engine.resume(sid).items() if isinstance(i, p.UserMessageItem)]
    assert item.text == "what is this?" and [x.mime_type for x in item.images] == ["image/png"] * 2
    usage = sink.of("session/usage")[-1]
    assert usage["contextTokens"] < 8_000  # a picture counts as a picture, not its base64


async def test_a_model_without_vision_refuses_pictures_clearly(
        engine: Engine, model: ScriptedModel, tmp_path: Path) -> None:
    sid = start(engine, tmp_path)
    with pytest.raises(EngineError, match="does not take pictures.*supports_vision = true"):
        engine.start_turn(sid, ["look"], images=[p.ImageInput(data=base64.b64encode(PNG).decode())])
    assert model.requests == []


async def test_what_is_not_a_picture_is_refused(
        make_engine: Callable[[str], Engine], model: ScriptedModel, tmp_path: Path) -> None:
    engine = make_engine("[model]\nsupports_vision = true\n")
    sid = start(engine, tmp_path)
    (tmp_path / "notes.txt").write_text("text")
    for image, why in [(p.ImageInput(path="notes.txt"), "not a PNG"),
                       (p.ImageInput(data="%%%"), "not base64"),
                       (p.ImageInput(path=str(Path.home() / ".ssh" / "id_rsa")), "credential"),
                       (p.ImageInput(), "needs data or a path")]:
        with pytest.raises(EngineError, match=why):
            engine.start_turn(sid, ["look"], images=[image])
