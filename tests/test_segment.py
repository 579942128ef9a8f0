"""Segmentation of generated responses (docs/methods.md §1)."""

from __future__ import annotations

from examflow.io.responses import Response
from examflow.segment import passage_id, segment, segment_responses, split_sentences


def words(n: int, word: str = "word") -> str:
    return " ".join([word] * n)


def test_sentence_splitting_respects_abbreviations_and_initials():
    text = 'Dr. Smith met J. K. Rowling in the U.S. on Monday. They talked, e.g. about books! "Why?" she asked. 3 cats followed.'
    assert split_sentences(text) == [
        "Dr. Smith met J. K. Rowling in the U.S. on Monday.",
        "They talked, e.g. about books!",
        '"Why?" she asked.',
        "3 cats followed.",
    ]


def test_short_paragraphs_are_packed_together_up_to_the_limit():
    paragraphs = [words(30, "a"), words(30, "b"), words(30, "c")]
    assert segment(paragraphs, 60) == [f"{paragraphs[0]}\n\n{paragraphs[1]}", paragraphs[2]]
    assert segment(paragraphs, 400) == ["\n\n".join(paragraphs)]


def test_long_paragraph_is_cut_between_sentences_never_inside():
    sentences = [f"Sentence {i} has {words(8)} in it." for i in range(10)]  # 13 words each
    passages = segment([" ".join(sentences)], 40)
    assert [len(p.split()) for p in passages] == [39, 39, 39, 13]
    assert all(p.endswith("in it.") for p in passages)
    assert " ".join(passages) == " ".join(sentences)


def test_single_sentence_longer_than_the_limit_is_cut_into_windows():
    passages = segment([words(25) + "."], 10)
    assert [len(p.split()) for p in passages] == [10, 10, 5]


def test_no_passage_exceeds_the_limit():
    paragraphs = [f"Short one. {words(50)}. Another {words(5)}.", words(3), f"{words(12)}. " * 9]
    for limit in (5, 17, 60, 400):
        assert all(len(p.split()) <= limit for p in segment(paragraphs, limit))


def test_passage_ids_are_stable_and_shared():
    assert passage_id("Bees  make\nhoney.") == passage_id("Bees make honey.")
    assert passage_id("Bees make honey.") != passage_id("bees make honey.")
    responses = [
        Response("sys-a", "q1", ("Shared paragraph.", "Only in A.")),
        Response("sys-b", "q1", ("Shared paragraph.",)),
        Response("sys-c", "q1", ("Again and again.", "Again and again.")),
    ]
    table = segment_responses(responses, 3)
    assert table[["run_id", "rank", "score"]].values.tolist() == [
        ["sys-a", 1, 1.0],
        ["sys-a", 2, 0.5],
        ["sys-b", 1, 1.0],
        ["sys-c", 1, 1.0],
    ]
    assert table["passage_id"].iat[0] == table["passage_id"].iat[2] == passage_id("Shared paragraph.")
    assert table.equals(segment_responses(responses, 3))
