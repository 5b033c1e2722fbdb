"""The Gemini embedder and summarizer through the real google-genai SDK, against the local REST
emulator: request shapes, batching, retries of 429/500, malformed answers."""

from __future__ import annotations

import numpy as np
import pytest

from parla.daemon.memory_services import gemini_client
from parla.daemon.settings import Settings
from parla.kernel.models import DEFAULT_SUMMARY_MODEL
from parla.memory.embedders.gemini import GeminiAvailability, GeminiEmbedder
from parla.memory.errors import ModelError, ModelUnavailable
from parla.memory.summarizers.gemini import GeminiSummarizer
from parla.records.turn import Turn

pytestmark = pytest.mark.tier("fast")


def client(gemini, retries: int = 3):
    settings = Settings(
        gemini_api_key=gemini.api_key, gemini_base_url=gemini.base_url, model_retries=retries, model_retry_delay=0.01
    )
    return gemini_client(settings)


async def test_embeddings_request_shape_and_unit_vectors(gemini):
    embedder = GeminiEmbedder(client(gemini))
    vectors = await embedder.embed(["the Japan trip", "asyncio deadlock"], "query")
    assert vectors.shape == (2, 768) and np.allclose(np.linalg.norm(vectors, axis=1), 1, atol=1e-5)
    (call,) = gemini.calls(":batchEmbedContents")
    assert call.path.endswith("/models/gemini-embedding-001:batchEmbedContents")
    assert call.headers["x-goog-api-key"] == gemini.api_key
    first = call.body["requests"][0]
    assert first["taskType"] == "RETRIEVAL_QUERY" and first["outputDimensionality"] == 768
    assert first["content"]["parts"] == [{"text": "the Japan trip"}]
    await embedder.embed(["doc"], "document")
    assert gemini.calls(":batchEmbedContents")[-1].body["requests"][0]["taskType"] == "RETRIEVAL_DOCUMENT"


async def test_embeddings_are_batched_by_100(gemini):
    vectors = await GeminiEmbedder(client(gemini)).embed([f"text {i}" for i in range(250)], "document")
    assert vectors.shape == (250, 768)
    assert [len(c.body["requests"]) for c in gemini.calls(":batchEmbedContents")] == [100, 100, 50]


async def test_429_and_500_are_retried_by_the_client(gemini):
    gemini.fail_next(429, times=2)
    gemini.fail_next(500)
    vectors = await GeminiEmbedder(client(gemini)).embed(["x"], "document")
    assert vectors.shape == (1, 768) and len(gemini.calls(":batchEmbedContents")) == 4


async def test_persistent_errors_become_a_model_error(gemini):
    gemini.fail_next(503, times=10, message="overloaded")
    with pytest.raises(ModelError, match="503.*overloaded"):
        await GeminiEmbedder(client(gemini, retries=2)).embed(["x"], "document")
    assert len(gemini.calls(":batchEmbedContents")) == 3


async def test_a_bad_key_is_not_retried(gemini):
    settings = Settings(gemini_api_key="wrong", gemini_base_url=gemini.base_url, model_retry_delay=0.01)
    with pytest.raises(ModelError, match="400.*API key not valid"):
        await GeminiEmbedder(gemini_client(settings)).embed(["x"], "document")
    assert len(gemini.requests) == 1


async def test_an_unusable_gemini_is_not_asked_again_until_the_cooldown_ends(gemini):
    clock = [0.0]
    availability = GeminiAvailability(cooldown_s=60.0, clock=lambda: clock[0])
    settings = Settings(gemini_api_key="wrong", gemini_base_url=gemini.base_url, model_retry_delay=0.01)
    summarizer = GeminiSummarizer(gemini_client(settings), "gemini-2.5-flash-lite", availability)
    embedder = GeminiEmbedder(gemini_client(settings), availability=availability)
    with pytest.raises(ModelUnavailable, match="400.*API key not valid.*check GEMINI_API_KEY"):
        await summarizer.title("a chat about bread")
    with pytest.raises(ModelUnavailable, match="not retried for 60 s"):
        await embedder.embed(["x"], "document")  # shares the cooldown: no request
    gemini.drop_next(1)
    clock[0] = 61.0
    with pytest.raises(ModelUnavailable, match="could not reach the API"):
        await summarizer.title("a chat about bread")
    assert len(gemini.requests) == 2
    gemini.fail_next(400, message="Request contains an invalid argument.")
    clock[0] = 200.0
    with pytest.raises(ModelError) as plain:  # a bad request is not "unavailable": no cooldown
        await GeminiEmbedder(client(gemini), availability=availability).embed(["x"], "document")
    assert not isinstance(plain.value, ModelUnavailable)


async def test_a_malformed_embedding_answer_is_a_model_error(gemini):
    gemini.malformed_embeddings = 1
    with pytest.raises(ModelError, match="returned 1 embeddings .* for 2 texts"):
        await GeminiEmbedder(client(gemini)).embed(["a", "b"], "document")


async def test_summarizer_prompts_and_answers(gemini):
    summarizer = GeminiSummarizer(client(gemini), DEFAULT_SUMMARY_MODEL)
    turns = [Turn.of("user", "We fly to Osaka on April 3."), Turn.of("model", "Noted, Osaka on April 3.")]
    gemini.reply_text("The user flies to Osaka on April 3.")
    summary = await summarizer.rolling_summary("The user plans a Japan trip.", turns, 500)
    assert summary == "The user flies to Osaka on April 3."
    call = gemini.calls(":generateContent")[-1]
    assert call.path.endswith("/models/gemini-3.5-flash-lite:generateContent")
    prompt = call.body["contents"][0]["parts"][0]["text"]
    assert "The user plans a Japan trip." in prompt and "User: We fly to Osaka on April 3." in prompt
    assert "at most 500 tokens" in call.body["systemInstruction"]["parts"][0]["text"]

    gemini.reply_text("- Flight to Osaka on April 3\n- Prefers window seats\n")
    assert await summarizer.facts(turns) == ["Flight to Osaka on April 3", "Prefers window seats"]
    gemini.reply_text("No facts to record.")
    assert await summarizer.facts(turns) == []
    gemini.reply_text('"Japan trip planning."\nextra line')
    assert await summarizer.title("...") == "Japan trip planning"
    gemini.reply_text("word " * 400)
    assert len((await summarizer.chunk_summary(turns, 50)).text) <= 200
    # what gemini-3.5-flash-lite accepts: the user's content last, no sampling knobs (ignored or refused)
    for call in gemini.calls(":generateContent"):
        assert [c["role"] for c in call.body["contents"]] == ["user"]
        assert not {"temperature", "topK", "topP", "frequencyPenalty", "presencePenalty"} & set(
            call.body.get("generationConfig") or {}
        )


async def test_chunk_importance_comes_in_the_summarys_call_and_pins_name_their_turn(gemini):
    summarizer = GeminiSummarizer(client(gemini), DEFAULT_SUMMARY_MODEL)
    turns = [
        Turn.of("user", "I'm allergic to penicillin.", seq=41),
        Turn.of("model", "I will keep that in mind.", seq=42),
    ]
    gemini.reply_text("The user mentions a penicillin allergy.\nImportance: 9")
    rated = await summarizer.chunk_summary(turns, 100)
    assert (rated.text, rated.importance) == ("The user mentions a penicillin allergy.", 9.0)
    assert "Importance: N" in gemini.calls(":generateContent")[-1].body["systemInstruction"]["parts"][0]["text"]
    gemini.reply_text("A summary without its importance line.")
    assert (await summarizer.chunk_summary(turns, 100)).importance == 9.5  # the rules judge instead
    gemini.reply_text("- [41] 9 | The user is allergic to penicillin.\n- [7] 8 | a turn not in the excerpt\n- junk")
    (pin,) = await summarizer.pins(turns)
    assert (pin.content, pin.importance, pin.source.seq) == ("The user is allergic to penicillin.", 9.0, 41)
    assert (
        "[41] User: I'm allergic to penicillin."
        in gemini.calls(":generateContent")[-1].body["contents"][0]["parts"][0]["text"]
    )
    gemini.reply_text("No facts to record.")
    assert await summarizer.pins(turns) == []


def system_of(call) -> str:
    return call.body["systemInstruction"]["parts"][0]["text"]


async def test_summaries_facts_and_titles_are_asked_in_the_conversations_language(gemini):
    summarizer = GeminiSummarizer(client(gemini), DEFAULT_SUMMARY_MODEL)
    turns = [Turn.of("user", "Domani porto il cane dal veterinario, sono preoccupata."), Turn.of("model", "Capisco.")]
    gemini.reply_text("L'utente porta il cane dal veterinario domani.")
    await summarizer.rolling_summary("", turns, 300)
    gemini.reply_text("- Domani il cane va dal veterinario\n- L'utente è preoccupata per il cane")
    assert await summarizer.facts(turns) == ["Domani il cane va dal veterinario", "L'utente è preoccupata per il cane"]
    gemini.reply_text("Il cane dal veterinario")
    assert await summarizer.title("L'utente porta il cane dal veterinario") == "Il cane dal veterinario"
    gemini.reply_text("Sintesi.")
    await summarizer.chunk_summary(turns, 100)
    gemini.reply_text("Panoramica.")
    await summarizer.meta_summary(["a", "b"], 200)
    calls = gemini.calls(":generateContent")
    assert len(calls) == 5
    assert all("language of the conversation" in system_of(c) for c in calls)
    facts = system_of(calls[1])
    assert "emotionally significant moments" in facts and "first-time events" in facts and "promises" in facts
    assert '"No facts to record", in English' in facts


async def test_the_prompts_are_settings_and_long_messages_are_cut_before_fact_extraction(gemini):
    settings = Settings(
        gemini_api_key=gemini.api_key,
        gemini_base_url=gemini.base_url,
        facts_prompt="Elenca i fatti {in italiano}.",
        chunk_summary_prompt="Riassumi in {cap} token.",
        facts_message_max_chars=300,
    )
    summarizer = GeminiSummarizer(gemini_client(settings), DEFAULT_SUMMARY_MODEL, config=settings)
    long = "Inizio del documento. " + "riempitivo " * 500 + "Conclusione: il contratto scade il 3 marzo."
    gemini.reply_text("- Il contratto scade il 3 marzo")
    await summarizer.facts([Turn.of("user", long)])
    gemini.reply_text("Sintesi.")
    await summarizer.chunk_summary([Turn.of("user", long)], 120)
    facts, chunk = gemini.calls(":generateContent")
    assert system_of(facts) == "Elenca i fatti {in italiano}."
    assert system_of(chunk).startswith("Riassumi in 120 token.\n") and "Importance: N" in system_of(chunk)
    sent = facts.body["contents"][0]["parts"][0]["text"]
    assert len(sent) <= 300 + len(" […] ")
    assert sent.startswith("User: Inizio del documento.") and sent.endswith("il contratto scade il 3 marzo.")
    assert " […] " in sent
    assert "Conclusione" in chunk.body["contents"][0]["parts"][0]["text"] and len(
        chunk.body["contents"][0]["parts"][0]["text"]
    ) > len(long)  # only fact extraction cuts


async def test_a_retired_summary_model_names_the_setting_and_the_replacement(gemini):
    summarizer = GeminiSummarizer(client(gemini), "gemini-2.0-flash")
    with pytest.raises(ModelError) as failed:
        await summarizer.title("A trip to Osaka")
    assert "models/gemini-2.0-flash is not found for API version" in str(failed.value)
    assert "set PARLA_SUMMARY_MODEL=gemini-3.5-flash-lite" in str(failed.value)


async def test_a_retired_embedding_model_names_the_setting_and_the_replacement(gemini):
    with pytest.raises(ModelError, match="set PARLA_EMBEDDING_MODEL=gemini-embedding-001"):
        await GeminiEmbedder(client(gemini), "text-embedding-004").embed(["a"], "query")


async def test_the_emulator_refuses_what_gemini_3_5_flash_lite_refuses(gemini):
    from google.genai import errors, types

    api = client(gemini, retries=0).aio.models
    ending_on_model = [
        types.Content(role="user", parts=[types.Part(text="Hi")]),
        types.Content(role="model", parts=[types.Part(text="Hello")]),
    ]
    with pytest.raises(errors.ClientError, match="last content has role model"):
        await api.generate_content(model=DEFAULT_SUMMARY_MODEL, contents=ending_on_model)
    with pytest.raises(errors.ClientError, match="frequencyPenalty"):
        await api.generate_content(
            model=DEFAULT_SUMMARY_MODEL, contents="Hi", config=types.GenerateContentConfig(frequency_penalty=0.5)
        )
    with pytest.raises(errors.ClientError, match="not supported for generateContent"):
        await api.generate_content(model="gemini-3.8-live", contents="Hi")


async def test_summarizer_empty_or_blocked_answer_is_a_model_error(gemini):
    summarizer = GeminiSummarizer(client(gemini), DEFAULT_SUMMARY_MODEL)
    gemini.reply_raw({"candidates": [{"content": {"role": "model", "parts": []}, "finishReason": "SAFETY"}]})
    with pytest.raises(ModelError, match="SAFETY"):
        await summarizer.chunk_summary([Turn.of("user", "x")], 100)
    gemini.reply_raw({"promptFeedback": {"blockReason": "OTHER"}})
    with pytest.raises(ModelError, match="no candidates"):
        await summarizer.meta_summary(["a", "b"], 100)
