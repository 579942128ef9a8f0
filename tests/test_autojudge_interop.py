"""examflow's AutoJudge files against TREC AutoJudge's own code (`autojudge-base` from PyPI): the
leaderboards `compare-judges` writes load in its `Leaderboard.load` with the scores examflow shows, its
`Leaderboard.write` files (every layout examflow reads) are compared as written, and the banks
`bank-export` writes load in its pydantic models with the texts and importances of the bank."""

from __future__ import annotations

import json
import math
from importlib import resources

import nltk
import pandas as pd
import pytest
from test_autojudge import judge_campaign

from examflow.cli import main
from examflow.questions.bank import read_bank
from examflow.registry import LEADERBOARD_LAYOUTS


@pytest.fixture(scope="module")
def autojudge(tmp_path_factory):
    """autojudge_base, imported offline: its package import reads NLTK's English stop words and looks for
    punkt, downloading what is missing; both are given here (examflow's own stop words; punkt is not used
    by what these tests call)."""
    data = tmp_path_factory.mktemp("nltk_data")
    (data / "corpora" / "stopwords").mkdir(parents=True)
    (data / "tokenizers" / "punkt").mkdir(parents=True)
    words = resources.files("examflow") / "data" / "stopwords-en.txt"
    (data / "corpora" / "stopwords" / "english").write_text(words.read_text(encoding="utf-8"))
    nltk.data.path.insert(0, str(data))
    import autojudge_base.leaderboard.leaderboard as leaderboard
    import autojudge_base.nugget_data as nugget_data

    return leaderboard, nugget_data


def compare(root, *extra: str) -> pd.DataFrame:
    out = judge_campaign(root, *extra, bootstrap=0)
    return pd.read_csv(out / "leaderboards.tsv", sep="\t", dtype={"run_id": str})


def test_autojudge_loads_the_leaderboards_examflow_writes(tmp_path, autojudge):
    leaderboard, _ = autojudge
    boards = compare(tmp_path)
    loaded = leaderboard.Leaderboard.load(tmp_path / "out" / "autojudge.eval.txt", format="tot")
    assert set(loaded.measures) == {"official:ndcg_cut_10", "noisy:ndcg_cut_10"}
    overall = {(e.run_id, m): float(v) for e in loaded.entries if e.topic_id == "all" for m, v in e.values.items()}
    shown = {(r.run_id, f"{r.label_set}:{r.measure}"): r.score for r in boards.itertuples()}
    assert overall == pytest.approx(shown, abs=1e-15) and len(overall) == 20
    for (run, measure), score in overall.items():  # each `all` is the mean of the run's topics
        topics = [float(e.values[measure]) for e in loaded.entries if e.run_id == run and e.topic_id != "all"]
        assert len(topics) == (5 if run == "r0" else 6)
        assert score == pytest.approx(math.fsum(topics) / len(topics), abs=1e-15)


@pytest.mark.parametrize("layout", list(LEADERBOARD_LAYOUTS))
def test_a_leaderboard_autojudge_writes_is_compared_as_it_holds(tmp_path, autojudge, layout):
    """A judge's leaderboard built and written by AutoJudge's `LeaderboardBuilder` (its `all` rows its own
    means): examflow shows each run's score as AutoJudge's `all` row, in every layout it reads."""
    leaderboard, _ = autojudge
    spec = leaderboard.LeaderboardSpec(measures=(leaderboard.MeasureSpec("GRADE"),))
    builder = leaderboard.LeaderboardBuilder(spec)
    for k in range(10):
        for q in range(5 if k == 0 else 6):
            builder.add(run_id=f"r{k}", topic_id=f"q{q}", values={"GRADE": ((k * 3 + q) % 7) / 7})
    built = builder.build()
    path = tmp_path / f"team.{layout}"
    built.write(path, format=layout)
    boards = compare(tmp_path, "--leaderboard", f"team={path}", "--leaderboard-layout", layout)
    theirs = {e.run_id: e.values["GRADE"] for e in built.entries if e.topic_id == "all"}
    shown = boards[boards["label_set"] == "team"]
    assert dict(zip(shown["run_id"], shown["score"])) == pytest.approx(theirs, abs=1e-12) and len(theirs) == 10


def test_autojudge_loads_the_banks_examflow_exports(tmp_path, autojudge):
    _, nugget_data = autojudge
    nuggets = tmp_path / "nuggets.tsv"
    nuggets.write_text("query_id\tnugget\timportance\nq1\tBees make honey\tvital\nq1\tWax\tokay\nq2\tLava\tvital\n")
    (tmp_path / "queries.tsv").write_text("q1\tHoney bees\nq2\tVolcanoes\n")
    assert main(["bank-export", str(nuggets), "--format", "autojudge", "--queries", str(tmp_path / "queries.tsv"),
                 "--out", str(tmp_path / "n.jsonl")]) == 0  # fmt: skip
    banks = nugget_data.load_nugget_banks_generic(tmp_path / "n.jsonl", nugget_data.NuggetizerNuggetBanks)
    assert {q: b.query for q, b in banks.banks.items()} == {"q1": "Honey bees", "q2": "Volcanoes"}
    assert {q: [(n.text, n.importance) for n in b.nuggets] for q, b in banks.banks.items()} == {
        "q1": [("Bees make honey", "vital"), ("Wax", "okay")], "q2": [("Lava", "vital")]}  # fmt: skip

    questions = tmp_path / "questions.tsv"
    questions.write_text("query_id\tquestion\nq1\tWhich insects make honey?\nq1\tWhat is wax for?\nq2\tIs lava hot?\n")
    assert main(["bank-export", str(questions), "--format", "autojudge", "--out", str(tmp_path / "q.jsonl")]) == 0
    banks = nugget_data.load_nugget_banks_generic(tmp_path / "q.jsonl", nugget_data.NuggetBanks)
    assert {q: sorted(n.question for n in b.nuggets_as_list()) for q, b in banks.banks.items()} == {
        "q1": ["What is wax for?", "Which insects make honey?"], "q2": ["Is lava hot?"]}  # fmt: skip


def test_examflow_reads_the_banks_autojudge_writes(tmp_path, autojudge):
    _, nugget_data = autojudge
    bank = nugget_data.NuggetBank(query_id="q1", title_query="Honey bees")
    bank.add_nuggets([nugget_data.NuggetQuestion.from_lazy(query_id="q1", question="Which insects make honey?",
                                                           gold_answers=["bees"])])  # fmt: skip
    nugget_data.write_nugget_banks(nugget_data.NuggetBanks.from_banks_list([bank]), tmp_path / "q.jsonl")
    entries = read_bank(tmp_path / "q.jsonl")
    assert [(e.query_id, e.query_text, [(i.text, i.gold_answers) for i in e.items]) for e in entries] == [
        ("q1", "Honey bees", [("Which insects make honey?", ["bees"])])]  # fmt: skip

    nuggetizer = nugget_data.NuggetizerNuggetBanks(banks={"q2": nugget_data.NuggetizerNuggetBank(
        qid="q2", query="Volcanoes", nuggets=[{"text": "Lava is hot", "importance": "vital"},
                                              {"text": "Ash falls", "importance": "okay"}])})  # fmt: skip
    nugget_data.write_nugget_banks_generic(nuggetizer, tmp_path / "n.jsonl")
    entries = read_bank(tmp_path / "n.jsonl")
    assert [(e.query_id, [(i.text, i.importance) for i in e.items]) for e in entries] == [
        ("q2", [("Lava is hot", "vital"), ("Ash falls", "okay")])
    ]
    assert json.loads((tmp_path / "n.jsonl").read_text().splitlines()[0])["qid"] == "q2"
