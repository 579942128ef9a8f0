"""ROUGE-1 F1 against gold articles (docs/methods.md §4), hand-computed."""

from __future__ import annotations

import pandas as pd
import pytest

from examflow.evaluation.rouge import rouge_1_f1, rouge_per_query, unigrams


def test_words_are_lowercased_lemmatised_and_stripped_of_stopwords_and_punctuation():
    assert unigrams("The Volcanoes erupted, and the bees were flying!") == {
        "volcano": 1,
        "erupt": 1,
        "bee": 1,
        "fly": 1,
    }
    assert unigrams("It's the end.") == {"end": 1}  # "it's" is an NLTK stopword, as written


def test_f1_counts_clipped_overlaps():
    candidate, reference = unigrams("lava lava lava rock"), unigrams("lava rock ash cloud")
    # overlap = min(3, 1) + 1 = 2; precision 2/4, recall 2/4
    assert rouge_1_f1(candidate, reference) == pytest.approx(0.5)
    assert rouge_1_f1(unigrams("snow"), reference) == 0.0
    assert rouge_1_f1(unigrams("the of"), reference) == 0.0  # nothing left after stopwords


def test_a_run_is_judged_by_its_passages_within_the_budget():
    rankings = pd.DataFrame(
        [("r", "q", "p1", 1), ("r", "q", "p2", 2), ("r", "q", "p3", 3), ("_gold_", "q", "g", 1), ("r", "x", "p1", 1)],
        columns=["run_id", "query_id", "passage_id", "rank"],
    )
    texts = pd.DataFrame(
        [("q", "p1", "Lava flows."), ("q", "p2", "Ash clouds."), ("q", "p3", "Lava rock."), ("x", "p1", "Lava")],
        columns=["query_id", "passage_id", "text"],
    )
    table = rouge_per_query(rankings, texts, {"q": "Lava and ash."}, k=2)
    # r's top 2: {lava, flow, ash, cloud} against {lava, ash}: P = 2/4, R = 1 -> F1 = 2/3; no gold for x
    assert table[["run_id", "query_id", "measure"]].values.tolist() == [["r", "q", "rouge_1_f1"]]
    assert table["value"].iat[0] == pytest.approx(2 / 3)
