"""`ct2_seq2seq`: a T5 model (FLAN-T5) from Hugging Face run by CTranslate2, converted once.

CTranslate2 (https://opennmt.net/CTranslate2/) runs T5 in int8 on a CPU at 3.7 to 6.6 times the
float32 torch path, in every decoding measured (docs/performance.md). The model is converted from its Hugging Face
checkpoint (a hub id or a local folder) on first use, into the cache folder under the weights'
version, and loaded from there by every later job; the tokenizer and the prompts are examflow's
own (`PreparedBackend`), so the converted model reads the very token ids `hf_seq2seq` would.
Decodings are those of `hf_seq2seq`: beam search, greedy, and `fast` ratings read off the first
decoder step's logits of the digits 0–5.
"""

from __future__ import annotations

import copy
import re
import shutil
import tempfile
from collections.abc import Callable
from functools import cache
from pathlib import Path

import numpy

from examflow.errors import ConfigError
from examflow.grading.backends import (
    DIGITS,
    Answer,
    PreparedBackend,
    digit_ratings,
    load_tokenizer,
    loading,
    model_config,
    one_token_ids,
)
from examflow.grading.preparation import Preparer, Prompt
from examflow.grading.signatures import ctranslate2_signature, weights_version
from examflow.registry import BACKENDS

# How examflow converts (its T5 loader, below): a new value names new conversions, never reusing old ones.
CONVERSION = "c1"


class CTranslate2Backend(PreparedBackend):
    """An encoder-decoder by hub id or local folder, converted into `cache_dir` and run by CTranslate2."""

    def __init__(
        self,
        model: str,
        cache_dir: str | Path,
        decoding: str = "beam",
        batch_size: int = 16,
        max_input_tokens: int = 512,
        max_new_tokens: int = 32,
        num_beams: int = 5,
        device: str = "auto",
        compute_type: str = "auto",
        threads: int = 0,
        revision: str | None = None,
    ):
        import ctranslate2
        import torch

        self.torch, self.ctranslate2 = torch, ctranslate2
        where, index = _device(device, ctranslate2.get_cuda_device_count)
        on_gpu = where == "cuda"
        config = model_config(model, revision)
        if type(config).__name__ != "T5Config":  # its T5 loader is the one examflow has checked (below)
            raise ConfigError("backend.model", f"{model!r} is a {type(config).__name__}: ct2_seq2seq converts T5 "
                              "models (T5, T5 v1.1, FLAN-T5); hf_seq2seq runs any encoder-decoder")  # fmt: skip
        options = {"model": model, "revision": revision, "decoding": decoding, "num_beams": num_beams,
                   "max_new_tokens": max_new_tokens, "max_input_tokens": max_input_tokens,
                   "compute_type": compute_type}  # fmt: skip
        self.signature = ctranslate2_signature(options, on_gpu, config)
        folder = converted(model, revision, weights_version(model, config), Path(cache_dir))
        wanted = self.signature["compute_type"]
        try:
            self.translator = ctranslate2.Translator(
                str(folder), device=where, device_index=index, compute_type=wanted,
                intra_threads=threads or torch.get_num_threads(),
            )  # fmt: skip
        except ValueError as error:  # "Requested bfloat16 compute type, but the target device ... do not support"
            if "compute type" not in str(error):
                raise
            raise self._unsupported(wanted, where, str(error)) from None
        except RuntimeError as error:
            if "CUDA" not in str(error):  # not the device's fault: as it is
                raise
            raise ConfigError("backend.device", f"{device}: {str(error).strip()[:200]}") from None
        if self.translator.compute_type != wanted:  # the signature must say what runs
            raise self._unsupported(wanted, where, f"it would run {self.translator.compute_type}")
        self.tokenizer = load_tokenizer(model, revision)
        self.read_ids = one_token_ids(self.tokenizer, DIGITS, model) if decoding == "fast" else []
        # Its own tokenizer: the next chunk is prepared in a thread beside the model's work.
        self.preparer = Preparer(copy.deepcopy(self.tokenizer), max_input_tokens)
        self.decoding, self.batch_size, self.num_beams, self.max_new_tokens = (
            decoding, batch_size, num_beams, max_new_tokens
        )  # fmt: skip

    def _unsupported(self, wanted: str, where: str, why: str) -> ConfigError:
        offered = set(BACKENDS["ct2_seq2seq"].options["compute_type"].choices or ()) - {"auto"}
        supported = ", ".join(sorted(offered & set(self.ctranslate2.get_supported_compute_types(where))))
        return ConfigError("backend.compute_type", f"{wanted} is not supported on this {where.upper()} ({why}); "
                           f"this device supports {supported}")  # fmt: skip

    def answer_prepared(self, prompts: list[Prompt]) -> list[Answer]:
        if not prompts:
            return []
        source = [self.tokenizer.convert_ids_to_tokens(p.ids) for p in prompts]
        # CTranslate2 sorts the prompts by length into batches itself, and answers in input order; an
        # answer may end at once, as in transformers (CTranslate2's default is one token at least), and
        # a prompt is read whole: it fits the budget already (CTranslate2 would cut it at 1,024 tokens).
        options = {"max_batch_size": self.batch_size, "beam_size": 1, "min_decoding_length": 0, "max_input_length": 0}
        if self.decoding == "fast":
            found = self.translator.translate_batch(source, **options, max_decoding_length=1, return_logits_vocab=True)
            return digit_ratings(self.torch, self.torch.stack([self._digit_logits(f.logits[0][0]) for f in found]))
        if self.decoding == "beam":
            options["beam_size"] = self.num_beams
        found = self.translator.translate_batch(source, **options, max_decoding_length=self.max_new_tokens)
        ids = [self.tokenizer.convert_tokens_to_ids(f.hypotheses[0]) for f in found]
        return [Answer(text) for text in self.tokenizer.batch_decode(ids, skip_special_tokens=True)]

    def _digit_logits(self, step):
        """The digits' logits from one prompt's first step (a vocabulary-wide row, on the model's device
        and in its compute type), as float32 on the CPU."""
        ctranslate2 = self.ctranslate2
        row = step.to(ctranslate2.DataType.float32).to_device(ctranslate2.Device.cpu)
        return self.torch.from_numpy(numpy.asarray(row)).reshape(-1)[self.read_ids]


def _device(device: str, gpus: Callable[[], int]) -> tuple[str, int]:
    """CTranslate2's device and index: `cpu`, `cuda`, `cuda:N`, or `auto` (CUDA when `gpus()` sees one)."""
    kind, _, index = device.partition(":")
    if kind not in ("auto", "cpu", "cuda") or (index and (kind != "cuda" or not index.isdigit())):
        raise ConfigError("backend.device", f"{device!r}: ct2_seq2seq runs on `auto`, `cpu`, `cuda` or `cuda:N`")
    if kind == "auto":
        kind = "cuda" if gpus() > 0 else "cpu"
    return kind, int(index or 0)


def converted(model: str, revision: str | None, version: str, cache_dir: Path) -> Path:
    """The model's CTranslate2 conversion under `cache_dir/ctranslate2/`, made on first use. Jobs that
    convert at once each write a folder of their own and the first to finish is kept: none ever reads a
    half-written model."""
    import ctranslate2

    name = re.sub(r"[^A-Za-z0-9._-]+", "_", Path(model).name if Path(model).is_dir() else model)
    target = cache_dir / "ctranslate2" / f"{name}-{version}-ct2-{ctranslate2.__version__}-{CONVERSION}"
    if (target / "model.bin").is_file():
        return target
    target.parent.mkdir(parents=True, exist_ok=True)
    _register_t5_loader()
    with tempfile.TemporaryDirectory(dir=target.parent, prefix=".converting-") as scratch:
        written = Path(scratch) / "model"
        with loading(model):  # reads the weights, then writes the conversion (a full disk is the disk's)
            ctranslate2.converters.TransformersConverter(model, revision=revision).convert(str(written))
        try:
            written.rename(target)
        except OSError:  # another job's conversion got there first: the same weights, keep it
            if not (target / "model.bin").is_file():
                raise
            shutil.rmtree(written, ignore_errors=True)
    return target


@cache  # once a process: CTranslate2's table of loaders is the process's
def _register_t5_loader() -> None:
    """CTranslate2's T5 loader (4.x) scales the decoder's outputs by d_model^-0.5 when the configuration
    says `tie_word_embeddings`; transformers 5 says so of every T5 and keeps T5's own choice in
    `scale_decoder_outputs` (False for T5 v1.1 and FLAN-T5). Converted as it is, a FLAN-T5 would read
    logits d_model^0.5 times too flat: the same greedy answers, but other beams and expected grades.
    This loader, registered in CTranslate2's own table of loaders, reads the right attribute."""
    from ctranslate2.converters.transformers import T5Loader, register_loader
    from ctranslate2.specs import model_spec

    from examflow.grading.beam_search import scales_decoder_outputs

    @register_loader("T5Config")
    class T5OutputScaleLoader(T5Loader):
        def get_model_spec(self, model):
            spec = super().get_model_spec(model)
            config = model.config
            spec.decoder.scale_outputs = config.d_model**-0.5 if scales_decoder_outputs(config) else model_spec.OPTIONAL
            return spec
