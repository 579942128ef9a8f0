"""EXAM-Qrels (docs/methods.md §4): grades turned into relevance labels, scored with trec_eval measures.

EXAM-Label(p) = the best grade any question gets from passage p (self-ratings), or the number
of questions p answers correctly (QA grading). Queries with subtopics get one qrels query per
facet, `query/facet`, labelled over that facet's questions only. Measures come from
pytrec_eval, at relevance level τ; nDCG uses the label as gain and ignores the level, so the
measures that do not depend on it are computed once, with no τ; unpooled passages are non-relevant. Queries a run lacks are left out of its mean (trec_eval's default) or count
as 0 with `complete=True` (trec_eval -c).
"""

from __future__ import annotations

import difflib
import re

import pandas as pd
import pytrec_eval

from examflow.io.qrels import qrels_ids
from examflow.registry import AGGREGATE, AGGREGATED_KINDS, CRITERIA, CRITERIA_KINDS, DEFAULT_MEASURES

# Not per-query numbers that an arithmetic mean over queries summarises.
_NOT_MEANS = {"relstring": "a string", "runid": "a string", "num_q": "a count of queries",
              "gm_map": "a geometric mean", "gm_bpref": "a geometric mean"}  # fmt: skip


# trec_eval measures whose value does not depend on the relevance level (-l): the graded gains of
# nDCG and its kin, the count of retrieved passages. Not Rndcg: it is 0 for a query with no passage
# relevant at the level. tests/test_exam_qrels.py checks the list against pytrec_eval on graded
# judgments at every level.
LEVEL_FREE = ("ndcg", "ndcg_rel", "G", "num_ret")


def level_free(measure: str) -> bool:
    """Whether a trec_eval measure (with its cut-off, as `ndcg_cut_10`) is the same at every τ."""
    return measure in LEVEL_FREE or measure.startswith("ndcg_cut_")


# Parameters on which trec_eval's C code stops the process (pytrec-eval-terrier 0.5.11, each name probed in a process of its
# own): a cut-off that reads as 0 (`P_0`, `P_0.5`, `recall_5,0`), and any of the nDCG family's gain values.
_CUT_OFF_MEASURES = ("ndcg_cut", "relative_P", "map_cut", "success", "recall", "P")
_GAIN_MEASURES = ("ndcg_rel", "Rndcg", "ndcg", "G")
_ZERO = re.compile(r"0+(?![0-9])")  # an item C's atoi reads as 0 (`0`, `0.5`, `0x1`; not `05`, nor `abc`: skipped)
_CUT_OFF_OF_0 = "a cut-off of 0 (trec_eval stops on it): a cut-off is a whole number, 1 or more (P_10, ndcg_cut_10)"


def aborting(name: str) -> str | None:
    """Why trec_eval would stop the process on a measure's parameters (checking its name included), if it would.
    Parameters start with a digit (`ndcg_cutt_10` is no measure, which pytrec_eval says)."""
    for base in sorted(_CUT_OFF_MEASURES + _GAIN_MEASURES, key=len, reverse=True):
        parameters = name.removeprefix(f"{base}_")
        if parameters == name:
            continue
        if not parameters[:1].isdigit():
            return None
        if base in _GAIN_MEASURES:
            return f"pytrec_eval cannot take {base}'s gain values (trec_eval stops on them): name it {base}"
        return _CUT_OFF_OF_0 if any(_ZERO.match(item) for item in parameters.split(",")) else None
    return None


def measure_problems(names) -> dict[str, str]:
    """The names pytrec_eval does not compute under exactly that name, and those given twice (each
    would count every query twice), each with the reason.

    pytrec_eval reads `P_2O` as `P_2` and `P` as nine cut-offs, and a score looked up
    under the configured name would then be missing: every such name is refused.
    """
    names = list(names)
    problems = {}
    for name in names:
        if name in problems:
            continue
        if names.count(name) > 1:
            problems[name] = "given twice"
            continue
        if name in _NOT_MEANS:
            problems[name] = f"trec_eval reports {_NOT_MEANS[name]}, not a per-query score"
            continue
        if why := aborting(name):  # before pytrec_eval sees it: an assertion in its C code ends the process
            problems[name] = why
            continue
        computed = _computed(name)
        if computed is None:
            names_some = " (pytrec_eval names: map, P_20, ndcg_cut_10, recip_rank, ...)"
            problems[name] = f"not a trec_eval measure{measure_meant(name) or names_some}"
        elif computed != [name]:
            # `P`: its default cut-offs alone, though any other computes too (a stranger read P_3 as none)
            cuts = " (its default cut-offs; any other computes too)" if len(computed) > 1 else ""
            problems[name] = f"trec_eval computes it as {', '.join(computed)}{cuts}: name each measure exactly"
    return problems


def _computed(name: str) -> list[str] | None:
    """The names pytrec_eval computes for a measure named so (`P` gives nine), or None where it knows no such measure.
    Not for a name `aborting` refuses."""
    try:
        evaluator = pytrec_eval.RelevanceEvaluator({"q": {"d": 1}}, {name})
    except ValueError:
        return None
    return sorted(evaluator.evaluate({"q": {"d": 1.0}})["q"])


_BASE_AND_PARAMETERS = re.compile(r"(?P<base>.*?)_?(?P<parameters>[0-9][0-9.,]*)?")
# ir-measures' and common names of trec_eval's measures, as the judges' measures are written: a likely slip,
# at a cut-off (`nDCG@10`) and without one (`AP`)
_AT_CUT_OFF = {"ndcg": "ndcg_cut", "p": "P", "r": "recall", "ap": "map_cut", "map": "map_cut", "success": "success"}
_WITHOUT_CUT_OFF = {"ap": "map", "rr": "recip_rank", "mrr": "recip_rank"}


def measure_meant(name: str) -> str:
    """` (did you mean 'ndcg_cut_10'?)` for a slip of case, of `_` or of a letter in a measure's name
    (`NDCG_cut_10`, `ndcg_cut10`, `recal_10`) or an ir-measures name (`nDCG@10`), where the name meant is one
    trec_eval computes as named."""
    meant = _named_elsewhere(name) or _nearest(name)
    fine = meant not in (None, name) and meant not in _NOT_MEANS and not aborting(meant) and _computed(meant) == [meant]
    return f" (did you mean {meant!r}?)" if fine else ""


def _named_elsewhere(name: str) -> str | None:
    base, at, cut_off = name.partition("@")
    if not at:
        return _WITHOUT_CUT_OFF.get(base.lower())
    return f"{_AT_CUT_OFF[base.lower()]}_{cut_off}" if base.lower() in _AT_CUT_OFF else None


def _nearest(name: str) -> str | None:
    """The trec_eval measure whose name is `name`'s but for case and `_`, else the closest, with its parameters."""
    parts = _BASE_AND_PARAMETERS.fullmatch(name)
    assert parts is not None  # the pattern matches every string
    squeezed = {measure.lower().replace("_", ""): measure for measure in pytrec_eval.supported_measures}
    base = squeezed.get(parts["base"].lower().replace("_", ""))
    base = base or next(iter(difflib.get_close_matches(parts["base"], pytrec_eval.supported_measures, n=1)), None)
    if base is None or not parts["parameters"]:
        return base
    # `ndcg10`: ndcg takes no cut-off (pytrec_eval reads `ndcg_10` as another measure), its `_cut` kin does
    for meant in (f"{base}_{parts['parameters']}", f"{base}_cut_{parts['parameters']}"):
        if not aborting(meant) and _computed(meant) == [meant]:
            return meant
    return f"{base}_{parts['parameters']}"


def exam_labels(grades: pd.DataFrame, per_facet: bool = False) -> pd.DataFrame:
    """(qrels_id, passage_id, label) for every graded passage."""
    graded = grades[grades["error"].isna()].copy()
    qa = graded["correct"].notna()
    graded["value"] = graded["rating"].astype("Float64")
    graded.loc[qa, "value"] = graded.loc[qa, "correct"].astype(bool).astype(float)
    graded["qrels_id"] = qrels_ids(graded) if per_facet else graded["query_id"]
    if "kind" in graded and graded["kind"].isin(CRITERIA_KINDS).any():
        graded = criteria_labels(graded)
    # QA: how many questions the passage answers correctly. A question without an answer key gets no verdict
    # (no value): such rows must not switch the rule from the count to the best grade.
    how = "sum" if qa.any() and (qa | graded["value"].isna()).all() else "max"
    labels = graded.groupby(["qrels_id", "passage_id"])["value"].agg(how).fillna(0).astype(int)
    return labels.rename("label").reset_index()


def aggregations(grades: pd.DataFrame) -> pd.Series:
    """Which rows are the grades of an aggregation prompt (`criteria_llm`'s fifth, target `.../relevance`):
    a label, not an item of the exam."""
    if "kind" not in grades:  # published grades name no kind and hold none
        return pd.Series(False, index=grades.index)
    asked = grades["kind"].isin(AGGREGATED_KINDS)
    return asked & (grades["question_id"].str.rsplit("/", n=1).str[1] == AGGREGATE)


def criteria_labels(graded: pd.DataFrame) -> pd.DataFrame:
    """Criteria-based judgments: per (passage, query or subtopic) the grade of the aggregation prompt for a
    kind that asks one (`criteria_llm`), else the mean of the four criterion grades, rounded half up
    (examflow's deterministic aggregation); a target whose criteria did not all get a grade gets none."""
    import math

    targets = graded.assign(target=graded["question_id"].str.rsplit("/", n=1).str[0])
    asked = targets["kind"].isin(AGGREGATED_KINDS)
    aggregated = targets[aggregations(targets)]
    sums = targets[~asked].groupby(["qrels_id", "passage_id", "target"])["value"].agg(["sum", "count"]).reset_index()
    whole = sums[sums["count"] == len(CRITERIA)]
    averaged = whole.assign(value=[math.floor(total / len(CRITERIA) + 0.5) for total in whole["sum"]])
    return pd.concat([aggregated, averaged], ignore_index=True)


def format_qrels(labels: pd.DataFrame) -> str:
    """TREC qrels lines `qid 0 docid label`."""
    ids, passages = labels["qrels_id"].astype(str), labels["passage_id"].astype(str)
    lines = ids + " 0 " + passages + " " + labels["label"].astype(str) + "\n"
    return "".join(lines.tolist())


# No document id holds a space: the one document of a query judged only negatively (as_trec_eval_reads)
NOTHING_RELEVANT = "examflow: no relevant document"


def as_trec_eval_reads(qrels: dict[str, dict[str, int]]) -> dict[str, dict[str, int]]:
    """Judgments as trec_eval reads them: a negative label (TREC CAR's -1, -2) as trec_eval does, pooled but
    not judged (bpref and infAP pass over it). Only a query judged negatively alone is rewritten: pytrec_eval
    crashes on it (a segmentation fault); it has nothing relevant and nothing judged non-relevant, as one
    document judged 0 that no run retrieves has, which keeps the query evaluated."""
    return {q: docs if max(docs.values()) >= 0 else {NOTHING_RELEVANT: 0} for q, docs in qrels.items()}


def trec_scores(
    labels: pd.DataFrame, rankings: pd.DataFrame, levels: list[int], measures=DEFAULT_MEASURES, complete: bool = False
) -> pd.DataFrame:
    """Per (run, query, measure, τ) values at each relevance level τ (τ empty for a `level_free`
    measure); `query_id` is the qrels id."""
    qrels: dict[str, dict[str, int]] = {}
    for q, p, label in zip(*(labels[c].tolist() for c in ("qrels_id", "passage_id", "label"))):
        qrels.setdefault(q, {})[p] = int(label)
    qrels = as_trec_eval_reads(qrels)
    runs: dict[str, dict[str, dict[str, float]]] = {}  # read once for every level
    for r, q, p, score in zip(*(rankings[c].tolist() for c in ("run_id", "query_id", "passage_id", "score"))):
        runs.setdefault(r, {}).setdefault(q, {})[p] = float(score)
    rows = []
    for level in levels:
        # A measure the level leaves alone is computed once, at the first level, with τ left empty.
        chosen = [m for m in measures if not level_free(m) or level == levels[0]]
        if not chosen:
            continue
        evaluator = pytrec_eval.RelevanceEvaluator(qrels, set(chosen), relevance_level=int(level))
        for run_id in sorted(runs):
            results = evaluator.evaluate(runs[run_id])
            queries = sorted(qrels) if complete else sorted(results)
            for q in queries:
                for measure in chosen:
                    # A query the run lacks scores 0 (trec_eval -c); a measure is always computed for the rest.
                    value = results[q][measure] if q in results else 0.0
                    rows.append((run_id, q, measure, None if level_free(measure) else level, value))
    return pd.DataFrame(rows, columns=["run_id", "query_id", "measure", "tau", "value"]).astype({"tau": "Int64"})
