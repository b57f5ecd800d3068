"""What every plot has around its data: a short title with its instruction in a smaller line of its own, and tick
labels that stay short at any scale. Bokeh neither wraps a title nor shortens a tick label: at 1,500 px a title
with its instruction in one line was cut at the canvas edge, and more so where ticks such as 1.400e+6 widened the
axis."""

from __future__ import annotations

import functools

from bokeh.models import CustomJSTickFormatter, LinearAxis, Title

# One notation for all of an axis's ticks (powers of ten past 1e5 or under 1e-4, written 1.4e6 and 5e-5), with the
# fewest digits that write every tick exactly: float noise such as 0.30000000000000004 goes, and ticks 1e-6 apart
# at 45.12346 still differ. Bokeh passes every tick of the axis in ``ticks``.
COMPACT_TICKS = """
const size = Math.max(...ticks.map(Math.abs));
const exponential = size >= 1e5 || (size > 0 && size < 1e-4);
const sorted = [...ticks].sort((a, b) => a - b);
const steps = sorted.slice(1).map((value, i) => value - sorted[i]).filter(step => step > 0);
const tolerance = 1e-6 * (steps.length ? Math.min(...steps) : Math.max(size, 1));
const write = (value, digits) => {
  if (value === 0) return "0";
  if (!exponential) return String(parseFloat(value.toPrecision(digits)));
  const [mantissa, power] = value.toExponential(digits - 1).split("e");
  return `${parseFloat(mantissa)}e${parseInt(power)}`;
};
for (let digits = 1; digits <= 17; digits++) {
  if (ticks.every(value => Math.abs(Number(write(value, digits)) - value) <= tolerance)) return write(tick, digits);
}
return String(tick);
"""
INSTRUCTION = "instruction"  # the name of an instruction's Title model


def frame(title: str, instruction: str | None = None, hooks: tuple = ()) -> dict:
    """Plot options: ``title`` in bold, ``instruction`` (what a click or a lasso does) in a line under it, and
    compact ticks on every linear axis; ``hooks`` run after those."""
    own = [compact_ticks] if instruction is None else [functools.partial(_instruction_line, instruction), compact_ticks]
    return {"title": title, "hooks": [*own, *hooks]}


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
