"""The words the reading of durable statements (`memory.language.durable`) looks for, by the
part they play in a clause: what opens it, the verbs of states, habits, likings and life events,
what belongs to the user, and what says that a clause names nothing on its own."""

from __future__ import annotations


def _set(listed: str) -> frozenset[str]:
    return frozenset(listed.split())


# Words that open a clause without being its subject ("oh", "well", "yes", "actually", "so").
OPENERS = _set(
    "oh well yes yeah yep yup no nope nah actually honestly hi hello hey wow haha ha lol um uh hmm so and but "
    "also really sure cool nice great awesome ok okay alright anyway anyways btw plus though true right exactly "
    "definitely absolutely indeed personally funny ah aw now then currently recently lately still"
)
# After the subject, before the verb: how often, how much, since when.
ADVERBS = _set(
    "really also just still actually usually always never now currently even totally absolutely definitely "
    "pretty mostly mainly basically honestly often sometimes generally normally recently finally already both "
    "all only originally personally literally sort kind of truly very huge big seriously mainly"
)
BE = frozenset({"am", "are", "was", "were"})
BE_CONTRACTED = {"i'm": "i", "im": "i", "we're": "we", "i'am": "i"}
HAVE_CONTRACTED = {"i've": "i", "ive": "i", "we've": "we"}
# Said of the user with "I'm ...": lasting states, not moods.
STATES = _set(
    "married single divorced engaged widowed retired vegan vegetarian pescatarian teetotal allergic intolerant "
    "diabetic asthmatic epileptic pregnant blind deaf colorblind colourblind left-handed right-handed religious "
    "christian catholic muslim jewish hindu buddhist atheist agnostic shy introverted introvert extroverted "
    "extrovert tall short blonde blond adopted unemployed self-employed disabled fluent bilingual addicted "
    "passionate obsessed afraid scared terrified good bad terrible awful decent great better skilled lactose "
    "gluten male female gay lesbian bisexual transgender old young older younger oldest youngest only "
    "originally born raised based homeschooled sober clean deathly severely highly extremely pretty fairly "
    "into from"
)
# "I'm good" is a mood, "I'm good at chess" a skill: these states need the word after them.
STATE_NEEDS = {
    "good": {"at", "with"},
    "bad": {"at", "with"},
    "great": {"at", "with"},
    "terrible": {"at", "with"},
    "awful": {"at", "with"},
    "decent": {"at"},
    "better": {"at"},
    "skilled": {"at", "in"},
    "afraid": {"of"},
    "scared": {"of"},
    "terrified": {"of"},
    "passionate": {"about"},
    "obsessed": {"with"},
    "addicted": {"to"},
    "only": {"child"},
    "pretty": {"good", "bad", "tall", "short", "religious", "shy"},
    "fairly": {"good", "tall", "religious", "new"},
    "old": {"enough", "school"},
}
# "I'm ...ing" of a lasting activity ("I'm studying law"), not of the moment ("I'm reading a book").
LASTING_ING = _set(
    "studying learning training working living teaching raising expecting saving majoring volunteering dating "
    "coaching retiring homeschooling renting building running owning managing competing writing "
    "attending"
)
# ... or a plan, when a date or a name says which one ("we're flying to Lisbon on the 3rd of June").
PLAN_ING = _set("moving flying travelling traveling going visiting leaving starting getting having")
HOPING = frozenset({"hoping", "planning", "aiming", "wanting", "dreaming"})
SOUGHT = _set("job work house apartment flat home partner roommate school college")
# Present-tense verbs of how one lives ("I work nights", "we live in Leeds").
HABITS = _set(
    "work works live lives play plays go goes read reads watch listen study studies teach teaches drive drives "
    "ride rides run runs swim swims cook cooks bake bakes collect collects volunteer volunteers coach coaches "
    "train trains speak speaks practice practise attend attends visit visits spend spends grow grows make "
    "write writes paint paints draw draws sing sings dance dances knit knits sew sews hike hikes fish hunt "
    "hunts travel travels eat eats drink drinks use uses take takes keep keeps raise raises breed breeds do "
    "own owns wear wears walk walks bike cycle garden smoke vote belong support follow care sleep shop "
    "build builds fix fixes repair design designs manage manages run lead leads direct serve serves "
    "compete competes skate surf ski climb box lift meditate pray code program programs "
    "homeschool babysit nanny tutor clean cleans sell sells deliver mentor foster rescue bike jog"
)
# Verbs of liking; their object must be something, not the talk ("I love that").
LIKING = _set("love loves like likes enjoy enjoys prefer prefers adore hate hates dislike detest miss collect")
# Past verbs of what happened for good ("I grew up on a farm", "I met Taylor Swift").
LIFE_EVENTS = _set(
    "grew moved bought sold won met graduated married retired served lost adopted started quit learned learnt "
    "studied worked lived spent competed broke survived built founded joined became raised used taught "
    "inherited immigrated emigrated relocated finished divorced got had went dropped played"
)
# With "went", "got", "had" and "played" only these say something lasting.
EVENT_NEEDS = {
    "went": {"to"},
    "got": {"married", "engaged", "divorced", "adopted", "a", "my", "our", "into", "diagnosed", "sober", "fired"},
    "had": {"to", "surgery", "cancer", "twins", "triplets", "a", "an"},
    "played": {"in", "for", "professionally", "college", "semi-pro", "varsity"},
    "dropped": {"out"},
    "used": {"to"},
    "started": {"a", "my", "our", "college", "school", "university", "working", "learning", "playing"},
    "finished": {"college", "school", "university", "my"},
}
# After "can" or "can't": not a skill but a courtesy ("I can imagine", "I can't wait").
NOT_ABILITY = _set(
    "imagine see wait believe tell help say relate understand hear think do try get go find make give remember "
    "recommend agree talk check send show come stay only definitely totally really probably relate feel "
    "picture guess hardly barely stop sleep be keep start plan"
)
ABLE = frozenset({"can", "can't", "cant", "cannot", "could", "couldn't"})
WANTING = frozenset({"want", "wants", "hope", "hopes", "plan", "plans", "dream", "dreams", "aim", "intend"})
# What one wants to do with one's life, not with the evening ("I want to become a nurse").
AIMS = _set(
    "be become move live travel visit learn study open start own have retire go write work run climb "
    "see make join compete teach adopt buy build graduate marry finish publish"
)
# "My ..." or "our ...": what belongs to the user, the head of the subject.
# The people (and animals) of the user's life: what they do is theirs to tell of.
KIN = _set(
    "wife husband partner girlfriend boyfriend son sons daughter daughters kid kids child children mother mom "
    "mum mommy father dad daddy parents parent sister sisters brother brothers sibling siblings twin grandma "
    "grandpa grandmother grandfather grandparents grandson granddaughter grandchildren grandkids aunt uncle "
    "cousin niece nephew baby babies fiance fiancé fiancee fiancée family stepmom stepdad stepmother "
    "stepfather ex dog dogs cat cats puppy kitten horse horses bird birds pet pets fish hamster rabbit parrot"
)
# "My ..." or "our ...": what belongs to the user, the head of the subject (a thing's state now,
# "my car is making a noise", is not said with these).
BELONGINGS = KIN | _set(
    "house flat apartment home address car bike school office job work company team name birthday "
    "anniversary blood flight wedding lease plate passport license licence routine diet religion nationality "
    "hometown favorite favourite favorites favourites hobby hobbies passion goal dream dreams age height weight "
    "major degree career boss doctor dentist therapist physio landlord band instrument sport number email"
)
BEING_OR_HAVING = _set("is are was were 's has have had")
LINKS = _set(
    "is are was were has have had 's works lives plays played taught turns turned got passed died works worked "
    "lived owns owned runs ran teaches studies studied loves likes isn't aren't wasn't weren't doesn't don't "
    "didn't hasn't can can't left cheated"
)
# An object that points back at what was just said rather than naming something.
DEICTIC = _set(
    "it that this those these them him her you your yours there here what how when where which something "
    "anything everything one ones hearing reading talking chatting"
)
# "I love the characters": an aspect of something the conversation named, unless it says of what.
ASPECTS = _set(
    "idea sound way fact thought look characters character story plot ending effects special taste smell "
    "feeling feel atmosphere energy view views people food music culture history design colors colours "
    "weather scenery concept experience exercise spirit setting writing acting songs lyrics message part "
    "name names picture pictures cover title same rest whole plot detail details speed excitement peace quiet "
    "thrill rush beats beat sounds vibe vibes graphics gameplay storyline scenes scene costumes smell texture "
    "flavor flavour challenge competition camaraderie freedom suspense twist twists humor humour dialogue art "
    "artwork animation soundtrack colour color adrenaline cast line lines chorus beginning middle moment "
    "moments"
)
# The object of "love to" or "like to" that is a courtesy ("I'd like to hear more").
COURTESY = _set("hear see know help talk chat meet try learn think say")
# An opinion or a courtesy as the verb: not a fact about the user.
OPINION = _set(
    "think thought guess feel felt hope agree wonder wish bet mean see know knew understand suppose believe "
    "doubt appreciate promise remember forgot forget recommend say said told heard imagine"
)
SECOND_PERSON = frozenset({"you", "your", "you're", "yours", "yourself", "you've", "you'll", "you'd", "ya", "u"})
ECHO = frozenset({"too", "either"})
# A pronoun that stands for what the conversation named ("that" too: "I'm a big fan of that game").
POINTING_BACK = _set(
    "it it's its that that's this these those them they they're their theirs he he's him his she she's her hers"
)
LINKING = _set("and or but with on in at for of to my our the a an")
DETERMINERS = _set(
    "any a an the to of in with at about for some many all kinds kind sorts sort different variety lot lots few "
    "couple bunch plenty"
)
# What names nothing in particular: "I have a lot of favorites", "we have a lot in common".
VAGUE = _set(
    "favorites favourites favorite favourite things thing stuff fun common time times same other others more "
    "much great good lot sure"
)
MOODS = _set("tired nervous sad bored stressed worried confused busy sick hungry sleepy cold")
NUMBERS = _set(
    "one two three four five six seven eight nine ten eleven twelve thirteen fourteen fifteen sixteen "
    "seventeen eighteen nineteen twenty thirty forty fifty sixty seventy eighty ninety hundred"
)
# "I'm in ...", "I'm on ...": where one's life is, not where one is now.
PLACES_OF_LIFE = _set(
    "school college university high grad medical law nursing army navy military marines band choir team club "
    "league orchestra church recovery therapy my thirties twenties forties fifties sixties seventies eighties "
    "teens retirement remission love sales charge finance marketing construction healthcare grade year "
    "class relationship"
)
WHILE = frozenset({"years", "year", "months", "decades", "since", "life", "forever", "whole", "ages"})
HAD_FOR_GOOD = _set("baby stroke transplant heart accident operation miscarriage son daughter kidney liver hip knee")
WAS_FOR_GOOD = _set(
    "born raised adopted homeschooled diagnosed married divorced engaged widowed forced bullied injured "
    "drafted deployed stationed promoted fired orphaned"
)
ONCE = _set("little kid child baby teenager teen bit lot toddler young")
HABIT_MARKS = _set("every each always usually often weekly monthly yearly regularly")
# Present-tense verbs that are not a habit ("I mean", "I got it", "I need to go") and the past forms
# that tell of one occasion ("I ate", "I saw").
NOT_HABITS = _set(
    "get got gotten need needs want wanna gotta mean try tries look looks hope guess bet agree know think see "
    "feel understand wonder remember forget believe appreciate promise say said tell told ask find found "
    "hear heard just also really totally am was will would can could should might must did do does have had "
    "has went came saw made took gave left felt knew kept lost paid ran sat sent slept spoke stood thought "
    "woke wore wrote drove rode swam sang drank began brought caught chose drew fell flew forgot fought hid "
    "hit hurt let meant put shot shut stole threw ate bit read miss missed wish hate love like let's come go "
    "goes going mind guessed suppose recommend doubt imagine figure figured hang call text check wait sound "
    "sounds seem seems start stop keep finish totally definitely probably already haven't hasn't hadn't "
    "isn't aren't wasn't weren't won't wouldn't couldn't shouldn't didn't doesn't don't ain't am are is be "
    "been being both a an the to in of and or so it"
)
# What everyone knows as "the ...": "I love the beach" needs no conversation to be understood.
KNOWN_AS_THE = _set(
    "beach beaches ocean sea sun snow rain outdoors mountains mountain countryside city country woods forest "
    "desert lake lakes river water winter summer spring fall autumn cold heat night morning mornings evenings "
    "piano guitar violin drums cello flute saxophone trumpet harp bass ukulele banjo theater theatre movies "
    "cinema gym park parks zoo library opera ballet circus color colour colors colours smell sound taste "
    "stars moon sky news radio internet outdoor holidays weekends weekend simple quiet"
)
# What one has for a while only: "I have a headache", "my son has a fever", "I have a meeting".
PASSING = _set(
    "headache headaches migraine fever cold flu cough sore hangover rash cramp cramps meeting meetings call "
    "appointment interview question questions problem problems issue issues bug bugs error errors deadline "
    "exam test homework"
)
