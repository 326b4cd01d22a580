"""The patterns of the rule-based fact extractor: general English, first person, one clause.

Each rule is a regular expression anchored at the start of a clause and a template for the
third-person statement. Templates name the subject ``{S}`` (its possessive ``{Sp}``), the
cleaned object ``{x}`` and other groups; ``{v3}`` is verb group ``v`` in the third person.
"""

from __future__ import annotations

import re
from dataclasses import dataclass

from agentcore.services.semantic import FactCategory

# Short names keep the rule table readable.
P, C, F, L = (
    FactCategory.PREFERENCE,
    FactCategory.CONSTRAINT,
    FactCategory.FACT,
    FactCategory.LEARNING,
)

ADVERBS = (
    r"really|truly|absolutely|totally|just|also|still|actually|definitely|do|sure|simply|"
    r"genuinely|especially|particularly|so|even|kind of|kinda|sort of|honestly|seriously|now|"
    r"recently|finally|already|currently|usually|often|mostly|generally"
)
ADV = rf"(?:(?:{ADVERBS})\s+)*"
_AM = r"I(?:'m| am)\s+"
_HAVE = r"I(?:'ve| have)\s+"
_RELATIONS = (
    r"(?:sister|brother|mom|mother|mum|dad|father|parents|wife|husband|partner|boyfriend|"
    r"girlfriend|fianc[ée]e?|son|daughter|kids|children|child|baby|friend|best friend|boss|"
    r"cousin|aunt|uncle|grandma|grandmother|grandpa|grandfather|niece|nephew|roommate|"
    r"neighbou?r|colleague|coworker|dog|cat|pet|puppy|kitten|family|name|birthday|job)"
)
_PAST_EVENTS = (
    r"went|visited|started|joined|adopted|bought|got|finished|won|ran|signed up|took up|"
    r"graduated|moved|traveled|travelled|attended|volunteered|painted|wrote|published|launched|"
    r"opened|made|received|lost|married|met|hosted|organized|organised|completed|built|created|"
    r"decided|began|tried|took|gave|celebrated|watched|read|played|performed|learned|learnt|"
    r"passed|quit|retired|switched|donated|raised|taught|baked|cooked|climbed|hiked|bought"
)
# Past forms that are not also base forms, so "Lost my job" cannot be an imperative.
_DROPPED_SUBJECT_EVENTS = (
    r"went|visited|started|joined|adopted|bought|finished|won|signed up|took up|graduated|"
    r"moved|traveled|travelled|attended|volunteered|painted|wrote|published|launched|opened|"
    r"received|lost|married|hosted|organized|organised|completed|built|created|decided|began|"
    r"tried|celebrated|watched|performed|learned|learnt|passed|retired|switched|donated|"
    r"baked|cooked|climbed|hiked|spent|took"
)
_PARTICIPLES = (
    r"been|started|joined|adopted|bought|got|gotten|finished|won|signed up|taken up|graduated|"
    r"moved|traveled|travelled|attended|volunteered|painted|written|published|launched|opened|"
    r"made|received|lost|married|met|hosted|organized|organised|completed|built|created|"
    r"decided|begun|tried|taken|given|always wanted|never been|lived|worked|loved|enjoyed"
)
_STATES = (
    r"studying|majoring in|learning(?: to| how to)?|training(?: for| as| to)?|pursuing|"
    r"practicing|practising|writing|building|creating|planning(?: to| on)?|preparing for|"
    r"saving(?: up)? for|looking (?:for|into|forward to)|considering|thinking (?:of|about)|"
    r"hoping to|trying to|going to|gonna|about to|working on|working as|working at|"
    r"getting (?:into|married to)|taking(?: up)?|teaching|volunteering (?:at|with|for)|"
    r"organi[sz]ing|starting|running|researching|participating in|competing in|"
    r"applying (?:to|for)|excited (?:to|about|for)|passionate about|into|obsessed with|"
    r"crazy about|keen on|fond of|interested in|(?:a |an )?(?:big |huge |great |massive )?"
    r"fan of|afraid of|scared of|terrified of|proud of|married to|engaged to|pregnant with"
)
_BARE_STATES = r"retired|single|divorced|married|engaged|pregnant|unemployed|self-employed"
_CANT_IDIOMS = (
    r"wait|believe|imagine|picture|thank|help|stop|get over|say|tell|express|describe|put|"
    r"remember|recall|decide|figure|wrap|even|really|quite|emphasi[sz]e|stress|agree|complain|"
    r"lie|deny|go wrong|see|understand|thank|find|begin|overstate|get enough|hear|resist"
)
_HAVE_ABSTRACT = (
    r"question|feeling|lot|idea|bit|time|great time|good time|blast|chance|thought|favou?r|"
    r"moment|point|look|few|couple|similar|hard time|tough time|lot of|way|sense|hunch|"
    r"suggestion|tip|request|problem|confession|secret"
)


@dataclass(frozen=True, slots=True)
class Rule:
    pattern: re.Pattern[str]
    template: str  # {S} subject, {Sp} its possessive, {v3} group v in the third person
    category: FactCategory
    importance: float
    critical: bool = False
    needs_time: bool = False  # e.g. "I'll ...": a plan only when it says when


def _rule(
    regex: str,
    template: str,
    category: FactCategory,
    importance: float,
    critical: bool = False,
    *,
    needs_time: bool = False,
) -> Rule:
    pattern = re.compile(regex, re.IGNORECASE)
    return Rule(pattern, template, category, importance, critical, needs_time)


# Tried in order on each clause (anchored at its start); the first rule that yields wins.
RULES: tuple[Rule, ...] = (
    # Constraints: allergies, diets, inabilities, obligations, absolutes.
    _rule(
        _AM + ADV + r"(?:(?:very|severely|highly|mildly|deathly) )?allergic to (?P<x>.+)",
        "{S} is allergic to {x}",
        C,
        0.9,
        True,
    ),
    _rule(
        r"I have (?:an? )?(?:severe |mild |bad |serious )?(?P<x>[\w -]{2,30}?) "
        r"(?:allergy|allergies|intolerance)\b",
        "{S} has a {x} allergy",
        C,
        0.9,
        True,
    ),
    _rule(
        _AM + ADV + r"(?:a |an )?(?P<x>vegetarian|vegan|pescatarian|lactose intolerant|"
        r"gluten[- ]intolerant|diabetic|celiac|coeliac|sober|teetotal)\b",
        "{S} is {x}",
        C,
        0.9,
        True,
    ),
    _rule(
        r"I (?:don't|do not|can't|cannot|never) (?P<v>eat|drink|consume|take) (?P<x>.+)",
        "{S} does not {v} {x}",
        C,
        0.9,
        True,
    ),
    _rule(r"I (?:can't|cannot|can not) stand (?P<x>.+)", "{S} dislikes {x}", P, 0.6),
    _rule(
        r"I (?:don't|do not) (?:really )?(?P<v>like|enjoy|love) (?P<x>.+)",
        "{S} does not {v} {x}",
        P,
        0.6,
    ),
    _rule(
        rf"I (?:can't|cannot|can not) (?!(?:{_CANT_IDIOMS})\b)(?P<x>.+)",
        "{S} cannot {x}",
        C,
        0.8,
        True,
    ),
    _rule(
        _AM + r"(?P<m>not allowed|forbidden|required|obliged) to (?P<x>.+)",
        "{S} is {m} to {x}",
        C,
        0.85,
        True,
    ),
    _rule(r"I (?:must|have got to|'ve got to) (?P<x>.+)", "{S} must {x}", C, 0.8, True),
    _rule(r"I (?P<v>have|need) to (?P<x>\S+ .+)", "{S} {v3} to {x}", C, 0.6),
    _rule(
        rf"I {ADV}(?P<w>never|always) (?P<v>[a-z-]+)(?P<p> up| out| in| off| down| back)?"
        r"(?: (?P<x>.+))?",
        "{S} {w} {v3}{p} {x}",
        C,
        0.8,
        True,
    ),
    # Learnings.
    _rule(
        _HAVE.replace(r"\s+", "")
        + r"?\s*(?:I )?"
        + ADV
        + r"(?:learned|learnt|realized|realised|discovered|figured out|found out|noticed) "
        r"(?P<that>that )?(?P<x>.+)",
        "{S} learned {that}{x}",
        L,
        0.6,
    ),
    _rule(
        r"(?:it|this|that|[\w ]{1,40}?) (?:has )?taught me (?:that )?(?P<x>.+)",
        "{S} learned {x}",
        L,
        0.6,
    ),
    # Preferences.
    _rule(
        rf"I {ADV}(?P<v>love|like|enjoy|adore|prefer|hate|dislike|detest|loathe|miss)"
        r" (?P<x>.+)",
        "{S} {v3} {x}",
        P,
        0.6,
    ),
    _rule(
        r"my (?:all[- ]time |absolute |very )?favou?rite (?P<k>[\w ]{1,30}?) (?:is|are|was) "
        r"(?P<x>.+)",
        "{Sp} favorite {k} is {x}",
        P,
        0.6,
    ),
    _rule(
        rf"(?P<x>.+?) (?:is|are) (?:what|something|one thing|the thing) I {ADV}"
        r"(?P<v>love|like|enjoy)(?: (?:most|best|the most|a lot|so much))?$",
        "{S} {v3} {x}",
        P,
        0.6,
    ),
    _rule(
        r"(?P<x>.+?) (?:is|are) my (?:all[- ]time )?favou?rite(?: (?P<k>[\w ]{1,30}))?$",
        "{Sp} favorite {k} is {x}",
        P,
        0.6,
    ),
    # Facts about the speaker's people and things.
    _rule(
        rf"my (?P<r>{_RELATIONS})(?:'s name)? (?:is|was) (?:named |called )?(?P<n>[A-Z][\w-]+)$",
        "{Sp} {r_is} {n}",
        F,
        0.5,
    ),
    _rule(
        rf"my (?P<r>{_RELATIONS}) (?P<v>is|was|works|worked|lives|lived|loves|likes|has|"
        r"plays|studies|teaches|just got|got|became|turned) (?P<x>.+)",
        "{Sp} {r} {v} {x}",
        F,
        0.5,
    ),
    _rule(
        r"I have (?P<q>an?|one|two|three|four|five|six|\d+) (?!(?:"
        + _HAVE_ABSTRACT
        + r")\b)(?P<x>.+?)(?: (?:named|called) (?P<n>[A-Z][\w-]+"
        r"(?: and [A-Z][\w-]+)?))?$",
        "{S} has {q} {x}{named}",
        F,
        0.5,
    ),
    _rule(
        rf"I {ADV}(?P<v>live|grew up|was born|moved|relocated)(?P<p> in| to| near| at) "
        r"(?P<x>.+)",
        "{S} {v3}{p} {x}",
        F,
        0.6,
    ),
    _rule(_AM + r"(?:originally )?from (?P<x>.+)", "{S} is from {x}", F, 0.6),
    _rule(
        rf"I {ADV}(?P<v>work|volunteer|teach|study|play|run|own|manage) (?P<x>.+)",
        "{S} {v3} {x}",
        F,
        0.5,
    ),
    _rule(_AM + ADV + rf"(?P<v>{_STATES}) (?P<x>.+)", "{S} is {v} {x}", F, 0.5),
    _rule(_AM + ADV + rf"(?:now )?(?P<v>{_BARE_STATES})$", "{S} is {v}", F, 0.6),
    _rule(
        _AM + r"(?P<x>(?:a|an) (?!(?:bit|little|lot|big fan|huge fan|fan)\b).+)",
        "{S} is {x}",
        F,
        0.5,
    ),
    _rule(r"I (?P<v>want|plan|intend|hope|aim) to (?P<x>.+)", "{S} {v3} to {x}", F, 0.5),
    _rule(r"I(?:'ll| will) (?P<x>.+)", "{S} will {x}", F, 0.4, needs_time=True),
    _rule(_HAVE + ADV + rf"(?P<v>{_PARTICIPLES}) (?P<x>.+)", "{S} has {v} {x}", F, 0.5),
    _rule(rf"I {ADV}(?P<v>{_PAST_EVENTS}) (?P<x>.+)", "{S} {v} {x}", F, 0.5),
    # Chat drops the subject: "Lost my job yesterday" is "I lost my job yesterday".
    _rule(rf"(?P<v>{_DROPPED_SUBJECT_EVENTS}) (?P<x>.+)", "{S} {v} {x}", F, 0.5),
)
