"""Pooling (docs/methods.md §1) on hand-made runs."""

from __future__ import annotations

import gzip

import pandas as pd
import pytest
from conftest import write

from examflow.cli import main
from examflow.errors import InputError, Problems
from examflow.pool import Sources, build_pool, normalise_ranks, pooled_ids

COLUMNS = ["run_id", "query_id", "passage_id", "rank", "score"]


def rankings(rows) -> pd.DataFrame:
    return pd.DataFrame(rows, columns=COLUMNS)


def test_consistent_ranks_are_kept_as_written_zero_based_too():
    table, reranked = normalise_ranks(
        rankings([("r", "q", "b", 1, 5.0), ("r", "q", "a", 0, 9.0), ("r", "q", "c", 2, 5.0)])
    )
    assert reranked.empty
    assert table[["passage_id", "rank"]].values.tolist() == [["a", 0], ["b", 1], ["c", 2]]


def test_ranks_against_scores_are_replaced_by_score_order_with_trec_eval_ties():
    rows = [
        ("r", "q", "a", 1, 1.0),
        ("r", "q", "b", 2, 3.0),
        ("r", "q", "c", 3, 3.0),
        ("s", "q", "y", 1, 1.0),
        ("s", "q", "x", 1, 2.0),
    ]
    table, reranked = normalise_ranks(rankings(rows))
    # each list's first row that shows why: b's score rises over a's, x repeats y's rank (not the list's first row)
    assert reranked.values.tolist() == [["r", "q", "b"], ["s", "q", "x"]]
    # Ties by descending passage id, as trec_eval orders them.
    assert table[["run_id", "passage_id", "rank"]].values.tolist() == [
        ["r", "c", 1],
        ["r", "b", 2],
        ["r", "a", 3],
        ["s", "x", 1],
        ["s", "y", 2],
    ]


def test_pool_is_judged_union_top_k_with_origins():
    runs = rankings([("r", "q", f"d{i}", i, -i) for i in range(0, 4)] + [("g", "q", "gen-1", 1, 1.0)])
    judged = pd.DataFrame({"query_id": ["q", "q"], "passage_id": ["d3", "j1"]})
    pool = pooled_ids(runs, judged, {"g"}, depth=2)
    # A 0-based run contributes ranks 0, 1 and 2: depth + 1 passages, as the reference does.
    assert pool.values.tolist() == [
        ["q", "d0", "retrieved"],
        ["q", "d1", "retrieved"],
        ["q", "d2", "retrieved"],
        ["q", "d3", "judged"],
        ["q", "gen-1", "generated"],
        ["q", "j1", "judged"],
    ]
    both = pooled_ids(runs, judged.assign(passage_id=["d0", "j1"]), {"g"}, depth=2)
    assert both.set_index("passage_id").at["d0", "origin"] == "judged,retrieved"


def test_build_pool_reads_only_pooled_passages(tmp_path):
    corpus = write(tmp_path / "c.tsv", "d1\tone\nd2\ttwo\nd3\tthree\nj\tjudged\n")
    queries = pd.DataFrame({"query_id": ["q"], "facet_id": [None], "query_text": ["Q"], "facet_text": [None]})
    runs = rankings([("r", "q", "d1", 1, 3.0), ("r", "q", "d2", 2, 2.0), ("r", "q", "d3", 3, 1.0)])
    judgments = pd.DataFrame({"query_id": ["q"], "facet_id": [None], "passage_id": ["j"], "relevance": [2]})
    tables = build_pool(queries, runs, None, judgments, corpus, 2, Problems("error"))
    assert tables["passages"][["passage_id", "text", "origin"]].values.tolist() == [
        ["d1", "one", "retrieved"],
        ["d2", "two", "retrieved"],
        ["j", "judged", "judged"],
    ]
    assert tables["summary"].to_dict("records") == [
        {"query_id": "q", "judged": 1, "retrieved": 2, "generated": 0, "gold": 0, "pool": 3, "runs": 1}
    ]
    assert len(tables["rankings"]) == 3  # whole runs are kept for trec_eval measures


def test_a_passage_missing_from_the_collection_is_named_with_the_run_that_pooled_it(tmp_path):
    """The collection has no line for a passage it lacks: the message names what put the passage in the pool,
    the first run by name that ranks it within the depth (its query and rank), else the qrels."""
    corpus = write(tmp_path / "c.tsv", "d1\tone\n")
    queries = pd.DataFrame({"query_id": ["q", "p"], "facet_id": [None] * 2, "query_text": ["Q", "P"],
                            "facet_text": [None] * 2})  # fmt: skip
    runs = rankings([("zeta", "q", "d9", 1, 3.0), ("alpha", "q", "d1", 1, 3.0), ("alpha", "p", "d9", 2, 2.0),
                     ("alpha", "q", "d9", 2, 2.0), ("alpha", "q", "d8", 3, 1.0)])  # fmt: skip
    judgments = pd.DataFrame({"query_id": ["q"], "facet_id": [None], "passage_id": ["j"], "relevance": [2]})
    with pytest.raises(InputError) as refused:
        build_pool(queries, runs, None, judgments, corpus, 2, Problems("error"))
    # d8 (rank 3) is beyond the depth, so not pooled; j is first by id but judged, not ranked
    assert (
        str(refused.value) == f"{corpus}: pooled passage 'd9' is not in the collection (run 'alpha' ranks it "
        "for query 'p' at rank 2)"
    )
    lenient = Problems("warn")
    tables = build_pool(queries, runs, None, judgments, corpus, 2, lenient)
    assert lenient.counts == {"pooled passages missing from the collection": 2}
    assert str(lenient.examples["pooled passages missing from the collection"]).endswith(
        "(run 'alpha' ranks it for query 'p' at rank 2)"
    )
    assert tables["passages"]["passage_id"].tolist() == ["d1"]
    # what was left out, for the summary: d8 (rank 3) is beyond the depth, so neither pooled nor dropped
    assert tables["dropped"].values.tolist() == [["p", "d9", "retrieved"], ["q", "d9", "retrieved"],
                                                 ["q", "j", "judged"]]  # fmt: skip
    judged_only = build_pool(queries, runs[runs["passage_id"] != "d9"], None, judgments, corpus, 2, Problems("warn"))
    assert judged_only["passages"]["passage_id"].tolist() == ["d1"]
    with pytest.raises(
        InputError, match=r"pooled passage 'j' is not in the collection \(the qrels judge it for query 'q'\)$"
    ):
        build_pool(queries, runs[runs["passage_id"] != "d9"], None, judgments, corpus, 2, Problems("error"))


def test_run_ids_must_not_clash_with_response_systems():
    runs = rankings([("sys", "q", "d1", 1, 1.0)])
    segments = rankings([("sys", "q", "gen-x", 1, 1.0)]).assign(text="generated")
    queries = pd.DataFrame({"query_id": ["q"], "facet_id": [None], "query_text": ["Q"], "facet_text": [None]})
    with pytest.raises(InputError, match="run ids used both by run files and responses: \\['sys'\\]"):
        build_pool(
            queries,
            runs,
            segments,
            pd.DataFrame(columns=["query_id", "facet_id", "passage_id", "relevance"]),
            None,
            20,
            Problems("error"),
        )


def test_negative_ranks_are_re_ranked_by_score_in_the_pool_and_the_cover_budget(tmp_path, caplog):
    from examflow.evaluation.cover import best_levels, cover_counts
    from examflow.io.runs import read_runs

    docs = [f"d{i:02d}" for i in range(30)]
    corpus = write(tmp_path / "corpus.tsv", "".join(f"{d}\ttext of {d}\n" for d in docs))
    # Ranks -30..-1 agree with the scores; rank <= 5 as written would take all 30 passages.
    negative = write(tmp_path / "neg.run", "".join(f"q Q0 {d} {i - 30} {30 - i} neg\n" for i, d in enumerate(docs)))
    zero_based = write(tmp_path / "zero.run", "".join(f"q Q0 {d} {i} {30 - i} zero\n" for i, d in enumerate(docs)))
    queries = pd.DataFrame({"query_id": ["q"], "facet_id": [None], "query_text": ["Q"], "facet_text": [None]})
    runs = read_runs([negative, zero_based], {"q"}, Problems("error"))
    judgments = pd.DataFrame(columns=["query_id", "facet_id", "passage_id", "relevance"])
    sources = Sources({"neg": negative, "zero": zero_based})
    tables = build_pool(queries, runs, None, judgments, corpus, 5, Problems("error"), sources)
    assert f"{negative}: 30 negative ranks (first on line 1, field 'rank')" in caplog.text
    # the list named at its file's first line that shows why, found among many runs (a stranger's "1 ranked lists")
    assert ("1 ranked list had repeated or negative ranks, or ranks against their scores: re-ranked by score "
            f"(first: run 'neg', query 'q', {negative}:1)") in caplog.text  # fmt: skip
    # Re-ranked by score from 1: the best five; the 0-based run keeps ranks 0..5, six passages, as before.
    assert tables["passages"]["passage_id"].tolist() == docs[:6]
    ranks = tables["rankings"].set_index(["run_id", "passage_id"])["rank"]
    assert [ranks["neg", d] for d in docs[:3]] == [1, 2, 3] and [ranks["zero", d] for d in docs[:3]] == [0, 1, 2]
    # EXAM-Cover at k = 5: passage d_i answers question x_i alone.
    grades = pd.DataFrame({"query_id": "q", "passage_id": docs, "question_id": [f"x{i}" for i in range(30)],
                           "rating": 5, "correct": None, "error": None}).astype({"rating": "Int64", "correct": "boolean"})  # fmt: skip
    questions = grades[["query_id", "question_id"]]
    cover = cover_counts(best_levels(grades), tables["rankings"], questions, [4], 5).set_index("run_id")["covered"]
    assert (cover["neg"], cover["zero"]) == (5, 6)


def test_a_passage_of_millions_of_characters_is_said_with_its_length(tmp_path, caplog):
    """A 50 MB passage took 7 GB to grade, with no word of it (a stranger's trial): graded, and said."""
    import logging

    words = "bees make honey " * 62_500  # 1,000,000 characters: the bound, not past it
    corpus = write(tmp_path / "c.tsv", f"d1\t{words}\nd2\t{words}x\nd3\t{words}xy\n")
    queries = pd.DataFrame({"query_id": ["q", "p"], "facet_id": [None] * 2, "query_text": ["Q", "P"],
                            "facet_text": [None] * 2})  # fmt: skip
    runs = rankings([("r", "q", d, i, -i) for i, d in enumerate(("d1", "d2", "d3"), 1)] + [("r", "p", "d3", 1, 0)])
    judgments = pd.DataFrame(columns=["query_id", "facet_id", "passage_id", "relevance"])
    with caplog.at_level(logging.WARNING):
        tables = build_pool(queries, runs, None, judgments, corpus, 3, Problems("error"))
    assert tables["passages"]["text"].str.len().tolist() == [1_000_002, 1_000_000, 1_000_001, 1_000_002]
    assert caplog.messages == [  # d3, pooled for two queries, is one passage
        "2 pooled passage(s) longer than 1,000,000 characters (the longest: 'd3' of query 'p', 1,000,002): a local "
        "grader reads its first max_input_tokens but tokenises the whole text (gigabytes of memory), an API grader "
        "sends it whole; graded as usual"
    ]


def test_a_passage_the_collection_lacks_is_named_at_the_line_that_pooled_it(tmp_path, capsys, caplog):
    """`examflow pool` names the run file's line that ranks a passage the collection lacks (a stranger found
    only the collection named, which has no line for it, among 30 runs), else the qrels' line that judges it
    (a subtopic's `query/facet` is its query's); `warn` counts it at that line."""
    queries = write(tmp_path / "queries.jsonl", '{"query_id": "q1", "text": "first", "subtopics": [{"facet_id": "a", '
                    '"text": "A"}, {"facet_id": "b", "text": "B"}]}\n{"query_id": "q2", "text": "second"}\n')  # fmt: skip
    corpus = write(tmp_path / "my corpus.tsv", "d1\tone\nd2\ttwo\n")
    zeta = tmp_path / "zeta.run.gz"
    with gzip.open(zeta, "wt") as handle:
        handle.write("q1 Q0 d1 1 3.0 zeta\nq2 Q0 d2 1 2.0 zeta\nq2 Q0 d99 2 1.0 zeta\n")
    alpha = write(tmp_path / "alpha.run", "q1 Q0 d1 1 3.0 alpha\nq2 Q0 d1 1 2.0 alpha\nq2 Q0 d99 2 1.0 alpha\n")
    qrels = write(tmp_path / "qrels.txt", "q1 0 d1 1\nq1/a 0 d2 2\nq1/b 0 j7 1\n")
    arguments = ["pool", "--queries", str(queries), "--runs", str(zeta), str(alpha), "--corpus", str(corpus),
                 "--qrels", str(qrels), "--depth", "2", "--out", str(tmp_path / "pool")]  # fmt: skip
    assert main(arguments) == 2
    assert capsys.readouterr().err.endswith(f"examflow: error: {alpha}:3: field 'doc_id': pooled passage 'd99' is "
                                            f"not in the collection {corpus} (run 'alpha' ranks it for query 'q2' "
                                            "at rank 2)\n")  # fmt: skip
    assert not (tmp_path / "pool").exists()
    write(alpha, "q1 Q0 d1 1 3.0 alpha\n")
    with gzip.open(zeta, "wt") as handle:
        handle.write("q1 Q0 d1 1 3.0 zeta\n")
    assert main(arguments) == 2
    assert capsys.readouterr().err.endswith(f"examflow: error: {qrels}:3: field 'doc_id': pooled passage 'j7' is "
                                            f"not in the collection {corpus} (the qrels judge it for query "
                                            "'q1')\n")  # fmt: skip
    assert main([*arguments, "--on-missing-passage", "warn"]) == 0
    assert f"1 × pooled passages missing from the collection, dropped (first: {qrels}:3: field 'doc_id'" in caplog.text
