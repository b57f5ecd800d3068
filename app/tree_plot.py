"""HDBSCAN's condensed tree as an icicle: each cluster a box from the lambda it is born at (top) to the last
lambda under it, as wide as its points at birth, its children side by side inside its width. Selected clusters
take their cluster colour; a click on a box selects or deselects that cluster (``cluster_at``).
"""

from __future__ import annotations

import holoviews as hv
import numpy as np
import pandas as pd

from dpstudio.engine.hierarchy import CondensedTree, cluster_hierarchy

from .density_state import HDBSCANState
from .method_state import Unchanged
from .plot_frame import frame
from .plots import HALO_GREY, cluster_colour, detach_streams

UNSELECTED = "#e8e8e8"


def tree_boxes(tree: CondensedTree, selected: np.ndarray) -> pd.DataFrame:
    """One row per cluster but the root: its id, box (x0, lambda at birth, x1, lambda at its end), size at birth,
    stability, and colour (selected clusters in their label's colour: labels follow increasing id)."""
    n, clusters = tree.n_points, cluster_hierarchy(tree)
    m = clusters.parent.size
    size = np.full(m, n)
    is_cluster = tree.child >= n
    size[tree.child[is_cluster] - n] = tree.child_size[is_cluster]
    x0 = np.zeros(m)
    used = np.zeros(m)  # width already given to children, per cluster
    children_width = np.bincount(clusters.parent[1:], size[1:], m)
    for c in range(1, m):  # parents come before children: each child goes right of its earlier siblings, centred
        p = clusters.parent[c]
        x0[c] = x0[p] + (size[p] - children_width[p]) / 2 + used[p]
        used[p] += size[c]
    finite = np.isfinite(clusters.death) & (clusters.death > 0)
    top = clusters.death[finite].max() * 1.05 if finite.any() else 1.0  # lambda is infinite at distance 0
    death = np.where(np.isfinite(clusters.death), clusters.death, top)
    label = np.full(m, -1)
    label[np.asarray(selected, np.int64) - n] = np.arange(len(selected))
    ids = np.arange(1, m)
    return pd.DataFrame({
        "x0": x0[ids], "birth": clusters.birth[ids], "x1": x0[ids] + size[ids], "death": np.maximum(death[ids], clusters.birth[ids]),
        "cluster": ids + n, "size": size[ids], "stability": clusters.stability[ids], "label": label[ids],
        # strings even with no box (min_cluster_size >= N leaves only the root): an empty list would be a float
        # column, which BokehJS refuses as colours ("invalid color array") and then stops drawing the plot
        "colour": np.array([cluster_colour(lab) if lab >= 0 else UNSELECTED for lab in label[ids]], object),
    })  # fmt: skip


def cluster_at(boxes: pd.DataFrame, x: float, y: float) -> int | None:
    """The cluster whose box holds (x, lambda y), or None (boxes never overlap: children start where a parent ends)."""
    inside = (boxes["x0"] <= x) & (x < boxes["x1"]) & (boxes["birth"] <= y) & (y <= boxes["death"])
    return int(boxes["cluster"][inside].iloc[-1]) if inside.any() else None


class TreePlot:
    def __init__(self, state: HDBSCANState):
        self.state = state
        watched = hv.streams.Params(state, ["revision"])
        self.boxes = hv.DynamicMap(self._boxes, streams=[watched])
        self.tap = hv.streams.Tap(source=self.boxes)
        self._streams = [watched, self.tap]

    def plot(self) -> hv.DynamicMap:
        return self.boxes.opts(
            hv.opts.Rectangles(
                color="colour", line_color=HALO_GREY, line_width=0.5, invert_yaxis=True, tools=["hover", "tap"],
                hover_tooltips=TREE_TOOLTIPS,
                nonselection_alpha=1.0, **frame("Condensed tree", "click a branch to select or deselect it"),
                xaxis=None, default_tools=["wheel_zoom", "pan", "reset"], responsive=True, height=460, framewise=True,
            )
        )  # fmt: skip

    def clicked_cluster(self, x: float, y: float) -> int:
        """The cluster whose box was clicked; a click on none is said as a note (the root, drawn as no box, looked
        like a cluster that did not answer)."""
        cluster = cluster_at(self._current_boxes(), x, y)
        if cluster is None:
            raise Unchanged("No branch there, nothing changed: click a box of the condensed tree. Its root, all the "
                            "points above the first split, is never a cluster of its own.")
        return cluster

    def close(self) -> None:
        detach_streams(self._streams)

    def _current_boxes(self) -> pd.DataFrame:
        model = self.state.model
        return tree_boxes(model.condensed_tree_, model.selected_clusters_)

    def _boxes(self, revision):
        boxes = self._current_boxes() if self.state.loaded else NO_BOXES
        return hv.Rectangles(boxes, ["x0", "birth", "x1", "death"], ["cluster", "size", "stability", "label", "colour"]).redim.label(birth="λ")


# what a branch is to the analyst (the box's corners and its colour are drawing's, not the tree's)
TREE_TOOLTIPS = [("cluster", "@cluster"), ("label", "@label"), ("size", "@size"), ("stability", "@stability{0.[000]}"),
                 ("λ birth", "@birth{0.[000]}"), ("λ death", "@death{0.[000]}")]  # fmt: skip

# before HDBSCAN is shown; colours as strings, as BokehJS expects them in every later frame
NO_BOXES = pd.DataFrame({**{name: np.empty(0) for name in ("x0", "birth", "x1", "death", "stability")},
                         **{name: np.empty(0, np.int64) for name in ("cluster", "size", "label")},
                         "colour": np.empty(0, object)})  # fmt: skip
