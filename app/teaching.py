"""The teaching view's state (no UI code): DPC and DBSCAN explained on the data themselves.

* One point, clicked in the 2-D view. DPC: the points its ρ counts (within dc), the arrow to its nearest denser
  point (δ, its parent) and the chain of arrows on to the center whose label it takes. DBSCAN: the points within
  ε, and whether that makes it a core point, a border point or noise.
* DPC's parent forest: every point's arrow to its parent at once. DBSCAN's edges: the mutual-reachability tree's
  edges within ε, which join the core points into the clusters; and the ε circle of every core point.
* A step-through of DPC: ρ, then the points in density order linking to their parents, the peaks, the labels
  flowing down the arrows in density order, and the halo.

The forest, the edges, the circles and the step-through draw every point and arrow one by one, so they are offered up to
TEACHING_MAX points; one point's explanation works at any size. Plain functions of arrays do the work, tested
headless.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
import param

from dpstudio.engine.cpu import density_order
from dpstudio.engine.notation import short
from dpstudio.engine.vptree import float32_square

from .pointing import nearest_point
from .wording import counted

TEACHING_MAX = 5_000  # points up to which the forest and the step-through are drawn (a teacher's data set)
MAX_RINGED = 5_000  # counted points ringed one by one; more are said in words only
STEP_CHUNKS = 8  # steps in which the density order links to parents, and then passes labels on


@dataclass(frozen=True)
class Step:
    """One step of the step-through: its stage and how far along the density order it has come."""

    stage: str  # "rho", "delta", "peaks", "labels" or "halo"
    reached: int  # points of the density order done (delta and labels; every point for the other stages)
    text: str


def within(points: np.ndarray, i: int, radius: float, closed: bool = False) -> np.ndarray:
    """Mask of the points j != i with d_ij < radius (``closed``: <=), decided as the engine decides it: float32
    squares summed in dimension order against float32(radius^2). Within dc (open): the points point i's cut-off
    ρ counts; within ε (closed): its DBSCAN neighbours but itself."""
    points = np.asarray(points, np.float32)
    distance2 = np.zeros(points.shape[0], np.float32)
    for k in range(points.shape[1]):
        difference = points[:, k] - points[i, k]
        distance2 += difference * difference
    reach2 = float32_square(radius)
    mask = distance2 <= reach2 if closed else distance2 < reach2
    mask[i] = False
    return mask


def chain_to_center(parent: np.ndarray, centers: np.ndarray, i: int) -> np.ndarray:
    """Point i, its parent, the parent's parent and so on, up to the first center (or the densest point)."""
    is_center = np.zeros(parent.size, bool)
    is_center[centers] = True
    chain = [i]
    while not is_center[chain[-1]] and parent[chain[-1]] >= 0:
        chain.append(int(parent[chain[-1]]))
    return np.asarray(chain, np.int64)


def follow_parents(parent: np.ndarray, order: np.ndarray, centers: np.ndarray, reached: int) -> np.ndarray:
    """Labels after the first ``reached`` points of the density order took their parent's label (-1: none yet,
    or a chain that meets no center). Centers are labelled 0..k-1 in their given order."""
    labels = np.full(parent.size, -1, np.int64)
    labels[centers] = np.arange(centers.size)
    for i in order[:reached]:
        if labels[i] < 0 and parent[i] >= 0:
            labels[i] = labels[parent[i]]
    return labels


AUTOMATIC = (" These are the automatic clusters' centers, each cluster's densest point. The labels below flow from "
             "them down DPC's arrows; the automatic clusters themselves follow the kNN density's own chains, so a "
             "few points may differ.")  # fmt: skip


def steps(n_points: int, chunks: int = STEP_CHUNKS, automatic: bool = False) -> list[Step]:
    """The step-through, first to last; ``automatic``: the centers are the automatic clusters' (the peaks' step says
    whose they are, and that those clusters follow other chains)."""
    reached = [round(n_points * k / chunks) for k in range(1, chunks + 1)]
    return [
        Step("rho", n_points, "**ρ**: every point counts its neighbours within dc. Brighter: denser."),
        *(Step("delta", r, f"**δ**: in decreasing density, each point links to its nearest denser point "
                           f"({r:,} of {n_points:,} linked).") for r in reached),
        Step("peaks", n_points, "**Peaks**: the centers, dense and far from anything denser (top right of the decision "
                                "graph)." + (AUTOMATIC if automatic else "")),
        *(Step("labels", r, f"**Labels** flow down the arrows, densest first: each point takes its parent's "
                            f"({r:,} of {n_points:,} in density order).") for r in reached),
        Step("halo", n_points, "**Halo**: points less dense than their cluster's border with another (grey) are the "
                               "clusters' halo: borders and noise."),
    ]  # fmt: skip


def arrow_segments(x: np.ndarray, y: np.ndarray, tails: np.ndarray, heads: np.ndarray,
                   spans: tuple[float, float], head_size: float = 0.015) -> tuple[np.ndarray, ...]:  # fmt: skip
    """(x0, y0, x1, y1) of arrows from points ``tails`` to points ``heads``: each a shaft and two barbs at the
    head. The barbs are ``head_size`` of the shown ranges (``spans``) long, and shaped in those proportions, so
    they look alike on either axis's scale; an arrow shorter than three barbs gets smaller ones."""
    x_span, y_span = (span or 1.0 for span in spans)
    x0, y0, x1, y1 = x[tails], y[tails], x[heads], y[heads]
    u, v = (x1 - x0) / x_span, (y1 - y0) / y_span  # direction in screen proportions
    length = np.hypot(u, v)
    barb = np.minimum(head_size, length / 3)
    safe = np.where(length > 0, length, 1.0)
    ends_x, ends_y = [x1], [y1]
    for turn in (np.pi / 7, -np.pi / 7):  # barbs swept back from the direction of travel
        cos, sin = np.cos(turn), np.sin(turn)
        ends_x.append(x1 - barb * (cos * u - sin * v) / safe * x_span)
        ends_y.append(y1 - barb * (sin * u + cos * v) / safe * y_span)
    starts_x, starts_y = np.concatenate([x0, x1, x1]), np.concatenate([y0, y1, y1])
    return starts_x, starts_y, np.concatenate(ends_x), np.concatenate(ends_y)


class Teaching(param.Parameterized):
    """What the teaching view shows over a Studio's DPC state: the point explained, the forest, the step."""

    point = param.Integer(default=None, allow_None=True, constant=True, doc="the point explained, if any")
    forest = param.Boolean(default=False, constant=True, doc="DPC: draw every point's arrow to its parent")
    edges = param.Boolean(default=False, constant=True, doc="DBSCAN: draw the tree's edges within eps")
    circles = param.Boolean(default=False, constant=True, doc="DBSCAN: draw the eps circle of every core point")
    step = param.Integer(default=None, allow_None=True, constant=True, doc="the step-through's step; None: off")

    def __init__(self, studio, **params):
        super().__init__(**params)
        self.studio = studio
        self._explained: tuple | None = None  # ((point, method, revision), explanation): one computation for all
        studio.param.watch(self._reset, ["dataset"])

    @property
    def available(self) -> bool:
        """Whether the forest, the edges and the step-through can be shown (at most TEACHING_MAX points)."""
        return self.studio.dataset is not None and self.studio.dataset.n_points <= TEACHING_MAX

    @property
    def explains(self) -> bool:
        """Whether the method shown is one this view explains (DPC or DBSCAN) and is loaded."""
        return self.studio.method in ("dpc", "dbscan") and self.studio.active.loaded

    # actions ------------------------------------------------------------------------------------------------
    def explain_at(self, x: float | None, y: float | None, x_range=None, y_range=None) -> None:
        """Explain the point nearest a click at (x, y) on the 2-D view; a click on no point stops explaining."""
        point = None
        if x is not None and y is not None and self.explains:
            point = nearest_point(*self.studio.plot_coordinates("view"), (x, y), x_range, y_range)
        self.explain(point)

    def explain(self, point: int | None) -> None:
        if point is not None and not 0 <= point < self.studio.dataset.n_points:
            raise ValueError(f"no point {point} in {self.studio.dataset.n_points:,} points")
        with param.edit_constant(self):
            self.point = point

    def show_forest(self, show: bool) -> None:
        self._require_small("the parent forest")
        with param.edit_constant(self):
            self.forest = bool(show)

    def show_edges(self, show: bool) -> None:
        self._require_small("the tree's edges")
        with param.edit_constant(self):
            self.edges = bool(show)

    def show_circles(self, show: bool) -> None:
        self._require_small("the ε circles")
        with param.edit_constant(self):
            self.circles = bool(show)

    def go_to_step(self, step: int | None) -> None:
        """Show step ``step`` of the step-through (None: leave it)."""
        if step is not None:
            self._require_small("the step-through")
            last = len(self.steps()) - 1
            if not 0 <= step <= last:
                raise ValueError(f"the step-through has steps 0 to {last}, got {step}")
        with param.edit_constant(self):
            self.step = step

    # what the views draw ------------------------------------------------------------------------------------
    def steps(self) -> list[Step]:
        return steps(self.studio.dataset.n_points, automatic=not self.studio.dpc.centers_picked)

    def explanation(self) -> dict | None:
        """The point explained: the points within its radius (``counted``; dc or ε), the radius, and for DPC its
        chain to a center (``chain``, starting at the point) and its facts."""
        if self.point is None or not self.explains:
            return None
        key = (self.point, self.studio.method, self.studio.revision)  # the page's line and the layers ask alike
        if self._explained is None or self._explained[0] != key:
            self._explained = (key, self._explain())
        return self._explained[1]

    def _explain(self) -> dict:
        points, i = self.studio.dataset.points.values, self.point
        if self.studio.method == "dbscan":
            model = self.studio.dbscan.model
            return {"counted": within(points, i, model.eps_, closed=True), "radius": model.eps_, "chain": np.array([i])}
        model = self.studio.dpc.model
        return {"counted": within(points, i, model.dc_), "radius": float(model.dc_),
                "chain": chain_to_center(model.parent_, model.centers_, i), "rho": float(model.rho_[i]),
                "delta": float(model.delta_[i]), "kernel": model.kernel_}  # fmt: skip

    def describe(self) -> str:
        """The explanation in words."""
        facts = self.explanation()
        if facts is None:
            return ""
        if self.studio.method == "dbscan":
            return self._describe_dbscan(facts)
        rows, chain, n_within = self.studio.dataset.points.rows, facts["chain"], int(facts["counted"].sum())
        if facts["kernel"] == "cutoff":
            density = f"ρ = {facts['rho']:g}: the points within dc = {short(facts['radius'])}"
        else:
            density = (f"ρ = {short(facts['rho'])}, the Gaussian sum over every point; the {n_within:,} within dc = "
                       f"{short(facts['radius'])} add the most")  # fmt: skip
        ringed = " (ringed)" if n_within <= MAX_RINGED else f" ({n_within:,}: too many to ring)"
        parts = [f"**Row {rows[chain[0]]}** · {density}{ringed}"]
        if chain.size == 1:
            parts.append("it is a center" if self._is_center(chain[0]) else "the densest point")
        else:
            parts.append(f"δ = {short(facts['delta'])} to row {rows[chain[1]]}, its nearest denser point (the arrow)")
            end = chain[-1]
            target = f"center row {rows[end]}" if self._is_center(end) else f"the densest point, row {rows[end]}"
            parts.append(f"{counted(chain.size - 1, 'arrow')} to {target}")
        if not self.studio.dpc.centers_picked:
            parts.append("automatic clusters follow the kNN density's own chains; pick centers to follow these")
        return " · ".join(parts)

    def _describe_dbscan(self, facts: dict) -> str:
        state, i = self.studio.dbscan, self.point
        rows, near = self.studio.dataset.points.rows, int(facts["counted"].sum()) + 1  # itself counts (scikit-learn's min_samples)
        within_eps = f"{counted(near, 'point')} within ε = {short(facts['radius'])}, itself counted (ringed)"
        label = state.label_of(i)
        if state.core()[i]:
            kind = f"a core point of cluster {label}: {within_eps}, at least min_samples = {state.min_samples}"
        elif label >= 0:
            kind = f"a border point of cluster {label}: {within_eps}, fewer than min_samples = {state.min_samples}, but one of them is a core point"
        else:
            kind = f"noise: {within_eps}, fewer than min_samples = {state.min_samples}, and none of them is a core point"
        return f"**Row {rows[i]}** · {kind}"

    def forest_arrows(self) -> tuple[np.ndarray, np.ndarray]:
        """(tails, heads) of every point's arrow to its parent, when DPC's forest is shown."""
        if not (self.forest and self.available and self.studio.method == "dpc"):
            return np.empty(0, np.int64), np.empty(0, np.int64)
        parent = self.studio.dpc.model.parent_
        tails = np.flatnonzero(parent >= 0)
        return tails, parent[tails]

    def joining_edges(self) -> tuple[np.ndarray, np.ndarray]:
        """(u, v) of DBSCAN's tree edges within ε, when they are shown."""
        if not (self.edges and self.available and self.studio.method == "dbscan"):
            return np.empty(0, np.int64), np.empty(0, np.int64)
        return self.studio.dbscan.model.joining_edges_

    def core_circles(self) -> tuple[np.ndarray, float]:
        """(core points, ε) of DBSCAN's ε circles, when they are shown and the 2-D view shows the features distances
        are measured in (a circle in a projection would mislead)."""
        if not (self.circles and self.available and self.studio.method == "dbscan" and self.studio.view_shows_features):
            return np.empty(0, np.int64), 0.0
        model = self.studio.dbscan.model
        return model.core_sample_indices_, float(model.eps_)

    def step_picture(self) -> dict | None:
        """What the current step shows: per point a colour role ('rho' value, label, or -1 for not yet / halo),
        the arrows drawn bold and faint, and the centers."""
        if self.step is None or not self.available or self.studio.method != "dpc":
            return None
        model, step = self.studio.dpc.model, self.steps()[self.step]
        (order, _), parent, centers = density_order(model.rho_), model.parent_, model.centers_
        linked = order[: step.reached] if step.stage == "delta" else order
        linked = linked[parent[linked] >= 0]
        picture = {"stage": step.stage, "text": step.text, "rho": model.rho_, "centers": centers,
                   "bold": (linked, parent[linked]) if step.stage == "delta" else None,
                   "faint": None if step.stage in ("rho", "delta") else (linked, parent[linked]), "labels": None}  # fmt: skip
        if step.stage in ("labels", "halo"):
            labels = follow_parents(parent, order, centers, step.reached)
            picture["labels"] = np.where(model.halo_, -1, labels) if step.stage == "halo" else labels
        return picture

    # helpers ------------------------------------------------------------------------------------------------
    def _is_center(self, i: int) -> bool:
        return bool(np.isin(i, self.studio.dpc.model.centers_))

    def _require_small(self, what: str) -> None:
        if not self.available:
            raise ValueError(f"{what} is drawn for data sets of up to {TEACHING_MAX:,} points "
                             f"(this one has {self.studio.dataset.n_points:,}); click a point to explain it instead")  # fmt: skip

    def _reset(self, *events) -> None:
        """Another data set: nothing of the old one is explained."""
        with param.edit_constant(self):
            self.param.update(point=None, forest=False, edges=False, circles=False, step=None)
