"""The instructions the Gemini summarizer sends: the defaults of the `*_prompt` settings.

`{cap}` in a prompt is replaced by the token cap of what it asks for. Every prompt asks for an
answer in the conversation's own language (Parla speaks whatever its user speaks), except the
"no facts" answer, which the fact parser recognises and so stays in English."""

from __future__ import annotations

from parla.records.facts import NO_FACTS

_LANGUAGE = "Write in the language of the conversation (the language the user speaks), not in English unless the conversation is."

ROLLING_SUMMARY = f"""You maintain the running summary of a spoken conversation between a user and a voice assistant.
Update the existing summary so that it also covers the new turns. Keep goals, decisions, constraints,
preferences, open questions, names, places, dates and numbers; drop small talk and repetition.
Write plain prose, third person ("The user ..."), at most {{cap}} tokens. {_LANGUAGE}
Answer with the summary only."""

CHUNK_SUMMARY = f"""Summarise this excerpt of a conversation between a user and a voice assistant in at most {{cap}}
tokens of plain prose: what was discussed, decided or left open. {_LANGUAGE} Answer with the summary only."""

FACTS = f"""Extract the specific facts from this conversation excerpt that are worth remembering later.
Extract these kinds of facts:
- first-time events (a first meeting, a first experience)
- specific places, dates, times, names, food, numbers and amounts
- the user's preferences, habits and characteristics
- important promises and decisions
- emotionally significant moments
Skip generic conversation. Write each fact as one plain-text line starting with "- ". No JSON, no
Markdown headings. {_LANGUAGE} If there is nothing worth recording, answer only "{NO_FACTS}", in English."""

META_SUMMARY = f"""These are consecutive summaries of parts of one conversation, oldest first. Merge them into one
overview of at most {{cap}} tokens that keeps the decisions, facts and open threads, in plain prose.
{_LANGUAGE} Answer with the overview only."""

TITLE = f"""Give this conversation a short title (2 to 6 words) naming its topic, as a person would
label a folder. No quotes, no trailing punctuation. {_LANGUAGE} Answer with the title only."""

# Appended to the chunk summary prompt, whatever the setting says: the summarizer reads this line
# back as the range's importance (and judges by the rules when it is missing).
IMPORTANCE_LINE = """Then, on a last line of its own, write "Importance: N" with N from 0 (small talk) to 10 (the
user's health, safety, family or a lasting decision): how much this excerpt matters to the user later."""

# Not a setting: the summarizer parses its answer line by line.
PINS = f"""Find the durable, important statements the user makes about themselves in this conversation
excerpt: health and allergies, family and the people close to them, names, dates that matter to them,
decisions, lasting preferences, codes and numbers they will need again. Skip passing moods, questions,
hypotheticals and what the assistant says. Each turn starts with its number in brackets. Write each
statement as one line:
"- [turn number] importance 0-10 | user or chat | subject | the fact in the third person"
where "user" means a fact about the user that matters in any conversation (who they are, the people in
their life, places, health, preferences, possessions, routines, plans with dates) and "chat" means it
matters only to what this conversation is about; the subject names in English, lower case and in a few
words a thing that holds one value at a time ("home city", "job", "daughter name", "wifi password"), so
that a later statement giving it another value replaces it, or is "-" when the user can have several of
the kind at once (plans, trips, appointments, allergies, likes) or the fact does not change. {_LANGUAGE}
If there is none, answer only "{NO_FACTS}", in English."""

# Not a setting: the summarizer parses its answer line by line. Asked of the statements `PINS` found
# about the user before they enter the profile, each with the user's message it was found in.
ABOUT_USER = """Each numbered statement below was found in a conversation between a user and a voice assistant;
under it is the message of the user it was found in. For each, answer whether it is a lasting fact the
user stated about themselves or their own life: who they are, the people close to them, where they live,
their work, health, preferences, possessions, routines, plans with dates. Answer no when it is what the
assistant or another person said about themselves, a passing mood, a question, a wish or a hypothetical,
or only what this conversation is for. Answer with one line per statement, "[number] yes" or
"[number] no", and nothing else."""
