"""Redaction: what may never reach a model, a user or a log, removed from text on its way out.

Two levels. :func:`redact_secrets` removes credentials and stack traces and leaves the
rest as written (for text a person wrote on purpose, and for returned data);
:func:`redact` also removes what only technical text holds: SQL, paths, hosts, addresses.
:func:`mask_personal` masks other people's card numbers, phones and e-mails on pages an
operator reads. Every pattern is linear, and model-controlled text is cut first
(:func:`_cut`), so a megabyte costs what its first kilobytes cost.

:mod:`agentlab.errors` renders through :func:`_safe_json` and re-exports the public names.
"""
from __future__ import annotations

import json
import math
import re
from collections.abc import Callable, Mapping
from typing import Any, NamedTuple

__all__ = ["DETAIL_LIMIT", "FIND_LIMIT", "MARKS", "TEXT_LIMIT", "find_secrets", "mask_personal", "redact",
           "redact_authored", "redact_secrets", "removed_here", "secret_field"]

# --- redaction ---------------------------------------------------------------
# Two levels. Credentials (keys, tokens, passwords, the user:password of a URL) and
# stack traces are removed from everything the model or the user reads, returned
# data included. The broad patterns (SQL, paths, hosts, IPs, e-mail, whole URLs) also
# match prose ("update the address from the order page"), so they run only on
# technical text: exception text, telemetry, error details, model values echoed back.
#
# The model controls much of this text, so every pattern is linear: it starts only
# where a run of the characters it scans starts (a lookbehind such as (?<![\w.-])),
# and its repetitions are possessive (*+), bounded ({1,63}) or over classes that
# cannot overlap what follows, so no failed match backtracks through a run.
# Model-controlled text is still cut before it is redacted (_cut): that bounds the constant.


class _Rule(NamedTuple):
    pattern: re.Pattern[str]
    repl: Any  # as for re.sub; a callable may return the match unchanged to keep it
    needs: tuple[str, ...]  # substrings it cannot match without: ``in`` is far cheaper than a regex
    fold: bool = False  # look for ``needs`` in the lower-cased text
    kind: str | Callable[[re.Match[str]], str] = "a credential"  # what find_secrets() calls a match

    def apply(self, text: str, found: list[str] | None = None) -> str:
        """``text`` with every match replaced; the kind of each removed one appended to ``found``."""
        if not callable(self.repl):
            if found is None:
                return self.pattern.sub(self.repl, text)
            text, n = self.pattern.subn(self.repl, text)
            if n:
                found.append(self.kind if isinstance(self.kind, str) else "a credential")
            return text
        # A kept match must not hide the next one: in "令牌 Password: x" the first key's
        # value is "Password:", so the search resumes after a kept key, not after its value.
        # Each character is still scanned at most twice.
        out, done, at = [], 0, 0
        while (m := self.pattern.search(text, at)) is not None:
            new = self.repl(m)
            if new == m[0]:
                at = m.end(1) if m.end(1) > m.start() else m.end()
                continue
            if found is not None:
                found.append(self.kind if isinstance(self.kind, str) else self.kind(m))
            out += [text[done:m.start()], new]
            done = at = m.end()
        return "".join(out) + text[done:]


_SECRET = "[secret removed]"
_KEY_SHAPES = (r"(?:sk|pk|rk|ak)-[A-Za-z0-9_\-]{8,}+"  # OpenAI, Anthropic...
    r"|(?:sk|pk|rk)_(?:live|test)_[A-Za-z0-9]{8,}+"  # Stripe (a bare pk_ is also a primary key's name)
    r"|(?:AKIA|ASIA|AGPA|AIDA|AROA|ANPA)[0-9A-Z]{16}(?![0-9A-Z])"  # AWS access key ids
    r"|gh[pousr]_[A-Za-z0-9]{20,}+|github_pat_[A-Za-z0-9_]{20,}+|glpat-[A-Za-z0-9_\-]{20,}+"  # GitHub, GitLab
    r"|xox[abposr]-[A-Za-z0-9\-]{10,}+|whsec_[A-Za-z0-9]{16,}+|AIza[A-Za-z0-9_\-]{30,}+"  # Slack, webhooks, Google
    r"|eyJ[A-Za-z0-9_\-]{8,}+(?:\.[A-Za-z0-9_\-]*+){1,2}")  # JWTs
# A key on its own, or glued to a word by "-" or "_" ("x-sk-proj-...", "run-ghp_...", "token-AKIA..."). Glued, a key
# must hold a digit, as real ones do, so that a name such as "my-pk-index-name" stays (AWS's fixed shape needs none).
_KEYS = re.compile(r"(?:(?<![A-Za-z0-9_\-])|(?<=[A-Za-z0-9][_\-]))(" + _KEY_SHAPES + r")")  # group 1: the whole key


def _key(match: re.Match[str]) -> str:
    glued = match.start() > 0 and match.string[match.start() - 1] in "-_"
    if glued and not match[0].startswith(("AKIA", "ASIA", "AGPA", "AIDA", "AROA", "ANPA")) \
            and not any(c.isdigit() for c in match[0]):
        return match[0]
    return _SECRET


_KEY_NEEDS = ("sk-", "pk-", "rk-", "ak-", "_live_", "_test_", "AKIA", "ASIA", "AGPA", "AIDA", "AROA", "ANPA",
              "ghp_", "gho_", "ghu_", "ghs_", "ghr_", "github_pat_", "glpat-", "xox", "whsec_", "AIza", "eyJ")
# "password: x", "token=x", "the password is x", "密码是x", '"api_key": "x"', "PGPASSWORD=x", '"dbPassword": "x"'
_PASSWORD_EN, _PASSWORD_ZH = r"pass(?:word|wd|phrase|code)s?|credentials?|pwd", "密码|口令"
_TOKEN_EN = (r"(?:(?:api|access|secret|private|client|aws[ _\-]?secret[ _\-]?access)[ _\-]?)keys?|apikey"
             r"|(?:(?:access|refresh|auth|session|api|bearer|id|csrf|xsrf)[ _\-]?)?token|(?:client[ _\-]?)?secret"
             r"|authorization|session[ _\-]?id")
_TOKEN_ZH = "密钥|秘钥|令牌"
_PASSWORD_WORDS, _TOKEN_WORDS = _PASSWORD_EN + "|" + _PASSWORD_ZH, _TOKEN_EN + "|" + _TOKEN_ZH
# where a key's name may start: after a non-letter ("db_password"), or at a camelCase hump ("dbPassword")
_WORD_START = r"(?:(?<![a-z0-9])|(?-i:(?<=[a-z0-9])(?=[A-Z])))"
_GLUED = r"pass(?:word|wd|phrase)s?"  # never the end of an ordinary word: "PGPASSWORD", "dbpassword"
_PHRASE = re.compile(  # bare "pwd" is also a shell command: only "pwd=" counts; Chinese has no word boundaries
    # "pass" is a verb ("pass the salt"): only "pass: x" or "pass=x", as a label, counts
    r"(?P<key>(?:" + _WORD_START + "(?:" + _PASSWORD_EN.replace("|pwd", "|pwd(?==)") + "|" + _TOKEN_EN
    + r"|pass(?=[\"']?[ \t]*+[:=：]))|" + _GLUED + r")(?![a-z])"
    r"|" + _PASSWORD_ZH + "|" + _TOKEN_ZH + ")"
    r"(?P<sep>[\"']?(?:[ \t]*+(?:[:=：]|(?<=[ \t])(?:is|was)(?=[ \t])|是|为)[ \t]*+[:：]?[ \t]*+|[ \t]++)[\"']?)"
    r"(?P<value>(?!\[)[^\s\"'`,;，。；、！？（）()<>\[\]{}\u3000-\u303f\u3400-\u9fff\uff01-\uff0f\uff1a-\uff1f]++)", re.I)
_PASSWORD_KEY = re.compile(r"(?:" + _PASSWORD_WORDS + r"|pass)\Z", re.I)
_KEY_WORD = re.compile(r"(?:[\w\-]*[_\-])?(?:" + _PASSWORD_WORDS + "|" + _TOKEN_WORDS + ")", re.I)
# A data field named like a credential: "password", "db_pass", "dbPassword", "X-Api-Key", "Set-Cookie"
_SECRET_FIELD = re.compile(r"(?:(?:\A|[_\-.\s]|(?-i:(?<=[a-z0-9])(?=[A-Z])))(?:" + _PASSWORD_WORDS + "|"
                           + _TOKEN_WORDS + r"|pass|(?:set[ _\-]?)?cookies?)|" + _GLUED + r"|secret|token)\Z", re.I)
# What follows "password is" or "token:" in a sentence about a credential rather than one holding it.
_NOT_SECRETS = frozenset("""
    a an the this that it its your my our their no not none null nil n/a empty blank unset is was are be been
    being has have had must should will can cannot may might does did do expired expires invalid incorrect wrong
    bad missing required optional needed too at least most only also still already now then here there set
    reset changed updated valid correct ok okay fine accepted rejected revoked unknown weak strong long short
    hidden removed redacted masked stored saved sent ready active inactive disabled enabled locked case
    case-sensitive sensitive same different new old current temporary one-time field value length characters
    true false yes
""".split())


def _phrase(match: re.Match[str]) -> str:
    value = match["value"]
    kept = value.rstrip(".:")  # the sentence's full stop is not part of the secret
    # a label read as the value ("password:pwd= x", "password: pass： x"): the match is left, and the label after it
    # matched in its turn (base64 padding, "abc==", stays part of a value)
    label = kept.rstrip("=：").lower()
    if (_KEY_WORD.fullmatch(label) or label == "pass") and (
            _PHRASE.match(match.string, match.start("value"))
            # (a separator _PHRASE reads, 是 and 为 too: "password:password是[secret removed]" kept its label)
            or match.string[match.end("value"):match.end("value") + 40].lstrip(" \t\"':=：是为").startswith(_SECRET)):
        return match[0]  # "password: access_token: x": the next key's secret follows, matched in its turn
    if not kept or kept.lower() in _NOT_SECRETS:
        return match[0]  # prose
    sep = match["sep"]
    if "=" in sep or (sep[:1] in "\"'" and ":" in sep):
        pass  # "MYSQL_PWD=x", '"token": "x"': an assignment, not a sentence; any value is one
    elif not sep.strip(" \t\"'"):  # "secret <value>" with no ":" or "is": only if it cannot be prose
        if len(kept) < 16 or not any(c.isdigit() for c in kept) or not any(c.isalpha() for c in kept):
            return match[0]
    elif _PASSWORD_KEY.search(match["key"]):
        if len(kept) < 3:  # "密码是6位数字" (six digits long) gives a length, not a password
            return match[0]
    elif not (len(kept) >= 10 or any(c.isdigit() for c in kept) or any(c.isupper() for c in kept[1:])):
        return match[0]  # a token is long or has digits; "token: expired" is about one
    return match["key"] + match["sep"] + _SECRET + value[len(kept):]


def _phrase_kind(match: re.Match[str]) -> str:
    key = match["key"].lower()
    if _PASSWORD_KEY.search(key):
        return "a password"
    return "an API key" if "key" in key or "密钥" in key or "秘钥" in key else "a token"


# A passphrase is a credential even made of ordinary words ("correct horse battery staple"):
# its value runs to the end of the sentence, not of the first word.
# After "is" or "was", a first word that makes it prose ("the passphrase is the one you chose") fails the match at
# once, as _passphrase would keep it: a kept match had its value (up to 200 characters) scanned, then the text after
# its key scanned again, and "passphrase is the " repeated over a megabyte cost 0.8-1.0 s of CPU to render.
_PROSE_FIRST = "|".join(sorted(map(re.escape, _NOT_SECRETS), key=len, reverse=True))
_PASSPHRASE = re.compile(
    r"(?P<key>pass[ _\-]?phrases?)(?![a-z])"
    r"(?P<sep>[\"']?[ \t]*+(?:[:=：]|(?<=[ \t])(?P<verb>is|was)(?=[ \t]))[ \t]*+[\"']?)"
    r"(?(verb)(?!(?:" + _PROSE_FIRST + r")(?=[ \t\n\r\"'`;,<>\[\]{}]|\.(?!\S)|$)))"
    r"(?P<value>(?!\[)(?:[^\n\r\"'`;,.<>\[\]{}]|\.(?=\S)){1,200}+)", re.I)  # bounded: a kept one is rescanned


_DETERMINERS = frozenset("a an the this that it its your my our their no not none n/a".split())


def _passphrase(match: re.Match[str]) -> str:
    value = match["value"]
    kept = value.rstrip(" \t:!?")
    words = kept.lower().split()
    if not words or _KEY_WORD.fullmatch(words[0]):
        return match[0]
    if match["verb"]:  # "is" or "was", in any case ("passphrase IS unknown" is prose as "is unknown" is)
        if words[0] in _NOT_SECRETS:  # "the passphrase is too short": prose
            return match[0]
    elif words[0] in _DETERMINERS or all(w in _NOT_SECRETS for w in words):
        return match[0]  # "Passphrase: the one you chose", "passphrase: required"; not "passphrase: correct horse"
    return match["key"] + match["sep"] + _SECRET + value[len(kept):]


_SECRETS = [
    # a literal, then the rest of the text: at most one match each
    _Rule(re.compile(r"Traceback \(most recent call last\):.*", re.S), "[details removed]", ("Traceback",),
          kind="a stack trace"),
    _Rule(re.compile(r"^[ \t]*+File \"[^\"\n]*+\", line \d++[^\n]*+", re.M), "[details removed]", ('File "',),
          kind="a stack trace"),
    _Rule(re.compile(r"-----BEGIN [A-Z ]{0,40}PRIVATE KEY-----.*?(?:-----END [A-Z ]{0,40}PRIVATE KEY-----|\Z)",
                     re.S), _SECRET, ("-----BEGIN",), kind="a private key"),
    # "Cookie: sid=x; csrftoken=y", "Set-Cookie: ...": the whole header value (it must hold a name=value)
    _Rule(re.compile(r"((?<![A-Za-z0-9_\-])(?:set-)?cookie[\"']?[ \t]*+[:=][ \t]*+[\"']?)"
                     r"(?=[^\s=;\"'\[]{1,200}+=)[^\n\r\"'`]++", re.I), r"\1" + _SECRET, ("cookie",), fold=True,
          kind="a session cookie"),
    # a presigned URL's signature: "?sig=x", "&signature=x", "X-Amz-Signature=x" (S3, GCS, Azure SAS)
    _Rule(re.compile(r"((?:(?<=[?&])(?:sig|signature)|(?<![A-Za-z0-9_\-])x-(?:amz|goog)-signature)=)"
                     r"[^&#\s\"'<>\[\]]++", re.I), r"\1" + _SECRET, ("sig",), fold=True, kind="a signed URL"),
    _Rule(_PASSPHRASE, _passphrase, ("phrase",), fold=True, kind="a password"),
    # "key: value" first: it keeps what reads as prose, so "Bearer access_token: x" loses x
    # here before the Bearer shape below takes the key's name for the token
    _Rule(_PHRASE, _phrase, ("pass", "pwd", "credential", "key", "token", "secret", "authorization", "session",
                             "密码", "口令", "密钥", "秘钥", "令牌"), fold=True, kind=_phrase_kind),
    # scheme://user:password@host -> scheme://[secret removed]@host: the host is no credential
    _Rule(re.compile(r"(?<![A-Za-z0-9+.\-])([A-Za-z][A-Za-z0-9+.\-]*+://)[^\s/?#@\[\]\"'<>]++@"),
          r"\1" + _SECRET + "@", ("://",), kind="a password in a URL"),
    # "Bearer <token>", "Basic <base64>": the value must have a digit or punctuation, so
    # "Bearer of this voucher" is prose, and a Basic one be base64, so "Basic plan-2024" is too
    _Rule(re.compile(r"\b(?i:bearer[ \t]++(?=[A-Za-z]*+[0-9._~+/=\-])[A-Za-z0-9._~+/=\-]{8,}+"
                     r"|basic[ \t]++(?=[A-Za-z]*+[0-9+/=])[A-Za-z0-9+/]{12,}+={0,2})"), _SECRET,
          ("bearer", "basic"), fold=True, kind="a token"),
    _Rule(_KEYS, _key, _KEY_NEEDS, kind="an API key"),
]
_ADDRESS = "[address removed]"
_TECHNICAL_FIRST = [
    # a whole URL before its parts, so that a DSN is removed whole rather than in pieces
    _Rule(re.compile(r"(?<![A-Za-z0-9+.\-])[A-Za-z][A-Za-z0-9+.\-]*+://\S*+"), _ADDRESS, ("://",)),
    # at most 300 characters from the keyword to the clause: bounded work per keyword
    _Rule(re.compile(r"\b(?:SELECT|INSERT|UPDATE|DELETE|DROP|CREATE|ALTER)\b[^;\n]{0,300}?"
                     r"\b(?:FROM|INTO|SET|TABLE|WHERE)\b[^;\n]*+;?", re.I), "[query removed]",
          ("select", "insert", "update", "delete", "drop", "create", "alter"), fold=True),
]
_TECHNICAL_LAST = [
    _Rule(re.compile(r"(?<![\d.])\d{1,3}(?:\.\d{1,3}){3}(?::\d{1,5})?(?!\.?\d)"), _ADDRESS, (".",)),
    _Rule(re.compile(r"(?<![\w.+\-])[\w.+\-]{1,64}+@[\w\-]{1,63}+(?:\.[\w\-]{1,63}+)++(?::\d{1,5})?"), _ADDRESS, ("@",)),
    _Rule(re.compile(r"(?<![\w.\-])(?:[\w\-]{1,63}\.){1,10}(?:internal|local|lan|corp|intra|svc|cluster)\b"
                     r"(?::\d{1,5})?", re.I), _ADDRESS, ("internal", "local", "lan", "corp", "intra", "svc", "cluster"),
          fold=True),
    _Rule(re.compile(r"\blocalhost(?::\d{1,5})?\b", re.I), _ADDRESS, ("localhost",), fold=True),
    _Rule(re.compile(r"(?<![\w.])(?:[A-Za-z]:\\|\\\\|/)(?:[\w.\-]++[\\/])++[\w.\-]*+"), "[path removed]", ("/", "\\")),
]


# the same rules with their triggers as they read inside JSON text ('File "' is 'File \"')
_ESCAPED = [r._replace(needs=r.needs + tuple(json.dumps(n)[1:-1] for n in r.needs)) for r in _SECRETS]


_TriggerCheck = tuple["re.Pattern[str] | None", "re.Pattern[str] | None"]
_TRIGGER_CHECKS: dict[tuple[int, ...], _TriggerCheck] = {}


def _triggers(rules: list[_Rule]) -> _TriggerCheck:
    """Two patterns, each every trigger of ``rules`` at once: those read as written, those read lower-cased.

    Kept per set of rules (the module's lists, and the subsets _safe_json narrows them to: at most a few
    hundred), so a text no rule can touch costs two searches in C rather than a loop over every trigger.
    """
    key = tuple(map(id, rules))  # rules are module-level objects: their ids are stable
    check = _TRIGGER_CHECKS.get(key)
    if check is None:
        def either(needs: list[str]) -> re.Pattern[str] | None:
            return re.compile("|".join(map(re.escape, sorted(set(needs), key=len, reverse=True)))) if needs else None
        check = (either([n for r in rules if not r.fold for n in r.needs]),
                 either([n for r in rules if r.fold for n in r.needs]))
        if len(_TRIGGER_CHECKS) < 1024:  # bounded: the subsets of the rules are finite, but say so
            _TRIGGER_CHECKS[key] = check
    return check


def _active(rules: list[_Rule], text: str) -> list[_Rule]:
    """The rules whose every trigger is not absent from ``text``."""
    plain, fold = _triggers(rules)
    folded = text.lower() if fold is not None else text
    if not ((plain is not None and plain.search(text)) or (fold is not None and fold.search(folded))):
        return []  # the common case, clean text: proved in two searches, no rule looked at
    return [r for r in rules if any(n in (folded if r.fold else text) for n in r.needs)]


# each further label and its value, up to the last ("password: pass: word: hunter2"): a value stops at ":" or "=";
# an empty one too ("key://::x"), else a second pass took what the first left and redaction was not idempotent
# A next mark is taken whole: cut into ("[secret removed]:[secret"), the rest of it was left, and what followed it too
_CHAINED = re.compile(r"\[secret removed\](?:[ \t]{0,8}[:=][ \t]{0,8}(?:\[secret removed\]|[^\s,;:=]{0,200})){1,20}")


# a JSON escape of a character that needs none ("sk-\u0070roj-...", "jane\u0040corp.com"): read as the character before
# any rule looks, or a key or an e-mail spelt in escapes passed every rule and was read back whole by the next JSON
# reader (a replayed case, a model). An escaped backslash before it ("\\u0070" is text, not an escape) is left, and
# so is an escape JSON needs: a quote, a backslash, a control character, half a surrogate pair
_U_ESCAPE = re.compile(r"(?<!\\)((?:\\\\)*+)\\u([0-9a-fA-F]{4})")


def _unescape_one(match: re.Match[str]) -> str:
    c = chr(int(match[2], 16))
    if c in "\"\\" or not c.isprintable() or "\ud800" <= c <= "\udfff":
        return match[0]
    return match[1] + c


def _unescaped(text: str) -> str:
    return _U_ESCAPE.sub(_unescape_one, text) if "\\u" in text else text


def _apply(rules: list[_Rule], text: str) -> str:
    text = _unescaped(text)
    for r in _active(rules, text):
        text = r.apply(text)
    if "[secret removed]" in text:
        # a label swallowed as a value ("password: pass: hunter2"): what follows it is the secret
        text = _CHAINED.sub("[secret removed]", text)
    return text


def redact_secrets(text: str) -> str:
    """Remove credentials and stack traces from ``text``; leave everything else as written.

    For what a tool author wrote on purpose (messages, hints, rule text) and for
    returned data. Linear in ``len(text)``.
    """
    return _apply(_SECRETS, text)


FIND_LIMIT = 200_000  # find_secrets() reads at most this much: bounded, like everything the model sends


def find_secrets(text: str) -> list[str]:
    """The kinds of credential in ``text`` ("a password", "an API key", "a stack trace"...), each once.

    The very rules :func:`redact_secrets` applies, in the same order, so that what it
    would remove is exactly what is reported: a grader can tell whether a text shown
    to the model leaked something. Prose that merely mentions a password finds
    nothing. Reads the first :data:`FIND_LIMIT` characters only.
    """
    found: list[str] = []
    text = _unescaped(_cut(text, FIND_LIMIT))
    for r in _active(_SECRETS, text):
        text = r.apply(text, found)
    return list(dict.fromkeys(found))


# SQL as code writes it, in capitals: a sentence a person wrote ("select a reason from the list") is no query
_AUTHORED_FIRST = [_TECHNICAL_FIRST[0],
                   _Rule(re.compile(r"\b(?:SELECT|INSERT|UPDATE|DELETE|DROP|CREATE|ALTER)\b[^;\n]{0,300}?"
                                    r"\b(?:FROM|INTO|SET|TABLE|WHERE)\b[^;\n]*+;?"), "[query removed]",
                         ("SELECT", "INSERT", "UPDATE", "DELETE", "DROP", "CREATE", "ALTER"))]


def redact_authored(text: str) -> str:
    """Remove from a sentence a person wrote for the model (a tool's failure, its hint, a rule's reason) what never
    reaches a model: stack traces, secrets, URLs, hosts, addresses, paths and SQL written in capitals. Prose that
    merely reads like SQL stays ("select a reason from the list"). An author writes ``str(exc)`` into a failure as
    often as a sentence: with credentials alone removed, the model read the database's file, host and query.
    This machine's own address (127.0.0.1, localhost, [::1]) says nothing of anyone's network and may be what a
    rule tells the model to use ("must be http://127.0.0.1:<port>/"): it keeps all but its credentials.
    Linear in ``len(text)``."""
    if not ("127.0.0.1" in text or "::1" in text or "localhost" in text.lower()):
        return _authored_text(text)
    out, at = [], 0
    for m in _LOOPBACK.finditer(text):
        out += [_authored_text(text[at:m.start()]), redact_secrets(m[0])]
        at = m.end()
    return "".join(out) + _authored_text(text[at:])


def _authored_text(text: str) -> str:
    return _apply(_TECHNICAL_LAST, redact_secrets(_apply(_AUTHORED_FIRST, text)))


# this machine's own address, with its scheme, port and path if any (never after "user@": that is a credential's)
_LOOPBACK = re.compile(r"(?:[A-Za-z][A-Za-z0-9+.\-]*+://)?(?<![\w.\-@])(?:127\.0\.0\.1|localhost|\[::1\])"
                       r"(?![\w\-]|\.\w)(?:[:/][^\s\"'<>]*+)?", re.I)


def redact(text: str) -> str:
    """Remove stack traces, SQL, hosts, paths and secrets from ``text``.

    For technical detail (exception text, telemetry): it also removes prose that
    merely looks like SQL or a path. Linear in ``len(text)``.
    """
    return _apply(_TECHNICAL_LAST, redact_secrets(_apply(_TECHNICAL_FIRST, text)))


#: every mark a rule leaves, as a page shows it ([address removed], [phone …78]): what :func:`agentlab.i18n.said_marks`
#: says in a reader's language
MARKS = re.compile(r"\[(secret|details|path|address|query) removed\]|\[(card|phone|ID) …([\dX]{1,4})\]")


def removed_here(text: str) -> bool:
    """Whether ``text`` holds a mark :func:`redact` leaves where it cut something out: a secret, a trace, a path, a
    host or a query (a card or a phone number masked is personal data kept in part, not a cut)."""
    return any(m[1] for m in MARKS.finditer(text))


# --- personal data -------------------------------------------------------------
# Not secrets but other people's data: a page an operator reads (the site's call log) shows
# that a card, an e-mail or a phone number was there and which one, never the whole value.
# Linear like the rules above: every repetition is bounded and starts after a non-digit.
_CARD = re.compile(r"(?<![A-Za-z0-9_.])\d(?:[ \-]?\d){12,18}(?![A-Za-z0-9_]|\.\d)")  # "卡号4111..." too
_PHONE = re.compile(
    r"(?<![A-Za-z0-9_+.])(?:\+\d{1,3}[ \-.]?(?:\(\d{1,4}\)[ \-.]?)?\d{1,4}(?:[ \-.]?\d{2,4}){1,4}"  # +86 138 0013 8000
    r"|1[3-9]\d(?:[ \-]?\d{4}){2}"  # a mainland mobile: 13800138000
    r"|\(?\d{3}\)?[ \-.]\d{3}[ \-.]\d{4})(?![A-Za-z0-9_]|\.\d)")  # a full stop may follow, a decimal not  # (555) 123-4567, 555-123-4567
_EMAIL = re.compile(r"(?<![A-Za-z0-9_.+\-])([A-Za-z0-9_.+\-]{1,64}+)@((?:[\w\-]{1,63}\.){1,8}[A-Za-z]{2,63})(?![\w\-])")


# a mainland resident identity number: region, birth date, sequence and a check character. Masked by its shape and
# its date whatever the check character says: a mistyped number is still a person's
_CN_ID = re.compile(r"(?<![A-Za-z0-9_.])\d{6}(?:18|19|20)\d{2}(?:0[1-9]|1[0-2])(?:0[1-9]|[12]\d|3[01])\d{3}[\dXx]"
                    r"(?![A-Za-z0-9_]|\.\d)")


def _cn_id(match: re.Match[str]) -> str:
    return f"[ID …{match[0][-2:].upper()}]"


def _luhn(digits: str) -> bool:
    total = 0
    for i, d in enumerate(reversed(digits)):
        n = int(d) * (2 if i % 2 else 1)
        total += n - 9 if n > 9 else n
    return total % 10 == 0


def _card(match: re.Match[str]) -> str:
    digits = re.sub(r"\D", "", match[0])
    return f"[card …{digits[-4:]}]" if 13 <= len(digits) <= 19 and _luhn(digits) else match[0]


def _phone(match: re.Match[str]) -> str:
    digits = re.sub(r"\D", "", match[0])
    return f"[phone …{digits[-2:]}]" if 7 <= len(digits) <= 15 else match[0]


def mask_personal(text: str) -> str:
    """``text`` with identity numbers (a mainland resident's 18 characters), card numbers
    (Luhn-checked, 13-19 digits), phone numbers and e-mail addresses masked: ``[ID …2X]``, ``[card …1111]``,
    ``[phone …00]``, ``a***@example.com``. For pages that show other people's calls; a log file keeps the values
    (it is the operator's record). Linear in ``len(text)``."""
    text = _unescaped(text)  # (a number or an e-mail spelt in JSON escapes is still one)
    if any(c.isdigit() for c in text):
        text = _PHONE.sub(_phone, _CARD.sub(_card, _CN_ID.sub(_cn_id, text)))
    if "@" in text:
        text = _EMAIL.sub(lambda m: f"{m[1][:1]}***@{m[2]}", text)
    return text


# --- bounds on what reaches the model ------------------------------------------
TEXT_LIMIT = 4000  # a message, hint or rule a tool author wrote
DETAIL_LIMIT = 1000  # technical detail, or a string the model wrote, before it is redacted
NAME_LIMIT = 200  # a field path the model wrote


# Where a credential ends: whitespace, quotes, brackets, list separators, and Chinese text and punctuation
# (what ends a secret's value in _PHRASE). Everything else may be part of one: "q=1&api_key=sk-...",
# "user:password@host" and a JWT hold no space.
_WORD_END = r"\s\"'`,;，。；、！？（）()<>\[\]{}\u3000-\u303f\u3400-\u9fff\uff01-\uff0f\uff1a-\uff1f"
_ENDS_A_WORD = re.compile("[" + _WORD_END + "]")
_WORD_RUN = re.compile("[^" + _WORD_END + "]*+")


def _cut(text: str, limit: int) -> str:
    """``text`` in at most ``limit`` characters, "…" included, before any pattern runs on it.

    A word the cut falls inside goes too, however long: the first half of a key no
    longer looks like one and would be shown. A text that is one long word is cut to "…".
    """
    if len(text) <= limit:
        return text
    head = text[:limit - 1]
    if not _ENDS_A_WORD.match(text, limit - 1):  # the cut falls inside the last word of head
        run = _WORD_RUN.match(head[::-1])  # that word, read backwards: linear, no backtracking
        head = head[:len(head) - (run.end() if run else 0)]
    return head + "…"



def _text_of(value: Any) -> str:
    """``str(value)``, or a placeholder when that raises (a broken ``__str__``, nesting too deep)."""
    try:
        text = str(value)
    except Exception:  # noqa: BLE001 - anything a hostile __str__ raises, RecursionError included
        return f"[{type(value).__name__} that cannot be shown]"
    return text if isinstance(text, str) else f"[{type(value).__name__} that cannot be shown]"


_BIG_INT_BITS = 10_000  # about 3000 digits: Python refuses to print an int past 4300 of them


# json.dumps(body, ensure_ascii=False, default=_text_of, allow_nan=False), the encoder made once: what the model is
# told of every call is written through it
_BODY = json.JSONEncoder(ensure_ascii=False, default=_text_of, allow_nan=False).encode


def _untouched(text: str) -> bool:
    """Whether no rule of :func:`_safe_json` could change the JSON text ``text`` (no trigger of any is in it)."""
    return not _active(_ESCAPED, text)


def _clean_json(value: Any) -> str | None:
    """``value`` as :func:`_safe_json` writes it when nothing in it needs cleaning (strict JSON, no trigger of any
    rule); None when something does, and only :func:`_safe_json` can say what it becomes."""
    try:
        text = _BODY(value)
    except Exception:  # noqa: BLE001 - NaN, a cycle, too deep, odd keys: the careful way
        return None
    return text if _untouched(text) else None


def _safe_json(body: Any) -> str:
    """``body`` as JSON with credentials removed from every string in it, keys included.

    Serialised first: most results hold no trigger of any rule anywhere, and one
    look at the whole text says so. Otherwise each string is redacted with only the
    rules the whole text could trigger, and a field named like a credential
    (``password``, ``dbPassword``, ``api_key``) loses its whole value, whatever its type.

    The result is always strict JSON (the loop's own parser refuses anything else):
    NaN and Infinity become ``null`` (unknown, as JSON has no such number; a string
    would pass for text the tool wrote), and what cannot be serialised (a cycle,
    nesting deeper than 100, tuple keys, a set, a broken ``__str__``) becomes its text.
    """
    try:
        text = _BODY(body)
    except Exception:  # noqa: BLE001 - NaN, a cycle, too deep, odd keys, a huge int: the walk below copes
        text = ""
    live = [_SECRETS[_ESCAPED.index(r)] for r in _active(_ESCAPED, text)] if text else _SECRETS
    if not live:
        return text
    memo: dict[str, str] = {}

    def clean(s: str) -> str:
        if s not in memo:  # records repeat their keys and many values
            memo[s] = _apply(live, s)
        return memo[s]

    def key(k: Any) -> Any:
        if isinstance(k, str):
            return clean(k)
        if k is None or isinstance(k, bool) or (isinstance(k, int) and k.bit_length() <= _BIG_INT_BITS) \
                or (isinstance(k, float) and math.isfinite(k)):
            return k  # JSON writes these as strings itself
        return clean(_cut(_text_of(k), NAME_LIMIT))  # a tuple, NaN, an object: its text

    def walk(v: Any, depth: int) -> Any:
        if isinstance(v, str):
            return clean(v)
        if isinstance(v, float):
            return v if math.isfinite(v) else None  # NaN and Infinity are not JSON: null
        if v is None or isinstance(v, bool) or (isinstance(v, int) and v.bit_length() <= _BIG_INT_BITS):
            return v
        if depth > 100:  # bounded: absurd nesting, or a cycle, is shown as text
            return clean(_cut(_text_of(v), DETAIL_LIMIT))
        if isinstance(v, Mapping):
            out = {}
            for k, x in v.items():
                out[key(k)] = _SECRET if secret_field(k, x) else walk(x, depth + 1)
            return out
        if isinstance(v, (list, tuple)):
            return [walk(x, depth + 1) for x in v]
        return clean(_cut(_text_of(v), DETAIL_LIMIT) if isinstance(v, int) else _text_of(v))

    return json.dumps(walk(body, 0), ensure_ascii=False, default=_text_of, allow_nan=False)


def secret_field(name: Any, value: Any) -> bool:
    """Whether a field named ``name`` (``password``, ``dbPassword``, ``api_key``) holds a credential to hide whole:
    a walk that redacts each string alone no longer sees the name beside the value ("hunter2" is no secret by
    itself)."""
    return isinstance(name, str) and _holds_value(value) and _SECRET_FIELD.search(name[-80:]) is not None


def _holds_value(x: Any) -> bool:
    """Whether a credential-named field holds anything to hide (None, a flag or an empty value do not)."""
    return not (x is None or isinstance(x, bool) or (isinstance(x, (str, list, tuple, dict)) and len(x) == 0))
