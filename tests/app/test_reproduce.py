"""Copy as command, the saved session and the URL's query: each gives back the page's clustering."""

from __future__ import annotations

import json
import re
import shlex
import subprocess
import sys

import numpy as np
import pandas as pd
import pytest

from dpstudio import sample_data
from dpstudio.app.datasets import DatasetCache
from dpstudio.app.reproduce import (apply_session, command_line, page_query, query_document, query_fallbacks, read_session,
                                   session_document, session_json)
from dpstudio.app.streaming import Streaming
from dpstudio.app.studio import Studio
from dpstudio.engine import DBSCAN


@pytest.fixture(scope="module")
def cache():
    return DatasetCache(max_datasets=3, backend="cpu")


@pytest.fixture
def studio(cache):
    studio = Studio()
    studio.load(cache.sample("blobs"))
    yield studio
    studio.close()


def run_command(line: str, tmp_path) -> np.ndarray:
    """Run a copied command line as a user would paste it into a shell (its --out file in tmp_path); the labels it
    wrote."""
    args = shlex.split(line.split("  #")[0])
    assert args[:2] == ["dpstudio", "cluster"] and args[-2] == "--out"
    out = tmp_path / args[-1]
    result = subprocess.run([sys.executable, "-m", "dpstudio.app.cli", *args[1:-1], str(out), "--backend", "cpu"],
                            capture_output=True, text=True, timeout=300)  # fmt: skip
    assert result.returncode == 0, result.stderr
    return pd.read_csv(out)["label"].to_numpy()


def test_the_copied_command_gives_the_pages_clusters_for_each_method(studio, tmp_path):
    dpc = studio.dpc
    dpc.set_dc(dc_percent=1.5)
    dpc.choose([int(i) for i in np.argsort(-dpc.model.rho_ * dpc.model.delta_)[:3]])
    dpc.set_dc(float(dpc.dc) * 1.25)  # the picks followed to a directly set dc
    line = command_line(studio)
    assert "--dc " in line and "--centers " in line
    np.testing.assert_array_equal(run_command(line, tmp_path), studio.labels())
    dpc.clear()  # no center chosen: one cluster, not the command's default (the automatic clusters)
    assert "--centers , " in command_line(studio)
    np.testing.assert_array_equal(run_command(command_line(studio), tmp_path), studio.labels())
    studio.set_method("dbscan")
    studio.dbscan.set_eps(float(studio.dbscan.eps) * 0.8)
    np.testing.assert_array_equal(run_command(command_line(studio), tmp_path), studio.labels())
    studio.set_method("hdbscan")
    studio.hdbscan.set_parameters(min_cluster_size=40, min_samples=10)
    np.testing.assert_array_equal(run_command(command_line(studio), tmp_path), studio.labels())


def test_the_command_names_the_chosen_features_and_scaling(cache, tmp_path):
    studio = Studio()
    studio.load(cache.features(cache.sample("blobs3d"), ["z", "x"], standardize=True))
    studio.dpc.pick_count(3)
    line = command_line(studio)
    assert "--columns=z,x --standardize" in line
    np.testing.assert_array_equal(run_command(line, tmp_path), studio.labels())
    saved = read_session(session_json(studio))
    fresh = Studio()
    fresh.load(cache.sample("blobs"))
    apply_session(fresh, saved, cache)
    assert fresh.dataset is studio.dataset
    np.testing.assert_array_equal(fresh.labels(), studio.labels())


def test_the_command_names_features_whose_names_hold_commas_quotes_or_spaces(cache, tmp_path):
    """Features "weight, kg" and "  spaced name  " gave --columns 'weight, kg,  spaced name  ', which the CLI read
    as four names: "no column named 'weight'"."""
    blobs = pd.read_csv(sample_data.path("blobs3d"))
    frame = pd.DataFrame({"weight, kg": blobs["x"], '  spaced "name"  ': blobs["y"], "δ→": blobs["z"], "-x": blobs["x"]})
    frame.to_csv(tmp_path / "named.csv", index=False)
    studio = Studio()
    studio.load(cache.features(cache.file(tmp_path / "named.csv"), ["weight, kg", '  spaced "name"  '], standardize=False))
    line = command_line(studio)
    assert """'--columns="weight, kg","  spaced ""name""  "'""" in line
    np.testing.assert_array_equal(run_command(line, tmp_path), studio.labels())
    studio.load(cache.features(studio.dataset, ["-x", "δ→"], standardize=False))  # (a first name "-x" read as an option)
    np.testing.assert_array_equal(run_command(command_line(studio), tmp_path), studio.labels())


def test_a_saved_session_loads_back_into_a_fresh_page(studio, cache):
    studio.dpc.set_dc(dc_percent=3.0, kernel="gaussian")
    studio.dpc.pick_count(4)
    studio.set_method("dbscan")
    studio.dbscan.set_min_samples(8)
    studio.dbscan.set_eps(0.4)
    studio.set_method("hdbscan")
    tree = studio.hdbscan.model
    studio.hdbscan.toggle_cluster(int(tree.selected_clusters_[0]))
    studio.set_method("dpc")
    saved = session_json(studio)
    fresh = Studio()
    fresh.load(cache.sample("moons"))  # another data set: the session names its sample
    apply_session(fresh, read_session(saved), cache)
    assert fresh.dataset.name == studio.dataset.name and fresh.method == "dpc"
    for method in ("dpc", "dbscan", "hdbscan"):
        np.testing.assert_array_equal(fresh.states[method].labels(), studio.states[method].labels())
    assert (fresh.dpc.kernel, fresh.dpc.dc, fresh.dbscan.eps, fresh.hdbscan.hand_picked) == ("gaussian", studio.dpc.dc, 0.4, True)
    assert json.loads(saved) == json.loads(session_json(fresh))
    assert not fresh.dpc.can_undo  # Undo starts from the session loaded: no way back to its steps on the way
    studio.dpc.clear()  # Clear's choice of no center comes back as one cluster
    apply_session(fresh, read_session(session_json(studio)), cache)
    assert fresh.dpc.centers_picked and fresh.dpc.model.labels_.max() == 0
    fresh.close()


def test_a_saved_session_keeps_the_dc_its_centers_were_picked_at(cache):
    """Picks followed to another dc were saved as that dc's centers: back at the dc they were picked at, the loaded
    page gave another clustering than the one it was saved from (4 clusters for 8)."""
    studio, fresh = Studio(), Studio()
    studio.load(cache.sample("noisy"))
    fresh.load(cache.sample("blobs"))
    studio.dpc.pick_count(8)
    studio.dpc.set_dc(studio.dpc.dc * 2.5)  # the picks followed there
    apply_session(fresh, read_session(session_json(studio)), cache)
    np.testing.assert_array_equal(fresh.dpc.model.labels_, studio.dpc.model.labels_)
    for session in (studio, fresh):
        session.dpc.set_dc(dc_percent=2.0)  # back where they were picked
    np.testing.assert_array_equal(fresh.dpc.model.labels_, studio.dpc.model.labels_)
    assert len(fresh.dpc.centers) == 8
    studio.close()
    fresh.close()


def assert_same_session(fresh, studio):
    """The same points (values and file rows, in order) and the same DPC results and centers."""
    for name in ("values", "rows"):
        np.testing.assert_array_equal(getattr(fresh.dataset.points, name), getattr(studio.dataset.points, name))
    for name in ("rho_", "delta_", "parent_", "labels_", "centers_"):
        np.testing.assert_array_equal(getattr(fresh.dpc.model, name), getattr(studio.dpc.model, name), err_msg=name)
    assert fresh.dpc.centers_picked == studio.dpc.centers_picked


def test_a_saved_session_keeps_the_points_added_and_deleted(studio, cache):
    studio.dpc.pick_count(4)
    studio.add_point(0.5, -0.25)
    studio.add_point(-7.0, 3.0)
    x, y = studio.plot_coordinates("view")
    near = [(float(x[20]) + dx, float(y[20]) + dy) for dx, dy in ((-0.3, -0.3), (0.3, -0.3), (0.3, 0.3), (-0.3, 0.3))]
    studio.delete_in_view(near)  # holes in the file's rows
    studio.set_method("dbscan")
    saved = session_json(studio)
    document = json.loads(saved)
    assert document["dataset"]["name"] == "blobs" and len(document["dataset"]["edits"]["added"]) == 2
    fresh = Studio()
    fresh.load(cache.sample("moons"))
    apply_session(fresh, read_session(saved), cache)
    assert fresh.dataset.base is cache.sample("blobs") and fresh.method == "dbscan"
    assert_same_session(fresh, studio)
    np.testing.assert_array_equal(fresh.labels(), studio.labels())
    assert json.loads(session_json(fresh)) == document
    del document["dataset"]["edits"], document["dataset"]["n_points"]
    apply_session(fresh, document, cache)  # no edits: back to the file's points
    assert fresh.dataset is cache.sample("blobs") and fresh.dataset.base is None
    fresh.close()


def test_a_saved_session_keeps_a_streams_points(cache):
    studio = Studio()
    studio.load(cache.sample("noisy"))
    streaming = Streaming(studio)
    streaming.start(10.0)
    streaming.next_batch(300)
    studio.dpc.pick_count(3)
    saved = session_json(studio)
    assert json.loads(saved)["dataset"]["edits"] == {"rows": [[0, studio.dataset.n_points]], "added": []}
    fresh = Studio()
    fresh.load(cache.sample("blobs"))
    apply_session(fresh, read_session(saved), cache)
    assert_same_session(fresh, studio)
    studio.close(), fresh.close()


@pytest.mark.parametrize(("edits", "message"), [
    ({"rows": [[0, 5]]}, "edits must hold rows"),
    ({"rows": [], "added": []}, "runs \\[first, stop\\)"),
    ({"rows": [[3, 3]], "added": []}, "runs"),
    ({"rows": [[0, 5]], "added": [[1.0, "a"]]}, "finite numbers"),
    ({"rows": [[0, 5]], "added": [[1.0, float("nan")]]}, "finite numbers"),
])  # fmt: skip
def test_bad_edits_are_refused_before_anything_changes(edits, message):
    document = {"dpstudio_session": 1, "dataset": {"sample": "blobs", "edits": edits}, "method": "dpc",
                "dpc": {"kernel": "cutoff", "dc": 0.5}}  # fmt: skip
    with pytest.raises(ValueError, match=message):
        read_session(json.dumps(document))


def test_a_loaded_sessions_points_count_on_from_its_rows(studio, cache):
    """Points added after a saved session's edits were loaded take rows past the file's and the saved added ones,
    and saving again keeps every row."""
    last = int(cache.sample("blobs").points.rows.max())
    document = {"dpstudio_session": 1, "method": "dpc", "dpc": {"kernel": "cutoff", "dc": 0.5},
                "dataset": {"sample": "blobs", "edits": {"rows": [[10, 100], [last + 1, last + 2]], "added": [[0.5, 0.5]]}}}  # fmt: skip
    apply_session(studio, read_session(json.dumps(document)), cache)
    np.testing.assert_array_equal(studio.dataset.points.rows, [*range(10, 100), last + 1])
    studio.add_point(-1.0, 2.0)
    np.testing.assert_array_equal(studio.dataset.points.rows, [*range(10, 100), last + 1, last + 2])
    saved = json.loads(session_json(studio))["dataset"]["edits"]
    assert saved == {"rows": [[10, 100], [last + 1, last + 3]], "added": [[0.5, 0.5], [-1.0, 2.0]]}


def at_the_end(edits, last):
    """Rows given as offsets past the file's last row (``"+k"``) made absolute."""
    return {**edits, "rows": [[last + int(v[1:]) if isinstance(v, str) else v for v in run] for run in edits["rows"]]}


@pytest.mark.parametrize(("edits", "message"), [
    ({"rows": [[0, 10], [5, 12]], "added": []}, "name a row twice"),
    ({"rows": [[0, 100]] * 10**4, "added": []}, "name a row twice"),  # refused before 10^6 rows are made
    ({"rows": [[0, 10], ["+1", "+2"]], "added": []}, "past the file's last row"),
    ({"rows": [[0, 10**10]], "added": []}, "past the file's last row"),  # refused before the array is made
    ({"rows": [[0, 10], ["+1", "+2"]], "added": [[0.0, 1.0], [2.0, 3.0]]}, "name 1 added points but 2 are given"),
    ({"rows": [[0, 10], ["+1", "+2"]], "added": [[1.0, 2.0, 3.0]]}, "each have 2 values"),
    ({"rows": [[0, 10], ["+1", "+2"]], "added": [[1e39, 0.0]]}, "too large"),  # past float32
    ({"rows": [[0, 10], ["+1", "+2"]], "added": [[1e20, 0.0]]}, "too large"),  # its squared distances overflow
    ({"rows": [[7, 8]], "added": []}, "at least 2"),
])  # fmt: skip
def test_edits_that_do_not_fit_the_file_change_nothing(studio, cache, edits, message):
    studio.set_method("hdbscan")
    labels = studio.labels().copy()
    edits = at_the_end(edits, int(cache.sample("blobs").points.rows.max()))
    document = {"dpstudio_session": 1, "dataset": {"sample": "blobs", "edits": edits}, "method": "dpc",
                "dpc": {"kernel": "cutoff", "dc": 0.5}}  # fmt: skip
    with pytest.raises(ValueError, match=message):
        apply_session(studio, read_session(json.dumps(document)), cache)
    assert studio.dataset is cache.sample("blobs") and studio.method == "hdbscan"
    np.testing.assert_array_equal(studio.labels(), labels)


@pytest.mark.parametrize(
    ("text", "message"),
    [
        ("not json", "not a dpstudio session file"),
        ('{"a": 1}', "no 'dpstudio_session' version"),
        ('{"dpstudio_session": 7}', "session version 7"),
        ('{"dpstudio_session": 1, "dataset": {"sample": "nope"}, "method": "dpc"}', "no sample named 'nope'"),
        ('{"dpstudio_session": 1, "dataset": {}, "method": "kmeans"}', "method must be one of"),
        ('{"dpstudio_session": 1, "dataset": {}, "method": "dpc", "dpc": {"kernel": "cutoff", "dc": -1}}', "dc must be a finite positive"),
        ('{"dpstudio_session": 1, "dataset": {}, "method": "dpc", "dpc": {"kernel": "cutoff", "centers": [1.5]}}', "centers must be a list"),
        ('{"dpstudio_session": 1, "dataset": {}, "method": "dpc", "dpc": {"kernel": "cutoff", "picked_at": {"kernel": "cutoff", '
         '"dc": 0, "centers": [1]}}}', "picked_at's dc must be a finite positive number"),
        ('{"dpstudio_session": 1, "dataset": {}, "method": "dpc", "dpc": {"kernel": "cutoff", "picked_at": [1]}}', "picked_at must be"),
        ('{"dpstudio_session": 1, "dataset": {}, "method": "dbscan", "dbscan": {"eps": 1, "min_samples": 0}}', "min_samples must be a whole number >= 1"),
        ('{"dpstudio_session": 1, "dataset": {}, "method": "dpc", "dpc": [1]}', "dpc must be an object of its parameters"),
        ('{"dpstudio_session": 1, "dataset": {"standardized": "yes"}, "method": "dpc"}', "standardized must be true or false"),
        ('{"dpstudio_session": 1, "dataset": {"n_points": "2300"}, "method": "dpc"}', "n_points must be a whole number"),
        ('{"dpstudio_session": 1, "dataset": {}, "method": "hdbscan", "hdbscan": {"min_cluster_size": 15, "min_samples": 15, '
         '"selection": "median"}}', "selection must be one of eom, leaf, got 'median'"),
        ('{"dpstudio_session": 1, "dataset": {}, "method": "dpc", "bogus": 1}', "unknown field 'bogus' in the session"),  # loaded silently
        ('{"dpstudio_session": 1, "dataset": {}, "method": "dpc", "dpc": {"kernel": "cutoff", "centres": [1]}}',
         r"unknown field 'centres' in dpc \(its fields: centers, dc, dc_percent, halo, kernel, log_axes, picked_at\)"),
        ('{"dpstudio_session": 1, "dataset": {}, "method": "dpc", "dpc": {"kernel": "cutoff", "halo": 1}}', "halo must be true or false, got 1"),
    ],
)
def test_bad_session_files_are_refused_with_the_field(text, message):
    with pytest.raises(ValueError, match=message):
        read_session(text)


def test_a_session_of_another_file_or_out_of_range_centers_changes_nothing(studio, cache):
    other = {"dpstudio_session": 1, "dataset": {"name": "mine.csv", "sample": None, "n_points": 10}, "method": "dpc"}
    with pytest.raises(ValueError, match="this session is of mine.csv; load that file first"):
        apply_session(studio, read_session(json.dumps(other)), cache)
    labels = studio.labels().copy()
    same = {"dpstudio_session": 1, "dataset": {"name": studio.dataset.name, "sample": "blobs"}, "method": "dpc",
            "dpc": {"kernel": "cutoff", "dc": None, "dc_percent": None, "centers": [10**6]}}  # fmt: skip
    with pytest.raises(ValueError, match="out of range"):
        apply_session(studio, read_session(json.dumps(same)), cache)
    np.testing.assert_array_equal(studio.labels(), labels)


def test_a_url_query_opens_a_sample_with_its_parameters(studio, cache):
    document = query_document("?sample=moons&method=dbscan&eps=0.15&min_samples=6")
    apply_session(studio, document, cache)
    assert (studio.dataset.name, studio.method, studio.dbscan.eps, studio.dbscan.min_samples) == ("moons", "dbscan", 0.15, 6)
    apply_session(studio, query_document("sample=moons&dc_percent=1&centers=5,900"), cache)
    assert studio.method == "dpc" and studio.dpc.dc_percent == 1 and list(studio.dpc.centers) == [5, 900, 549]
    # the densest point (549) is a center at every dc, not a pick: neither saved nor written as one
    assert session_document(studio)["dpc"]["centers"] == [5, 900] and "--centers 5,900 " in command_line(studio)
    apply_session(studio, query_document("sample=blobs3d&features=x,z&standardize=1"), cache)
    assert studio.dataset.points.columns == ("x", "z") and studio.dataset.standardized
    apply_session(studio, query_document({"sample": ["blobs3d"]}), cache)  # as the server passes them
    assert studio.dataset.points.columns == ("x", "y", "z") and not studio.dataset.standardized
    percent = studio.dpc.dc_percent
    apply_session(studio, query_document("sample=blobs&kernel=gaussian"), cache)  # a kernel alone: the rule shown
    assert (studio.dpc.kernel, studio.dpc.dc_percent) == ("gaussian", percent)
    assert "--kernel gaussian" in command_line(studio)
    for query, message in [("dc=abc", "dc must be a number, got 'abc'"), ("sample=x", "no sample named 'x'"),
                           ("standardize=yes", "standardize must be 1 or 0"), ("halo=on", "halo must be 1 or 0, got 'on'"),
                           ("method=dbscan&log_axes=1", "log_axes is DPC's: the URL's method=dbscan does not use it"),
                           ("colour=red", "unknown URL parameter 'colour'"), ("method=dbscan&eps=-1", "eps must be a finite positive"),
                           ("sample=moons&sample=blobs", "URL parameter 'sample' is given more than once"),
                           ("dc=0.1&dc_percent=3", "give dc or dc_percent, not both"),
                           ("sample=moons&centers=", "centers is empty"), ("method=hdbscan&clusters=", "clusters is empty"),
                           ("clusters=,", "clusters is HDBSCAN's: add method=hdbscan"),
                           # cut to a whole number, ignored, or a column used once, without a word
                           ("centers=1.5", "centers must be a whole number, got '1.5'"),
                           ("method=dbscan&min_samples=2.5", "min_samples must be a whole number"),
                           ("sample=moons&min_samples=3", "min_samples is DBSCAN and HDBSCAN's: add method=dbscan or method=hdbscan"),
                           ("selection=leaf", "selection is HDBSCAN's: add method=hdbscan"),
                           # DBSCAN shown for a moment, then DPC; DPC's dc set behind HDBSCAN
                           ("sample=blobs&eps=0.3", "eps is DBSCAN's: add method=dbscan"),
                           ("sample=moons&method=hdbscan&dc=0.3", "dc is DPC's: the URL's method=hdbscan does not use it \\(use method=dpc\\)"),
                           ("method=DBSCAN&eps=0.3", "method must be one of dpc, dbscan, hdbscan, got 'DBSCAN'"),
                           ("method=hdbscan&selection=median", "selection must be one of eom, leaf"),
                           ("sample=blobs3d&features=x,x", "features name a column twice")]:  # fmt: skip
        with pytest.raises(ValueError, match=message):
            query_document(query)


def test_the_pages_query_opens_the_same_clustering_in_a_fresh_page(studio, cache):
    """Each state the page's address may hold, read back by a fresh page (``page_query`` then ``query_document``)."""
    fresh = Studio()
    fresh.load(cache.sample("moons"))

    def reopened() -> str:
        query = page_query(studio)
        apply_session(fresh, query_document(query), cache)
        assert (fresh.dataset.name, fresh.method) == (studio.dataset.name, studio.method)
        np.testing.assert_array_equal(fresh.labels(), studio.labels())
        assert page_query(fresh) == query
        return query

    assert reopened() == "?sample=blobs&method=dpc&dc_percent=2"
    dpc = studio.dpc
    dpc.set_dc(float(dpc.dc) * 0.8, kernel="gaussian")
    dpc.pick_count(3)
    assert re.fullmatch(r"\?sample=blobs&method=dpc&kernel=gaussian&dc=[0-9.]+&centers=\d+,\d+,\d+", reopened())
    assert fresh.dpc.dc == dpc.dc
    dpc.set_halo(True)  # the views: halo points are labelled -1 (noise) while shown
    dpc.set_log_axes(True)
    assert "&halo=1&log_axes=1&centers=" in reopened() and (fresh.dpc.show_halo, fresh.dpc.log_axes) == (True, True)
    dpc.set_halo(False)
    assert "&log_axes=1&centers=" in reopened() and (fresh.dpc.show_halo, fresh.dpc.log_axes) == (False, True)
    dpc.set_log_axes(False)
    dpc.clear()  # none picked: one cluster, not the automatic clusters
    assert reopened().endswith("&centers=,") and fresh.labels().max() == 0
    studio.set_method("dbscan")
    studio.dbscan.set_eps(float(studio.dbscan.eps) * 0.7)
    assert "&method=dbscan&eps=" in reopened() and fresh.dbscan.eps == studio.dbscan.eps
    studio.set_method("hdbscan")
    studio.hdbscan.set_parameters(min_cluster_size=40, min_samples=10, selection="leaf")
    studio.hdbscan.toggle_cluster(int(studio.hdbscan.model.selected_clusters_[0]))
    assert "&selection=leaf&clusters=" in reopened() and fresh.hdbscan.hand_picked
    for cluster in studio.hdbscan.model.selected_clusters_.tolist():  # every cluster deselected on the tree: all noise
        studio.hdbscan.toggle_cluster(cluster)
    assert reopened().endswith("&clusters=,") and (fresh.labels() == -1).all()
    apply_session(studio, query_document("sample=blobs3d&features=x,z&standardize=1"), cache)
    assert reopened().startswith("?sample=blobs3d&features=x,z&standardize=1&method=dpc&")
    fresh.close()


def test_a_session_of_edited_points_keeps_its_kernel_and_percent_rule(studio, cache):
    studio.dpc.set_dc(kernel="gaussian")
    studio.add_point(0.0, 0.0)
    studio.dpc.set_dc(dc_percent=3.0)
    studio.dpc.pick_count(3)
    fresh = Studio()
    fresh.load(cache.sample("moons"))
    apply_session(fresh, read_session(session_json(studio)), cache)
    # the kernel's setting said cut-off beside a Gaussian model (and the next dc change fitted the cut-off
    # kernel); the percent box came back blank
    assert (fresh.dpc.kernel, fresh.dpc.model.kernel_, fresh.dpc.dc_percent, fresh.dpc.dc) == ("gaussian", "gaussian", 3.0, studio.dpc.dc)
    np.testing.assert_array_equal(fresh.labels(), studio.labels())
    assert json.loads(session_json(fresh)) == json.loads(session_json(studio))  # saved again, the same file
    fresh.close()


def test_a_refused_session_keeps_the_edits_undo_takes_back(studio, cache):
    studio.add_point(0.0, 0.0)
    with pytest.raises(ValueError, match="min_cluster_size must be"):
        apply_session(studio, query_document("?sample=blobs&method=hdbscan&min_cluster_size=5000"), cache)
    assert studio.can_undo_edit and studio.dataset.n_points == 2301
    studio.undo_edit()
    assert studio.dataset.n_points == 2300


def test_a_urls_min_samples_without_eps_opens_at_its_own_knee(studio, cache):
    apply_session(studio, query_document("?sample=moons&method=dbscan&min_samples=12"), cache)
    knee = DBSCAN(eps=None, min_samples=12, backend="cpu").fit(studio.dataset.points.values).eps_
    assert (studio.dbscan.min_samples, studio.dbscan.eps) == (12, knee)  # it kept the knee of min_samples 5


@pytest.mark.parametrize(("query", "shown"), [
    ({"sample": ["moons"], "method": ["dbscan"], "eps": ["-1"]}, ("moons", "dbscan")),
    # a refused feature, scaling or method opened the page on the default sample
    ({"sample": ["moons"], "features": ["x,x"]}, ("moons", "dpc")),
    ({"sample": ["moons"], "standardize": ["yes"], "method": ["dbscan"]}, ("moons", "dbscan")),
    ({"sample": ["moons"], "method": ["DBSCAN"]}, ("moons", "dpc")),
    ({"sample": ["nowhere"], "method": ["dbscan"]}, None),
    ({"sample": ["moons"]}, None),  # the query itself: nothing else to show
])  # fmt: skip
def test_a_refused_url_still_shows_what_of_it_is_good(query, shown):
    fallbacks = query_fallbacks(query)
    assert (None if not fallbacks else (fallbacks[0]["dataset"]["sample"], fallbacks[0]["method"])) == shown


def test_no_address_names_a_file_or_edited_points(studio, cache, blobs_with_nan_rows):
    studio.add_point(0.5, -0.25)  # a sample's edited points: its URL would show the sample as loaded
    assert page_query(studio) == ""
    studio.undo_edit()
    assert page_query(studio) == "?sample=blobs&method=dpc&dc_percent=2"
    studio.load(cache.file(blobs_with_nan_rows))
    assert page_query(studio) == ""


@pytest.mark.parametrize(
    ("change", "message"),
    [
        ({"method": "dpc", "dpc": {"kernel": "cutoff", "dc": 0.5, "dc_percent": None, "centers": [3, 3]}}, "the same point twice"),
        ({"method": "dbscan", "dbscan": {"eps": 0.3, "min_samples": 100000}}, "min_samples must be a whole number from 1"),
        # its square overflows even float64: Python's own OverflowError named no field
        ({"method": "dpc", "dpc": {"kernel": "cutoff", "dc": 1e308, "dc_percent": None, "centers": None}},
         r"dc = 1e308 is outside what float32 distances resolve"),
        ({"method": "hdbscan", "hdbscan": {"min_cluster_size": 15, "min_samples": 15, "selection": "eom", "clusters": [999]}},
         "cluster ids must be between"),
        # (a URL's min_samples follows its min_cluster_size: the message named min_samples)
        ({"method": "hdbscan", "hdbscan": {"min_cluster_size": 5000, "min_samples": 5000, "selection": "eom", "clusters": None}},
         r"min_cluster_size must be a whole number from 2 to the number of points \(2,?300\), got 5000"),
    ],
)
def test_a_session_only_the_data_refuses_leaves_the_page_as_it_was(cache, change, message):
    """Refused part way (after dc, the method or a tree had changed), a session file left a mix of the two states;
    the studio is put back as it was: data set, method, parameters, centers and labels."""
    studio = Studio()
    studio.load(cache.sample("moons"))
    studio.dpc.set_dc(0.21)
    studio.dpc.pick_count(3)
    studio.set_method("dbscan")
    studio.dbscan.set_eps(0.2)
    studio.set_method("dpc")
    before, labels = session_document(studio), studio.labels().copy()
    document = {"dpstudio_session": 1, "dataset": {"name": "blobs", "sample": "blobs"}, **change}
    with pytest.raises(ValueError, match=message):
        apply_session(studio, read_session(json.dumps(document)), cache)
    assert studio.dataset is cache.sample("moons") and studio.method == "dpc"
    assert session_document(studio) == before and studio.dpc.can_undo  # its Undo too
    np.testing.assert_array_equal(studio.labels(), labels)


def test_after_edits_the_commands_centers_are_the_same_points_of_the_file(studio, cache):
    """Points deleted on the page: the command's --centers were indices into the edited points, which on the file
    are other points (the table named the right rows, the command others); an added center has no file point."""
    studio.dpc.pick_count(3)
    picked_rows = set(studio.dataset.points.rows[studio.dpc.centers].tolist())
    x, y = studio.plot_coordinates("view")
    keep = studio.dpc.centers
    low = int(np.setdiff1d(np.arange(50), keep)[0])  # a point before the centers, so that their indices shift
    near = [(float(x[low]) + dx, float(y[low]) + dy) for dx, dy in ((-0.05, -0.05), (0.05, -0.05), (0.05, 0.05), (-0.05, 0.05))]
    studio.delete_in_view(near)
    studio.add_point(-7.0, 3.0)  # far from every blob: a center of its own, with no row in the file
    added = studio.dataset.n_points - 1
    studio.dpc.choose([*np.flatnonzero(np.isin(studio.dataset.points.rows, list(picked_rows))), added])
    blobs = cache.sample("blobs")
    assert studio.dataset.base is blobs and studio.dataset.points.rows[added] > blobs.points.rows.max()
    centers = command_line(studio).split("--centers ")[1].split()[0].rstrip(",").split(",")
    assert set(map(int, centers)) == picked_rows  # the file's rows, the added point left out


def test_an_edited_uploads_command_reads_the_uploaded_file(cache):
    """The command of an upload with points added named the file "mine.csv (edited)", which does not exist."""
    studio = Studio()
    studio.load(cache.upload("mine.csv", sample_data.path("blobs").read_bytes(), max_bytes=2**20))
    studio.add_point(0.0, 0.0)
    assert studio.dataset.name == "mine.csv (edited)" and command_line(studio).startswith("dpstudio cluster mine.csv --")
    studio.close()


def test_with_rows_left_out_the_commands_centers_are_the_files_rows(cache, blobs_with_nan_rows, tmp_path):
    """A file whose NaN rows the page left out, before the centers: the command's --centers name the file's rows
    (as the CLI's summary and --out do, and the clusters table), and the command gives the page's clusters."""
    studio = Studio()
    studio.load(cache.file(blobs_with_nan_rows))
    studio.dpc.pick_count(3)
    line = command_line(studio)
    centers = [int(c) for c in line.split("--centers ")[1].split()[0].split(",")]
    assert centers == studio.dataset.points.rows[studio.dpc.centers].tolist() and max(centers) > 10
    labels = run_command(line, tmp_path)  # one row per input row, the left-out ones without a label
    np.testing.assert_array_equal(labels[studio.dataset.points.rows], studio.labels())
    studio.close()
