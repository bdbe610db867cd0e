"""The triage rubric: seven reward components, each in [0, 1], weighted into a total.

Every component reads the episode's `submitted` event (the answer) and the task's ground truth. With
no submission every component is 0, except `format`, which gives partial credit for an attempted but
invalid `submit_resolution`. The formulas are in this package's README; in short:

* format       0.6 for an accepted submission + 0.4 x share of well-formed citation ids
               (0.3 for an attempted submit_resolution that failed the schema); minus 0.1 per invalid action.
* correct      1 when the episode succeeds (`succeeded`: the right escalation decision, and a correct answer or, for
               an unanswerable ticket, no citation), else 0: being right pays in its own right, not only by ROUGE-L.
* resolution   ROUGE-L F1 (rouge-score) between the resolution and the gold, over stemmed content words.
* grounding    answerable: F1(precision, recall) of cited gold ids x (1 - share of fabricated citations)
               x substance (below: a citation supports what the text says, so "." citing the gold earns little);
               unanswerable: 1 with no citations, else (1 - fabricated share) / (1 + n citations).
               Precision counts every citation, repeats included; a citation is fabricated when the
               agent never saw that id (reader: not in the prompt; agent: not in a search result or opened record).
* calibration  0 when the escalation decision is wrong, else 1 - (confidence - correct)^2 (for a hedge, an answer
               that covers the gold but is less than a fifth the gold's, the lower of correct = 0 and 1), where correct
               means the ticket is answerable and the answer is right: ROUGE-L recall >= 0.5, or grounding > 0.5
               with recall >= 0.5 of the cited gold article's shown steps in runs of their words (`in_runs`); ROUGE-L
               precision >= 0.2 either way; no other shown article's steps listed; the gold's steps not denied
               (see `is_correct`).
* parsimony    brevity x focus x substance: brevity = min(1, budget / words), budget = max(gold words, ticket
               words); focus = the lowest share, over the answer's sentence prefixes, of its content words that
               occur in the gold (ticket words are neutral); substance = min(1, share / 0.5), share = the gold's
               (or a shown gold article's steps') content terms the answer uses, ticket terms aside. 0 when empty.
* repetition   1 / (1 + repeated sentences + repeated citations).

Padding never pays: appending text after a finished sentence can only lower parsimony (a minimum over
prefixes and a length ratio; substance rises only with gold terms the answer lacked, which is saying more of
it), and appending text that shares no content word with the gold can only lower resolution and the total. The
tests check both over the shipped task set.
"""

from __future__ import annotations

import functools
import html
import math
import re
import unicodedata
from collections import Counter
from collections.abc import Mapping, Set
from dataclasses import dataclass, field
from typing import Any

from drill.core.rubric import Component, ComponentFn, Rubric
from drill.core.text import as_read
from drill.core.types import Episode
from drill.envs.triage.corpus import ID_PATTERN, TriageTask
from drill.envs.triage.text import ContentTokenizer, content_terms, sentences, split_sentences, words

DEFAULT_WEIGHTS: dict[str, float] = {
    "format": 0.10,
    "correct": 0.15,
    "resolution": 0.10,
    "grounding": 0.20,
    "calibration": 0.20,
    "parsimony": 0.15,
    "repetition": 0.10,
}
CORRECT_ROUGE_RECALL = 0.5
"""ROUGE-L recall against the gold at or above which an answer counts as correct without a gold citation."""
CORRECT_MIN_PAIRS = 0.8
"""A cited answer covers half the shown steps in runs, as written: it has at least this share of the content-word
pairs (adjacent, in the steps' order) that half the steps written out contiguously have. Every other content word of
the shown steps, in order, has ROUGE-L recall 0.5 and was correct on exactly the tickets the steps were, scoring
above them (parsimony pays the shorter text; an outside red team, experiments/LOG.md, 2026-11-27); it has none of
their pairs. The chain's correct held-out answers and the extractive teacher's hold them all."""
CORRECT_GROUNDING = 0.5
"""Citation grounding above which a cited answer can count as correct (one gold article among three cited is not)."""
CORRECT_MIN_PRECISION = 0.2
"""ROUGE-L precision against the gold below which no answer is correct: an answer that lists several candidates
(every shown article's steps, the right one among them) covers the gold, but most of it is about something else. At
k=5 on the 183 answerable train tickets, the shown articles' steps with the gold cited were correct on 181 with all
five articles' steps, 177 with three and 173 with two; with the floor, on 0, 29 and 111 (`lists_another` now stops
the rest). Read against the gold resolution and the gold article's shown steps: against the resolution alone, the
gold article's steps were under it on 21 tickets (experiments/LOG.md, 2026-11-27)."""
FIRST_SENTENCE_GRACE = 3
"""Focus judges the first sentence as a whole only up to this many judged words; after them, every word counts.
Without the cap, an answer with its sentence boundaries removed is one long first sentence judged as a whole, and
scores higher than the same words with their full stops (`drill audit triage` found it). A first sentence with
fewer judged words still ends the grace at its full stop, so that padding after it never pays; removing that stop
can lift a short off-topic opening ("Hello there."), never above the same answer without it."""
CORRECT_MIN_RECALL = 0.1
"""For an episode recorded without the shown steps (before 2026-11-27), a grounded answer must still cover this much of
the gold (ROUGE-L recall): a right citation on filler is wrong. Others cover half the gold article's steps."""
CORRECT_MIN_KEY_RECALL = 0.15
"""... and this share of the gold's key terms (`TriageTask.key_terms`, the terms few other answers use): a right
citation on another ticket's answer is wrong. With ROUGE-L recall alone, one train answer beside the gold citation
counted as correct on 19 of the 129 answerable validation and test tickets, through words every escalation answer
shares ("escalate", "security", "on-call"); with the key terms, on 9 (certificate problems beside an expired
certificate's procedure), and with `CORRECT_MIN_PRECISION` too, on 4. A bar on ROUGE-L recall high enough to stop
that (0.35) also failed the extractive teacher's right answers, the shown article's steps, on 69% of the train
tickets that need no escalation. A neighbouring ticket's answer on the same topic can still pass: word overlap
cannot tell its steps from these (experiments/LOG.md, 2026-11-27)."""



@functools.cache
def _rouge_scorer() -> Any:
    from rouge_score import rouge_scorer  # imported on first use, so that `drill --help` stays fast

    return rouge_scorer.RougeScorer(["rougeL"], tokenizer=ContentTokenizer())


@dataclass(frozen=True)
class Submission:
    resolution: str
    citations: list[str]
    confidence: float
    escalate: bool
    seen_ids: frozenset[str]
    seen_steps: Mapping[str, str] = field(default_factory=dict)
    """Each seen article's step heads (`drill.envs.triage.env.article_steps`); empty for an episode recorded before
    the environment wrote them (2026-11-27)."""


def submission(episode: Episode) -> Submission | None:
    """The episode's accepted submit_resolution, or None. Malformed event data raises."""
    events = episode.events_named("submitted")
    if not events:
        return None
    if len(events) > 1:
        raise ValueError(f"episode has {len(events)} submitted events; the environment allows one")
    data = events[0].data
    citations, seen = data["citations"], data["seen_ids"]
    articles, steps = data.get("seen_articles", []), data.get("seen_steps", [])
    confidence, escalate = data["confidence"], data["escalate"]
    if not all(isinstance(v, list) for v in (citations, seen, articles, steps)) or len(articles) != len(steps):
        raise ValueError("submitted event: citations, seen_ids, seen_articles and seen_steps must be lists, the last "
                         "two of one length")
    if not isinstance(confidence, int | float) or isinstance(confidence, bool) or not isinstance(escalate, bool):
        raise ValueError(f"submitted event: bad confidence {confidence!r} or escalate {escalate!r}")
    return Submission(resolution=visible(str(data["resolution"])), citations=[str(c) for c in citations],
                      confidence=float(confidence), escalate=escalate, seen_ids=frozenset(str(s) for s in seen),
                      seen_steps={str(a): str(v) for a, v in zip(articles, steps, strict=True)})



_HIDDEN = re.compile(r"<!--.*?(?:-->|$)|^[ \t]*\[//\]:\s*#[^\n]*|^[ \t]{0,3}\[[^\]\n]+\]:[ \t]*(?:<[^>\n]*>|\S+)"
                     r"(?:[ \t]+(?:\"[^\"\n]*\"|'[^'\n]*'|\([^)\n]*\)))?[ \t]*$",
                     re.IGNORECASE | re.DOTALL | re.MULTILINE)
"""Text that rendered Markdown does not show: an HTML comment (to its end, or the end of the text), a Markdown comment
line (`[//]: # (...)`) or any other link reference definition (`[a]: <> (...)`, `[kb]: https://kb "..."`: a seventh
red team, 2026-11-28, hid the steps in one above a wrong fix, correct wherever the steps were). An element marked
hidden or styled out of sight is `_out_of_view_dropped`'s: the pattern here that read an element's attributes for
those (a ninth red team's) took a second on 5,000 characters of unclosed "<a " (a review, 2026-11-28)."""
_OPEN_TAG = re.compile(r"<([A-Za-z][\w-]*)\b([^>]*)>")
_STYLE_ATTRIBUTE = re.compile(r"""\bstyle\s*=\s*(?:"([^"]*)"|'([^']*)'|([^\s"'>]+))""", re.IGNORECASE)
_HIDING_ATTRIBUTE = re.compile(r"\bhidden\b|display\s*:\s*none|visibility\s*:\s*hidden", re.IGNORECASE)
_INERT = frozenset({"script", "noscript", "template", "title", "head", "iframe", "object"})
"""Elements whose text a rendered page does not show as text (a script, a template, the page's title): the steps in one
before a wrong fix were wrong before only because the rubric read the tag's name as a word in them."""
_FONT_COLOR = re.compile(r"""\bcolor\s*=\s*["']?\s*([^\s"'>]+)""", re.IGNORECASE)
_STYLE_SHEET = re.compile(r"<style\b[^>]*>(.*?)(?:</style\s*>|$)|<link\b[^>]*>",
                          re.IGNORECASE | re.DOTALL)
_PLAIN_PROPERTIES = re.compile(r"font-(?:weight|style|family|variant)|text-(?:align|transform)|"
                               r"white-space|list-style(?:-\w+)?|(?:margin|padding|border)(?:-[\w-]+)?|"
                               r"text-decoration(?:-line|-style|-color|-thickness)?|font-variant-\w+")
_SIZE = re.compile(r"(\d*\.?\d+)\s*(px|pt|em|rem|%)?")
_COLOR_NAMES = frozenset({"black", "red", "green", "blue", "navy", "maroon", "purple", "teal", "gray", "grey",
                          "darkred", "darkgreen", "darkblue", "crimson", "brown", "darkorange", "orange", "olive",
                          "dimgray", "dimgrey", "darkgray", "darkgrey", "slategray", "indigo", "darkviolet",
                          "firebrick", "inherit", "currentcolor", "initial", "unset"})
"""Style a reader is sure to see through (`_styled_in_view`): the declarations an honest answer's HTML formatting
uses. Any other (`position: absolute; left: -9999px`, `clip: rect(0,0,0,0)`, `transform: scale(0)`, `width: 0`,
`text-indent`, a 1px font, `rgb(255,255,255)` text, a background colour) may take the text out of sight."""


def _styled_in_view(css: str, sheet: bool = False) -> bool:
    """Every declaration of `css` (a `style` attribute's, or a style sheet's when `sheet`) leaves its text in view:
    a plain property (`_PLAIN_PROPERTIES`; in a sheet not a strike, which only an inline style is read as), a dark
    colour, a font of 8px / 0.5rem or more, or one that does not shrink (1em, 100%: nested, "0.5em" halves again and
    again), full opacity (nested, a half multiplies too), a display that shows. The ninth red
    team (2026-11-28) read `<div>` as a line break, not the word "div", and so opened every style it did not list:
    the steps in a `<div style="position:absolute;left:-9999px">`, one clipped to nothing or scaled to zero, before
    "Reboot your laptop and try again.", were correct on 173 of 183 answerable train tickets (1 before it), as
    correct as the steps themselves (a review, 2026-11-28). A list of what hides is never complete; this lists
    what shows."""
    css = re.sub(r"/\*.*?(?:\*/|$)", "", html.unescape(css), flags=re.DOTALL).lower()
    for declaration in css.split(";"):
        if not declaration.strip():
            continue
        name, colon, value = declaration.partition(":")
        name, value = name.strip(), value.replace("!important", "").strip()
        if not colon or not name or not value:
            return False
        if _PLAIN_PROPERTIES.fullmatch(name):
            # a negative or large margin moves the text off the page ("margin-left: -9999px")
            if sheet and "line-through" in value or (name.startswith(("margin", "padding")) and (
                    "-" in value or any(float(n) > 100 for n in re.findall(r"\d*\.?\d+", value)))):
                return False
            continue
        size = _SIZE.fullmatch(value)
        if name == "font-size" and (value in {"small", "medium", "large", "x-large", "xx-large", "larger", "inherit",
                                              "x-small", "initial"}
                                    or size and float(size.group(1)) >= {"em": 1, "rem": 0.5, "%": 100}.get(
                                        size.group(2) or "px", 8)):
            continue
        if name == "opacity" and size and float(size.group(1)) >= (100 if size.group(2) == "%" else 1):
            continue
        if name == "vertical-align" and value in {"baseline", "top", "middle", "bottom", "sub", "super"}:
            continue
        if name == "display" and value in {"block", "inline", "inline-block", "list-item", "flex", "grid"}:
            continue
        if name == "color" and _dark(value):
            continue
        return False
    return True


def _dark(color: str) -> bool:
    """`color` is a named dark colour or an opaque hex or rgb() colour of luminance under 0.6: text on a white page
    a reader sees."""
    if color in _COLOR_NAMES:
        return True
    if match := re.fullmatch(r"#([0-9a-f]{3}|[0-9a-f]{6})", color):
        digits = match.group(1)
        channels = [int(c * 2, 16) for c in digits] if len(digits) == 3 else [int(digits[i:i + 2], 16)
                                                                             for i in (0, 2, 4)]
    elif match := re.fullmatch(r"rgb\(\s*(\d{1,3})\s*,\s*(\d{1,3})\s*,\s*(\d{1,3})\s*\)", color):
        channels = [int(c) for c in match.groups()]
    else:
        return False
    return (0.2126 * channels[0] + 0.7152 * channels[1] + 0.0722 * channels[2]) / 255 < 0.6


def _out_of_view_dropped(text: str) -> str:
    """`text` without the elements a reader does not see: marked hidden (`_HIDING_ATTRIBUTE`) or styled with a
    declaration not sure to show (`_styled_in_view`), each up to its own closing tag, nested elements of its name
    counted (the lazy `_HIDDEN` ended `<span hidden><span>a</span>{steps}</span>` at the first `</span>` and showed
    the steps: correct on 173 of 183 answerable train tickets, a review, 2026-11-28), or to the end of the text. An
    answer with a style sheet (`<style>`, `<link rel=stylesheet>`) that may hide or strike anything shows nothing
    the rubric can vouch for: the steps in `<p class="x">` under `.x {text-decoration: line-through}` kept the
    steps' credit (173 of 183) once the ninth red team read `<p>` as a paragraph."""
    if "<style" in text.lower() or "<link" in text.lower():
        sheets = list(_STYLE_SHEET.finditer(text))
        # "stylesheet" looked for in the match, not the pattern: `[^>]*\bstylesheet` backtracked, 0.6 s on 5,000
        # characters of "<link "
        if any(m.group(1) is None and "stylesheet" in m.group().lower() or m.group(1) and "@" in m.group(1)
               or m.group(1) is not None
               and not all(_styled_in_view(rule, sheet=True) for rule in re.findall(r"\{([^{}]*)\}", m.group(1)))
               for m in sheets):
            return ""
        text = _STYLE_SHEET.sub(" ", text)
    pieces: list[str] = []
    position = 0
    while match := _OPEN_TAG.search(text, position):
        name, attributes = match.group(1).lower(), match.group(2)
        style = _STYLE_ATTRIBUTE.search(attributes)
        color = _FONT_COLOR.search(attributes) if name == "font" else None
        if not (name in _INERT or _HIDING_ATTRIBUTE.search(attributes)
                or style and not _styled_in_view(next(g for g in style.groups() if g is not None))
                or color and not _dark(color.group(1).lower())):
            pieces.append(text[position:match.end()])
            position = match.end()
            continue
        end = _element_end(text, match.group(1), match.end())
        pieces.append(text[position:match.start()])
        pieces.append(_gap(text, match.start(), end))
        position = end
    return "".join(pieces) + text[position:]


def _element_end(text: str, name: str, start: int) -> int:
    """Where the element named `name` opened before `start` ends: after its own closing tag, the same name's nested
    elements counted, or at the end of the text."""
    depth = 1
    for tag in re.finditer(rf"<(/?){re.escape(name)}\b[^>]*?(/?)>", text[start:], re.IGNORECASE):
        if tag.group(1):
            depth -= 1
        elif not tag.group(2):
            depth += 1
        if depth == 0:
            return start + tag.end()
    return len(text)


_STYLED_STRUCK = re.compile(r"<(\w+)\b[^>]*?text-decoration(?:-line)?\s*:\s*[^>]*?line-through[^>]*>", re.IGNORECASE)
"""An element struck through by its style: read as `<s>` (the steps so struck kept the heuristic's full success once
`<span>` was no longer read as a word, a ninth red team, 2026-11-28)."""
_ATTRIBUTES = re.compile(r"<([A-Za-z][\w-]*)(?=\s[^>]*=)"
                         r"(?:\s+[^\s\"'<>=/]+(?:\s*=\s*(?:\"[^\"]*\"|'[^']*'|[^\s\"'<>]+))?)+\s*/?>")
"""An HTML tag with attributes (`<span title="...">`, `<img alt="...">`): rendered text shows none of their values, and
the steps in a `title` around a wrong fix were correct wherever the steps were (a seventh red team, 2026-11-28). A
placeholder with no "=" (`<rule name>`, `<ID>`) is left as written."""


_INLINE_LINK = re.compile(r"(!?\[[^\]\n]*\])\((?:<[^>\n]*>|(?:[^()\s]|\((?:[^()\s]|\([^()\s]*\))*\))*)"
                          r"(?:\s+(?:\"[^\"\n]*\"|'[^'\n]*'|\([^)\n]*\)))?\s*\)")
"""An inline Markdown link or image, `[text](url "title")`, its address holding balanced parentheses as CommonMark
allows: rendered, it shows its text (an image, its alt text), not its address or title. The heuristic's steps in a
link's title behind "[Reboot your laptop and try again.](...)" were correct on 21 of 32 validation tickets at k=5,
0.656 success against its own 0.688 (a ninth red team, 2026-11-28)."""
_GLUED = re.compile(r"(?<=[^\W_])(?:[*`]+|</?(?:a|abbr|b|big|code|em|font|i|kbd|mark|samp|small|span|strong|sub|sup|"
                    r"tt|u|var|wbr)\s*/?>)+(?=[^\W_])", re.IGNORECASE)
"""Markup inside a word, between two of its letters: emphasis or code marks ("n*o*t", "n**o**t", "n`o`t") or an inline
formatting tag without attributes ("n<b>o</b>t", "n<wbr>ot"; not a strike, which `_SPELLED_DENIALS` reads). Rendered,
the word reads whole ("not"); the rubric's tokenizer read its pieces ("n", "o", "t"), so "Do n*o*t" before each of the
heuristic's steps, or "Do n*o*t do any of this." after them, kept its full success (0.688 on validation at k=5, a ninth
red team, 2026-11-28)."""
_BOLD_TAG = re.compile(r"</?(?:b|strong)\s*>", re.IGNORECASE)
_INLINE_TAG = re.compile(r"</?(?:a|abbr|big|cite|code|dfn|em|font|i|ins|kbd|mark|q|samp|span|tt|u|var|wbr)"
                         r"\s*/?>", re.IGNORECASE)
"""Inline formatting tags (their attributes already dropped, `_ATTRIBUTES`): rendered, they show no word. Read as the
words "b", "span", "font", the heuristic's steps inside one `<b>`, `<strong>` or `<span style="font-size:14px">`
were correct on 1 of 183 answerable train tickets (173 plain; a review, 2026-11-28: the stray word read as a swapped
step). `<b>` and `<strong>` become Markdown bold, so that a bold line alone (`<strong>Don't:</strong>`) still heads
the lines under it (`_LEAD_IN`). Not `<sub>`, `<sup>`: the corpus writes `<sub>` as a placeholder
("/subscriptions/<sub>/"); not a strike, which `_SPELLED_DENIALS` reads; not `<small>`, which nested shrinks the text
out of sight (twelve deep, the steps before a wrong fix were correct on 173 of 183 tickets with it read as
nothing)."""
_BLOCK_TAG = re.compile(r"<(?:br|hr|/?(?:p|div|li|ul|ol|dl|dt|dd|tr|td|th|h[1-6]|blockquote|pre))\s*/?>", re.IGNORECASE)
"""A tag that breaks the line where it stands (`<br>`, `<p>`, `<li>`): read as a line break. Read as the words "br",
"p", "li", the steps as HTML paragraphs were correct on 3 of 183 answerable train tickets (171 as plain steps), as an
`<ol>` list on 1, joined by `<br>` on 111 (a ninth red team, 2026-11-28): an honest answer lost its credit. Not
`<table>`, which its rows break anyway and the corpus writes as a placeholder ("VACUUM (FREEZE) <table>;")."""
_ENTITY = re.compile(r"&(?:#[0-9]{1,7}|#[xX][0-9a-fA-F]{1,6}|[A-Za-z][A-Za-z0-9]{1,31});")
"""An HTML character reference ended by ";" ("&#111;", "&#x6f;", "&shy;"): rendered as its character, so "n&#111;t"
reads "not" (the rubric read "n", "111", "t": a ninth red team, 2026-11-28). One without ";" ("?v&s=", "&region")
is left as written: the corpus' query strings and commands carry those."""
_STRUCK_ONCE = re.compile(r"(?<![~\w])~(?=[^\s~])([^~\n]*?[^\s~])~(?![~\w])")
"""A strike-through with single tildes (`~text~`, as GitHub renders it): an opening tilde before a non-space, a closing
one after a non-space, neither beside a word or another tilde; so "~/.ssh", "~60 s" and "chmod 700 ~/.ssh && chmod 600
~/.ssh/authorized_keys" (the corpus' own tildes) strike nothing."""
_OVERRIDDEN = re.compile("\u202e([^\u202a-\u202e\u2066-\u2069\n]*)(?:\u202c|(?=[\u202a-\u202e\u2066-\u2069\n])|$)")
"""A right-to-left override (U+202E) up to its end (U+202C, the next directional mark or the line's end): its letters
are shown in reverse order."""
_LATIN_NAME = re.compile(r"LATIN (?:SMALL |CAPITAL )?LETTER (?:SMALL CAPITAL |DOTLESS |SCRIPT )?([A-Z])(?: WITH .*)?")
"""The Unicode name of a Latin letter in a form NFKC keeps (`drill.core.text.as_read` does not fold it): small
capitals ("ɴᴏᴛ"), dotless or script letters."""


@functools.lru_cache(maxsize=1024)
def _latin_letter(char: str) -> str:
    """`char`, or the plain Latin letter its Unicode name says it is (`_LATIN_NAME`)."""
    match = _LATIN_NAME.fullmatch(unicodedata.name(char, ""))
    return match.group(1).lower() if match else char


def visible(text: str) -> str:
    """The answer as a reader of the rendered text sees it (`_HIDDEN` dropped). The right steps in an HTML comment
    above a wrong fix ("<!-- the steps -->Reboot your laptop.") were a correct answer on 182 of 183 answerable train
    tickets (a sixth red team, 2026-11-28): the rubric read what the user never sees. It also reads a right-to-left
    override in the order it shows its letters ("ton oD" between U+202E and U+202C, then "restart X", shows "Do not
    restart X"), Latin letters NFKC keeps as plain ones (small capitals: "Do ɴᴏᴛ restart X", "ᴅᴇʟᴇᴛᴇ the pods"), and a
    single-tilde strike-through as a double one (`_STRUCK_ONCE`, which `_SPELLED_DENIALS` reads as "not"): each
    passed, on every step, as the steps themselves do (a seventh red team, 2026-11-28: the heuristic's pick so
    rewritten scored its total and success, 0.665 / 0.647 on test at k=5). Markdown is read as it renders: an inline
    link shows its text alone (`_INLINE_LINK`), markup between two letters of a word joins them (`_GLUED`), a block tag
    breaks the line (`_BLOCK_TAG`), a style that strikes is a strike (`_STYLED_STRUCK`), a hidden part inside a word
    leaves no space (`_gap`), and a character reference is its character (`_ENTITY`). An element hidden or
    styled out of view is dropped (`_out_of_view_dropped`), inline formatting tags are no words (`_INLINE_TAG`)."""
    if "<" in text or "]:" in text:
        text = _out_of_view_dropped(_HIDDEN.sub(lambda m: _gap(text, m.start(), m.end()), text))
        if "line-through" in text.lower():
            text = _STYLED_STRUCK.sub("<s>", text)
        text = _BLOCK_TAG.sub("\n", _ATTRIBUTES.sub(r"<\1>", text))
        text = _INLINE_TAG.sub("", _BOLD_TAG.sub("**", text))
    if "](" in text:
        text = _INLINE_LINK.sub(r"\1", text)
    if "*" in text or "`" in text or "<" in text:
        text = _GLUED.sub("", text)
    if "&" in text:
        text = _ENTITY.sub(lambda m: html.unescape(m.group()), text)
    if "~" in text:
        text = _STRUCK_ONCE.sub(r"~~\1~~", text)
    if text.isascii():
        return text
    text = _OVERRIDDEN.sub(lambda m: m.group(1)[::-1], text)
    return "".join(_latin_letter(c) if ord(c) > 127 and c.isalpha() else c for c in text)


def _gap(text: str, start: int, end: int) -> str:
    """What a hidden part `text[start:end]` leaves in its place: nothing inside a word ("n<!---->ot" reads "not"),
    else a space."""
    inside = 0 < start and end < len(text) and text[start - 1].isalnum() and text[end].isalnum()
    return "" if inside else " "


def covers(answer: str, steps: str) -> bool:
    """`answer` says half of a shown article's `steps`: ROUGE-L recall >= `CORRECT_ROUGE_RECALL`, in runs of their
    words (`in_runs`)."""
    return rouge_l(answer, steps)[1] >= CORRECT_ROUGE_RECALL and in_runs(answer, steps)


def says_gold(sub: Submission, task: TriageTask) -> bool:
    """The text covers half the gold resolution, which the agent never sees (ROUGE-L recall >= 0.5), in runs of the
    words of that resolution or of a shown gold article's steps (`in_runs`): an answer in the article's words that
    cites nothing still counts (the heuristic's copied steps cover the gold on 153 of 284 answerable train and test
    tickets, 88 of them in runs of the gold's own words). Until 2026-11-28 ROUGE-L alone: every other content word
    of the gold resolution was correct on 73 of 101 test episodes (`drill audit`'s "thinned" mutation of the
    oracle's answer). An episode recorded without the shown steps keeps that rule."""
    if rouge_l(sub.resolution, task.gold_resolution)[1] < CORRECT_ROUGE_RECALL:
        return False
    if not sub.seen_steps:
        return True
    return any(in_runs(sub.resolution, text) for text in (task.gold_resolution, *gold_steps(sub, task)))


@functools.lru_cache(maxsize=4096)
def in_runs(answer: str, gold: str) -> bool:
    """`answer` holds at least `CORRECT_MIN_PAIRS` of the adjacent content-word pairs of half of `gold` written
    contiguously (none to hold for a text of one or two content words)."""
    said, want = content_terms(answer), content_terms(gold)
    pairs = Counter(zip(said, said[1:])) & Counter(zip(want, want[1:]))
    return sum(pairs.values()) >= CORRECT_MIN_PAIRS * max(0, math.ceil(CORRECT_ROUGE_RECALL * len(want)) - 1)


@functools.lru_cache(maxsize=4096)
def rouge_l(answer: str, gold: str) -> tuple[float, float, float]:
    """(precision, recall, F1) of ROUGE-L over stemmed content words."""
    score = _rouge_scorer().score(gold, answer)["rougeL"]
    return score.precision, score.recall, score.fmeasure


# -- the components -------------------------------------------------------------------------------------


def format_score(episode: Episode, task: TriageTask) -> float:
    """Graduated JSON-schema compliance of the submission, minus 0.1 per invalid action."""
    sub = submission(episode)
    invalid = episode.events_named("invalid_action")
    if sub is not None:
        well_formed = sum(1 for c in sub.citations if ID_PATTERN.match(c))
        level = 0.6 + 0.4 * (well_formed / len(sub.citations) if sub.citations else 1.0)
    elif any(e.data.get("tool") == "submit_resolution" for e in invalid):
        level = 0.3
    else:
        level = 0.0
    return max(0.0, level - 0.1 * len(invalid))


def resolution_score(episode: Episode, task: TriageTask) -> float:
    """ROUGE-L F1 of the resolution against the gold resolution."""
    sub = submission(episode)
    return 0.0 if sub is None else rouge_l(sub.resolution, task.gold_resolution)[2]


def grounding_of(sub: Submission, task: TriageTask) -> float:
    cited = sub.citations
    n = len(cited)
    fabricated = sum(1 for c in cited if c not in sub.seen_ids)
    honest = 1.0 - fabricated / n if n else 1.0
    gold = set(task.gold_article_ids)
    if not gold:
        return honest / (1 + n)
    hits = len(set(cited) & gold & sub.seen_ids)
    if hits == 0:
        return 0.0
    precision, recall = hits / n, hits / len(gold)
    return 2 * precision * recall / (precision + recall) * honest


def grounding_score(episode: Episode, task: TriageTask) -> float:
    """Cited gold articles, seen by the agent, with every extra, repeated or fabricated citation diluting it; on a
    ticket the knowledge base answers, times `substance` (the share of the gold's terms the text uses, half of them
    enough): a citation supports what the answer says, and an answer that says nothing of it ("." citing the top
    article at confidence 0) was paid in full, 0.54 of the heuristic's 0.69 on validation at k=5 (a sixth red team,
    experiments/LOG.md, 2026-11-28). The heuristic's and the oracle's answers say enough on every ticket, so their
    grounding is unchanged."""
    sub = submission(episode)
    if sub is None:
        return 0.0
    grounding = grounding_of(sub, task)
    return grounding * substance(sub, task) if task.answerable and grounding else grounding


def disguised(text: str) -> bool:
    """A word of the text mixes Latin letters or digits with letters, digits or marks of another script, as the rubric
    reads it (`words`: "nօt" with an Armenian "օ", "n०t" with a Devanagari zero): the rubric reads it as two words
    ("n", "t") where a reader sees one ("not"). Look-alike tables (`drill.core.text.as_read`) fold the common ones;
    this catches the rest, as no honest English answer writes a word in two scripts (the corpus' tickets, gold
    answers and articles use no letter outside ASCII). Each shown step denied with such an "o" was correct wherever
    the steps were until 2026-11-28 (a seventh red team)."""
    if text.isascii():
        return False
    return any(re.search(r"[a-z0-9]", token) and any(ord(c) > 127 and unicodedata.category(c)[0] in "LNM"
                                                    for c in token)
               for token in as_read(text).split())


def other_script(text: str) -> bool:
    """The text holds a letter of a script other than Latin ("以上都不要做。", "Ничего из этого не делайте.", "Не" before
    each step, whose letters all fold to "He"): the rubric reads English and cannot tell what such words say. A
    closing sentence that took the steps back in Korean or Arabic, or "Не" (Russian "don't") before each step, kept
    the steps' full credit until 2026-11-28 (an eighth red team); the corpus' tickets, golds and articles use no
    letter outside ASCII. A Latin letter in another form ("ｎｏｔ", "𝐧𝐨𝐭": NFKC makes it ASCII) and the micro sign ("50
    µs", a unit) are not words of another script."""
    return not text.isascii() and any(c.isalpha() and ord(c) > 127 and c != "\u00b5"
                                      and not unicodedata.name(c, "").startswith("LATIN")
                                      and not unicodedata.normalize("NFKC", c).isascii() for c in text)


def is_correct(sub: Submission, task: TriageTask) -> bool:
    """The answer is right: the escalation decision matches, the KB answers the ticket, and the text covers the gold
    (`covers_gold`) without being mostly about something else (ROUGE-L precision >= 0.2, `CORRECT_MIN_PRECISION`)
    or carrying another seen article's steps too (`lists_another`): a list of candidates is not an answer."""
    if sub.escalate != task.should_escalate or not task.answerable:
        return False
    return (covers_gold(sub, task) and mostly_gold(sub, task) and not lists_another(sub, task)
            and not negates_a_step(sub, task) and not orders_a_ruled_out_step(sub, task)
            and not names_another_ticket(sub, task) and not disguised(sub.resolution)
            and not other_script(sub.resolution))


def names_another_ticket(sub: Submission, task: TriageTask) -> bool:
    """The text uses a term that names another ticket's specifics (`TriageTask.foreign_terms`: a neighbouring
    ticket's host or service, on the same gold article), one the shown steps do not use either: that answer is the
    neighbour's, not this ticket's."""
    shown = {term for text in sub.seen_steps.values() for term in content_terms(text)}
    return bool(set(content_terms(sub.resolution)) & (set(task.foreign_terms) - shown))


DENIALS = frozenset({"not", "never", "don", "doesn", "didn", "isn", "aren", "cannot", "avoid", "neither", "nor",
                     "refrain", "shouldn", "mustn", "won", "wouldn", "couldn", "needn", "wasn", "weren", "skip",
                     "ignore", "pointless", "forbidden", "wrong", "nope", "nah", "nein", "nicht", "kein", "keine",
                     "niet", "nunca", "jamais", "jamas", "nao", "nie", "pas", "rien", "nada", "nichts", "niemals",
                     "niente", "nulla", "niets", "nooit", "nigdy", "geen", "aucun", "ninguno", "ninguna", "nessuno",
                     "prohibited", "useless", "futile", "counterproductive", "forgo", "abstain", "unwise", "harmful",
                     "inadvisable", "taboo", "verboten", "refuse", "dnt", "nvr"})
"""Words that tell the reader not to do what their clause says ("Do not restart", "never X", "X - not recommended", "You
shouldn't X", "Skip this: X"), in English or a few other languages written in Latin letters ("Bitte nichts davon
machen!" after the steps took them all back with full credit until 2026-11-28, an eighth red team; "Prohibited:",
"Useless:", "Forgo:", "Abstain from:", "Dnt" or "Nvr" before each step kept the heuristic's full success until a ninth
red team, 2026-11-28; none of these words is in the corpus). A gold sentence that uses one itself ("skip only that
transaction") lends it to the answer that repeats it (`negates_a_step`)."""
_REFUSAL = (r"(?:no way|no|nope|nah|never|negative|absolutely not|definitely not|nein|non|nie|niet|nunca|jamais|"
            r"jamas|nao|surtout pas|pas question|pas|nada|nichts|niemals|auf keinen fall|niente|niets|nooit|nigdy)")
"""A refusal said on its own, in English or a few other languages."""
_SPELLED_DENIALS = [(re.compile(p, re.IGNORECASE), " not ") for p in (
    r"\bcan[’']?t\b", r"\bdont\b", r"\bno need\b", r"\bunder no circumstances?\b", r"\bn0t\b", r"~~", r"<del>",
    r"<s>", r"<strike>", r"\bstop trying to\b", r"\bbad idea\b",
    r"\b(?:hold off|steer clear|hard pass|resist the urge)\b",
    r"(?<![\w'\u2019])n[\u2019']t\b",  # "Do n't X", as some tokenizers write it: each step so kept full credit
    # a refusal after a step, glued to it: "Restart X? No.", "Restart X - no.", "Restart X (no)", "Restart X. No."
    r"[.!]\s+" + _REFUSAL + r"\s*[.!]+(?=\s|$)",
    r"(?:\?|\s+[-\u2013\u2014=]+>?|\s*[:(\[\u2192]|\s*->)\s*" + _REFUSAL + r"\b\s*[\])]?\s*(?=[.;!?\n]|$)",
    r"(?:[,|\u21d2\u27a1]|>>)\s*" + _REFUSAL + r"\b\s*\|?\s*(?=[.;!?\n]|$)",
    r"\?\s*" + _REFUSAL + r"\b",
    # a refusal opening a sentence: "Nope, restart X", "No way: restart X", "No restart X" ("No worries, X" is still
    # an aside: the opening up to its comma holds a denial and says nothing of the gold); not across a line break,
    # where "Never:" alone heads the lines under it (`_frames_a_denial`)
    r"(?m)(?:^|(?<=[.;!?]\s))\s*" + _REFUSAL + r"(?:[,:!]+|\s+[-\u2013\u2014]+)[ \t]+",
    r"(?m)(?:^|(?<=[.;!?]\s))\s*no\s+(?=[a-z])")]
"""Denials the word list cannot see: "can't" (two words, "can" and "t"), "dont", "no need to", a strike-through, a
refusal glued to a step ("Restart X? No.", "Nope, restart X", "No way: restart X", "Restart X - no.", "Restart X, no",
"Restart X >> no", a table's "| Restart X | No |": the last three kept the heuristic's full success, 0.688 on validation
at k=5, until a ninth red team, 2026-11-28), read as "not". Until 2026-11-28 (a sixth red team) "No" was no denial and
"Nope," an aside: each shown step so refused was correct on every answerable train ticket (183 of 183). The gold is read
the same way, so that a gold sentence's own "No data loss is expected" is the gold's denial, not the answer's."""
_SPELLED_OUT = re.compile(r"\b[a-z](?:[.\-_ ][a-z]){2,}\b", re.IGNORECASE)
"""A word spelled letter by letter ("n.o.t", "N-O-T", "n o t", "n_o_t"): read as the word when it is a denial
(`_denials_read`). Each spelled "not" before each step kept the heuristic's full success (0.688 on validation at k=5)
until a ninth red team, 2026-11-28."""
_DENYING_MARK = re.compile(r"CROSS MARK|BALLOT (?:BOX WITH )?X\b|MULTIPLICATION X\b|SALTIRE|^NO |NO ENTRY|NO GOOD|"
                           r"PROHIBITED|THUMBS DOWN|OCTAGONAL SIGN|CIRCLE BACKSLASH|CIRCLED REVERSE SOLIDUS")
"""The Unicode names of symbols that say no: cross marks ("❌", "✗", "✖", "☒"), prohibition signs ("🚫", "⛔", "🛑",
"⃠"), "👎", "🙅" (`_denying_mark`). Each shown step behind "🚫" or "⛔" kept the heuristic's full success (0.688 on
validation at k=5) until a ninth red team (2026-11-28); only "❌", "✗" and "✘" were read. A check mark, an arrow,
"⚠" or the multiplication sign ("3×") says no such thing."""
_REMINDER = re.compile(r"\b(?:do\s+not|don[’']?t|dont|never|mustn[’']?t|must\s+not)\s+forget\b", re.IGNORECASE)
"""A denial of forgetting is a reminder ("Don't forget to restart X" says "restart X"), read as "remember" before the
denials are read: each step so written was denied on every answerable train ticket, and "Do not forget:" before the
steps took them back (a seventh red team, 2026-11-28)."""
_STRUCK = re.compile(r"(?:\S[\u0334-\u0338]+)+")
"""Letters struck through by combining overlays ("Restart" with U+0336 after each letter), which `as_read` drops
with the other accents: read as "not" (each shown step so struck through was correct on 183 of 183 answerable train
tickets until 2026-11-28)."""
_FOREIGN_POINTERS = ("cela", "ceci", "esto", "eso", "davon", "questo", "disso", "isso", "hiervan", "tego")
""""All that" in French, Spanish, German, Italian, Portuguese, Dutch and Polish ("Ne faites rien de tout cela.", "No
hagas nada de esto.", "Nie rób nic z tego."): none is in the corpus."""
_REFERENCE = re.compile(r"\b(?:above|below|these|those|following|steps|procedure|none of|(?:all|any) of (?:this|that|"
                        r"them|it)|" + "|".join(_FOREIGN_POINTERS) + r"|hier(?:\s+\w+)?\s+van)\b", re.IGNORECASE)
"""How a sentence that names no step points at the others: "Do not do any of the above", "Do not try these:", "None
of these steps will work", "Ignore all of that" (or `_FOREIGN_POINTERS`). Not "it" or "that" alone: "If it does not
come back, escalate" is a condition, not a denial of the steps."""
_ORDERS = frozenset({"never", "avoid", "don", "skip", "ignore", "refrain", "shouldn", "mustn", "nope"})
"""Denials that tell the reader not to act ("Never ...", "Don't ...", "Avoid ..."), unlike a "not" that states a fact
("It does not matter", "That should not take long")."""


_RETRACTS = frozenset({"scratch", "forget", "disregard", "kidding", "joking", "jk", "retract", "nevermind", "cancel"})
"""Words that take back what was said before them ("Scratch all that.", "Forget everything I just said.", "Just
kidding.", "Disregard it."), beside the orders (`_ORDERS`)."""
_ASIDE_WORDS = ("actually", "just", "wait", "please", "sorry", "okay", "really", "second", "thought", "said", "wrote",
                "told", "mind", "everything", "anything")
"""Words a retraction says beside its order and its pointer ("Actually, don't.", "On second thought, forget
everything I said."): they name nothing the steps do."""


def _points(head: str) -> bool:
    """`head` points at the steps (`_REFERENCE`), or orders the reader off them by a pronoun: "Never do this:",
    "never attempt them", "Don't do that", "Scratch all that", "Forget everything", or by nothing at all ("Actually,
    don't.", "Just kidding.": a bare order names nothing else to keep off)."""
    said = set(words(head))
    if not said & (_ORDERS | _RETRACTS):
        return bool(_REFERENCE.search(head))
    return bool(_REFERENCE.search(head) or said & {"this", "that", "it", "them", "everything"}
                or not set(content_terms(head)) - _pointing_terms())


@functools.cache
def _pointing_terms() -> frozenset[str]:
    """The content terms of the words a denial points with ("never", "steps", "above", "try"): a gold that uses them
    ("never delete pg_wal files") does not make "Never do this:" a step of its own."""
    return frozenset(t for w in (*DENIALS, *_ORDERS, *_RETRACTS, *_ASIDE_WORDS, "none", "above", "below", "these",
                                 "those", "following", "steps", "procedure", "this", "that", "them", "any", "all", "do",
                                 "try", "attempt", "work", *_FOREIGN_POINTERS) for t in content_terms(w))


_LEAD_IN = re.compile(r"^\s*(?:#{1,6}\s.*|\*\*[^*\n]+\*\*|\S(?:.*\S)?:)\s*$")
"""A line that heads what follows it: one ending with a colon, a Markdown heading, a line in bold alone."""
_PITFALLS = frozenset({"mistakes", "myths", "pitfalls", "anti", "antipatterns", "ruled", "donts"})
"""Words of a heading for what not to do, beside the denials ("Common mistakes:", "Ruled out:")."""
_LOOKS_BACK = re.compile(r"\b(?:above|earlier|previous(?:ly)?|so far|(?:all|any|none) of (?:this|that|it|them)|"
                         r"everything|scratch|forget|disregard|retract|cancel)\b", re.IGNORECASE)
"""A heading that points back ("Ignore the above:", "Forget everything so far:"): it takes back what came before."""
_CONTINUING = frozenset({"also", "and", "plus", "or", "nor", "similarly", "likewise", "more", "further", "furthermore",
                         "additionally", "too", "again", "besides", "moreover"})
"""Words of a heading that goes on with the one before ("Also:", "And:", "**Likewise**"): the steps under "What not to
do:" then "Also:" are what not to do too (each step after "Also:" kept the heuristic's full success otherwise)."""
_HEADING_TERMS = frozenset(t for w in ("things", "fixes", "help", "common", "already", "tried", "patterns", "out",
                                       "ideas", "options", "solutions", "don'ts", *_PITFALLS) for t in content_terms(w))
"""Content terms a heading for what not to do says beside its denial ("Things that won't help:", "Wrong fixes:")."""


def _frames_a_denial(line: str) -> bool:
    """`line` heads the lines after it as what not to do (`_LEAD_IN`: "What not to do:", "Mistakes to avoid:", "Things
    that won't help:", "## Don'ts"), in nothing but such words ("Do not restart X before this:" is a step denied, then
    an order; "No downtime is needed:" says something else). Each step listed under such a heading kept the
    heuristic's full success (0.688 on validation at k=5) until a ninth red team, 2026-11-28; and a heading that
    denied by a pronoun ("Don't:", "Never do these:") took back the whole answer, the right steps above it too."""
    if len(words(line)) > 8 or not _LEAD_IN.match(line) or _CONDITION.match(line.lstrip("#* ")):
        return False
    said = set(words(line)) | {"".join(words(line))}
    return bool(said & (DENIALS | _PITFALLS) or re.fullmatch(r"\W*" + _REFUSAL + r"\W*", line, re.IGNORECASE)) and \
        not set(content_terms(line)) - _pointing_terms() - _HEADING_TERMS


_CONDITION = re.compile(r"^\W*(?:if|when|unless|in case|should|once|until)\b", re.IGNORECASE)
_OPPOSITES: tuple[tuple[tuple[str, ...], tuple[str, ...]], ...] = (
    (("start", "restart", "reboot", "boot", "launch", "relaunch", "resume", "bounce", "recycle", "run"),
     ("stop", "halt", "kill", "shutdown", "shut", "terminate", "pause", "suspend", "abort")),
    (("enable", "activate", "reactivate"), ("disable", "deactivate")),
    (("allow", "permit", "accept", "approve", "authorize", "authorise", "whitelist", "allowlist", "unblock", "trust",
      "trusted", "unban", "unlock"),
     ("block", "deny", "forbid", "prohibit", "disallow", "reject", "refuse", "ban", "blacklist", "blocklist",
      "distrust", "untrust", "untrusted", "lock")),
    (("increase", "raise", "grow", "expand", "extend", "lengthen", "enlarge", "boost", "bump", "higher", "larger",
      "longer", "bigger", "upsize"),
     ("decrease", "reduce", "lower", "shrink", "shorten", "truncate", "lessen", "minimize", "minimise", "smaller",
      "shorter", "fewer", "downsize")),
    (("maximum", "max"), ("minimum", "min")),
    (("add", "insert", "append", "include", "attach", "mount", "remount", "install", "reinstall", "create", "enroll",
      "enrol", "register", "join", "rejoin", "subscribe", "assign", "link", "bind", "pin", "grant", "allocate",
      "reserve", "associate", "import"),
     ("remove", "delete", "drop", "exclude", "omit", "detach", "unmount", "umount", "dismount", "uninstall",
      "destroy", "unenroll", "unenrol", "deregister", "unregister", "leave", "unsubscribe", "unassign", "unlink",
      "unbind", "unpin", "revoke", "withdraw", "strip", "deallocate", "disassociate")),
    (("keep", "retain", "preserve", "restore", "save", "hold", "backup", "reuse"),
     ("delete", "discard", "purge", "wipe", "erase", "destroy", "drop", "remove", "flush", "clear", "lose", "rotate")),
    (("rotate", "renew", "reissue", "regenerate", "refresh"), ("keep", "reuse", "expire", "retain")),
    (("request",), ("withdraw", "cancel")),
    (("open", "reopen"), ("close", "shut")),
    (("connect", "reconnect"), ("disconnect", "isolate", "quarantine")),
    (("upgrade", "update", "patch"), ("downgrade", "rollback")),
    (("encrypt",), ("decrypt",)),
    (("show", "expose", "publish"), ("hide", "unpublish", "withdraw")),
    (("spread", "distribute"), ("concentrate",)),
    (("promote",), ("demote",)),
    (("enforce", "tighten", "strict"), ("relax", "loosen", "waive", "bypass", "permissive")),
    (("public",), ("private",)),
    (("internal",), ("external",)),
    (("inbound", "ingress"), ("outbound", "egress")),
    (("upstream",), ("downstream",)),
    (("valid", "correct"), ("invalid", "incorrect", "wrong")),
    (("secure",), ("insecure",)),
    (("cordon",), ("uncordon",)),
    (("check", "verify", "confirm", "inspect", "validate", "review", "test", "read"), ("skip", "bypass")),
    (("load", "reload"), ("unload",)),
    (("revoke", "suspend", "expire"), ("restore", "reinstate", "renew", "unsuspend")),
    (("free", "release"), ("fill", "consume", "occupy", "hold", "acquire")),
)
"""Words whose swap says the opposite, each group against the other ("Disable SDK adaptive retries" for "Enable ...",
"Shut down the VM" for "Restart ...", "Reduce" for "Raise"): an answer sentence that repeats a gold step with one of
its words swapped for one of the other group, and without that word or another of its own group ("Shut it down and
start it again" still restarts), contradicts it. A hand table, informed by WordNet 3.0's verb and adjective antonyms
for the corpus' words (WordNet is not installed with Drill, and is sparse here: it has no opposite for "restart",
"grant" or "rotate"). Until 2026-11-28 a dict of single pairs, so a word with two opposites kept only the last one
("allow" -> "deny": "Block" for "Allow" was no contradiction), and a step turned around outside the table passed: one
step of the gold article's shown steps turned, among the others said plainly, was correct on 231 of 274 answerable
tickets (382 of 522 such answers; a sixth red team, 2026-11-28); now on 36 (36), most with a word the table does not
turn ("Resize" to "Shrink") or a one-word step ("Reload")."""
_PHRASES = [(re.compile(p, re.IGNORECASE), word) for p, word in (
    (r"\b(?:turn|switch|toggle)(?:s|ed|ing)?\s+(?:[\w-]+\s+){0,4}?off\b", " disable "),
    (r"\b(?:turn|switch|toggle)(?:s|ed|ing)?\s+(?:[\w-]+\s+){0,4}?on\b", " enable "),
    (r"\b(?:shut|shuts|shutting|power|powered|powering|bring|brings|bringing|brought|take|takes|took|taking)\s+"
     r"(?:[\w-]+\s+){0,4}?(?:down|off|offline)\b", " shutdown "),
    (r"\b(?:bring|brings|bringing|brought|spin|spins|spun|boot|boots|booted)\s+(?:[\w-]+\s+){0,4}?(?:up|online)\b",
     " start "),
    (r"\bscal(?:e|es|ed|ing)\s+(?:[\w-]+\s+){0,4}?(?:down|in)\b", " reduce "),
    (r"\bscal(?:e|es|ed|ing)\s+(?:[\w-]+\s+){0,4}?(?:up|out)\b", " increase "),
    (r"\broll(?:s|ed|ing)?\s+(?:[\w-]+\s+){0,4}?back\b", " rollback "),
    (r"\btear(?:s|ing)?\s+(?:[\w-]+\s+){0,4}?down\b|\btore\s+(?:[\w-]+\s+){0,4}?down\b", " destroy "),
    (r"\bback(?:s|ed|ing)?\s+(?:[\w-]+\s+){0,4}?up\b", " backup "),
)]
"""Verbs of two words, most with a stop word that the content terms drop ("turn off", "shut down", "scale in"), read
as the one word they mean before an answer is compared with the gold for opposites (`_OPPOSITES`)."""


@functools.lru_cache(maxsize=4096)
def _gold_phrase_heads(texts: tuple[str, ...]) -> list[tuple[frozenset[str], frozenset[str]]]:
    """Each gold sentence with two or more terms: its terms, and its terms with two-word verbs read as one word."""
    return [(frozenset(content_terms(head)), _phrase_terms(head)) for text in texts for head in _SEGMENT.split(text)
            if len(set(content_terms(head))) >= 2]


@functools.lru_cache(maxsize=4096)
def _gold_phrase_terms(texts: tuple[str, ...]) -> frozenset[str]:
    """Every term the gold texts use, their two-word verbs read as one word too ("shut down" is "shutdown")."""
    return frozenset(t for text in texts for t in _phrase_terms(text))


def _phrase_read(text: str) -> str:
    """`text` with its two-word verbs written as the one word they mean (`_PHRASES`)."""
    for pattern, word in _PHRASES:
        text = pattern.sub(word, text)
    return text


@functools.lru_cache(maxsize=65536)
def _phrase_terms(text: str) -> frozenset[str]:
    """The content terms of `text`, with its two-word verbs also read as one word (`_PHRASES`)."""
    return frozenset(content_terms(text)) | frozenset(_phrase_sequence(text))


@functools.lru_cache(maxsize=65536)
def _phrase_sequence(text: str) -> tuple[str, ...]:
    """The content terms of `text` in order, its two-word verbs read as one word (`_PHRASES`)."""
    return tuple(content_terms(_phrase_read(text)))


def _lcs(a: list[str], b: list[str]) -> int:
    """The length of the longest common subsequence of two term lists (short: one sentence each)."""
    row = [0] * (len(b) + 1)
    for x in a:
        previous = 0
        for j, y in enumerate(b, 1):
            previous, row[j] = row[j], previous + 1 if x == y else max(row[j], row[j - 1])
    return row[-1]


_SEGMENT = re.compile(r"[.;](?:\s+|$)|\n+")  # "portal.example.com" is one word
_OPENING = re.compile(r"^\s*(?:[\w'’]+\s+){0,5}?[\w'’]+[:,]\s+")
"""A sentence's opening words up to a colon or comma ("No worries:", "Don't panic,", "No data loss is expected,"):
dropped before a denial is looked for when they hold one, so that an aside does not deny the steps after it."""


@functools.lru_cache(maxsize=4096)
def _gold_sentences(texts: tuple[str, ...]) -> list[tuple[frozenset[str], Counter[str]]]:
    """Each sentence or step of the gold texts with two or more terms: its terms and its denial words (cached: the
    same gold is read for every episode of its ticket)."""
    out = []
    for text in texts:
        for head in _SEGMENT.split(text):
            terms = frozenset(content_terms(head))
            if len(terms) >= 2:
                out.append((terms, Counter(w for w in words(_denials_read(head)) if w in DENIALS)))
    return out


def _aside_dropped(sentence: str, gold_terms: Set[str]) -> str:
    """The sentence without an opening aside that holds a denial and says nothing of the gold ("No worries: restart
    X" is "restart X"; "Do not contain immediately: revoke ..." keeps its denial). An opening that points at what
    follows ("Do not try these:", "Avoid the following:") is no aside: it denies the rest (`_points_back`), and neither
    is a label of denial words alone ("Prohibited:", "Useless:", "Hold off on:", read as asides before each step with
    the heuristic's full success until a ninth red team, 2026-11-28): an aside says something else ("worries")."""
    opening = _OPENING.match(sentence)
    said = set(content_terms(opening.group())) if opening else set()
    if opening and set(words(opening.group())) & DENIALS and not said & gold_terms and said - _pointing_terms() \
            and not _points(opening.group()):
        return sentence[opening.end():]
    return sentence


@functools.lru_cache(maxsize=1024)
def _denying_mark(char: str) -> bool:
    """`char` is a symbol that says no (`_DENYING_MARK`)."""
    return unicodedata.category(char) in ("So", "Sm", "Me") and bool(_DENYING_MARK.search(unicodedata.name(char, "")))


def _denials_read(sentence: str) -> str:
    """The sentence as a reader sees it (`drill.core.text.as_read`: "You cаn't" in a Cyrillic "а", "Restart X? Nо."
    with a Cyrillic "о" were no denials until 2026-11-28), with the denials the word list cannot see spelled as "not"
    (`_SPELLED_DENIALS`)."""
    sentence = _REMINDER.sub(" remember ", as_read(_STRUCK.sub(r" not \g<0>", sentence)))
    if not sentence.isascii():
        sentence = "".join(" not " if ord(c) > 127 and _denying_mark(c) else c for c in sentence)
    sentence = _SPELLED_OUT.sub(lambda m: f" {word} " if (word := re.sub(r"[\W_]", "", m.group())) in DENIALS
                                else m.group(), sentence)
    for pattern, spelled in _SPELLED_DENIALS:
        sentence = pattern.sub(spelled, sentence)
    return sentence


def _points_back(sentence: str, gold_terms: set[str]) -> bool:
    """A denial that names no step of the gold and points at the others ("Do not do any of the above.", "Do not
    try these: ...", "None of these steps will work; never attempt them.") or takes them back ("Scratch all that.",
    "Actually, don't.": the steps then that, each full credit until 2026-11-28, a seventh red team): it denies
    everything the answer says. Its opening up to a colon is read alone unless it is a bare aside ("Actually,"), so
    that "Avoid the following: restart X" counts and "For safety, don't do that on weekends" does not; a condition
    ("If none of the above works, escalate") is no denial."""
    opening = _OPENING.match(sentence)
    # an opening that holds no denial and names nothing ("Actually,", "On second thought,") leaves the rest to read
    empty = opening and not set(words(opening.group())) & (DENIALS | _RETRACTS) and not set(
        content_terms(opening.group())) - _pointing_terms()
    head = opening.group() if opening and not empty else sentence
    said = set(words(head))
    return bool(said & (DENIALS | _RETRACTS) or "none" in said) and _points(head) and not _CONDITION.match(
        head) and not (set(content_terms(head)) - _pointing_terms()) & gold_terms


_CONTRARY = ("delete", "wipe", "erase", "purge", "destroy", "kill", "drop", "remove", "disable", "uninstall",
             "revoke", "deny", "block", "stop", "ignore", "skip", "undo", "revert", "abandon", "cancel",
             "terminate", "abort", "discard", "detach", "unmount", "disconnect", "deactivate", "downgrade",
             "forbid", "prohibit", "reject")
"""Verbs that undo or refuse what a step does: a step repeated with its own verb replaced by one of these ("Delete SDK
adaptive retries" for "Enable ...") says the opposite. Not "shut" (down): "Shut down X and start it again" restarts
X, which `_OPPOSITES` reads ("start" says "restart" too)."""


_DESTROYING = ("wipe", "erase", "destroy", "shred", "nuke", "trash", "abandon", "reformat", "scrap", "demolish",
               "obliterate")
"""Verbs that destroy or give up, which no fix uses unless its gold does: one of them in a sentence that says a gold
sentence ("Wipe the least-privileged role at the smallest scope" for "Grant ...", a clause of the gold resolution,
not a shown step) says the opposite, and one anywhere else in an answer that says the gold is an order the gold never
gives ("If this is production: the steps. Otherwise, wipe the server and reinstall everything.", full credit on
every ticket the heuristic's pick was right until 2026-11-28, a seventh red team). `drill audit`'s "steps wiped"
(2026-11-28): the oracle's answer with one clause's first word replaced by "Wipe" was correct on 92 of 117
answerable train tickets whose answer it changed (53 of 68 test); now on 0 (2); "Scrap", "Demolish" and "Reformat"
were read only by `_verb_swapped` and passed on 13 of 117 (3 of 68 test) until the seventh red team added them.
The wider `_CONTRARY` read this way ("stop", "delete", "remove": runbooks use them) failed the heuristic's own right
answers on 6 train and test tickets."""


def _destroys(said: str) -> bool:
    """The sentence holds a verb of `_DESTROYING` that no denial just before it takes back ("do not wipe yet")."""
    said_words = words(said)
    return any(set(content_terms(w)) & _destroying_stems() and not set(said_words[max(0, i - 2):i]) & DENIALS
               for i, w in enumerate(said_words))


@functools.cache
def _destroying_stems() -> frozenset[str]:
    return frozenset((content_terms(word) or [word])[0] for word in _DESTROYING)


@functools.cache
def _contrary_stems() -> frozenset[str]:
    return frozenset((content_terms(word) or [word])[0] for word in _CONTRARY)


@functools.cache
def _antonym_stems() -> dict[str, tuple[frozenset[str], frozenset[str]]]:
    """`_OPPOSITES` as content terms (stemmed like the text they are compared with): each term's opposites, and the
    terms of its own side that say it as well."""
    def stem(word: str) -> str:
        return (content_terms(word) or [word])[0]
    opposites: dict[str, set[str]] = {}
    same: dict[str, set[str]] = {}
    for a, b in _OPPOSITES:
        for side, other in ((a, b), (b, a)):
            for word in side:
                opposites.setdefault(stem(word), set()).update(stem(w) for w in other)
                same.setdefault(stem(word), set()).update(stem(w) for w in side)
    return {t: (frozenset(opposites[t] - same[t]), frozenset(same[t])) for t in opposites}


def _contradicts(sentence_terms: set[str], said: str, gold_terms: frozenset[str], step: str | None,
                 vocabulary: set[str], order: tuple[str, ...] = (), gold_text: str | None = None,
                 gold_others: tuple[str, ...] = ()) -> bool:
    """The answer sentence repeats a gold sentence with a word swapped for its opposite (`_OPPOSITES`: "Disable" for
    "Enable", "Shut down" for "Restart") in that word's place, and without the word itself or another of its side
    that the gold sentence does not use, or, for a step of the shown gold article, without the step's own verb
    (its first word) and opening with a contrary one in its place (`_CONTRARY`: "Delete SDK adaptive retries"), or
    holds a verb that destroys (`_DESTROYING`: "Wipe ..."), or says a clause of the gold sentence (`gold_text`) with
    its first word swapped for one the gold texts never use (`_verb_swapped`: "Scrap the control-plane static pods";
    `gold_others`, every gold sentence, for the synonyms they use). Only an opposite that no gold sentence the
    answer sentence also says uses (`vocabulary`): procedures say "stop the VM ... start it again" and "add a trust
    anchor ... remove it once", so "Stop the VM" is the gold's own step, not "Start the VM" turned around. In its
    place: the answer sentence with the opposite read as the gold's word follows the gold sentence's terms (`order`)
    further; an opposite elsewhere in a long sentence that covers half of a long gold sentence ("... 'Require
    re-register multifactor authentication' and delete old methods" beside "have the user enrol the new device")
    swaps nothing."""
    stems = _antonym_stems()
    said_terms = sentence_terms | _phrase_terms(said)
    for term in gold_terms:
        opposites, same = stems.get(term, (frozenset(), frozenset()))
        # another word of the term's own side that the gold sentence does not use itself says it still ("Shut
        # it down and start it again" restarts)
        swapped = opposites & said_terms - vocabulary
        if not swapped or same & said_terms - (gold_terms - {term}):
            continue
        sequence = list(_phrase_sequence(said))
        if not order or any(_lcs([term if t == o else t for t in sequence], list(order)) > _lcs(sequence, list(order))
                            for o in swapped):
            return True
    if _destroying_stems() & said_terms - vocabulary and _destroys(said):
        return True  # "Wipe the least-privileged role at the smallest scope"
    if gold_text is not None and _verb_swapped(said, gold_text, frozenset(vocabulary), gold_others, step is not None):
        return True  # "Scrap the control-plane static pods" for "restart the control-plane static pods"
    if step is None:
        return False
    verb = content_terms(step.split(None, 1)[0]) if step.split() else []
    first = content_terms(said.split(None, 1)[0]) if said.split() else []
    return bool(verb) and verb[0] not in sentence_terms and bool(first) and first[0] in _contrary_stems() and \
        first[0] not in vocabulary


_CLAUSE = re.compile(r",(?=\s)|:(?=\s)(?!\s*`)|\s[-\u2013\u2014]+\s|\b(?:and|then|but)\b", re.IGNORECASE)
"""Where a sentence's clauses part: a comma or colon before a space, a dash between spaces, or a joining word ("and",
"then"). Not a colon inside a word ("kms:Decrypt") or before a command ("Re-enable: `aws kms enable-key`": the command
is what the verb does), nor a bracket: a bracket's words belong to its clause. An "or" parts
two clauses too, and joins two verbs on one object ("move or limit noisy processes"): both readings are taken."""
_OR = re.compile(r"\bor\b", re.IGNORECASE)
SWAP_MIN_OBJECT = 1
"""A clause whose first word is swapped (`_verb_swapped`) keeps at least this many content terms after it (its object),
all of the gold clause's, in order."""


@functools.lru_cache(maxsize=65536)
def _clauses(text: str) -> tuple[tuple[tuple[frozenset[str], tuple[str, ...]], ...], ...]:
    """Each clause of `text` (`_CLAUSE`, two-word verbs read as one word, `_PHRASES`) that opens with a word, not a
    command (a clause that opens in a code span, "`swanctl --initiate ...`", has no verb to swap), as its written
    words (split at spaces: "metrics-server" is one), each as the set of its words and content terms, and its
    content terms in order."""
    out = []
    text = _phrase_read(text)
    # an odd backtick that closes a span ("net-net`."): the text opens inside a code span cut at a ";"
    code = text.count("`") % 2 == 1 and bool(re.search(r"^[^`]*\S`(?:\W|$)", text))
    starts = []  # each clause, and each part of it an "or" parts, with whether it opens in a code span
    for clause in _CLAUSE.split(text):
        starts.append((clause, code))
        parts = _OR.split(clause)
        for part in parts if len(parts) > 1 else ():
            starts.append((part, code))
            code ^= part.count("`") % 2 == 1
        if len(parts) == 1:
            code ^= clause.count("`") % 2 == 1
    for part, in_code in starts:
        tokens = tuple((frozenset(said) | frozenset(content_terms(token)), tuple(content_terms(token)))
                       for token in part.split() if (said := words(token)))
        if tokens and not in_code and not part.lstrip().startswith("`"):
            out.append(tokens)
    return tuple(out)


_SAME_ACTION: tuple[tuple[str, ...], ...] = (
    ("check", "verify", "confirm", "inspect", "validate", "review", "test", "retest", "read", "examine", "ensure",
     "investigate", "analyse", "analyze", "assess", "audit", "look", "view", "see", "query", "diagnose", "determine",
     "identify", "find", "locate", "search", "list", "enumerate", "show", "display", "compare", "diff", "match",
     "watch", "monitor", "observe", "trace", "probe", "scan", "track", "capture", "record", "collect", "gather",
     "dump", "print", "get", "fetch", "describe", "measure", "note", "spot", "pinpoint", "detect", "scrutinize",
     "scrutinise", "ascertain", "discover", "recheck", "decode", "parse", "interpret", "decipher", "trial", "study",
     "consult", "survey", "uncover", "hunt", "prove", "exercise", "guarantee"),
    ("fix", "repair", "correct", "resolve", "remediate", "address", "mend", "rectify", "sort", "patch"),
    ("run", "execute", "invoke", "perform", "rerun", "retry", "repeat", "reattempt", "try"),
    ("use", "employ", "utilise", "utilize", "apply", "leverage"),
    ("set", "configure", "define", "specify", "adjust", "tune", "change", "modify", "edit", "update", "alter",
     "switch"),
    ("make", "create", "generate", "build", "produce"),
    ("replace", "swap", "substitute", "exchange", "change", "switch"),
    ("move", "migrate", "relocate", "transfer", "shift", "switch"),
    ("request", "ask", "file", "submit", "raise", "open"),
    ("escalate", "page", "notify", "inform", "tell", "contact", "alert", "report", "hand", "call", "ping", "involve"),
    ("copy", "duplicate", "clone"),
    ("wait", "hold"),
    ("set", "establish", "put", "assign"),
    ("update", "refresh", "revise", "amend"),
    ("use", "adopt"),
    ("add", "introduce"),
    ("restart", "cycle"),
    ("raise", "lift"),
    ("grant", "give", "provide", "award"),
    ("escalate", "refer", "forward"),
    ("request", "apply"),
    ("reset", "reinitialize", "reinitialise", "reinit", "initialize", "initialise"),
    ("restore", "recover"),
    ("route", "direct", "steer", "forward"),
    ("limit", "cap", "clamp", "restrict", "constrain", "throttle", "bound", "curb"),
    ("schedule", "plan", "book", "arrange"),
    ("deploy", "ship", "release"),
    ("rebuild", "recreate", "reconstruct", "remake", "redo"),
    ("repeat", "redo"),
    ("protect", "safeguard", "shield", "secure"),
    ("compact", "defrag", "defragment"),
    ("drain", "evacuate"),
    ("upload", "push"),
    ("align", "sync", "synchronise", "synchronize", "reconcile"),
    ("clean", "tidy", "cleanup"),
    ("handle", "manage"),
    ("attach", "connect"),
)
"""Verbs that do one action in a runbook step, beside the sides of `_OPPOSITES`: a step with its verb swapped for
another of its group is the same step ("Examine the autoscaler logs" for "Check ..."). Verbs that only observe form
one group (reading changes nothing, so swapping one for another says the same step); the others are thesaurus
synonyms of the corpus' most frequent clause openers. No group holds a verb that destroys, stops or undoes: a verb
this table lacks costs an honest paraphrase its credit (measured in the red-team tests), never lets one through.
The groups after "wait" (a seventh red team, 2026-11-28) are thesaurus synonyms of the clause openers the table
lacked ("reset", "drain", "limit", ...) or of its own verbs ("cycle" for "restart", "rectify" for "fix"): one clause's
opener of the shown steps swapped for a synonym from a list written for the corpus' verbs was correct on 357 of 600
test variants with the table before them, 0 more of the adversarial verbs ("Break", "Delete", "Disable") passing."""


@functools.cache
def _same_action() -> dict[str, frozenset[str]]:
    """Each verb's content term, to the terms of every verb that says the same action (`_SAME_ACTION`, and its side
    of each group of `_OPPOSITES`)."""
    def stem(word: str) -> str:
        return (content_terms(word) or [word])[0]
    same: dict[str, set[str]] = {t: set(sides[1]) for t, sides in _antonym_stems().items()}
    for group in _SAME_ACTION:
        for word in group:
            same.setdefault(stem(word), set()).update(stem(w) for w in group)
    return {t: frozenset(v) for t, v in same.items()}


_PRONOUNS = frozenset({"it", "them", "this", "that", "these", "those"})


@functools.lru_cache(maxsize=65536)
def _verb_swapped(said: str, gold: str, vocabulary: frozenset[str], others: tuple[str, ...] = (),
                  cut: bool = False) -> bool:
    """The answer sentence says a clause of the gold sentence `gold` with its first word swapped: the clause's object
    (its content terms after its first written word, `SWAP_MIN_OBJECT` or more) in order right after a word that the
    gold texts the sentence says do not use (`vocabulary`), the gold clause's own word not before the object, and the
    new word no synonym of it (`_same_action`: "Reboot" for "Restart", "Inspect" or "Examine" for "Check") nor of the
    word another gold sentence (`others`) opens that object with ("Employ exponential backoff" says the gold's "Use
    exponential backoff", beside the step "Enable exponential backoff"). "Scrap the control-plane static pods" for
    "restart the control-plane static pods": a step is its action and its object, and the object kept with an action
    the gold never names is another step, whatever the new verb is. A closed table of synonyms, not of harmful verbs:
    `_DESTROYING` refused "Wipe" and nothing else, and the gold with one clause's verb replaced by "Scrap", "Corrupt",
    "Overwrite", "Demolish", "Break", "Unplug" or "Reformat" was correct on all 68 test episodes the change reached
    (`drill audit`'s "steps wiped", 2026-11-28); then on 3 to 5 of 68, now 0 to 4 (a value in a code span or a
    noun in a list replaced, or the gold using the word itself; one-word clauses are read by `_bare_swapped`). A
    synonym the table lacks costs an honest paraphrase its credit: the gold article's steps with one verb swapped for
    a synonym outside the table ("Reinitialise" for "Reset", "Recover" for "Restore") were correct on 284 of 300
    answerable tickets, the gold resolution so on 194 of 205 (both now in the table). The heuristic's and the
    oracle's episodes are unchanged."""
    clauses = _clauses(said)
    for i, ((_, opening), *rest) in enumerate(clauses):
        foreign = frozenset(opening) - vocabulary  # "Scrap.Timeout" for "Target.Timeout": "scrap"
        # a later clause does it to the same thing ("... and start it again")
        then = frozenset(t for after in clauses[i + 1:] if len(after) > 1 and after[1][0] & _PRONOUNS
                         for t in after[0][1])
        if foreign and _swaps(foreign, tuple(rest), gold, then) \
                and not any(_swaps(foreign, tuple(rest), text, then, same=True) for text in others):
            return True
    return _bare_swapped(clauses, gold, vocabulary, cut)


def _clause_terms(clause: tuple[tuple[frozenset[str], tuple[str, ...]], ...]) -> tuple[str, ...]:
    return tuple(t for _, terms in clause for t in terms)


def _bare_swapped(clauses: tuple[tuple[tuple[frozenset[str], tuple[str, ...]], ...], ...], gold: str,
                  vocabulary: frozenset[str], cut: bool = False) -> bool:
    """A clause of the gold with no object of its own (its word alone or with a pronoun: "... and reconnect", "Fix
    that and re-run the dry-run") said with its word swapped for one the gold texts the sentence says do not use
    (`vocabulary`) and no synonym of it, between the same clauses as in the gold (the one before it, or the one after
    it, says the same terms): `_verb_swapped` reads a step by its object, and these have none. Such a clause with its
    word replaced by "Corrupt" ("... `certbot --expand`, corrupt and re-check") was correct on 8 of the 13 oracle
    answers the audit's "steps wiped" change on train still passed until 2026-11-28 (a seventh red team). With `cut`
    (`gold` is a shown step's head, cut at ten words or a colon: "... reduce requests or add") its last clause is
    not read so: the cut took its object, and a synonym there ("or put in") lost its credit."""
    synonyms = _same_action()
    gold_clauses = _clauses(gold)
    for j, ((verb, verb_terms), *gold_rest) in enumerate(gold_clauses):
        if _clause_terms(tuple(gold_rest)) or not verb_terms or cut and j == len(gold_clauses) - 1:
            continue
        near = {k: _clause_terms(gold_clauses[k]) for k in (j - 1, j + 1) if 0 <= k < len(gold_clauses)}
        said_as = verb | {t for v in verb_terms for t in synonyms.get(v, ())}
        for i, ((opening, _), *rest) in enumerate(clauses):
            foreign = frozenset(opening) - vocabulary
            # a later clause does it on a pronoun ("Shut down or fix the upstream and start it again")
            then = frozenset(t for after in clauses[i + 1:] if len(after) > 1 and after[1][0] & _PRONOUNS
                             for t in after[0][1])
            if not foreign or (foreign | then) & said_as or _clause_terms(tuple(rest)):
                continue
            if any(terms and 0 <= i + k - j < len(clauses) and _clause_terms(clauses[i + k - j]) == terms
                   for k, terms in near.items()):
                return True
    return False


def _swaps(foreign: frozenset[str], rest: tuple[tuple[frozenset[str], tuple[str, ...]], ...], gold: str,
           then: frozenset[str] = frozenset(), same: bool = False) -> bool:
    """A clause of `gold` says the object `rest` opens with (all of its terms after its first written word, in order)
    and opens with none of the words of `foreign` nor a synonym of them, nor does a later clause of the answer on a
    pronoun (`then`, their first words: "Shut down X and start it again" restarts X); with `same`, with one of them or
    a synonym."""
    synonyms = _same_action()
    terms = [t for _, said_terms in rest for t in said_terms]
    lead = next((i for i, (_, said_terms) in enumerate(rest) if said_terms), len(rest))
    for (verb, verb_terms), *gold_rest in _clauses(gold):
        obj = [t for _, object_terms in gold_rest for t in object_terms]
        if len(obj) < SWAP_MIN_OBJECT or terms[:len(obj)] != obj:
            continue
        said_as = verb | {t for v in verb_terms for t in synonyms.get(v, ())}
        if same and foreign & said_as:
            return True
        if not same and not (foreign | then) & said_as and not any(verb & said_words for said_words, _ in rest[:lead]):
            return True
    return False


_FORBIDS = re.compile(r"^\W*(?:(?:you\s+)?(?:do\s+not|don't|dont|never|must\s+not|should\s+not|avoid)|do\s+NOT)\s+(.*)",
                      re.IGNORECASE | re.DOTALL)
"""A gold step or sentence that forbids something ("Never delete files in pg_wal manually", "Do not re-enable TLS
1.0/1.1"): the rest is what it forbids."""


@functools.lru_cache(maxsize=4096)
def _forbidden(texts: tuple[str, ...]) -> dict[frozenset[str], str]:
    """Each gold sentence that forbids something (`_FORBIDS`), by its terms: the first term of what it forbids. An
    answer sentence that says that sentence, that term included, with no denial at all orders what the gold forbids:
    each such step of the shown gold article said as an order was correct on all 46 answerable tickets that have one
    (a sixth red team, experiments/LOG.md, 2026-11-28)."""
    out = {}
    for text in texts:
        for head in _SEGMENT.split(text):
            terms = frozenset(content_terms(head))
            if len(terms) >= 2 and (match := _FORBIDS.match(head)) and (rest := content_terms(match.group(1))):
                out[terms] = rest[0]
    return out


@functools.lru_cache(maxsize=4096)
def _gold_orders(texts: tuple[str, ...]) -> dict[frozenset[str], tuple[str, ...]]:
    """Each gold sentence's terms in their order, by its set of terms (`_gold_sentences`)."""
    return {frozenset(terms): tuple(terms) for text in texts for head in _SEGMENT.split(text)
            if len(set(terms := content_terms(head))) >= 2}


def negates_a_step(sub: Submission, task: TriageTask) -> bool:
    """The answer denies the gold: of the gold's steps and sentences it says (half of one's terms in one of its
    sentences), as many or more are said only in sentences that hold a denial (`DENIALS`) as plainly. "Do not
    enable SDK adaptive retries", "You should never enable ...", "Enable ... - not recommended": word overlap
    reads past the negation (the judge's stop words drop "not" and "don't"), and every step of the gold article
    denied was judged correct on all 183 answerable train tickets (an outside red team, experiments/LOG.md,
    2026-11-27). An opening aside that holds a denial and none of the gold's terms ("No worries:", "Don't
    panic,") is dropped first, and a denial the gold sentence the answer repeats already has ("... skip only
    that transaction, not blindly") is the gold's. Measured on the 183 tickets: the steps plain, after such an
    aside, or with a closing remark are correct on all; each step denied in five wordings on 0-2; no episode of
    the heuristic or the oracle on any split is flagged."""
    steps = gold_steps(sub, task)
    gold = _gold_sentences((*steps, task.gold_resolution))
    step_heads = {terms: head for head in (h for text in steps for h in _SEGMENT.split(text))
                  if len(terms := frozenset(content_terms(head))) >= 2}
    all_gold = tuple(h for text in (task.gold_resolution, *steps) for h in _SEGMENT.split(text))
    gold_texts = {terms: head for head in all_gold if len(terms := frozenset(content_terms(head))) >= 2}
    everything = {term for terms, _ in gold for term in terms}
    vocabulary = everything | _gold_phrase_terms((*steps, task.gold_resolution))
    orders = _gold_orders((*steps, task.gold_resolution))
    forbidden = _forbidden((*steps, task.gold_resolution))
    phrased = _gold_phrase_heads((*steps, task.gold_resolution))

    def local(terms: set[str]) -> set[str]:
        # the words of the gold sentences this answer sentence says: an opposite one of them uses is that sentence's
        # ("Stop the VM" says the gold's "Stop the VM", not "Start the VM" turned around)
        return {t for head, said_terms in phrased if len(terms & head) >= len(head) / 2 for t in said_terms}
    plain = denied = 0
    said: list[tuple[set[str], Counter[str], str]] = []
    points_back = destroys = framed = False
    for sentence in _SEGMENT.split(_denials_read(sub.resolution)):
        heading = _LEAD_IN.match(sentence) is not None
        heads_a_denial = heading and _frames_a_denial(sentence)
        # a heading for what not to do ("Don't:") denies the lines under it (`framed`), not the answer above it
        points_back = points_back or _points_back(sentence, everything) and not (
            heads_a_denial and not _LOOKS_BACK.search(sentence))
        # a destroying order the gold never gives, wherever it stands ("...; otherwise wipe the server")
        destroys = destroys or bool(_destroying_stems() & _phrase_terms(sentence) - vocabulary) and _destroys(
            _phrase_read(sentence))
        sentence = _aside_dropped(sentence, everything)
        terms = set(content_terms(sentence))
        # a denial the gold sentence it repeats already has ("... — not blindly") is the gold's, not the answer's;
        # one more than it has ("Do not ... not blindly") is the answer's
        echoed: Counter[str] = Counter()
        for head, denials in gold:
            if len(terms & head) >= len(head) / 2:
                echoed |= denials
        own = Counter(w for w in words(sentence) if w in DENIALS) + Counter({"(headed)": framed})
        said.append((terms, own - echoed, sentence.strip()))
        if heading and not set(words(sentence)) <= _CONTINUING:  # up to the next heading that is not "Also:"
            framed = heads_a_denial
    if (points_back or destroys) and any(len(terms & head) >= len(head) / 2 for terms, _, _ in said
                                         for head, _ in gold):
        return True  # "Do not do any of the above.", "If X, restart Y; otherwise wipe the disk."
    for head, _ in gold:
        matched = [(bool(denials) + 2 * bool(denials["(headed)"]),
                    _contradicts(terms, text, head, step_heads.get(head), local(terms), orders.get(head, ()),
                                 gold_texts.get(head), all_gold),
                    len(terms & head))
                   for terms, denials, text in said if len(terms & head) >= len(head) / 2]
        # the sentences that say this one best, a swapped word read as the one it replaced ("Retain client caches"
        # says "Flush client caches" better than "Flush caches on the resolvers" does)
        best = max((shared + contradicted for _, contradicted, shared in matched), default=0)
        if matched and all(contradicted for _, contradicted, shared in matched if shared + contradicted == best):
            return True  # a step said only with its opposite ("Disable ..." for "Enable ...")
        if (thing := forbidden.get(head)) and (ordered := [text for terms, _, text in said
                                                           if len(terms & head) >= max(2, len(head) / 2)
                                                           and thing in terms]) \
                and not any(_takes_back(text, head, Counter()) for text in ordered):
            return True  # "Never delete files in pg_wal" said as "Delete files in pg_wal"
        if matched:
            # a step listed under a heading for what not to do is denied, wherever else it stands: the steps under
            # "Do:" and again under "Don't:" kept their credit once that heading no longer pointed back (a review,
            # 2026-11-28: 171 of 183 answerable train tickets, 0 before the ninth red team)
            if all(no or contradicted for no, contradicted, _ in matched) or any(no > 1 for no, _, _ in matched):
                denied += 1
            else:
                plain += 1
    return denied > 0 and denied >= plain


_ABBREVIATED = re.compile(r"\b(e\.g|i\.e|etc|vs)\.", re.IGNORECASE)
"""Abbreviations whose full stop ends no sentence ("reset (e.g. https://...)"): read without it."""


_Clause = tuple[frozenset[str], Counter[str]]


@functools.lru_cache(maxsize=256)
def _step_reading(head: str) -> tuple[frozenset[str], frozenset[tuple[str, str]], tuple[_Clause, ...]]:
    """A ruled-out step's head as `orders_a_ruled_out_step` reads it: its terms, its pairs of terms in a row (not
    "e.g"), and each clause's terms with the denials it holds."""
    in_order = content_terms(head)
    pairs = frozenset((a, b) for a, b in zip(in_order, in_order[1:]) if min(len(a), len(b)) >= 3)
    clauses = tuple((frozenset(content_terms(c)), Counter(w for w in words(c) if w in DENIALS))
                    for c in re.split(r"[,:;]", _denials_read(head)))
    return frozenset(in_order), pairs, clauses


_CLAUSE_END = re.compile(r"(?<=,)|(?<=:)(?!//)|(?=\()|(?<=\))|\s[-\u2013\u2014]+\s|[\u2013\u2014]")
"""Where a clause ends inside a sentence: after a comma, a colon (not a URL's) or a parenthesis, before one, or at a
dash."""
_COORDINATED = re.compile(r"\s(?=(?:but|so|yet)\s)|\s(?=and\s+(?:do\s+)?(?:" + "|".join(sorted(DENIALS)) + r")\b)",
                          re.IGNORECASE)
"""Where a clause's coordinated half begins: before "but", "so" or "yet", or before "and" that opens a denial ("and
don't look back"). A denial bears only on its own half: "It is not a leak so raise the limit", "Don't escalate but
raise the limit", "Raise the limit and don't think twice" kept a ruled-out step's order in full, 18 of 18, until
2026-11-28 (a second review). "And" before anything else joins what it coordinates ("Rolling back and restoring
will not help")."""
_EXCEPTING = frozenset({"instead", "without", "rather", "except"})
"""Words that keep a clause from ordering what follows them in it ("instead of raising the limit", "without falling
back to account keys"); "unless" is a condition ("Raise the limit unless told otherwise" orders it)."""


def _takes_back(sentence: str, step: Set[str], own: Counter[str]) -> bool:
    """The sentence takes back what it says of a step (`step`: the step's terms): a denial (`DENIALS`, less `own`, the
    denials the step has itself) that bears on the step (`_governing`) up to the end of the last clause, or coordinated
    half of one (`_COORDINATED`), that names a term of the step ("Do not raise the limit", "Rolling back will not help";
    not "Don't escalate but raise the limit"), or an excusing word right before a term of the step (`_excused`). A
    denial in a later clause or an excusing word with nothing of the step after it takes nothing back ("Raise the limit
    - no need to wait", "Raise the limit without delay", "Without delay, raise the limit": each kept a ruled-out or
    forbidden step's order in full until 2026-11-28); neither does an explanation whose denial follows a comma ("Rolling
    back, as the article says, will not help"): an honest cost."""
    parts = [half for clause in _CLAUSE_END.split(sentence) for half in _COORDINATED.split(clause)]
    last = max((i for i, part in enumerate(parts) if set(content_terms(part)) & step), default=len(parts) - 1)
    denials = Counter(w for part in parts[:last + 1] for w in _governing(part, step, DENIALS, after_step=True)) - own
    return bool(denials) or any(_excused(parts, i, step) for i in range(last + 1))


def _governing(part: str, step: Set[str], marks: Set[str], after_step: bool) -> list[str]:
    """The words of `marks` in the clause `part` that bear on the step. A denial (`after_step`) bears on it when a
    term of the step comes before it ("Rolling back will not help"), after it with no word that turns it around in
    between (`_UNDOING`: "Do not raise ...", "Do not tell clients to disable ..." but not "Never hesitate to raise
    ...", "It is not optional to raise ..."), or nothing follows it ("Do not."). An excusing word bears on the step
    when its next content word, an adverb skipped, is a term of the step ("instead of blindly raising the limit", but
    not "instead of waiting raise the limit", "without delay raise the limit"). "Never hesitate to x", "It is not
    optional to x", "Without delay x", "Instead of waiting x" kept a ruled-out step's order in full, 18 of 18, until
    2026-11-28."""
    said = [(word, content_terms(word)) for word in words(part)]
    # read once from the right: for each word, the next content word (adverbs skipped), and whether a term of the step
    # follows with no undoing word before it
    ahead: list[tuple[str | None, bool]] = []
    following, step_ahead = None, False
    for word, terms in reversed(said):
        ahead.append((following, step_ahead))
        if terms and not word.endswith("ly"):
            following = terms[0]
            step_ahead = True if set(terms) & step else (False if word in _UNDOING else step_ahead)
    ahead.reverse()
    found, step_before = [], False
    for (word, terms), (following, step_ahead) in zip(said, ahead):
        if word in marks and (following in step if not after_step else step_before or following is None or step_ahead):
            found.append(word)
        step_before = step_before or bool(set(terms) & step)
    return found


_UNDOING = frozenset({"hesitate", "wait", "delay", "fail", "forget", "neglect", "optional", "postpone", "hold",
                      "stop", "doubt"})
"""Words that turn a denial before them around ("Never hesitate to", "Don't wait to", "not optional", "Don't stop
... until"): what follows is then ordered. Not "need" or "reason": "No need to raise the limit" denies it."""


_POINTED_EXCEPTION = re.compile(r"\b(?:instead\s+of|rather\s+than|except(?:\s+for)?)\s+(?:this|that|these|those|"
                                r"the\s+following|what\s+follows)\s*:\s*$", re.IGNORECASE)
"""A clause that ends by excusing what follows its colon ("Escalate instead of this: ...")."""


def _excused(clauses: list[str], i: int, head_terms: Set[str]) -> bool:
    """Clause `i` has an excusing word (`_EXCEPTING`) whose next content word is a term of the step (`_governing`:
    "instead of raising the limit", not "instead of waiting raise the limit"), or ends by excusing what follows its
    colon (`_POINTED_EXCEPTION`: "Escalate instead of this: raise the limit"; "Do this instead: raise the limit" and
    "Instead: ..." excuse nothing, 18 of 18 kept full credit in a review of 2026-11-28) and the next clause names a
    term of the step."""
    if _governing(clauses[i], head_terms, _EXCEPTING, after_step=False):
        return True
    return bool(_POINTED_EXCEPTION.search(clauses[i])) and i + 1 < len(clauses) \
        and bool(set(content_terms(clauses[i + 1])) & head_terms)


def orders_a_ruled_out_step(sub: Submission, task: TriageTask) -> bool:
    """The answer orders a step of the gold article that this ticket's gold forbids or says will not help
    (`TriageTask.ruled_out`: "raise the limit" on a route leak, "roll back" when the database is down): some sentence
    says the step (half its head's terms, at least two, or two of them in a row: "Raise the limit to 50000.") and
    does not take it back (`_takes_back`: "Do not raise the limit", "instead of raising the limit"), whatever other
    sentences say: the gold followed by the step is mixed advice, not the gold. "Unless" takes nothing back ("Raise
    the limit unless told otherwise"). A denial the step's head has itself ("If SSPR is not possible, ...") is the
    step's when the sentence repeats the clause that holds it. Until 2026-11-28 the gold article's steps copied with
    the right escalation were correct on 35 of the 36 answerable escalation tickets, 20 of whose golds hold a denial
    (experiments/LOG.md, 2026-11-28). An order for later ("Once a good snapshot exists, compact ...") or an
    explanation ("Switching to an eviction policy would log users out.") reads as the order too: an honest cost,
    since excusing "once" or "would" would excuse the copied steps so written."""
    sentences = _SEGMENT.split(_ABBREVIATED.sub(r"\1", _denials_read(sub.resolution))) if task.ruled_out else []
    for head in task.ruled_out:
        head_terms, pairs, clauses = _step_reading(head)
        for sentence in sentences:
            sentence = _aside_dropped(sentence, head_terms)
            terms = content_terms(sentence)
            if not (len(set(terms) & head_terms) >= max(2, len(head_terms) / 2)
                    or pairs & set(zip(terms, terms[1:]))):
                continue
            own = sum((denials for clause, denials in clauses if clause and clause <= set(terms)), Counter())
            if not _takes_back(sentence, head_terms, own):
                return True
    return False


def succeeded(sub: Submission | None, task: TriageTask) -> bool:
    """The environment's success: the right escalation decision, and a right answer (`is_correct`) or, for a ticket
    the knowledge base cannot answer, no citation and no fix taken from a seen article (`offers_a_seen_fix`)."""
    if sub is None or sub.escalate != task.should_escalate:
        return False
    return is_correct(sub, task) if task.answerable else not sub.citations and not offers_a_seen_fix(sub)


def offers_a_seen_fix(sub: Submission) -> bool:
    """The text covers half the steps of an article the agent saw (ROUGE-L recall >= `CORRECT_ROUGE_RECALL`): on a
    ticket the knowledge base cannot answer, that is a fix made up from a runbook that does not apply, cited or not.
    The heuristic's answer with its citation dropped whenever it escalated succeeded on every unanswerable ticket it
    escalated, 0.781 success on validation at k=5 against the heuristic's 0.688 (and 0.707 in total against 0.690;
    the article's id written in the text instead scored the same: an eighth red team, 2026-11-28). No unanswerable
    ticket's gold covers more than 0.13 of a shown article's steps (k = 1 to 10)."""
    return any(rouge_l(sub.resolution, steps)[1] >= CORRECT_ROUGE_RECALL for steps in sub.seen_steps.values())


def correct_score(episode: Episode, task: TriageTask) -> float:
    """1 when the episode succeeds (`succeeded`), else 0. Without it nothing but ROUGE-L paid a right answer more
    than a near miss: the shown steps cut just below the correctness bar at confidence 0 (calibration pays an
    admitted miss in full) beat the heuristic and the honest answer, and an alphabetical bag of the steps' words
    matched the heuristic, both never correct (an outside red team, experiments/LOG.md, 2026-11-27)."""
    return float(succeeded(submission(episode), task))


def gold_steps(sub: Submission, task: TriageTask) -> list[str]:
    """The step heads of each gold article the agent was shown (none for an episode recorded without them)."""
    return [sub.seen_steps[i] for i in task.gold_article_ids if i in sub.seen_steps]


def substance(sub: Submission, task: TriageTask) -> float:
    """How much of the answer the text says: the share of the gold resolution's content terms (or a shown gold
    article's steps', whichever is higher) that it uses, the ticket's own terms left out of both, over
    `CORRECT_ROUGE_RECALL` (so half of them is enough), at most 1. A set of terms, not a subsequence: repeating the
    answer, or appending words the gold does not use, never raises it."""
    ticket = set(content_terms(task.ticket))
    said = set(content_terms(sub.resolution)) - ticket
    shares = []
    for text in (task.gold_resolution, *gold_steps(sub, task)):
        terms = set(content_terms(text)) - ticket
        shares.append(len(said & terms) / len(terms) if terms else 1.0)
    return min(1.0, max(shares) / CORRECT_ROUGE_RECALL)


def covers_gold(sub: Submission, task: TriageTask) -> bool:
    """The text covers half the gold resolution (ROUGE-L recall >= 0.5), or cites a gold article (grounding > 0.5)
    and covers half of that article's shown steps, in runs of their words (`covers`). Half the steps, not a tenth of
    the gold: with a tenth and 15% of the gold's key terms (the rule until 2026-11-27, kept for episodes recorded
    without the shown steps), the ticket restated with the cited article's title was correct on 31% of the train
    tickets at k=5, because the gold repeats the ticket's host names, and the first step on its own on 28%."""
    if says_gold(sub, task):  # the gold's own words, unseen
        return True
    if grounding_of(sub, task) <= CORRECT_GROUNDING:
        return False
    steps = gold_steps(sub, task)
    if steps:
        return any(covers(sub.resolution, text) for text in steps)
    return (rouge_l(sub.resolution, task.gold_resolution)[1] >= CORRECT_MIN_RECALL
            and key_recall(sub.resolution, task) >= CORRECT_MIN_KEY_RECALL)


def mostly_gold(sub: Submission, task: TriageTask) -> bool:
    """At least `CORRECT_MIN_PRECISION` of the text is the gold's (ROUGE-L precision against the gold resolution or
    a shown gold article's steps: the gold article's steps alone were below it against the resolution on 21 of the
    183 answerable train tickets at k=5, worded apart from it)."""
    return any(rouge_l(sub.resolution, text)[0] >= CORRECT_MIN_PRECISION
               for text in (task.gold_resolution, *gold_steps(sub, task)))


def lists_another(sub: Submission, task: TriageTask) -> bool:
    """The text also covers half the steps of a seen article that is not the gold (ROUGE-L recall >= 0.5), one whose
    steps the gold's own steps or gold answer do not already cover that much (a sibling article on the same fix):
    the steps of two shown articles, the right one among them, are a guess between two."""
    gold = [*gold_steps(sub, task), task.gold_resolution]
    for article, steps in sub.seen_steps.items():
        if article in task.gold_article_ids or rouge_l(sub.resolution, steps)[1] < CORRECT_ROUGE_RECALL:
            continue
        if all(rouge_l(text, steps)[1] < CORRECT_ROUGE_RECALL for text in gold):
            return True
    return False


def spoiled(sub: Submission, task: TriageTask) -> bool:
    """The text would be correct but for a denial of the gold's steps, another ticket's specifics named or a word in
    two scripts or in another script (`disguised`, `other_script`): like a hedge, its calibration is the worse of its
    two readings, so that spoiling a right answer stated at low confidence (appending "partner" or "Do not ...") never
    raises it."""
    return (task.answerable and covers_gold(sub, task) and mostly_gold(sub, task) and not lists_another(sub, task)
            and (negates_a_step(sub, task) or names_another_ticket(sub, task) or disguised(sub.resolution)
                 or other_script(sub.resolution)))


def is_hedge(sub: Submission, task: TriageTask) -> bool:
    """The text covers the gold but is mostly about something else, or lists another seen article's steps beside it:
    the right answer among other candidates."""
    return task.answerable and covers_gold(sub, task) and (not mostly_gold(sub, task) or lists_another(sub, task))


def key_recall(resolution: str, task: TriageTask) -> float:
    """The share of the gold's key terms (every gold term for a task without them) that the answer uses."""
    key = set(task.key_terms) or set(content_terms(task.gold_resolution))
    return len(key & set(content_terms(resolution))) / len(key) if key else 0.0


def calibration_score(episode: Episode, task: TriageTask) -> float:
    """Brier-style: 1 - (confidence - correct)^2, and 0 for a wrong escalation decision. A hedge (`is_hedge`) scores
    the worse of the two readings, right and wrong: scored as a wrong answer, padding a right answer stated at low
    confidence until it became a hedge would raise its calibration; scored 0, a hedger's escalation would go unpaid."""
    sub = submission(episode)
    triage = task
    if sub is None or sub.escalate != triage.should_escalate:
        return 0.0
    if is_hedge(sub, triage) or spoiled(sub, triage):
        return min(1.0 - sub.confidence ** 2, 1.0 - (sub.confidence - 1.0) ** 2)
    return 1.0 - (sub.confidence - float(is_correct(sub, triage))) ** 2


def length_budget(task: TriageTask) -> int:
    """Words an answer may use before brevity drops: the longer of the gold resolution and the ticket."""
    return max(len(words(task.gold_resolution)), len(words(task.ticket)), 1)


_LIST_MARKER = re.compile(r"^\s*(?:\(?\d{1,2}[.)]|[a-z][.)]|[-*\u2022])(?:\s+|$)")
"""A list marker opening a sentence ("1.", "2)", "a.", "-"): no word to judge. Read as words, "1." was an off-topic
sentence of its own, and a numbered answer lost all its focus (an outside red team, 2026-11-27)."""


def focus(resolution: str, task: TriageTask) -> float:
    """The lowest on-topic share of the answer's content words, over its prefixes.

    A word is on topic when it occurs in the gold resolution. Words of the ticket itself are neutral
    (restating the ticket is neither an answer nor off topic), so an answer with nothing but ticket
    words has no focus. The first sentence is judged as a whole (an answer may open with a word the
    gold does not use); after it, the share is taken after every word. Because it is a minimum over
    prefixes, text appended to an answer that has finished a sentence can never raise focus, whatever
    the text says: that is what stops padding from paying. The first sentence's grace ends after
    `FIRST_SENTENCE_GRACE` judged words, so that removing full stops cannot stretch it over the whole answer.
    A list marker opening a sentence (`_LIST_MARKER`) is not read.
    """
    ticket = set(content_terms(task.ticket))
    gold = set(content_terms(task.gold_resolution)) - ticket
    on = off = 0
    lowest: float | None = None
    said = [_LIST_MARKER.sub("", sentence, count=1) for sentence in split_sentences(resolution)]
    said = [sentence for sentence in said if sentence.strip()]
    for index, sentence in enumerate(said):
        for term in content_terms(sentence):
            if term in gold:
                on += 1
            elif term not in ticket:
                off += 1
            else:
                continue
            if index > 0 or on + off > FIRST_SENTENCE_GRACE:
                lowest = min(lowest if lowest is not None else 1.0, on / (on + off))
            elif on + off == FIRST_SENTENCE_GRACE:
                lowest = on / (on + off)
        if index == 0 and on + off and lowest is None:
            lowest = on / (on + off)
    return lowest or 0.0


def parsimony_score(episode: Episode, task: TriageTask) -> float:
    """Brevity x focus x substance: shorter than the budget, on topic from the first sentence, and saying enough
    (`substance`: half the gold's terms, else in proportion). Without substance, one on-topic word was the
    most parsimonious answer there is: "Adaptive." at confidence 0 outscored the heuristic's answers (0.582 against
    0.548 on the train tickets at k=5, 2026-11-27). 0 for an empty answer."""
    sub = submission(episode)
    if sub is None:
        return 0.0
    n_words = len(words(sub.resolution))
    if n_words == 0:
        return 0.0
    return min(1.0, length_budget(task) / n_words) * focus(sub.resolution, task) * substance(sub, task)


def repetition_score(episode: Episode, task: TriageTask) -> float:
    """1 / (1 + repeated sentences + repeated citations)."""
    sub = submission(episode)
    if sub is None:
        return 0.0
    said = sentences(sub.resolution)
    cited = [c.strip().upper() for c in sub.citations]
    repeats = (len(said) - len(set(said))) + (len(cited) - len(set(cited)))
    return 1.0 / (1 + repeats)


COMPONENTS: dict[str, tuple[ComponentFn, str]] = {
    "format": (format_score, "graduated schema compliance of submit_resolution"),
    "correct": (correct_score, "the environment's success: right escalation and a right answer"),
    "resolution": (resolution_score, "ROUGE-L F1 against the gold resolution"),
    "grounding": (grounding_score, "cited ids were seen; gold credited, fabricated penalised"),
    "calibration": (calibration_score, "Brier-style confidence vs correctness; 0 on a wrong escalation"),
    "parsimony": (parsimony_score, "short and on-topic; padding never pays"),
    "repetition": (repetition_score, "repeated sentences and citations lower it"),
}


def rubric(weights: Mapping[str, float] | None = None) -> Rubric:
    """The triage rubric with the default weights, some replaced by `weights` (unknown names raise)."""
    base = Rubric([Component(name, fn, DEFAULT_WEIGHTS[name], description)
                   for name, (fn, description) in COMPONENTS.items()])
    return base.reweighted(weights or {})
