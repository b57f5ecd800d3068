"""What every plot has around its data: a short title with its instruction in a smaller line of its own, and tick
labels that stay short at any scale. Bokeh neither wraps a title nor shortens a tick label: at 1,500 px a title
with its instruction in one line was cut at the canvas edge, and more so where ticks such as 1.400e+6 widened the
axis."""

from __future__ import annotations

import functools

from bokeh.models import (BoxZoomTool, CustomJSTicker, CustomJSTickFormatter, LinearAxis, LogAxis, NoOverlap, PanTool,
                          ResetTool, Title, WheelZoomTool)

# One notation for all of an axis's ticks (powers of ten past 1e5 or under 1e-4, written 1.5e6 and 5e-5), and one
# number of decimals (of the mantissa, in powers of ten): the fewest that write every tick exactly, so float noise such
# as 0.30000000000000004 goes, ticks 1e-6 apart at 45.12346 still differ, and a zoomed-in axis reads 0.49, 0.50, 0.51
# (not 0.5 among them). "Exactly": within a millionth of a step, or the float noise of ticks a deep zoom puts 1e-11
# apart at 6.3 (no number of decimals wrote them closer, and the labels fell back on 6.343677199399999). Ticks of a
# log axis a decade or more apart (LOG_TICKS' 1, 2 and 5) each take their own fewest digits, exactly to a billionth
# of themselves: 0.05, 0.1, 2; and their notation is exponential where the smallest needs it (1e-28 ... 1e0: over
# thirty decades, 1e-28 was written 0 beside 1).
# Bokeh passes every tick of the axis in ``ticks``; ``log`` is the formatter's argument.
COMPACT_TICKS = """
const sorted = [...ticks].sort((a, b) => a - b);
const decades = log && sorted[0] > 0 && sorted[sorted.length - 1] >= 10 * sorted[0];
const size = Math.max(...ticks.map(Math.abs));
const exponential = size >= 1e5 || (size > 0 && (decades ? sorted[0] : size) < 1e-4);
const steps = sorted.slice(1).map((value, i) => value - sorted[i]).filter(step => step > 0);
const tolerance = decades ? 1e-9 * tick
  : Math.max(1e-6 * (steps.length ? Math.min(...steps) : Math.max(size, 1)), 8 * Number.EPSILON * size);
const write = (value, decimals) => {
  if (!exponential) return value.toFixed(decimals);
  if (value === 0) return "0";
  const [mantissa, power] = value.toExponential(decimals).split("e");
  return `${mantissa}e${parseInt(power)}`;
};
const fewest = values => {
  for (let decimals = 0; decimals <= 16; decimals++) {
    if (values.every(value => Math.abs(Number(write(value, decimals)) - value) <= tolerance)) return decimals;
  }
  return null;
};
const decimals = decades ? fewest([tick]) : fewest(ticks);
return decimals === null ? String(tick) : write(tick, decimals);
"""
# Where a log axis's ticks go: at 1, 2 and 5 of each decade in view (only at the powers of ten, every so many, where
# those would be more than MOST), or, zoomed in to less than a decade, at a linear step of 1, 2 or 5 (about five
# ticks). Bokeh's LogTicker fell back on linear ticks for a curve spanning about a decade (0.1 to 0.5 crammed at the
# top of the k-distance plot, none where the curve lay), and labelled a dc sweep only at 0.5, 1 and 1.5.
LOG_TICKS = """
const low = Math.min(cb_data.start, cb_data.end), high = Math.max(cb_data.start, cb_data.end);
if (!(low > 0) || !isFinite(high)) return [];
const exact = value => Number(value.toPrecision(12));
if (high < 10 * low) {
  const rough = (high - low) / 5, power = 10 ** Math.floor(Math.log10(rough));
  const step = [1, 2, 5, 10].map(m => m * power).find(s => s >= rough);
  const ticks = [];
  for (let k = Math.ceil(low / step); k * step <= high; k++) ticks.push(exact(k * step));
  return ticks;
}
const MOST = 8;
const at = mantissas => {
  const ticks = [];
  for (let power = Math.floor(Math.log10(low)); power <= Math.ceil(Math.log10(high)); power++)
    for (const m of mantissas) {
      const value = exact(m * 10 ** power);
      if (value >= low && value <= high) ticks.push(value);
    }
  return ticks;
};
const ticks = at([1, 2, 5]);
if (ticks.length <= MOST) return ticks;
const powers = at([1]), every = Math.ceil(powers.length / MOST);
return powers.filter(value => Math.round(Math.log10(value)) % every === 0);
"""
# Minor ticks at 1 to 9 of each decade where the major ones are 1, 2 and 5 or powers of ten (none when zoomed in).
LOG_MINOR_TICKS = """
const ticks = cb_data.major_ticks;
if (ticks.length < 2 || ticks[ticks.length - 1] < 10 * ticks[0]) return [];
const low = Math.min(cb_data.start, cb_data.end), high = Math.max(cb_data.start, cb_data.end), minor = [];
for (let power = Math.floor(Math.log10(low)); power <= Math.ceil(Math.log10(high)); power++)
  for (let m = 1; m <= 9; m++) {
    const value = Number((m * 10 ** power).toPrecision(12));
    if (value >= low && value <= high) minor.push(value);
  }
return minor;
"""
INSTRUCTION = "instruction"  # the name of an instruction's Title model
TITLE_SIZE = "12pt"  # every plot's title (HoloViews' own size)
PLOT_SIZE = (560, 460)  # px of the top row's plots, before the browser says
SMALL_HEIGHT = 260  # px of a short plot: the γ ranks, the ε curves, the dc sweep's curves
SMALL_PLOT_BUTTONS = (PanTool, BoxZoomTool, WheelZoomTool, ResetTool)  # all that fit beside a short plot's frame


def frame(title: str, instruction: str | None = None, hooks: tuple = ()) -> dict:
    """Plot options: ``title`` in bold at TITLE_SIZE, ``instruction`` (what a click or a lasso does) in a line under
    it, compact ticks on every linear and log axis (``compact_ticks``), and a toolbar without Bokeh's logo; ``hooks``
    run after those."""
    own = [compact_ticks, _no_logo, _title_size]
    if instruction is not None:
        own.insert(0, functools.partial(_instruction_line, instruction))
    return {"title": title, "hooks": [*own, *hooks]}


def small_frame(title: str, instruction: str, hooks: tuple = ()) -> dict:
    """``frame`` for a short plot that stretches across its column: its toolbar shows only the four buttons that fit
    beside its frame (more ended in Bokeh's "..." menu, reset out of sight): pan, box zoom, wheel zoom and reset.
    Pointing and clicking stay on without their buttons; there is no save button (the large plots have one). (Not
    HoloViews' ``default_tools``: an overlay's other layers bring back its defaults.) The wheel zooms only once its
    button is on: these plots span the page's width, and the mouse wheel over them zoomed instead of scrolling
    (``active_tools`` without it: HoloViews makes the tools active after the hooks, so the hook alone was undone)."""
    # framewise: the axes follow each new frame
    return {**frame(title, instruction, (*hooks, _fewer_buttons)), "responsive": True, "height": SMALL_HEIGHT,
            "active_tools": ["pan"], "framewise": True}  # fmt: skip


def whole_ticks(plot, element) -> None:
    """A hook for a plot of counts: whole-number ticks on its y axis (no 3.5 clusters, no 0.2 noise points)."""
    plot.handles["yaxis"].ticker.min_interval = 1


def full_size() -> dict:
    """Size options of a plot of the top row: its column's width, at least PLOT_SIZE's height."""
    return {"responsive": True, "min_height": PLOT_SIZE[1], "max_height": 640}


def compact_ticks(plot, element) -> None:
    """Short tick labels on the plot's linear and log axes, a log axis ticked by LOG_TICKS, and no label drawn over
    another (a deep zoom's long labels ran into one string)."""
    for axis in (*plot.state.xaxis, *plot.state.yaxis):
        log = type(axis) is LogAxis
        if (log or type(axis) is LinearAxis) and not isinstance(axis.formatter, CustomJSTickFormatter):
            # one of each per plot: a model lives in one document (HoloViews runs the hooks again at every redraw)
            axis.formatter = CustomJSTickFormatter(code=COMPACT_TICKS, args={"log": log})
            axis.major_label_policy = NoOverlap()
            if log:
                axis.ticker = CustomJSTicker(major_code=LOG_TICKS, minor_code=LOG_MINOR_TICKS)


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


def _title_size(plot, element) -> None:
    # HoloViews' 12pt, also once the teaching layers join a plot: the figure made again then had Bokeh's 13px
    plot.state.title.text_font_size = TITLE_SIZE


def _fewer_buttons(plot, element) -> None:
    for tool in plot.state.toolbar.tools:
        tool.visible = isinstance(tool, SMALL_PLOT_BUTTONS)
    plot.state.toolbar.active_scroll = None  # (Bokeh's "auto" would make the wheel zoom active again)
