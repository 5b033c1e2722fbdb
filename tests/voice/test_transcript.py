"""Transcript assembly: fragments → one user and one model turn per exchange; barge-in keeps only
what was played; late and early words go to the right turn."""

from voice.transcript import TranscriptAssembler, spoken_prefix


def texts(turns):
    return [(t.role, t.text, t.interrupted) for t in turns]


def test_fragments_make_one_turn_each():
    a = TranscriptAssembler(model_variant="m")
    for piece in [" What is", " the weather", " in Lisbon?"]:
        a.user_text(piece)
    a.model_audio(4800)
    for piece in [" It is", " sunny", " and warm."]:
        a.model_text(piece)
    turns = a.complete()
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
    assert texts(a.complete())[0] == ("user", "Tell me a joke", False)


def test_interrupted_turn_keeps_the_played_share_and_barge_in_words_start_the_next():
    a = TranscriptAssembler()
    a.user_text("Tell me about Lisbon")
    a.model_audio(10_000)
    a.model_text("Lisbon is the capital of Portugal and sits on seven hills by the river")
    a.user_text("wait, stop")  # heard while the model spoke
    turns = a.interrupt(unplayed_bytes=7_000)
    assert texts(turns) == [("user", "Tell me about Lisbon", False), ("model", "Lisbon is the capital", True)]
    a.model_audio(10)
    a.model_text("Sure.")
    assert texts(a.complete()) == [("user", "wait, stop", False), ("model", "Sure.", False)]


def test_turn_complete_without_an_answer_keeps_the_words_waiting():
    a = TranscriptAssembler()
    a.user_text("hello")
    assert a.complete() == [] and a.in_progress
    a.model_text("Hi!")
    assert texts(a.complete()) == [("user", "hello", False), ("model", "Hi!", False)]


def test_nothing_played_stores_no_model_turn():
    a = TranscriptAssembler()
    a.user_text("question")
    a.model_audio(1000)
    a.model_text("An answer nobody heard")
    assert texts(a.interrupt(unplayed_bytes=1000)) == [("user", "question", False)]


def test_flush_closes_an_open_exchange():
    a = TranscriptAssembler()
    a.user_text("are you there")
    a.model_audio(100)
    a.model_text("Yes I")
    a.user_text("hello?")
    assert texts(a.flush()) == [("user", "are you there", False), ("model", "Yes I", True), ("user", "hello?", False)]
    assert a.flush() == [] and not a.in_progress


def test_typed_turn_keeps_its_source():
    a = TranscriptAssembler()
    a.user_text("typed", source="text")
    a.model_text("ok")
    assert [t.source for t in a.complete()] == ["text", "voice"]


def test_spoken_prefix_cuts_at_words():
    text = "one two three four five"
    assert spoken_prefix(text, 0.0) == ""
    assert spoken_prefix(text, 1.0) == text
    assert spoken_prefix(text, 0.5) == "one two"
    assert spoken_prefix(text, 0.05) == ""
