"""Batched candidates with the real default model: several replies from one prompt evaluation, each under a
GBNF grammar, greedy first; deterministic whatever ran before."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest

from scenerag.lang.gbnf import Chars, Grammar, one_of, plus, seq
from scenerag.llm import Message, make_chat_model
from scenerag.llm.base import sample_replies
from scenerag.llm.local import LocalChatModel
from test_llm_local import _SKIP_REASON

pytestmark = [pytest.mark.slow, pytest.mark.skipif(_SKIP_REASON is not None, reason=str(_SKIP_REASON))]

SYSTEM = Message.system("You write one Cypher query for the question, on one line. " * 4)


@pytest.fixture(scope="module")
def model() -> Iterator[LocalChatModel]:
    chat = make_chat_model("local", n_ctx=2048)
    assert isinstance(chat, LocalChatModel)
    yield chat


def test_candidates_follow_the_grammar_and_share_one_prompt(model: LocalChatModel) -> None:
    grammar = Grammar(
        {
            "root": seq(
                "MATCH (o:",
                one_of(["Object", "Room"]),
                " {class: '",
                one_of(["seating", "storage"]),
                "'}) RETURN count(o)",
                plus(Chars(" ")),
            )
        }
    )
    messages = [SYSTEM, Message.user("Q: How many chairs are there?")]
    replies = model.sample(messages, n=3, grammar=grammar.text, temperature=0.9, max_tokens=40)
    assert len(replies) == 3
    for r in replies:
        text = r.message.content
        assert grammar.accepts(text) or grammar.accepts(text + " "), text
    first = replies[0].timings
    assert first is not None and first.prompt_tokens > 0  # evaluated once, for all three
    assert all(r.timings is None and r.usage.input_tokens == 0 for r in replies[1:])
    again = model.sample(messages, n=1, grammar=grammar.text, max_tokens=40)
    assert again[0].message.content == replies[0].message.content  # greedy, and the prompt came from cache
    assert again[0].timings is not None and again[0].timings.prompt_tokens == 0


def test_greedy_replies_do_not_depend_on_what_ran_before(
    model: LocalChatModel, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("SCENERAG_CACHE", str(tmp_path))
    ask = [SYSTEM, Message.user("Q: Which room is O12 in?")]
    first = sample_replies(model, ask, n=1, max_tokens=30)[0].message.content
    sample_replies(model, [SYSTEM, Message.user("Q: How many rooms are there?")], n=2, max_tokens=30)
    assert sample_replies(model, ask, n=1, max_tokens=30)[0].message.content == first
    decoder = model._model.decoder
    decoder._prefix_states.clear()  # as a new process: the system turn's state comes from disk
    decoder._cached = []
    assert sample_replies(model, ask, n=1, max_tokens=30)[0].message.content == first
    assert list((tmp_path / "kv").glob("*.seq.bin"))
