"""The sidebar controls of DBSCAN and HDBSCAN: widgets bound to their states, and the clicks on their plots.

Actions go through the page's runners: ``start`` runs one in a worker thread with progress; ``follow`` runs the
latest of a stream of values (a dragged slider), dropping the ones that a newer value overtook.
"""

from __future__ import annotations

import math
from collections.abc import Callable
from functools import partial

import panel as pn
from bokeh.models import CustomJSTickFormatter, PrintfTickFormatter

from .dbscan_plots import DBSCANPlots
from .density_state import DBSCANState, HDBSCANState
from .tree_plot import TreePlot
from .wording import counted

# choices shown as buttons: the chosen one filled, the others outlined (Panel's default greys look alike)
CHOICE_STYLE = {"button_type": "primary", "button_style": "outline"}

EPS_STEPS = 400  # slider positions between the ends of the eps range (log scale)
# the slider moves log10(eps); its label shows eps
# the slider's eps (its value is log10 eps) to 3 significant digits, as the engine's ``short`` writes it: 1e9, not
# 1000000000
EPS_LABEL = """
const eps = Math.pow(10, tick), size = Math.abs(eps);
if (size >= 999.5 || (size > 0 && size < 1e-4)) {  // (what rounds to 1000 at 3 digits is 1e3)
  const [mantissa, power] = eps.toExponential(2).split("e");
  return `${Number(mantissa)}e${parseInt(power)}`;
}
return Number(eps.toPrecision(3)).toString();
"""
SMALLEST_STEP = 1e-16  # the smallest step Bokeh's number box takes
STATUS = ["dp-status"]


def whole_number_input(name: str, **options) -> pn.widgets.FloatInput:
    """A box for a whole number, unbounded (see DBSCANControls). A FloatInput, not an IntInput: a number past 2**53
    typed there reached the server as a float, which the IntInput refused in a traceback, the box showing it beside
    the value in use; the state's check refuses it, and a fraction, by name."""
    return pn.widgets.FloatInput(name=name, step=1, **options)


class DBSCANControls:
    def __init__(self, state: DBSCANState, plots: DBSCANPlots, start: Callable, follow: Callable):
        self.state, self.start, self.follow = state, start, follow
        eps_label = CustomJSTickFormatter(code=EPS_LABEL)  # its own: a Bokeh model belongs to one session's document
        self.eps = pn.widgets.FloatSlider(name="ε (log scale: drag, the points follow)", format=eps_label, value=0.0)
        # 6 significant digits, as _typed rounds: a fixed number of decimals showed 0 for data in small units
        self.eps_typed = pn.widgets.FloatInput(name="ε (type a value)", format=PrintfTickFormatter(format="%.6g"))
        # no bounds on the whole-number boxes: the browser kept a value out of them on show, unsent, beside the
        # clustering of the last good one; the state refuses it with a message instead
        self.min_samples = whole_number_input("min_samples (the point counted)", width=150)
        self.show_core = pn.widgets.Checkbox(name="Core points larger than border points", value=True)
        self.counts = pn.pane.Markdown()
        self.eps.param.watch(self._eps_moved, "value")
        self.eps_typed.param.watch(self._eps_typed, "value")
        self.min_samples.param.watch(lambda e: self._changed("min_samples", e.new, "Building the tree", state.set_min_samples), "value")
        self.show_core.param.watch(lambda e: self._changed("show_core", e.new, "Redrawing", state.set_show_core), "value")
        for axis, stream in plots.eps_events:
            stream.add_subscriber(lambda axis=axis, **position: self._set_eps(position[axis]))
        state.param.watch(self.show, ["eps", "min_samples", "dataset"])
        self.panel = pn.Column(
            "### DBSCAN", self.eps, self.eps_typed, self.counts, self.min_samples, self.show_core,
            pn.pane.Markdown("Or click / drag on the k-distance plot and the curves under the plots. Noise is grey.",
                             css_classes=STATUS),
            sizing_mode="stretch_width",
        )  # fmt: skip

    def show(self, *events) -> None:
        state = self.state
        if not state.loaded:
            return
        low, high = (math.log10(e) for e in state.eps_view)
        log_eps = math.log10(state.eps)
        self.eps.param.update(start=low, end=high, step=(high - low) / EPS_STEPS)
        if not math.isclose(10**self.eps.value, state.eps, rel_tol=1e-9):  # a value sent back mid-drag would jump
            self.eps.value = log_eps
        # arrows: 1-10% (at least Bokeh's smallest step: 1e-31 for an eps of 1e-30 failed its check, and the box's update was lost)
        self.eps_typed.param.update(value=_typed(state.eps), step=max(10 ** (math.floor(math.log10(state.eps)) - 1), SMALLEST_STEP))
        self.min_samples.value = state.min_samples
        clusters, noise = state.curve().at(state.eps)
        self.counts.object = (f"**{counted(clusters, 'cluster')}, {counted(noise, 'noise point')}** "
                              f"({100 * noise / state.dataset.n_points:.1f}%)")  # fmt: skip

    def _changed(self, name: str, value, label: str, action: Callable) -> None:
        if self.state.loaded and getattr(self.state, name) != value:  # not just show()
            self.start(label, action, value)

    def _eps_moved(self, event) -> None:
        if self.state.loaded and not math.isclose(10**event.new, self.state.eps, rel_tol=1e-9):  # not just show()
            self.follow("Relabelling", self.state.set_eps, 10**event.new)

    def _eps_typed(self, event) -> None:
        if event.new is None and self.state.loaded:  # emptied: the eps in use again (Bokeh's format showed "NaN")
            self.eps_typed.value = _typed(self.state.eps)
        elif event.new != _typed(self.state.eps):  # not just show() writing the rounded value back
            self._set_eps(event.new, typed=True)

    def _set_eps(self, eps, typed: bool = False) -> None:
        if eps is not None and self.state.loaded and not math.isclose(eps, self.state.eps, rel_tol=1e-6):
            self.follow("Relabelling", partial(self.state.set_eps, typed=typed), float(eps))


def _typed(eps: float) -> float:
    """eps as the typed-value box shows it (6 significant digits)."""
    return float(f"{eps:.6g}")


class HDBSCANControls:
    def __init__(self, state: HDBSCANState, plot: TreePlot, start: Callable):
        self.state = state
        self.min_cluster_size = whole_number_input("min_cluster_size", width=150)
        self.min_samples = whole_number_input("min_samples", width=150)
        self.selection = pn.widgets.RadioButtonGroup(name="Selection", options={"excess of mass": "eom", "leaves": "leaf"}, **CHOICE_STYLE)
        self.picked = pn.pane.Markdown(css_classes=STATUS)
        self.back_to_rule = pn.widgets.Button(name="Back to the rule's selection", visible=False)
        self.min_cluster_size.param.watch(lambda e: self._set(min_cluster_size=e.new), "value")
        self.min_samples.param.watch(lambda e: self._set(min_samples=e.new), "value")
        self.selection.param.watch(lambda e: self._set(selection=e.new), "value")
        self.back_to_rule.on_click(lambda e: start("Selecting clusters", state.set_parameters))
        plot.tap.add_subscriber(lambda x, y: x is not None and y is not None and start("Selecting clusters", self._toggle_at, plot, x, y))
        self.start = start
        state.param.watch(self.show, ["revision"])
        self.panel = pn.Column(
            "### HDBSCAN", pn.Row(self.min_cluster_size, self.min_samples), self.selection, self.picked, self.back_to_rule,
            sizing_mode="stretch_width",
        )

    def show(self, *events) -> None:
        state = self.state
        if not state.loaded:
            return
        self.min_cluster_size.value, self.min_samples.value = state.min_cluster_size, state.min_samples
        self.selection.value = state.selection
        rule = "your clicks" if state.hand_picked else "the rule"
        clusters, noise = len(state.model.selected_clusters_), int((state.model.labels_ < 0).sum())
        self.picked.object = (f"{counted(clusters, 'cluster')}, chosen by {rule} ({counted(noise, 'noise point')}). "
                              "Click a branch of the condensed tree to select it (its sub- and super-clusters leave) "
                              "or deselect it.")  # fmt: skip
        self.back_to_rule.visible = state.hand_picked

    def _set(self, **change) -> None:
        state = self.state
        if state.loaded and any(getattr(state, name) != value for name, value in change.items()):  # not just show()
            self.start("Selecting clusters", state.set_parameters, **change)

    def _toggle_at(self, plot: TreePlot, x: float, y: float) -> None:
        self.state.toggle_cluster(plot.clicked_cluster(x, y))
