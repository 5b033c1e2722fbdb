"""Word-level helpers shared by the offline summarizer and the offline embedder.

Words are letters of any alphabet ("città", "Straße", "niño"); the stop words are English,
Italian, Spanish, German and French, so offline titles and keywords of a chat in any of these
languages are made of its content words. Function words of the other languages that are English
content words ("war", "son", "hat", "man") are not stop words: a chat about a war or a son keeps
them, while a German "war" costs little."""

from __future__ import annotations

import functools
import re

from parla.kernel.patterns import lazy_pattern

# A letter, then letters, apostrophes or hyphens ("don't", "dell'IVA" is split below); or a number.
# (Runs of letters between the separators: the same words as letter-by-letter alternation, faster.)
WORD = re.compile(r"[^\W\d_]+(?:['’-]+[^\W\d_]+)*['’-]*|\d+(?:[.,:/]\d+)*")
# Elided articles and prepositions of Italian and French ("l'azienda", "dell'IVA", "qu'il").
_ELISION = re.compile(
    r"^(?:l|d|s|c|j|m|t|n|qu|un|dell|dall|nell|sull|all|coll|quell|quest|lorsqu|puisqu|jusqu)['’](?=[^\W\d_])",
    re.IGNORECASE,
)

# fmt: off
_ITALIAN = """
a ad agli ai al alla alle allo anche ancora avere aveva avevo c che chi ci cioè col coi come con contro cosa così cui
da dagli dai dal dalla dalle dallo degli dei del della delle dello dentro di dopo dove dunque e ed era erano essere
fa fare fino fra gli ha hai hanno ho i il in io l la le lei li lo loro lui ma me mentre mi mia mie miei mio molto
ne negli nei nel nella nelle nello no noi non nostra nostre nostri nostro o ogni ora per perché però più poi poco
proprio qua qual quale quali qualcosa quando quanto quasi quel quella quelle quelli quello questa queste questi
questo qui se sei senza si sia siamo siete sono sopra sotto sta stata stati stato su sua sue sugli sui sul sulla
sulle sullo suo suoi tra tu tua tue tuo tuoi tutta tutte tutti tutto un una uno vi voi vostro vostra già sempre
solo ok grazie sì bene va allora tipo adesso devo deve dobbiamo posso può possiamo vorrei voglio volevo forse
buon buona buono
"""
_SPANISH = """
a al algo algunos ante antes aquí así aunque bien cada casi como con contra cual cuando de del desde donde dos
e el él ella ellas ellos en entre era eres es esa esas ese eso esos esta estas este esto estos estoy estamos
están fue fueron ha hace hacer han has hay he la las le les lo los más me mi mis mucho muy nada ni no nos
nosotros o os otra otro para pero poco por porque qué que quien se sea ser si sí sin sobre su sus también
tan tanto te tengo tiene tienen todo todos tu tú tus un una uno unos usted ustedes y ya yo gracias vale
bueno puedo puede quiero quería hemos hablamos quizás
"""
_GERMAN = """
aber alle als also am an auch auf aus bei bin bis bist da dann das dass dem den denn der des dich dir doch
du durch ein eine einem einen einer eines er es etwas für gegen gibt hab habe haben hast hatte ich ihm ihn
ihr ihre im in ist ja jetzt kann kein keine können mal man mein meine meinem meinen meiner mich mir mit muss
nach nicht noch nun nur ob oder ohne schon sehr sein seine sich sie sind so um und uns unser unsere vom von
vor was weil wenn wer wie wieder wir wird wo zu zum zur zwischen über danke bitte okay gut einfach möchte
würde sollte wurde werden die war hat man fast vielleicht
"""
_FRENCH = """
à au aux avec avoir ce ces cet cette ceci cela chez comme dans de des du elle elles en est et être eux il ils
je la le les leur leurs lui ma mais me même mes moi mon ne nos notre nous on ou où par pas peu plus pour
quand que quel quelle quelles quels qui sa sans se ses si son sont sur ta te tes toi ton tous tout toute
très tu un une vos votre vous y ça était avait merci oui non bien faire fait suis ai as son pour
"""
# fmt: on
# Function words of the other languages that are English content words stay out of the stop list.
_ENGLISH_CONTENT = frozenset(["war", "son", "hat", "fast", "pour", "man"])
_OTHER_LANGUAGES = frozenset((_ITALIAN + _SPANISH + _GERMAN + _FRENCH).split()) - _ENGLISH_CONTENT

_ENGLISH = frozenset(
    [
        "a",
        "about",
        "above",
        "after",
        "again",
        "against",
        "all",
        "also",
        "am",
        "an",
        "and",
        "any",
        "are",
        "aren't",
        "as",
        "at",
        "be",
        "because",
        "been",
        "before",
        "being",
        "below",
        "between",
        "both",
        "but",
        "by",
        "can",
        "can't",
        "could",
        "did",
        "didn't",
        "do",
        "does",
        "doesn't",
        "doing",
        "don't",
        "down",
        "during",
        "each",
        "few",
        "for",
        "from",
        "further",
        "had",
        "has",
        "have",
        "having",
        "he",
        "her",
        "here",
        "hers",
        "herself",
        "him",
        "himself",
        "his",
        "how",
        "i",
        "i'd",
        "i'll",
        "i'm",
        "i've",
        "if",
        "in",
        "into",
        "is",
        "isn't",
        "it",
        "it's",
        "its",
        "itself",
        "just",
        "let's",
        "me",
        "more",
        "most",
        "my",
        "myself",
        "no",
        "nor",
        "not",
        "now",
        "of",
        "off",
        "on",
        "once",
        "only",
        "or",
        "other",
        "ought",
        "our",
        "ours",
        "ourselves",
        "out",
        "over",
        "own",
        "same",
        "she",
        "should",
        "so",
        "some",
        "such",
        "than",
        "that",
        "that's",
        "the",
        "their",
        "theirs",
        "them",
        "themselves",
        "then",
        "there",
        "there's",
        "these",
        "they",
        "this",
        "those",
        "through",
        "to",
        "too",
        "under",
        "until",
        "up",
        "very",
        "was",
        "we",
        "we're",
        "were",
        "what",
        "when",
        "where",
        "which",
        "while",
        "who",
        "whom",
        "why",
        "will",
        "with",
        "would",
        "you",
        "you're",
        "your",
        "yours",
        "yourself",
        "yes",
        "okay",
        "ok",
        "sure",
        "great",
        "thanks",
        "thank",
        "really",
        "maybe",
        "well",
        "oh",
        "like",
        "get",
        "got",
        "go",
        "going",
        "know",
        "think",
        "want",
        "need",
        "one",
        "also",
        "lot",
        "something",
        "thing",
        "things",
        "much",
        "many",
        "way",
        "would",
        "could",
        "make",
        "let",
        "us",
        "see",
        "tell",
        "said",
        "say",
        "good",
        "nice",
        "right",
    ]
)

STOPWORDS = _ENGLISH | _OTHER_LANGUAGES

# Each language's own function words, to tell which one a passage is in.
_BY_LANGUAGE = {
    "en": _ENGLISH,
    "it": frozenset(_ITALIAN.split()),
    "es": frozenset(_SPANISH.split()),
    "de": frozenset(_GERMAN.split()),
    "fr": frozenset(_FRENCH.split()),
}

# Words that frame a request to find a chat rather than say what it was about, in English, then
# Italian, Spanish, German and French ("passiamo alla chat in cui parlavamo di ...").
# fmt: off
_FRAMING_OTHER = """
passiamo passa passare torniamo torna tornare riprendiamo riprendi apri aprire parlavamo parlato parlare
discusso conversazione conversazioni chiacchierata precedente ultima ultimo volta ricordi quella
cambiemos cambia cambiar volvamos vuelve volver abre abrir hablábamos hablado hablar conversación
conversaciones anterior última último vez recuerdas
wechseln wechsle wechsel zurück öffne öffnen gesprochen sprachen redeten geredet unterhaltung gespräch
chat chats letzte letzten mal damals erinnerst
passons passe passer revenons reviens revenir ouvre ouvrir parlions parlé parler discussion discuté
conversation dernière dernier fois souviens
"""
# fmt: on
FRAMING = frozenset(_FRAMING_OTHER.split()) | frozenset(
    [
        "chat",
        "chats",
        "conversation",
        "conversations",
        "talk",
        "talked",
        "talking",
        "discuss",
        "discussed",
        "discussing",
        "discussion",
        "switch",
        "back",
        "open",
        "resume",
        "continue",
        "pick",
        "please",
        "earlier",
        "previous",
        "last",
        "time",
        "remember",
    ]
)


def words(text: str) -> list[str]:
    # Line by line, each line's words remembered for a while: an indexed window is two turns, and
    # each window is read for its words and again by the offline embedder, so without the cache
    # an import split every turn four times. No word runs across a line break: the same words.
    if "\n" not in text:
        return list(_line_words(text))
    return [w for line in text.split("\n") for w in _line_words(line)]


@functools.lru_cache(maxsize=512)
def _line_words(line: str) -> tuple[str, ...]:
    # the elision pattern only for the few words with an apostrophe, and a word looked at one by
    # one only in a line that has one: a switch search reads 80 KB of new text on a heavy history
    found = WORD.findall(line.lower())
    if "'" not in line and "’" not in line:
        return tuple(found)
    return tuple(_ELISION.sub("", w) if "'" in w or "’" in w else w for w in found)


def content_words(text: str) -> list[str]:
    return [w for w in words(text) if w not in STOPWORDS and len(w) > 2]


def distinct_content_words(text: str) -> set[str]:
    """The set of `content_words(text)`, each distinct word looked at once."""
    return {w for w in set(words(text)) - STOPWORDS if len(w) > 2}


def window_words(text: str) -> list[str]:
    """The distinct content words of an indexed text, sorted: what the store's word counts count."""
    return sorted(distinct_content_words(text))


def language_of(text: str) -> str:
    """The language of the passage among en, it, es, de, fr: the one whose function words it uses
    most (English when none is ahead)."""
    said = words(text)
    counts = {lang: sum(w in stop for w in said) for lang, stop in _BY_LANGUAGE.items()}
    best = max(counts, key=lambda lang: counts[lang])
    return best if counts[best] > counts["en"] else "en"


# A sentence ends at . ! ? or a line break; in transcribed speech, which often has no full stop,
# also where a word that opens sentences follows a word or a number with nothing between ("the
# code is 5150 Tell me ..."), unless that word is capitalised too ("I love The Who"). "I" and
# "I'm" are not such words: they are written so inside sentences too.
# An initial or a title is not the end of a sentence ("F. Scott Fitzgerald", "Dr. Patel").
_SENTENCE_END = lazy_pattern(r"(?<=[.!?…])(?<!\b[A-Z]\.)(?<!\bMr\.)(?<!\bMrs\.)(?<!\bMs\.)(?<!\bDr\.)(?<!\bSt\.) ")
_UNMARKED_END = lazy_pattern(
    r"(?<=[a-z0-9]) (?=(?:Tell|Can|Could|What|How|Why|Where|When|Who|Which|Do|Does|Did|Is|Are|Will|"
    r"Would|Should|Please|Thanks|Thank|Okay|OK|Ok|So|Anyway|Also|Oh|Hey|Hi|Hello|Yes|Yeah|Well|Let's|Let|My|Our|"
    r"We)\b)"
)
_SPACES = lazy_pattern(r"[ \t\r\f\v]+")
# A clause starts after a comma, a semicolon or a dash before its own subject or a question ("I'm
# seeing a new physio, I can't take ibuprofen, should I tell her?"), or after "and", "but", "so",
# "because" ... before I or we ("I'm a nurse and I work nights").
_CLAUSE_START = (
    r"(?:i|i'm|i've|i'd|i'll|im|ive|we|we're|we've|my|our|you|you're|your|he|he's|she|she's|it|it's|they|"
    r"they're|there|there's|that|that's|this|what|how|why|where|when|who|which|should|could|would|can|do|does|"
    r"did|is|are|was|will|any|anything|but|so)"
)
_CLAUSE_END = lazy_pattern(
    rf"(?:[,;:]| -| —| –) (?={_CLAUSE_START}\b)"
    r"| (?:and|but|so|because|since|although|though|while|cause|as) (?=(?:i|i'm|i've|i'd|i'll|we|we're|we've|"
    r"my|our)\b)",
    re.IGNORECASE,
)


def sentences(text: str) -> list[str]:
    """The sentences of a text, each with its spacing made single (so the patterns that split it
    never scan a run of spaces twice: linear in the text's length)."""
    out = []
    for line in text.replace("\u2019", "'").split("\n"):
        line = _SPACES().sub(" ", line).strip()
        for sentence in _SENTENCE_END().split(line):
            out.extend(_unmarked(sentence))
    return [s for s in out if s]


def _unmarked(sentence: str) -> list[str]:
    """A sentence cut where the next one starts without a full stop (see `_UNMARKED_END`)."""
    pieces: list[str] = []
    start = 0
    for end in _UNMARKED_END().finditer(sentence):
        # the word before the cut, found from the cut backwards: linear over the whole sentence
        word_start = sentence.rfind(" ", start, end.start()) + 1
        if not sentence[word_start : word_start + 1].isupper():
            pieces.append(sentence[start : end.start()].strip())
            start = end.end()
    pieces.append(sentence[start:].strip())
    return pieces


def clauses(sentence: str) -> list[str]:
    """The clauses of a sentence (of `sentences`), so that a statement said beside a question or
    another statement is read on its own."""
    return [c.strip() for c in _CLAUSE_END().split(sentence) if c.strip()]
