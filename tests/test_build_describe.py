"""Keyframe descriptions, spatial relations and room/floor/building summaries (``scenerag.build.describe``);
LLM summaries run on ``ScriptedChatModel``."""

from __future__ import annotations

import json
from typing import Any

import numpy as np
import pytest

from scenerag.build.datasets import CameraIntrinsics
from scenerag.build.describe import (
    KeyframeView,
    LlmSummarizer,
    ObjectFacts,
    RoomContext,
    TemplateDescriber,
    TemplateSummarizer,
    VlmDescriber,
    color_name,
    infer_room_type,
    room_elongation,
    spatial_relations,
)
from scenerag.llm import LLMError, Message, ScriptedChatModel

K = CameraIntrinsics(256.0, 256.0, 159.5, 119.5, 320, 240)


def _obj(
    uid: int,
    label: str,
    lo: tuple[float, float, float],
    hi: tuple[float, float, float],
    color: str = "white",
    kind: str = "object",
    parent: int | None = None,
) -> ObjectFacts:
    sym = f"E{uid}" if kind == "functional" else f"O{uid}"
    return ObjectFacts(uid, sym, label, kind, color, np.array(lo, float), np.array(hi, float), parent)


def _looking_north() -> np.ndarray:
    """Camera at (1, -3, 1.4) looking along +y (OpenCV axes: x right = +x world)."""
    pose = np.eye(4)
    pose[:3, 0] = (1.0, 0.0, 0.0)
    pose[:3, 1] = (0.0, 0.0, -1.0)
    pose[:3, 2] = (0.0, 1.0, 0.0)
    pose[:3, 3] = (1.0, -3.0, 1.4)
    return pose


def _kitchen() -> list[ObjectFacts]:
    return [
        _obj(1, "table", (0.0, 0.0, 0.0), (1.4, 0.8, 0.75), "oak"),
        _obj(2, "mug", (0.5, 0.3, 0.75), (0.6, 0.4, 0.85), "red"),
        _obj(3, "chair", (1.45, 0.1, 0.0), (1.9, 0.6, 0.9), "black"),
        _obj(4, "mirror", (0.2, 0.1, 1.2), (0.8, 0.13, 1.9), "silver"),
        _obj(5, "oven", (3.0, 2.0, 0.0), (3.6, 2.6, 0.9), "silver"),
        _obj(6, "knob", (3.2, 2.6, 0.8), (3.24, 2.63, 0.84), "black", "functional", parent=5),
    ]


def test_spatial_relations_on_above_next_to_left_of() -> None:
    rels = set(spatial_relations(_kitchen(), _looking_north()))
    assert ("O2", "on", "O1") in rels
    assert ("O4", "above", "O1") in rels
    assert ("O3", "next to", "O1") in rels or ("O1", "next to", "O3") in rels
    assert ("O1", "left of", "O3") in rels  # the table's centre is left of the chair's for this viewer
    assert not any(s == "E6" or t == "E6" for s, _, t in rels)  # elements are not related
    assert not any(r == "next to" and {s, t} == {"O1", "O5"} for s, r, t in rels)  # 2 m apart


def test_template_describer_is_grounded_in_visible_objects() -> None:
    facts = {o.uid: o for o in _kitchen()}
    view = KeyframeView(12, _looking_north(), K, room=0, floor=1, visible=[1, 2, 3, 6])
    text = TemplateDescriber(max_chars=400).describe(view, facts, None)
    assert text.startswith("View on floor 1 facing north.")
    assert "an oak table" in text and "a red mug" in text and "a black chair" in text
    assert "The red mug is on the oak table." in text
    assert "oven" not in text and "mirror" not in text  # not visible
    assert "Parts: a knob." in text
    assert "1.4x0.8x0.8 m" in text
    assert len(text) <= 400
    assert len(TemplateDescriber(max_chars=60).describe(view, facts, None)) <= 60
    empty = TemplateDescriber().describe(KeyframeView(1, _looking_north(), K, 0, 0, []), facts, None)
    assert empty.endswith("No objects are in view.")


def test_room_types_follow_the_objects() -> None:
    def facts(*labels: str) -> list[ObjectFacts]:
        return [_obj(i, name, (0, 0, 0), (1, 1, 1)) for i, name in enumerate(labels)]

    assert infer_room_type(facts("bed", "nightstand", "lamp"), 16, 1.1) == "bedroom"
    assert infer_room_type(facts("toilet", "sink", "towel"), 8, 1.2) == "bathroom"
    assert infer_room_type(facts("oven", "fridge", "table", "chair"), 20, 1.3) == "kitchen"
    assert infer_room_type(facts("table", "chair", "chair", "chair", "chair"), 20, 1.3) == "dining_room"
    assert infer_room_type(facts("painting", "plant"), 24, 7.5) == "corridor"
    assert infer_room_type(facts("stairs", "plant"), 60, 1.8) == "stairwell"
    assert infer_room_type([], 10, 1.0) == "room"
    assert room_elongation(np.array([[0, 0], [10, 0], [10, 2], [0, 2]])) == pytest.approx(5.0)
    rotated = np.array([[0, 0], [3, 3], [2, 4], [-1, 1]], float)
    assert room_elongation(rotated) == pytest.approx(3.0, rel=1e-6)


def test_template_summaries() -> None:
    summarizer = TemplateSummarizer()
    room = RoomContext(3, 0, 18.4, 1.2, _kitchen(), ["View on floor 0 ..."])
    summary = summarizer.summarize_room(room)
    assert summary.room_type == "kitchen"
    assert summary.text.startswith("A kitchen on floor 0 of about 18 m²")
    assert "a red mug" in summary.text and "on the oak table" in summary.text
    assert "Interactive parts: a knob." in summary.text
    floor = summarizer.summarize_floor(
        0, (0.0, 2.8), [("kitchen", summary.text), ("bedroom", "x"), ("bedroom", "y")]
    )
    assert floor == "Floor 0 (z 0.0 to 2.8 m) with 3 rooms: two bedrooms, a kitchen."
    assert summarizer.summarize_building([floor]).startswith("A building with 1 floors.")
    assert summarizer.usage.total_tokens == 0


def test_llm_summaries_use_short_json_prompts() -> None:
    script: list[Any] = [
        {"room_type": "Living Room", "summary": "A  cosy living room\nwith a sofa."},
        {"summary": "Floor 0 holds the living room."},
        {"summary": "A one-floor house."},
    ]
    model = ScriptedChatModel(script)
    summarizer = LlmSummarizer(model, max_tokens=120, max_descriptions=2, max_chars=50)
    descriptions = [f"description number {i} " + "x" * 200 for i in range(5)]
    room = RoomContext(0, 0, 22.0, 1.3, _kitchen(), descriptions)
    summary = summarizer.summarize_room(room)
    assert summary.room_type == "living_room" and summary.text == "A cosy living room with a sofa."
    first = model.calls[0]
    assert first.response_schema is not None and first.response_schema["required"] == ["room_type", "summary"]
    assert first.max_tokens == 120
    prompt = first.messages[-1].content
    assert "description number 0" in prompt and "description number 1" in prompt
    assert "description number 2" not in prompt  # only max_descriptions views
    assert len(prompt) < 600
    assert (
        summarizer.summarize_floor(0, (0.0, 2.8), [("living_room", summary.text)])
        == "Floor 0 holds the living room."
    )
    assert "living room" in model.calls[1].messages[-1].content
    assert summarizer.summarize_building(["Floor 0 holds the living room."]) == "A one-floor house."
    assert summarizer.usage.total_tokens > 0 and model.remaining == 0


def test_llm_summary_errors_surface() -> None:
    model = ScriptedChatModel(["not json at all"])
    with pytest.raises(LLMError):
        LlmSummarizer(model).summarize_room(RoomContext(0, 0, 10.0, 1.0, [], []))
    bad = ScriptedChatModel([json.dumps(["a", "list"])])
    with pytest.raises(LLMError):
        LlmSummarizer(bad).summarize_floor(0, (0.0, 1.0), [])


def test_vlm_describer_lists_the_visible_objects() -> None:
    class Endpoint:
        name = "fake-vlm"

        def __init__(self) -> None:
            self.prompts: list[str] = []

        def ask(self, prompt: str, images: list[np.ndarray], **kwargs: Any) -> tuple[str, Any]:
            self.prompts.append(prompt)
            assert len(images) == 1 and images[0].shape == (240, 320, 3)
            return "  A red mug [O2] stands on\nthe oak table [O1].  ", None

    ep = Endpoint()
    facts = {o.uid: o for o in _kitchen()}
    view = KeyframeView(5, _looking_north(), K, 0, 0, [1, 2])
    text = VlmDescriber(ep).describe(view, facts, np.zeros((240, 320, 3), np.uint8))
    assert text == "A red mug [O2] stands on the oak table [O1]."
    assert "O1: oak table" in ep.prompts[0] and "O2: red mug" in ep.prompts[0] and "O5" not in ep.prompts[0]
    with pytest.raises(LLMError, match="image"):
        VlmDescriber(ep).describe(view, facts, None)


def test_color_names_tolerate_shading() -> None:
    assert color_name((186, 48, 42)) == "red"
    assert color_name((93, 24, 21)) == "red"  # the same red in shadow
    assert color_name((50, 92, 172)) == "blue"
    assert color_name((236, 236, 232)) == "white"
    assert color_name((30, 30, 32)) == "black"


def test_messages_are_plain_chat_turns() -> None:
    # The summarizer only ever sends a system and a user turn.
    model = ScriptedChatModel([{"summary": "ok"}])
    LlmSummarizer(model).summarize_building(["a"])
    assert [m.role for m in model.calls[0].messages] == ["system", "user"]
    assert isinstance(model.calls[0].messages[0], Message)
