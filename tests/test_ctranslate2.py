"""The `ct2_seq2seq` back end on tiny T5 checkpoints built here, converted by the real CTranslate2:
its answers against the torch path's (`hf_seq2seq`), the conversion's cache, and its errors."""

from __future__ import annotations

import multiprocessing
from concurrent.futures import ProcessPoolExecutor
from functools import partial

import pytest
from tiny_models import build_tiny_t5

from examflow.errors import ConfigError
from examflow.grading.backends import OFFLINE, Request, Seq2SeqBackend
from examflow.grading.ctranslate2_backend import CTranslate2Backend, converted
from examflow.grading.grader import ShardGrader
from examflow.grading.methods import Pair
from examflow.grading.signatures import weights_version
from examflow.registry import check_method

ctranslate2 = pytest.importorskip("ctranslate2", reason="ct2_seq2seq needs ctranslate2 (a dependency of examflow)")

QUESTIONS = ["how do bees make honey", "why is the moon", "what is lava"]
PASSAGES = ["bees nectar water", "the moon raises tides", "", "lava magma " * 400, "compost soil yes no"]


def requests(template: str = "grade-qa") -> list[Request]:
    """Questions against passages: one empty, one that must be cut to the 512-token budget."""
    return [Request(template, {"question": q, "context": p}) for p in PASSAGES for q in QUESTIONS]


# T5 scales the decoder's outputs before the LM head; T5 v1.1 and FLAN-T5 do not (`flan`).
ARCHITECTURES = pytest.mark.parametrize("flan", [False, True], ids=["t5", "flan-t5"])


@pytest.fixture(scope="module", params=[False, True], ids=["t5", "flan-t5"])
def model(tmp_path_factory, request):
    # Scaled weights: the answers differ from prompt to prompt, so equal answers mean something.
    return str(build_tiny_t5(tmp_path_factory.mktemp("tiny-t5"), seed=5, scale=3.0, flan=request.param))


@pytest.mark.parametrize("decoding", ["greedy", "beam"])
@pytest.mark.parametrize("batch_size", [1, 4, 16])
def test_float32_answers_equal_the_torch_paths(model, tmp_path, decoding, batch_size):
    torch_answers = Seq2SeqBackend(model, decoding=decoding, max_new_tokens=4, batch_size=5).answer(requests())
    assert len({a.text for a in torch_answers}) >= 5  # the model answers prompts differently
    backend = CTranslate2Backend(
        model, tmp_path, decoding=decoding, max_new_tokens=4, batch_size=batch_size, compute_type="float32"
    )
    assert [a.text for a in backend.answer(requests())] == [a.text for a in torch_answers]


@ARCHITECTURES
@pytest.mark.parametrize("batch_size", [1, 7])
def test_fast_ratings_equal_the_torch_paths(tmp_path, batch_size, flan):
    rated = str(build_tiny_t5(tmp_path / "rated", seed=3, digit_boost=4.0, scale=2.0, flan=flan))
    torch_answers = Seq2SeqBackend(rated, decoding="fast", batch_size=3).answer(requests("grade-self-rating"))
    found = CTranslate2Backend(
        rated, tmp_path / "cache", decoding="fast", batch_size=batch_size, compute_type="float32"
    ).answer(requests("grade-self-rating"))
    assert len({a.text for a in torch_answers}) >= 2
    assert [a.text for a in found] == [a.text for a in torch_answers]
    # Another engine's float32 kernels: the expected grades agree to float32 noise, not to the last bit.
    assert max(abs(a.expected - b.expected) for a, b in zip(found, torch_answers)) < 1e-4
    assert len({round(a.expected, 3) for a in found}) > 2  # and they follow the input


def test_int8_is_the_cpu_default_and_answers_every_prompt(model, tmp_path):
    backend = CTranslate2Backend(model, tmp_path, decoding="greedy", max_new_tokens=4, device="cpu")
    assert backend.signature["compute_type"] == "int8_float32"
    assert backend.translator.compute_type == "int8_float32"
    answers = backend.answer(requests())
    assert len(answers) == 15 and all(isinstance(a.text, str) and a.error is None for a in answers)
    chunks = list(backend.answer_chunks([requests()[:4], [], requests()[4:]]))
    assert [a.text for chunk in chunks for a in chunk] == [a.text for a in answers]


def test_the_conversion_is_made_once_and_again_when_the_weights_change(tmp_path):
    import ctranslate2

    folder = build_tiny_t5(tmp_path / "model", seed=1)
    version = weights_version(str(folder))
    first = converted(str(folder), None, version, tmp_path / "cache")
    assert first.name == f"model-{version}-ct2-{ctranslate2.__version__}-c1"
    written = (first / "model.bin").stat().st_mtime_ns
    CTranslate2Backend(str(folder), tmp_path / "cache", decoding="fast", compute_type="float32")
    assert (first / "model.bin").stat().st_mtime_ns == written
    assert [p.name for p in (tmp_path / "cache" / "ctranslate2").iterdir()] == [first.name]
    build_tiny_t5(folder, seed=2)  # new weights in the same folder
    second = CTranslate2Backend(str(folder), tmp_path / "cache", decoding="fast", compute_type="float32")
    assert len(list((tmp_path / "cache" / "ctranslate2").iterdir())) == 2
    assert second.signature["revision"] == weights_version(str(folder)) != version


def test_a_budget_above_1024_tokens_is_read_whole(tmp_path):
    # CTranslate2 cuts a prompt at 1,024 tokens unless told not to: here the passages differ only past it.
    model = str(build_tiny_t5(tmp_path / "model", seed=5, scale=3.0, flan=True))
    ends = ["bees honey nectar " * 20, "moon tides ocean " * 20, "compost soil water " * 20]
    long = [Request("grade-qa", {"question": QUESTIONS[0], "context": "lava magma " * 520 + end}) for end in ends]
    torch_answers = Seq2SeqBackend(model, decoding="greedy", max_new_tokens=4, max_input_tokens=2048).answer(long)
    backend = CTranslate2Backend(
        model, tmp_path, decoding="greedy", max_new_tokens=4, max_input_tokens=2048, compute_type="float32"
    )
    assert min(len(p.ids) for p in backend.preparer.prepare(long)) > 1100
    assert len({a.text for a in torch_answers}) > 1  # the passages' ends change the answers
    assert [a.text for a in backend.answer(long)] == [a.text for a in torch_answers]


def test_a_model_of_another_architecture_is_refused(tmp_path):
    # mT5 keeps its output scaling apart from `tie_word_embeddings` as T5 does, but under its own loader.
    import json

    folder = build_tiny_t5(tmp_path / "mt5", seed=1)
    config = json.loads((folder / "config.json").read_text())
    (folder / "config.json").write_text(
        json.dumps(config | {"model_type": "mt5", "architectures": ["MT5ForConditionalGeneration"]})
    )
    with pytest.raises(ConfigError, match=r"config backend\.model: '.*mt5' is a MT5Config: ct2_seq2seq converts T5"):
        CTranslate2Backend(str(folder), tmp_path / "cache", decoding="fast")


@pytest.mark.parametrize(
    ("device", "message"),
    [("gpu", r"'gpu': ct2_seq2seq runs on `auto`, `cpu`, `cuda` or `cuda:N`"), ("cuda:x", r"'cuda:x': ct2_seq2seq")],
)
def test_a_device_it_cannot_use_is_one_line(model, tmp_path, device, message):
    with pytest.raises(ConfigError, match=rf"config backend\.device: {message}"):
        CTranslate2Backend(model, tmp_path, decoding="fast", device=device)


def test_conversions_at_once_leave_one_whole_model(tmp_path):
    # Processes, as grading jobs are (the converter's model loading is not thread-safe).
    folder = str(build_tiny_t5(tmp_path / "model", seed=1))
    convert = partial(converted, folder, None, weights_version(folder))
    with ProcessPoolExecutor(3, mp_context=multiprocessing.get_context("fork")) as pool:
        folders = list(pool.map(convert, [tmp_path / "cache"] * 3))
    assert len(set(folders)) == 1 and (folders[0] / "model.bin").is_file()
    assert [p.name for p in (tmp_path / "cache" / "ctranslate2").iterdir()] == [folders[0].name]  # no scratch left


def test_a_compute_type_the_cpu_lacks_is_a_config_error(model, tmp_path):
    lacking = [t for t in ("bfloat16", "int8_bfloat16") if t not in ctranslate2.get_supported_compute_types("cpu")]
    if not lacking:
        pytest.skip("this CPU supports bfloat16 in CTranslate2: no compute type to refuse")
    with pytest.raises(
        ConfigError, match=rf"config backend\.compute_type: {lacking[0]} is not supported on this CPU"
    ) as error:
        CTranslate2Backend(model, tmp_path, decoding="fast", device="cpu", compute_type=lacking[0])
    assert str(error.value).endswith("this device supports float32, int8_float32")  # the types a config may name


def test_cuda_without_a_gpu_held_is_refused_by_the_config_check(model):
    settings = {"kind": "ct2_seq2seq", "model": model, "device": "cuda:1"}
    with pytest.raises(ConfigError, match=r"config m\.backend\.device: cuda:1 needs `gpu: 1` \(or more\) beside it"):
        check_method("m", {"name": "m", "kind": "self_rating", "backend": settings})
    assert check_method("m", {"name": "m", "kind": "self_rating", "gpu": 1, "backend": settings}).gpu == 1


def test_float16_is_refused_by_the_config_check(model):
    settings = {"kind": "ct2_seq2seq", "model": model, "compute_type": "float16"}
    with pytest.raises(ConfigError, match=r"backend\.compute_type: must be one of auto, int8_float32, .*'float16'"):
        check_method("m", {"name": "m", "kind": "self_rating", "backend": settings})


def test_a_grading_job_caches_every_answer(model, tmp_path):
    method = check_method("m", {"name": "m", "kind": "qa_verify", "backend": {
        "kind": "ct2_seq2seq", "model": model, "decoding": "greedy", "max_new_tokens": 3}})  # fmt: skip
    pairs = [Pair("q1", None, f"p{i}", f"q1/{i % 3}", QUESTIONS[i % 3], PASSAGES[i % 5], "honey") for i in range(9)]
    first = ShardGrader(method, str(tmp_path), flush_every=4)
    table = first.grade(pairs)
    assert first.sent == 9 and len(table) == 9 and table["error"].isna().all()
    assert (tmp_path / "ctranslate2").is_dir()  # converted into the method's cache folder
    again = ShardGrader(method, str(tmp_path))
    assert again.grade(pairs).equals(table) and again.sent == 0


@pytest.mark.parametrize("backend", [CTranslate2Backend, Seq2SeqBackend])
def test_a_model_that_is_neither_a_folder_nor_a_hub_model_is_one_line(tmp_path, backend):
    missing = str(tmp_path / "models" / "does not exist")
    options = {"cache_dir": tmp_path} if backend is CTranslate2Backend else {}
    with pytest.raises(ConfigError) as error:
        backend(missing, decoding="fast", **options)
    assert str(error.value).startswith(f"config backend.model: {missing!r}: not a model folder, nor a hub model")
    assert str(error.value).endswith(f"; {OFFLINE}") and "\n" not in str(error.value)  # what to do offline
    broken = tmp_path / "broken model"
    broken.mkdir()
    (broken / "config.json").write_text("{not json")
    with pytest.raises(ConfigError, match=r"'.*broken model': a folder without a readable model configuration"):
        backend(str(broken), decoding="fast", **options)


@pytest.mark.parametrize("backend", [CTranslate2Backend, Seq2SeqBackend])
def test_damaged_weights_or_tokenizer_are_one_line(tmp_path, backend):
    """A folder whose configuration reads but whose weights (or tokenizer) do not: one line naming it, no
    conversion left behind, where it was the loader's traceback."""
    options = {"cache_dir": tmp_path / "cache"} if backend is CTranslate2Backend else {}
    folder = build_tiny_t5(tmp_path / "damaged model")
    (folder / "model.safetensors").write_bytes(b"not a safetensors file")
    with pytest.raises(ConfigError) as error:
        backend(str(folder), decoding="fast", **options)
    assert str(error.value).startswith(f"config backend.model: {str(folder)!r}: could not be loaded (")
    assert "\n" not in str(error.value)
    assert not list((tmp_path / "cache").glob("ctranslate2/*"))  # nothing half-converted
    folder = build_tiny_t5(tmp_path / "damaged tokenizer")
    (folder / "tokenizer.json").write_text("{not json")
    with pytest.raises(ConfigError, match=r"'.*damaged tokenizer': could not be loaded \("):
        backend(str(folder), decoding="fast", **options)
