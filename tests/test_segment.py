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


def test_a_sentence_may_begin_with_a_capital_letter_of_any_script():
    """Sentences beginning with Ü were never ends: a long German paragraph was cut in mid-sentence (an audit)."""
    sentence = "Über die Stadt Nummer {} gibt es sehr viele schöne alte Häuser."  # 12 words
    passages = segment([" ".join(sentence.format(i) for i in range(60))], 400)
    assert [len(p.split()) for p in passages] == [33 * 12, 27 * 12]
    assert all(p.endswith("Häuser.") for p in passages)
    assert split_sentences("Это первое. Ещё одно. ещё нет.") == ["Это первое.", "Ещё одно. ещё нет."]


def test_chinese_and_japanese_count_a_token_a_character_and_end_sentences_at_their_own_marks():
    """Text without spaces was one 'word': 3,900 characters in one passage (an audit)."""
    sentence = "蜜蜂酿造蜂蜜并且采集花蜜。"  # 13 characters, the mark included
    assert segment([sentence * 300], 400) == [sentence * 30] * 10  # 30 × 13 = 390 ≤ 400 < 31 × 13
    assert segment(["蜂" * 25], 10) == ["蜂" * 10, "蜂" * 10, "蜂" * 5]
    assert split_sentences("東京は大きい。大阪も大きい！ Is it? Yes.") == [
        "東京は大きい。",
        "大阪も大きい！",
        "Is it?",
        "Yes.",
    ]
    # a sentence that begins inside a run of letters (。” then Apple) is cut where split_sentences cuts it
    quoted = "第一句话很长。”Apple公司发布。第三句话也长。"
    assert segment([quoted], 9) == split_sentences(quoted) == ["第一句话很长。”", "Apple公司发布。", "第三句话也长。"]
    mixed = "Bees 蜜蜂 make honey."  # 3 words and 2 characters: 5 tokens, cut without adding or losing a space
    assert segment([mixed], 4) == ["Bees 蜜蜂 make", "honey."] and segment([mixed], 5) == [mixed]


def test_a_cut_sentence_s_tail_joins_the_next_sentence_without_a_paragraph_break():
    """The tail of a sentence cut into windows stood alone, so the passage packing put a paragraph break
    (a blank line) between it and the next sentence that the response never had (a stranger's trial)."""
    assert segment(["Aa bb cc dd. Ee ff."], 3) == ["Aa bb cc", "dd. Ee ff."]
    assert segment(["東京は日本の首都です。大阪は大きいです！"], 10) == ["東京は日本の首都です", "。大阪は大きいです！"]


def test_sentences_of_scripts_without_case_end_and_letters_with_points_between_are_one_word():
    assert segment(["Aa bb z.B. Cc dd ee ff."], 5) == ["Aa bb z.B. Cc dd", "ee ff."]  # no sentence ends at z.B.
    assert split_sentences("Made in the U.S.A. For you.") == ["Made in the U.S.A. For you."]
    assert segment(["مرحبا بكم. هذا جيد. شكرا لكم."], 5) == ["مرحبا بكم. هذا جيد.", "شكرا لكم."]
    assert segment(["한국어는 좋다. 정말 좋다. 아주 좋다."], 3) == ["한국어는 좋다.", "정말 좋다.", "아주 좋다."]
    assert split_sentences("今日は晴れ．明日は雨．") == ["今日は晴れ．", "明日は雨．"]
    assert split_sentences("यह अच्छा है। वह भी।") == ["यह अच्छा है।", "वह भी।"]


def test_a_repeated_passage_is_ranked_once_and_those_after_it_keep_their_ranks(caplog):
    """A response repeating a paragraph moved its third passage up to rank 2, into a top k of 2."""
    table = segment_responses([Response("r", "q", ("Bees dance.", "Bees dance.", "The round dance."))], 3)
    assert table[["rank", "score", "text"]].values.tolist() == [[1, 1.0, "Bees dance."],
                                                               [3, 1 / 3, "The round dance."]]  # fmt: skip
    assert "1 passage repeats an earlier passage of its response: a passage is ranked once" in caplog.text


def test_blank_lines_separate_paragraphs_however_the_lines_end(tmp_path):
    """`\\r\\n\\r\\n`, a line of spaces or the Unicode paragraph separator was no break: the answer was packed as one
    paragraph and cut inside a sentence, and its EXAM-Cover changed with its line endings (a stranger's trial)."""
    import json

    from examflow.errors import Problems
    from examflow.io.responses import read_responses

    first = "The waggle dance tells nestmates where flowers are and how far away they are from the hive"
    second = "Karl von Frisch decoded it in the 1940s and won the Nobel Prize for this work"
    breaks = {"unix": "\n\n", "windows": "\r\n\r\n", "mac": "\r\r", "spaces": "\n  \n", "unicode": "\u2029"}
    path = tmp_path / "r.jsonl"
    path.write_text("".join(json.dumps({"run_id": n, "query_id": "q", "text": first + b + second}) + "\n"
                            for n, b in breaks.items()))  # fmt: skip
    cut = {r.run_id: segment(r.paragraphs, 20) for r in read_responses(path, {"q"}, Problems("error"))}
    assert cut == {name: [first, second] for name in breaks}  # 17 and 16 tokens: each paragraph whole
