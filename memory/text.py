"""Word-level helpers shared by the offline summarizer and the offline embedder."""

from __future__ import annotations

import re

WORD = re.compile(r"[A-Za-z][A-Za-z'’-]*|\d+(?:[.,:/]\d+)*")

STOPWORDS = frozenset(
    ["a", "about", "above", "after", "again", "against", "all", "also", "am", "an", "and", "any", "are", "aren't", "as", "at", "be", "because", "been", "before", "being", "below", "between", "both", "but", "by", "can", "can't", "could", "did", "didn't", "do", "does", "doesn't", "doing", "don't", "down", "during", "each", "few", "for", "from", "further", "had", "has", "have", "having", "he", "her", "here", "hers", "herself", "him", "himself", "his", "how", "i", "i'd", "i'll", "i'm", "i've", "if", "in", "into", "is", "isn't", "it", "it's", "its", "itself", "just", "let's", "me", "more", "most", "my", "myself", "no", "nor", "not", "now", "of", "off", "on", "once", "only", "or", "other", "ought", "our", "ours", "ourselves", "out", "over", "own", "same", "she", "should", "so", "some", "such", "than", "that", "that's", "the", "their", "theirs", "them", "themselves", "then", "there", "there's", "these", "they", "this", "those", "through", "to", "too", "under", "until", "up", "very", "was", "we", "we're", "were", "what", "when", "where", "which", "while", "who", "whom", "why", "will", "with", "would", "you", "you're", "your", "yours", "yourself", "yes", "okay", "ok", "sure", "great", "thanks", "thank", "really", "maybe", "well", "oh", "like", "get", "got", "go", "going", "know", "think", "want", "need", "one", "also", "lot", "something", "thing", "things", "much", "many", "way", "would", "could", "make", "let", "us", "see", "tell", "said", "say", "good", "nice", "right"]
)

# Words that frame a request to find a chat rather than say what it was about.
FRAMING = frozenset(
    ["chat", "chats", "conversation", "conversations", "talk", "talked", "talking", "discuss", "discussed", "discussing", "discussion", "switch", "back", "open", "resume", "continue", "pick", "please", "earlier", "previous", "last", "time", "remember"]
)


def words(text: str) -> list[str]:
    return [w.lower() for w in WORD.findall(text)]


def content_words(text: str) -> list[str]:
    return [w for w in words(text) if w not in STOPWORDS and len(w) > 2]
