"""Transcript assembly: fragments → one user and one model turn per exchange; barge-in keeps only
what was played; late, early and interleaved fragments go to the right turn."""

import pytest

from parla.records.turn import Turn
from parla.voice.live.transcript import TranscriptAssembler, spoken_prefix

pytestmark = pytest.mark.tier("fast")


def texts(turns):
    return [(t.role, t.text, t.interrupted) for t in turns]


def test_fragments_make_one_turn_each():
    a = TranscriptAssembler(model_variant="m")
    for piece in [" What is", " the weather", " in Lisbon?"]:
        a.user_text(piece)
    a.model_audio(4800)
    for piece in [" It is", " sunny", " and warm."]:
        a.model_text(piece)
    assert a.complete() == [] and a.holding  # held for late fragments
    turns = a.release()
    assert texts(turns) == [
        ("user", "What is the weather in Lisbon?", False),
        ("model", "It is sunny and warm.", False),
    ]
    assert turns[1].model_variant == "m" and not a.in_progress


def test_late_user_words_join_the_turn_when_the_reply_completes():
    a = TranscriptAssembler()
    a.user_text("Tell me")
    a.model_audio(100)
    a.user_text(" a joke")  # transcription lagging the audio
    a.model_text("Why did the chicken cross the road?")
    a.complete()
    assert texts(a.release())[0] == ("user", "Tell me a joke", False)


def test_interrupted_turn_keeps_the_played_share_and_barge_in_words_start_the_next():
    a = TranscriptAssembler()
    a.user_text("Tell me about Lisbon")
    a.model_audio(10_000)
    a.model_text("Lisbon is the capital of Portugal and sits on seven hills by the river")
    a.user_text("wait, stop")  # heard while the model spoke
    assert a.interrupt(unplayed_bytes=7_000) == []
    turns = a.model_audio(10)  # the next answer starts: the cut turn is final
    assert texts(turns) == [("user", "Tell me about Lisbon", False), ("model", "Lisbon is the capital", True)]
    a.model_text("Sure.")
    a.complete()
    assert texts(a.release()) == [("user", "wait, stop", False), ("model", "Sure.", False)]


def test_turn_complete_without_an_answer_keeps_the_words_waiting():
    a = TranscriptAssembler()
    a.user_text("hello")
    assert a.complete() == [] and a.in_progress and not a.holding
    a.model_text("Hi!")
    a.complete()
    assert texts(a.release()) == [("user", "hello", False), ("model", "Hi!", False)]


def test_nothing_played_stores_no_model_turn():
    a = TranscriptAssembler()
    a.user_text("question")
    a.model_audio(1000)
    a.model_text("An answer nobody heard")
    a.interrupt(unplayed_bytes=1000)
    assert texts(a.release()) == [("user", "question", False)]


def test_flush_closes_an_open_exchange():
    a = TranscriptAssembler()
    a.user_text("are you there")
    a.model_audio(100)
    a.model_text("Yes I")
    a.user_text("hello?")
    assert texts(a.flush()) == [("user", "are you there", False), ("model", "Yes I", True), ("user", "hello?", False)]
    assert a.flush() == [] and not a.in_progress


def test_typed_turn_is_stored_as_the_turn_made_for_it():
    a = TranscriptAssembler()
    typed = Turn.of("user", "typed", source="text")
    assert a.typed(typed) == []
    a.model_text("ok")
    a.complete()
    user, model = a.release()
    assert user == typed and (model.source, model.text) == ("voice", "ok")


def test_a_typed_turn_is_whole_words_waiting_for_an_answer_become_their_own_turn():
    a = TranscriptAssembler()
    first, second = Turn.of("user", "concurrent 0", source="text"), Turn.of("user", "concurrent 1", source="text")
    a.typed(first)
    assert a.typed(second) == [first]  # the model did not answer the first: it is stored unanswered
    a.user_text("hello")  # heard before the answer, after the typed turn: the same user turn
    a.model_text("You said concurrent 1.")
    a.complete()
    user, answer = a.release()
    assert (user.id, user.text, user.source) == (second.id, "concurrent 1 hello", "text")
    assert answer.text == "You said concurrent 1."
    a.user_text("spoken first")
    assert texts(a.typed(second)) == [("user", "spoken first", False)]


def test_spoken_prefix_cuts_at_words():
    text = "one two three four five"
    assert spoken_prefix(text, 0.0) == ""
    assert spoken_prefix(text, 1.0) == text
    assert spoken_prefix(text, 0.5) == "one two"
    assert spoken_prefix(text, 0.05) == ""


def test_a_model_fragment_after_turn_complete_joins_its_turn_and_is_not_speaking():
    a = TranscriptAssembler()
    a.user_text("hello")
    a.model_audio(100)
    a.model_text(" Sure.")
    a.complete()
    a.model_text(" Really.")  # transcription trails turnComplete
    assert not a.model_speaking
    assert texts(a.release()) == [("user", "hello", False), ("model", "Sure. Really.", False)]
    assert not a.in_progress


def test_a_turn_transcribed_only_after_turn_complete_keeps_its_words():
    a = TranscriptAssembler()
    a.user_text("What time is it?")
    a.model_audio(100)
    a.complete()
    a.model_text(" It is")
    a.model_text(" noon.")
    assert texts(a.release()) == [("user", "What time is it?", False), ("model", "It is noon.", False)]


def test_fragments_interleaved_with_the_next_turn_go_to_their_own_turns():
    a = TranscriptAssembler()
    a.user_text("What time is it?")
    a.model_audio(100)
    a.complete()
    a.user_text(" And in Rome?")  # the next question, heard before the last answer's transcript
    a.model_text(" It is noon.")  # late: the next answer has not begun
    assert texts(a.model_audio(100)) == [("user", "What time is it?", False), ("model", "It is noon.", False)]
    a.model_text(" One in the afternoon.")
    a.complete()
    assert texts(a.release()) == [("user", "And in Rome?", False), ("model", "One in the afternoon.", False)]


def test_late_fragments_of_an_interrupted_turn_stay_with_it_and_are_cut_at_what_was_played():
    a = TranscriptAssembler()
    a.user_text("Tell me about Lisbon")
    a.model_audio(10_000)
    a.model_text("Lisbon is the capital")
    a.user_text("stop")
    a.interrupt(unplayed_bytes=5_000)
    a.model_text(" of Portugal and more")  # transcript of audio sent before the cut
    a.complete()  # interrupted, then turnComplete: nothing more to close
    assert texts(a.release()) == [("user", "Tell me about Lisbon", False), ("model", "Lisbon is the capital", True)]
    assert texts(a.flush()) == [("user", "stop", False)]


def test_words_transcribed_after_the_answer_they_got_join_its_exchange():
    a = TranscriptAssembler()
    a.model_audio(100)  # the model answers words not transcribed yet
    a.model_text(" Sunny.")
    a.complete()
    a.user_text(" How is the weather?")
    a.user_text(" Today?")
    assert texts(a.release()) == [("user", "How is the weather? Today?", False), ("model", "Sunny.", False)]
    assert not a.in_progress


def _answer(a: TranscriptAssembler) -> None:
    a.user_text("Tell me about Lisbon")
    a.model_audio(10_000)
    a.model_text("Lisbon is the capital of Portugal and sits on seven hills by the river")


def test_audio_the_floor_dropped_before_interrupted_counts_as_unplayed():
    a = TranscriptAssembler()
    _answer(a)
    assert a.unheard(7_000)  # Parla's barge-in dropped what the speaker held
    a.interrupt(unplayed_bytes=0)  # the service's `interrupted` comes after: nothing left to drop
    assert texts(a.release())[1] == ("model", "Lisbon is the capital", True)


def test_audio_dropped_after_interrupted_cuts_the_held_turn():
    a = TranscriptAssembler()
    _answer(a)
    a.interrupt(unplayed_bytes=0)  # the speaker kept the answer while the sound's words decided
    assert a.unheard(7_000)  # ... and they cut it
    assert texts(a.release())[1] == ("model", "Lisbon is the capital", True)


def test_audio_dropped_from_an_answer_the_service_finished_marks_it_cut():
    a = TranscriptAssembler()
    _answer(a)
    a.complete()
    assert a.unheard(7_000)
    assert texts(a.release())[1] == ("model", "Lisbon is the capital", True)


def test_audio_dropped_from_a_stored_answer_is_reported():
    a = TranscriptAssembler()
    _answer(a)
    a.complete()
    a.release()
    assert not a.unheard(7_000)


def _answered(a: TranscriptAssembler) -> None:
    a.user_text("Tell me a story")
    a.model_audio(10_000)
    a.model_text("Once upon a time a heron counted boats.")
    a.complete()


def test_a_held_exchange_kept_on_disk_is_the_same_turns_as_its_final_version():
    a = TranscriptAssembler()
    _answered(a)
    kept = a.keep_held()
    assert texts(kept) == [
        ("user", "Tell me a story", False),
        ("model", "Once upon a time a heron counted boats.", False),
    ]
    assert a.keep_held() == [] and a.holding  # once; still held
    assert a.released_kept() == []  # not released yet
    a.unheard(5_000)  # the floor cut it halfway while it was held
    final = a.release()
    assert texts(final) == [("user", "Tell me a story", False), ("model", "Once upon a time a", True)]
    assert [t.id for t in final] == [t.id for t in kept]
    assert a.released_kept() == [t.id for t in kept] and a.released_kept() == []


def test_a_held_answer_cut_before_its_first_word_still_settles_the_copy_kept():
    a = TranscriptAssembler()
    _answered(a)
    kept = a.keep_held()
    a.unheard(10_000)  # none of it was heard
    assert texts(a.release()) == [("user", "Tell me a story", False)]
    assert a.released_kept() == [t.id for t in kept]  # the model turn's copy too


def test_an_exchange_released_without_being_kept_settles_nothing():
    a = TranscriptAssembler()
    _answered(a)
    a.release()
    assert a.released_kept() == [] and a.keep_held() == []


def test_a_user_turn_begins_once_per_turn_in_the_order_of_turns():
    began: list[str] = []
    a = TranscriptAssembler(on_user_turn=lambda: began.append("user"))
    a.user_text("Delete")
    a.user_text(" the tax chat")  # the same turn
    assert began == ["user"]
    a.model_audio(100)
    a.user_text(" please")  # a late word of it, while the model answers
    a.model_text("Shall I delete it?")
    a.complete()
    assert began == ["user"]
    a.release()
    a.user_text("Yes")  # the reply: the next turn
    assert began == ["user", "user"]
    a.model_audio(100)
    a.user_text("no wait")  # over the answer, cut off: the turn after
    assert began == ["user", "user"]
    a.interrupt(unplayed_bytes=0)
    assert began == ["user", "user", "user"]
    a.typed(Turn.of("user", "stop", source="text"))
    assert began == ["user", "user", "user", "user"]


def test_words_after_an_answer_to_no_words_begin_a_turn():
    # an answer to a tool's result answered no words: a quick reply to it lands with it
    began: list[str] = []
    a = TranscriptAssembler(on_user_turn=lambda: began.append("user"))
    a.model_audio(100)
    a.model_text("Shall I delete Tax return?")
    a.complete()
    a.user_text("Yes")
    a.user_text(" do it")
    assert began == ["user"]
