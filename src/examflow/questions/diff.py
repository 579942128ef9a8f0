"""`examflow bank-diff OLD NEW`: what an edit changed, per query and facet.

The text decides, not the id: an item whose text is in both lists, to the last space (the model reads
it so), is unchanged, whatever its ids. Of the rest, an old and a new item are a rewording when they
share an id (banks that store their ids keep them across edits: `q/md5` ids ignore spaces at the ends),
else when their texts are similar (ratio ≥ 0.6), or else when they sit at the same position in their
lists; what remains is added or removed. A nugget whose text stays and whose importance (vital, okay)
changes is re-rated: its grades stand, the scores that weigh nuggets change. A question whose text
stays and whose answer key or choices change is re-keyed: its answers are checked again.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from difflib import SequenceMatcher

from examflow.questions.items import Entry, Item

SIMILAR = 0.6


@dataclass
class Change:
    added: list[Item] = field(default_factory=list)
    removed: list[Item] = field(default_factory=list)
    reworded: list[tuple[Item, Item]] = field(default_factory=list)
    rerated: list[tuple[Item, Item]] = field(default_factory=list)  # the same nugget, another importance
    rekeyed: list[tuple[Item, Item]] = field(default_factory=list)  # the same question, another key or choices


def diff_banks(old: list[Entry], new: list[Entry]) -> dict[tuple[str, str | None], Change]:
    """Changes by (query_id, facet_id), in bank order; unchanged entries are left out."""
    before = {(e.query_id, e.facet_id): e.items for e in old}
    after = {(e.query_id, e.facet_id): e.items for e in new}
    changes = {}
    for key in list(before) + [k for k in after if k not in before]:
        change = _diff_items(before.get(key, []), after.get(key, []))
        if change.added or change.removed or change.reworded or change.rerated or change.rekeyed:
            changes[key] = change
    return changes


def _diff_items(old: list[Item], new: list[Item]) -> Change:
    removed, added = dict(enumerate(old)), dict(enumerate(new))
    kept = _match(removed, added, lambda i: (i.item_id, i.text))  # unchanged
    kept += _match(removed, added, lambda i: i.text)  # unchanged text under a new id
    change = Change(reworded=_match(removed, added, lambda i: i.item_id))  # a stored id, new text
    change.rerated = [(a, b) for a, b in kept if a.importance != b.importance]
    change.rekeyed = [(a, b) for a, b in kept if (a.gold_answers, a.choices) != (b.gold_answers, b.choices)]
    pairs = sorted(
        ((SequenceMatcher(None, a.text, b.text).ratio(), p, q) for p, a in removed.items() for q, b in added.items()),
        reverse=True,
    )
    for ratio, p, q in pairs:
        if ratio >= SIMILAR and p in removed and q in added:
            change.reworded.append((removed.pop(p), added.pop(q)))
    for p in [p for p in removed if p in added]:
        change.reworded.append((removed.pop(p), added.pop(p)))
    change.removed, change.added = list(removed.values()), list(added.values())
    return change


def _match(old: dict[int, Item], new: dict[int, Item], key) -> list[tuple[Item, Item]]:
    """Old and new items with equal keys, paired in list order and taken out of both."""
    waiting: dict = {}
    for q, item in new.items():
        waiting.setdefault(key(item), []).append(q)
    pairs = []
    for p in list(old):
        queue = waiting.get(key(old[p]))
        if queue:
            pairs.append((old.pop(p), new.pop(queue.pop(0))))
    return pairs


def format_diff(changes: dict[tuple[str, str | None], Change]) -> str:
    if not changes:
        return "no changes\n"
    lines = []
    for (query_id, facet_id), change in changes.items():
        name = f"{query_id} / {facet_id}" if facet_id else query_id
        counts = f"{len(change.added)} added, {len(change.removed)} removed, {len(change.reworded)} reworded"
        more = [
            f"{len(pairs)} {what}"
            for what, pairs in (("re-rated", change.rerated), ("re-keyed", change.rekeyed))
            if pairs
        ]
        lines.append(f"{name}: {', '.join([counts, *more])}")
        lines += [f"  + {item.text}" for item in change.added]
        lines += [f"  - {item.text}" for item in change.removed]
        for before, after in change.reworded:
            lines += [f"  ~ {before.text}", f"    → {after.text}{_rating(before, after)}"]
        lines += [f"  ! {after.text}:{_rating(before, after)}" for before, after in change.rerated]
        lines += [f"  ! {after.text}: {_key(before)} → {_key(after)}" for before, after in change.rekeyed]
    return "\n".join(lines) + "\n"


def _key(item: Item) -> str:
    """An answer key and its choices as the diff shows them: `none` for neither."""
    return key_text(item) or "none"


def key_text(item: Item) -> str | None:
    """An answer key and its choices as a TSV bank writes the answers (`a | b`); None for neither."""
    answers = " | ".join(item.gold_answers or [])
    choices = f"(choices {', '.join(f'{k}: {v}' for k, v in item.choices.items())})" if item.choices else ""
    return " ".join(part for part in (answers, choices) if part) or None


def _rating(before: Item, after: Item) -> str:
    """A nugget's change of importance (` (okay → vital)`, `unrated` for none), or nothing."""
    if before.importance == after.importance:
        return ""
    return f" ({before.importance or 'unrated'} → {after.importance or 'unrated'})"
