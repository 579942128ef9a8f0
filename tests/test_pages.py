"""The report's pages on hand-made tables: the measures' order, the best official run, rounding, groups of
runs, the worked example's marks."""

from __future__ import annotations

import io

import pandas as pd

from examflow.registry import measure_order
from examflow.report.board import Board
from examflow.report.pages import correlation_page, example_page, impact_page, leaderboard_page
from examflow.summary import OfficialSource, run_summary


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


def test_answers_are_marked_in_one_pass_never_inside_a_mark_or_an_escape():
    """Answers were marked one after another: `mark` matched inside the tags of `Mark Twain`'s mark, `amp`
    inside `&amp;`, and of two overlapping answers as long the first in the set's (per process) order won."""
    text = "Mark Twain wrote R&D notes; the ramp and lamp."
    passages = pd.DataFrame({"query_id": "q", "passage_id": ["p1"], "origin": "judged", "text": [text]})
    answers = ["Mark Twain", "mark", "amp", "ramp and", "and lamp", "R&D"]
    grades = pd.DataFrame({"query_id": "q", "passage_id": "p1", "question_id": [f"q/{i}" for i in range(6)],
                           "rating": 1, "correct": True, "answer": answers, "error": None})  # fmt: skip
    questions = pd.DataFrame({"question_id": [f"q/{i}" for i in range(6)], "question_text": "?"})
    for order in (answers, answers[::-1]):
        html = example_page("q", passages, grades.assign(answer=order), questions, "qa")
        # by hand: the leftmost occurrence first, the longer of two at one place; "ramp and" starts before
        # "and lamp", which it overlaps, and "lamp" keeps only its "amp"
        assert ("<p><mark>Mark Twain</mark> wrote <mark>R&amp;D</mark> notes; the <mark>ramp and</mark> "
                "l<mark>amp</mark>.</p>") in html  # fmt: skip


def test_the_worked_example_of_the_offline_grader_shows_cosines_and_marks_nothing():
    """Its "answer" column held the cosine, and the page said the answer was marked (a stranger's trial)."""
    passages = pd.DataFrame({"query_id": "q", "passage_id": ["p1"], "origin": "judged", "text": ["Bees 0.812 honey."]})
    grades = pd.DataFrame({"query_id": "q", "passage_id": ["p1"], "question_id": "q/1", "rating": [4],
                           "correct": None, "answer": ["0.812"], "error": [None]})  # fmt: skip
    questions = pd.DataFrame({"question_id": ["q/1"], "question_text": ["What do bees make?"]})
    html = example_page("q", passages, grades, questions, "cosine", similarities=True)
    assert "<th>cosine</th>" in html and "<th>answer</th>" not in html and "<mark>" not in html
    assert "the cosine similarity of question and passage that the grade is cut from" in html
    assert "<th>answer</th>" in example_page("q", passages, grades, questions, "m")
    # report.example_query may name a topic without questions: its passages, and why no grade
    other = passages.assign(query_id="q4")
    assert "m graded nothing for topic q4: the exam holds no question for it" in example_page(
        "q4", other, grades, questions, "m"
    )
    assert "graded nothing" not in example_page("q", passages, grades, questions, "m")


def test_the_worked_example_names_each_criterion_and_the_aggregation():
    """criteria_llm: the four criterion grades of a passage and the aggregation's, each row named."""
    passages = pd.DataFrame({"query_id": "q", "passage_id": ["p1"], "origin": "judged", "text": ["Bees."]})
    targets = ["q/exactness", "q/topicality", "q/coverage", "q/contextual-fit", "q/relevance"]
    grades = pd.DataFrame({"query_id": "q", "passage_id": "p1", "question_id": targets, "rating": [3, 2, 1, 0, 2],
                           "correct": None, "answer": ["3", "2", "1", "0", "2"], "error": None})  # fmt: skip
    html = example_page("q", passages, grades, pd.DataFrame({"question_id": [], "question_text": []}), "crit")
    cells = [
        (name, grade) for name, grade in zip(("Exactness", "Topicality", "Coverage", "Contextual Fit"), (3, 2, 1, 0))
    ]
    for name, grade in cells:
        assert f"<td>criterion {name}</td><td class='grade'>{grade}</td>" in html
    assert "<td>relevance: the aggregation of the four criteria (the label)</td><td class='grade'>2</td>" in html


def hand_board(official=None, correlation=None) -> Board:
    """Two official runs, a response that beats them under map, the pool row; exam_cover ties a and r."""
    rows = [("exam_cover", 4.0, "b", "system", 0.123456, 0.01), ("exam_cover", 4.0, "a", "system", 0.654321, 0.02),
            ("exam_cover", 4.0, "r", "system", 0.654321, 0.03), ("exam_cover", 4.0, "_overall_", "pool", 1.0, 0.0),
            ("map", 4.0, "r", "system", 0.9, 0.1), ("map", 4.0, "b", "system", 0.5, 0.1),
            ("map", 4.0, "a", "system", 0.4, 0.1), ("map", 3.0, "a", "system", 0.99, 0.1),
            ("rouge_1_f1", None, "a", "system", 0.3, None)]  # fmt: skip
    board = pd.DataFrame(rows, columns=["measure", "tau", "run_id", "kind", "score", "stderr"]).assign(method="m")
    return Board.of(board, 4.0, "self_rating", ["map"], official, correlation)


def test_measures_come_in_the_methods_order_headline_first():
    present = ["P_20", "map", "n_exam_cover", "rouge_1_f1", "exam_cover", "exam", "zzz"]
    assert measure_order("self_rating", ["map", "P_20"], present) == [
        "exam_cover", "n_exam_cover", "exam", "map", "P_20", "rouge_1_f1", "zzz"
    ]  # fmt: skip
    # Direct grading has no exam to cover: the EXAM-Qrels measures lead, in the configured order.
    assert measure_order("faggioli", ["P_20", "map"], present)[:4] == ["P_20", "map", "exam_cover", "n_exam_cover"]
    assert measure_order(None, [], ["map", "exam_cover"]) == ["exam_cover", "map"]


def test_best_is_the_best_official_run_and_extra_runs_are_marked_apart():
    board = hand_board({"a": 1, "b": 2})
    assert board.measures == ["exam_cover", "map", "rouge_1_f1"]  # the map row at τ 3 is not shown
    assert board.runs() == ["b", "a", "r", "_overall_"]  # the rows' order in the file, special rows last
    assert [board.group(run) for run in board.runs()] == ["official", "official", "extra", "pool"]
    assert board.best("map") == ["b"]  # r scores 0.9, but is not on the official leaderboard
    assert board.best("exam_cover") == ["a"]  # r ties a, and is not official either
    assert board.figure_runs() == ["a", "b", "r", "_overall_"]  # official order first
    assert hand_board().best("map") == ["r"] and hand_board().group("r") == "run"  # no official leaderboard


def test_the_leaderboard_page_rounds_marks_groups_and_the_best_official_run():
    correlation = pd.DataFrame({"method": "m", "measure": ["exam_cover", "exam_cover"], "tau": [4.0, 3.0],
                                "spearman": [0.5, 0.9], "kendall": [0.25, 0.8]})  # fmt: skip
    page = leaderboard_page(hand_board({"a": 1, "b": 2}, correlation))
    [table] = pd.read_html(io.StringIO(page), keep_default_na=False)
    assert table["run"].tolist() == ["b", "a", "r", "_overall_"]
    assert table["group"].tolist() == ["official", "official", "extra", "pool"]
    assert table["official rank"].tolist() == ["2", "1", "", ""]
    assert table["exam_cover ρ 0.500, τ-b 0.250"].tolist() == ["0.123 ± 0.010", "0.654 ± 0.020", "0.654 ± 0.030",
                                                              "1.000 ± 0.000"]  # fmt: skip
    assert table["rouge_1_f1 every τ"].tolist() == ["", "0.300", "", ""]  # no τ, no standard error: the score alone
    assert "<td class='number best' data-value='0.5'>0.500 ± 0.100</td>" in page  # b under map, not r
    assert page.count("number best") == 3  # a (exam_cover, rouge_1_f1), b (map)


def tau_free_board() -> Board:
    """map at τ 3 and 4; ndcg_cut_10 once, with no τ (evaluate computes it once: its gains are the labels)."""
    rows = [("map", 3.0, "a", 0.8, 0.1), ("map", 3.0, "b", 0.6, 0.1), ("map", 4.0, "b", 0.7, 0.1),
            ("map", 4.0, "a", 0.5, 0.1), ("ndcg_cut_10", None, "a", 0.9, 0.05), ("ndcg_cut_10", None, "b", 0.4, 0.05)]  # fmt: skip
    board = pd.DataFrame(rows, columns=["measure", "tau", "run_id", "score", "stderr"]).assign(
        method="m", kind="system"
    )
    correlation = pd.DataFrame({"method": "m", "measure": ["ndcg_cut_10", "map", "map"], "tau": [None, 4.0, 3.0],
                                "spearman": [1.0, -1.0, 1.0], "kendall": [1.0, -1.0, 1.0], "n_runs": 2})  # fmt: skip
    empty = ["spearman_low", "spearman_high", "kendall_low", "kendall_high", "spearman_random_ties",
             "kendall_random_ties", "tau_ap", "note"]  # fmt: skip
    correlation = correlation.assign(**dict.fromkeys(empty, float("nan")))
    return Board.of(board, 4.0, "faggioli", ["map", "ndcg_cut_10"], {"a": 1, "b": 2}, correlation)


def test_measures_that_do_not_depend_on_tau_are_shown_once_and_marked():
    board = tau_free_board()
    assert board.measures == ["map", "ndcg_cut_10"] and board.without_tau() == ["ndcg_cut_10"]
    [table] = pd.read_html(io.StringIO(correlation_page(board)), keep_default_na=False)
    assert table[["measure", "tau"]].values.tolist() == [["map", "3"], ["map", "4"], ["ndcg_cut_10", "every τ"]]
    assert table["spearman"].tolist() == [1.0, -1.0, 1.0]
    page = leaderboard_page(board)
    assert "<code>ndcg_cut_10</code> does not depend on τ" in page  # one measure: `does` (a stranger read `do`)
    [table] = pd.read_html(io.StringIO(page), keep_default_na=False)
    assert list(table.columns)[3:] == ["map ρ -1.000, τ-b -1.000", "ndcg_cut_10 ρ 1.000, τ-b 1.000 every τ"]
    assert table["run"].tolist() == ["b", "a"]  # map at τ 4, the headline of direct grading: b 0.7, a 0.5
    summary = run_summary({}, None, "results", {"m": board}).markdown()
    assert "| map | b | 0.700 | -1.000 | -1.000 |" in summary  # at the summary's τ, 4
    assert "| ndcg_cut_10 | a | 0.900 | 1.000 | 1.000 |" in summary and summary.count("| ndcg_cut_10 |") == 1
    assert "`ndcg_cut_10` does not depend on τ: one value, the same at every τ" in summary


def test_the_summary_says_where_the_official_leaderboard_came_from():
    board = tau_free_board()
    computed = OfficialSource("results/official/leaderboard.tsv", "ndcg_cut_10")
    text = run_summary({}, None, "results", {"m": board}, official=computed).markdown()
    assert ("The official leaderboard was computed from the official qrels (no `inputs.official_leaderboard` "
            "given): each run's mean `ndcg_cut_10` over the queries it ranks, by `examflow official`, in "
            "`results/official/leaderboard.tsv`.") in text  # fmt: skip
    dl = OfficialSource("results/official/leaderboard.tsv", "map", 2, "all")
    text = run_summary({}, None, "results", {"m": board}, official=dl).markdown()
    assert "each run's mean `map` at relevance level 2 over every judged query (one it lacks counts 0)" in text
    given = run_summary({}, None, "results", {"m": board}, official=OfficialSource("mine/official.json")).markdown()
    assert "The official leaderboard is the file given: `mine/official.json`." in given
    assert "official leaderboard" not in run_summary({}, None, "results", {}).markdown()


def test_without_an_official_leaderboard_the_page_promises_no_correlation():
    with_one = leaderboard_page(hand_board({"a": 1, "b": 2}, pd.DataFrame(
        {"method": "m", "measure": ["exam_cover"], "tau": [4.0], "spearman": [0.5], "kendall": [0.25]})))  # fmt: skip
    without = leaderboard_page(hand_board())
    assert "Spearman's ρ and Kendall's τ with the official leaderboard" in with_one
    assert "Spearman" not in without and "Bold: the best run under each measure." in without


def test_when_every_run_ties_none_is_named_best():
    """UMBRELA at τ 4 (its grades stop at 3): every run covers nothing, and none is the best of them."""
    rows = [("exam_cover", 4.0, run, "system", 0.0, 0.0) for run in ("x", "y", "z")]
    rows += [("map", 4.0, "x", "system", 0.2, 0.1), ("map", 4.0, "y", "system", 0.2, 0.1),
             ("map", 4.0, "z", "system", 0.1, 0.1), ("exam_cover", 4.0, "_overall_", "pool", 0.0, 0.0)]  # fmt: skip
    table = pd.DataFrame(rows, columns=["measure", "tau", "run_id", "kind", "score", "stderr"]).assign(method="m")
    board = Board.of(table, 4.0, "self_rating", ["map"])
    assert board.best("exam_cover") == [] and board.all_tied("exam_cover") == ["x", "y", "z"]
    assert board.best("map") == ["x", "y"] and board.all_tied("map") == []  # a tie at the top, not of all
    text = run_summary({}, None, "results", {"m": board}).markdown()
    assert "No best system: all 3 tie at 0.000." in text and "Best system" not in text
    assert "| exam_cover | none: all 3 tie | 0.000 |" in text and "| map | x, y | 0.200 |" in text
    alone = Board.of(table[table["run_id"].isin(["x", "_overall_"])], 4.0, "self_rating", ["map"])
    assert alone.best("exam_cover") == ["x"] and alone.all_tied("exam_cover") == []  # one run: the best of one
    assert leaderboard_page(board).count("number best") == 2  # x and y under map; nobody under exam_cover


def test_the_uncovered_passages_are_told_in_the_methods_own_terms():
    """UMBRELA's page said its uncovered passages were "what the bank does not ask about": it has no bank."""
    from examflow.evaluation.diagnostics import QUESTION_COLUMNS, UNCOVERED_COLUMNS
    from examflow.report.pages import questions_page

    questions = pd.DataFrame(columns=["method", *QUESTION_COLUMNS])
    uncovered = pd.DataFrame(
        [("m", "q", f"p{i}", 2, 1, "text") for i in range(3)], columns=["method", *UNCOVERED_COLUMNS]
    )
    told = {kind: questions_page(questions, uncovered, 4 if kind != "umbrela" else 2, "m", kind)
            for kind in ("self_rating", "nugget_rating", "umbrela")}  # fmt: skip
    assert (
        "3 judged-relevant passages answer no question at τ: what the bank does not ask about." in told["self_rating"]
    )
    assert "bad nuggets" in told["nugget_rating"] and "answer no nugget at τ" in told["nugget_rating"]
    assert "bad queries" in told["umbrela"] and "bank" not in told["umbrela"]
    assert (
        "3 judged-relevant passages not graded τ or above by umbrela: where it and the assessors disagree."
        in told["umbrela"]
    )
    above = questions_page(questions, uncovered, 4, "m", "umbrela")  # the τ the run warned about
    assert "3 judged-relevant passages are below τ: umbrela grades 0–3, so at τ = 4 no passage reaches τ." in above
    # an offline grader's ladder of three rungs grades 0-3, whatever its kind's scale
    ladder = questions_page(questions, uncovered, 4, "m", "self_rating", top=3)
    assert "3 judged-relevant passages are below τ: self_rating grades 0–3, so at τ = 4 no passage reaches τ." in ladder


def test_the_questions_page_counts_what_it_shows_and_says_when_nothing_is_judged():
    """12 questions read "The first 40 of 12"; without qrels every count of judged passages was 0 and the page
    said "0 judged-relevant passages answer no question": the bank covering everything (a stranger's trial)."""
    from examflow.evaluation.diagnostics import QUESTION_COLUMNS, UNCOVERED_COLUMNS
    from examflow.report.pages import questions_page

    questions = pd.DataFrame([["m", "q", f"x{i}"] + [0] * (len(QUESTION_COLUMNS) - 2) for i in range(12)],
                             columns=["method", *QUESTION_COLUMNS])  # fmt: skip
    uncovered = pd.DataFrame(columns=["method", *UNCOVERED_COLUMNS])
    judged = questions_page(questions, uncovered, 4, "m", "self_rating")
    assert "All 12; all in" in judged and "The first" not in judged and "No qrels" not in judged
    assert "The first 5 of 12; all in" in questions_page(questions, uncovered, 4, "m", "self_rating", rows=5)
    unjudged = questions_page(questions, uncovered, 4, "m", "self_rating", judged=False)
    assert "No qrels (<code>inputs.qrels</code>): no passage is judged" in unjudged
    assert "judged-relevant passages answer no" not in unjudged and "Uncovered passages" not in unjudged


def test_the_impact_page_shows_labels_as_whole_numbers_and_says_why_none_moved():
    """Read back from impact_passages.tsv, a label column with an empty cell (a passage without a label)
    is floating point: the page showed 3.000."""
    passages = pd.read_csv(io.StringIO("method\tquery_id\tpassage_id\told_label\tnew_label\nm\tq\tp\t3\t\n"), sep="\t")
    questions = pd.DataFrame({"method": ["m"], "change": ["removed"], "question_text": ["Why?"]})
    systems = pd.DataFrame(columns=["method", "measure", "run_id"])
    page = impact_page(questions, passages, systems, "m")
    assert "<td>3</td>" in page and "3.000" not in page
    assert "No passage's label and no system's score moved" not in page  # a passage did
    moved = pd.read_csv(
        io.StringIO("method\tmeasure\ttau\trun_id\nm\texam_cover\t4\tr\nm\tndcg_cut_10\t\tr\n"), sep="\t"
    )
    cells = impact_page(questions, passages, moved, "m")  # τ read back as floats: it showed 4.0000 and a blank
    assert "<td>4</td>" in cells and "4.0000" not in cells and "<td>every τ</td>" in cells
    quiet = impact_page(questions, passages.head(0), systems, "m")
    assert "the earlier bank was evaluated over other runs, passages, settings or grading" in quiet


def test_the_scatter_of_one_measure_holds_its_title_and_ticks_whole_ranks(monkeypatch):
    """One measure's panel alone cut the figure's title at both ends, and its axis read 1.25, 1.50, ... ranks."""
    from examflow.report import figures

    drawn = []
    monkeypatch.setattr(figures, "_png", lambda fig: drawn.append(fig) or b"")
    board = pd.DataFrame({"method": "m", "measure": "exam_cover", "tau": 4.0, "run_id": list("abc"),
                          "kind": "system", "score": [0.5, 0.4, 0.3], "stderr": 0.0})  # fmt: skip
    correlation = pd.DataFrame([{"method": "m", "measure": "exam_cover", "tau": 4.0, "spearman": 1.0, "kendall": 1.0,
                                 "n_runs": 3}])  # fmt: skip
    figures.scatter_figure(Board.of(board, 4, None, [], {"a": 1.0, "b": 2.0, "c": 3.0}, correlation))
    [fig] = drawn
    fig.canvas.draw()
    title = fig._suptitle.get_window_extent()
    assert 0 <= title.x0 and title.x1 <= fig.bbox.width
    ticks = fig.axes[0].get_xticks()
    assert len(ticks) and all(float(t).is_integer() for t in ticks)
