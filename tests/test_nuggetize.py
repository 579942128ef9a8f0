"""Nugget banks created by an LLM as AutoNuggetizer creates them: the published creator and scorer prompts,
windows of ten documents and ten nuggets, answers read as nuggetizer reads them, failures that fail the
query (never a short bank), over real HTTP; and `examflow nuggets` on a pool."""

from __future__ import annotations

import ast
import json
import subprocess
import sys
from pathlib import Path

import pandas as pd
import pytest
from llm_server import LLMServer, Status

from examflow.io.tables import write_tables
from examflow.llm import LLMClient, LLMSettings
from examflow.questions.bank import read_bank
from examflow.questions.generate import GenerationError
from examflow.questions.nuggetize import create_nugget_banks, creator_prompt, parse_labels, parse_list, scorer_prompt

REFERENCE = Path(__file__).resolve().parents[2] / "shared" / "reference" / "nuggetizer" / "prompt_templates"


def client(server, tmp_path, **options) -> LLMClient:
    settings = {"model": "test-model", "base_url": server.base_url, "timeout": 2.0, "backoff": 0.05, "max_attempts": 2}
    return LLMClient(LLMSettings(**(settings | options)), tmp_path / "cache")


def test_prompts_render_as_nuggetizer_renders_them():
    """create_nugget_prompt: the window's documents `[i] text`, numbered from 1 in every window, the list so
    far as a Python list; create_score_prompt: the window's nuggets."""
    system, user = creator_prompt("bees", ["Bees fan nectar.", "Wax comes from glands."], ["Bees make honey"], 30)
    assert (
        "Search Query: bees\nContext:\n[1] Bees fan nectar.\n[2] Wax comes from glands.\nSearch Query: bees\n" in user
    )
    assert "Initial Nugget List: ['Bees make honey']\nInitial Nugget List Length: 1\n" in user
    assert "at most 30 nuggets" in user and user.endswith("Updated Nugget List:")
    scorer_system, scored = scorer_prompt("bees", ["Bees make honey", "Wax"])
    assert "label each of the 2 nuggets" in scored and "Nugget List: ['Bees make honey', 'Wax']\n" in scored
    if not REFERENCE.is_dir():
        pytest.skip(f"the published nuggetizer templates are not at {REFERENCE} (../shared/reference is absent)")
    import yaml

    creator = yaml.safe_load((REFERENCE / "creator_template.yaml").read_text())
    expected = creator["prefix_user"].format(query="bees", context="[1] Bees fan nectar.\n[2] Wax comes from glands.",
                                             nuggets=["Bees make honey"], nuggets_length=1, creator_max_nuggets=30)  # fmt: skip
    assert (system, user) == (creator["system_message"], expected)
    scorer = yaml.safe_load((REFERENCE / "scorer_template.yaml").read_text())
    expected = scorer["prefix_user"].format(query="bees", nuggets=["Bees make honey", "Wax"], num_nuggets=2)
    assert (scorer_system, scored) == (scorer["system_message"], expected)


@pytest.mark.parametrize(
    ("answer", "parsed"),
    [("['a', 'b']", ["a", "b"]), ("```python\n['a']\n```", ["a"]), ('["a"]', ["a"]), ("[]", []),
     ("Here: ['a']", None), ("['a', 1]", None), ("{'a': 1}", None), ("a, b", None)],
)  # fmt: skip
def test_a_list_is_read_as_nuggetizer_reads_it(answer, parsed):
    assert parse_list(answer) == parsed


def test_labels_are_vital_or_okay_one_a_nugget():
    assert parse_labels("['Vital', ' okay ']", 2) == ["vital", "okay"]
    assert parse_labels("['vital']", 2) is None  # nuggetizer would drop the second nugget
    assert parse_labels("['vital', 'failed']", 2) is None


def creator(prompt: str) -> str:
    """Each document's first two words join the list (once); labels: vital for a nugget starting with B."""
    if prompt.startswith("Update the list"):
        initial = ast.literal_eval(prompt.split("Initial Nugget List: ", 1)[1].split("\n", 1)[0])
        context = prompt.split("Context:\n", 1)[1].split("\nSearch Query:", 1)[0]
        words = [" ".join(line.split("] ", 1)[1].split()[:2]) for line in context.splitlines()]
        return repr(initial + [w for w in dict.fromkeys(words) if w not in initial])
    listed = ast.literal_eval(prompt.split("Nugget List: ", 1)[1].split("\n", 1)[0])
    return repr(["Vital" if n.startswith("B") else "okay" for n in listed])


def test_windows_of_ten_over_http_and_replayed_from_the_cache(tmp_path):
    """12 documents: two creator calls (10, then 2, the second given the first's list); 12 nuggets, capped at
    11: two scorer calls (10, then 1). An unparsable creator answer is asked again."""
    documents = [f"{'Bees' if i % 2 else 'Wax'} fact{i} more words" for i in range(12)]
    with LLMServer(default=creator) as server:
        server.script("[1] Wax fact0", "I would rather not.", creator(creator_prompt("q", documents[:10], [], 11)[1]))
        banks = create_nugget_banks([("q1", "q", documents)], client(server, tmp_path), attempts=2, max_nuggets=11)
        sent = server.calls
        again = create_nugget_banks([("q1", "q", documents)], client(server, tmp_path), attempts=2, max_nuggets=11)
        assert server.calls == sent == 1 + 1 + 1 + 2  # creator twice (once again), scorer twice
    (entry,) = banks
    texts = [item.text for item in entry.items]
    assert texts == [f"{'Bees' if i % 2 else 'Wax'} fact{i}" for i in range(11)]
    assert [item.importance for item in entry.items] == ["vital" if t.startswith("B") else "okay" for t in texts]
    assert [item.text for item in again[0].items] == texts


def test_a_final_list_left_empty_is_asked_again_and_raising_attempts_asks_past_it(tmp_path):
    """An empty list parsed, and the query failed after it ("the creator's list is empty") with the advice to
    raise `attempts`, which then asked nothing: each cached `[]` came back (a stranger's trial). The last window's
    list must hold a nugget, so it is asked again like an unparsable answer; an earlier window's may be empty."""
    documents = [f"Bees fact{i}" for i in range(12)]
    with LLMServer(default=creator) as server:
        server.script("[1] Bees fact0", "[]")  # the first window: nothing yet, a list to update
        server.script("[1] Bees fact10", "[]", "['  ']")  # the last: empty, then blank
        with pytest.raises(GenerationError) as failure:
            create_nugget_banks([("q1", "q", documents)], client(server, tmp_path), attempts=2)
        assert server.calls == 1 + 2  # the first window once, the last twice
        assert str(failure.value) == (
            "no nuggets for 1 of 1 queries:\n  q1: documents 11-20: 2 unparsable answers, the last: \"['  ']\" "
            "(asked for a Python list of nugget texts, at least one)\n(every answer is cached, so a rerun replays "
            "these: raise `attempts` (questions.attempts, --attempts) to ask again past them, or delete the cache's "
            "llm folder)"
        )
        server.script("[1] Bees fact10", "['Bees sting']")  # the server mended: attempt 3 is a new call
        (entry,) = create_nugget_banks([("q1", "q", documents)], client(server, tmp_path), attempts=3)
        assert server.calls == 3 + 1 + 1  # the third attempt, then the scorer
    assert [(item.text, item.importance) for item in entry.items] == [("Bees sting", "vital")]


def test_blank_and_repeated_nuggets_are_dropped_before_scoring(tmp_path):
    """A blank nugget would count in |Q|, a repeated one twice: the creator's list is stripped, blanks and
    repeats dropped (the first kept), before the scorer sees it."""
    with LLMServer(default=creator) as server:
        server.script("Update the list", '["A", "a ", "A", "", "  ", "B"]')
        (entry,) = create_nugget_banks([("q1", "q", ["doc"])], client(server, tmp_path))
        scored = server.requests[-1]["body"]["messages"][1]["content"]
    assert [item.text for item in entry.items] == ["A", "a", "B"]
    assert "Nugget List: ['A', 'a', 'B']\n" in scored and "label each of the 3 nuggets" in scored


def test_a_query_the_model_fails_fails_the_bank_naming_it(tmp_path):
    documents = ["Bees fan nectar"]
    with LLMServer(default=creator) as server:
        server.script("Search Query: bad\n", "no list here")  # the creator never answers with a list
        server.script("Search Query: short\nNugget List:", "['vital']")  # one label for two nuggets
        server.script("Search Query: down\n", Status(500))
        asked = [("q1", "bad", documents), ("q2", "short", ["Bees fan", "Wax melts"]), ("q3", "down", documents),
                 ("q4", "fine", documents), ("q5", "none", [])]  # fmt: skip
        with pytest.raises(GenerationError) as failure:
            create_nugget_banks(asked, client(server, tmp_path), attempts=2)
    message = str(failure.value)
    assert message.startswith("no nuggets for 4 of 5 queries:")
    # its one window is its last: the list it returns must hold a nugget
    assert "q1: documents 1-10: 2 unparsable answers, the last: 'no list here' (asked for a Python list of nugget " \
           "texts, at least one)" in message  # fmt: skip
    # a list of one label, where two nuggets were scored, reads as a list: the message says how many were asked
    assert "q2: nuggets 1-2: 2 unparsable answers, the last: \"['vital']\" (asked for a Python list of 2 labels, " \
           "each vital or okay)" in message  # fmt: skip
    assert "q3: documents 1-10: LLM call failed" in message
    assert "q5: no documents to create nuggets from" in message and "q4" not in message
    assert "every answer is cached, so a rerun replays these: raise `attempts`" in message


def pool(root: Path) -> Path:
    """A pool: q1 with three judged passages (labels 2, 0, 3) and a gold article, q2 without judgments."""
    folder = root / "pool dir"
    folder.mkdir()
    passages = pd.DataFrame({"query_id": ["q1", "q1", "q1", "q1", "q2"], "passage_id": ["p1", "p2", "p3", "g", "p4"],
                             "text": ["Bees fan nectar", "Tides rise", "Bees seal comb", "Gold text", "Lava flows"],
                             "origin": ["judged", "judged", "judged,retrieved", "gold", "retrieved"]})  # fmt: skip
    queries = pd.DataFrame([("q1", None, "bees", None), ("q2", None, "lava", None)],
                           columns=["query_id", "facet_id", "query_text", "facet_text"], dtype=object)  # fmt: skip
    judgments = pd.DataFrame({"query_id": ["q1"] * 3, "facet_id": [None, "f", None], "passage_id": ["p1", "p2", "p3"],
                              "relevance": [2, 0, 3]})  # fmt: skip
    write_tables({folder / "passages.parquet": passages, folder / "queries.parquet": queries,
                  folder / "judgments.parquet": judgments})  # fmt: skip
    return folder


def nuggets_command(server, tmp_path, folder: Path, *extra: str) -> subprocess.CompletedProcess:
    return subprocess.run(
        [sys.executable, "-m", "examflow", "nuggets", "--pool", str(folder), "--model", "m", "--base-url",
         server.base_url, "--cache-dir", str(tmp_path / "cache"), "--out", str(tmp_path / "bank.jsonl"), *extra],
        capture_output=True, text=True,
    )  # fmt: skip


def test_the_command_creates_from_judged_or_pooled_passages(tmp_path):
    folder = pool(tmp_path)
    with LLMServer(default=creator) as server:
        result = nuggets_command(server, tmp_path, folder)
        assert result.returncode == 0, result.stderr
        asked = [r["body"]["messages"][1]["content"] for r in server.requests]
        # judged relevant, best first (p3: 3, p1: 2); not p2 (0), not the gold article; q2 has none: warned
        assert "Context:\n[1] Bees seal comb\n[2] Bees fan nectar\nSearch" in asked[0]
        assert "1 query has no judged documents and gets no nuggets: q2" in result.stderr
        (entry,) = read_bank(tmp_path / "bank.jsonl")
        assert [(i.text, i.importance) for i in entry.items] == [("Bees seal", "vital"), ("Bees fan", "vital")]
        record = json.loads((tmp_path / "bank.jsonl").read_text())
        assert record["info"]["model"] == "m" and record["info"]["documents"] == 2
        again = nuggets_command(server, tmp_path, folder)
        assert again.returncode != 0 and "exists: the bank is generated once" in again.stderr
        (tmp_path / "bank.jsonl").unlink()
        every = nuggets_command(server, tmp_path, folder, "--documents", "pool")
        assert every.returncode == 0, every.stderr
        assert {e.query_id: [i.text for i in e.items] for e in read_bank(tmp_path / "bank.jsonl")} == {
            "q1": ["Bees fan", "Tides rise", "Bees seal"],
            "q2": ["Lava flows"],
        }
