"""What a statement says about which attribute of which subject (``statement_of``).

Offline the slot is read by the patterns below: general English about attributes that hold
one value at a time (home, employer, job title, manager, partner, car, diet, a pet's name, a
favourite, a preference by its head noun, a tool's version, a deadline, a team) and the generic
"my <attribute> is <value>". Precision comes first: a sentence that is not clearly about one
such attribute fills no slot (two facts about one subject are not an update), and a question,
a wish or a plan states no current value.
"""

from __future__ import annotations

import re

from agentcore.domain.fact_text import stem
from agentcore.domain.updates.vocabulary import (
    LEAD,
    MAX_SLOT,
    NAMED_ATTRIBUTES,
    NOT_ATTRIBUTES,
    PETS,
    SPEAKER,
    Rule,
    Statement,
    clean_value,
    group_attribute,
    head_noun,
    make_rule,
    norm_subject,
    norm_words,
    word_set,
)

_FIRST = r"(?:I|we|We)"
_NAME = r"[A-Z][a-z]+(?: [A-Z][a-z]+)?"
_SUBJECT = rf"(?P<s>{_FIRST}|[Tt]he user|{_NAME})(?:\s+|(?='))"  # "I work", "I'm"
_POSSESSIVE = rf"(?P<s>[Mm]y|[Oo]ur|[Tt]he user's|{_NAME}'s)"
_ADVERB = (
    r"(?:(?:now|currently|recently|just|finally|officially|actually|still|already|"
    r"also|eventually|permanently)\s+)*"
)
_NEW = r"(?:(?:new|current|latest|present)\s+)?"
_BE = r"(?:is|are|was|'s|am|'m|are|'re)"
_BE_NOW = rf"{_BE}\s+{_ADVERB}"
_HAVE = r"(?:have|has|'ve|'s)\s+"
_VALUE = r"(?P<v>[^,;.!?]+)"
_PLACE = r"(?P<v>(?:[A-Z][\w'-]*|the|St\.?|of|de|la|del|upon|on|am|an|\s)+?)"
_ORG = r"(?P<v>(?:[A-Z0-9][\w&'.-]*|of|and|&|the|de|\s)+?)"
_PERSON = r"(?P<v>[A-Z][a-z]+(?: [A-Z][a-z]+)?)"
_END = r"(?=\s*(?:$|[,;.!?]|\s(?:now|again|last|this|next|in|on|since|as of|after|and|but|"
_END += r"with|because|for|from|starting|effective|back|two|three|a|an|the|as|after)\b))"
_MONTHS = (
    r"[Jj]an(?:uary)?|[Ff]eb(?:ruary)?|[Mm]ar(?:ch)?|[Aa]pr(?:il)?|[Mm]ay|[Jj]une?|[Jj]uly?|"
    r"[Aa]ug(?:ust)?|[Ss]ep(?:t|tember)?|[Oo]ct(?:ober)?|[Nn]ov(?:ember)?|[Dd]ec(?:ember)?"
)
_VERSION = r"(?P<v>v?\d+(?:\.\d+)+[a-z0-9-]*|v\d+)"
_TOOL = r"(?P<t>[A-Za-z][\w+#.-]*(?: [A-Z][\w+#.-]*)?)"

_RELATIONS = (
    "manager boss supervisor lead partner girlfriend boyfriend wife husband spouse fiance "
    "fiancee fiancé fiancée"
)
_DIETS = (
    r"(?P<v>vegetarian|vegan|pescatarian|keto|paleo|gluten[- ]free|dairy[- ]free|"
    r"carnivore|flexitarian|lactose[- ]free|plant[- ]based|raw vegan)"
)

_VERB_ATTRIBUTES = {
    "live": "home", "living": "home", "drive": "car", "driving": "car", "work": "employer",
    "working": "employer", "eat": "diet", "eating": "diet", "use": "tool", "using": "tool",
    "run": "tool", "running": "tool",
}  # fmt: skip

_LEFT = "(?:left|quit|resigned from|no longer work (?:at|for)|stopped working (?:at|for))"
_RULES: tuple[Rule, ...] = (
    # Team (before home: "I moved to the Billing team").
    make_rule(
        rf"{_SUBJECT}{_ADVERB}(?:{_HAVE})?{_ADVERB}(?:moved to|joined|switched to|transferred "
        rf"to|{_BE}\s+{_ADVERB}on|{_BE}\s+{_ADVERB}in)\s+the\s+"
        r"(?P<v>[A-Z][\w&-]*(?: [A-Z][\w&-]*)?)\s+team\b",
        "team",
    ),
    # Home.
    make_rule(
        rf"{_SUBJECT}{_ADVERB}(?:(?:do|does)\s+|{_BE}\s+{_ADVERB}|{_HAVE}(?:been\s+)?"
        r")?(?:live|lives|living|reside|resides|residing|based|settled|staying)\s+"
        rf"{_ADVERB}in\s+{_PLACE}{_END}",
        "home",
    ),
    make_rule(
        rf"{_SUBJECT}{_ADVERB}(?:{_HAVE})?{_ADVERB}(?:moved|relocated|moved back|"
        rf"relocated back)\s+(?:from\s+[A-Z][\w ]*?\s+)?to\s+{_PLACE}{_END}",
        "home",
    ),
    make_rule(
        rf"{_POSSESSIVE}\s+{_NEW}(?:home|house|place|apartment|flat|residence)\s+{_BE_NOW}"
        rf"(?:in|at)\s+{_PLACE}{_END}",
        "home",
    ),
    make_rule(rf"{_POSSESSIVE}\s+{_NEW}address\s+{_BE_NOW}{_VALUE}", "address"),
    # Employer and job.
    make_rule(
        rf"{_SUBJECT}{_ADVERB}(?:work|works|am working|'m working|is working|are working)"
        rf"\s+{_ADVERB}(?:at|for)\s+{_ORG}{_END}",
        "employer",
    ),
    make_rule(
        rf"{_SUBJECT}{_ADVERB}(?:{_HAVE})?{_ADVERB}(?:joined|started (?:a new job |working )?"
        rf"at|started (?:working )?for|got (?:a|an) (?:new )?(?:job|position|offer) (?:at|with)|"
        rf"accepted (?:a|an) (?:job|offer|position) (?:at|from|with)|signed with|"
        rf"switched jobs to|moved to a new job at)\s+{_ORG}{_END}",
        "employer",
    ),
    make_rule(
        rf"{_SUBJECT}{_BE_NOW}(?:employed|hired)\s+(?:at|by)\s+{_ORG}{_END}",
        "employer",
    ),
    make_rule(rf"{_POSSESSIVE}\s+{_NEW}(?:employer|company)\s+{_BE_NOW}{_ORG}{_END}", "employer"),
    make_rule(
        rf"{_SUBJECT}{_ADVERB}(?:{_HAVE})?{_ADVERB}{_LEFT}\s+{_ORG}{_END}", "employer", ended=True
    ),
    make_rule(
        rf"{_SUBJECT}{_ADVERB}(?:work|works|am working|'m working|is working)\s+as\s+"
        r"(?:an?\s+)?(?P<v>[\w -]+?)" + _END,
        "job title",
    ),
    make_rule(
        rf"{_SUBJECT}{_ADVERB}(?:{_BE}\s+|{_HAVE}been\s+|got\s+|was\s+|were\s+)"
        rf"{_ADVERB}promoted\s+to\s+(?:an?\s+)?(?P<v>[\w -]+?){_END}",
        "job title",
    ),
    make_rule(
        rf"{_POSSESSIVE}\s+{_NEW}(?:job title|title|role|position|job)\s+{_BE_NOW}"
        r"(?:an?\s+)?(?P<v>[\w -]+?)" + _END,
        "job title",
    ),
    # People: manager, partner.
    make_rule(
        rf"{_POSSESSIVE}\s+{_NEW}(?P<k>manager|boss|supervisor|team lead|line manager)\s+"
        rf"{_BE_NOW}{_PERSON}{_END}",
        lambda m: "manager",
    ),
    make_rule(
        rf"{_PERSON}\s+{_BE_NOW}(?P<s>my|our|the user's)\s+{_NEW}(?:manager|boss|supervisor|"
        rf"team lead|line manager){_END}",
        "manager",
    ),
    make_rule(
        rf"{_PERSON}\s+{_ADVERB}(?:became|has become|is now)\s+(?P<s>my|our|the user's)\s+"
        r"(?:new\s+)?(?:manager|boss|supervisor|team lead)",
        "manager",
    ),
    make_rule(
        rf"{_SUBJECT}{_ADVERB}(?:report|reports|am reporting|'m reporting|is reporting)\s+"
        rf"{_ADVERB}(?:directly\s+)?to\s+{_PERSON}{_END}",
        "manager",
    ),
    make_rule(
        rf"{_POSSESSIVE}\s+{_NEW}(?:partner|girlfriend|boyfriend|wife|husband|spouse|"
        rf"fianc[ée]e?)(?:'s name)?\s+{_BE_NOW}{_PERSON}{_END}",
        "partner",
    ),
    make_rule(
        rf"{_SUBJECT}{_BE_NOW}(?:dating|seeing|married to|engaged to|in a relationship "
        rf"with|going out with)\s+{_PERSON}{_END}",
        "partner",
    ),
    # Things: car, diet, pets.
    make_rule(
        rf"{_SUBJECT}{_ADVERB}(?:drive|drives|am driving|'m driving|is driving)\s+"
        r"(?:an?\s+|the\s+)?(?:new\s+|used\s+)?(?P<v>[\w -]+?)" + _END,
        "car",
    ),
    make_rule(
        rf"{_POSSESSIVE}\s+{_NEW}(?:car|vehicle|ride)\s+{_BE_NOW}(?:an?\s+)?(?P<v>[\w -]+?)" + _END,
        "car",
    ),
    make_rule(
        rf"{_SUBJECT}{_ADVERB}(?:{_HAVE})?{_ADVERB}(?:bought|got|leased|traded (?:it )?"
        r"(?:in )?for)\s+(?:an?\s+)?(?:new\s+|used\s+)?(?P<v>[\w -]+?)\s+(?:car|SUV|truck)\b",
        "car",
    ),
    make_rule(
        rf"{_SUBJECT}{_ADVERB}(?:{_BE}\s+|{_HAVE}(?:been|become|gone)\s+|went\s+|became\s+|"
        rf"turned\s+|(?:have|has|'ve)\s+turned\s+|switched to (?:being )?|"
        rf"(?:am|'m|is) going\s+|eat\s+|eats\s+){_ADVERB}(?:(?:fully|strictly|mostly|a)\s+)?"
        rf"{_DIETS}\b",
        "diet",
    ),
    make_rule(
        rf"{_SUBJECT}{_ADVERB}(?:{_HAVE})?(?:(?:started|stopped|quit|gave up)\s+eating|"
        r"(?:eat|eats) (?P<again>meat|fish|dairy|eggs) again)"
        r"(?:\s+(?P<v>meat|fish|dairy|eggs|animal products|red meat)\b|(?=\s*(?:$|[,;.!?])))",
        "diet",
    ),
    make_rule(
        rf"{_POSSESSIVE}\s+{_NEW}{PETS}(?:'s name\s+{_BE}|\s+{_BE}\s+{_ADVERB}(?:named|called))\s+"
        rf"{_ADVERB}{_PERSON}{_END}",
        lambda m: f"pet:{m.group('k')}",
    ),
    # Favourites and preferences.
    make_rule(
        rf"{_POSSESSIVE}\s+{_NEW}(?:all[- ]time\s+)?favou?rite\s+(?P<k>[\w ]{{1,30}}?)\s+"
        rf"{_BE_NOW}{_VALUE}",
        group_attribute("k", "favorite"),
    ),
    make_rule(
        rf"(?P<v>[\w ]{{1,40}}?)\s+{_BE_NOW}(?P<s>my|our|the user's)\s+{_NEW}"
        r"(?:all[- ]time\s+)?favou?rite\s+(?P<k>[\w ]{1,30}?)(?:\s+(?:now|these days))?$",
        group_attribute("k", "favorite"),
    ),
    make_rule(
        rf"{_SUBJECT}{_ADVERB}(?:prefer|prefers)\s+(?P<v>[\w -]{{1,40}}?)"
        r"(?=\s*(?:$|[,;.!?]|\s(?:over|to|than|instead|rather|now|these days|because|on|in|at|"
        r"for|with|when|during|whenever|if)\b))",
        group_attribute("v", "prefers"),
    ),
    # Versions and deadlines (the subject is the tool or the thing due).
    make_rule(
        rf"(?:{_SUBJECT}{_ADVERB}(?:{_HAVE})?(?:been\s+)?{_ADVERB}(?:use|uses|using|run|runs|running|"
        rf"upgraded|updated|bumped|migrated|moved|switched|pinned|deployed|{_BE}\s+{_ADVERB}on)"
        r"\s+(?:\w+\s+){0,3}?(?:to\s+|on\s+)?)?"
        rf"(?:[Tt]he\s+|[Oo]ur\s+)?{_TOOL}\s+(?:(?:is|was)\s+)?(?:now\s+)?(?:(?:at|on)\s+)?(?:version\s+)?{_VERSION}\b",
        lambda m: f"version:{m.group('t').lower()}",
    ),
    make_rule(
        rf"{_POSSESSIVE}?\s*(?:the\s+)?(?P<k>[\w -]{{0,40}}?)\s*(?:deadline|due date)"
        r"(?:\s+for\s+(?:the\s+)?(?P<k2>[\w -]{1,40}?))?\s+(?:is|was|has been|got|had been)?\s*"
        r"(?:now\s+)?(?:moved|pushed|shifted|changed|extended|brought forward|set)?\s*"
        r"(?:back|out|up)?\s*(?:to|until|for|on)?\s*(?P<v>[\w ,/-]*\d[\w ,/-]*|"
        r"(?:next\s+)?(?:monday|tuesday|wednesday|thursday|friday|saturday|sunday|tomorrow|"
        r"end of (?:the )?(?:month|week|quarter|year)))",
        lambda m: f"deadline:{head_noun(m.group('k2') or m.group('k') or 'task')}",
    ),
    make_rule(
        r"(?:the\s+|our\s+|my\s+)?(?P<k>[\w -]{1,40}?)\s+(?:is|are)\s+(?:now\s+)?due\s+"
        r"(?:on\s+|by\s+)?(?P<v>[\w ,/-]+)",
        lambda m: f"deadline:{head_noun(m.group('k'))}",
    ),
    make_rule(  # anywhere after a verb of upgrading: "we bumped Node to 20 for the frontend"
        r"\b(?i:upgraded|updated|bumped|migrated|moved|switched|pinned|rolled out|deployed)\s+"
        rf"(?:\w+\s+){{0,3}}?(?:to\s+|on\s+)?(?:the\s+|our\s+)?(?!(?:{_MONTHS})\b)(?P<t>[A-Za-z][\w+#.-]*)\s+"
        r"(?:to\s+)?(?:version\s+|v)?(?P<v>\d+(?:\.\d+)*(?:-\d+)*)\b",
        lambda m: _version_of(m.group("t")),
        anywhere=True,
    ),
    # "Vienna is where I live now", "a BMW i3 is what I'm driving now".
    make_rule(
        r"(?P<v>[\w .'-]{1,50}?)\s+(?:is|are)\s+(?:what|where|who)\s+(?P<s>I|we)"
        r"(?:'m|'re|\s+am|\s+are)?\s+(?:now\s+|currently\s+)?(?P<k>live|living|drive|"
        r"driving|work|working|eat|eating|use|using|run|running)\b",
        lambda m: _VERB_ATTRIBUTES[m.group("k")],
    ),
    # The generic "my <attribute> is <value>", and "<value> is my (new) <attribute> (now)".
    make_rule(
        rf"{_POSSESSIVE}\s+{_NEW}(?P<k>[a-z]+(?: [a-z]+){{0,2}}?)\s+{_BE_NOW}{_VALUE}",
        lambda m: norm_words(m.group("k")),
    ),
    make_rule(
        rf"(?P<v>[^,;]{{1,60}}?)\s+{_BE_NOW}(?P<s>my|our|the user's)\s+{_NEW}"
        r"(?P<k>[a-z]+(?: [a-z]+){0,2}?)(?:\s+(?:now|these days|nowadays))?$",
        lambda m: norm_words(m.group("k")),
    ),
)

# An activity or a manner is no value ("my sister is visiting", "my day is going great").
_NOT_VALUES = re.compile(
    r"^(?:\w+ing|so|very|really|too|not|also|still|quite|a bit|kind of|sort of|getting|"
    r"going|coming|visiting|doing|feeling|being)\b",
    re.IGNORECASE,
)
# A value that ends on an article or a preposition is a fragment of a sentence, not a value.
_FRAGMENT = re.compile(r"\b(?:a|an|the|to|for|of|at|in|on|with|by|from|into)$")
_NOT_STATEMENTS = re.compile(
    r"\?\s*$|^(?:if|when|whether|maybe|perhaps|do|does|did|should|would|could|can|will|"
    r"what|where|who|which|how|why)\b|\b(?:want|wants|wanted|hope|hopes|wish|wishes|plan|"
    r"plans|planning|might|may|thinking about|considering|would like|used to|dream)\b",
    re.IGNORECASE,
)
_SENTENCES = re.compile(
    r"(?<=[.!?;:])\s+|\s*\n+\s*|,\s+(?:and|but|so)\s+|\s+[—–-]+\s+|,\s+(?=(?:I|we|We)\b)"
)
# "green's my favourite colour", "Ravi's a coffee person", "Prod's been upgraded": "is"/"has"
# (a possessive "Fatima's mobile" is left alone).
_CONTRACTIONS = re.compile(r"\b(\w+)'s\s+(my|our|the|a|an|now|been|got|gone|become)\b")


def _expand(match: re.Match[str]) -> str:
    verb = "has" if match.group(2) in ("been", "got", "gone", "become") else "is"
    return f"{match.group(1)} {verb} {match.group(2)}"


def statement_of(text: str, speaker: str | None = None) -> Statement | None:
    """The first slot a text fills, if any. ``speaker`` names who "I" is (else "user")."""
    head = _CONTRACTIONS.sub(_expand, text[:2_000].replace("’", "'"))
    named = SPEAKER.match(head)
    if named is not None and not LEAD.match(named.group(0)):
        speaker = speaker or named.group(0).rstrip(": ")
        head = head[named.end() :]
    for sentence in _SENTENCES.split(head):
        sentence = LEAD.sub("", sentence.strip()).rstrip(".!;: ")
        if not sentence or _NOT_STATEMENTS.search(sentence):
            continue
        for rule in _RULES:
            found = _statement(rule, sentence, speaker)
            if found is not None:
                return found
    return None


def _statement(rule: Rule, sentence: str, speaker: str | None) -> Statement | None:
    match = (rule.pattern.search if rule.anywhere else rule.pattern.match)(sentence)
    if match is None:
        return None
    attribute = rule.attribute(match)
    if not attribute or attribute.endswith(":"):
        return None
    groups = match.groupdict()
    raw = groups.get("v") or ""
    if attribute == "diet":
        raw = _diet_value(sentence, groups)
    value = clean_value(raw)
    proper = raw.strip()[:1].isupper()  # "Billing", "Reading": names, not activities
    if not value or (_NOT_VALUES.match(value) and not proper) or len(value.split()) > 8:
        return None
    if _FRAGMENT.search(value):
        return None  # "I got picked for a car mod workshop": "picked for a" names no car
    if rule.ended:
        value = f"not {value}"
    if attribute.split(":")[0] not in NAMED_ATTRIBUTES and (
        stem(attribute.split()[-1]) in NOT_ATTRIBUTES
    ):
        return None
    subject = norm_subject(groups.get("s") or "", speaker)
    if attribute.startswith(("version:", "deadline:")):
        subject = "*"  # a tool's version or a thing's deadline is the same for everyone
    return Statement(subject, attribute[:MAX_SLOT], value[:MAX_SLOT])


_NOT_TOOLS = word_set("to on at in by for from into onto up back out over with the a an")


def _version_of(tool: str) -> str:
    """ "version:<tool>", or "" when the word before the number is no name ("moved to 10:15")."""
    return "" if tool.lower() in _NOT_TOOLS else f"version:{tool.lower()}"


def _diet_value(sentence: str, groups: dict[str, str | None]) -> str:
    if groups.get("again"):
        return f"eats {groups['again']}"
    lowered = sentence.lower()
    for verb in ("stopped eating", "quit eating", "gave up eating", "started eating"):
        if verb in lowered:
            return f"{verb} {groups.get('v') or 'meat'}"
    return groups.get("v") or ""
