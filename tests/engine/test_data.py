"""Reading real files: formats, headers, column choice, and one-line errors for every kind of bad input."""

import gzip
import re

import numpy as np
import pandas as pd
import pytest

from dpstudio.engine import DataError, DensityPeaks, read_table, to_points, write_labels
from dpstudio.engine.data import check_output_path, constant_features_notice, read_upload
from dpstudio.engine.data import with_dropped_rows


def test_csv_with_and_without_header_tsv_txt_parquet_npy_agree(tmp_path, rng):
    values = rng.normal(size=(50, 3))
    frame = pd.DataFrame(values, columns=["a", "b", "c"])
    frame.to_csv(tmp_path / "h.csv", index=False)
    frame.to_csv(tmp_path / "n.csv", index=False, header=False)
    frame.to_csv(tmp_path / "t.tsv", index=False, sep="\t")
    np.savetxt(tmp_path / "w.txt", values)
    frame.to_parquet(tmp_path / "p.parquet")
    np.save(tmp_path / "a.npy", values)
    expected = values.astype(np.float32)
    for name in ["h.csv", "n.csv", "t.tsv", "w.txt", "p.parquet", "a.npy"]:
        points = to_points(tmp_path / name)
        np.testing.assert_allclose(points.values, expected, rtol=1e-6, err_msg=name)
    assert to_points(tmp_path / "h.csv").columns == ("a", "b", "c")


def test_named_columns_and_text_columns_skipped(tmp_path):
    pd.DataFrame({"name": ["p", "q", "r"], "x": [1.0, 2.0, 3.0], "y": [0, 1, 0], "z": [5, 5, 5]}).to_csv(tmp_path / "d.csv", index=False)
    assert to_points(tmp_path / "d.csv").columns == ("x", "y", "z")
    points = to_points(tmp_path / "d.csv", ["z", "x"])
    assert points.columns == ("z", "x")
    np.testing.assert_array_equal(points.values[:, 1], [1, 2, 3])


@pytest.mark.parametrize(
    ("content", "suffix", "message"),
    [
        (None, ".csv", "file not found"),
        ("", ".csv", "no rows"),
        ("x,y\n", ".csv", "no rows"),
        ("x,y\n1,2\n", ".csv", "at least 2 points"),
        ("x,y\n1,2\n3,abc\n4,5\n", ".csv", "column 'y' is not numeric: value 'abc' at row 1"),
        ("name\nfoo\nbar\n", ".csv", "no numeric columns"),
        ("x,y\n1,2\nnan,3\n4,inf\n5,6\n", ".csv", "2 row(s) contain NaN or infinite values (first at row 1"),
        ("x,y\n1,2,3\n4,5,6\n", ".csv", "rows have more fields than the first line's 2; is ',' the separator?"),
        ("x,y\n1,2\n3,4\n5,6,7\n", ".csv", "bad.csv: line 4 has 3 fields where the lines before it have 2"),  # not pandas' C error
        ("1,2\n", ".xlsx", "unsupported file type '.xlsx'"),
        ("not parquet", ".parquet", "cannot read"),
    ],
)
def test_bad_files_give_one_line_errors(tmp_path, content, suffix, message):
    path = tmp_path / f"bad{suffix}"
    if content is not None:
        path.write_text(content)
    with pytest.raises(DataError) as error:
        to_points(path)
    assert message in str(error.value)
    assert "\n" not in str(error.value)


def test_a_column_with_no_value_is_no_feature_unless_named(tmp_path):
    (tmp_path / "blank.csv").write_text("a,empty,b\n1,,2\n3,,4\n5,,7\n")
    points = to_points(tmp_path / "blank.csv", drop_nonfinite=True)
    assert points.columns == ("a", "b") and points.values.shape == (3, 2)
    with pytest.raises(DataError, match="need at least 2 points, got 0"):
        to_points(tmp_path / "blank.csv", ["a", "empty"], drop_nonfinite=True)
    with pytest.raises(DataError, match="row"):  # an array's columns are all kept: its NaN rows are the error
        to_points(np.array([[1.0, np.nan], [2.0, np.nan], [3.0, np.nan]]))


def test_semicolon_exports_with_decimal_commas(tmp_path):
    """A spreadsheet's CSV where the decimal mark is a comma: fields by semicolons, numbers with commas."""
    (tmp_path / "eu.csv").write_text("a;b\n-0,126;4,567\n1,5;2\n")
    (tmp_path / "semi.csv").write_text("a;b\n1.5;2\n3;4\n")
    eu, semi = to_points(tmp_path / "eu.csv"), to_points(tmp_path / "semi.csv")
    assert eu.columns == semi.columns == ("a", "b")
    np.testing.assert_array_equal(eu.values, np.float32([[-0.126, 4.567], [1.5, 2]]))
    np.testing.assert_array_equal(semi.values, np.float32([[1.5, 2], [3, 4]]))


def test_a_stray_word_among_decimal_commas_is_the_value_named(tmp_path):
    """The parser leaves such a column as text, decimal commas and all: the error named the first "1,5"."""
    rows = "".join("1,5;2\n" if i % 2 else "3;4,25\n" for i in range(40))
    (tmp_path / "eu.csv").write_text("x;y\n" + rows + "abc;3\n2,5;1\n")
    with pytest.raises(DataError, match=r"column 'x' is not numeric: value 'abc' at row 40 \(0-based\)"):
        to_points(tmp_path / "eu.csv")
    (tmp_path / "lone.csv").write_text("x;y\n1,5;2\n,;3\n")  # a lone comma is named as written, not as "."
    with pytest.raises(DataError, match=r"column 'x' is not numeric: value ',' at row 1 \(0-based\)"):
        to_points(tmp_path / "lone.csv")
    (tmp_path / "named.csv").write_text("x;y;who\n" + "1,5;2;Smith, J\n" * 3)  # text with commas stays text
    assert to_points(tmp_path / "named.csv").columns == ("x", "y")


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        ("x;y\n1;2\n1,5;2,5\n3,25;4,75\n", [[1, 2], [1.5, 2.5], [3.25, 4.75]]),  # whole numbers first: was refused
        ("x;y;ver\n1,5;2,5;1.2\n3;4;1.3\n", [[1.5, 2.5, 1.2], [3, 4, 1.3]]),  # a column of decimal points beside them
        ("Datum;Wert;Menge\n12.05;1,5;3\n13.05;2;4\n", [[12.05, 1.5, 3], [13.05, 2, 4]]),
        ("x;y\n1,5E-03;2,5e-01\n-,5;+3\n", [[1.5e-3, 2.5e-1], [-0.5, 3]]),  # exponents and signs
        ("x;y\n1,5;\n2;4,25\n3;,5\n", [[1.5, np.nan], [2, 4.25], [3, 0.5]]),  # an empty cell stays empty
    ],
)
def test_a_semicolon_files_decimal_commas_and_points_are_read(tmp_path, text, expected):
    """The decimal mark was guessed from the second line: whole numbers there refused the file, and a comma there
    made every column's decimal points text (a column of 1.2 and 1.3 left out without a word)."""
    (tmp_path / "export.csv").write_text(text)
    points = to_points(tmp_path / "export.csv", drop_nonfinite=True)
    assert len(points.columns) == len(expected[0])  # no column left out
    expected = np.array(expected, np.float64)
    kept = np.isfinite(expected).all(axis=1)
    np.testing.assert_array_equal(points.values, expected[kept].astype(np.float32))
    np.testing.assert_array_equal(points.dropped_rows, np.flatnonzero(~kept))


def test_a_tab_files_commas_are_not_taken_for_decimal_marks(tmp_path):
    """In a tab file "1,234" may be a thousand and more: such a column stays text, as before."""
    (tmp_path / "counts.tsv").write_text("name\tx\tpop\nSmith, J.\t1.5\t1,234\nDoe, A.\t3\t5,678\n")
    points = to_points(tmp_path / "counts.tsv")
    assert points.columns == ("x",)
    np.testing.assert_array_equal(points.values, np.float32([[1.5], [3]]))


def test_a_byte_order_mark_is_neither_a_header_nor_part_of_a_number(tmp_path):
    """A headerless CSV with a UTF-8 byte order mark lost its first row: taken for a header, its numbers became the
    column names."""
    rows = "1.0,2.0\n3.0,4.0\n5.0,6.5\n"
    (tmp_path / "bom.csv").write_bytes(b"\xef\xbb\xbf" + rows.encode())
    points = to_points(tmp_path / "bom.csv")
    assert points.columns == ("0", "1")
    np.testing.assert_array_equal(points.values, np.float32([[1, 2], [3, 4], [5, 6.5]]))
    (tmp_path / "bom_header.csv").write_bytes(b"\xef\xbb\xbfx,y\r\n" + rows.replace("\n", "\r\n").encode())
    assert to_points(tmp_path / "bom_header.csv").columns == ("x", "y")


def test_npy_never_unpickles(tmp_path):
    np.save(tmp_path / "o.npy", np.array([{"a": 1}, {"b": 2}], dtype=object), allow_pickle=True)
    with pytest.raises(DataError, match="Python objects"):
        to_points(tmp_path / "o.npy")


def test_corrupt_and_truncated_npy_are_called_that(tmp_path, rng):
    (tmp_path / "random.npy").write_bytes(rng.integers(0, 256, 4000, dtype=np.uint8).tobytes())
    with pytest.raises(DataError, match="random.npy is not a NumPy .npy file"):
        to_points(tmp_path / "random.npy")
    np.save(tmp_path / "whole.npy", rng.normal(size=(100, 3)))
    content = (tmp_path / "whole.npy").read_bytes()
    (tmp_path / "cut.npy").write_bytes(content[: len(content) // 2])
    with pytest.raises(DataError, match="cut.npy is truncated or corrupt"):
        to_points(tmp_path / "cut.npy")
    (tmp_path / "header.npy").write_bytes(content[:12])
    with pytest.raises(DataError, match="header.npy has a corrupt .npy header"):
        to_points(tmp_path / "header.npy")


def test_gzipped_tables_read_as_their_text(tmp_path, rng):
    """notes.csv.gz is the CSV it holds, semicolons and a byte order mark included; a gzip of several members (as
    ``cat a.gz b.gz`` makes) is read whole."""
    values = rng.normal(size=(40, 2))
    text = pd.DataFrame(values, columns=["a", "b"]).to_csv(index=False)
    (tmp_path / "t.csv.gz").write_bytes(gzip.compress(text.encode()))
    (tmp_path / "T.TSV.GZ").write_bytes(gzip.compress(text.replace(",", "\t").encode()))
    head, tail = text.split("\n", 20)[:20], text.split("\n", 20)[20]
    (tmp_path / "two.csv.gz").write_bytes(gzip.compress(("\n".join(head) + "\n").encode()) + gzip.compress(tail.encode()))
    for name in ("t.csv.gz", "T.TSV.GZ", "two.csv.gz"):
        points = to_points(tmp_path / name)
        assert points.columns == ("a", "b"), name
        np.testing.assert_array_equal(points.values, values.astype(np.float32), err_msg=name)
    (tmp_path / "eu.txt.gz").write_bytes(gzip.compress(b"\xef\xbb\xbfa;b\n-0,126;4,567\n1,5;2\n"))
    np.testing.assert_array_equal(to_points(tmp_path / "eu.txt.gz").values, np.float32([[-0.126, 4.567], [1.5, 2]]))


def test_corrupt_truncated_and_unsupported_gzip_are_called_that(tmp_path, rng):
    whole = gzip.compress(b"".join(f"{i},{i % 5}\n".encode() for i in range(5000)))
    (tmp_path / "cut.csv.gz").write_bytes(whole[: len(whole) // 2])
    (tmp_path / "plain.csv.gz").write_bytes(b"a,b\n1,2\n3,4\n")  # not compressed, but named so
    (tmp_path / "noise.csv.gz").write_bytes(whole[:10] + rng.integers(0, 256, 500, dtype=np.uint8).tobytes())
    (tmp_path / "a.npy.gz").write_bytes(whole)
    (tmp_path / "a.gz").write_bytes(whole)
    for name, message in [("cut.csv.gz", "cut.csv.gz is truncated or corrupt"), ("plain.csv.gz", "plain.csv.gz is not a gzip file"),
                          ("noise.csv.gz", "noise.csv.gz is truncated or corrupt"), ("a.npy.gz", "unsupported file type '.npy.gz'"),
                          ("a.gz", "unsupported file type '.gz'")]:  # fmt: skip
        with pytest.raises(DataError, match=re.escape(message)):
            to_points(tmp_path / name)


def test_a_gzipped_upload_expands_no_further_than_the_upload_limit():
    """A few KB of gzip may expand to GBs: the expansion stops at the limit, 2 bytes a value of ``max_values``."""
    bomb = gzip.compress(b"0,0\n" * 2**20)  # 4 MB of text in about 4 KB
    assert len(bomb) < 2**13
    with pytest.raises(DataError, match=r"bomb.csv.gz expands past the upload limit of 3 MB"):
        read_upload("bomb.csv.gz", bomb, max_values=3 * 2**19)
    assert read_upload("bomb.csv.gz", bomb, max_values=2**21).shape == (2**20, 2)  # (no header: every field a number)


def test_a_folder_is_not_a_missing_file(tmp_path):
    with pytest.raises(DataError, match="is a folder, not a file"):
        to_points(tmp_path)


def test_latin1_text_is_read(tmp_path):
    (tmp_path / "l.csv").write_bytes("größe,wert\n1,2\n3,4\n5,6\n".encode("latin-1"))
    points = to_points(tmp_path / "l.csv")
    assert points.columns == ("größe", "wert") and points.values.shape == (3, 2)


def test_complex_numbers_are_refused():
    with pytest.raises(DataError, match="expected real numbers, got dtype complex128"):
        to_points(np.ones((5, 2)) * (1 + 1j))
    with pytest.raises(DataError, match="column 'z' holds complex numbers"):
        to_points(pd.DataFrame({"x": np.arange(5.0), "z": np.arange(5) * 1j}))


def test_scales_whose_squared_distances_overflow_or_vanish_are_refused(rng):
    points = rng.normal(size=(50, 3))
    with pytest.raises(DataError, match="too large: their squared distances overflow float32"):
        to_points(points * 1e19)
    with pytest.raises(DataError, match="underflow float32 to 0"):
        to_points(points * 1e-23)
    with pytest.raises(DataError, match="too large"):
        DensityPeaks(backend="cpu").fit(points[:5]).partial_fit(points[:2] * 1e19)


@pytest.mark.parametrize("scale", [2.0**55, 2.0**-35])  # near both limits, by powers of two (exact in float32)
def test_data_near_the_scale_limits_clusters_as_at_unit_scale(scale, rng):
    points = np.concatenate([rng.normal(size=(200, 2)), rng.normal(size=(200, 2)) + 12])
    unit = DensityPeaks(dc=0.7, suggest="gamma", backend="cpu").fit(points)
    scaled = DensityPeaks(dc=0.7 * scale, suggest="gamma", backend="cpu").fit(points * scale)
    np.testing.assert_array_equal(scaled.rho_, unit.rho_)
    np.testing.assert_array_equal(scaled.delta_, unit.delta_ * np.float32(scale))
    np.testing.assert_array_equal(scaled.labels_, unit.labels_)
    assert len(unit.centers_) == 2


def test_parser_errors_name_the_file_not_its_folder(tmp_path):
    (tmp_path / "p.parquet").write_bytes(b"PAR1 but not really parquet")
    with pytest.raises(DataError) as error:
        to_points(tmp_path / "p.parquet")
    assert "p.parquet" in str(error.value) and str(tmp_path) not in str(error.value)


def test_dropped_rows_come_back_empty_with_a_reason():
    table = pd.DataFrame({"index": [0, 2, 4], "label": [0, 1, 1], "halo": False, "rho": 1.0, "delta": 2.0, "parent": [-1, 0, 2]})
    full = with_dropped_rows(table, np.array([1, 3]))
    assert list(full["index"]) == [0, 1, 2, 3, 4] and list(full["reason"] == "") == [True, False, True, False, True]
    assert full["label"].isna().tolist() == [False, True, False, True, False] and full["parent"].iloc[4] == 2
    assert with_dropped_rows(table, np.array([], np.int64)) is table


def test_missing_column_names_the_available_ones(tmp_path):
    pd.DataFrame({"x": [1, 2], "y": [3, 4]}).to_csv(tmp_path / "d.csv", index=False)
    with pytest.raises(DataError, match=r"no column named 'q' \(available: x, y\)"):
        to_points(tmp_path / "d.csv", ["q"])


def test_drop_nonfinite_keeps_row_numbers(tmp_path):
    pd.DataFrame({"x": [1.0, np.nan, 3.0, 4.0], "y": [1.0, 2.0, np.inf, 4.0]}).to_csv(tmp_path / "d.csv", index=False)
    points = to_points(tmp_path / "d.csv", drop_nonfinite=True)
    np.testing.assert_array_equal(points.rows, [0, 3])
    np.testing.assert_array_equal(points.dropped_rows, [1, 2])


def test_standardize_gives_zero_mean_unit_spread(rng):
    values = rng.normal(loc=[10, -3], scale=[5, 0.1], size=(400, 2))
    points = to_points(values, standardize=True).values
    np.testing.assert_allclose(points.mean(axis=0), 0, atol=1e-5)
    np.testing.assert_allclose(points.std(axis=0), 1, atol=1e-5)
    constant = to_points(np.ones((5, 2)), standardize=True).values
    np.testing.assert_array_equal(constant, 0)


def test_features_that_float32_rounds_past_a_hundredth_of_their_spread_are_noted(rng):
    """Blobs a few units wide around 1e7 became a grid of whole numbers in float32 (16 distinct x values of 600):
    2 clusters of 571 and 29 instead of 3, without a word. Said, not refused: an offset column (a timestamp) beside
    the features wanted must not make a file unreadable, and GPS readings 100 m apart cluster the same in float32."""
    blobs = rng.normal(size=(600, 2)) + rng.choice([0.0, 8.0, 16.0], size=(600, 1))
    offset = to_points(pd.DataFrame({"a": blobs[:, 0], "b": blobs[:, 1] + 1e7}))
    assert len(offset.notes) == 1 and re.fullmatch(
        r"feature 'b' varies by [\d.]+ \(its standard deviation\) around values of 1e7, and float32, in which "
        r"distances are computed, rounds it by up to 0\.\d+: subtract an offset \(such as its mean\), or standardize, "
        r"for exact distances", offset.notes[0])  # fmt: skip
    shifted = pd.DataFrame({"a": blobs[:, 0] + 1e7, "b": blobs[:, 1] + 1e7})
    standardized = to_points(shifted, standardize=True)  # centred in float64 first: nothing lost
    assert standardized.notes == () and np.allclose(standardized.values, (blobs - blobs.mean(0)) / blobs.std(0), atol=1e-6)
    assert to_points(shifted.astype(np.float32)).notes == ()  # float32 already: nothing rounded
    gps = np.c_[blobs[:, 0] * 1e-3 - 122.4, blobs[:, 1] * 1e-3 + 37.7]  # longitudes and latitudes about 100 m apart
    assert to_points(gps).notes == ()
    big = rng.normal(size=(600, 1)) * 1e12  # large values that vary as much: float32 keeps them
    # a row count far out: one value in float32, said once (it also said the column held one value, which it does not)
    assert to_points(np.c_[big, 2**40 + np.arange(600.0)]).notes[1:] == (  # (the first: it looks like a row number)
        "feature '1' varies by 173 (its standard deviation) around values of 1.1e12, and float32, in which distances "
        "are computed, rounds it to one value: subtract an offset (such as its mean), or standardize, for exact distances",)
    assert to_points(big).notes == ()


def test_features_that_look_like_ids_or_row_numbers_are_named(rng):
    """An id column (100000-102999) beside x and y made one cluster of three blobs, and the page said nothing."""
    blobs = rng.normal(size=(3000, 2)) + rng.choice([0.0, 8.0, 16.0], size=(3000, 1))
    table = pd.DataFrame({"id": rng.permutation(np.arange(100_000, 103_000)), "x": blobs[:, 0], "y": blobs[:, 1],
                          "row": np.arange(0, 6000, 2), "level": rng.integers(0, 5, 3000)})  # fmt: skip
    for standardize in (False, True):
        notes = to_points(table, standardize=standardize).notes
        assert notes == ("features 'id', 'row' hold a different whole number on every row, as ids or row numbers "
                         "do: if they are, leave them out of the features (they may outweigh the rest in the "
                         "distances)",), standardize  # fmt: skip
    with_gaps = table[["x", "id"]].assign(x=np.where(np.arange(3000) % 7 == 0, np.nan, table["x"]))  # rows dropped
    assert to_points(with_gaps, drop_nonfinite=True).notes[0].startswith("feature 'id' holds a different whole number")
    assert to_points(table[["x", "y", "level"]]).notes == ()  # whole numbers, but shared by many rows
    assert to_points(table[["id"]]).notes == ()  # one feature: the page draws it against the row itself
    spread = table[["x"]].assign(count=rng.choice(10**6, 3000, replace=False))  # distinct, but far apart
    assert to_points(spread).notes == ()
    assert to_points(pd.DataFrame({"dose": [1.0, 2.0, 3.0], "x": [0.1, 0.5, 0.2]})).notes == ()  # too few rows to tell


def test_features_with_one_value_on_every_row_are_named(rng):
    values = rng.normal(size=(50, 4)).astype(np.float32)
    assert constant_features_notice(values, "abcd") == ""
    values[:, 1] = 7.0
    assert constant_features_notice(values, "abcd") == "feature 'b' holds one value on every row: it takes no part in the distances"
    values[:, 3] = -0.0
    values[0, 3] = 0.0  # equal to -0.0: no distance tells them apart
    assert constant_features_notice(values, "abcd") == "features 'b', 'd' hold one value on every row: they take no part in the distances"
    values[:, [0, 2]] = 1.5
    assert constant_features_notice(values, "abcd") == "no feature varies: every point is the same"
    values[-1, 2] = 1.5000001  # the smallest step float32 takes there is a difference
    assert "'c'" not in constant_features_notice(values, "abcd")


def test_arrays_and_frames_in_memory():
    assert to_points([1.0, 2.0, 3.0]).values.shape == (3, 1)
    with pytest.raises(DataError, match="2-D"):
        to_points(np.zeros((2, 2, 2)))
    with pytest.raises(DataError, match="numbers"):
        to_points(np.array([["a", "b"], ["c", "d"]]))
    assert to_points(pd.DataFrame({"u": [1, 2], "v": [3, 4]})).columns == ("u", "v")


def test_write_labels_roundtrip_and_errors(tmp_path):
    table = pd.DataFrame({"index": [0, 1], "label": [0, 1]})
    for name in ["o.csv", "o.parquet"]:
        write_labels(tmp_path / name, table)
        pd.testing.assert_frame_equal(read_table(tmp_path / name), table, check_dtype=False)
    with pytest.raises(DataError, match="use a .csv or .parquet"):
        write_labels(tmp_path / "o.json", table)
    with pytest.raises(DataError, match="folder not found"):
        write_labels(tmp_path / "missing" / "o.csv", table)
    with pytest.raises(DataError, match="is a folder; give a file name"):
        write_labels(tmp_path, table)


def test_an_output_that_cannot_be_written_is_refused_before_any_work(tmp_path, monkeypatch):
    monkeypatch.setattr("os.access", lambda path, mode: False)  # a folder of another user's (root may write anywhere)
    with pytest.raises(DataError, match="permission denied"):
        check_output_path(tmp_path / "o.csv")
