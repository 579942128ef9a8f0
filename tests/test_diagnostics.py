"""Question diagnostics and bank-edit impact on hand-computed cases."""

from __future__ import annotations

import math
import re
from pathlib import Path

import pandas as pd
import pytest
from scipy.stats import spearmanr

from examflow.evaluation.diagnostics import question_diagnostics, uncovered_passages
from examflow.evaluation.impact import (
    Baseline,
    BaselineStore,
    bank_digest,
    impact_tables,
    label_changes,
    score_changes,
)

# One query, questions x y z; passages a (judged 2), b (judged 0), c (judged 1), d (unjudged).
GRADES = {("a", "x"): 4, ("a", "y"): 1, ("a", "z"): 2, ("b", "x"): 5, ("b", "y"): 3, ("b", "z"): 0,
          ("c", "x"): 0, ("c", "y"): 0, ("c", "z"): 2, ("d", "x"): 0, ("d", "y"): 0, ("d", "z"): 0}  # fmt: skip
OFFICIAL = {"r1": 1.0, "r2": 2.0, "r3": 3.0}


def inputs():
    levels = pd.DataFrame(
        [("q", p, question, float(grade), False) for (p, question), grade in GRADES.items()],
        columns=["query_id", "passage_id", "question_id", "level", "correct"],
    )
    exam = pd.DataFrame({"query_id": "q", "question_id": ["x", "y", "z"], "question_text": ["X?", "Y?", "Z?"]})
    judgments = pd.DataFrame({"query_id": "q", "facet_id": None, "passage_id": ["a", "b", "c"], "relevance": [2, 0, 1]})
    rankings = pd.DataFrame(
        [("r1", "q", "a", 1), ("r1", "q", "c", 2), ("r2", "q", "b", 1), ("r3", "q", "d", 1), ("r3", "q", "a", 3)],
        columns=["run_id", "query_id", "passage_id", "rank"],
    )
    return levels, exam, judgments, rankings


def test_question_diagnostics_by_hand():
    table = question_diagnostics(*inputs(), OFFICIAL, tau=3, k=2, relevant_judgment=1).set_index("question_id")
    # At τ = 3: x is answered by a (relevant) and b (not), y by b only, z by nobody.
    assert table.loc["x", ["answered_relevant", "answered_nonrelevant"]].tolist() == [1, 1]
    assert table.loc["y", ["answered_relevant", "answered_nonrelevant"]].tolist() == [0, 1] and table.loc["y", "bad"]
    assert not table.loc["x", "bad"] and math.isnan(table.loc["z", "relevant_share"])
    # Runs' top 2: r1 a, c -> answers x; r2 b -> x, y; r3 d -> nothing (a is ranked 3).
    assert table.loc["x", "discrimination"] == pytest.approx(spearmanr([1, 1, 0], [-1, -2, -3]).statistic)
    assert table.loc["y", "discrimination"] == pytest.approx(spearmanr([0, 1, 0], [-1, -2, -3]).statistic)
    assert math.isnan(table.loc["z", "discrimination"])  # nobody answers it: no correlation
    # EXAM-Cover 1/3, 2/3, 0 against official r1 > r2 > r3: τ-b = 1/3. Without x: 0, 1/2, 0 -> τ-b 0;
    # without y: 1/2, 1/2, 0 -> τ-b 2/√6; without z: 1/2, 1, 0 -> 1/3 again.
    assert table.loc["x", "loo_kendall_change"] == pytest.approx(0 - 1 / 3)
    assert table.loc["y", "loo_kendall_change"] == pytest.approx(2 / math.sqrt(6) - 1 / 3)
    assert table.loc["z", "loo_kendall_change"] == pytest.approx(0)
    assert table.index.tolist() == ["y", "z", "x"]  # the bad question first, then the one whose removal helps most


def test_a_subtopic_question_counts_its_own_subtopics_judgments():
    """A page q with subtopics f1, f2: x asks about f1, y about f2, z about the page. Passage a is judged 2 for
    f1; b 0 for f1 and 2 for f2; c 0 for f2; d is not judged. Every question was counted against each passage's
    best judgment on the page, so b (relevant to f2 only) counted as relevant for x (a stranger's trial)."""
    levels = pd.DataFrame([("q", p, question, 4.0, False) for p, question in
                           [("a", "x"), ("b", "x"), ("c", "x"), ("d", "x"), ("a", "y"), ("b", "y"), ("a", "z"), ("c", "z")]],
                          columns=["query_id", "passage_id", "question_id", "level", "correct"])  # fmt: skip
    exam = pd.DataFrame({"query_id": "q", "question_id": ["x", "y", "z"], "question_text": ["X?", "Y?", "Z?"]})
    judgments = pd.DataFrame({"query_id": "q", "facet_id": ["f1", "f1", "f2", "f2"], "passage_id": ["a", "b", "b", "c"],
                              "relevance": [2, 0, 2, 0]})  # fmt: skip
    facets = pd.Series({"x": "f1", "y": "f2", "z": None})
    table = question_diagnostics(levels, exam, judgments, levels.iloc[:0].assign(run_id="", rank=1), None, tau=3, k=2,
                                 relevant_judgment=1, facets=facets).set_index("question_id")  # fmt: skip
    counted = table[["answered_relevant", "answered_nonrelevant"]].T.to_dict("list")
    # x: a relevant to f1, b not, c and d not judged for f1; y: b relevant to f2, a not judged for f2;
    # z, the page's: a's best judgment 2, c's 0
    assert counted == {"x": [1, 1], "y": [1, 0], "z": [1, 1]}
    # judgments of pages alone (no subtopic named): each question meets the passage's page judgment
    page = judgments.assign(facet_id=None)
    table = question_diagnostics(levels, exam, page, levels.iloc[:0].assign(run_id="", rank=1), None, tau=3, k=2,
                                 relevant_judgment=1, facets=facets).set_index("question_id")  # fmt: skip
    assert table[["answered_relevant", "answered_nonrelevant"]].T.to_dict("list") == {
        "x": [2, 1],
        "y": [2, 0],
        "z": [1, 1],
    }


def test_uncovered_passages_are_judged_relevant_and_answer_nothing():
    labels = pd.DataFrame({"qrels_id": "q", "passage_id": ["a", "b", "c", "d"], "label": [4, 5, 2, 0]})
    _, _, judgments, _ = inputs()
    passages = pd.DataFrame({"query_id": "q", "passage_id": ["a", "b", "c", "d"], "text": ["A", "B", "C text", "D"]})
    table = uncovered_passages(labels, judgments, passages, tau=3, relevant_judgment=1)
    assert table[["passage_id", "judgment", "label", "text"]].values.tolist() == [["c", 1, 2, "C text"]]


def board(scores: dict[str, float]) -> pd.DataFrame:
    return pd.DataFrame({"measure": "exam_cover", "tau": 4, "run_id": list(scores), "score": list(scores.values())})


def test_score_changes_list_score_and_rank_moves_only():
    old = board({"a": 0.5, "b": 0.4, "c": 0.3})
    new = board({"a": 0.5, "b": 0.6, "c": 0.1 + 0.2})  # 0.30000000000000004: the same score, not a change
    changed = score_changes(old, new)
    assert changed[["run_id", "old_rank", "new_rank"]].values.tolist() == [["a", 1, 2], ["b", 2, 1]]
    assert changed["delta"].tolist() == [0.0, 0.2]  # 0.6 - 0.4 is 0.19999999999999996
    # a delta to the tie tolerance's digits, not the floats' noise (a stranger read 0.012499999999999983)
    moved = score_changes(board({"a": 0.1625}), board({"a": 0.175}))
    assert 0.175 - 0.1625 == 0.012499999999999983 and moved["delta"].tolist() == [0.0125]


def test_baselines_are_compared_with_the_last_other_bank(tmp_path):
    def baseline(questions: list[tuple[str, str]], label: int, score: float) -> Baseline:
        table = pd.DataFrame([("q", None, qid, text) for qid, text in questions],
                             columns=["query_id", "facet_id", "question_id", "question_text"])  # fmt: skip
        labels = pd.DataFrame({"qrels_id": ["q"], "passage_id": ["p"], "label": [label]})
        return Baseline(table, labels, board({"a": score}))

    store = BaselineStore(tmp_path)
    first = baseline([("q/1", "What is ice?"), ("q/2", "Why do glaciers move?")], 3, 0.5)
    second = baseline([("q/1", "What is ice?"), ("q/3", "Why do glaciers move downhill?")], 4, 0.75)
    assert store.previous(bank_digest(first.questions)) is None
    store.save(bank_digest(first.questions), first)
    store.save(bank_digest(first.questions), first)  # the same bank again: still one entry
    digest, previous = store.previous(bank_digest(second.questions))
    assert digest == bank_digest(first.questions)
    tables = impact_tables(previous, second)
    assert tables["questions"][["change", "question_text", "old_question_text"]].values.tolist() == [
        ["reworded", "Why do glaciers move downhill?", "Why do glaciers move?"]
    ]
    assert tables["passages"][["passage_id", "old_label", "new_label"]].values.tolist() == [["p", 3, 4]]
    assert tables["systems"][["run_id", "old_score", "new_score"]].values.tolist() == [["a", 0.5, 0.75]]
    store.save(bank_digest(second.questions), second)
    assert store.previous(bank_digest(first.questions))[0] == bank_digest(second.questions)  # editing back
    assert (tmp_path / "sequence.txt").read_text().split() == [
        bank_digest(first.questions),
        bank_digest(second.questions),
    ]


def evaluated_baseline(bank: pd.DataFrame, grades: dict) -> Baseline:
    """The baseline an evaluation of `bank` keeps: method m's `grades` of its two questions for passage p,
    which run a ranks first."""
    from examflow.evaluation.evaluate import Inputs, Settings, evaluate

    graded = pd.DataFrame({"query_id": "q", "facet_id": None, "passage_id": "p", "question_id": ["q/1", "q/2"],
                           "error": None, "method": "m"} | grades).astype({"rating": "Int64", "correct": "boolean"})  # fmt: skip
    rankings = pd.DataFrame({"run_id": ["a"], "query_id": "q", "passage_id": "p", "rank": 1, "score": 1.0})
    passages = pd.DataFrame({"query_id": ["q"], "passage_id": "p", "origin": "retrieved", "text": "Bees."})
    judgments = pd.DataFrame(columns=["query_id", "facet_id", "passage_id", "relevance"])
    outputs = evaluate(Inputs(graded, rankings, bank, passages, judgments), Settings(measures=[]), None)
    return outputs["baselines"]["m"]


def test_a_nugget_re_rated_is_a_bank_edit_listed_with_its_importance(tmp_path):
    """A nugget bank's importance reaches the baseline through the evaluation: a nugget whose importance alone
    changes is a bank edit (another digest), listed as re-rated with both importances; a baseline kept
    without importance (older, or unrated) still compares."""

    def baseline(importance: dict[str, str], text: str = "Bees make honey") -> Baseline:
        bank = pd.DataFrame({"query_id": "q", "facet_id": None, "question_id": ["q/1", "q/2"],
                             "question_text": [text, "Wax is made by bees"], "kind": "nugget",
                             "importance": [importance["q/1"], importance["q/2"]]})  # fmt: skip
        return evaluated_baseline(bank, {"rating": [2, 0], "correct": pd.NA, "kind": "nugget_support"})

    before = baseline({"q/1": "okay", "q/2": "vital"})
    after = baseline({"q/1": "vital", "q/2": "vital"})
    assert bank_digest(before.questions) != bank_digest(after.questions)
    changes = impact_tables(before, after)["questions"]
    assert changes[["change", "question_text", "old_importance", "importance"]].values.tolist() == [
        ["re-rated", "Bees make honey", "okay", "vital"]
    ]
    reworded = impact_tables(before, baseline({"q/1": "vital", "q/2": "vital"}, "Bees make honey from nectar"))
    assert reworded["questions"][["change", "old_question_text", "old_importance", "importance"]].values.tolist() == [
        ["reworded", "Bees make honey", "okay", "vital"]
    ]
    older = Baseline(before.questions.drop(columns=["importance"]), before.labels, before.leaderboard)
    assert impact_tables(older, after)["questions"].empty  # no importance known before: none re-rated


def test_an_answer_key_edited_is_a_bank_edit_listed_as_re_keyed(tmp_path):
    """An edit of an answer key changes which answers are correct: it must be another bank (digest) for the
    impact tables, or they kept showing the edit before it (a stranger's trial)."""

    def baseline(key: list[str] | None) -> Baseline:
        bank = pd.DataFrame({"query_id": "q", "facet_id": None, "question_id": ["q/1", "q/2"],
                             "question_text": ["What is nectar?", "Who makes wax?"], "kind": "question",
                             "gold_answers": [key, ["bees"]], "choices": None})  # fmt: skip
        return evaluated_baseline(bank, {"rating": pd.NA, "correct": [True, False], "kind": "qa_verify"})

    before, after = baseline(["sugar water"]), baseline(["sugary juice"])
    assert bank_digest(before.questions) != bank_digest(after.questions)
    changes = impact_tables(before, after)["questions"]
    assert changes[["change", "question_id", "question_text", "old_answers", "answers"]].values.tolist() == [
        ["re-keyed", "q/1", "What is nectar?", "sugar water", "sugary juice"]
    ]
    older = Baseline(before.questions.drop(columns=["answer_key"]), before.labels, before.leaderboard)
    assert impact_tables(older, after)["questions"].empty  # no key known before: none re-keyed


def test_keys_added_to_a_bank_without_any_are_listed_as_re_keyed(tmp_path):
    """A bank without answer keys keeps the digest it had before keys were read, and its baseline says
    that no question had one: keys added later are listed (they were not, as if the old keys were unknown)."""

    def baseline(keys: list) -> Baseline:
        bank = pd.DataFrame({"query_id": "q", "facet_id": None, "question_id": ["q/1", "q/2"],
                             "question_text": ["What is nectar?", "Who makes wax?"], "kind": "question",
                             "gold_answers": keys, "choices": None})  # fmt: skip
        return evaluated_baseline(bank, {"rating": pd.NA, "correct": [pd.NA, pd.NA], "kind": "qa_verify"})

    keyless, keyed = baseline([None, None]), baseline([None, ["bees"]])
    store = BaselineStore(tmp_path)
    store.save("keyless", keyless)
    keyless = store.previous("keyed")[1]  # as a later run reads it back
    text_only = keyless.questions.drop(columns=["answer_key"])
    assert bank_digest(keyless.questions) == bank_digest(text_only) != bank_digest(keyed.questions)
    changes = impact_tables(keyless, keyed)["questions"]
    assert changes[["change", "question_id", "old_answers", "answers"]].values.tolist() == [
        ["re-keyed", "q/2", None, "bees"]
    ]


def test_banks_evaluated_over_other_runs_or_settings_compare_their_questions_alone(tmp_path):
    """The context (runs, pool, scoring settings, models) is kept with a baseline: where two banks'
    evaluations differ in it, their labels' and scores' changes are not the edit's, and are left out."""
    from examflow.evaluation.evaluate import Settings
    from examflow.evaluation.impact import evaluation_context, method_context

    rankings = pd.DataFrame({"run_id": ["a", "a"], "query_id": "q", "passage_id": ["p", "r"], "rank": [1, 2],
                             "score": [2.0, 1.0]})  # fmt: skip
    passages = pd.DataFrame({"query_id": ["q", "q"], "passage_id": ["p", "r"]})
    context = evaluation_context(rankings, passages, Settings(taus=[4]))
    assert context == evaluation_context(rankings[::-1], passages, Settings(taus=[4], bootstrap=5))  # order, no score
    assert context != evaluation_context(rankings.assign(rank=[2, 1]), passages, Settings(taus=[4]))
    assert context != evaluation_context(rankings, passages, Settings(taus=[3]))
    assert context == evaluation_context(rankings, passages, Settings(taus=[4, 4]))  # a set of thresholds
    texts = passages.assign(text=["Bees.", "Wasps."])
    assert evaluation_context(rankings, texts, Settings(taus=[4])) != evaluation_context(
        rankings, texts.assign(text=["Bees.", "Ants."]), Settings(taus=[4])
    )  # a passage's text edited under its id
    assert method_context(context, ["t5"]) != method_context(context, ["t5-xl"])
    # another prompt, decoding or calibration (the workflow's digest of the method's settings)
    assert method_context(context, ["t5"], "beam") != method_context(context, ["t5"], "fast")
    bank = pd.DataFrame({"query_id": "q", "facet_id": None, "question_id": ["q/1"], "question_text": ["Why?"]})
    labels = pd.DataFrame({"qrels_id": ["q"], "passage_id": ["p"], "label": [3]})
    before = Baseline(bank, labels, board({"a": 0.5}), method_context(context, ["t5"]))
    store = BaselineStore(tmp_path)
    store.save("before", before)
    kept = store.previous("after")[1]
    assert kept.context == before.context
    after = Baseline(bank.assign(question_text="Why so?"), labels.assign(label=4), board({"a": 0.75}), kept.context)
    same = impact_tables(kept, after)
    assert len(same["questions"]) == len(same["passages"]) == len(same["systems"]) == 1
    other = impact_tables(kept, Baseline(after.questions, after.labels, after.leaderboard, "another"))
    assert other["questions"]["change"].tolist() == ["reworded"]
    assert other["passages"].empty and other["systems"].empty
    (tmp_path / "before" / "context.txt").unlink()  # a baseline kept by an examflow before contexts were
    assert impact_tables(store.previous("after")[1], after)["systems"].empty


def test_a_passage_without_a_label_in_one_bank_has_none_there_not_0():
    """Every question of q deleted: p has no EXAM-Label any more, which is not a label 0 (judged non-relevant)."""
    old = pd.DataFrame({"qrels_id": ["q", "q"], "passage_id": ["p", "r"], "label": [3, 0]})
    new = pd.DataFrame({"qrels_id": ["q", "s"], "passage_id": ["r", "t"], "label": [0, 2]})
    changed = label_changes(old, new)
    assert changed[["passage_id", "old_label", "new_label"]].astype(object).values.tolist() == [
        ["p", 3, pd.NA], ["t", pd.NA, 2]
    ]  # fmt: skip


def test_each_results_folder_keeps_its_own_baselines(tmp_path, monkeypatch):
    """Folders named alike once the path's separators are replaced, or the same relative path in two
    checkouts sharing a cache, shared their baselines: a new folder listed another's bank edit."""
    from examflow.results import baselines_folder

    assert baselines_folder("cache", "/tmp/col/x_y") != baselines_folder("cache", "/tmp/col_x/y")
    monkeypatch.chdir(tmp_path)
    here = baselines_folder("cache", "results/demo")
    (tmp_path / "other").mkdir()
    monkeypatch.chdir(tmp_path / "other")
    assert baselines_folder("cache", "results/demo") != here
    assert here.parent == Path("cache/baselines")
    assert re.fullmatch(r"[A-Za-z0-9_-]*_results_demo-[0-9a-f]{12}", here.name)  # readable, and the path's digest
