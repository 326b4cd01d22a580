"""Personal data and secrets in a memory's text: found, redacted before a memory is promoted to
a persistent scope, or blocking the promotion.

**Redacted** (replaced by ``[REDACTED]``), each candidate validated so look-alikes stay:

- e-mail addresses (a domain with a top-level domain);
- phone numbers: ``phonenumbers`` (Google's libphonenumber) with ``STRICT_GROUPING``
  leniency (a valid number, its digits grouped as that country writes them), in the default
  region or international ("+..."), so dates, versions and ids ("INV-2024-000123") are not;
- payment card numbers: 13-19 digits with the Luhn checksum and a card network's first digit;
- IBANs: country code, check digits and ``python-stdnum``'s ISO 7064 checksum;
- US social security numbers (``python-stdnum``: no 000/666/9xx area, no 00 group, no 0000
  serial), written 123-45-6789, or nine digits right after "SSN";
- IP addresses (``ipaddress`` validates v4 and v6; "version 1.2.3.4" is a version);
- API keys and tokens by their issuers' shapes: OpenAI ``sk-``, GitHub ``ghp_``/``github_pat_``,
  AWS ``AKIA``/``ASIA``, Slack ``xox?-``, Google ``AIza``, Stripe ``sk_live_``, JWTs, bearer tokens.

**Secrets** block promotion altogether (the memory stays where it was written): a private key
block, a password or secret given a value ("password: hunter2!", "db_password=..."), AWS
secret access keys, credentials inside a URL ("postgres://app:pw@db").
"""

from __future__ import annotations

import ipaddress
import re
from collections import Counter
from dataclasses import dataclass
from enum import StrEnum

import phonenumbers
from stdnum import iban, luhn
from stdnum.us import ssn

REDACTED = "[REDACTED]"


class PiiKind(StrEnum):
    EMAIL = "email"
    PHONE = "phone"
    CARD = "card"
    IBAN = "iban"
    NATIONAL_ID = "national_id"
    IP_ADDRESS = "ip_address"
    API_KEY = "api_key"


@dataclass(frozen=True, slots=True)
class Finding:
    kind: PiiKind
    start: int
    end: int


@dataclass(frozen=True, slots=True)
class Redaction:
    text: str
    counts: Counter[PiiKind]

    @property
    def total(self) -> int:
        return sum(self.counts.values())


_EMAIL = re.compile(
    r"(?<![\w.+-])[A-Za-z0-9._%+-]+@[A-Za-z0-9-]+(?:\.[A-Za-z0-9-]+)*\.[A-Za-z]{2,}\b"
)
_CARD = re.compile(r"(?<![\d-])\d(?:[ -]?\d){12,18}(?![\d-])")
_IBAN = re.compile(r"\b[A-Z]{2}\d{2}(?: ?[A-Z0-9]){11,30}\b")
_SSN = re.compile(r"(?<![\d-])\d{3}-\d{2}-\d{4}(?![\d-])")
_SSN_PLAIN = re.compile(r"\b(?:ssn|social security(?: number| no\.?)?)\W{0,3}(\d{9})\b", re.I)
_IPV4 = re.compile(r"(?<![\w.])(?:\d{1,3}\.){3}\d{1,3}(?![\w.]*\d)")
_IPV6 = re.compile(r"(?<![\w:])(?:[0-9A-Fa-f]{0,4}:){2,7}[0-9A-Fa-f]{0,4}(?![\w:])")
_VERSION_BEFORE = re.compile(r"(?:\bv|version|release|build)\s*$", re.I)
_TOKENS = re.compile(
    r"\b(?:"
    r"sk-(?:proj-|ant-)?[A-Za-z0-9_-]{20,}"
    r"|(?:ghp|gho|ghs|ghu|ghr)_[A-Za-z0-9]{30,}"
    r"|github_pat_[A-Za-z0-9_]{40,}"
    r"|(?:AKIA|ASIA)[0-9A-Z]{16}"
    r"|xox[abposr]-[A-Za-z0-9-]{10,}"
    r"|AIza[0-9A-Za-z_-]{35}"
    r"|(?:sk|rk|pk)_(?:live|test)_[A-Za-z0-9]{16,}"
    r"|eyJ[A-Za-z0-9_-]{8,}\.eyJ[A-Za-z0-9_-]{8,}\.[A-Za-z0-9_-]{8,}"
    r")"
    r"|(?<=\bBearer )[A-Za-z0-9._~+/-]{20,}=*",
)
_SECRETS = (
    ("private key", re.compile(r"-----BEGIN (?:[A-Z]+ )*PRIVATE KEY-----")),
    (
        "password",
        re.compile(
            r"\b(?:[a-z_]*pass(?:word|wd|phrase)?|pwd|secret|client_secret|api_secret)\b"
            r"[\"']?\s*(?:is|=|:)\s*[\"']?(?=[^\s\"']*[\d_!@#$%^&*+=~?-])[^\s\"']{4,}",
            re.I,
        ),
    ),
    ("aws secret key", re.compile(r"\baws_secret_access_key\b\s*[=:]\s*\S{20,}", re.I)),
    ("credentials in a URL", re.compile(r"\b[a-z][a-z0-9+.-]*://[^\s:/@]+:[^\s@/]+@[^\s]+", re.I)),
)


def find_pii(text: str, phone_region: str = "US") -> list[Finding]:
    """Every redactable finding, earliest first, overlaps resolved in favour of the earlier and
    longer one."""
    found = [
        *(Finding(PiiKind.API_KEY, m.start(), m.end()) for m in _TOKENS.finditer(text)),
        *(Finding(PiiKind.EMAIL, m.start(), m.end()) for m in _EMAIL.finditer(text)),
        *_ibans(text),
        *_cards(text),
        *_ssns(text),
        *_ips(text),
        *_phones(text, phone_region),
    ]
    kept: list[Finding] = []
    for finding in sorted(found, key=lambda f: (f.start, -(f.end - f.start))):
        if not kept or finding.start >= kept[-1].end:
            kept.append(finding)
    return kept


def redact(text: str, phone_region: str = "US") -> Redaction:
    """``text`` with every finding replaced by ``[REDACTED]``, and the count per kind."""
    findings = find_pii(text, phone_region)
    parts, last = [], 0
    for finding in findings:
        parts += [text[last : finding.start], REDACTED]
        last = finding.end
    parts.append(text[last:])
    return Redaction("".join(parts), Counter(f.kind for f in findings))


def secret_in(text: str) -> str | None:
    """What kind of secret ``text`` holds (password, private key, ...), or None."""
    for name, pattern in _SECRETS:
        if pattern.search(text):
            return name
    return None


def _ibans(text: str) -> list[Finding]:
    return [
        Finding(PiiKind.IBAN, m.start(), m.end())
        for m in _IBAN.finditer(text)
        if iban.is_valid(m.group())
    ]


def _cards(text: str) -> list[Finding]:
    found = []
    for m in _CARD.finditer(text):
        digits = re.sub(r"\D", "", m.group())
        if 13 <= len(digits) <= 19 and digits[0] in "3456" and luhn.is_valid(digits):
            found.append(Finding(PiiKind.CARD, m.start(), m.end()))
    return found


def _ssns(text: str) -> list[Finding]:
    found = [
        Finding(PiiKind.NATIONAL_ID, m.start(), m.end())
        for m in _SSN.finditer(text)
        if ssn.is_valid(m.group())
    ]
    found += [
        Finding(PiiKind.NATIONAL_ID, m.start(1), m.end(1))
        for m in _SSN_PLAIN.finditer(text)
        if ssn.is_valid(m.group(1))
    ]
    return found


def _ips(text: str) -> list[Finding]:
    found = []
    for pattern in (_IPV4, _IPV6):
        for m in pattern.finditer(text):
            if _VERSION_BEFORE.search(text[: m.start()]):
                continue
            try:
                ipaddress.ip_address(m.group())
            except ValueError:
                continue
            found.append(Finding(PiiKind.IP_ADDRESS, m.start(), m.end()))
    return found


def _phones(text: str, region: str) -> list[Finding]:
    leniency = phonenumbers.Leniency.STRICT_GROUPING
    return [
        Finding(PiiKind.PHONE, match.start, match.end)
        for match in phonenumbers.PhoneNumberMatcher(text, region, leniency=leniency)
    ]
