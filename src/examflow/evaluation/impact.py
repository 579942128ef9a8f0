"""What a question-bank edit changed (docs/methods.md §5, "Human in the loop").

Every evaluation keeps a small baseline — the method's exam questions, its EXAM-Labels and its
leaderboard — keyed by the bank's content digest, under `cache_dir/baselines/` (state, like the
grade cache: `make clean` keeps it). The next evaluation with another bank is compared with the
latest baseline of a different bank: which questions were added, removed or reworded, which pooled
passages' EXAM-Labels changed, and which systems' scores or ranks changed (old, new, delta).
"""

from __future__ import annotations

import hashlib
import json
from collections.abc import Iterable, Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Protocol, cast

import pandas as pd

from examflow.evaluation.cover import KEYS
from examflow.io.tables import optional, write_tables
from examflow.outputs import EVALUATION
from examflow.questions.diff import diff_banks, key_text
from examflow.questions.items import Entry, Item
from examflow.ties import tie_keys

QUESTION_CHANGE_COLUMNS = ["query_id", "facet_id", "change", "question_id", "question_text", "old_question_id",
                           "old_question_text", "importance", "old_importance", "answers", "old_answers"]  # fmt: skip
PASSAGE_CHANGE_COLUMNS = ["query_id", "passage_id", "old_label", "new_label"]
SYSTEM_CHANGE_COLUMNS = ["measure", "tau", "run_id", "old_score", "new_score", "delta", "old_rank", "new_rank"]
IMPACT_FILES = {name: EVALUATION[f"impact_{name}"].path for name in ("questions", "passages", "systems")}


@dataclass
class Baseline:
    questions: pd.DataFrame  # query_id, facet_id, question_id, question_text (and a nugget's importance)
    labels: pd.DataFrame  # qrels_id, passage_id, label
    leaderboard: pd.DataFrame  # measure, tau, run_id, score (systems only)
    context: str = ""  # `evaluation_context`; "" where unknown (kept by an examflow before it was)


TABLES = ("questions", "labels", "leaderboard")  # a Baseline's tables, a Parquet file each
CONTEXT = "context.txt"
SCORING = ("taus", "k", "measures", "query_mode", "n_exam")  # the evaluation settings that scores depend on


# What an evaluation's labels and scores follow besides the bank, each part as a warning names it where two
# banks' evaluations differ in it.
CONTEXT_PARTS = {
    "runs": "runs' rankings",
    "passages": "pooled passages",
    "scoring": "scoring settings (evaluation.tau, k, measures, query_mode, n_exam)",
    "models": "models that graded",
    "grading": "method settings or prompts",
}


def evaluation_context(rankings: pd.DataFrame, passages: pd.DataFrame, settings: object) -> dict[str, str]:
    """What an evaluation's labels and scores depend on besides the bank and the grading: the runs'
    rankings, the pooled passages (their texts too) and the settings that make scores, a digest or text each.
    Two banks' evaluations measure the edit only where these (and the grading, `method_context`) are the
    same: else a run added, or another τ, would read as the edit's doing."""
    texts = [*KEYS, "text"] if "text" in passages else KEYS  # a passage's text edited under its id
    parts = {}
    for name, table, keys in (("runs", rankings, ["run_id", "query_id", "passage_id", "rank", "score"]),
                              ("passages", passages, texts)):  # fmt: skip
        ordered = table[keys].sort_values(keys, kind="stable")
        parts[name] = hashlib.sha256(pd.util.hash_pandas_object(ordered, index=False).to_numpy().tobytes()).hexdigest()
    scoring = {name: getattr(settings, name) for name in SCORING}  # lists as sets: their order scores nothing
    scoring = {name: sorted(set(value)) if isinstance(value, list) else value for name, value in scoring.items()}
    parts["scoring"] = json.dumps(scoring, sort_keys=True, default=str)
    return parts


def method_context(context: dict[str, str], models: Iterable[str], grading: str = "") -> str:
    """A method's context as JSON: its evaluation's, the models that graded, and its `grading` settings (a
    digest of its configuration but for how its requests travel, prompts, decoding, calibration: `examflow
    evaluate --grading-settings`)."""
    return json.dumps(context | {"models": sorted(models), "grading": grading}, sort_keys=True)


def context_differences(previous: Baseline, current: Baseline) -> list[str] | None:
    """The parts of the context (`CONTEXT_PARTS`) in which two evaluations differ, or None where the earlier
    one's are not known (a baseline kept by an examflow that recorded a digest of them, or none)."""
    try:
        before, now = json.loads(previous.context), json.loads(current.context)
    except json.JSONDecodeError:
        return None
    if not isinstance(before, dict) or not isinstance(now, dict):
        return None
    return [words for part, words in CONTEXT_PARTS.items() if before.get(part) != now.get(part)]


def answer_key(answers, choices: str | None) -> str:
    """A question's answer key and choices (JSON, as bank shards hold them) as one text, for the baseline."""
    answers, choices = optional(answers), optional(choices)
    return json.dumps([None if answers is None else list(answers), choices], ensure_ascii=False)


def bank_digest(questions: pd.DataFrame) -> str:
    # a nugget's importance changes the nugget scores, an answer key the answers' checks: an edit of
    # either is a bank edit (a bank without them keeps the digest it had before they were read)
    extra = [c for c in ("importance", "answer_key") if c in questions and questions[c].notna().any()]
    columns = ["query_id", "facet_id", "question_id", "question_text", *extra]
    rows = questions[columns].astype(str).sort_values("question_id")
    return hashlib.sha256(json.dumps(rows.to_numpy().tolist()).encode()).hexdigest()[:16]


class BaselineStore:
    """Baselines of one method's evaluations, and the order in which their banks were evaluated."""

    def __init__(self, folder: str | Path):
        self.folder = Path(folder)
        self.sequence = self.folder / "sequence.txt"

    def previous(self, digest: str) -> tuple[str, Baseline] | None:
        """The latest baseline of a bank other than `digest`."""
        seen = self.sequence.read_text().split() if self.sequence.exists() else []
        for earlier in reversed(seen):
            folder = self.folder / earlier
            if earlier != digest and folder.is_dir():
                questions, labels, leaderboard = (pd.read_parquet(folder / f"{name}.parquet") for name in TABLES)
                context = (folder / CONTEXT).read_text() if (folder / CONTEXT).exists() else ""
                return earlier, Baseline(questions, labels, leaderboard, context)
        return None

    def save(self, digest: str, baseline: Baseline) -> None:
        tables: dict[str | Path, pd.DataFrame | str] = {
            self.folder / digest / f"{name}.parquet": getattr(baseline, name) for name in TABLES
        }
        tables[self.folder / digest / CONTEXT] = baseline.context
        seen = self.sequence.read_text().split() if self.sequence.exists() else []
        if seen[-1:] != [digest]:
            tables[self.sequence] = "\n".join([*seen, digest][-50:]) + "\n"  # the last 50 banks are plenty
        write_tables(tables)


def impact_tables(previous: Baseline | None, current: Baseline) -> dict[str, pd.DataFrame]:
    """Questions added, removed and reworded; passages whose label changed; systems whose score or rank
    changed. The last two only where both evaluations had the same context (`comparable`)."""
    tables = {
        "questions": pd.DataFrame(columns=QUESTION_CHANGE_COLUMNS),
        "passages": pd.DataFrame(columns=PASSAGE_CHANGE_COLUMNS),
        "systems": pd.DataFrame(columns=SYSTEM_CHANGE_COLUMNS),
    }
    if previous is None:
        return tables
    tables["questions"] = question_changes(previous.questions, current.questions)
    if comparable(previous, current):
        tables["passages"] = label_changes(previous.labels, current.labels)
        tables["systems"] = score_changes(previous.leaderboard, current.leaderboard)
    return tables


def comparable(previous: Baseline, current: Baseline) -> bool:
    """Whether two banks' evaluations differ by the bank alone: the same runs, pool, scoring settings and grading."""
    return previous.context == current.context


def question_changes(old: pd.DataFrame, new: pd.DataFrame) -> pd.DataFrame:
    """Questions (nuggets) added, removed, reworded, and nuggets re-rated (the same text, another importance)."""
    rows: list[tuple] = []
    known = "importance" in old  # a baseline kept before importances were: none was rated, or none is known
    for (query_id, facet_id), change in diff_banks(_entries(old), _entries(new)).items():
        rows += [(query_id, facet_id, "added", *_now(i), None, None, i.importance, None, key_text(i), None)
                 for i in change.added]  # fmt: skip
        rows += [(query_id, facet_id, "removed", None, None, *_now(i), None, i.importance, None, key_text(i))
                 for i in change.removed]  # fmt: skip
        keyed = change.rekeyed if "answer_key" in old else []  # a baseline of before keys were kept: unknown
        for name, pairs in (("reworded", change.reworded), ("re-rated", change.rerated if known else []),
                            ("re-keyed", keyed)):  # fmt: skip
            rows += [(query_id, facet_id, name, *_now(b), *_now(a), b.importance, a.importance, key_text(b), key_text(a))
                     for a, b in pairs]  # fmt: skip
    return pd.DataFrame(rows, columns=QUESTION_CHANGE_COLUMNS)


def _now(item: Item) -> tuple[str, str]:
    return item.item_id, item.text


class _Question(Protocol):
    """A row of Baseline.questions as `itertuples` gives it (a cast: pandas types cells as any scalar)."""

    query_id: str
    facet_id: str | float | None  # missing for a question of the whole query: None, or NaN once read back
    question_id: str
    question_text: str


def _entries(questions: pd.DataFrame) -> list[Entry]:
    # a baseline kept before importance was (or of a bank without ratings) has no importance column
    rated = questions if "importance" in questions else questions.assign(importance=None)
    keys = questions["answer_key"] if "answer_key" in questions else pd.Series(None, index=questions.index)
    entries: dict[tuple, Entry] = {}
    rows = zip(cast(Iterator[_Question], questions.itertuples(index=False)), rated["importance"], keys)
    for row, importance, key in rows:
        facet = None if pd.isna(row.facet_id) else cast(str, row.facet_id)  # cast: not missing, so an id
        entry = entries.setdefault((row.query_id, facet), Entry(row.query_id, facet, None, []))
        rating = None if pd.isna(importance) else cast(str, importance)
        answers, choices = json.loads(key) if isinstance(key, str) else (None, None)
        entry.items.append(Item(row.query_id, facet, row.question_id, row.question_text, gold_answers=answers,
                                choices=json.loads(choices) if choices else None, importance=rating))  # fmt: skip
    return list(entries.values())


def label_changes(old: pd.DataFrame, new: pd.DataFrame) -> pd.DataFrame:
    """Pooled passages whose EXAM-Label differs; a passage in one table only has none in the other (empty: its
    query had no question then, which is not a label 0, a passage judged non-relevant)."""
    keys = ["qrels_id", "passage_id"]
    merged = old[[*keys, "label"]].merge(new[[*keys, "label"]], on=keys, how="outer", suffixes=("_old", "_new"))
    merged = merged.astype({"label_old": "Int64", "label_new": "Int64"})
    changed = merged[merged["label_old"].ne(merged["label_new"]).fillna(True)].sort_values(keys)
    return pd.DataFrame(
        {"query_id": changed["qrels_id"], "passage_id": changed["passage_id"],
         "old_label": changed["label_old"], "new_label": changed["label_new"]}
    ).reset_index(drop=True)  # fmt: skip


def score_changes(old: pd.DataFrame, new: pd.DataFrame) -> pd.DataFrame:
    """Systems whose score (beyond the tie tolerance) or rank changed, per measure and τ."""
    keys = ["measure", "tau", "run_id"]
    ranked = [_with_ranks(board) for board in (old, new)]
    merged = ranked[0].merge(ranked[1], on=keys, how="outer", suffixes=("_old", "_new"))
    same = (tie_keys(merged["score_old"]) == tie_keys(merged["score_new"])) & (merged["rank_old"] == merged["rank_new"])
    changed = merged[~same].sort_values(keys, na_position="first")
    return pd.DataFrame(
        {"measure": changed["measure"], "tau": changed["tau"], "run_id": changed["run_id"],
         "old_score": changed["score_old"], "new_score": changed["score_new"],
         # to the tie tolerance's digits: 0.175 - 0.1625 is 0.0125, not 0.012499999999999983 (a float's noise)
         "delta": tie_keys(changed["score_new"] - changed["score_old"]),
         "old_rank": changed["rank_old"], "new_rank": changed["rank_new"]}
    ).astype({"tau": "Int64", "old_rank": "Int64", "new_rank": "Int64"}).reset_index(drop=True)  # fmt: skip


def _with_ranks(board: pd.DataFrame) -> pd.DataFrame:
    """Competition ranks (1 = best; ties share the best rank) per measure and τ, on tie keys."""
    board = board[["measure", "tau", "run_id", "score"]].copy()
    board["rank"] = 0
    for _, group in board.groupby(["measure", "tau"], dropna=False):
        board.loc[group.index, "rank"] = (
            pd.Series(-tie_keys(group["score"])).rank(method="min", na_option="bottom").to_numpy(int)
        )
    return board
