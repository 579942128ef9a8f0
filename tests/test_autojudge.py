"""TREC AutoJudge leaderboards: `compare-judges` writes its label sets' leaderboards as AutoJudge reads
them (per topic, and an `all` line per run and measure), and compares another judge's AutoJudge file as
a label set of its own. Values checked against pytrec_eval and scipy."""

from __future__ import annotations

import hashlib
import json
import re
import subprocess
import sys

import pandas as pd
import pytest
import pytrec_eval
from scipy import stats
from test_compare_judges import by_hand_ndcg10, campaign, qrels_dict

from examflow.cli import main
from examflow.errors import InputError
from examflow.io.autojudge import format_leaderboard, read_autojudge
from examflow.questions.bank import read_bank
from examflow.questions.items import item_id


def judge_campaign(root, *extra: str, bootstrap: int = 100):
    """compare-judges on test_compare_judges' campaign (its noisy label set) in `root`; its output folder."""
    root.mkdir(exist_ok=True)
    files = campaign(root)
    assert main(["compare-judges", "--runs", str(root / "runs [[]all]" / "*"), "--official-qrels",
                 str(files["official"]), "--labels", f"noisy={files['noisy']}", "--bootstrap", str(bootstrap),
                 "--out", str(root / "out"), *extra]) == 0  # fmt: skip
    return root / "out"


def compare(tmp_path, *extra: str) -> pd.DataFrame:
    out = judge_campaign(tmp_path, *extra)
    return pd.read_csv(out / "agreement.tsv", sep="\t").set_index(["label_set", "measure", "statistic"])


def per_query_ndcg(qrels_path, run_path) -> dict[str, float]:
    run: dict[str, dict[str, float]] = {}
    for line in run_path.read_text().splitlines():
        q, _, d, _, score, _ = line.split()
        run.setdefault(q, {})[d] = float(score)
    values = pytrec_eval.RelevanceEvaluator(qrels_dict(qrels_path), {"ndcg_cut_10"}).evaluate(run)
    return {q: v["ndcg_cut_10"] for q, v in values.items()}


def test_the_label_sets_leaderboards_as_autojudge_lines(tmp_path):
    """`run measure topic value` per judged topic a run ranks, then `run measure all mean`: the mean the
    leaderboard shows."""
    compare(tmp_path)
    lines = [line.split("\t") for line in (tmp_path / "out" / "autojudge.eval.txt").read_text().splitlines()]
    assert all(len(line) == 4 for line in lines)
    values = {(run, measure, topic): float(value) for run, measure, topic, value in lines}
    assert len(values) == len(lines)
    expected = per_query_ndcg(tmp_path / "noisy labels.qrels", tmp_path / "runs [all]" / "r3.txt")
    mine = {topic: v for (run, measure, topic), v in values.items() if run == "r3" and measure == "noisy:ndcg_cut_10"}
    assert mine.pop("all") == pytest.approx(sum(expected.values()) / len(expected), abs=1e-12)
    assert mine == pytest.approx(expected, abs=1e-12)
    # r0 does not rank q5: no line, and its mean is over the five topics it ranks, as the leaderboard's
    official = by_hand_ndcg10(tmp_path / "official.qrels", tmp_path / "runs [all]")
    assert ("r0", "official:ndcg_cut_10", "q5") not in values
    assert values[("r0", "official:ndcg_cut_10", "all")] == pytest.approx(official["r0"], abs=1e-12)
    assert {measure for _, measure, _ in values} == {"official:ndcg_cut_10", "noisy:ndcg_cut_10"}


def test_another_judges_leaderboard_is_compared_as_it_is(tmp_path):
    """An AutoJudge file read back (its per-topic values) agrees with the official leaderboard exactly as
    the label set it came from, intervals included (the same topics, resampled alike); a file of `all`
    lines only (ir_measures' column order) is compared on its scores."""
    first = compare(tmp_path)
    written = tmp_path / "team.eval.txt"
    written.write_text((tmp_path / "out" / "autojudge.eval.txt").read_text())
    scores = {f"r{k}": (k * 7) % 10 / 10 for k in range(10)}  # a judge that ranks the runs its own way
    (tmp_path / "other.txt").write_text("".join(f"r{k} all SCORE {scores[f'r{k}']}\n" for k in range(10)))
    again = compare(tmp_path / "again", "--leaderboard", f"team={written}")
    for statistic in ("kendall", "spearman", "pearson", "tau_ap", "rbo"):
        mine = again.loc[("team", "noisy:ndcg_cut_10", statistic)]
        theirs = first.loc[("noisy", "ndcg_cut_10", statistic)]
        assert mine[["value", "low", "high", "runs"]].tolist() == pytest.approx(
            theirs[["value", "low", "high", "runs"]].tolist(), abs=1e-12
        ), statistic
    other = compare(tmp_path / "other", "--leaderboard", f"other={tmp_path / 'other.txt'}",
                    "--leaderboard-layout", "ir_measures")  # fmt: skip
    official = by_hand_ndcg10(tmp_path / "other" / "official.qrels", tmp_path / "other" / "runs [all]")
    runs = sorted(official)
    tau = stats.kendalltau([scores[r] for r in runs], [official[r] for r in runs]).statistic
    assert other.loc[("other", "SCORE", "kendall"), "value"] == pytest.approx(tau, abs=1e-12)
    boards = pd.read_csv(tmp_path / "other" / "out" / "leaderboards.tsv", sep="\t")
    shown = boards[boards["label_set"] == "other"]
    assert dict(zip(shown["run_id"], shown["score"])) == pytest.approx(scores)


def test_query_mode_all_counts_a_topic_a_run_lacks_as_0_in_a_leaderboard_file_too(tmp_path):
    """examflow's own AutoJudge file (trec_eval's mean: r0 has no line for q5) read back under --query-mode
    all: r0's q5 counts 0 there as in the official leaderboard, so the file agrees with it exactly."""
    judge_campaign(tmp_path / "first", bootstrap=0)
    written = tmp_path / "team.eval.txt"
    written.write_text((tmp_path / "first" / "out" / "autojudge.eval.txt").read_text())
    out = judge_campaign(tmp_path / "all", "--query-mode", "all", "--leaderboard", f"team={written}", bootstrap=0)
    boards = pd.read_csv(out / "leaderboards.tsv", sep="\t")
    team = boards[(boards["label_set"] == "team") & (boards["measure"] == "official:ndcg_cut_10")]
    official = by_hand_ndcg10(tmp_path / "all" / "official.qrels", tmp_path / "all" / "runs [all]", complete=True)
    assert dict(zip(team["run_id"], team["score"])) == pytest.approx(official, abs=1e-12)
    agreement = pd.read_csv(out / "agreement.tsv", sep="\t").set_index(["label_set", "measure", "statistic"])
    assert agreement.loc[("team", "official:ndcg_cut_10", "kendall"), "value"] == pytest.approx(1.0)


FIRST_LINES = {
    "tot": "a\tM\t1\t0.5",
    "ir_measures": "a\t1\tM\t0.5",
    "jsonl": '{"run_id": "a", "topic_id": "1", "measure": "M", "value": 0.5}',
}


def test_every_layout_round_trips(tmp_path):
    values = pd.DataFrame(
        [("a", "M", "1", 0.5), ("a", "M", "2", 0.25), ("b", "M", "1", float("nan")), ("b", "M", "2", 1.0)],
        columns=["run_id", "measure", "topic_id", "value"],
    )
    for layout, first in FIRST_LINES.items():
        text = format_leaderboard(values, layout)
        assert text.splitlines()[0] == first
        path = tmp_path / f"{layout}.txt"
        path.write_text(text)
        read = read_autojudge(path, layout)["M"]
        assert read.per_topic == {"a": {"1": 0.5, "2": 0.25}, "b": {"2": 1.0}}
        assert read.overall == {"a": 0.375, "b": 1.0}


@pytest.mark.parametrize(
    ("text", "message"),
    [
        ("r1 M q0 0.5\nr1 M q1\n", ":2: expected 4 columns (run_id measure topic_id value), found 3"),
        ("r1 M q0 0.5\nr2 M q0 high\n", ":2: field 'value': value 'high' is not a number"),
        ("r1 M q0 0.5\nr2 M q0 nan\n", ":2: field 'value': value 'nan' is not a finite number"),
        ("r1 M q0 0.5\nr2 M q0 0_5\n", ":2: field 'value': not a number as trec_eval reads one: '0_5'"),
        (
            "r1 M q0 0.5\nr1 M q0 0.6\n",
            ":2: field 'topic_id': run 'r1', measure 'M', topic 'q0' again (first on line 1)",
        ),
        ("r1 M q0 0.5\nghost M q0 0.6\n", ":2: field 'run_id': run 'ghost' is not among the runs of --runs"),
        # one line of a run mistyped: the run is suggested all the same (it was not: the file holds r1)
        (
            "r1 M q0 0.5\nr1 M q1 0.6\nr11 M q2 0.6\n",
            ":3: field 'run_id': run 'r11' is not among the runs of --runs (did you mean 'r1'?)",
        ),
        ("r1 M q0 0.5\nr2 M all 0.6\n", ":2: field 'topic_id': measure 'M': run 'r2' has only an `all` line"),
        (
            "run measure topic value\nr1 M q0 0.5\n",
            ":1: field 'value': value 'value' is not a number (AutoJudge leaderboards have no header line)",
        ),
        ("r1 q0 M 0.5\nr2 q1 M 0.6\n", "no topic (M, ...) is a judged query: is the column order `tot`"),
        (
            '{"run_id": "r1", "topic_id": "q0", "measure": "M", "value": 0.5}\n',
            ":1: expected 4 columns (run_id measure topic_id value), found 8 (a JSON object: this file is read as "
            "columns, not as JSON lines)",
        ),
    ],
)
def test_a_bad_leaderboard_is_one_line_naming_file_and_line(tmp_path, text, message, layout="tot"):
    files = campaign(tmp_path)
    (tmp_path / "team.txt").write_text(text)
    result = subprocess.run(
        [sys.executable, "-m", "examflow", "compare-judges", "--runs", str(tmp_path / "runs [all]" / "r1.txt"),
         str(tmp_path / "runs [all]" / "r2.txt"), "--official-qrels", str(files["official"]), "--leaderboard",
         f"team={tmp_path / 'team.txt'}", "--leaderboard-layout", layout, "--out", str(tmp_path / "out")],
        capture_output=True, text=True,
    )  # fmt: skip
    assert result.returncode != 0 and "Traceback" not in result.stderr, result.stderr
    assert len(result.stderr.strip().splitlines()) == 1 and message in result.stderr, result.stderr
    assert not (tmp_path / "out").exists()


def jsonl(**fields) -> str:
    return json.dumps({"run_id": "r1", "topic_id": "q0", "measure": "M", "value": 0.5, **fields}) + "\n"


@pytest.mark.parametrize(
    ("text", "message"),
    [
        (jsonl() + "r1 M q1 0.5\n", ":2: not valid JSON (Expecting value, column 1)"),
        (jsonl() + "[1]\n", ":2: expected a JSON object, found list"),
        (jsonl() + jsonl(topic_id="q1", value=None), ":2: field 'value': missing"),
        (jsonl() + jsonl(topic_id="q1", value=[1]), ":2: field 'value': expected a string or number, found [1]"),
        (jsonl() + jsonl(topic_id="q1", value="high"), ":2: field 'value': value 'high' is not a number"),
        (jsonl() + jsonl(measure=True), ":2: field 'measure': expected a string or whole number, found true"),
        (jsonl() + jsonl(topic_id=1.0), ":2: field 'topic_id': expected a string or whole number, found 1.0"),
        (jsonl() + jsonl(value=0.6), ":2: field 'topic_id': run 'r1', measure 'M', topic 'q0' again"),
    ],
)
def test_a_bad_jsonl_leaderboard_is_one_line_naming_file_line_and_field(tmp_path, text, message):
    test_a_bad_leaderboard_is_one_line_naming_file_and_line(tmp_path, text, message, "jsonl")


def test_topics_no_label_set_judges_are_left_out_and_a_mean_that_is_not_one_is_said(tmp_path, caplog):
    """A topic that is no judged query (a typo) would move a run's mean: left out, warned; an `all` line
    that is not the mean of its topics: warned, the topics compared; a given score stays exactly itself."""
    lines = [f"r{k} M q{q} {(k + q) / 10}" for k in range(10) for q in range(6)]
    lines += ["r3 M typo 0.99", "r4 M all 0.01", *(f"r{k} S all 0.95" for k in range(10))]
    # r3's `all` line the mean of its judged topics (0.55, as examflow takes it), r7's of neither
    lines += ["r3 M all 0.55", "r7 M typo 0.3", "r7 M all 0.2"]
    (tmp_path / "team.txt").write_text("\n".join(lines) + "\n")
    compare(tmp_path / "t", "--leaderboard", f"team={tmp_path / 'team.txt'}")
    assert "team.txt: 1 topic is no judged query and is left out of the means: typo" in caplog.text
    assert "measure 'M', run 'r4': the `all` line (0.01) is not the mean of its topics (0.65); the" in caplog.text
    assert "run 'r3'" not in caplog.text
    assert (
        "measure 'M', run 'r7': the `all` line (0.2) is not the mean of its topics (0.857143), nor 0.95 over the "
        "judged ones; the judged topics are compared" in caplog.text
    )
    boards = pd.read_csv(tmp_path / "t" / "out" / "leaderboards.tsv", sep="\t")
    team = boards[boards["label_set"] == "team"].set_index(["measure", "run_id"])["score"]
    assert team[("M", "r3")] == pytest.approx(sum((3 + q) / 10 for q in range(6)) / 6, abs=1e-15)
    assert set(team.loc["S"]) == {0.95}  # exactly, not 0.9499999999999998


def test_a_run_no_run_file_holds_is_left_out_of_another_judges_leaderboard_under_warn(tmp_path, caplog):
    lines = [f"r{k} M q{q} {(k + q) / 10}" for k in range(10) for q in range(6)] + ["ghost M q0 0.9"]
    (tmp_path / "team.txt").write_text("\n".join(lines) + "\n")
    agreement = compare(tmp_path, "--leaderboard", f"team={tmp_path / 'team.txt'}", "--on-unknown-run", "warn")
    assert "1 × runs of another judge's leaderboard that are not evaluated, dropped (first: " in caplog.text
    assert f"{tmp_path / 'team.txt'}:61: field 'run_id': run 'ghost' is not among the runs of --runs" in caplog.text
    assert agreement.loc[("team", "M", "kendall"), "runs"] == 10


def test_an_all_line_that_counts_a_missing_topic_as_0_is_the_mean_compared_under_query_mode_all(tmp_path, caplog):
    """AutoJudge's `fix_aggregate` writes a run's `all` line with its missing topics as 0: the mean examflow
    compares under --query-mode all (said nothing of there), not that of the topics it has (said)."""
    lines = [f"r{k} M q{q} {(k + q) / 10}" for k in range(10) for q in range(6) if (k, q) != (2, 5)]
    lines.append(f"r2 M all {sum((2 + q) / 10 for q in range(5)) / 6}")  # q5 counted as 0
    (tmp_path / "team.txt").write_text("\n".join(lines) + "\n")
    for mode, said in (("all", False), ("present", True)):
        caplog.clear()
        compare(tmp_path / mode, "--leaderboard", f"team={tmp_path / 'team.txt'}", "--query-mode", mode)
        assert ("run 'r2': the `all` line (0.333333) is not the mean of its topics (0.4)" in caplog.text) == said


@pytest.mark.parametrize("option", ["--labels", "--leaderboard", "--ensemble"])
def test_a_judge_name_is_letters_digits_underscore_and_dash(tmp_path, option):
    files = campaign(tmp_path)
    value = {"--labels": f"a b={files['noisy']}", "--leaderboard": f"bad/name={files['noisy']}",
             "--ensemble": "v:1=x,y"}[option]  # fmt: skip
    result = subprocess.run(
        [sys.executable, "-m", "examflow", "compare-judges", "--runs", str(tmp_path / "runs [all]" / "r1.txt"),
         str(tmp_path / "runs [all]" / "r2.txt"), "--official-qrels", str(files["official"]), option, value,
         "--out", str(tmp_path / "out")], capture_output=True, text=True,
    )  # fmt: skip
    assert result.returncode != 0 and "a name is ASCII letters, digits, _ and -" in result.stderr, result.stderr


def test_a_leaderboard_name_is_given_once(tmp_path):
    files = campaign(tmp_path)
    (tmp_path / "team.txt").write_text("r1 M all 0.5\nr2 M all 0.6\n")
    result = subprocess.run(
        [sys.executable, "-m", "examflow", "compare-judges", "--runs", str(tmp_path / "runs [all]" / "r1.txt"),
         str(tmp_path / "runs [all]" / "r2.txt"), "--official-qrels", str(files["official"]), "--labels",
         f"team={files['noisy']}", "--leaderboard", f"team={tmp_path / 'team.txt'}", "--out", str(tmp_path / "out")],
        capture_output=True, text=True,
    )  # fmt: skip
    assert (
        result.returncode != 0
        and "--leaderboard 'team=" in result.stderr
        and "the name 'team' is taken" in result.stderr
    )


# -- banks: AutoJudge's question banks (NuggetBanks v3) and nuggetizer's nugget banks ----------------------


def v3_line(query_id: str, questions) -> str:
    return json.dumps({"query_id": query_id, "title_query": "Rising demand for avocado", "format_version": "v3",
                       "nugget_bank": questions}) + "\n"  # fmt: skip


def test_a_v3_question_bank_is_read_and_written_back(tmp_path):
    """Questions keyed by text (or listed), answers keyed by text (or listed): the answer key; examflow's
    ids beside AutoJudge's; a subtopic from the question's metadata; written back as it was read."""
    first = {"question": "Which country supplies most avocados?", "question_id": "abc", "query_id": "q1",
             "answers": {"Mexico": {"answer": "Mexico", "references": [{"doc_id": "d1"}]}}}  # fmt: skip
    second = {"question": "When do avocados ripen?", "query_id": "q1", "answers": [{"answer": "after picking"}],
              "metadata": {"facet_id": "ripening"}}  # fmt: skip
    bank = tmp_path / "bank.jsonl"
    bank.write_text(v3_line("q1", {first["question"]: first, second["question"]: second}) + v3_line("q2", []))
    entries = read_bank(bank)
    assert [(e.query_id, e.facet_id, e.query_text) for e in entries] == [
        ("q1", None, "Rising demand for avocado"), ("q1", "ripening", "Rising demand for avocado"),
        ("q2", None, "Rising demand for avocado")]  # fmt: skip
    assert [(i.item_id, i.gold_answers) for i in entries[0].items] == [
        (item_id("q1", None, first["question"]), ["Mexico"])
    ]
    assert entries[1].items[0].item_id == item_id("q1", "ripening", second["question"])
    assert entries[1].items[0].gold_answers == ["after picking"]
    assert main(["bank-export", str(bank), "--format", "examflow", "--out", str(tmp_path / "mine.jsonl")]) == 0
    assert main(["bank-export", str(tmp_path / "mine.jsonl"), "--format", "autojudge",
                 "--out", str(tmp_path / "back.jsonl")]) == 0  # fmt: skip
    back = [json.loads(line) for line in (tmp_path / "back.jsonl").read_text().splitlines()]
    # a question without AutoJudge's id gets theirs: the md5 of its text
    with_id = {**second, "question_id": hashlib.md5(second["question"].encode()).hexdigest()}
    assert back[0]["nugget_bank"] == [first, with_id] and back[0]["format_version"] == "v3"
    assert back[1] == {"query_id": "q2", "title_query": "Rising demand for avocado", "format_version": "v3",
                       "nugget_bank": []}  # fmt: skip


def test_multiple_choice_questions_keep_their_choices_through_autojudge(tmp_path):
    """AutoJudge's questions have no choices: the export dropped them silently (a stranger's trial). They go
    into the question's metadata, and come back from it."""
    bank = tmp_path / "bank.tsv"
    bank.write_text("query_id\tquestion\tanswers\tchoices\nq1\tWhich enzyme digests starch?\tA\tamylase | lipase\n")
    assert main(["bank-export", str(bank), "--format", "autojudge", "--out", str(tmp_path / "v3.jsonl")]) == 0
    [line] = [json.loads(line) for line in (tmp_path / "v3.jsonl").read_text().splitlines()]
    assert line["nugget_bank"][0]["metadata"] == {"choices": {"A": "amylase", "B": "lipase"}}
    [entry] = read_bank(tmp_path / "v3.jsonl")
    assert entry.items[0].choices == {"A": "amylase", "B": "lipase"} and entry.items[0].gold_answers == ["A"]
    assert main(["bank-export", str(tmp_path / "v3.jsonl"), "--format", "autojudge",
                 "--out", str(tmp_path / "again.jsonl")]) == 0  # fmt: skip
    assert (tmp_path / "again.jsonl").read_text() == (tmp_path / "v3.jsonl").read_text()


def test_a_page_of_subtopic_entries_is_titled_by_its_page(tmp_path):
    """A generated bank writes a subtopic's text `page / subtopic`: the export titled the page by its first
    subtopic's whole text (`Volcanoes / How volcanoes form`, a stranger's trial), where AutoJudge's
    `title_query` is the query's. The page's entry's text where it has one; else what its subtopics' share."""

    def entry(query_id: str, facet_id: str | None, text: str) -> str:
        question = f"What of {facet_id}?"
        return json.dumps({"query_id": query_id, "facet_id": facet_id, "query_text": text, "items": [
            {"question_id": item_id(query_id, facet_id, question), "question_text": question}]})  # fmt: skip

    bank = tmp_path / "bank.jsonl"
    lines = [entry("volc", "form", "Volcanoes / How volcanoes form"), entry("volc", "erupt", "Volcanoes / Eruptions"),
             entry("bees", "hive", "Bees / Hives"), entry("bees", None, "Honey bees"),  # the page's own text
             entry("ac", "x", "AC/DC / Songs"), entry("ac", "y", "Rock / AC/DC"),  # nothing shared: the first's
             entry("one", "z", "Tides"),
             entry("mass", "si", "Mass / weight / Units"), entry("mass", "old", "Mass / weight / History")]  # fmt: skip
    bank.write_text("\n".join(lines) + "\n")
    assert main(["bank-export", str(bank), "--format", "autojudge", "--out", str(tmp_path / "v3.jsonl")]) == 0
    titles = {
        r["query_id"]: r["title_query"] for r in map(json.loads, (tmp_path / "v3.jsonl").read_text().splitlines())
    }
    assert titles == {
        "volc": "Volcanoes",
        "bees": "Honey bees",
        "ac": "AC/DC / Songs",
        "one": "Tides",
        "mass": "Mass / weight",
    }  # a page title holding ` / `


def test_a_nugget_bank_goes_to_autojudge_as_nuggetizer_lines(tmp_path):
    """With the query's text, which nuggetizer's lines require: from the bank, or (a TSV bank has none) from
    --queries; without, refused in one line naming the query."""
    bank = tmp_path / "nuggets.tsv"
    bank.write_text("query_id\tnugget\timportance\nq1\tBees make honey\tvital\nq1\tWax\tokay\nq2\tLava\tvital\n")
    out = tmp_path / "out.jsonl"
    result = subprocess.run([sys.executable, "-m", "examflow", "bank-export", str(bank), "--format", "autojudge",
                             "--out", str(out)], capture_output=True, text=True)  # fmt: skip
    assert result.returncode == 2 and not out.exists() and "Traceback" not in result.stderr
    assert "query 'q1': nuggetizer's lines need the query's text" in result.stderr and "--queries" in result.stderr
    (tmp_path / "queries.tsv").write_text("q1\tHoney bees\nq2\tVolcanoes\n")
    assert main(["bank-export", str(bank), "--format", "autojudge", "--queries", str(tmp_path / "queries.tsv"),
                 "--out", str(out)]) == 0  # fmt: skip
    lines = [json.loads(line) for line in out.read_text().splitlines()]
    assert lines[0] == {"qid": "q1", "query": "Honey bees", "nuggets": [
        {"text": "Bees make honey", "importance": "vital"}, {"text": "Wax", "importance": "okay"}]}  # fmt: skip
    assert lines[1]["query"] == "Volcanoes"
    again = read_bank(tmp_path / "out.jsonl")
    assert [(i.text, i.importance) for e in again for i in e.items] == [
        ("Bees make honey", "vital"), ("Wax", "okay"), ("Lava", "vital")]  # fmt: skip
    (tmp_path / "queries.tsv").write_text("q1\tHoney bees\n")  # q2 is not there: its text was written empty
    result = subprocess.run([sys.executable, "-m", "examflow", "bank-export", str(bank), "--format", "autojudge",
                             "--queries", str(tmp_path / "queries.tsv"), "--out", str(tmp_path / "x.jsonl")],
                            capture_output=True, text=True)  # fmt: skip
    assert result.returncode == 2 and not (tmp_path / "x.jsonl").exists()
    assert result.stderr.endswith(
        f"nuggets.tsv:4: field 'query_id': query 'q2' is not in --queries {tmp_path / 'queries.tsv'}\n"
    )


@pytest.mark.parametrize(
    ("text", "message"),
    [(v3_line("q1", "many"), "bank.jsonl:1: field 'nugget_bank': expected an object or a list of questions"),
     (v3_line("q1", [{"text": "x"}]), "field 'nugget_bank[0]': expected a question object with a `question` text"),
     (v3_line("q1", [{"question": "x", "answers": [3]}]), "field 'nugget_bank[0].answers': expected an object keyed"),
     (v3_line("q1", [{"question": "x", "metadata": {"facet_id": 2}}]), "field 'nugget_bank[0].metadata.facet_id'"),
     (v3_line("q1", [{"question": "x", "metadata": {"choices": ["a"]}}]), "field 'nugget_bank[0].metadata.choices'"),
     (v3_line("q1", []) + v3_line("q1", []), "bank.jsonl:2: field 'query_id': second entry for query 'q1'"),
     (v3_line("q1", []).replace('"v3"', '"v2"'), "field 'format_version': format_version 'v2': examflow reads"),
     # a stranger's bank: two questions under one AutoJudge id, written back so by bank-export
     (v3_line("q1", [{"question": "A?", "question_id": "aj1"}, {"question": "B?", "question_id": "aj1"}]),
      "bank.jsonl:1: field 'nugget_bank[1].question_id': 'aj1' is already the id of nugget_bank[0]: an id names one "
      "question"),
     (v3_line("q1", [{"question": "A?", "question_id": ["aj1"]}]),
      "field 'nugget_bank[0].question_id': expected a string or whole number, not [\"aj1\"]"),
     (v3_line("q1", [{"question": "A?", "question_id": 1}, {"question": "B?", "question_id": "1"}]),
      "field 'nugget_bank[1].question_id': '1' is already the id of nugget_bank[0]")],
)  # fmt: skip
def test_a_bad_v3_bank_names_file_line_and_field(tmp_path, text, message):
    (tmp_path / "bank.jsonl").write_text(text)
    with pytest.raises(InputError, match=re.escape(message)):
        read_bank(tmp_path / "bank.jsonl")


def test_an_export_goes_into_a_new_folder_and_a_folder_it_cannot_write_is_one_line(tmp_path):
    bank = tmp_path / "n.tsv"
    bank.write_text("query_id\tnugget\nq1\tBees\n")
    assert main(["bank-export", str(bank), "--format", "examflow", "--out", str(tmp_path / "new dir" / "x.jsonl")]) == 0
    result = subprocess.run([sys.executable, "-m", "examflow", "bank-export", str(bank), "--format", "examflow",
                             "--out", "/proc/examflow-test/x.jsonl"], capture_output=True, text=True)  # fmt: skip
    assert result.returncode != 0 and "Traceback" not in result.stderr and len(result.stderr.strip().splitlines()) == 1


def test_what_autojudge_banks_cannot_hold_is_refused(tmp_path):
    mixed = tmp_path / "mixed.jsonl"
    mixed.write_text(
        json.dumps({"query_id": "q1", "items": [{"question_text": "Why?"}, {"nugget_text": "Bees"}]}) + "\n"
    )
    facets = tmp_path / "facets.tsv"
    facets.write_text("query_id\tfacet_id\tnugget\nq1\tf\tBees\n")
    for bank, message in (
        (mixed, "holds questions and nuggets"),
        (facets, "nuggets of subtopics have no nuggetizer form"),
    ):
        result = subprocess.run([sys.executable, "-m", "examflow", "bank-export", str(bank), "--format", "autojudge",
                                 "--out", str(tmp_path / "out.jsonl")], capture_output=True, text=True)  # fmt: skip
        assert result.returncode != 0 and message in result.stderr and "Traceback" not in result.stderr
        assert not (tmp_path / "out.jsonl").exists()
