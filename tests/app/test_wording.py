import numpy as np
import pytest

from dpstudio.app.wording import column_decimals, counted, name_list, read_name_list
from dpstudio.engine.notation import short


def test_a_count_of_one_takes_the_singular():
    assert [counted(n, "point") for n in (0, 1, 2, 2300)] == ["0 points", "1 point", "2 points", "2,300 points"]
    # a count read from an array (the sweep's plateaus): "'s' * (n != 1)" failed on it, and so the sweep
    assert [counted(n, "cluster") for n in np.array([1, 12])] == ["1 cluster", "12 clusters"]


def test_numbers_are_written_as_the_plots_ticks_write_them():
    """The dc sweep's plateaus read "dc 1.18e+06 to 1.41e+07" beside axes reading 1e6 and 1e7."""
    assert [short(v, 3) for v in (1_180_000, 14_100_000, 0.118)] == ["1.18e6", "1.41e7", "0.118"]
    assert [short(v) for v in (5.497e-7, 0.5497, 123456.78, 2.0, -3.5e-12)] == ["5.497e-7", "0.5497", "1.235e5", "2", "-3.5e-12"]


def test_a_columns_decimals_show_its_largest_value_to_four_figures_on_every_row():
    assert column_decimals([84.6, 82.28, 3.0]) == 2  # Gaussian rho: 84.60 above 82.28, not 84.6
    assert column_decimals([84.0, 12.0, 0.0]) == 0  # cut-off counts: whole numbers
    assert column_decimals([1234.5, 0.5]) == 2  # the smallest keeps 2 figures: 0.50, not 0 or 1
    assert column_decimals([14.7, 0.004]) == 4  # 0.0040 under 14.7000, not 0.00
    assert column_decimals([14.705368, 3e-5]) is None  # 14.705368 above 0.000030: figures float32 does not have
    assert column_decimals([0.01234, 0.5]) == 4
    assert column_decimals([-0.5, np.nan, np.inf]) == 4  # by magnitude; what is not finite has no say
    assert column_decimals([1.5e-7, 2e-7]) is None  # tiny: too many decimals, shown in powers of ten
    assert column_decimals([]) == 0


def test_a_list_of_names_reads_back_as_written():
    for names in (["a", "b"], ["weight, kg", "  spaced name  ", 'say "hi"', "δ→"]):
        assert read_name_list(name_list(names)) == names
    assert name_list(["weight, kg", "x"]) == '"weight, kg",x'
    assert read_name_list(" a , b,,c ") == ["a", "b", "c"]  # as typed: spaces around a name are no part of it
    assert read_name_list('size"inch,5" screen') == ['size"inch', '5" screen']  # a quote inside a name, as it is
    with pytest.raises(ValueError, match='a name opens a quote it does not close: "a'):
        read_name_list('"a,b')
