"""What every plot has around its data: a short title with its instruction in a smaller line of its own, and tick
labels that stay short at any scale. Bokeh neither wraps a title nor shortens a tick label: at 1,500 px a title
with its instruction in one line was cut at the canvas edge, and more so where ticks such as 1.400e+6 widened the
axis."""

from __future__ import annotations

import functools

from bokeh.models import BoxZoomTool, CustomJSTickFormatter, LinearAxis, PanTool, ResetTool, Title, WheelZoomTool

# One notation for all of an axis's ticks (powers of ten past 1e5 or under 1e-4, written 1.5e6 and 5e-5), and one
# number of decimals (of the mantissa, in powers of ten): the fewest that write every tick exactly, so float noise such
# as 0.30000000000000004 goes, ticks 1e-6 apart at 45.12346 still differ, and a zoomed-in axis reads 0.49, 0.50, 0.51
# (not 0.5 among them). Bokeh passes every tick of the axis in ``ticks``.
COMPACT_TICKS = """
const size = Math.max(...ticks.map(Math.abs));
const exponential = size >= 1e5 || (size > 0 && size < 1e-4);
const sorted = [...ticks].sort((a, b) => a - b);
const steps = sorted.slice(1).map((value, i) => value - sorted[i]).filter(step => step > 0);
const tolerance = 1e-6 * (steps.length ? Math.min(...steps) : Math.max(size, 1));
const write = (value, decimals) => {
  if (!exponential) return value.toFixed(decimals);
  if (value === 0) return "0";
  const [mantissa, power] = value.toExponential(decimals).split("e");
  return `${mantissa}e${parseInt(power)}`;
};
for (let decimals = 0; decimals <= 16; decimals++) {
  if (ticks.every(value => Math.abs(Number(write(value, decimals)) - value) <= tolerance)) return write(tick, decimals);
}
return String(tick);
"""
# A log axis's ticks at 1, 2 and 5 of each decade (see dbscan_plots), each in its one digit: 0.05 and 2, 5e-7 and
# 2e6 (Bokeh wrote 2.000e-6). Only for such ticks: 1.5e5 would read 2e5.
ONE_DIGIT_TICKS = """
const size = Math.abs(tick);
if (size >= 1e5 || (size > 0 && size < 1e-4)) return tick.toExponential(0).replace("e+", "e");
return String(tick);
"""
INSTRUCTION = "instruction"  # the name of an instruction's Title model
PLOT_SIZE = (560, 460)  # px of the top row's plots, before the browser says
SMALL_HEIGHT = 260  # px of a short plot: the γ ranks, the ε curves, the dc sweep's curves
SMALL_PLOT_BUTTONS = (PanTool, BoxZoomTool, WheelZoomTool, ResetTool)  # all that fit beside a short plot's frame


def frame(title: str, instruction: str | None = None, hooks: tuple = ()) -> dict:
    """Plot options: ``title`` in bold, ``instruction`` (what a click or a lasso does) in a line under it, compact
    ticks on every linear axis, and a toolbar without Bokeh's logo; ``hooks`` run after those."""
    own = [compact_ticks, _no_logo]
    if instruction is not None:
        own.insert(0, functools.partial(_instruction_line, instruction))
    return {"title": title, "hooks": [*own, *hooks]}


def small_frame(title: str, instruction: str, hooks: tuple = ()) -> dict:
    """``frame`` for a short plot that stretches across its column: its toolbar shows only the four buttons that fit
    beside its frame (more ended in Bokeh's "..." menu, reset out of sight): pan, box zoom, wheel zoom and reset.
    Pointing and clicking stay on without their buttons; there is no save button (the large plots have one). (Not
    HoloViews' ``default_tools``: an overlay's other layers bring back its defaults.)"""
    # framewise: the axes follow each new frame
    return {**frame(title, instruction, (*hooks, _fewer_buttons)), "responsive": True, "height": SMALL_HEIGHT,
            "framewise": True}  # fmt: skip


def full_size() -> dict:
    """Size options of a plot of the top row: its column's width, at least PLOT_SIZE's height."""
    return {"responsive": True, "min_height": PLOT_SIZE[1], "max_height": 640}


def compact_ticks(plot, element) -> None:
    """Short tick labels on the plot's linear axes (a log axis keeps its powers of ten)."""
    for axis in (*plot.state.xaxis, *plot.state.yaxis):
        if type(axis) is LinearAxis and not isinstance(axis.formatter, CustomJSTickFormatter):
            axis.formatter = CustomJSTickFormatter(code=COMPACT_TICKS)  # one per plot: a model lives in one document


def instruction_line(plot) -> Title | None:
    """The plot's instruction line, if it has one."""
    return next((item for item in plot.state.above if isinstance(item, Title) and item.name == INSTRUCTION), None)


def _instruction_line(text: str, plot, element) -> None:
    line = instruction_line(plot)
    if line is None:  # HoloViews runs hooks again at every redraw
        plot.state.add_layout(Title(text=text, name=INSTRUCTION, text_font_style="normal", text_font_size="12px",
                                    text_color="#444"), "above")  # fmt: skip


def _no_logo(plot, element) -> None:
    plot.state.toolbar.logo = None


def _fewer_buttons(plot, element) -> None:
    for tool in plot.state.toolbar.tools:
        tool.visible = isinstance(tool, SMALL_PLOT_BUTTONS)
