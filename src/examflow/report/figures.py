"""The report's figures (matplotlib, PNG): the leaderboard as small multiples (docs/methods.md §5's figure, one
panel per measure), each measure against the official leaderboard, the grade distribution, the κ contingency table, NRP
per system, and the judges' agreement with the official leaderboard."""

from __future__ import annotations

import io
import math

import numpy as np
import pandas as pd
from matplotlib.backends.backend_agg import FigureCanvasAgg
from matplotlib.figure import Figure
from matplotlib.ticker import MaxNLocator

from examflow.report.board import Board, plain

DPI = 110


# How each group of runs is drawn (examflow.report.board): official runs stand out, the rest recede.
GROUP_STYLE = {
    "official": {"color": "tab:blue", "marker": "o", "label": "official run"},
    "run": {"color": "tab:blue", "marker": "o", "label": "run"},
    "extra": {"color": "tab:orange", "marker": "D", "label": "extra run (not on the official leaderboard)"},
    "pool": {"color": "0.45", "marker": "s", "label": "pool (_overall_)"},
    "gold": {"color": "0.45", "marker": "^", "label": "gold articles (_gold_)"},
}
PANEL_COLUMNS = 5  # 5 panels of about 1.7 inches fit a 1280-pixel screen beside the report's menu


def leaderboard_figure(board: Board) -> bytes:
    """Small multiples (docs/methods.md §5's leaderboard figure, readable at 40+ runs): one panel per measure,
    headline first, each on its own scale; one row per run, named on the axis, in official order; the
    score with its standard error; groups by colour and marker; the best official run ringed."""
    runs = board.figure_runs()
    columns = min(PANEL_COLUMNS, len(board.measures))
    panel_rows = math.ceil(len(board.measures) / columns)
    height = 0.9 + 0.15 * len(runs)
    fig, axes = _subplots(panel_rows, columns, figsize=(max(7.0, 1.5 + 1.7 * columns), height * panel_rows + 0.6),
                          sharey=True, squeeze=False)  # fmt: skip
    y = pd.Series(np.arange(len(runs)), index=runs)
    groups = pd.Series([board.group(run) for run in runs], index=runs)
    for ax, measure in zip(axes.flat, board.measures):
        scores = board.scores(measure).reindex(runs)
        for group, style in GROUP_STYLE.items():
            mine = scores[groups == group].dropna(subset=["score"])
            if mine.empty:
                continue
            ax.errorbar(mine["score"], y[mine.index], xerr=mine["stderr"].fillna(0), fmt=style["marker"],
                        color=style["color"], markersize=3.5, elinewidth=0.8, capsize=0, label=style["label"])  # fmt: skip
        best = board.best(measure)
        ax.scatter(scores.loc[best, "score"], y[best], s=70, facecolors="none", edgecolors="black", linewidths=1)
        agreement = board.agreement(measure)
        ax.set_title(board.label(measure) + (f"\nρ {plain(agreement['spearman'])}, τ-b {plain(agreement['kendall'])}"
                                if agreement is not None else ""), fontsize=8)  # fmt: skip
        ax.grid(axis="y", color="0.9", linewidth=0.6)
        ax.tick_params(labelsize=7)
        ax.set_axisbelow(True)
    for ax in list(axes.flat)[len(board.measures) :]:
        ax.axis("off")
    axes[0, 0].set_yticks(y.to_numpy(), runs, parse_math=False)  # a run named `$x$` shows as written
    axes[0, 0].set_ylim(len(runs) - 0.5, -0.5)  # the first run on top
    order = "official order, then the runs off it" if board.official else f"{board.headline} order"
    fig.suptitle(f"{board.method}: the leaderboard at τ = {board.tau:g}, one panel per measure; runs in {order}; "
                 f"ring: best {'official run' if board.official else 'run'}", fontsize=9, parse_math=False,
                 wrap=True)  # fmt: skip
    handles = {label: handle for ax in axes.flat for handle, label in zip(*ax.get_legend_handles_labels())}
    shown = {label: handles[label] for label in (s["label"] for s in GROUP_STYLE.values()) if label in handles}
    fig.legend(shown.values(), shown.keys(), loc="lower center", ncols=len(shown), fontsize=7, frameon=False)
    fig.tight_layout(rect=(0, 0.35 / fig.get_figheight(), 1, 1))
    return _png(fig, layout=False)


def scatter_figure(board: Board) -> bytes:
    """Each measure against the official rank, ρ and τ in the title; measures in the method's order."""
    official = board.official or {}
    runs = board.official_runs()
    columns = min(4, len(board.measures)) or 1
    rows = math.ceil(len(board.measures) / columns)
    # at least as wide as the title: one measure's panel alone cut it at both ends
    fig, axes = _subplots(rows, columns, figsize=(max(3.2 * columns, 5.2), 2.9 * rows), squeeze=False)
    for ax, measure in zip(axes.flat, board.measures):
        scores = board.scores(measure).reindex(runs).dropna(subset=["score"])
        ax.scatter([official[r] for r in scores.index], scores["score"], s=14)
        agreement = board.agreement(measure)
        rho, kendall = (agreement["spearman"], agreement["kendall"]) if agreement is not None else (math.nan,) * 2
        ax.set_title(f"{board.label(measure)}\nρ = {rho:.3f}, τ = {kendall:.3f}", fontsize=8)
        ax.set_xlabel("official rank", fontsize=7)
        ax.xaxis.set_major_locator(MaxNLocator(integer=True))  # ranks (a tie's average may fall between)
        ax.tick_params(labelsize=7)
    for ax in list(axes.flat)[len(board.measures) :]:
        ax.axis("off")
    fig.suptitle(f"Each measure at τ = {board.tau:g} against the official leaderboard", fontsize=10)
    return _png(fig)


def grade_distribution(grades: pd.DataFrame) -> bytes:
    """How many pairs got each grade; failed and unparsable answers as bars of their own."""
    counts = grades.loc[grades["error"].isna(), "rating"].dropna().astype(int).value_counts().sort_index()
    labels = [str(g) for g in counts.index] + ["unparsable", "failed"]
    values = counts.tolist() + [
        int(grades.get("unparsable", pd.Series(dtype=bool)).sum()),
        int(grades["error"].notna().sum()),
    ]
    fig, ax = _subplots(figsize=(6, 3.6))
    colors = ["tab:blue"] * len(counts) + ["tab:orange", "tab:red"]
    ax.bar(labels, values, color=colors)
    for i, value in enumerate(values):
        ax.annotate(str(value), (i, value), ha="center", va="bottom", fontsize=7)
    ax.set_xlabel("grade")
    ax.set_ylabel("(passage, question) pairs")
    ax.set_title(f"Grades of {len(grades)} pairs")
    return _png(fig)


def _kappa(value: float | None) -> str:
    """κ to three decimals; a dash where it is empty (no pair, or a STRICT label the judge never gives)."""
    return "–" if value is None or math.isnan(value) else f"{value:.3f}"


def kappa_heatmap(agreement: pd.DataFrame, kappa: pd.DataFrame) -> bytes:
    """The graded contingency table (EXAM-Label × official judgment) as a heatmap, κ in the title."""
    graded = agreement[agreement["table"] == "graded"].pivot_table(
        "count", "label", "judgment", aggfunc="sum", fill_value=0
    )
    fig, ax = _subplots(figsize=(1.2 * graded.shape[1] + 2.5, 0.5 * graded.shape[0] + 2))
    image = ax.imshow(graded.to_numpy(), cmap="Blues", aspect="auto")
    for (i, j), count in np.ndenumerate(graded.to_numpy()):
        ax.annotate(str(count), (j, i), ha="center", va="center", fontsize=8,
                    color="white" if count > graded.to_numpy().max() / 2 else "black")  # fmt: skip
    ax.set_xticks(range(graded.shape[1]), graded.columns)
    ax.set_yticks(range(graded.shape[0]), graded.index)
    ax.set_xlabel("official judgment")
    ax.set_ylabel("EXAM-Label")
    values = dict(zip(kappa["table"], kappa["kappa"]))
    no_pairs = not kappa["n_pairs"].gt(0).any()  # official qrels given, but none judges a pooled passage
    ax.set_title(
        "no pooled passage has an official judgment"
        if no_pairs
        else f"κ lenient {_kappa(values.get('lenient'))}, strict {_kappa(values.get('strict'))}",
        fontsize=9,
    )
    fig.colorbar(image, ax=ax, shrink=0.8)
    return _png(fig)


def nrp_figure(per_system: pd.DataFrame, denominator: str) -> bytes:
    """NRP per system (LLM / prompt) with standard errors, one line per dimension; the title names the
    denominator (docs or list: the same answers score differently under each)."""
    from examflow.nrp.evaluate import DENOMINATORS

    per_system = per_system.assign(system=per_system["llm"] + " / " + per_system["prompt"])
    headline = "combined" if "combined" in set(per_system["dimension"]) else per_system["dimension"].iloc[0]
    order = per_system[per_system["dimension"] == headline].sort_values("nrp", ascending=False)["system"].tolist()
    fig, ax = _subplots(figsize=(max(6.0, 0.7 * len(order) + 3), 4.2))
    x = np.arange(len(order))
    for (dimension, ranker), group in per_system.groupby(["dimension", "ranker"], sort=True):
        group = group.set_index("system").reindex(order)
        ax.errorbar(x, group["nrp"], yerr=group["stderr"], marker="o", markersize=3, capsize=2,
                    linewidth=2 if dimension == headline else 1, label=f"{dimension} ({ranker})")  # fmt: skip
    ax.set_xticks(x, order, rotation=30, ha="right", fontsize=8)
    ax.set_ylim(0, 1.05)
    ax.set_ylabel("NRP (1 = above every judged document)")
    ax.set_title(f"NRP per system (denominator {denominator}: NRP = {DENOMINATORS[denominator]})")
    ax.legend(fontsize=7)
    return _png(fig)


def judges_figure(agreement: pd.DataFrame, statistic: str = "kendall") -> bytes:
    """Each judge's agreement with the official leaderboard under each measure: the statistic with its
    bootstrap interval, one row per judge (best first under the first measure), one marker per measure."""
    chosen = agreement[agreement["statistic"] == statistic]
    measures = list(dict.fromkeys(chosen["measure"]))
    first = chosen[chosen["measure"] == measures[0]].sort_values("value", ascending=True, na_position="first")
    judges = list(dict.fromkeys([*first["label_set"], *chosen["label_set"]]))
    fig, ax = _subplots(figsize=(7.5, max(3.2, 1.2 + 0.45 * len(judges) * max(1, len(measures) / 2))))
    offsets = np.linspace(-0.25, 0.25, len(measures)) if len(measures) > 1 else [0.0]
    for offset, measure in zip(offsets, measures):
        rows = chosen[chosen["measure"] == measure].set_index("label_set").reindex(judges)
        y = np.arange(len(judges)) + offset
        error = np.vstack([rows["value"] - rows["low"], rows["high"] - rows["value"]])
        ax.errorbar(rows["value"], y, xerr=np.nan_to_num(error.clip(min=0)), fmt="o", capsize=3, label=measure)
    ax.set_yticks(np.arange(len(judges)), judges)
    ax.axvline(0, color="0.7", linewidth=0.8)
    ax.set_xlim(-1.05, 1.05)
    ax.set_xlabel(f"{statistic} with the official leaderboard (95 % bootstrap interval)")
    ax.set_title("Judges: agreement with the official leaderboard")
    ax.legend(fontsize=8, loc="lower left")
    return _png(fig)


def _subplots(rows: int = 1, columns: int = 1, *, figsize: tuple[float, float], **options):
    """A figure and its axes as pyplot's `subplots` makes them, drawn by Agg, without pyplot: its import
    (0.4 s more in every report job on a 2-core machine) and its registry of open figures serve a display."""
    fig = Figure(figsize=figsize)
    FigureCanvasAgg(fig)
    return fig, fig.subplots(rows, columns, **options)


def _png(fig: Figure, layout: bool = True) -> bytes:
    buffer = io.BytesIO()
    if layout:
        fig.tight_layout()
    fig.set_layout_engine(None)  # tight_layout leaves a placeholder engine, and savefig would draw twice for it
    fig.savefig(buffer, format="png", dpi=DPI, metadata={"Software": None})  # no version stamp: same figure, same bytes
    return buffer.getvalue()
