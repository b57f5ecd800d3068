"""``dpstudio cluster`` as a user runs it: a subprocess on real files, good and bad."""

import gzip
import json
import os
import re
import subprocess
import sys

import numpy as np
import pandas as pd
import pytest

from dpstudio import sample_data
from dpstudio.app.bench_distributed import best_efficiency


def dpstudio(*args, cwd=None):
    return subprocess.run([sys.executable, "-m", "dpstudio.app.cli", *map(str, args)], capture_output=True, text=True, cwd=cwd, timeout=300)


def test_summary_on_a_sample_file(tmp_path):
    out = tmp_path / "labels.csv"
    result = dpstudio("cluster", sample_data.path("blobs"), "--out", out)
    assert result.returncode == 0, result.stderr
    assert "clusters  5: sizes" in result.stdout
    assert "time      index" in result.stdout
    table = pd.read_csv(out)
    assert list(table.columns) == ["index", "label", "halo", "rho", "delta", "parent"]
    assert len(table) == 2300 and table["label"].nunique() == 5
    gzipped = tmp_path / "blobs.csv.gz"
    gzipped.write_bytes(gzip.compress(sample_data.path("blobs").read_bytes()))
    assert dpstudio("cluster", gzipped, "--out", tmp_path / "gz.csv").returncode == 0
    pd.testing.assert_frame_equal(pd.read_csv(tmp_path / "gz.csv"), table)


def test_json_parquet_and_every_center_syntax(tmp_path):
    path = sample_data.path("noisy")
    facts = []
    for centers in ["auto", "3", "20:1.5", ":2.0", "0,1,2", "7,"]:
        result = dpstudio("cluster", path, "--json", "--centers", centers, "--kernel", "gaussian", "--dc", "0.5")
        assert result.returncode == 0, result.stderr
        facts.append(json.loads(result.stdout))
    assert [f["n_clusters"] for f in facts[:2]] == [4, 3]
    assert facts[4]["centers"][:3] == [0, 1, 2] and facts[5]["centers"][0] == 7
    assert all(f["dc"] == 0.5 and f["dc_rule"] == "given" and sum(f["cluster_sizes"]) == 1920 for f in facts)
    out = tmp_path / "labels.parquet"
    assert dpstudio("cluster", path, "--out", out, "--json").returncode == 0
    assert len(pd.read_parquet(out)) == 1920


def test_centers_name_the_inputs_rows_as_the_summary_does_when_rows_are_left_out(blobs_with_nan_rows):
    """--centers i,j are rows of the input, as the summary's centers and --out's index are: with NaN rows before
    them left out, the points at those rows are the centers, and the summary names the same rows back."""
    gaps = blobs_with_nan_rows
    chosen = [1522, 208]
    result = dpstudio("cluster", gaps, "--drop-nonfinite", "--json", "--centers", ",".join(map(str, chosen)))
    assert result.returncode == 0, result.stderr
    facts = json.loads(result.stdout)
    assert facts["centers"][:2] == chosen and sum(facts["cluster_sizes"]) == 2297  # (and the densest point, if not)
    again = json.loads(dpstudio("cluster", gaps, "--drop-nonfinite", "--json", "--centers", ",".join(map(str, facts["centers"]))).stdout)
    assert again["centers"] == facts["centers"] and again["cluster_sizes"] == facts["cluster_sizes"]  # read back the same
    for row, message in ((10, "row 10 was left out (NaN or infinite value)"), (2300, "row 2300 is not a row of the input (rows 0 to 2299)")):
        refused = dpstudio("cluster", gaps, "--drop-nonfinite", "--centers", f"{row},")
        assert refused.returncode == 2 and message in refused.stderr


def test_the_summary_names_the_significance_raised_for_many_candidate_peaks_and_a_stream_names_late_rows(tmp_path):
    pd.DataFrame(np.random.default_rng(0).normal(size=(20_000, 2)), columns=["x", "y"]).to_csv(tmp_path / "one.csv", index=False)
    facts = json.loads(dpstudio("cluster", tmp_path / "one.csv", "--json").stdout)
    assert re.fullmatch(r"density topography, significance 2\.5, raised to 3\.\d\d for \d{3},?\d* candidate peaks", facts["centers_rule"])
    late = dpstudio("stream", tmp_path / "one.csv", "--base", "100", "--centers", "5,102")
    assert late.returncode == 2 and "--centers: row 102 is past the first fit's 100 points (--base)" in late.stderr


def test_automatic_clusters_noise_the_gamma_rule_and_the_entropy_dc():
    from dpstudio.engine import DensityPeaks, IndexedPoints

    path = sample_data.path("noisy")
    auto, noise, gamma, entropy = (
        json.loads(dpstudio("cluster", path, "--json", *extra).stdout)
        for extra in ([], ["--noise", "--significance", "2"], ["--centers", "gamma"], ["--dc-rule", "entropy"])
    )
    points = pd.read_csv(path).to_numpy(np.float32)
    expected = DensityPeaks(backend="cpu").fit(points)
    assert auto["centers_rule"] == "density topography, significance 2.5" and "noise_count" not in auto
    assert auto["centers"] == expected.centers_.tolist() and auto["n_clusters"] == 4
    with_noise = DensityPeaks(noise=True, significance=2.0, backend="cpu").fit(points).labels_
    assert noise["noise_count"] == int((with_noise < 0).sum()) > 0
    assert gamma["centers_rule"] == "largest gamma drop"
    assert gamma["centers"][: gamma["n_clusters"]] == DensityPeaks(suggest="gamma", backend="cpu").fit(points).centers_.tolist()
    assert entropy["dc_rule"] == "entropy rule" and entropy["dc"] == IndexedPoints(points, backend="cpu").dc_for_entropy()
    assert "not allowed with argument" in dpstudio("cluster", path, "--dc-rule", "entropy", "--dc", "1").stderr


def test_dbscan_and_hdbscan_write_what_scikit_learn_finds(tmp_path):
    import sklearn.cluster

    path = sample_data.path("noisy")
    points = pd.read_csv(path).to_numpy(np.float32).astype(np.float64)
    result = dpstudio("cluster", path, "--method", "dbscan", "--eps", "0.45", "--min-samples", "8", "--out", tmp_path / "d.csv")
    assert result.returncode == 0, result.stderr
    assert "dbscan    eps 0.45 (given), min_samples 8" in result.stdout and "noise     " in result.stdout
    table = pd.read_csv(tmp_path / "d.csv")
    want = sklearn.cluster.DBSCAN(eps=0.45, min_samples=8).fit(points)
    assert list(table.columns) == ["index", "label", "core"]
    np.testing.assert_array_equal(table["label"], want.labels_)
    np.testing.assert_array_equal(np.flatnonzero(table["core"]), want.core_sample_indices_)

    knee = json.loads(dpstudio("cluster", path, "--method", "dbscan", "--json").stdout)
    assert knee["eps_rule"] == "knee of the core distances" and knee["min_samples"] == 5 and knee["n_clusters"] >= 2
    assert knee["noise_count"] + sum(knee["cluster_sizes"]) == 1920

    result = dpstudio("cluster", path, "--method", "hdbscan", "--min-cluster-size", "15", "--selection", "leaf", "--json",
                      "--out", tmp_path / "h.parquet")  # fmt: skip
    assert result.returncode == 0, result.stderr
    facts = json.loads(result.stdout)
    assert facts["method"] == "hdbscan" and facts["min_samples"] == 15 and facts["selection"] == "leaf"
    table = pd.read_parquet(tmp_path / "h.parquet")
    assert list(table.columns) == ["index", "label", "probability", "outlier_score"]
    assert facts["noise_count"] == int((table["label"] < 0).sum()) > 0


def test_columns_standardize_and_dropped_rows(tmp_path):
    frame = pd.DataFrame({"id": [f"p{i}" for i in range(60)], "a": np.arange(60.0), "b": np.arange(60.0) % 7, "c": 1.0})
    frame.loc[5, "a"] = np.nan
    frame.to_csv(tmp_path / "d.csv", index=False)
    failed = dpstudio("cluster", tmp_path / "d.csv")
    assert failed.returncode == 2 and "row 5" in failed.stderr
    result = dpstudio("cluster", tmp_path / "d.csv", "--columns", "a,b", "--standardize", "--drop-nonfinite", "--json", "--out", tmp_path / "o.csv")
    assert result.returncode == 0, result.stderr
    facts = json.loads(result.stdout)
    assert facts["columns"] == ["a", "b"] and facts["n_points"] == 59 and facts["dropped_rows"] == 1
    written = pd.read_csv(tmp_path / "o.csv", keep_default_na=False)
    assert list(written["index"]) == list(range(60))  # one row per input row, the dropped one kept empty
    assert written.loc[5, "label"] == "" and written.loc[5, "reason"] == "NaN or infinite value"
    assert (written.drop(index=5)["reason"] == "").all() and (written.drop(index=5)["label"] != "").all()


@pytest.mark.parametrize(
    ("args", "message"),
    [
        (["missing.csv"], "file not found"),
        (["{bad}"], "not numeric"),
        (["{good}", "--columns", "q"], "no column named 'q'"),
        (["{good}", "--centers", "x:y"], "expected auto, gamma, K"),
        (["{good}", "--dc", "-2"], "dc must be a finite positive"),
        (["{good}", "--out", "labels.json"], "use a .csv or .parquet"),
        (["{good}", "--dc", "1", "--dc-percent", "2"], "not allowed with argument"),
        (["{good}", "--centers", "99,"], "row 99 is not a row of the input (rows 0 to 19)"),
        (["{good}", "--method", "dbscan", "--eps", "0"], "eps must be a finite number > 0"),
        (["{good}", "--method", "dbscan", "--min-samples", "0"], "min_samples must be a whole number >= 1"),
        (["{good}", "--method", "hdbscan", "--min-cluster-size", "1"], "min_cluster_size must be a whole number >= 2"),
        (["{good}", "--method", "hdbscan", "--min-cluster-size", "50"], "min_samples (50) must be at most the number of points"),
        (["{good}", "--centers", ":"], "at least one given"),
        (["{good}", "--centers", "nan:nan"], "finite numbers"),
        (["{good}", "--dc", "1e400"], "expected a finite number; '1e400' overflows"),
        (["{good}", "--dc", "1e30"], "outside what float32 distances resolve"),
        (["{good}", "--dc", "1e308"], "outside what float32 distances resolve"),  # its square overflows float64
        (["{huge}"], "their squared distances overflow float32"),
        (["{good}", "--out", "{folder}"], "is a folder"),
        (["missing.csv", "--out", "nowhere/labels.csv"], "folder not found: nowhere"),  # checked before any work
        (["{folder}"], "is a folder, not a file"),
        (["{garbage}"], "not a NumPy .npy file"),
    ],
)
def test_bad_input_exits_2_with_one_line(tmp_path, args, message):
    (tmp_path / "bad.csv").write_text("x,y\n1,2\n3,oops\n")
    (tmp_path / "good.csv").write_text("x,y\n" + "\n".join(f"{i},{i % 3}" for i in range(20)))
    (tmp_path / "folder.csv").mkdir()
    (tmp_path / "garbage.npy").write_bytes(bytes(range(256)) * 4)
    (tmp_path / "huge.csv").write_text("x,y\n" + "\n".join(f"{i}e19,{i % 3}e19" for i in range(20)))
    files = [("bad", "bad.csv"), ("good", "good.csv"), ("folder", "folder.csv"), ("garbage", "garbage.npy"), ("huge", "huge.csv")]
    paths = {name: tmp_path / file for name, file in files}
    args = [a.format(**paths) for a in args]
    result = dpstudio("cluster", *args, cwd=tmp_path)
    assert result.returncode == 2
    assert message in result.stderr
    assert "Traceback" not in result.stderr


def test_a_dc_below_every_distance_is_warned_about(tmp_path):
    result = dpstudio("cluster", sample_data.path("moons"), "--dc", "1e-9")
    assert result.returncode == 0
    assert "warning: dc = 1e-9 is not above the smallest distance between points: every ρ is 0" in result.stderr


def test_features_that_take_no_part_in_the_distances_are_warned_about(tmp_path):
    """A constant feature gave one cluster with no word (every distance 0); one among others is harmless but named."""
    moons = pd.read_csv(sample_data.path("moons"))
    moons.assign(batch=3).to_csv(tmp_path / "with_constant.csv", index=False)
    one = dpstudio("cluster", tmp_path / "with_constant.csv", "--json")
    assert one.returncode == 0, one.stderr
    assert "warning: feature 'batch' holds one value on every row: it takes no part in the distances" in one.stderr
    assert json.loads(one.stdout)["n_clusters"] == json.loads(dpstudio("cluster", sample_data.path("moons"), "--json").stdout)["n_clusters"]
    alone = dpstudio("stream", tmp_path / "with_constant.csv", "--columns", "batch", "--json")
    assert alone.returncode == 0, alone.stderr
    assert "warning: no feature varies: every point is the same" in alone.stderr


def test_options_the_method_does_not_read_are_named_in_a_warning():
    path = sample_data.path("moons")
    ignored = dpstudio("cluster", path, "--method", "dbscan", "--dc", "0.5", "--kernel", "gaussian", "--min-samples", "4", "--json")
    assert ignored.returncode == 0, ignored.stderr
    assert warnings(ignored) == ["warning: --dc is for --method dpc; ignored", "warning: --kernel is for --method dpc; ignored"]
    assert json.loads(ignored.stdout)["min_samples"] == 4
    dpc = dpstudio("cluster", path, "--eps", "0.3", "--centers", "gamma", "--noise", "--dc-percent", "2", "--json")
    assert warnings(dpc) == ["warning: --eps is for --method dbscan; ignored",
                             "warning: --noise is for --method dpc with --centers auto; ignored"]  # fmt: skip
    read = dpstudio("cluster", path, "--method", "hdbscan", "--min-samples", "3", "--selection", "leaf", "--json")
    assert read.returncode == 0 and warnings(read) == []
    stream = dpstudio("stream", path, "--noise", "--significance", "9", "--json")  # its centers: gamma by default
    assert warnings(stream) == ["warning: --significance is for --method dpc with --centers auto; ignored",
                                "warning: --noise is for --method dpc with --centers auto; ignored"]  # fmt: skip


def test_noise_not_read_is_not_counted():
    """--noise with gamma centers was warned of as ignored, and the summary still printed "noise 0 points"."""
    ignored = dpstudio("cluster", sample_data.path("moons"), "--centers", "gamma", "--noise", "--json")
    assert ignored.returncode == 0 and "noise_count" not in json.loads(ignored.stdout)
    read = dpstudio("cluster", sample_data.path("moons"), "--noise", "--json")
    assert read.returncode == 0 and "noise_count" in json.loads(read.stdout)


def test_a_missing_optional_extra_is_one_line_naming_it(tmp_path):
    """Without pynndescent, --neighbors approximate printed a traceback and exited 1. An installed pynndescent that
    fails to import is that failure, not a missing extra."""

    def with_pynndescent(body: str):
        (tmp_path / "pynndescent").mkdir(exist_ok=True)
        (tmp_path / "pynndescent" / "__init__.py").write_text(body)
        return subprocess.run([sys.executable, "-m", "dpstudio.app.cli", "cluster", str(sample_data.path("moons")), "--method",
                               "dbscan", "--neighbors", "approximate"], capture_output=True, text=True, timeout=300,
                              env={**os.environ, "PYTHONPATH": str(tmp_path)})  # fmt: skip

    missing = with_pynndescent("raise ModuleNotFoundError('No module named pynndescent', name='pynndescent')\n")
    assert missing.returncode == 2, missing.stderr
    assert missing.stderr.strip().splitlines() == ["dpstudio: error: approximate neighbours need pynndescent: pip install 'dpstudio[approximate]'"]
    broken = with_pynndescent("from numba import does_not_exist\n")
    assert broken.returncode == 1 and "ImportError: cannot import name 'does_not_exist' from 'numba'" in broken.stderr


def warnings(result) -> list[str]:
    """The lines of a run's stderr that warn of an option (not another library's warnings)."""
    return [line for line in result.stderr.splitlines() if line.startswith("warning: --")]


def test_version():
    result = dpstudio("--version")
    assert result.returncode == 0 and result.stdout.startswith("dpstudio ") and result.stdout.split()[1][0].isdigit()


def test_bench_runs_a_small_table():
    result = dpstudio("bench", "--sizes", "3000", "--dims", "2", "--baseline-queries", "1000")
    assert result.returncode == 0, result.stderr
    lines = result.stdout.splitlines()
    assert any("rho speed-up" in line for line in lines)
    assert sum(line.strip().startswith("3,000") for line in lines) == 2  # 2% rule and small dc
    assert "cold start" in result.stdout


def test_serve_fails_early_on_a_missing_file(tmp_path):
    result = dpstudio("serve", str(tmp_path / "missing.csv"), "--no-show", "--backend", "cpu")
    assert result.returncode == 2 and "file not found" in result.stderr


def test_stream_replays_a_file_and_ends_where_a_fresh_fit_does(tmp_path):
    from dpstudio.engine import DensityPeaks

    path, out = sample_data.path("blobs"), tmp_path / "stream.csv"
    result = dpstudio("stream", path, "--batch", "500", "--base", "20%", "--dc", "0.6", "--centers", "5", "--json", "--out", out, "--backend", "cpu")
    assert result.returncode == 0, result.stderr
    rows = [json.loads(line) for line in result.stdout.splitlines()]
    assert rows[0]["batch"] == 0 and rows[0]["n_points"] == 460
    assert [r["size"] for r in rows[1:]] == [500, 500, 500, 340] and rows[-1]["n_points"] == 2300
    assert all({"clusters", "appeared", "vanished", "merged", "split", "moved", "update_ms"} <= r.keys() for r in rows[1:])
    streamed = pd.read_csv(out)
    points = pd.read_csv(path).select_dtypes("number").to_numpy()
    base = DensityPeaks(dc=0.6, suggest="gamma", backend="cpu").fit(points[:460]).assign(n_centers=5)
    fresh = DensityPeaks(dc=0.6, suggest="gamma", backend="cpu").fit(points).assign(centers=base._chosen)
    np.testing.assert_array_equal(streamed["index"], np.arange(2300))
    np.testing.assert_array_equal(streamed["label"], fresh.labels_)
    np.testing.assert_array_equal(streamed["rho"], fresh.rho_)

    table = dpstudio("stream", path, "--batch", "1000", "--base", "300", "--backend", "cpu")
    assert table.returncode == 0, table.stderr
    assert "base fit  300 of 2300 points" in table.stdout and "update ms" in table.stdout
    assert len(table.stdout.splitlines()) == 2 + 2


@pytest.mark.parametrize(("args", "message"), [(["--base", "0%"], "percentage in (0, 100)"), (["--base", "1"], "rows (>= 2)"),
                                               (["--batch", "0"], "--batch must be at least 1"), (["--out", "/nowhere/x.csv"], "folder not found")])
def test_stream_refuses_bad_options(args, message):
    result = dpstudio("stream", sample_data.path("blobs"), *args)
    assert result.returncode == 2 and message in result.stderr and "Traceback" not in result.stderr


def test_bench_incremental_checks_every_measured_batch():
    result = dpstudio("bench", "--incremental", "--sizes", "6000", "--dims", "2", "--batches", "3", "--batch", "500")
    assert result.returncode == 0, result.stderr
    rows = [line for line in result.stdout.splitlines() if line.strip().startswith("6,000")]
    assert len(rows) == 2 and all("8/8 equal" in row for row in rows)  # 3 inserts + 5 deletes, each against a fresh fit


def test_a_local_dask_cluster_gives_the_single_process_result(tmp_path):
    pytest.importorskip("distributed")
    path = sample_data.path("blobs")
    alone = dpstudio("cluster", path, "--json", "--backend", "cpu", "--kernel", "gaussian", "--out", tmp_path / "alone.csv")
    spread = dpstudio("cluster", path, "--json", "--local-cluster", "2", "--kernel", "gaussian", "--out", tmp_path / "spread.csv")
    assert alone.returncode == 0 and spread.returncode == 0, spread.stderr
    assert "on 2 Dask workers" in json.loads(spread.stdout)["backend"]
    pd.testing.assert_frame_equal(pd.read_csv(tmp_path / "spread.csv"), pd.read_csv(tmp_path / "alone.csv"))


def test_a_running_dask_scheduler_is_used_by_its_address(tmp_path):
    distributed = pytest.importorskip("distributed")
    path = sample_data.path("moons")
    with distributed.LocalCluster(n_workers=1, threads_per_worker=1, processes=True, dashboard_address=None) as cluster:
        spread = dpstudio("cluster", path, "--scheduler", cluster.scheduler_address, "--kernel", "gaussian", "--out", tmp_path / "spread.csv")
    alone = dpstudio("cluster", path, "--backend", "cpu", "--kernel", "gaussian", "--out", tmp_path / "alone.csv")
    assert spread.returncode == 0 and alone.returncode == 0, spread.stderr
    assert "rho and delta on 1 Dask worker (1 thread)" in spread.stdout
    pd.testing.assert_frame_equal(pd.read_csv(tmp_path / "spread.csv"), pd.read_csv(tmp_path / "alone.csv"))


@pytest.mark.parametrize(
    ("args", "message"),
    [
        (["--local-cluster", "0"], "--local-cluster needs at least 1 worker"),
        (["--local-cluster", "2", "--method", "dbscan"], "spread density peaks (--method dpc) only"),
        (["--scheduler", "tcp://127.0.0.1:9"], "cannot reach the Dask scheduler at tcp://127.0.0.1:9"),
        (["--local-cluster", "1", "--protocol", "ucx"], "protocol ucx is for GPU workers"),
        (["--protocol", "ucx"], "--protocol is for --local-cluster"),
        (["--scheduler", "tcp://127.0.0.1:9", "--protocol", "tcp"], "--protocol is for --local-cluster"),
    ],
)
def test_bad_dask_options_exit_2_with_one_line(args, message):
    result = dpstudio("cluster", sample_data.path("moons"), *args)
    assert result.returncode == 2 and message in result.stderr and "Traceback" not in result.stderr


def test_bench_protocol_without_distributed_exits_2():
    result = dpstudio("bench", "--protocol", "tcp", "--sizes", "1000")
    assert result.returncode == 2 and "--protocol is for --distributed" in result.stderr


def test_bench_distributed_checks_every_row():
    result = dpstudio("bench", "--distributed", "--sizes", "20000", "--dims", "2", "--workers", "1,2")
    assert result.returncode == 0, result.stderr
    rows = [line for line in result.stdout.splitlines() if line.strip().startswith("20,000")]
    assert len(rows) == 6 and sum(row.rstrip().endswith("yes") for row in rows) == 4  # 2 rules x (reference, 1, 2)


def test_best_efficiency_splits_all_but_the_floor():
    # one worker 0.380 s with a floor of 17 ms, two with 23 ms: 0.023 + 0.363 / 2 = 0.2045 s at best, 92.9%
    assert best_efficiency(0.380, 0.017, 0.023, 1, 2) == pytest.approx(0.380 / (2 * 0.2045))
    assert best_efficiency(0.380, 0.017, 0.017, 1, 1) == pytest.approx(1.0)
    # two workers as the base, 1.0 s with 0.1 s fixed; four: 0.1 + 0.9 / 2 = 0.55 s, against the ideal 0.5 s
    assert best_efficiency(1.0, 0.1, 0.1, 2, 4) == pytest.approx(0.5 / 0.55)
