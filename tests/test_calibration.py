"""The offline grader's calibration: similarities to grades by a quantile ladder over pool, query or question."""

from __future__ import annotations

import re

import pandas as pd
import pytest
import yaml
from conftest import snakemake, write

from examflow.commands import _top_grade
from examflow.errors import ConfigError
from examflow.grading.calibration import calibrated_grades
from examflow.grading.merge import merge_grades, read_grades_metadata
from examflow.registry import check_method

# Two queries; q1 has questions a and b over passages p1..p4, q2 has question c over p5, p6; one failed pair.
SIMILARITIES = pd.DataFrame(
    [
        ("q1", "p1", "q1/a", 0.10), ("q1", "p2", "q1/a", 0.20), ("q1", "p3", "q1/a", 0.30), ("q1", "p4", "q1/a", 0.40),
        ("q1", "p1", "q1/b", 0.50), ("q1", "p2", "q1/b", 0.60), ("q1", "p3", "q1/b", 0.70), ("q1", "p4", "q1/b", 0.80),
        ("q2", "p5", "q2/c", 0.90), ("q2", "p6", "q2/c", None),
    ],
    columns=["query_id", "passage_id", "question_id", "score"],
)  # fmt: skip
LADDER = [0.25, 0.5, 0.75]  # grade = rungs reached: 0..3


def grades_of(mode: str) -> list:
    ratings, _ = calibrated_grades(SIMILARITIES, mode, LADDER)
    return [None if pd.isna(r) else int(r) for r in ratings]


def test_pool_quantiles_are_one_ladder_for_every_pair():
    # The nine similarities 0.1 .. 0.9: the 25th, 50th, 75th percentiles (linear) are 0.3, 0.5, 0.7.
    assert grades_of("pool") == [0, 0, 1, 1, 2, 2, 3, 3, 3, None]
    _, record = calibrated_grades(SIMILARITIES, "pool", LADDER)
    assert record["calibration"] == "pool" and record["thresholds"][""] == pytest.approx([0.3, 0.5, 0.7])


def test_query_quantiles_are_taken_over_each_querys_pairs():
    # q1: 0.1 .. 0.8 gives 0.275, 0.45, 0.625; q2's one similarity is its own ladder: 0.9 reaches all.
    assert grades_of("query") == [0, 0, 1, 1, 2, 2, 3, 3, 3, None]
    _, record = calibrated_grades(SIMILARITIES, "query", LADDER)
    assert record["thresholds"]["q1"] == pytest.approx([0.275, 0.45, 0.625])


def test_question_quantiles_are_taken_over_each_questions_passages():
    # q1/a: 0.1 .. 0.4 gives 0.175, 0.25, 0.325; q1/b the same shape: each question ranks its passages.
    assert grades_of("question") == [0, 1, 2, 3, 0, 1, 2, 3, 3, None]
    _, record = calibrated_grades(SIMILARITIES, "question", LADDER)
    assert record["thresholds"]["q1/q1/b"] == pytest.approx([0.575, 0.65, 0.725])


def test_merge_records_the_calibration_and_only_the_embedding_back_end_takes_one():
    embedding = {"kind": "embedding"}
    settings = {
        "name": "m",
        "kind": "self_rating",
        "backend": embedding,
        "calibration": "question",
        "quantiles": LADDER,
    }
    table = SIMILARITIES.assign(error=None, unparsable=False)
    grades, metadata = merge_grades([table], check_method("m", settings))
    assert metadata["embedding_grades"]["calibration"] == "question"
    assert grades.set_index(["passage_id", "question_id"])["rating"].to_dict()[("p2", "q1/b")] == 1
    # the report reads the ladder's rungs from the record as the highest grade: 3 here, 5 by default
    assert _top_grade(metadata["method"]) == 3 == grades["rating"].max()
    default = {key: value for key, value in settings.items() if key != "quantiles"}
    assert _top_grade(merge_grades([table], check_method("m", default))[1]["method"]) == 5
    with pytest.raises(ConfigError, match="calibration: only the embedding back end"):
        backend = {"kind": "openai", "model": "m", "base_url": "http://127.0.0.1:1/v1"}
        check_method("m", {"name": "m", "kind": "self_rating", "backend": backend, "calibration": "pool"})
    with pytest.raises(ConfigError, match="calibration: must be one of pool, query, question, not 'judged'"):
        check_method("m", {"name": "m", "kind": "self_rating", "backend": embedding, "calibration": "judged"})
    # out of range; six rungs (a grade 6, past every τ: a stranger's run wrote it to the qrels); falling; equal
    for ladder in ([1.5], [0.1, 0.2, 0.3, 0.4, 0.5, 0.6], [0.9, 0.8], [0.8, 0.8], []):
        expected = f"quantiles: expected 1 to 5 numbers from 0 to 1, each above the one before (grade g: g rungs reached), found {ladder!r}"
        with pytest.raises(ConfigError, match=re.escape(expected)):
            check_method("m", {"name": "m", "kind": "self_rating", "backend": embedding, "quantiles": ladder})


def test_gold_articles_are_graded_on_the_ladder_of_the_pooled_pairs_alone(tmp_path, capsys):
    """A gold article is graded, but is no pooled passage: its similarities do not set the quantiles (a
    stranger's gold articles lowered a pooled pair's grade 5 to 4). q1/a without p4: 0.1, 0.2, 0.3 give
    0.15, 0.2, 0.25, so p1..p4 reach 0, 2, 3, 3 rungs (with p4 on the ladder: 0, 1, 2, 3)."""
    import json

    from examflow.cli import main

    settings = {"name": "m", "kind": "self_rating", "backend": {"kind": "embedding"}, "calibration": "question",
                "quantiles": LADDER}  # fmt: skip
    table = SIMILARITIES.assign(error=None, unparsable=False)
    gold = pd.DataFrame({"query_id": ["q1"], "passage_id": ["p4"]})
    grades, metadata = merge_grades([table], check_method("m", settings), gold)
    assert grades.loc[grades["question_id"] == "q1/a", "rating"].tolist() == [0, 2, 3, 3]
    assert metadata["embedding_grades"]["thresholds"]["q1/q1/a"] == pytest.approx([0.15, 0.2, 0.25])
    shard = tmp_path / "shard.parquet"
    table.to_parquet(shard)
    assert (
        main(["merge-grades", "--method", json.dumps(settings), "--out", str(tmp_path / "m.parquet"), str(shard)]) == 2
    )
    assert "--passages: the pool's passages.parquet" in capsys.readouterr().err


def test_shards_of_another_method_are_refused_by_the_merge(tmp_path, capsys):
    """`merge-grades --method emb2` over emb's shards wrote emb's rows under emb2's metadata, and evaluate then
    wrote `qrels/emb.qrels` of emb2's grades; a `sun` --method over self_rating shards passed too (a stranger)."""
    import json

    from examflow.cli import main

    shard = tmp_path / "shard.parquet"
    columns = {"facet_id": None, "rating": pd.NA, "correct": pd.NA, "error": None, "unparsable": False}
    SIMILARITIES.assign(**columns, method="emb", kind="self_rating").to_parquet(shard)
    (tmp_path / "pool").mkdir()
    passages = SIMILARITIES[["query_id", "passage_id"]].drop_duplicates().assign(text="x", origin="retrieved")
    passages.to_parquet(tmp_path / "pool/passages.parquet")
    merge = [
        "merge-grades",
        "--passages",
        str(tmp_path / "pool/passages.parquet"),
        "--out",
        str(tmp_path / "m.parquet"),
    ]
    for name, kind, column, found in (("emb2", "self_rating", "method", "emb"), ("emb", "sun", "kind", "self_rating")):
        method = {"name": name, "kind": kind, "backend": {"kind": "embedding"}}
        assert main([*merge, "--method", json.dumps(method), str(shard)]) == 2
        assert capsys.readouterr().err.endswith(
            f"examflow: error: {shard}: field '{column}': graded by {column} {found!r}, not --method's "
            f"{name if column == 'method' else kind!r}: merge a method's own shards, with the method they were "
            "graded with\n"
        )
    assert not (tmp_path / "m.parquet").exists()
    method = {"name": "emb", "kind": "self_rating", "backend": {"kind": "embedding"}, "quantiles": LADDER}
    assert main([*merge, "--method", json.dumps(method), str(shard)]) == 0  # its own, another ladder: merged
    capsys.readouterr()
    # no shards: an empty table, which evaluate read as a pool without passages (a stranger's trial)
    assert main([*merge, "--method", json.dumps(method)]) == 2
    assert capsys.readouterr().err.endswith(
        "examflow: error: merge-grades: no shards given: name every grading job's table (`grade --out`)\n"
    )
    # graded by another model than --method's (a stranger's trial: merged, and recorded as --method's model)
    from examflow.grading.merge import write_grades
    from examflow.registry import BACKENDS

    table = pd.read_parquet(shard)
    default = BACKENDS["embedding"].options["model"].default
    (tmp_path / "m").mkdir()  # a local model's folder written two ways is one model
    same = {"name": "emb", "kind": "self_rating", "backend": {"kind": "embedding", "model": str(tmp_path / "m")},
            "quantiles": LADDER}  # fmt: skip
    write_grades(pd.read_parquet(shard), {"model": {"backend": "embedding", "model": f"{tmp_path}/./m"}}, str(shard))
    assert main([*merge, "--method", json.dumps(same), str(shard)]) == 0
    capsys.readouterr()
    for model, status in (("other/minilm", 2), (default, 0)):
        write_grades(table, {"shard": "shard-0", "model": {"backend": "embedding", "model": model}}, str(shard))
        assert main([*merge, "--method", json.dumps(method), str(shard)]) == status
        if status:
            assert capsys.readouterr().err.endswith(
                f"examflow: error: {shard}: field 'model': graded with model 'other/minilm', not --method's "
                f"{default!r}: merge a method's own shards, with the method they were graded with\n"
            )


@pytest.mark.workflow
def test_a_new_calibration_regrades_nothing_and_reruns_from_the_merge(project):
    grades = project / "results/demo/grades/cosine.parquet"
    snakemake(project, str(grades.relative_to(project)))  # the merged grades: no evaluation, no report
    config = yaml.safe_load((project / "config/config.yaml").read_text())
    config["grading"]["methods"][0]["calibration"] = "question"
    write(project / "config/config.yaml", yaml.safe_dump(config))
    planned = snakemake(project, "-n", str(grades.relative_to(project))).stdout
    assert set(re.findall(r"^(?:local)?rule (\w+):", planned, re.MULTILINE)) == {"merge_grades"}, planned
    snakemake(project, str(grades.relative_to(project)))
    assert read_grades_metadata(grades)["embedding_grades"]["calibration"] == "question"
    assert pd.read_parquet(grades)["rating"].notna().all()
