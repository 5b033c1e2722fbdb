"""A general reading of durable first-person statements, for what the worded rules of
`memory.language.importance` do not name: "I drive a green Skoda", "our dog's name is Pepper", "we're
flying to Lisbon on the 3rd of June", "I go swimming every morning".

A sentence counts when it speaks of the user (I, my, we, our) as a statement, says nothing of the
moment (today, right now, tired, I think ...), and carries enough signs of something lasting:
- how the user is or lives: a verb of being, having or habit right after I or we ("I have",
  "I drive", "we live", "I work", "I'm learning", "I've been ... for"), a state of health;
- what belongs to the user, as what the sentence is about: "my" or "our" before a person, an
  animal, a place or a thing they keep ("my husband", "our dog's name", "my blood type");
- details that make it worth keeping: a name (a capitalised word inside the sentence), a number
  or a code, a date, a habit ("every", "on Thursdays", "twice a week"), a duration ("for ten
  years").
A sentence needs one sign of the first two kinds and one detail, or two signs of the first kinds
(a state of health counts as two). A code or password with its digits counts on its own.
It is English only, like the rules.
"""

from __future__ import annotations

import re

from parla.kernel.patterns import lazy_pattern

_SUBJECT = r"(?:i|we)(?:'m|'ve|'re| am| are| have| was| were)?"
_BEING = lazy_pattern(
    rf"\b{_SUBJECT}\s+(?:(?:always|usually|still|now|also|just|been)\s+)?(?:have|has|own|drive|ride|live|work|"
    r"play|speak|teach|study|studied|grew up|was born|go|volunteer|coach|run|train|take|use|keep|"
    r"learning|training|working|living|studying|married|divorced|engaged|a|an|allergic|intolerant|"
    r"diabetic|vegetarian|vegan|flying|moving|starting|retiring|due|expecting|been [\w-]+ (?:for|since))\b",
    re.IGNORECASE,
)
_HEALTH = lazy_pattern(
    r"\b(?:allerg\w*|intoleran\w*|diabet\w*|asthma\w*|epilep\w*|blood type|blood pressure|medication|"
    r"prescription|surgery|pregnan\w*|diagnos\w*|celiac|coeliac|migraine\w*|gluten|lactose)\b",
    re.IGNORECASE,
)
# "my X" as what the sentence is about (within its first words), not "the report for my colleague"
_BELONGS = lazy_pattern(
    r"^\W*(?:[\w']+[\s,]+){0,4}?(?:my|our)\s+(?:[\w-]+\s+){0,2}?(?:wife|husband|partner|girlfriend|boyfriend|son|daughter|kids?|children|"
    r"mother|mom|mum|father|dad|parents|sister|brother|twin|grand\w+|aunt|uncle|cousin|niece|nephew|baby|"
    r"fianc\w*|friend|neighbou?r|boss|colleague|doctor|dentist|therapist|dog|cat|puppy|kitten|horse|bird|"
    r"house|flat|apartment|home|address|car|bike|school|office|job|company|team|name|birthday|anniversary|"
    r"blood|flight|wedding|lease|phone number|email|password|pin|code|plate|passport|licen[cs]e|"
    r"routine|diet|religion|nationality|hometown)(?:'s)?\b",
    re.IGNORECASE,
)
_CODE = lazy_pattern(r"\b(?:code|password|passcode|pin|combination)\b[^.?!]*?\b(?:is|=|:)\s*\S*\d", re.IGNORECASE)
_NUMBER = lazy_pattern(
    r"\d|\b(?:one|two|three|four|five|six|seven|eight|nine|ten|eleven|twelve|twenty|thirty)\b", re.IGNORECASE
)
_DATE = lazy_pattern(
    r"\b(?:january|february|march|april|may|june|july|august|september|october|november|december|"
    r"mondays?|tuesdays?|wednesdays?|thursdays?|fridays?|saturdays?|sundays?|weekends|\d+(?:st|nd|rd|th))\b",
    re.IGNORECASE,
)
_HABIT = lazy_pattern(
    r"\b(?:every|each|always|usually|never|twice|once a|a week|a month|a year|for (?:about |almost |over )?"
    r"(?:\w+ )?(?:years?|months?|decades?)|since \d{4}|since (?:i was|childhood))\b",
    re.IGNORECASE,
)
_NAME = lazy_pattern(r"(?<=[\w,] )(?!I\b|I'[a-z]+\b)[A-Z][a-z]+")
# The moment, a feeling, an opinion or a sum of money: not something to keep.
_MOMENT = lazy_pattern(
    r"\b(?:today|tonight|this (?:morning|afternoon|evening)|right now|just now|at the moment|last night|"
    r"yesterday|earlier|later today|i think|i guess|i feel|i felt|feeling|tired|sleepy|bored|hungry|"
    r"stressed|in a (?:good|bad) mood|sounds|seems|looks like|kind of|sort of|lol|haha|might|maybe)\b"
    # an amount of money is what a purchase or a budget is about now, not who the user is
    r"|\d\s*(?:euros?|dollars?|pounds?|eur|usd|gbp|bucks)\b|[$€£]\s*\d",
    re.IGNORECASE,
)
_NOT_A_STATEMENT = lazy_pattern(
    r"\?\s*$|^\s*(?:if|what if|suppose|imagine|do you|would|could|should|can you|is it|tell me|let's)\b"
    r"|\b(?:if i (?:were|was|had)|i wish|i wonder|pretend|people who|he said|she said|they said|"
    r"in the (?:book|movie|film|story)|the character)\b",
    re.IGNORECASE,
)
_FIRST_PERSON = lazy_pattern(r"\b(?:i|i'm|i've|i'd|my|we|we're|we've|our|me)\b", re.IGNORECASE)


def is_durable(sentence: str) -> bool:
    """Whether a sentence of the user's states something lasting about them (see the module)."""
    text = sentence.replace("\u2019", "'")
    if _NOT_A_STATEMENT().search(text) or _MOMENT().search(text):
        return False
    if _CODE().search(text):
        return True  # a code or password is the user's to keep, whoever's voice says it
    if not _FIRST_PERSON().search(text):
        return False
    # a state of health counts twice: it is the user's and it lasts
    kinds = sum(bool(p().search(text)) for p in (_BEING, _HEALTH, _HEALTH, _BELONGS))
    details = sum(bool(p().search(text)) for p in (_CODE, _NUMBER, _DATE, _HABIT, _NAME))
    return (kinds >= 1 and details >= 1) or kinds >= 2
