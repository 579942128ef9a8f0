"""ir_datasets ids as inputs, on a local dataset registered with ir_datasets itself."""

from __future__ import annotations

import pytest
from conftest import write

from examflow.errors import InputError, Problems
from examflow.io import read_passages, read_qrels, read_queries

ir_datasets = pytest.importorskip("ir_datasets")


@pytest.fixture(scope="module")
def local_dataset(tmp_path_factory):
    from ir_datasets.datasets.base import Dataset
    from ir_datasets.formats import TrecQrels, TsvDocs, TsvQueries
    from ir_datasets.util import LocalDownload

    directory = tmp_path_factory.mktemp("irds")
    docs = write(directory / "docs.tsv", "d1\tfirst passage\nd2\tsecond passage\nd3\tthird passage\n")
    queries = write(directory / "queries.tsv", "q1\tfirst query\nq2\tsecond query\n")
    qrels = write(directory / "qrels.txt", "q1 0 d1 2\nq2 0 d3 0\nq9 0 d2 1\n")
    name = "examflow-test/local"
    if name not in ir_datasets.registry:
        ir_datasets.registry.register(
            name,
            Dataset(
                TsvDocs(LocalDownload(docs)),
                TsvQueries(LocalDownload(queries)),
                TrecQrels(LocalDownload(qrels), {0: "no", 1: "yes", 2: "very"}),
            ),
        )
    return f"irds:{name}"


def test_queries_qrels_and_passages_from_an_ir_datasets_id(local_dataset):
    queries = read_queries(local_dataset)
    assert queries[["query_id", "query_text"]].values.tolist() == [["q1", "first query"], ["q2", "second query"]]
    with pytest.raises(InputError, match=f"{local_dataset}: field 'query_id': unknown query id 'q9'"):
        read_qrels(local_dataset, queries, Problems("error"))
    judgments = read_qrels(local_dataset, queries, Problems("warn"))
    assert judgments[["query_id", "passage_id", "relevance"]].values.tolist() == [["q1", "d1", 2], ["q2", "d3", 0]]
    assert read_passages(local_dataset, {"d1", "d3"}, Problems("error")) == {
        "d1": "first passage",
        "d3": "third passage",
    }
    with pytest.raises(InputError, match="pooled passage 'd7' is not in the collection"):
        read_passages(local_dataset, {"d7"}, Problems("error"))


def test_unknown_ir_datasets_id():
    with pytest.raises(InputError, match="irds:no-such/dataset: unknown ir_datasets id"):
        read_queries("irds:no-such/dataset")
