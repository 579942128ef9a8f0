"""Checking a workflow configuration before anything runs.

`check_config` fills in every default, refuses unknown keys (with a suggestion for a typo),
wrong types, back-end options the back end does not have, unknown trec_eval measures and
secrets, each error naming the key. The JSON schema (`workflow/schemas/config.schema.yaml`)
holds the structure; the method kinds, back ends and their options come from
`examflow.registry`, which this module writes into the schema.
"""

from __future__ import annotations

import copy
import hashlib
import json
import logging
import math
import os
import re
from collections.abc import Hashable, Iterable, Iterator
from pathlib import Path
from typing import Any

import yaml

from examflow.defaults import SCHEMA
from examflow.errors import ConfigError, InputError, RunSetting, a, file_in_the_way, repeated, suggestion
from examflow.io.irds import is_irds
from examflow.io.lines import base_suffix
from examflow.options import REQUIRED, check_model_folder, check_options
from examflow.outputs import JUDGES_FOLDER, owned
from examflow.registry import (
    BACKENDS,
    CALIBRATIONS,
    DEFAULT_MEASURES,
    DEFAULT_TAU,
    KINDS,
    LEADERBOARD_LAYOUTS,
    PARSE_MODES,
    QUESTION_FORMATS,
    QUESTION_LLM_OPTIONS,
    RANKERS,
    TOP_GRADE,
    Method,
    check_method,
    check_ranker,
    config_keys,
    find_secrets,
)

log = logging.getLogger(__name__)


def schema(path: str | Path = SCHEMA) -> dict:
    """The config schema with the registry's method kinds, back ends and LLM options written in."""
    loaded = yaml.safe_load(Path(path).read_text(encoding="utf-8"))
    method = loaded["$defs"]["method"]["properties"]
    method["kind"]["enum"] = list(KINDS)
    method["calibration"] = {**method["calibration"], "enum": list(CALIBRATIONS)}
    method["backend"]["properties"]["kind"]["enum"] = list(BACKENDS)
    # Each back end's option names, so that a misspelt one is named beside the other mistakes
    method["backend"]["allOf"] = [
        {"if": {"properties": {"kind": {"const": name}}, "required": ["kind"]}, "then": _options_schema(spec.options)}
        for name, spec in BACKENDS.items()
    ]
    method["mode"]["enum"] = list(PARSE_MODES)
    loaded["$defs"]["llm"]["properties"] = {name: o.json_schema() for name, o in QUESTION_LLM_OPTIONS.items()}
    loaded["properties"]["questions"]["properties"]["format"]["enum"] = list(QUESTION_FORMATS)
    loaded["properties"]["judges"]["properties"]["leaderboard_layout"]["enum"] = list(LEADERBOARD_LAYOUTS)
    loaded["properties"]["evaluation"]["properties"]["measures"]["default"] = list(DEFAULT_MEASURES)
    return loaded


def _options_schema(options: dict) -> dict:
    """A back end's mapping: `kind` and its options, the required ones required, no other key (the values
    are left to check_method, whose messages say what an option takes)."""
    required = [name for name, option in options.items() if option.default is REQUIRED]
    # each option with its names in other tools (Option.also), which an unknown key's message reads
    named: dict[str, dict] = {"kind": {}} | {name: {"also": list(o.also)} for name, o in options.items()}
    return {"properties": named, "required": required, "additionalProperties": False}


def key_not_a_name(config: dict) -> tuple[str, object] | None:
    """The first mapping key that YAML read as no string (`1:`, `true:`, `2024-01-01:`), and where it
    stands: such a key names a dimension, a label set or a leaderboard, and a name is a string."""
    unnamed = ((where or "(top level)", key) for where, key in config_keys(config) if not isinstance(key, str))
    return next(unnamed, None)


def check_config(config: dict, path: str | Path = SCHEMA) -> dict:
    """The configuration with defaults filled in; a ConfigError names the bad keys (every one the schema finds)."""
    secrets = find_secrets(config)
    if secrets:
        # The value is never repeated: config values end up in job command lines and logs.
        raise ConfigError(
            secrets[0],
            "a secret does not belong in a config file (config values reach command lines, logs and "
            ".snakemake/); put it in an environment variable and name that variable with `api_key_env`",
        )
    if unnamed := key_not_a_name(config):
        where, key = unnamed
        raise ConfigError(where, f"YAML reads the key {key!r} as {type(key).__name__}, not str: "
                          "put it in quotes")  # fmt: skip
    checked = copy.deepcopy(config)
    runs = checked.get("inputs", {}).get("runs") if isinstance(checked.get("inputs"), dict) else None
    if isinstance(runs, str):  # one file or pattern, as Snakemake users write it
        checked["inputs"]["runs"] = [runs]
    _validate(checked, schema(path))
    grading = checked["grading"]
    graders = methods(grading["methods"])
    grading["methods"] = [method.settings for method in graders]
    if name := repeated(method["name"] for method in grading["methods"]):
        raise ConfigError("grading.methods", f"two methods are named {name!r}")
    checked["questions"]["llm"] = check_options("questions.llm", checked["questions"]["llm"], QUESTION_LLM_OPTIONS)
    _check_measures(checked["evaluation"]["measures"])
    if checked["evaluation"]["official_measure"]:
        _check_measures([checked["evaluation"]["official_measure"]], "evaluation.official_measure")
    check_relevance_range("validation.relevance_range", *checked["validation"]["relevance_range"])
    _check_exam_inputs(checked)
    _check_judges(checked)
    if checked["evaluation"]["n_exam"] == "gold" and not (checked["inputs"] or {}).get("gold_articles"):
        raise ConfigError(
            "evaluation.n_exam", "'gold' divides by what the gold articles answer: set inputs.gold_articles"
        )
    taus, report = check_taus("evaluation.tau", checked["evaluation"]["tau"]), checked["report"]
    _warn_about_the_budget(checked)
    if report["tau"] is not None:
        shown_tau(("report.tau", report["tau"]), ("evaluation.tau", taus))
    # What each method's figures, summary and question diagnostics look at (read by the rules and captions)
    report["method_tau"] = {
        method.name: method_tau(method, taus) if report["tau"] is None else report["tau"] for method in graders
    }
    _warn_about_scales(graders, report["tau"], taus)
    if checked["nrp"]:
        low, high = checked["validation"]["relevance_range"]
        checked["nrp"] = _check_nrp(checked["nrp"], (low, high))
    return checked


def _check_exam_inputs(checked: dict) -> None:
    inputs = checked["inputs"] or {}
    if not inputs and not checked["nrp"]:
        raise ConfigError("inputs", "required, and missing: the collection to evaluate (or `nrp:` for NRP alone)")
    if not inputs and checked["grading"]["methods"]:  # NRP alone grades nothing: the parse read inputs.queries
        raise ConfigError("grading.methods", "they grade the collection of `inputs`, which is missing: set inputs, "
                          "or leave grading.methods out for NRP alone")  # fmt: skip
    if inputs and not (inputs.get("runs") or inputs.get("responses")):  # else the pool step, in its flags' words
        raise ConfigError("inputs.runs", "nothing to evaluate: set inputs.runs (TREC run files), inputs.responses "
                          "(generated responses), or both")  # fmt: skip
    if checked["questions"]["generate"] and not inputs.get("bank"):
        raise ConfigError("questions.generate", "set inputs.bank, the file the generated bank is written to")
    if checked["questions"]["generate"] and base_suffix(inputs["bank"]) != ".jsonl":
        # a bank by another name is written all the same, then refused by every run that reads it
        raise ConfigError("inputs.bank", f"{inputs['bank']}: a generated bank is written as JSONL: name it .jsonl "
                          "(or .jsonl.gz)")  # fmt: skip
    if inputs.get("runs") and not inputs.get("corpus"):  # the pool step would say so, after other steps ran
        raise ConfigError("inputs.corpus", "the passages inputs.runs ranks are graded by their texts: set it (a "
                          "file, or an ir_datasets id)")  # fmt: skip
    questions = checked["questions"]
    if questions["generate"] and questions["items"] == "nuggets":  # created from the pool's documents
        if not (inputs.get("runs") or inputs.get("responses")):
            raise ConfigError(
                "questions.items", "nuggets are created from the pool: set inputs.runs or inputs.responses"
            )
        if questions["documents"] == "judged" and not inputs.get("qrels"):
            raise ConfigError("questions.documents", "judged documents need inputs.qrels (or use `pool`)")
    if not inputs.get("bank"):  # a method that pairs passages with the query itself needs none
        for index, method in enumerate(checked["grading"]["methods"]):
            target = KINDS[method["kind"]].target
            if target != "query":
                raise ConfigError(f"grading.methods[{index}]", f"kind {method['kind']!r} grades {target}s: it "
                                  "needs a bank of them (inputs.bank)")  # fmt: skip


def check_official_for_judges(config: dict) -> None:
    """The judges compute the official leaderboard from the qrels query by query, with ir-measures: an official
    measure only pytrec_eval computes (Rprec_mult_0.20) failed their step, after the grading. (The workflow calls
    it where the judges are compared.)"""
    from examflow.evaluation.judges import check_measure

    official = config["evaluation"]["official_measure"]
    if not official or (config["inputs"] or {}).get("official_leaderboard"):
        return
    try:
        check_measure(official)
    except ValueError as error:
        raise ConfigError("evaluation.official_measure", f"{official!r}: the judges compare the label sets' "
                          f"leaderboards with its, and cannot compute it: {error}") from None  # fmt: skip


def check_judges_query_ids(config: dict, queries: str | None) -> None:
    """The judges' measures that gdeval computes (ERR) take the queries' ids as it reads them (digits): one
    that does not stopped the judges' step after the grading. (The workflow calls it where the judges are
    compared, with `inputs.queries` where a file gives them.)"""
    from examflow.errors import Failure
    from examflow.evaluation.judges import check_gdeval_ids, parse_measure
    from examflow.scheduling import query_table

    if queries is None:
        return
    computed = not (config["inputs"] or {}).get("official_leaderboard") and config["evaluation"]["official_measure"]
    named = [(f"judges.measures[{i}]", name) for i, name in enumerate(config["judges"]["measures"])]
    named += [("evaluation.official_measure", computed)] if computed else []
    for key, name in named:
        try:
            check_gdeval_ids(parse_measure(name), query_table(queries)["query_id"])
        except Failure as error:
            raise ConfigError(key, f"{error} (the query ids of {queries})") from None


def _check_judges(checked: dict) -> None:
    """Every judges measure is one that computes, each once; an outside label set's name is no method's,
    no method is named `official`, and outside labels come with what the comparison needs."""
    from examflow.evaluation.judges import OFFICIAL, check_measure

    seen: dict[str, str] = {}
    for index, name in enumerate(checked["judges"]["measures"]):
        key = f"judges.measures[{index}]"
        try:
            parsed = str(check_measure(name))
        except ValueError as error:
            raise ConfigError(key, f"{name!r}: {error}") from None
        if parsed in seen:
            raise ConfigError(key, f"{name!r} is {seen[parsed]!r} again ({parsed}): name each measure once")
        seen[parsed] = name
    methods = {method["name"] for method in checked["grading"]["methods"]}
    if OFFICIAL in methods:
        raise ConfigError("grading.methods", f"a method is named {OFFICIAL!r}, the name of the official judgments")
    inputs = checked["inputs"] or {}
    for name in inputs.get("labels") or {}:
        if name in methods or name == OFFICIAL:
            taken = "a grading method's" if name in methods else "the official qrels'"
            raise ConfigError(f"inputs.labels.{name}", f"the name is {taken}: the judges are told apart by name")
    judges = methods | set(inputs.get("labels") or {})
    for name in checked["judges"]["leaderboards"]:
        if name in judges or name in checked["judges"]["ensembles"] or name == OFFICIAL:
            raise ConfigError(f"judges.leaderboards.{name}", "the name is a method's, an outside label set's, an "
                              "ensemble's or the official qrels': the judges are told apart by name")  # fmt: skip
    for name, members in checked["judges"]["ensembles"].items():
        key = f"judges.ensembles.{name}"
        if name in judges or name == OFFICIAL:
            raise ConfigError(key, "the name is a method's, an outside label set's or the official qrels'")
        unknown = [member for member in members if member not in judges]
        if unknown or len(set(members)) < len(members):
            problem = f"{unknown[0]!r} is no method or outside label set" if unknown else "a judge is named twice"
            raise ConfigError(key, f"{problem}{suggestion(unknown[0], judges) if unknown else ''}")
    official = inputs.get("official_leaderboard") or checked["evaluation"]["official_measure"]
    qrels_file = inputs.get("qrels") and not is_irds(inputs["qrels"])  # ir_datasets qrels: not compared yet
    compared = {
        "inputs.labels": inputs.get("labels"),
        "judges.leaderboards": checked["judges"]["leaderboards"],
        "judges.ensembles": checked["judges"]["ensembles"],  # left out in silence without the judges step
    }
    for key, given in compared.items():
        if given and not (qrels_file and inputs.get("runs") and official):
            raise ConfigError(
                key,
                "judges are compared with the official qrels on the runs' leaderboards: set inputs.qrels (a "
                "file), inputs.runs and an official leaderboard (inputs.official_leaderboard, or "
                "evaluation.official_measure)",
            )
    # the judges step's own table given back to it: a cycle, and the file deleted as the step begins
    written = os.path.join(os.path.realpath(checked["results_dir"]), JUDGES_FOLDER)
    for key in ("inputs.labels", "judges.leaderboards"):
        for name, path in (compared[key] or {}).items():
            if owned("compare-judges", os.path.relpath(os.path.realpath(path), written)):
                raise ConfigError(f"{key}.{name}", f"{path!r} is a table the judges step writes, which reads "
                                  "it: copy it out of results_dir first")  # fmt: skip


def check_model_folders(checked: dict) -> None:
    """Each model of the configuration's back ends and NRP rankers that only a path can be is a folder here
    (`options.check_model_folder`): for the workflow, as it starts."""
    for index, method in enumerate(checked["grading"]["methods"]):
        _model_folders(
            f"grading.methods[{index}].backend", method["backend"], BACKENDS[method["backend"]["kind"]].options
        )
    for index, ranker in enumerate((checked.get("nrp") or {}).get("rankers", [])):
        _model_folders(f"nrp.rankers[{index}]", ranker, RANKERS[ranker["kind"]].options)


def _model_folders(key: str, given: dict, options: dict) -> None:
    for name, option in options.items():
        if option.model and isinstance(given.get(name), str):
            check_model_folder(f"{key}.{name}", given[name])


def default_tau(taus: list[int]) -> int:
    """The threshold the report, the summary and the question diagnostics look at: 4, or the highest."""
    return DEFAULT_TAU if DEFAULT_TAU in taus else max(taus)


def method_tau(method: Method, taus: list[int]) -> int:
    """The threshold a method's figures, summary and question diagnostics look at where report.tau is not set:
    `default_tau` of the thresholds its grades can reach (UMBRELA's 0-3 at τ 4 would show no relevant passage;
    under evaluation.tau's default 1, 3, 4, 5 it is shown at 3, a binary judge at 1); where none reaches, the
    lowest (the method is warned about)."""
    return default_tau([tau for tau in taus if tau <= method.top] or [min(taus)])


def _warn_about_scales(graders: list[Method], tau: int | None, taus: list[int]) -> None:
    """A method whose grades stop below some evaluation.tau (UMBRELA's 0-3, Thomas's 0-2, yes/no, a ladder of
    three quantiles) has rows of 0 there, and where report.tau is set above them, no relevant passage in the
    report's figures and the summary: say so before anything runs."""
    for method in graders:
        top = method.top
        above = [t for t in taus if t > top]
        if above:
            graded = f"{method.kind} by {top} quantiles" if method.quantiles is not None else method.kind
            shown = tau is not None and tau > top  # unset, each method is shown at a τ its grades reach
            log.warning(
                "method %s (%s) grades 0-%d: at evaluation.tau %s no passage reaches the threshold (those rows of its "
                "tables are all 0)%s; set evaluation.tau%s to %d or less",
                method.name, graded, top, ", ".join(map(str, above)),
                f", and its figures and summary at report.tau = {tau} show no relevant passage" if shown else "",
                " (and report.tau)" if shown else "", top,
            )  # fmt: skip


def _warn_about_the_budget(checked: dict) -> None:
    depth, k = checked["pool"]["depth"], checked["evaluation"]["k"]
    if checked["inputs"] and k > depth:
        log.warning(
            "evaluation.k = %d is above pool.depth = %d: a run's passages ranked %d to %d are graded only where "
            "the pool holds them anyway (judged, or in another run's top %d), so they count only there; set "
            "evaluation.k to at most pool.depth", k, depth, depth + 1, k, depth,
        )  # fmt: skip


def check_taus(key: str, taus: list[int]) -> list[int]:
    """Grade thresholds: each once, and each a grade a passage can reach (1 to the top grade)."""
    for tau in taus:
        if not 1 <= tau <= TOP_GRADE:
            raise ConfigError(
                key, f"{tau} is no grade threshold: grades run 0-{TOP_GRADE}, and a threshold is 1 to {TOP_GRADE}"
            )
        if taus.count(tau) > 1:
            raise ConfigError(key, f"{tau} is given twice")
    return taus


def shown_tau(shown: tuple[str, int | None], evaluated: tuple[str, list[int]]) -> int:
    """The threshold the report and the question diagnostics show, each (key, value): one of the evaluated
    thresholds, whose tables the report reads; by default the one `default_tau` picks."""
    (key, tau), (taus_key, taus) = shown, evaluated
    if tau is None:
        return default_tau(taus)
    if tau not in taus:
        raise ConfigError(key, f"{tau} is none of {taus_key} ({', '.join(map(str, taus))})")
    return tau


def check_relevance_range(key: str, low: int, high: int) -> tuple[int, int]:
    """The lowest and the highest relevance a qrels line may hold, the lowest first."""
    if low > high:
        raise ConfigError(key, f"the lowest level {low} is above the highest {high}")
    return low, high


def methods(settings: list[Any]) -> list[Method]:
    """The grading methods of a configuration (`grading.methods`), each checked."""
    return [check_method(f"grading.methods[{i}]", method) for i, method in enumerate(settings)]


def _check_nrp(nrp: dict, relevance_range: tuple[int, int]) -> dict:
    from examflow.nrp.inputs import (
        SEPARATOR,
        cannot_judge_problem,
        dimension_problem,
        rankers_needing_texts,
        weight_problem,
    )

    nrp["rankers"] = [check_ranker(f"nrp.rankers[{i}]", ranker) for i, ranker in enumerate(nrp["rankers"])]
    names = [ranker["name"] for ranker in nrp["rankers"]]
    if name := repeated(names):
        raise ConfigError("nrp.rankers", f"two rankers are named {name!r}: give them names")
    if nrp["corpus"] is None and (texts := rankers_needing_texts(nrp["rankers"])):
        raise ConfigError("nrp.corpus", f"the rankers {', '.join(texts)} score the judged documents' texts: set "
                          "nrp.corpus (only `run` rankers work without)")  # fmt: skip
    for dimension, spec in nrp["dimensions"].items():
        if problem := dimension_problem(dimension):
            raise ConfigError(f"nrp.dimensions.{dimension}", problem)
        if problem := cannot_judge_problem(spec["cannot_judge"], relevance_range, "validation.relevance_range"):
            raise ConfigError(f"nrp.dimensions.{dimension}.cannot_judge", problem)
        if spec["ranker"] is not None and spec["ranker"] not in names:
            raise ConfigError(
                f"nrp.dimensions.{dimension}.ranker", f"{spec['ranker']!r} is none of the rankers: {', '.join(names)}"
            )
    weights = {dimension: spec["weight"] for dimension, spec in nrp["dimensions"].items() if "weight" in spec}
    if weights and (problem := weight_problem(weights, list(nrp["dimensions"]))):
        raise ConfigError("nrp.dimensions", problem)
    for i, pair in enumerate(nrp["wilcoxon"]):
        if any(SEPARATOR in name for name in pair):
            raise ConfigError(f"nrp.wilcoxon[{i}]", f"no llm or prompt holds {SEPARATOR!r} (it separates "
                              "llm/prompt/sample in answer names)")  # fmt: skip
    return nrp


def check_config_file(path: str | Path) -> None:
    """Refuse a key written twice in one mapping of a config file: YAML would keep the last one silently."""
    try:
        yaml.load(Path(path).read_text(encoding="utf-8"), Loader=_UniqueKeyLoader)
    except _RepeatedKey as repeated:
        raise InputError(path, repeated.message, repeated.line) from None
    except yaml.YAMLError:
        return  # Snakemake reads the file itself and reports what is wrong with it


class _RepeatedKey(Exception):
    def __init__(self, message: str, line: int):
        self.message, self.line = message, line


class _UniqueKeyLoader(yaml.SafeLoader):
    def construct_mapping(self, node, deep=False):
        seen: dict = {}
        for key_node, _ in node.value:
            key = self.construct_object(key_node, deep=True)
            if isinstance(key, Hashable) and key in seen:
                raise _RepeatedKey(
                    f"key {key!r} is written twice in one mapping (first on line {seen[key]}); YAML would keep "
                    "the last silently",
                    key_node.start_mark.line + 1,
                )
            seen[key] = key_node.start_mark.line + 1
        return super().construct_mapping(node, deep)


def config_sources(error: Exception, files: list[str], overrides: Iterable[str]) -> str:
    """Where the setting behind a failed check was given: the config files, and `--config KEY`
    where the command line set the top-level key the error names (Snakemake lays it over the files);
    nothing for a setting of the run outside them, which its error names."""
    if isinstance(error, RunSetting):
        return ""
    named = re.split(r"[.\[]", error.key)[0] if isinstance(error, ConfigError) else None
    files_part = f"configuration: {', '.join(files)}"
    return f"--config {named}=…, over the {files_part}" if named in set(overrides) else files_part


def config_digest(config: dict) -> str:
    """A digest of the checked configuration, for the provenance record."""
    return hashlib.sha256(json.dumps(config, sort_keys=True, default=str).encode()).hexdigest()


def _validate(config: Any, loaded: dict, option: str = "") -> None:
    """`config` against the schema `loaded`: a ConfigError names its keys under `option` where it is given
    on a command line (`--method.calibraton`), else as a config's."""
    import jsonschema

    validator = _filling_defaults(jsonschema.Draft202012Validator)(loaded)
    errors = sorted(validator.iter_errors(config), key=lambda e: (len(e.absolute_path), list(map(str, e.path))))
    problems = list(dict.fromkeys(problem for error in errors for problem in _readable(error)))
    if problems:
        # Every problem at once: a config with two typos should not take two runs to mend.
        (key, message, known), *more = [(_under(option, key), *rest) for key, *rest in problems]
        others = "".join(f"; and {ConfigError(other, text)}" for other, text, _ in more)
        raise ConfigError(key, f"{message}{known}{others}")


def _under(option: str, key: str) -> str:
    if not option:
        return key
    return option if key in ("", "(top level)") else f"{option}{key}" if key.startswith("[") else f"{option}.{key}"


def check_method_option(option: str, method: Any) -> Method:
    """A grading method given on a command line (`--method JSON`), checked as an entry of `grading.methods`
    is: by the schema too, which refuses a key it does not know (`calibraton` was graded at the default
    calibration, exit 0: a stranger's trial), then by `check_method`."""
    loaded = schema()
    _validate(method, {**loaded["$defs"]["method"], "$defs": loaded["$defs"]}, option)
    return check_method(option, method)


def _filling_defaults(validator_class):
    """A validator that writes each property's default into the instance before checking it, takes an
    integer to be an integer (JSON Schema lets 5.0 pass, which then reaches a command line as `--depth 5.0`)
    and a number to be finite, and knows `path: true`, a file or folder name, and `path: folder` (`_path`)."""
    import jsonschema

    check_properties = validator_class.VALIDATORS["properties"]
    types = validator_class.TYPE_CHECKER.redefine_many(
        {
            "integer": lambda checker, value: isinstance(value, int) and not isinstance(value, bool),
            # NaN and infinity pass every bound (they compare false): no setting is either.
            "number": lambda checker, value: (
                isinstance(value, (int, float)) and not isinstance(value, bool) and math.isfinite(value)
            ),
        }
    )

    def properties(validator, declared, instance, schema):
        if isinstance(instance, dict):
            for name, subschema in declared.items():
                if "default" in subschema:
                    instance.setdefault(name, copy.deepcopy(subschema["default"]))
        yield from check_properties(validator, declared, instance, schema)

    return jsonschema.validators.extend(validator_class, {"properties": properties, "path": _path}, type_checker=types)


def _path(validator, is_path, instance, schema):
    """A path is not empty, and reaches each step's command line as a word of its own, where a name that
    starts with `-` is read as an option (`--queries -in/q.tsv`: "expected one argument"), and `~` is not
    expanded (Snakemake passes the path on as written); `path: folder`
    names a folder, which an existing file cannot be, nor stand above (Snakemake's first mkdir under it was a
    traceback; the grade cache's, after every prompt was paid for)."""
    import jsonschema

    if not is_path or not isinstance(instance, str):
        return
    if not instance.strip():  # `results_dir: ""` wrote into `.`
        yield jsonschema.ValidationError("empty: name a file or folder")
    elif instance.startswith("-"):
        yield jsonschema.ValidationError(
            f"{instance!r} starts with '-', which a command line reads as an option: give it as an absolute path"
        )
    elif instance.startswith("~"):  # `results_dir: ~/x` wrote into a folder `~` here
        home = os.path.expanduser(instance)
        yield jsonschema.ValidationError(
            f"{instance!r} starts with '~', which no shell expands here (it would name a folder '~' in the working "
            f"directory): write {home!r}" + ("" if home != instance else " as a full path")
        )
    elif is_path == "folder" and os.path.exists(instance) and not os.path.isdir(instance):
        yield jsonschema.ValidationError(f"{instance!r} is a file: name a folder")
    elif is_path == "folder" and (blocker := file_in_the_way(instance, folder=True)) is not None:
        yield jsonschema.ValidationError(f"{instance!r}: {blocker}")


def _readable(error) -> Iterator[tuple[str, str, str]]:
    """(key, message, what is known there) of a schema error: one for each unknown key it holds."""
    key = _key(error.absolute_path)
    if error.validator == "additionalProperties":
        known = error.schema.get("properties", {})
        what = "option" if key.split(".")[-1] == "backend" else "key"  # a back end's, beside its `kind`
        listed = [name for name in known if not (what == "option" and name == "kind")]
        # a method's own key written in its back end (`quantiles` under `backend:`, a stranger's trial)
        method_keys = set(schema()["$defs"]["method"]["properties"]) if what == "option" else set()
        also = {other: name for name, spec in known.items() if isinstance(spec, dict) for other in spec.get("also", ())}
        for unknown in sorted(set(error.instance) - set(known)):
            home = "; a key of the method, beside its `kind`, not of its back end" if unknown in method_keys else ""
            yield (
                f"{key}.{unknown}" if key else unknown,
                f"unknown {what}{suggestion(unknown, listed, also)}{home}",
                f"; known: {', '.join(listed)}",
            )
    elif error.validator == "required":
        missing = error.message.split("'")[1]
        yield f"{key}.{missing}" if key else missing, "required, and missing", ""
    elif error.validator == "enum":
        choices = ", ".join(map(str, error.validator_value))
        yield (
            key,
            f"must be one of {choices}, not {error.instance!r}{suggestion(error.instance, error.validator_value)}",
            "",
        )
    elif error.validator == "type":
        yield key, f"expected {_types(error.validator_value)}, found {error.instance!r}", ""
    elif error.validator == "pattern" and "description" in error.schema:  # its words, not its regular expression
        yield key, f"expected {error.schema['description']}, not {error.instance!r}", ""
    elif error.validator == "uniqueItems":  # (JSON Schema takes 4 and 4.0 for one value, as Python does)
        twice = repeated(map(str, error.instance))
        yield key, f"{twice} is given twice" if twice else f"needs each value once, found {error.instance!r}", ""
    elif error.validator in ("minItems", "maxItems"):  # jsonschema says "[...] is too short", not how long
        low, high = error.schema.get("minItems"), error.schema.get("maxItems")
        bound = "exactly" if low == high else "at least" if error.validator == "minItems" else "at most"
        needed = error.validator_value
        yield key, f"needs {bound} {needed} entr{'y' if needed == 1 else 'ies'}, found {error.instance!r}", ""
    else:
        yield key or "(top level)", error.message, ""


def _check_measures(measures: Iterable[str], key: str = "evaluation.measures") -> None:
    from examflow.evaluation.exam_qrels import measure_problems

    for name, message in measure_problems(measures).items():
        raise ConfigError(key, f"{name!r}: {message}")


def _key(path) -> str:
    key = ""
    for part in path:
        key += f"[{part}]" if isinstance(part, int) else (f".{part}" if key else str(part))
    return key


def _types(value) -> str:
    names = [value] if isinstance(value, str) else value
    return " or ".join("a list" if n == "array" else "a mapping" if n == "object" else a(n) for n in names)
