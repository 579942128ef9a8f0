"""The report's pages on hand-made tables: rounding, special rows, the worked example's marks."""

from __future__ import annotations

import pandas as pd

from examflow.report.pages import example_page, leaderboard_page


def test_the_worked_example_marks_extracted_answers_in_the_passage():
    passages = pd.DataFrame({"query_id": "q", "passage_id": ["p1", "p2"], "origin": "judged",
                             "text": ["Bees make honey from nectar.", "Tides follow the <moon>."]})  # fmt: skip
    grades = pd.DataFrame({"query_id": "q", "passage_id": ["p1", "p2"], "question_id": "q/1", "rating": [1, 0],
                           "correct": [True, False], "answer": ["from nectar", "the sun"], "error": [None, None]})  # fmt: skip
    questions = pd.DataFrame({"question_id": ["q/1"], "question_text": ["What is honey made from?"]})
    html = example_page("q", passages, grades, questions, "qa")
    assert "Bees make honey <mark>from nectar</mark>." in html
    assert "Tides follow the &lt;moon&gt;." in html  # passage text is escaped, and a wrong answer not found
    assert html.index("p1") < html.index("p2")  # best grade first
    assert "<td class='grade'>correct</td>" in html and "What is honey made from?" in html


def test_the_leaderboard_page_rounds_and_puts_special_rows_apart():
    board = pd.DataFrame({
        "measure": "exam_cover", "tau": 4.0, "run_id": ["b", "a", "_overall_"], "kind": ["system", "system", "pool"],
        "score": [0.123456, 0.654321, 1.0], "stderr": [0.01, 0.02, 0.0],
    })  # fmt: skip
    html = leaderboard_page(board, {"a": 1, "b": 2}, 4.0, "m")
    assert "0.654 ± 0.020" in html and html.index(">a<") < html.index(">b<")  # official order
    assert "Special rows" in html and html.index("Special rows") < html.index("_overall_")
