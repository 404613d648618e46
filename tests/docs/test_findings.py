"""The findings' hand-written prose quotes only what their generated decisions hold.

`docs/findings/redecide.py` writes each finding's `verdict.json` and the README's generated
blocks (`<!-- answer: ... -->` after the title, `<!-- decision: ... -->`, the index's table).
Everything else in a README is prose, written by hand, and goes stale when the decisions change.
These tests read that prose (the README without its generated blocks, code spans, fenced code
and History sections) sentence by sentence (a table row or list item is one) and check three
things against the verdicts in the sentence's scope:

- **Seed counts.** "N seeds" (also "N new seeds", "nine seeds", "3, 6 and 9 seeds"), the M of
  "N of M", "by N" (a number ending a clause or followed by "seeds"), "decides/settles at|after|by
  N", "looks at N" and a command's `--max-seeds N` (the one thing read in a code span) must be a
  count the verdicts hold: a comparison's or block comparison's seeds, better / worse / tied
  seeds, if_agree and the settle projection's seed counts; a condition's seeds; the collapse
  table's seeds, collapsed and discordant counts and the discordant seeds a decision needs;
  looks, declared looks and max_seeds. An estimate ("about N seeds") must be one the generator
  made: if_agree, a settle projection's seed count or the discordant seeds needed. The N of
  "N of M" is a count of seeds with some property that prose may read off the per-seed values
  (a warm-up's collapses); only its M is checked.
- **Decision claims.** A decision word is a claim about an endpoint: "better / worse on most
  seeds" and "trained the better policy" (the primary endpoint or a block decided, either
  direction: the answer names the winner, the verdict the condition); "unresolved", "undecided"
  and "without deciding" (the primary endpoint's decisions, the mean's instead where the
  sentence says "mean", and the blocks' too where it says "within"); "equivalent" (any
  endpoint); "differs", "by more than the margin", "within the margin" (the mean difference);
  "fewer / more collapses" (the collapse endpoint); and "settled / decided as X". Each must name
  a decision the scope holds. A sentence that says *every / each / all ... comparison(s)* claims
  it of every comparison in scope. Questions (sentences ending "?") claim nothing.
- **Procedures.** A procedure named in prose (t test, paired t, TOST, sign-flip, Holm, Pocock,
  spending, sign test, Bonferroni, AdaStop) must be one the verdict's `method` names: how the
  findings are decided now; earlier procedures belong in History.

A sentence's scope is the findings it links to (`[x](sub/README.md)`), else its README's own
`verdict.json`, else (a parent README: `docs/findings/README.md`, `batch_size/README.md`) every
verdict below it.

**History** is exempt: a section whose heading starts with "History" (any level, up to the next
heading of the same or a higher level) may tell what earlier procedures said, with their numbers.
Nothing else is exempt, so the decision words are reserved for decisions outside it.
"""

from __future__ import annotations

import json
import re
from pathlib import Path

import pytest

FINDINGS = Path(__file__).resolve().parents[2] / "docs" / "findings"
BLOCKS = [("<!-- answer: written by docs/findings/redecide.py -->", "<!-- /answer -->"),
          ("<!-- decision: written by docs/findings/redecide.py -->", "<!-- /decision -->")]
WORDS = {w: i for i, w in enumerate(["zero", "one", "two", "three", "four", "five", "six", "seven", "eight", "nine",
                                     "ten", "eleven", "twelve", "thirteen", "fourteen", "fifteen", "sixteen",
                                     "seventeen", "eighteen", "nineteen", "twenty"])}
NUM = r"(?:\d+|" + "|".join(WORDS) + r")"
ITEM = rf"{NUM}\b(?![.,]\d|\s*(?:s|min|%|points?|games|steps)\b)"
LIST = rf"{ITEM}(?:(?:,\s*|\s+(?:and|or|to)\s+|\s*[-–]\s*){ITEM})*"
"""One number or a list of them ("3, 6 and 9", "39 and 34"): every one is checked."""
SEED_COUNTS = [
    re.compile(rf"\b(?P<n>{LIST})(?:[ -](?:new|more|further|declared|RL|paired|first|next|other|discordant))* seeds?\b",
               re.I),
    re.compile(rf"\b\d+ of (?P<n>{NUM})\b(?! (?:comparisons|conditions|trials|arms|warm-ups|phases|games|steps))",
               re.I),
    re.compile(rf"\bby (?P<n>{NUM})(?![\d%]|[.,]\d)(?=\s*(?:seeds?\b|[.,;:)]|$|if\b|and\b))", re.I),
    re.compile(rf"\b(?:decide[sd]?|settle[sd]?) (?:at|after|by|within) (?P<n>{NUM})\b", re.I),
    re.compile(rf"\blooks? at (?P<n>{LIST})", re.I),
    re.compile(rf"\bmax-seeds (?P<n>{NUM})\b", re.I),
]
ESTIMATES = re.compile(rf"\b(?:about|around|roughly|some|nearly|~)\s*(?P<n>{LIST})(?:[ -]\w+)? seeds?\b", re.I)
"""An estimate of the seeds a decision takes must be one the generator made: if_agree, a settle
projection's seed count, or the discordant seeds a collapse decision needs."""
CLAIMS = [
    (re.compile(r"\b(?:better|worse) on most seeds\b|\btrained the better policy\b", re.I), "most"),
    (re.compile(r"\bunresolved\b|\bundecided\b|\bwithout deciding\b", re.I), "unresolved"),
    (re.compile(r"\bequivalent\b", re.I), "equivalent"),
    (re.compile(r"\bdiffers?\b(?!, within)|\bby more than the margin\b", re.I), "differs"),
    (re.compile(r"\bwithin the margin\b", re.I), "differs, within the margin"),
    (re.compile(r"\b(?:fewer|more) collapses\b|\bcollapses? (?:less|more) often\b", re.I), "collapse"),
]
PROCEDURES = re.compile(r"\bt[ -]tests?\b|\bpaired t\b|\bTOST\b|\bsign[ -]flip\w*|\bHolm\b|\bPocock\b|"
                        r"\bsign test\b|\bspending\b|\bBonferroni\b|\bAdaStop\b", re.I)
"""How a decision is made: a procedure named outside History must be one the verdict's `method` names."""
SETTLED_AS = re.compile(r"\b(?:settled|decided|settles|decides) as (\w+)", re.I)
EVERY = re.compile(r"\b(?:every|each|all)\b(?:\s+\S+){0,2}?\s+comparisons?\b", re.I)
LINK = re.compile(r"\]\(([^)#\s]+)\)")


def _number(word: str) -> int:
    return int(word) if word.isdigit() else WORDS[word.lower()]


def prose(text: str) -> str:
    """The README without its generated blocks, fenced code, code spans and History sections."""
    for start, end in BLOCKS:
        text = re.sub(re.escape(start) + r".*?" + re.escape(end), "", text, flags=re.S)
    text = re.sub(r"```.*?```", "", text, flags=re.S)
    kept, history = [], 0
    for line in text.splitlines():
        head = re.match(r"(#+)\s+(.*)", line)
        if head and history and len(head.group(1)) <= history:
            history = 0
        if head and head.group(2).strip().lower().startswith("history"):
            history = len(head.group(1))
        if not history:
            kept.append(line)
    return re.sub(r"`[^`]*`", _budgets, "\n".join(kept))


def _budgets(code: re.Match) -> str:
    """A code span is a command: only its seed budget (`--max-seeds N`) is read."""
    return " ".join(f"max-seeds {n}" for n in re.findall(r"--max-seeds[ =](\d+)", code.group(0)))


def sentences(text: str) -> list[str]:
    """Paragraphs split into sentences; each table row is one."""
    out = []
    for para in re.split(r"\n\s*\n|\n(?=\s*(?:[-*] |\d+\. |#))", text):
        rows = [ln for ln in para.splitlines() if ln.lstrip().startswith("|")]
        out += rows
        rest = " ".join(ln.strip() for ln in para.splitlines() if not ln.lstrip().startswith("|"))
        out += [s for s in re.split(r"(?<=[.!?])\s+(?=[A-Z(*\[\"])", rest) if s.strip()]
    return out


class Scope:
    """What a set of verdicts holds: the seed counts and the decisions by endpoint."""

    def __init__(self, verdicts: list[dict]):
        self.counts: set[int] = set()
        self.projected: set[int] = set()
        self.method = ""
        self.primary: list[str] = []
        self.mean: list[str] = []
        self.blocks: list[str] = []
        self.collapse: list[str] = []
        for v in verdicts:
            self._add(v)

    def _add(self, v: dict) -> None:
        for c in v.get("comparisons", []):
            self._comparison(c)
            self.primary.append(c["decision"])
            self.mean.append(c["mean_decision"])
        for block in v.get("blocks", {}).values():
            for c in block:
                self._comparison(c)
                self.blocks.append(c["decision"])
        for c in v.get("collapse", []):
            self.projected |= {c["needed"]} if c.get("needed") else set()
            self.counts |= {c[k] for k in ("seeds", "reference_seeds", "needed", "collapsed", "reference_collapsed",
                                           "only_reference", "only_condition") if c.get(k) is not None}
            self.collapse.append(c.get("direction") or "unresolved")
        self.method += " " + v.get("method", "")
        self.counts |= {c["seeds"] for c in v.get("conditions", {}).values()}
        self.counts |= {*(v.get("looks") or []), *(v.get("declared_looks") or [])}
        if v.get("max_seeds"):
            self.counts.add(v["max_seeds"])

    def _comparison(self, c: dict) -> None:
        self.counts |= {c[k] for k in ("seeds", "better", "worse", "ties", "if_agree") if c.get(k) is not None}
        self.projected |= {int(s[0]) for s in c.get("settle") or []} | ({c["if_agree"]} if c.get("if_agree") else set())
        self.counts |= self.projected

    def held(self, claim: str, sentence: str) -> list[str]:
        """The decisions a claim is read against, by the endpoint the sentence names: the primary
        endpoint's unless it says "mean", with the blocks' where it says "within"."""
        s = sentence.lower()
        if claim in ("differs", "differs, within the margin"):
            return self.mean
        if claim == "collapse":
            return self.collapse
        if claim == "equivalent":
            return self.primary + self.mean + self.blocks
        base = self.primary if claim == "most" or "mean" not in s else self.mean
        return base + (self.blocks if claim == "most" or "within" in s else [])


def _holds(claim: str, decision: str) -> bool:
    if claim == "most":
        return decision in ("better on most seeds", "worse on most seeds")
    if claim == "collapse":
        return decision in ("fewer", "more")
    return decision == claim


def _claims(sentence: str) -> list[str]:
    found = [claim for rx, claim in CLAIMS if rx.search(sentence)]
    for word in SETTLED_AS.findall(sentence):
        w = word.lower()
        found.append("most" if w in ("better", "worse") else w)
    return found


def problems(sentence: str, scope: Scope) -> list[str]:
    """What a sentence quotes that its scope does not hold."""
    s = sentence.replace("*", "")
    out = [f"quotes {m.group(0)!r}: {n} is no seed count of its verdict ({sorted(scope.counts)})"
           for rx in SEED_COUNTS for m in rx.finditer(s) for n in _numbers(m) if n not in scope.counts]
    out += [f"estimates {m.group(0)!r}: {n} is no projection of its verdict ({sorted(scope.projected)})"
            for m in ESTIMATES.finditer(s) for n in _numbers(m) if n not in scope.projected]
    out += [f"names {m.group(0)!r}, a procedure its verdict's method does not use"
            for m in PROCEDURES.finditer(s) if m.group(0).lower() not in scope.method.lower()]
    if s.rstrip().endswith("?"):
        return out
    every = bool(EVERY.search(s))
    for claim in _claims(s):
        held = scope.held(claim, s)
        ok = [_holds(claim, d) for d in held]
        if not (all(ok) and ok if every else any(ok)):
            said = " of every comparison" if every else ""
            out.append(f"claims {claim!r}{said}; its verdict holds {sorted(set(held))}")
    return out


def _numbers(m: re.Match) -> list[int]:
    return [_number(w) for w in re.findall(rf"\b{NUM}\b", m.group("n"), flags=re.I)]


def _verdicts(folder: Path) -> list[dict]:
    own = folder / "verdict.json"
    paths = [own] if own.exists() else sorted(folder.rglob("verdict.json"))
    return [json.loads(p.read_text()) for p in paths]


def _scope(readme: Path, sentence: str) -> Scope:
    linked = []
    for target in LINK.findall(sentence):
        path = (readme.parent / target).resolve()
        if path.name == "README.md" and path.parent != readme.parent and any(path.parent.rglob("verdict.json")):
            linked += _verdicts(path.parent)
    return Scope(linked or _verdicts(readme.parent))


def readme_problems(readme: Path) -> list[str]:
    text = readme.read_text()
    return [f"{readme.relative_to(FINDINGS)}: {p}\n    in: {s.strip()[:200]}"
            for s in sentences(prose(text)) for p in problems(s, _scope(readme, s))]


READMES = sorted(p for p in FINDINGS.rglob("README.md") if any(p.parent.rglob("verdict.json")))


def test_every_finding_with_a_verdict_is_checked():
    assert {p.parent.relative_to(FINDINGS).as_posix() for p in READMES} >= {
        "exploiter", "memorisation", "memorisation/warm-ups", "curriculum", "curriculum/confirm",
        "batch_size/fixed-games", "batch_size/fixed-updates", "batch_size/fixed-updates-warm-ups", "batch_size", "."}


@pytest.mark.parametrize("readme", READMES, ids=lambda p: p.parent.relative_to(FINDINGS).as_posix())
def test_findings_prose_quotes_only_what_its_verdict_holds(readme: Path):
    found = readme_problems(readme)
    assert not found, "the prose outside the generated blocks disagrees with them:\n" + "\n".join(found)


VERDICT = {"comparisons": [{"decision": "unresolved", "mean_decision": "unresolved", "seeds": 9, "better": 0,
                            "worse": 9, "ties": 0, "if_agree": 12, "settle": [[18, 1.0], [27, 1.0]]},
                           {"decision": "worse on most seeds", "mean_decision": "unresolved", "seeds": 9,
                            "better": 0, "worse": 9, "ties": 0, "if_agree": None, "settle": []}],
           "blocks": {}, "collapse": [], "conditions": {"a": {"seeds": 9}}, "looks": [], "max_seeds": None}


@pytest.mark.parametrize("sentence", [
    "About 10 seeds settle all three.", "It settles at 39 seeds.", "The chance is 6 % by 36.",
    "The comparison settled as differs.", "Every comparison is unresolved.", "The two are equivalent.",
    "Batch 512 collapses less often.", "Eight seeds show it.", "It decides after 13 if the next seeds agree.",
    "Batch 256 ended high on 9 of 10 seeds."])
def test_the_rule_flags_what_the_verdict_does_not_hold(sentence: str):
    assert problems(sentence, Scope([VERDICT]))


@pytest.mark.parametrize("sentence", [
    "It decides at 12 seeds if the next seeds agree.", "A 27 % chance by 18.", "All 9 of 9 seeds agree.",
    "One comparison is unresolved; the other is worse on most seeds.", "The mean difference is unresolved.",
    "What the seeds show, without deciding: 9 of 9.",
    "Draws rose by 3.8 points, by 10 points at most.", "Does a larger batch train a better policy?",
    "Nine seeds show it; 512 trained the better policy."])
def test_the_rule_passes_what_the_verdict_holds(sentence: str):
    assert not problems(sentence, Scope([VERDICT]))


def test_history_sections_and_generated_blocks_are_not_prose():
    text = ("# T\n\n" + BLOCKS[0][0] + "\nunresolved after 39 seeds\n" + BLOCKS[0][1] + "\n\nKept.\n\n## History\n\n"
            "Earlier it differed after 39 seeds.\n\n### Detail\n\nStill history.\n\n## Design\n\nKept too.\n")
    assert sentences(prose(text)) == ["# T", "Kept.", "## Design", "Kept too."]
