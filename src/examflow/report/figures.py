"""The report's figures (matplotlib, PNG): the leaderboard figure of SPEC §5, each measure against
the official leaderboard, the grade distribution, the κ contingency table, and NRP per system."""

from __future__ import annotations

import io
import math

import matplotlib

matplotlib.use("Agg")  # files only, no display
import matplotlib.pyplot as plt  # noqa: E402
import numpy as np  # noqa: E402
import pandas as pd  # noqa: E402

DPI = 110


def systems_at(board: pd.DataFrame, tau) -> pd.DataFrame:
    """The systems' rows of each measure at τ, and of the measures that have no τ."""
    systems = board[board["kind"] == "system"]
    return systems[(systems["tau"] == tau) | systems["tau"].isna()]


def system_order(board: pd.DataFrame, official: dict[str, float] | None) -> list[str]:
    """Official order where there is an official leaderboard (its runs only), else by EXAM-Cover."""
    runs = board["run_id"].unique().tolist()
    if official:
        return sorted((r for r in runs if r in official), key=lambda r: (official[r], r))
    cover = board[board["measure"] == "exam_cover"].set_index("run_id")["score"]
    return sorted(runs, key=lambda r: (-cover.get(r, 0.0), r))


def leaderboard_figure(board: pd.DataFrame, official: dict[str, float] | None, tau) -> bytes:
    """Systems in official order; each measure min/max re-normalised to [0, 1], its standard-error bars
    scaled alike; one line per measure (SPEC §5)."""
    rows = systems_at(board, tau)
    order = system_order(rows, official)
    fig, ax = plt.subplots(figsize=(max(6.0, 0.55 * len(order) + 3), 4.6))
    x = np.arange(len(order))
    for measure, group in rows.groupby("measure", sort=True):
        group = group.set_index("run_id").reindex(order)
        low, high = group["score"].min(), group["score"].max()
        span = high - low if high > low else 1.0
        ax.errorbar(x, (group["score"] - low) / span, yerr=group["stderr"].fillna(0) / span, marker="o",
                    markersize=3, capsize=2, linewidth=1, label=measure)  # fmt: skip
    if official:
        ranks = np.array([official[r] for r in order])
        spread = ranks.max() - ranks.min() or 1.0
        ax.plot(x, (ranks.max() - ranks) / spread, color="black", linewidth=2, linestyle="--", label="official")
    ax.set_xticks(x, order, rotation=45, ha="right", fontsize=8)
    ax.set_ylabel("score, min/max re-normalised")
    ax.set_title(f"Leaderboard at τ = {tau:g} (systems in {'official' if official else 'EXAM-Cover'} order)")
    ax.legend(fontsize=7, ncols=2, loc="best")
    return _png(fig)


def scatter_figure(board: pd.DataFrame, correlation: pd.DataFrame, official: dict[str, float], tau) -> bytes:
    """Each measure against the official rank, ρ and τ in the title."""
    rows = systems_at(board, tau)
    rows = rows[rows["run_id"].isin(official)]
    measures = sorted(rows["measure"].unique())
    columns = min(4, len(measures)) or 1
    fig, axes = plt.subplots(math.ceil(len(measures) / columns), columns, figsize=(3.2 * columns, 2.9 * math.ceil(len(measures) / columns)), squeeze=False)  # fmt: skip
    stats = correlation.set_index(["measure", correlation["tau"].fillna(-1)])
    for ax, measure in zip(axes.flat, measures):
        group = rows[rows["measure"] == measure]
        ax.scatter([official[r] for r in group["run_id"]], group["score"], s=14)
        key = (measure, tau if not group["tau"].isna().all() else -1)
        rho, kendall = (
            (stats.loc[key, "spearman"], stats.loc[key, "kendall"]) if key in stats.index else (math.nan,) * 2
        )
        ax.set_title(f"{measure}\nρ = {rho:.3f}, τ = {kendall:.3f}", fontsize=8)
        ax.set_xlabel("official rank", fontsize=7)
        ax.tick_params(labelsize=7)
    for ax in list(axes.flat)[len(measures) :]:
        ax.axis("off")
    fig.suptitle(f"Each measure at τ = {tau:g} against the official leaderboard", fontsize=10)
    return _png(fig)


def grade_distribution(grades: pd.DataFrame) -> bytes:
    """How many pairs got each grade; failed and unparsable answers as bars of their own."""
    counts = grades.loc[grades["error"].isna(), "rating"].dropna().astype(int).value_counts().sort_index()
    labels = [str(g) for g in counts.index] + ["unparsable", "failed"]
    values = counts.tolist() + [
        int(grades.get("unparsable", pd.Series(dtype=bool)).sum()),
        int(grades["error"].notna().sum()),
    ]
    fig, ax = plt.subplots(figsize=(6, 3.6))
    colors = ["tab:blue"] * len(counts) + ["tab:orange", "tab:red"]
    ax.bar(labels, values, color=colors)
    for i, value in enumerate(values):
        ax.annotate(str(value), (i, value), ha="center", va="bottom", fontsize=7)
    ax.set_xlabel("grade")
    ax.set_ylabel("(passage, question) pairs")
    ax.set_title(f"Grades of {len(grades)} pairs")
    return _png(fig)


def kappa_heatmap(agreement: pd.DataFrame, kappa: pd.DataFrame) -> bytes:
    """The graded contingency table (EXAM-Label × official judgment) as a heatmap, κ in the title."""
    graded = agreement[agreement["table"] == "graded"].pivot_table(
        "count", "label", "judgment", aggfunc="sum", fill_value=0
    )
    fig, ax = plt.subplots(figsize=(1.2 * graded.shape[1] + 2.5, 0.5 * graded.shape[0] + 2))
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
        else f"κ lenient {values.get('lenient', math.nan):.3f}, strict {values.get('strict', math.nan):.3f}",
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
    fig, ax = plt.subplots(figsize=(max(6.0, 0.7 * len(order) + 3), 4.2))
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


def _png(fig) -> bytes:
    buffer = io.BytesIO()
    fig.tight_layout()
    fig.savefig(buffer, format="png", dpi=DPI, metadata={"Software": None})  # no version stamp: same figure, same bytes
    plt.close(fig)
    return buffer.getvalue()
