"""The memory knobs. `daemon.settings.Settings` extends this model so
every knob is also a `PARLA_*` setting; memory code only ever sees this type."""

from __future__ import annotations

from pydantic import BaseModel, ConfigDict, Field, model_validator

from parla.records.reminder import MAX_REMINDER_CHARS

from . import prompts

# Re-embedded vectors the Supabase store writes a request by default (PARLA_SUPABASE_COMMIT_PAGE):
# each written vector also updates an HNSW index, and a request must end within PostgREST's
# statement timeout (8 s for signed-in users); 1,000 vectors of 768 dims overran it on the busy
# test machine (bench.scale_supabase), 250 did not.
SUPABASE_COMMIT_PAGE = 250

# The check of the Supabase HNSW indexes after a build (PARLA_SUPABASE_INDEX_CHECK_*): 40 stored
# vectors an index as queries (4-10 s for the largest index at 5,000 chats on the test machine),
# the top-10 agreement of 0.99, and two builds again at most (a build takes minutes there).
INDEX_CHECK_SAMPLE = 40
INDEX_CHECK_AGREEMENT = 0.99
INDEX_CHECK_REBUILDS = 2


class MemoryConfig(BaseModel):
    # validated as part of Settings, which builds its own validator: this one is built only when
    # the model is made alone (tests, benchmarks), not by every `parla` command at start-up
    model_config = ConfigDict(defer_build=True)

    summary_window_size: int = Field(30, ge=2, description="Unsummarised turns that trigger a compaction.")
    tail: int = Field(12, ge=1, description="Turns kept verbatim after a compaction (never summarised).")
    chunk_summarize_threshold: int = Field(
        6000, ge=100, description="Tokens of summary + unsummarised turns that trigger a compaction."
    )
    summary_token_cap: int = Field(500, ge=50, description="Hard cap on the rolling summary, in tokens.")
    prompt_memory_budget: int = Field(3000, ge=200, description="Tokens the memory block may use in the prompt.")
    chunk_size: int = Field(10, ge=2, description="Messages per chunk summary and fact extraction.")
    meta_every: int = Field(10, ge=2, description="Chunk summaries folded into one meta summary.")
    chunk_summary_token_cap: int = Field(150, ge=20, description="Cap on one chunk summary, in tokens.")
    meta_summary_token_cap: int = Field(400, ge=50, description="Cap on one meta summary, in tokens.")
    context_min_tail_turns: int = Field(
        2, ge=0, description="Tail turns kept when the context is over budget, before facts and summaries are trimmed."
    )
    context_facts_budget: int = Field(800, ge=0, description="Tokens of key facts in the context (newest first).")
    context_important_budget: int = Field(
        600, ge=0, description="Tokens of important old turns quoted in the context (most important first)."
    )
    context_important_min: float = Field(
        7.0, ge=0, le=10, description="Importance (0-10) an old turn needs to be quoted in the context."
    )
    context_profile_budget: int = Field(
        600,
        ge=0,
        description="Tokens of the user's profile (what Parla knows about them from every chat) in every chat's context.",
    )
    profile_auto: bool = Field(
        True,
        description="Add the user's durable statements (who they are, people, places, health, preferences, plans) "
        "to the profile kept across chats without being asked.",
    )
    auto_pins: bool = Field(
        True, description="Pin the user's durable statements (health, family, dates, decisions...) without being asked."
    )
    search_opening_turns: int = Field(
        6, ge=1, description="Opening turns that describe a young chat for search before its first compaction."
    )
    search_min_similarity: float | None = Field(
        None,
        description="Embedding similarity below which a described item (to forget) is not found "
        "(default: the embedder's own).",
    )
    search_min_match: float | None = Field(
        None,
        description="Best match (similarity and words) below which search answers `none` (default: the embedder's own).",
    )
    search_switch_score: float | None = Field(
        None, description="Best match the top chat needs to `switch` rather than ask (default: the embedder's own)."
    )
    search_switch_margin: float | None = Field(
        None, description="Score lead the top chat needs over the next to `switch` (default: the embedder's own)."
    )
    search_window_turns: int = Field(
        2, ge=1, le=10, description="Consecutive raw turns per indexed window of what was said."
    )
    search_words_weight: float | None = Field(
        None,
        ge=0,
        le=1,
        description="Share of a text's match given by the request's words, the rest by its embedding "
        "(default: the embedder's own).",
    )
    search_date_weight: float = Field(
        0.2, ge=0, description="Bonus for chats active on the day a request names (half for a week or month)."
    )
    search_max_candidates: int = Field(3, ge=1, description="Candidates returned when the result is ambiguous.")
    search_embed_timeout_s: float = Field(
        1.0,
        gt=0,
        description="Seconds a search waits for the request's embedding; then it answers by words and titles.",
    )
    search_recency_weight: float = Field(0.03, ge=0, description="Weight of recency in the chat score.")
    search_recency_half_life_days: float = Field(30.0, gt=0, description="Days after which recency counts half.")
    title_min_turns: int = Field(
        4, ge=1, description="Turns a chat needs before it gets its first title (so the title names the topic)."
    )
    title_drift_distance: float | None = Field(
        None,
        ge=0,
        le=2,
        description="Cosine distance between a generated title and the chat's description beyond which the title "
        "is redone (default: the embedder's own).",
    )
    forget_margin: float = Field(
        0.25,
        ge=0,
        description="Similarity lead the best pin or fact needs over the next for `forget` to act without asking.",
    )
    recall_results: int = Field(
        5, ge=1, le=20, description="Things `recall` answers with, fused from meaning and words."
    )
    recall_words_weight: float = Field(
        0.5,
        ge=0,
        description="What `recall` adds to a text's similarity for the request's words it holds "
        "(times its best turn's bm25 relative to the best turn found).",
    )
    recall_date_weight: float = Field(
        0.3,
        ge=0,
        description="Across chats, what `recall` adds to what was said in a chat active on the day, week or month "
        "the request names ('on 8 May', 'last week').",
    )
    recall_neighbour_weight: float = Field(
        0.3,
        ge=0,
        le=1,
        description="Share of the better score of the windows just before and after it that a window of what "
        "was said gains in `recall` (what answers a request often sits beside the turn that names it).",
    )
    recall_span_turns: int = Field(
        4,
        ge=1,
        le=10,
        description="Longest run of consecutive turns one `recall` result holds: results next to each other in a "
        "chat are joined up to it.",
    )
    delete_confirm_s: float = Field(
        300.0,
        gt=0,
        description="Seconds a confirmation (`delete_chat`, an MCP tool that changes things) stays valid after "
        "the user was asked.",
    )
    confirm_answer_wait_s: float = Field(
        2.0,
        ge=0,
        description="Seconds a confirming call waits for the transcript of the user's answer when the call comes "
        "first; with no user turn since the question, nothing is done and the model is told to ask again.",
    )
    compaction_concurrency: int = Field(2, ge=1, description="Chats compacted at once in the background.")
    # The free tier of a flash-lite model allows about 10-15 requests a minute
    # (https://ai.google.dev/gemini-api/docs/rate-limits, per project and model; AI Studio shows yours).
    summary_calls_per_minute: float = Field(
        10.0,
        gt=0,
        description="Gemini calls a minute the background summary queue (a big import) makes at most.",
    )
    summary_lease_s: float = Field(
        300.0,
        gt=0,
        description="Seconds a queued chat being summarised is kept from other workers; after a crash it is "
        "taken again then.",
    )
    import_confirm_calls: int = Field(
        200,
        ge=0,
        description="Gemini calls above which `parla import` asks (or needs --yes) and leaves the summaries to "
        "the background queue; below, it summarises at once.",
    )
    import_offline_now_turns: int = Field(
        2000,
        ge=0,
        description="Turns above which `parla import` with the offline summarizer leaves the summaries to the "
        "daemon's background queue (what was said is searchable at once); below, or with --offline, it "
        "summarises at once.",
    )
    import_max_turn_chars: int = Field(
        1_000_000,
        ge=1000,
        description="Longest turn `parla import` keeps whole, in characters: a longer one keeps its first this many, "
        "with a note (1,000,000 characters are about 250,000 tokens, more than most assistants read in a whole "
        "conversation).",
    )
    import_max_conversation_mb: float = Field(
        64,
        gt=0,
        description="Largest conversation `parla import` reads, in MB (an export's conversation, or a JSONL line): a "
        "bigger one is skipped with its number and the others are imported. It is held in memory while it is read, the "
        "more the shorter its messages (59 MB of 200,000 messages: 670 MB; 62 MB of 638,049 tiny ones: 1.2 GB).",
    )
    import_max_conversation_turns: int = Field(
        200_000,
        ge=100,
        description="Most turns a conversation `parla import` stores may hold (a speaker's run of messages is one "
        "turn): one with more is skipped with its number and the others are imported. Storing, indexing and embedding "
        "a conversation takes about 5 KB a turn at once (200,000 turns: 1.6 GB at the peak).",
    )
    rolling_summary_prompt: str = Field(
        prompts.ROLLING_SUMMARY,
        min_length=1,
        description="Instructions for the Gemini rolling summary (`{cap}` is its token cap).",
    )
    chunk_summary_prompt: str = Field(
        prompts.CHUNK_SUMMARY, min_length=1, description="Instructions for a Gemini chunk summary (`{cap}`: its cap)."
    )
    meta_summary_prompt: str = Field(
        prompts.META_SUMMARY, min_length=1, description="Instructions for a Gemini meta summary (`{cap}`: its cap)."
    )
    facts_prompt: str = Field(
        prompts.FACTS,
        min_length=1,
        description='Instructions for Gemini fact extraction; a reply of only "No facts to record" means none.',
    )
    title_prompt: str = Field(prompts.TITLE, min_length=1, description="Instructions for a Gemini chat title.")
    index_shortlist_min: int = Field(
        300,
        ge=1,
        description="Chats a search of the SQLite store's vector index shortlists by their vectors' signs, at least "
        "(the shortlisted chats' 8-bit vectors are read from disk).",
    )
    index_shortlist_share: float = Field(
        0.0625,
        ge=0,
        le=1,
        description="Share of all the store's chats a search of its vector index shortlists, when more than "
        "index_shortlist_min: a bigger store has more chats alike, any of which may be the best.",
    )
    index_finalists_extra: int = Field(
        10,
        ge=0,
        description="Chats beyond those a search asks for that the vector index ranks by their exact vectors "
        "(read from the store), chosen by their 8-bit vectors from the shortlist, at least.",
    )
    index_finalists_share: float = Field(
        0.03,
        ge=0,
        le=1,
        description="Share of the shortlist the vector index ranks by exact vectors beyond the chats a search asks "
        "for, when more than index_finalists_extra.",
    )
    facts_message_max_chars: int = Field(
        2000,
        ge=200,
        description="Longest message given to fact extraction: a longer one keeps its start and end around a cut.",
    )
    reminder_max_chars: int = Field(
        500,
        ge=20,
        le=MAX_REMINDER_CHARS,
        description="Longest text a reminder is set with (the tools, `parla reminders add`, the inspector): "
        f"500 characters take about 25 s to say; at most {MAX_REMINDER_CHARS}.",
    )

    @model_validator(mode="after")
    def _consistent(self) -> MemoryConfig:
        if self.tail >= self.summary_window_size:
            raise ValueError(
                f"tail ({self.tail}) must be smaller than summary_window_size ({self.summary_window_size}), "
                "or compaction would have nothing to fold"
            )
        if self.summary_token_cap * 2 > self.chunk_summarize_threshold:
            raise ValueError(
                f"summary_token_cap ({self.summary_token_cap}) must be at most half of chunk_summarize_threshold "
                f"({self.chunk_summarize_threshold}), or the summary alone would keep triggering compaction"
            )
        return self
