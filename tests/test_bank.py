"""Bank formats, ids, shards and diffs (docs/methods.md §2)."""

from __future__ import annotations

import gzip
import json
import logging
import re
import subprocess
import sys

import pandas as pd
import pytest
from conftest import DEMO, REFERENCE, needs_reference, write

from examflow.cli import main
from examflow.errors import InputError
from examflow.io.tables import write_tables
from examflow.questions.bank import read_bank, write_bank
from examflow.questions.diff import diff_banks, format_diff
from examflow.questions.items import item_id
from examflow.questions.shards import (
    bank_shard_table,
    check_every_bucket,
    check_one_bucket,
    query_folder,
    shard_digests,
    shard_of,
)

REFERENCE_BANKS = sorted(
    p
    for p in REFERENCE.glob("**/*.jsonl.gz")
    if "graded" not in p.name and ("question" in p.name or "genq" in p.name or "nugget" in p.name)
)


@needs_reference("every published bank imports and round-trips losslessly", bool(REFERENCE_BANKS))
@pytest.mark.parametrize("path", REFERENCE_BANKS, ids=lambda p: str(p.relative_to(REFERENCE)))
def test_reference_banks_import_and_round_trip(path, tmp_path):
    bank = read_bank(path)
    assert bank and all(entry.items for entry in bank)
    copy = tmp_path / "copy.jsonl.gz"
    write_bank(bank, copy)
    assert read_bank(copy) == bank


@needs_reference("the published banks' sizes and legacy question ids")
def test_reference_bank_sizes_and_legacy_ids():
    dl19 = read_bank(REFERENCE / "flan-t5-exam-appendix/dl19-questions/dl19-genq.jsonl.gz")
    assert (len(dl19), sum(len(e.items) for e in dl19)) == (43, 430)
    # Older banks hashed the unstripped text; those ids are kept (they key the published grades).
    sigmet = next(i for e in dl19 for i in e.items if i.item_id == "131843/e212c4ce2e518bde9b8b521f4e96065c")
    assert sigmet.text.endswith(" ") and sigmet.item_id != item_id("131843", None, sigmet.text)
    car = read_bank(REFERENCE / "exam_plusplus/phase1-data/car-questions.jsonl.gz")
    assert (len(car), sum(len(e.items) for e in car)) == (726, 8551)
    assert all(i.item_id == item_id(i.query_id, i.facet_id, i.text) for e in car for i in e.items)
    flat = read_bank(REFERENCE / "flan-t5-exam-appendix/car-y3-questions/car-y3-genq.jsonl.gz")
    assert flat[0].facet_id == "T_0016" and flat[0].items[0].extra["correctKey"] is None
    nuggets = read_bank(REFERENCE / "rubric-evaluation/phase1-data/dl20-nuggets.jsonl.gz")
    assert {i.kind for e in nuggets for i in e.items} == {"nugget"}


def test_edited_text_gets_a_new_id_imported_ids_are_kept(tmp_path, caplog):
    bank = read_bank(DEMO / "bank.jsonl")
    old = bank[0].items[0]
    path = write(tmp_path / "bank.jsonl", (DEMO / "bank.jsonl").read_text().replace(old.text, "Where is nectar kept?"))
    with caplog.at_level(logging.INFO):
        edited = read_bank(path)[0].items[0]
    assert edited.item_id == item_id("honeybee", None, "Where is nectar kept?") != old.item_id
    assert f"{path}: 1 item whose id is not its text's (edited, or named by hand) got a new id derived from its " \
           "text; `keep_id: true` on an item keeps its id" in caplog.messages  # fmt: skip
    record = json.loads((DEMO / "bank.jsonl").read_text().splitlines()[0])
    record["items"][0] |= {"question_text": "Reworded, yet graded under its old id", "keep_id": True}
    kept = read_bank(write(tmp_path / "kept.jsonl", json.dumps(record) + "\n"))[0].items[0]
    assert kept.item_id == old.item_id


def test_tsv_bank_for_hand_written_questions(tmp_path):
    path = write(
        tmp_path / "bank.tsv",
        "query_id\tfacet_id\tquestion\tanswers\tchoices\n"
        "q1\t\tWhat is nectar?\tsugary liquid | sugar water\t\n"
        "q1\t\tWhich planet is largest?\tJupiter\tMars | Jupiter | Venus\n"
        "p\ts1\tHow do volcanoes form?\t\t\n",
    )
    bank = read_bank(path)
    assert [(e.query_id, e.facet_id, len(e.items)) for e in bank] == [("q1", None, 2), ("p", "s1", 1)]
    assert bank[0].items[0].gold_answers == ["sugary liquid", "sugar water"]
    assert bank[0].items[1].choices == {"A": "Mars", "B": "Jupiter", "C": "Venus"}
    assert bank[1].items[0].item_id == item_id("p", "s1", "How do volcanoes form?")
    copy = tmp_path / "copy.jsonl"
    write_bank(bank, copy)
    assert read_bank(copy) == bank


def test_malformed_banks_name_file_line_and_field(tmp_path):
    bad_header = write(tmp_path / "a.tsv", "qid\tquestion\nq1\tWhat?\n")
    with pytest.raises(InputError, match=r"a.tsv:1: header must name query_id and question"):
        read_bank(bad_header)
    missing = write(tmp_path / "b.tsv", "query_id\tquestion\nq1\tWhat?\nq2\n")
    with pytest.raises(InputError, match=r"b.tsv:3: expected 2 tab-separated columns \(query_id question\), found 1$"):
        read_bank(missing)
    answers = write(
        tmp_path / "c.jsonl", '{"query_id": "q", "items": [{"question_text": "Why?", "gold_answers": "yes"}]}\n'
    )
    with pytest.raises(InputError, match=r"c.jsonl:1: field 'items\[0\].gold_answers': expected a list of strings"):
        read_bank(answers)
    twice = write(tmp_path / "d.jsonl", '{"query_id": "q", "items": []}\n{"query_id": "q", "items": []}\n')
    with pytest.raises(InputError, match=r"d.jsonl:2: field 'query_id': second entry for query 'q'"):
        read_bank(twice)
    # an id with a space at its end is refused as in the queries file (it was trimmed in silence); a text is trimmed
    spaced = write(tmp_path / "e.tsv", "query_id\tfacet_id\tquestion\nq1\t\t What? \nq2 \t\tWhy?\n")
    with pytest.raises(InputError, match=r"e.tsv:3: field 'query_id': invalid id 'q2 ' \(no whitespace, no /\)$"):
        read_bank(spaced)
    assert read_bank(write(tmp_path / "f.tsv", "query_id\tquestion\nq1\t What? \n"))[0].items[0].text == "What?"


def test_a_hand_written_tsv_bank_may_leave_off_its_optional_cells_and_end_its_header_with_spaces(tmp_path):
    """Editors trim a line's trailing tabs and leave spaces after a header's last name: neither is an error."""
    edited = write(tmp_path / "a.tsv", "query_id\tquestion  \tanswers\nq1\tWhy?\nq1\tWho? \tBees | wasps\n")
    [entry] = read_bank(edited)
    assert [(item.text, item.gold_answers) for item in entry.items] == [("Why?", None), ("Who?", ["Bees", "wasps"])]
    faceted = write(tmp_path / "b.tsv", "query_id\tquestion\tfacet_id\nq1\tWhy?\nq1\tWho?\tf1\n")
    assert [(entry.facet_id, len(entry.items)) for entry in read_bank(faceted)] == [(None, 1), ("f1", 1)]
    # a required cell left off is still an error, and a header that names no column is shown as read
    with pytest.raises(InputError, match=r"c.tsv:2: expected 3 tab-separated columns \(query_id facet_id question"):
        read_bank(write(tmp_path / "c.tsv", "query_id\tfacet_id\tquestion\nq1\tf1\n"))
    with pytest.raises(InputError, match=r"d.tsv:1: header must name .*; it names 'query_id', 'question', ''$"):
        read_bank(write(tmp_path / "d.tsv", "query_id\tquestion\t\nq1\tWhy?\t\n"))
    old_mac = write(tmp_path / "g.tsv", "query_id\tquestion\rq1\tWhat?\r")
    with pytest.raises(InputError, match=r"g.tsv:1: header must name .* \(lines that end in a carriage return alone"):
        read_bank(old_mac)


def test_shards_are_hash_buckets_of_queries_and_cache_folders_safe_names():
    assert query_folder("tides") == "tides"
    assert query_folder("tqa2:L_0002") == "tqa2_L_0002-" + __import__("hashlib").md5(b"tqa2:L_0002").hexdigest()[:8]
    assert query_folder("a/b") != query_folder("a_b")
    # The bucket is md5(query id) modulo the number of shards, whatever else the bank holds.
    assert (
        shard_of("tides", 16)
        == f"shard-{int(__import__('hashlib').md5(b'tides').hexdigest(), 16) % 16:02d}"
        == "shard-13"
    )
    assert (
        shard_of("volcano", 16) == "shard-13"
        and shard_of("tides", 1) == "shard-0"
        and shard_of("tides", 100) == "shard-53"
    )
    bank = read_bank(DEMO / "bank.jsonl")
    table = bank_shard_table(bank, "shard-13", 16).to_pandas()
    assert set(table["query_id"]) == {"tides", "volcano"} and len(table[table["query_id"] == "volcano"]) == 15
    digests = shard_digests(bank, 16)
    bank[0].items[0].text = "Changed"  # a honeybee question
    changed = shard_digests(bank, 16)
    assert {name for name in digests if digests[name] != changed[name]} == {shard_of("honeybee", 16)}


@pytest.mark.parametrize(
    "shard, shards, names",
    [("shard-00", 1, "shard-0"), ("shard-7", 2, "shard-0 to shard-1"), ("foo", 16, "shard-00 to shard-15"),
     ("shard-3", 16, "shard-00 to shard-15"), ("shard-10", 10, "shard-0 to shard-9")],
)  # fmt: skip
def test_a_shard_name_that_is_no_bucket_is_refused(tmp_path, capsys, shard, shards, names):
    """It would select no query: an empty table and exit 0, and a bucket of questions never graded."""
    out = tmp_path / "shard.parquet"
    options = ["--shard", shard, "--shards", str(shards)]
    bank = ["bank-shard", "--bank", str(DEMO / "bank.jsonl"), "--queries", str(DEMO / "queries.jsonl")]
    pool = ["pool-shard", "--passages", "absent.parquet", "--queries", "absent.parquet", "--out-queries",
            str(tmp_path / "queries.parquet")]  # fmt: skip
    for command in ([*bank, "--out", str(out)], [*pool, "--out-passages", str(out)]):
        assert main([*command, *options]) == 2 and not out.exists()
        assert capsys.readouterr().err == (
            f"examflow: error: --shard: {shard!r} is not a bucket of --shards {shards}: the names are {names}\n"
        )


def test_a_grade_job_given_two_buckets_tables_refuses_them(tmp_path, capsys):
    """By hand, the passages of one bucket and the questions of another had no pair in common: the job
    wrote an empty grades table and exit 0 (`nothing to grade`)."""
    pool, shards = tmp_path / "pool", tmp_path / "shards"
    run = sorted((DEMO / "runs").iterdir())[0]
    assert main(["pool", "--queries", str(DEMO / "queries.jsonl"), "--runs", str(run), "--corpus",
                 str(DEMO / "corpus.tsv"), "--out", str(pool)]) == 0  # fmt: skip
    for shard in ("shard-0", "shard-1"):
        assert main(["pool-shard", "--passages", str(pool / "passages.parquet"), "--queries", str(pool / "queries.parquet"),
                     "--shard", shard, "--shards", "2", "--out-passages", str(shards / f"{shard}.passages.parquet"),
                     "--out-queries", str(shards / f"{shard}.queries.parquet")]) == 0  # fmt: skip
        assert main(["bank-shard", "--bank", str(DEMO / "bank.jsonl"), "--queries", str(DEMO / "queries.jsonl"),
                     "--shard", shard, "--shards", "2", "--out", str(shards / f"{shard}.questions.parquet")]) == 0  # fmt: skip
    capsys.readouterr()
    method = json.dumps({"name": "m", "kind": "self_rating", "backend": {"kind": "embedding"}})
    out = tmp_path / "grades.parquet"
    assert main(["grade", "--method", method, "--passages", str(shards / "shard-0.passages.parquet"), "--queries",
                 str(shards / "shard-0.queries.parquet"), "--questions", str(shards / "shard-1.questions.parquet"),
                 "--shard", "shard-0", "--cache-dir", str(tmp_path / "cache"), "--out", str(out)]) == 2  # fmt: skip
    assert capsys.readouterr().err.endswith(
        f"error: {shards / 'shard-1.questions.parquet'}: --questions is the table of shard-1 (of 2 buckets), not of "
        "--shard shard-0\n"
    )
    assert not out.exists()
    tables = {name: str(shards / f"shard-1.{name}.parquet") for name in ("queries", "passages", "questions")}
    check_one_bucket(tables, "shard-1")
    check_one_bucket({"--passages": str(pool / "passages.parquet"), "--questions": tables["questions"]}, "shard-1")
    # shard-0 of 1 holds every query, shard-0 of 2 some: one name, two bucketings
    assert main(["bank-shard", "--bank", str(DEMO / "bank.jsonl"), "--queries", str(DEMO / "queries.jsonl"),
                 "--shard", "shard-0", "--shards", "1", "--out", str(shards / "all.parquet")]) == 0  # fmt: skip
    mixed = {"--passages": str(shards / "shard-0.passages.parquet"), "--questions": str(shards / "all.parquet")}
    with pytest.raises(InputError, match=r"all.parquet: --questions is the table of shard-0 of 1 buckets, --passages of "
                       r"shard-0 of 2: give one bucket's tables, made with one --shards$"):  # fmt: skip
        check_one_bucket(mixed, "shard-0")


def test_a_bank_given_in_part_or_twice_is_refused(tmp_path, capsys):
    """By hand, `evaluate --questions` given one of two bank shards left the other's queries out of the exam
    with a warning: every run scored over the rest, exit 0 (a stranger's trial). Each command that reads the
    whole bank (evaluate, plan, report) refuses a bucket left out that holds questions, one given twice, and
    two --shards' tables; a bucket without questions, which the workflow grades in no job, may be left out."""
    pool, shards = tmp_path / "pool", tmp_path / "bank"
    runs = [str(path) for path in sorted((DEMO / "runs").iterdir())]
    assert main(["pool", "--queries", str(DEMO / "queries.jsonl"), "--runs", *runs, "--corpus", str(DEMO / "corpus.tsv"),
                 "--out", str(pool)]) == 0  # fmt: skip
    holding = {shard_of(entry.query_id, 16) for entry in read_bank(DEMO / "bank.jsonl")}
    assert 1 < len(holding) < 16  # the demo's six queries: some buckets hold none
    named = [f"shard-{b:02d}" for b in range(16)]
    for shard in [*named, "shard-0"]:
        count = "1" if shard == "shard-0" else "16"
        assert main(["bank-shard", "--bank", str(DEMO / "bank.jsonl"), "--queries", str(DEMO / "queries.jsonl"),
                     "--shard", shard, "--shards", count, "--out", str(shards / count / f"{shard}.parquet")]) == 0  # fmt: skip
    method = json.dumps({"name": "m", "kind": "self_rating", "backend": {"kind": "embedding"}})

    def plan(*tables: str, count: str = "16") -> str:
        capsys.readouterr()
        code = main(["plan", "--pool", str(pool), "--method", method, "--cache-dir", str(tmp_path / "cache"),
                     "--shards", count, "--questions", *[str(shards / table) for table in tables]])  # fmt: skip
        said = capsys.readouterr()
        return "ran" if code == 0 else said.err.strip().removeprefix("examflow: error: ")

    left_out = sorted(holding)[-1]
    some = [f"16/{shard}.parquet" for shard in sorted(holding) if shard != left_out]
    assert plan(*some) == (f"--questions: the bank's {left_out} of --shards 16 holds questions and is not given: give "
                           "every table `examflow bank-shard` wrote with that --shards")  # fmt: skip
    assert plan(*some, f"16/{left_out}.parquet") == "ran"  # the buckets that hold questions, as the workflow gives them
    assert plan(*[f"16/{shard}.parquet" for shard in named]) == "ran"
    assert plan(*some, f"16/{left_out}.parquet", some[0]) == (
        f"{shards / some[0]}: --questions gives {some[0][3:-8]} twice (also as {shards / some[0]})"
    )
    assert plan("1/shard-0.parquet", some[0]) == (
        f"{shards / some[0]}: --questions: {some[0][3:-8]} of --shards 16, where {shards / '1/shard-0.parquet'} is "
        "shard-0 of --shards 1: give the tables of one --shards"
    )
    assert plan("1/shard-0.parquet", count="1") == "ran"
    assert plan("1/shard-0.parquet") == (  # the plan's own --shards, another count: its jobs would be miscounted
        f"{shards / '1/shard-0.parquet'}: --questions: a bucket of --shards 1, not of --shards 16: give the --shards "
        "the bank's shards were made with"
    )


@needs_reference("every published bank shards as before against its queries", bool(REFERENCE_BANKS))
@pytest.mark.parametrize("path", REFERENCE_BANKS, ids=lambda p: str(p.relative_to(REFERENCE)))
def test_reference_banks_shard_as_before_against_their_queries(path, tmp_path):
    """DL banks name queries of the published query files; every CAR bank names sections (facets) of
    the pages of the EXAM++ question bank, which is what a pages file from the CAR outlines holds."""
    if "car" in path.name:
        pages: dict[str, list[str]] = {}
        for entry in read_bank(REFERENCE / "exam_plusplus/phase1-data/car-questions.jsonl.gz"):
            pages.setdefault(entry.query_id, []).append(entry.facet_id)
        lines = [
            {"query_id": q, "text": q, "subtopics": [{"facet_id": f, "text": f} for f in fs]} for q, fs in pages.items()
        ]
        queries = write(tmp_path / "pages.jsonl", "".join(json.dumps(line) + "\n" for line in lines))
    else:
        queries = REFERENCE / f"rubric-evaluation/phase1-data/{path.name[:4]}-queries.json"
    bank = read_bank(path)
    shard = shard_of(bank[0].query_id, 16)
    out = tmp_path / "shard.parquet"
    args = ["bank-shard", "--bank", str(path), "--queries", str(queries), "--shard", shard, "--shards", "16"]
    assert main([*args, "--out", str(out)]) == 0  # unknown queries and facets are errors by default
    before = bank_shard_table(bank, shard, 16)  # the table bank-shard wrote before it read the queries
    write_tables({tmp_path / "before.parquet": before})
    assert len(before) > 0 and pd.read_parquet(out).equals(pd.read_parquet(tmp_path / "before.parquet"))


def test_bank_diff_reports_added_removed_and_reworded(tmp_path):
    old = read_bank(DEMO / "bank.jsonl")
    text = (DEMO / "bank.jsonl").read_text()
    text = text.replace("Why does honey not spoil?", "Why does honey never spoil?")  # similar: reworded
    text = text.replace("What is osteomalacia?", "Which vitamin D level counts as deficient?")  # same place: reworded
    new_path = write(tmp_path / "new.jsonl", text)
    new = read_bank(new_path)
    del new[1].items[0]  # tides: removed
    new[2].items.append(
        type(new[2].items[0])("sourdough", None, item_id("sourdough", None, "Is rye better?"), "Is rye better?")
    )
    changes = diff_banks(old, new)
    assert {key[0]: (len(c.added), len(c.removed), len(c.reworded)) for key, c in changes.items()} == {
        "honeybee": (0, 0, 1),
        "tides": (0, 1, 0),
        "sourdough": (1, 0, 0),
        "vitamin-d": (0, 0, 1),
    }
    report = format_diff(changes)
    assert "  ~ Why does honey not spoil?\n    → Why does honey never spoil?" in report
    assert "  + Is rye better?" in report and "  - Which body has the greatest influence" in report


def test_bank_diff_command(tmp_path):
    new = write(
        tmp_path / "new.jsonl",
        (DEMO / "bank.jsonl").read_text().replace("What is a hotspot volcano?", "What is a mantle plume?"),
    )
    result = subprocess.run(
        [sys.executable, "-m", "examflow", "bank-diff", str(DEMO / "bank.jsonl"), str(new)],
        capture_output=True,
        text=True,
    )
    assert result.returncode == 0
    assert (
        result.stdout
        == "volcano / formation: 0 added, 0 removed, 1 reworded\n  ~ What is a hotspot volcano?\n    → What is a mantle plume?\n"
    )


def test_a_nugget_bank_edit_is_diffed_like_questions_and_a_new_importance_is_re_rated(tmp_path):
    """A TSV nugget bank: a reworded nugget, a removed one, and one whose importance changed (re-rated: its
    grades stand, the weighted scores change)."""
    old = write(tmp_path / "old.tsv", "query_id\tnugget\timportance\nq1\tBees make honey from nectar\tvital\n"
                "q1\tHoney keeps for years\tokay\nq1\tWax comes from glands\tokay\n")  # fmt: skip
    new = write(tmp_path / "new.tsv", "query_id\tnugget\timportance\nq1\tBees make honey out of nectar\tokay\n"
                "q1\tHoney keeps for years\tvital\n")  # fmt: skip
    result = subprocess.run(
        [sys.executable, "-m", "examflow", "bank-diff", str(old), str(new)], capture_output=True, text=True
    )
    assert result.returncode == 0, result.stderr
    assert result.stdout == (
        "q1: 0 added, 1 removed, 1 reworded, 1 re-rated\n  - Wax comes from glands\n"
        "  ~ Bees make honey from nectar\n    → Bees make honey out of nectar (vital → okay)\n"
        "  ! Honey keeps for years: (okay → vital)\n"
    )


def test_a_nugget_tsv_may_name_its_text_column_text_beside_nugget_ids(tmp_path):
    """`query_id, nugget_id, text, importance`: the nuggets, their ids scoped to the query."""
    path = write(tmp_path / "n.tsv", "query_id\tnugget_id\ttext\timportance\nq1\t1\tBees make honey\tvital\n"
                 "q1\t2\tWax\tokay\n")  # fmt: skip
    (entry,) = read_bank(path)
    assert [(i.item_id, i.text, i.importance, i.kind) for i in entry.items] == [
        ("q1/1", "Bees make honey", "vital", "nugget"), ("q1/2", "Wax", "okay", "nugget")]  # fmt: skip
    with pytest.raises(InputError, match="header must name query_id and question"):
        read_bank(write(tmp_path / "q.tsv", "query_id\ttext\nq1\tBees\n"))  # `text` alone names nothing


def test_trec_autojudge_nuggetizer_banks_are_read_with_their_extra_fields(tmp_path):
    """AutoJudge's `NuggetizerNuggetBanks` line: nuggetizer's `qid, query, nuggets` with `full_query`, and each
    nugget's `reasoning`, `trace`, `assignment` (kept); its `failed` importance is no rating (an error)."""
    nugget = {"text": "Bees make honey from nectar", "reasoning": "core", "trace": None, "importance": "vital",
              "assignment": "support"}  # fmt: skip
    line = {"query": "how bees make honey", "qid": "q1", "full_query": "how do bees make honey?", "nuggets": [nugget]}
    path = write(tmp_path / "bank.jsonl", json.dumps(line) + "\n")
    (entry,) = read_bank(path)
    (item,) = entry.items
    assert (entry.query_id, entry.query_text, entry.extra) == (
        "q1",
        "how bees make honey",
        {"full_query": line["full_query"]},
    )
    assert (item.kind, item.text, item.importance, item.item_id) == (
        "nugget",
        nugget["text"],
        "vital",
        item_id("q1", None, nugget["text"]),
    )
    assert item.extra == {"reasoning": "core", "trace": None, "assignment": "support"}
    write_bank([entry], tmp_path / "again.jsonl")
    assert read_bank(tmp_path / "again.jsonl") == [entry]  # lossless through examflow's own format
    failed = write(
        tmp_path / "failed.jsonl", json.dumps({**line, "nuggets": [{**nugget, "importance": "failed"}]}) + "\n"
    )
    with pytest.raises(InputError, match=r"failed.jsonl:1: field 'nuggets\[0\].importance': expected vital or okay"):
        read_bank(failed)


def stored_id_bank(path, items: list[tuple[str, str]]):
    """A hand-written bank in the current format whose items keep the ids written in it."""
    record = {
        "query_id": "glacier",
        "items": [{"question_id": i, "question_text": t, "keep_id": True} for i, t in items],
    }
    return read_bank(write(path, json.dumps(record) + "\n"))


def test_bank_diff_goes_by_text_whatever_the_stored_ids_say(tmp_path):
    old = stored_id_bank(
        tmp_path / "old.jsonl",
        [("g/1", "What is ice?"), ("g/2", "Why do glaciers move?"), ("g/3", "How old is the ice sheet?"),
         ("g/4", "Where is it?")],
    )  # fmt: skip
    new = stored_id_bank(
        tmp_path / "new.jsonl",
        [("g/1", "What is ice?"), ("g/9", "How old is the ice sheet?"), ("g/5", "Who first measured glacier speed?"),
         ("g/2", "What makes a slab of frozen water slide over bedrock?")],
    )  # fmt: skip
    [change] = diff_banks(old, new).values()
    # g/1: same id, same text; "How old ...": same text under a new id -> both unchanged.
    assert [(a.item_id, a.text, b.item_id, b.text) for a, b in change.reworded] == [
        ("g/2", "Why do glaciers move?", "g/2", "What makes a slab of frozen water slide over bedrock?")
    ]
    assert [i.item_id for i in change.removed] == ["g/4"] and [i.item_id for i in change.added] == ["g/5"]
    result = subprocess.run(
        [sys.executable, "-m", "examflow", "bank-diff", str(tmp_path / "old.jsonl"), str(tmp_path / "new.jsonl")],
        capture_output=True,
        text=True,
    )
    assert result.returncode == 0, result.stderr
    assert result.stdout == (
        "glacier: 1 added, 1 removed, 1 reworded\n  + Who first measured glacier speed?\n  - Where is it?\n"
        "  ~ Why do glaciers move?\n    → What makes a slab of frozen water slide over bedrock?\n"
    )
    assert diff_banks(old, stored_id_bank(tmp_path / "same.jsonl", [(i.item_id, i.text) for i in old[0].items])) == {}


@needs_reference("a reworded question of the published DL 2019 bank is seen")
def test_a_reworded_question_of_the_published_dl19_bank_is_seen_by_diff_and_impact(tmp_path):
    from examflow.evaluation.impact import question_changes

    published = REFERENCE / "flan-t5-exam-appendix/dl19-questions/dl19-genq.jsonl.gz"
    lines = gzip.open(published, "rt", encoding="utf-8").read().splitlines()
    record = json.loads(lines[0])
    before = record["questions"][3]["question_text"]
    after = "Which certificates does the job ask for?"  # not similar, so only the stored id pairs them
    record["questions"][3]["question_text"] = after
    edited = tmp_path / "dl19-edited.jsonl.gz"
    with gzip.open(edited, "wt", encoding="utf-8") as out:
        out.write("\n".join([json.dumps(record), *lines[1:]]) + "\n")
    question_id = record["questions"][3]["question_id"]
    result = subprocess.run(
        [sys.executable, "-m", "examflow", "bank-diff", str(published), str(edited)], capture_output=True, text=True
    )
    assert result.returncode == 0, result.stderr
    assert result.stdout == f"{record['query_id']}: 0 added, 0 removed, 1 reworded\n  ~ {before}\n    → {after}\n"
    old, new = (bank_shard_table(read_bank(path), "shard-0", 1).to_pandas() for path in (published, edited))
    changes = question_changes(old, new)
    assert changes[
        ["change", "question_id", "question_text", "old_question_id", "old_question_text"]
    ].values.tolist() == [["reworded", question_id, after, question_id, before]]


def test_an_edit_of_spaces_at_a_question_s_ends_or_of_its_answer_key_is_a_change(tmp_path):
    """The id of `q/md5` ignores spaces at the text's ends, the model reads them; an answer key decides which
    answers are correct. Both edits regrade or recheck, and bank-diff said "no changes" (a stranger's trial)."""

    def bank(path, wax: str, nectar: list[str]):
        items = [{"question_text": wax, "gold_answers": ["yes"]}, {"question_text": "What is nectar?",
                                                                   "gold_answers": nectar}]  # fmt: skip
        path.write_text(json.dumps({"query_id": "q1", "facet_id": None, "items": items}) + "\n")
        return read_bank(path)

    old = bank(tmp_path / "old.jsonl", "Is wax made by bees? ", ["sugar water"])
    new = bank(tmp_path / "new.jsonl", "Is wax made by bees?", ["sugary juice"])
    [change] = diff_banks(old, new).values()
    assert [(a.text, b.text) for a, b in change.reworded] == [("Is wax made by bees? ", "Is wax made by bees?")]
    assert [(a.gold_answers, b.gold_answers) for a, b in change.rekeyed] == [(["sugar water"], ["sugary juice"])]
    assert format_diff(diff_banks(old, new)) == (
        "q1: 0 added, 0 removed, 1 reworded, 1 re-keyed\n"
        "  ~ Is wax made by bees? \n    → Is wax made by bees?\n"
        "  ! What is nectar?: sugar water → sugary juice\n"
    )


def test_a_repeated_question_is_dropped_with_a_warning_that_names_it(tmp_path, caplog):
    path = tmp_path / "bank.jsonl"
    items = [
        {"question_text": "Who makes wax?"},
        {"question_text": "What is nectar?"},
        {"question_text": "Who makes wax?"},
    ]
    path.write_text(json.dumps({"query_id": "q1", "facet_id": None, "items": items}) + "\n")
    [entry] = read_bank(path)
    assert [item.text for item in entry.items] == ["Who makes wax?", "What is nectar?"]
    wax = item_id("q1", None, "Who makes wax?")
    assert (
        "1 repeated item dropped (the same text for the same query as an earlier item; first: line 1, items[2], repeats items[0] there, "
        f"'Who makes wax?' of query 'q1', id {wax})" in caplog.text
    )


def test_a_repeated_question_of_an_autojudge_bank_is_named_by_its_place(tmp_path, caplog):
    """It read `line 1, nugget_bank, repeats nugget_bank there` (a reviewer's trial); a subtopic's question
    is counted in the line's list, not in its subtopic's."""
    path = tmp_path / "v3.jsonl"
    bank = [{"question": "Who makes wax?"}, {"question": "Where?", "metadata": {"facet_id": "f1"}},
            {"question": "What is nectar?"}, {"question": "Who makes wax? "}]  # fmt: skip
    path.write_text(json.dumps({"query_id": "q1", "format_version": "v3", "nugget_bank": bank}) + "\n")
    entries = read_bank(path)
    assert [[item.text for item in entry.items] for entry in entries] == [
        ["Who makes wax?", "What is nectar?"],
        ["Where?"],
    ]
    assert "first: line 1, nugget_bank[3], repeats nugget_bank[0] there, 'Who makes wax? ' of query 'q1'" in caplog.text


def test_repeated_questions_of_a_tsv_bank_are_named_at_their_lines(tmp_path, caplog):
    """The warning named the item, not where it is: a stranger looked for it in the file."""
    tsv = write(tmp_path / "bank.tsv", "query_id\tquestion\nq1\tWho makes wax?\nq2\tWhat is nectar?\n"
                "q1\tWho makes wax? \nq2\tWhat is nectar?\n")  # fmt: skip
    assert [[item.text for item in entry.items] for entry in read_bank(tsv)] == [
        ["Who makes wax?"],
        ["What is nectar?"],
    ]
    wax = item_id("q1", None, "Who makes wax?")
    assert caplog.messages == [
        f"{tsv}: 2 repeated items dropped (the same text for the same query as an earlier item; first: line 4 repeats "
        f"line 2, 'Who makes wax?' of query 'q1', id {wax})"
    ]


def test_a_repeated_question_with_other_answer_keys_is_an_error_not_a_key_dropped(tmp_path):
    """A second line meant to add an answer lost it, with a warning that said nothing of keys: for
    `qa_verify` another answer would count as correct (a stranger's trial)."""
    tsv = write(tmp_path / "bank.tsv", "query_id\tquestion\tanswers\nq1\tWhat is honey?\tfood\n"
                "q1\tWhat is nectar?\tsugar water\nq1\tWhat is honey? \tsugar\n")  # fmt: skip
    with pytest.raises(
        InputError,
        match=r"^.*bank.tsv:4: field 'answers': 'What is honey\?' repeats the item of line 2 with other answer keys "
        r"\(\['food'\] there\): write the item once, with all its answers$",
    ):
        read_bank(tsv)
    items = [{"question_text": "Who?", "choices": {"A": "bees"}}, {"question_text": "Who?", "choices": {"A": "ants"}}]
    with pytest.raises(InputError, match=r"bank.jsonl:1: field 'items\[1\].choices': 'Who\?' repeats the item "
                       r"of line 1 with other choices \(\{'A': 'bees'\} there\)"):  # fmt: skip
        read_bank(write(tmp_path / "bank.jsonl", json.dumps({"query_id": "q1", "items": items}) + "\n"))
    same = write(
        tmp_path / "same.tsv", "query_id\tquestion\tanswers\nq1\tWhat is honey?\tfood\nq1\tWhat is honey?\tfood\n"
    )
    assert [item.gold_answers for item in read_bank(same)[0].items] == [["food"]]  # a plain repeat: dropped
    swapped = write(tmp_path / "swapped.tsv", "query_id\tquestion\tanswers\nq1\tWhy?\ta | b\nq1\tWhy?\tb | a\n")
    assert [item.gold_answers for item in read_bank(swapped)[0].items] == [["a", "b"]]  # the same answers
    flat = [{"query_id": "q1", "qid": "q1/a", "question": "Why?", "correct": answer} for answer in ("heat", "cold")]
    with pytest.raises(InputError, match=r"flat.jsonl:2: field 'correct': 'Why\?' repeats the item of line 1"):
        read_bank(write(tmp_path / "flat.jsonl", "".join(json.dumps(r) + "\n" for r in flat)))
    v3 = {"query_id": "q1", "format_version": "v3", "nugget_bank": [{"question": "Who?", "answers": ["bees"]},
                                                                     {"question": "Who?", "answers": ["ants"]}]}  # fmt: skip
    with pytest.raises(InputError, match=r"v3.jsonl:1: field 'nugget_bank\[1\]': 'Who\?' repeats the item of line 1 "
                       r"with other answer keys"):  # fmt: skip
        read_bank(write(tmp_path / "v3.jsonl", json.dumps(v3) + "\n"))


def test_an_id_of_two_queries_or_two_texts_is_an_error_not_a_question_dropped(tmp_path, caplog):
    """An older bank numbering each query's questions `x0, x1, ...`: every query's after the first lost its
    questions as "repeated", in a warning, and the run scored one query of six (a stranger's trial)."""

    def line(query: str, key: str, questions: list[tuple[str, str]]) -> str:
        return json.dumps({"query_id": query, key: [{"question_id": i, "question_text": t} for i, t in questions]})

    older = write(tmp_path / "older.jsonl", line("q1", "questions", [("x0", "Why does magma rise?")]) + "\n"
                  + line("q2", "questions", [("x1", "What is a tide?"), ("x0", "What pulls the oceans?")]) + "\n")  # fmt: skip
    with pytest.raises(
        InputError,
        match=r"older.jsonl:2: field 'questions\[1\].question_id': id 'x0' is already that of 'Why does magma rise\?' "
        r"of query 'q1' \(line 1\): an id names one item of the bank",
    ):
        read_bank(older)
    flat = [{"query_id": q, "qid": "q1/a", "question": t} for q, t in (("q1", "Why?"), ("q2", "How?"))]
    with pytest.raises(
        InputError, match=r"flat.jsonl:2: field 'qid': id 'q1/a' is already that of 'Why\?' of query 'q1'"
    ):
        read_bank(write(tmp_path / "flat.jsonl", "".join(json.dumps(r) + "\n" for r in flat)))
    kept = [{"question_id": "k", "question_text": t, "keep_id": True} for t in ("Why?", "How?")]
    with pytest.raises(InputError, match=r"kept.jsonl:1: field 'items\[1\].question_id': id 'k' is already"):
        read_bank(write(tmp_path / "kept.jsonl", json.dumps({"query_id": "q", "items": kept}) + "\n"))
    # ids hash the stripped text: the same question with a trailing space, or two blank items, are one question
    spaced = [{"question_text": t} for t in ("What is X?", "What is X? ", "", "  ")]
    caplog.set_level(logging.WARNING)
    [entry] = read_bank(write(tmp_path / "spaced.jsonl", "\n" + json.dumps({"query_id": "q", "items": spaced}) + "\n"))
    assert [item.text for item in entry.items] == ["What is X?", ""]
    # a blank item is kept, as the published banks count it, and said where (a stranger graded an empty question)
    assert "spaced.jsonl: 2 items with blank text, kept: graded and counted in their query's number of " \
           "questions, as in the published banks (the first: line 2, query 'q'); a bank of your own should leave " \
           "them out" in caplog.text  # fmt: skip
    # the same question twice for one query stays one question (test above); the older ids stay as written
    same = write(tmp_path / "same.jsonl", line("q1", "questions", [("x0", "Why?"), ("x0", "Why?")]) + "\n"
                 + line("q2", "questions", [("y0", "Why?")]) + "\n")  # fmt: skip
    assert [[item.item_id for item in entry.items] for entry in read_bank(same)] == [["x0"], ["y0"]]


def test_a_column_named_twice_or_two_lists_of_items_are_errors(tmp_path):
    """The last `answers` cell won (an answer key lost); `questions` beside `items` was dropped in silence."""
    header = write(tmp_path / "h.tsv", "query_id\tquestion\tanswers\tanswers\nq1\tWhat is magma?\tmolten rock\t\n")
    with pytest.raises(InputError, match=r"h.tsv:1: the column 'answers' is named twice"):
        read_bank(header)
    texts = write(tmp_path / "t.tsv", "query_id\tnugget_id\ttext\ttext\nq1\tn1\tMagma\tLava\n")
    with pytest.raises(InputError, match=r"t.tsv:1: the column 'text' is named twice"):  # as written, not `nugget`
        read_bank(texts)
    both = {"query_id": "q1", "items": [{"question_text": "What is magma?"}], "questions": [{"question_text": "Lava?"}]}
    with pytest.raises(InputError, match=r"b.jsonl:1: field 'questions': both items and questions"):
        read_bank(write(tmp_path / "b.jsonl", json.dumps(both) + "\n"))


def test_a_v3_question_keyed_by_another_text_is_graded_by_its_own_with_a_warning(tmp_path, caplog):
    """AutoJudge keys a v3 bank's questions by their text; one edited in one place only was read in silence."""
    bank = {"What is magma?": {"question": "What is lava?", "answers": {}},
            "Why do volcanoes erupt?": {"question": "Why do volcanoes erupt?", "answers": {}}}  # fmt: skip
    path = write(tmp_path / "v3.jsonl", json.dumps({"query_id": "q1", "format_version": "v3", "nugget_bank": bank}))
    [entry] = read_bank(path)
    assert [item.text for item in entry.items] == ["What is lava?", "Why do volcanoes erupt?"]
    assert (
        "v3.jsonl:1: 1 question keyed by another text than its `question`, which is graded (first: key "
        "'What is magma?', question 'What is lava?')" in caplog.text
    )


def test_a_query_entry_without_items_holds_no_questions(tmp_path):
    """A JSONL entry of q2 with `items: []`: its bucket (shard-07) gets no table and no grading job in the
    workflow, yet q1's table named it among the buckets holding questions, and the evaluation refused the
    bank as given in part."""
    queries = write(tmp_path / "queries.tsv", "q1\tglaciers\nq2\tsky\n")
    item = {"query_id": "q1", "facet_id": None, "question_id": "a", "question_text": "Why?", "kind": "question"}
    entries = [{"query_id": "q1", "facet_id": None, "items": [item]}, {"query_id": "q2", "facet_id": None, "items": []}]
    bank = write(tmp_path / "bank.jsonl", "".join(json.dumps(entry) + "\n" for entry in entries))
    assert (shard_of("q1", 16), shard_of("q2", 16)) == ("shard-10", "shard-07")
    out = tmp_path / "shard-10.parquet"
    assert main(["bank-shard", "--bank", str(bank), "--queries", str(queries), "--shard", "shard-10", "--shards", "16",
                 "--out", str(out)]) == 0  # fmt: skip
    check_every_bucket("--questions", [str(out)])  # the one bucket that holds questions is given
    assert "shard-07" not in shard_digests(read_bank(bank), 16)


@pytest.mark.parametrize(
    ("cells", "message"),
    [("x | | y\t", "field 'answers': an empty value in 'x | | y' (values are separated by `|`)"),
     (" | \t", "field 'answers': an empty value in '|'"),
     ("x |\t", "field 'answers': an empty value in 'x |'"),
     ("\tbees | bees", "field 'choices': choice 'bees' twice: two keys for one answer")],
)  # fmt: skip
def test_an_empty_value_or_a_choice_twice_in_a_tsv_cell_is_an_error(tmp_path, cells, message):
    """`x | | y` was read as two answers and ` | ` as none, `bees | bees` as choices A and B of one text, in
    silence (a stranger's trial): an answer left out, or a key too many."""
    tsv = write(tmp_path / "bank.tsv", f"query_id\tquestion\tanswers\tchoices\nq1\tWho?\t{cells}\n")
    with pytest.raises(InputError, match=re.escape(f"bank.tsv:2: {message}")):
        read_bank(tsv)
    blank = write(tmp_path / "blank.tsv", "query_id\tquestion\tanswers\tchoices\nq1\tWho?\t  \t\n")
    assert [(item.gold_answers, item.choices) for item in read_bank(blank)[0].items] == [(None, None)]


def test_the_provenance_of_a_bank_is_its_items_and_a_generated_bank_s_generator(tmp_path):
    """provenance.json named no bank: a generated one's model and prompt were in no record of the run (a
    stranger's trial). Its digest is of the items: the same bank in another format, or generated again at
    another time, is the same bank; an edit is another."""
    from examflow.summary import bank_provenance

    tsv = write(tmp_path / "bank.tsv", "query_id\tquestion\nq1\tWhy?\nq2\tHow?\n")
    exported = tmp_path / "bank.jsonl"
    write_bank(read_bank(tsv), exported)
    assert bank_provenance(str(tsv)) == bank_provenance(str(exported))
    assert bank_provenance(str(tsv))["items"] == 2 and bank_provenance(str(tsv))["generated_by"] == []
    edited = write(tmp_path / "edited.tsv", "query_id\tquestion\nq1\tWhy not?\nq2\tHow?\n")
    assert bank_provenance(str(edited))["sha256"] != bank_provenance(str(tsv))["sha256"]

    def generated(at: str) -> str:
        info = {"generator": "examflow", "model": "m1", "prompt_template": "qgen", "generated_at": at}
        item = {"question_id": item_id("q1", None, "Why?"), "question_text": "Why?"}
        return json.dumps({"query_id": "q1", "facet_id": None, "info": info, "items": [item]}) + "\n"

    first, again = (
        write(tmp_path / "a.jsonl", generated("2026-01-01")),
        write(tmp_path / "b.jsonl", generated("2026-02-02")),
    )
    assert bank_provenance(str(first)) == bank_provenance(str(again))
    assert bank_provenance(str(first))["generated_by"] == [
        {"generator": "examflow", "model": "m1", "prompt_template": "qgen"}
    ]
