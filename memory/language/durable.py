"""A general reading of durable first-person statements, for what the worded rules of
`memory.language.importance` do not name: "I drive a green Skoda", "our dog's name is Pepper", "I'm a
plumber", "I love folk music", "I grew up in Manhattan", "I can't take ibuprofen".

It reads one clause (`memory.language.text.clauses`: a question around it is already split off) as
a short walk over its words: what opens it, who it is about, and what is said of them. A clause
counts when it is about the user (I or we, or what is theirs: "my daughter", "our dog", "my
favourite band") and says how they are or live, not how the moment is:
- who they are: "I'm a nurse", "I'm 34", "I'm from Leeds", "I'm vegan", "I'm not very good at chess",
  "I'm studying law";
- what they have, like or do as a habit: "I have three dogs", "I love rap music", "I work nights",
  "I go to church every week";
- what happened to them for good: "I grew up on a farm", "I was born in May", "I just moved here from
  Germany", "I've never been out of Ohio", "I've been teaching for ten years";
- what they can or cannot do, and what they aim at: "I can speak Greek", "I can't eat gluten",
  "I want to become a lawyer";
- what is theirs: "my favourite colour is red", "my cat is fourteen", "my dad was a miner".
Nothing of the moment (today, right now, tired, glad, sure), no opinion or courtesy (I think, I hope,
I agree, I'm sorry), nothing about "you", no object that points back at the talk ("I love that",
"I've seen it"), no wish or hypothetical, and not a fact the user only agrees to ("me too", "I love
dogs too": what the other speaker said of themselves). Each test is a set lookup on the next word,
so reading a clause is linear in its length. English only, like the rules.
"""

from __future__ import annotations

import re
from collections.abc import Sequence

from parla.kernel.patterns import lazy_pattern

from . import durable_words as vocabulary
from .text import words

_MOMENT = lazy_pattern(
    # a bracketed aside is a note in a transcript ("[laughs]", "[name]"), not what was said
    r"\[|\b(?:today|tonight|this (?:morning|afternoon|evening|week)|right now|just now|at the moment|last night|"
    r"yesterday|earlier|later today|tomorrow|lol|haha)\b"
    # an amount of money is what a purchase or a budget is about now, not who the user is
    r"|\d\s*(?:euros?|dollars?|pounds?|eur|usd|gbp|bucks)\b|[$€£]\s*\d",
    re.IGNORECASE,
)
_DATE = lazy_pattern(
    r"\d|\b(?:january|february|march|april|may|june|july|august|september|october|november|december|"
    r"mondays?|tuesdays?|wednesdays?|thursdays?|fridays?|saturdays?|sundays?|next (?:week|month|year)|"
    r"(?:this|next) (?:spring|summer|autumn|fall|winter)|next \w+day)\b",
    re.IGNORECASE,
)
# a capitalised word inside the clause: a place or a person ("moving to Valencia")
_NAME = lazy_pattern(r"(?<=[\w,] )(?!I\b)[A-Z][a-z]+")
# the gaps are bounded, so a long sentence with many of these words is read in linear time
_CODE = lazy_pattern(
    r"\b(?:code|password|passcode|pin|combination)\b[^.?!]{0,60}?\b(?:is|=|:) ?[^\s\d]{0,20}\d", re.IGNORECASE
)


def is_durable(clause: str) -> bool:
    """Whether a clause of the user's states something lasting about them (see the module)."""
    text = clause.replace("\u2019", "'")
    if _CODE().search(text):
        return True  # a code or password is the user's to keep, whoever's voice says it
    said = words(text)
    return stands_alone(said) and not _MOMENT().search(text) and _reads(said, text)


def stands_alone(said: Sequence[str]) -> bool:
    """Whether the words of a clause say something on their own: not to "you", not agreeing with
    what the other speaker said ("me too", "I love dogs too"), and not about someone or something
    only the conversation names ("I love his symphonies", "I'm not very good at it")."""
    end = said[:-1] if said and said[-1] in vocabulary.LINKING else said  # "I love dogs too, and"
    if not end or end[-1] in vocabulary.ECHO or end[-2:] == ["as", "well"] or said[:2] == ["me", "too"]:
        return False
    return not any(w in vocabulary.SECOND_PERSON or w in vocabulary.POINTING_BACK for w in said)


def _reads(said: Sequence[str], text: str) -> bool:
    i = 0
    while i < len(said) and said[i] in vocabulary.OPENERS:
        i += 1
    if i == len(said):
        return False
    first = said[i]
    if first in ("my", "our"):
        return _belonging(said, i + 1, text)
    if first in vocabulary.BE_CONTRACTED:
        return _being(said, _past_adverbs(said, i + 1), text)
    if first in vocabulary.HAVE_CONTRACTED:
        return _perfect(said, _past_adverbs(said, i + 1))
    if first not in ("i", "we") or (first == "we" and _next(said, i + 1) in ("all", "both")):
        return False  # "we all make mistakes" is about everyone
    j = _past_adverbs(said, i + 1)
    if j == len(said):
        return False
    verb = said[j]
    if verb in ("was", "were"):
        return _was(said, _past_adverbs(said, j + 1))
    if verb in vocabulary.BE:
        return _being(said, _past_adverbs(said, j + 1), text)
    if verb in ("have", "has"):
        return (
            _perfect(said, j + 1)
            if _next(said, j + 1) in ("been", "never", "always", "lived", "worked")
            else (_having(said, j + 1))
        )
    if verb in ("don't", "dont", "do", "didn't", "didnt", "never"):
        return _negated(said, _past_adverbs(said, j + 1), text)
    return _acting(said, j, text)


def _next(said: Sequence[str], j: int) -> str:
    return said[j] if j < len(said) else ""


def _past_adverbs(said: Sequence[str], j: int) -> int:
    while j < len(said) and said[j] in vocabulary.ADVERBS and said[j] != "never":
        j += 1
    return j


def _something(said: Sequence[str], j: int) -> bool:
    """Whether what follows position `j` names something: not "it", "that", "you" or nothing, and
    not only "a lot", "time" or "two" ("I spend time with my family" names the family)."""
    while j < len(said) and (said[j] in vocabulary.DETERMINERS or said[j] in vocabulary.NUMBERS or said[j].isdigit()):
        j += 1
    if j == len(said) or said[j] in vocabulary.DEICTIC:
        return False
    if said[j] not in vocabulary.VAGUE:
        return True
    return any(
        w not in vocabulary.DETERMINERS
        and w not in vocabulary.VAGUE
        and w not in vocabulary.DEICTIC
        and w not in vocabulary.LINKING
        for w in said[j + 1 :]
    )


def _being(said: Sequence[str], j: int, text: str) -> bool:
    """After "I'm" or "we are": who the user is, not how they are now."""
    if j < len(said) and said[j] in ("not", "never"):
        j = _past_adverbs(said, j + 1)
    word = _next(said, j)
    if not word:
        return False
    if word in ("a", "an", "the"):
        # "I'm a nurse", "I'm a big fan of jazz"; not "I'm a bit tired", "I'm a little nervous"
        rest = said[j + 1 : j + 3]
        return (
            bool(rest)
            and rest[0] not in ("bit", "lot")
            and not (rest[0] == "little" and len(rest) > 1 and rest[1] in vocabulary.MOODS)
            and _something(said, j + 1)
        )
    if word.isdigit() or word in vocabulary.NUMBERS:
        return True  # an age: "I'm 34", "I'm thirty"
    if word in ("in", "on"):
        return any(w in vocabulary.PLACES_OF_LIFE for w in said[j + 1 : j + 5])
    if word == "ex" or word.startswith("ex-"):
        return True  # "I'm ex military", "I'm an ex-smoker"
    if word in vocabulary.STATES:
        need = vocabulary.STATE_NEEDS.get(word)
        return need is None or _next(said, j + 1) in need
    if word in vocabulary.LASTING_ING:
        return _something(said, j + 1) or word in ("retiring", "expecting", "volunteering", "homeschooling")
    if word == "getting" and _next(said, j + 1) in ("married", "engaged", "divorced"):
        return True
    if word == "looking" and _next(said, j + 1) == "for":  # "I'm looking for a new job"
        return any(w in vocabulary.SOUGHT for w in said[j + 2 : j + 5])
    if word in vocabulary.HOPING and _next(said, j + 1) in ("on", "of"):  # "I'm planning on going to college"
        return _next(said, j + 2).endswith("ing") and _something(said, j + 3)
    if word == "going" and _next(said, j + 1) == "to":
        return _next(said, j + 2) in ("be", "become", "graduate", "retire", "marry", "study", "college", "university")
    if word in vocabulary.PLAN_ING:  # a plan says when, or where to
        return bool(_DATE().search(text) or _NAME().search(text)) and _something(said, j + 1)
    if word in vocabulary.HOPING and _next(said, j + 1) == "to":
        return _next(said, j + 2) in vocabulary.AIMS and _something(said, j + 3)
    return word in ("married", "engaged", "divorced") or (word.endswith("ist") and len(word) > 5)


def _having(said: Sequence[str], j: int) -> bool:
    """After "I have": what the user has, not "I have to go" or "I have a question"."""
    j = _past_adverbs(said, j)
    word = _next(said, j)
    if word in ("got", "gotten"):
        word = _next(said, j + 1)
        j += 1
    if not word or word in ("to", "no", "not", "been", "had", "fun") or word in vocabulary.DEICTIC:
        return False  # "I have not." answers the other speaker and says nothing of its own
    following = said[j : j + 4]
    if any(w in vocabulary.PASSING for w in following):
        return False  # "I have a headache", "I have a meeting"
    if any(
        w in ("question", "questions", "idea", "feeling", "clue", "time", "day", "chance", "look") for w in following
    ):
        return False
    return _something(said, j)


def _perfect(said: Sequence[str], j: int) -> bool:
    """After "I've": what has been so for a while, or never ("I've never been out of Ohio")."""
    j = _past_adverbs(said, j)
    word = _next(said, j)
    if word == "never":
        j = _past_adverbs(said, j + 1)
        word = _next(said, j)
        # not what the other speaker just told of: "I've never met a bee farmer before"
        if not word or word in vocabulary.OPINION or word in ("seen", "thought", "met") or said[-1] == "before":
            return False
        return _something(said, j + 1) and not (word == "been" and _next(said, j + 1) in ("there", "better"))
    if word == "been":
        after = _next(said, j + 1)
        if after in ("to",):
            return _something(said, j + 2)
        if after.endswith("ing") and after not in (
            "thinking",
            "wondering",
            "feeling",
            "doing",
            "trying",
            "going",
            "reading",
            "watching",
            "looking",
            "talking",
            "getting",
        ):
            return _something(said, j + 2) and _for_a_while(said)
        if after in ("a", "an"):
            return _something(said, j + 2) and _for_a_while(said)
        if after in vocabulary.STATES:
            return _for_a_while(said)
        return after in ("married", "retired", "divorced", "vegan", "vegetarian", "sober")
    if word in ("always",):
        return _next(said, j + 1) in ("wanted", "loved", "been", "liked", "dreamed", "lived", "worked") and (
            _something(said, j + 2)
        )
    if word in ("got", "gotten"):
        return _having(said, j)
    if word in ("lived", "worked", "played", "studied", "taught", "owned", "known"):
        return _something(said, j + 1) and _for_a_while(said)
    if word in ("visited", "traveled", "travelled", "climbed", "won", "competed", "published", "performed", "run"):
        return _something(said, j + 1)
    return False


def _for_a_while(said: Sequence[str]) -> bool:
    # "since 2010", "since I was five"; not "ever since", which says since what no more
    return any(
        w in vocabulary.WHILE and not (w == "since" and (said[k - 1] == "ever" or k == len(said) - 1))
        for k, w in enumerate(said)
    )


def _negated(said: Sequence[str], j: int, text: str) -> bool:
    """After "I don't": a habit or a possession the user lacks ("I don't drink alcohol")."""
    word = _next(said, j)
    if word in ("have", "own"):
        return _having(said, j + 1)
    if word in vocabulary.LIKING:
        return _liking(said, j + 1, text)
    return word in vocabulary.HABITS and _something(said, j + 1)


def _liking(said: Sequence[str], j: int, text: str) -> bool:
    """The object of "love", "like", "hate": something, not the talk ("I love that", "I love the
    original trilogy")."""
    word = _next(said, j)
    if not word or word in vocabulary.DEICTIC:
        return False
    if word == "to":
        verb = _next(said, j + 1)
        if not verb or verb in vocabulary.COURTESY or verb in vocabulary.DEICTIC:
            return False
        k = j + 2
        while k < len(said) and said[k] in ("on", "to", "in", "at", "into", "with"):
            k += 1
        if _next(said, k) == "the":  # "I love to go to the beach", not "... on the rides"
            return _known(said, k + 1, text)
        return j + 2 == len(said) or _something(said, j + 2)
    if word.endswith("ing") and _next(said, j + 1) == "the":  # "I love watching the ..."
        j += 1
        word = "the"
    if word in ("the", "a", "an") and _next(said, j + 1) in vocabulary.ASPECTS:
        return _next(said, j + 2) == "of" and _something(said, j + 3)  # "the feeling of the wind"
    if word == "the":
        return _known(said, j + 1, text)
    return _something(said, j)


def _known(said: Sequence[str], j: int, text: str) -> bool:
    """Whether "the ..." names something without the conversation: a name ("the Rolling Stones"),
    what everyone knows as "the" ("the beach", "the piano"), or says of what ("the smell of rain")."""
    word = _next(said, j)
    if word in vocabulary.KNOWN_AS_THE or "of" in said[j : j + 4]:
        return True
    return bool(word) and any(w.casefold() == word for w in _NAME().findall(text))


def _acting(said: Sequence[str], j: int, text: str) -> bool:
    """After "I" or "we" and a verb: how the user lives, or what happened to them for good."""
    verb = said[j]
    if verb == "see":  # "I see the Stones every year"; "I see" alone agrees
        return _something(said, j + 1) and any(w in vocabulary.HABIT_MARKS for w in said)
    if verb in vocabulary.OPINION or verb in ("would", "will", "should", "might", "may", "must", "need", "'d", "'ll"):
        return False
    if verb in vocabulary.LIKING:
        return _liking(said, j + 1, text)
    if verb in vocabulary.ABLE:
        if said[j - 1] != "i":
            return False  # "we can start now" is a proposal, not a skill
        k = _past_adverbs(said, j + 1)
        ability = _next(said, k)
        return bool(ability) and ability not in vocabulary.NOT_ABILITY and _something(said, k + 1)
    if verb in vocabulary.WANTING:
        if _next(said, j + 1) == "of":  # "I dream of opening a bakery"
            return _something(said, j + 2)
        return _next(said, j + 1) == "to" and _next(said, j + 2) in vocabulary.AIMS and _something(said, j + 3)
    if verb in vocabulary.HABITS:
        return _something(said, j + 1)
    if verb == "used" and _next(said, j + 1) == "to":
        return bool(_next(said, j + 2)) and _something(said, j + 3)
    if verb in vocabulary.LIFE_EVENTS:
        need = vocabulary.EVENT_NEEDS.get(verb)
        if need is not None and _next(said, j + 1) not in need:
            return False
        if verb == "had" and _next(said, j + 1) in ("a", "an"):
            return _next(said, j + 2) in vocabulary.HAD_FOR_GOOD  # "I had a stroke", not "I had a great time"
        return _something(said, j + 1)
    # any other verb in the present, of a habit ("I produce music for artists")
    return not verb.endswith("ed") and verb not in vocabulary.NOT_HABITS and _something(said, j + 1)


def _was(said: Sequence[str], j: int) -> bool:
    """After "I was": what the user was for good ("I was born in May", "I was a nurse for years"),
    not what they were once ("I was a little kid", "I was tired")."""
    word = _next(said, j)
    if word in vocabulary.WAS_FOR_GOOD:
        return True
    if word in vocabulary.STATES and word not in ("old", "young", "only", "pretty", "fairly", "from", "into"):
        need = vocabulary.STATE_NEEDS.get(word)
        return need is None or _next(said, j + 1) in need
    if word in ("in", "on"):
        return any(w in vocabulary.PLACES_OF_LIFE for w in said[j + 1 : j + 4])
    if word in ("a", "an"):
        return _next(said, j + 1) not in vocabulary.ONCE and _something(said, j + 1)
    return False


def _links(word: str) -> bool:
    """Whether a word after "my daughter" says something of her: a link ("is", "has") or a verb of
    a habit or an event ("works", "started")."""
    return (
        word in vocabulary.LINKS
        or word in vocabulary.LIFE_EVENTS
        or (word.endswith("s") and word[:-1] in vocabulary.HABITS)
    )


def _belonging(said: Sequence[str], j: int, text: str) -> bool:
    """After "my" or "our": a statement about what is the user's ("my cat is fourteen"), or what
    someone of theirs does on a date ("my sister Anna arrives next Tuesday")."""
    for k in range(j, min(j + 4, len(said))):
        head = said[k].removesuffix("'s")
        if head in vocabulary.BELONGINGS or (head == "friend" and said[k - 1] == "best"):
            rest = k + 1
            if said[k].endswith("'s") and rest < len(said) and said[rest] in vocabulary.BELONGINGS:
                rest += 1  # "our dog's name is"
            # "my sister Ana is", "my dad was", "my parents taught me", "my son just started at"
            while (
                rest < len(said) and not _links(said[rest]) and said[rest] not in vocabulary.ADVERBS and rest - k <= 2
            ):
                rest += 1
            while rest < len(said) and said[rest] in vocabulary.ADVERBS:
                rest += 1
            if rest == len(said):
                return False
            kin = head in vocabulary.KIN or head == "friend"
            at = rest + 1
            while at < len(said) and (said[at] == "not" or said[at] in vocabulary.ADVERBS):
                at += 1
            value = _next(said, at)
            if any(w in vocabulary.PASSING for w in said[rest : rest + 5]):
                return False  # "my son has a fever"
            if _links(said[rest]) and (kin or said[rest] in vocabulary.BEING_OR_HAVING):
                if value.isdigit() or value in vocabulary.NUMBERS:
                    return True  # "my cat is fourteen"
                # what a thing or a person does now is not the user's: "my car is making a noise",
                # "my mom is calling me"; "my son is studying law" lasts
                now = value.endswith("ing") and not (kin and value in vocabulary.LASTING_ING)
                return not now and _something(said, at)
            return kin and bool(_DATE().search(text))  # "my sister arrives next Tuesday"
    return False
