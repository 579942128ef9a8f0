"""What the workflow's tables must hold, computed here from the raw input files with plain Python
(no examflow code): EXAM-Cover per run, EXAM-Qrels labels, NRP of an outside ranker's run; and
examflow's earlier preparation of a prompt, which today's must equal (`test_preparation.py`, and the
host side of `benchmarks/grading_throughput.py`).

The matrix tests (`test_matrix.py`) compare each configuration's outputs with these."""

from __future__ import annotations

import csv
import gzip
import hashlib
import json
import math
import re
import statistics
from collections import Counter, defaultdict
from fractions import Fraction
from pathlib import Path


def read_text(path) -> str:
    """A text file's contents, gunzipped when its name ends in `.gz`."""
    data = Path(path).read_bytes()
    return (gzip.decompress(data) if str(path).endswith(".gz") else data).decode("utf-8")


def read_runs(paths) -> dict[str, dict[str, list[tuple[int, str, float]]]]:
    """{run tag: {query: [(rank as written, doc, score), ...]}} from TREC run files."""
    runs: dict = defaultdict(lambda: defaultdict(list))
    for path in paths:
        for line in read_text(path).splitlines():
            query, _, doc, rank, score, tag = line.split()
            runs[tag][query].append((int(rank), doc, float(score)))
    return runs


def question_id(query_id: str, facet_id: str | None, text: str) -> str:
    """docs/methods.md §2: `query_id[/facet_id]/md5(stripped text)`."""
    digest = hashlib.md5(text.strip().encode("utf-8")).hexdigest()
    return f"{query_id}/{facet_id}/{digest}" if facet_id else f"{query_id}/{digest}"


def bank_questions(path: str | Path) -> dict[str, dict[str, str]]:
    """{query: {question id: text}} from a JSONL bank (stored ids kept) or a TSV bank (ids derived)."""
    path = Path(path)
    found: dict = defaultdict(dict)
    if path.suffix == ".tsv":
        for row in csv.DictReader(path.open(encoding="utf-8"), delimiter="\t"):
            facet = row.get("facet_id") or None
            found[row["query_id"]][question_id(row["query_id"], facet, row["question"])] = row["question"]
        return found
    opener = gzip.open if path.suffix == ".gz" else open
    with opener(path, "rt", encoding="utf-8") as lines:
        for line in lines:
            entry = json.loads(line)
            for item in entry["items"]:
                found[entry["query_id"]][item["question_id"]] = item["question_text"]
    return found


def cover(
    answers: dict[tuple[str, str, str], float],
    runs: dict,
    questions: dict[str, dict[str, str]],
    tau: float,
    k: int = 20,
    all_queries: bool = False,
) -> dict[str, float]:
    """EXAM-Cover per run: the mean over queries of the share of the query's questions that some passage
    ranked <= k answers with a grade >= tau. `answers[(query, passage, question)]` is the grade. A run with
    no query to average (under `present`, none of its queries has questions) has no score."""
    scores = {}
    for run, lists in runs.items():
        values = []
        for query in sorted(questions) if all_queries else sorted(lists):
            if query not in questions:
                continue
            top = [doc for rank, doc, _ in lists.get(query, []) if rank <= k]
            answered = {q for q in questions[query] for p in top if answers.get((query, p, q), -1) >= tau}
            values.append(len(answered) / len(questions[query]))
        if values:
            scores[run] = statistics.fmean(values)
    return scores


def n_exam_cover(
    answers: dict[tuple[str, str, str], float],
    runs: dict,
    questions: dict[str, dict[str, str]],
    tau: float,
    passages: dict[tuple[str, str], str],
    gold: bool = False,
    k: int = 20,
    all_queries: bool = False,
) -> dict[str, float]:
    """n-EXAM per run (docs/methods.md §4). `passages[(query, passage)]` is the pool's origin of each passage.
    Pool mode: the mean over queries of the questions covered over those some pooled passage (not a gold
    article's) answers with a grade >= tau (0 when none). Gold mode: over the queries with a gold article,
    Σ covered/|Q_q| over Σ (questions the gold article answers)/|Q_q|."""

    def answered(query: str, ids) -> set[str]:
        return {q for q in questions[query] for p in ids if answers.get((query, p, q), -1) >= tau}

    def of(query: str, gold_passages: bool) -> list[str]:
        return [p for (q, p), origin in passages.items() if q == query and (origin == "gold") == gold_passages]

    scores = {}
    for run, lists in runs.items():
        covered, weights = [], []
        for query in sorted(questions) if all_queries else sorted(lists):
            if query not in questions or (gold and not of(query, True)):
                continue
            size = len(questions[query])
            top = [doc for rank, doc, _ in lists.get(query, []) if rank <= k]
            hits = len(answered(query, top))
            if gold:
                covered.append(hits / size)
                weights.append(len(answered(query, of(query, True))) / size)
            else:
                reachable = len(answered(query, of(query, False)))
                covered.append(hits / reachable if reachable else 0.0)
                weights.append(1.0)
        if weights:
            scores[run] = sum(covered) / sum(weights)
    return scores


def grades_from_table(grades) -> dict[tuple[str, str, str], float]:
    """The grade of each (query, passage, question) of a grades table (a QA answer: 5 if correct);
    failed pairs, and QA answers to a question without an answer key, answer nothing."""
    import pandas as pd

    found = {}
    for row in grades.itertuples(index=False):
        if isinstance(row.error, str) or (pd.isna(row.rating) and pd.isna(row.correct)):
            continue
        value = row.rating if pd.isna(row.correct) else 5 * bool(row.correct)
        found[(row.query_id, row.passage_id, row.question_id)] = float(value)
    return found


def qrels_lines(
    answers: dict[tuple[str, str, str], float], passages: set[tuple[str, str]], qa: bool = False
) -> set[str]:
    """EXAM-Qrels: every pooled passage with its best grade over the questions (`qa`, answers checked against
    keys, 5 where correct: how many it answers correctly), 0 when none."""
    best: dict = {}
    for (query, passage, _), grade in answers.items():
        label = best.get((query, passage), 0) + (grade > 0) if qa else max(best.get((query, passage), 0), int(grade))
        best[(query, passage)] = label
    return {f"{q} 0 {p} {best.get((q, p), 0)}" for q, p in passages}


def content_words(text: str) -> Counter[str]:
    """ROUGE's unigrams (docs/evaluation.md): lower-cased runs of letters and digits (an apostrophe inside a
    word kept), NLTK's English stopwords dropped (the list examflow ships), lemmatised by simplemma."""
    import simplemma

    stop = set((Path(__file__).parents[1] / "src/examflow/data/stopwords-en.txt").read_text("utf-8").split())
    words = re.findall(r"[a-z0-9]+(?:['’][a-z0-9]+)*", text.lower())
    return Counter(simplemma.lemmatize(word, lang="en") for word in words if word not in stop)


def rouge_1(texts: dict[str, dict[str, list[str]]], gold: dict[str, str], all_queries: bool) -> dict[str, float]:
    """ROUGE-1 F1 per run: `texts[run][query]` the texts of the passages the run ranks <= k; per query with a
    gold article the F1 of their unigrams against the article's, averaged over the queries the run ranks
    (or, `all_queries`, over every query with a gold article, 0 where it ranks nothing)."""
    scores = {}
    for run, queries in texts.items():
        values = []
        for query in sorted(gold):
            if query not in queries:
                values += [0.0] * all_queries
                continue
            candidate, reference = content_words(" ".join(queries[query])), content_words(gold[query])
            overlap = sum(min(count, reference[word]) for word, count in candidate.items())
            precision = overlap / max(sum(candidate.values()), 1)
            recall = overlap / sum(reference.values())
            values.append(2 * precision * recall / (precision + recall) if overlap else 0.0)
        scores[run] = statistics.fmean(values)
    return scores


def quantile_grades(similarities: list[float], ladder: list[float]) -> list[int]:
    """The offline grader's grades (docs/offline-grader.md): how many of the ladder's quantiles of all the
    `similarities` (linear interpolation between order statistics) each similarity reaches."""
    ordered = sorted(similarities)

    def quantile(share: float) -> float:
        position = share * (len(ordered) - 1)
        low = math.floor(position)
        high = min(low + 1, len(ordered) - 1)
        return ordered[low] + (ordered[high] - ordered[low]) * (position - low)

    steps = [quantile(share) for share in ladder]
    return [sum(value >= step for step in steps) for value in similarities]


def read_qrels(path) -> dict[str, dict[str, int]]:
    judged: dict = defaultdict(dict)
    for line in Path(path).read_text(encoding="utf-8").splitlines():
        query, _, doc, label = line.split()
        judged[query][doc] = int(label)
    return judged


def nrp_per_answer(
    run_file, qrels_file, answers_file, denominator: str, cannot_judge=()
) -> dict[tuple[str, str], dict[tuple[str, str], Fraction]]:
    """NRP of each answer {system (llm, prompt): {(query, sample): NRP}} under an outside ranker's run, exact:
    an answer's rank r is the number of judged documents scoring at least as high (ties against the
    answer); an empty or missing answer has no score in a run and ranks below every document. Every
    sample of a system on every judged query some answer is given for."""
    scores: dict = defaultdict(dict)
    for line in Path(run_file).read_text(encoding="utf-8").splitlines():
        query, _, item, _, score, _ = line.split()
        scores[query][item] = float(score)
    judged = {
        q: [d for d, label in docs.items() if label not in cannot_judge] for q, docs in read_qrels(qrels_file).items()
    }
    given: dict = {}
    for line in Path(answers_file).read_text(encoding="utf-8").splitlines():
        answer = json.loads(line)
        given[(answer["llm"], answer["prompt"], str(answer["sample"]), answer["query_id"])] = answer["text"]
    samples: dict = defaultdict(set)
    for llm, prompt, sample, _ in given:
        samples[(llm, prompt)].add(sample)
    answered = sorted(q for q in judged if any(key[3] == q for key in given))
    values: dict = defaultdict(dict)
    for system, system_samples in samples.items():
        for query in answered:
            docs = judged[query]
            for sample in sorted(system_samples):
                text = given.get((*system, sample, query), "")
                if text and text.strip():
                    mine = scores[query][f"{system[0]}/{system[1]}/{sample}"]
                    r = sum(scores[query][d] >= mine for d in docs)
                else:
                    r = len(docs)
                values[system][(query, sample)] = 1 - Fraction(r, len(docs) + (1 if denominator == "list" else 0))
    return values


def nrp_of_run(run_file, qrels_file, answers_file, denominator: str, cannot_judge=()) -> dict[tuple[str, str], float]:
    """NRP per system (llm, prompt): the mean over a system's samples, then over queries."""
    per_system = {}
    for system, values in nrp_per_answer(run_file, qrels_file, answers_file, denominator, cannot_judge).items():
        queries = sorted({query for query, _ in values})
        means = [statistics.fmean(v for (q, _), v in values.items() if q == query) for query in queries]
        per_system[system] = statistics.fmean(means)
    return per_system


def per_page(judged: dict[str, dict[str, int]]) -> dict[str, dict[str, int]]:
    """Judgments of subtopics (`q/f`) as judgments of the page `q`: each document's highest."""
    pages: dict = defaultdict(dict)
    for query, docs in judged.items():
        for doc, label in docs.items():
            page = query.split("/")[0]
            pages[page][doc] = max(pages[page].get(doc, label), label)
    return pages


def ndcg_at_10(runs: dict, judged: dict[str, dict[str, int]], complete: bool = False) -> dict[str, float]:
    """nDCG@10 per run as trec_eval computes it: gain = judgment (negative as 0), discount log2(rank + 1),
    the ideal list of the query's judgments (`trec_means`)."""
    return trec_means(runs, judged, {"ndcg_cut_10": lambda order, labels: ndcg(order, labels, 10)}, complete)[
        "ndcg_cut_10"
    ]


def ndcg(order: list[str], labels: dict[str, int], depth: int) -> float:
    dcg = sum(max(labels.get(doc, 0), 0) / math.log2(i + 2) for i, doc in enumerate(order[:depth]))
    ideal = sorted((max(g, 0) for g in labels.values()), reverse=True)[:depth]
    best = sum(g / math.log2(i + 2) for i, g in enumerate(ideal))
    return dcg / best if best else 0.0


def at_level(level: int) -> dict:
    """trec_eval's measures that read the judgments at relevance level `level` (`-l`), by name: a document is
    relevant where its judgment is `level` or more; R is the query's number of such documents."""

    def relevant(order: list[str], labels: dict[str, int]) -> tuple[list[bool], int]:
        return [labels.get(doc, 0) >= level for doc in order], sum(g >= level for g in labels.values())

    def average_precision(order, labels):
        hits, total = relevant(order, labels)
        found = [sum(hits[: i + 1]) / (i + 1) for i, hit in enumerate(hits) if hit]
        return sum(found) / total if total else 0.0

    def r_precision(order, labels):
        hits, total = relevant(order, labels)
        return sum(hits[:total]) / total if total else 0.0

    def reciprocal_rank(order, labels):
        hits, _ = relevant(order, labels)
        return next((1 / (i + 1) for i, hit in enumerate(hits) if hit), 0.0)

    return {
        "map": average_precision,
        "Rprec": r_precision,
        "P_20": lambda order, labels: sum(relevant(order, labels)[0][:20]) / 20,
        "recip_rank": reciprocal_rank,
    }


def trec_means(runs: dict, judged: dict[str, dict[str, int]], measures: dict, complete: bool = False) -> dict:
    """{measure: {run: mean}} of each measure (a function of the run's ranked documents and the query's
    judgments): the run's list by score, ties by document id descending, as trec_eval orders them; the mean
    over the judged queries the run ranks (`complete`: over every judged query, one the run lacks counting 0,
    trec_eval -c). Judgments of subtopics (`q/f`) count per page (max)."""
    pages = per_page(judged)
    means: dict = {name: {} for name in measures}
    for run, lists in runs.items():
        orders = {
            query: [
                doc
                for _, doc, _ in sorted(
                    sorted(ranked, key=lambda item: item[1], reverse=True), key=lambda item: -item[2]
                )
            ]  # fmt: skip
            for query, ranked in lists.items()
            if query in pages
        }
        missing = len(set(pages) - set(lists)) if complete else 0
        if not orders and not missing:  # a run of no judged query has no score, as trec_eval gives it none
            continue
        for name, measure in measures.items():
            values = [measure(order, pages[query]) for query, order in orders.items()]
            means[name][run] = statistics.fmean(values + [0.0] * missing)
    return means


def earlier_prompt(tokenizer, text: str, fields: dict, max_input_tokens: int, margin: int) -> str:
    """A prompt as examflow prepared it before prompts were tokenised once: `text` (a template) filled
    with `fields`, the template without its context and the context measured apart, the context cut at
    a token's end to the budget left, the filled prompt measured again and cut further while over."""
    fields = dict(fields)
    context = fields.pop("context", "")
    rest = len(tokenizer(text.format(context="", **fields), add_special_tokens=False).input_ids)
    budget = max_input_tokens - rest - tokenizer.num_special_tokens_to_add() - margin
    ends = tokenizer(context, add_special_tokens=False, return_offsets_mapping=True).offset_mapping
    while True:
        cut = context if len(ends) <= budget else context[: ends[budget - 1][1]] if budget > 0 else ""
        prompt = text.format(context=cut, **fields)
        excess = len(tokenizer(prompt).input_ids) - max_input_tokens
        if excess <= 0 or not cut:
            return prompt
        budget = min(budget, len(ends)) - excess
