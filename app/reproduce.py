"""What reproduces a page's result elsewhere: the ``dpstudio cluster`` command line, and the session as a small
JSON document (parameters and centers) that a page loads back; a URL's query uses the same document.

Centers in a session document and a URL are point indices of the data set as the page reads it (rows with NaN or
inf left out: a sample has none, so a URL's are its rows); the command line names the file's rows instead, as
``dpstudio cluster --centers i,j,k`` reads them (``_file_centers``). Points added or deleted on the page (clicks,
lassos, a stream) are kept in a saved session as the edited points' file rows, in order, and the added points'
values; the command line cannot carry them, and says so.
"""

from __future__ import annotations

import json
import math
import shlex
from pathlib import Path
from urllib.parse import parse_qsl, urlencode

import numpy as np

from dpstudio import sample_data
from dpstudio.engine import METHODS, DensityPeaks, IndexedPoints
from dpstudio.engine.data import new_points
from dpstudio.engine.dbscan import SELECTION_METHODS
from dpstudio.engine.indexed import KERNELS

from .datasets import Dataset, DatasetCache
from .studio import Studio
from .wording import name_list

SCHEMA = 1  # the version of the session document; a page refuses any other
DPC_VIEWS = ("halo", "log_axes")  # DPC's view toggles: the halo greyed out, the decision graph on log axes


def data_source(studio: Studio) -> tuple[str | None, str]:
    """(sample name or None, the file a command line reads: a sample's or a served file's path, else its name)."""
    # the source, whatever features were chosen or points edited (an edited upload is named "... (edited)")
    key, name = studio.dataset.key.split("|")[0], studio.dataset.original.name
    if key.startswith("sample:"):
        sample = key.split(":", 1)[1]
        return sample, str(sample_data.path(sample))
    if key.startswith("file:"):
        return None, key.split(":", 1)[1].rsplit(":", 2)[0]
    return None, name  # an upload: the user has the file under its name


def command_line(studio: Studio, out: str = "labels.csv") -> str:
    """The ``dpstudio cluster`` command that gives the current clustering of the active method."""
    _, path = data_source(studio)
    dataset = studio.dataset
    args = ["dpstudio", "cluster", path]
    if dataset.points.columns != dataset.available:
        args.append(f"--columns={name_list(dataset.points.columns)}")  # (one word: a first name "-x" is no option)
    if dataset.standardized:
        args.append("--standardize")
    if dataset.points.dropped_rows.size:
        args.append("--drop-nonfinite")
    note = ""
    if studio.method == "dpc":
        dpc = studio.dpc
        args += ["--kernel", dpc.kernel] if dpc.kernel != "cutoff" else []
        args += ["--dc-percent", _exact(dpc.dc_percent)] if dpc.dc_percent is not None else ["--dc", _exact(dpc.dc)]
        if dpc.centers_picked:  # as chosen: the engine adds the densest point; none chosen (Clear) is written ","
            centers = _file_centers(dataset, dpc.model.chosen_centers_)
            args += ["--centers", ",".join(str(int(c)) for c in centers) + ("," if len(centers) <= 1 else "")]
    elif studio.method == "dbscan":
        dbscan = studio.dbscan
        args += ["--method", "dbscan", "--eps", _exact(dbscan.eps), "--min-samples", str(dbscan.min_samples)]
    else:
        hdbscan = studio.hdbscan
        args += ["--method", "hdbscan", "--min-cluster-size", str(hdbscan.min_cluster_size),
                 "--min-samples", str(hdbscan.min_samples), "--selection", hdbscan.selection]  # fmt: skip
        if hdbscan.hand_picked:
            note = "  # gives the rule's clusters: clusters picked on the tree are kept only in a saved session"
    if dataset.base is not None:
        note = "  # points were added or deleted on the page: this clusters the file as it is (a saved session keeps the edits)"
    return shlex.join([*args, "--out", out]) + note


def page_query(studio: Studio) -> str:
    """The URL query that opens the page as it is shown: the session document's data set and shown method
    (``session_document``), which ``query_document`` reads back; "" for a file or edited points, which no URL can
    name. Centers followed from another dc are written as they are at this one (a saved session also keeps the dc
    they were picked at)."""
    if data_source(studio)[0] is None or studio.dataset.base is not None:
        return ""  # (before the document: an edited set's runs of rows are made at every stream batch otherwise)
    document = session_document(studio)
    dataset, method = document["dataset"], document["method"]
    query = {"sample": dataset["sample"]}
    if studio.dataset.points.columns != studio.dataset.available:
        query["features"] = ",".join(dataset["features"])
    if dataset["standardized"]:
        query["standardize"] = "1"
    query["method"] = method
    shown = document[method]
    if method == "dpc":
        if shown["kernel"] != "cutoff":
            query["kernel"] = shown["kernel"]
        rule = "dc_percent" if shown["dc_percent"] is not None else "dc"
        query[rule] = _exact(shown[rule])
        query.update({view: "1" for view in DPC_VIEWS if shown[view]})
    elif method == "dbscan":
        query.update(eps=_exact(shown["eps"]), min_samples=str(shown["min_samples"]))
    else:
        query.update({name: str(shown[name]) for name in ("min_cluster_size", "min_samples", "selection")})
    picked = shown.get("centers" if method == "dpc" else "clusters")
    if picked is not None:  # none picked (Clear, every cluster deselected) is written ",", as on the command line
        query["centers" if method == "dpc" else "clusters"] = ",".join(str(i) for i in picked) or ","
    return "?" + urlencode(query, safe=",")


def _file_centers(dataset: Dataset, centers: np.ndarray) -> np.ndarray:
    """The centers as the file's rows (what ``--centers`` names); points added on the page, whose rows count on
    past the file's last, have none."""
    centers = np.asarray(centers, np.int64)
    return dataset.points.rows[centers][~dataset.added[centers]]


def _exact(value: float) -> str:
    """The shortest text that reads back as the same float64 (2.0 as "2")."""
    text = repr(float(value))
    return text.removesuffix(".0")


def session_document(studio: Studio) -> dict:
    """The session's data set, method and the parameters (and DPC centers) of every method shown so far."""
    sample, _ = data_source(studio)
    dataset = studio.dataset
    document = {
        "dpstudio_session": SCHEMA,
        "dataset": {"name": dataset.original.name, "sample": sample, "n_points": dataset.n_points,
                    "features": list(dataset.points.columns), "standardized": dataset.standardized},
        "method": studio.method,
    }
    if dataset.base is not None:
        document["dataset"]["edits"] = edits_document(dataset)
    if studio.dpc.loaded:
        dpc = studio.dpc
        document["dpc"] = {"kernel": dpc.kernel, "dc": float(dpc.dc), "dc_percent": dpc.dc_percent,
                           # as chosen: the densest point, a center at every dc, is not made a pick that a dc change keeps
                           "centers": [int(c) for c in dpc.model.chosen_centers_] if dpc.centers_picked else None,
                           "halo": dpc.show_halo, "log_axes": dpc.log_axes}  # fmt: skip
        picks = dpc.picks
        if picks is not None and (picks.kernel, picks.dc) != (dpc.kernel, dpc.dc):  # followed here from where they were picked
            document["dpc"]["picked_at"] = {"kernel": picks.kernel, "dc": float(picks.dc), "centers": [int(c) for c in picks.centers]}
    if studio.dbscan.loaded:
        document["dbscan"] = {"eps": float(studio.dbscan.eps), "min_samples": studio.dbscan.min_samples}
    if studio.hdbscan.loaded:
        hdbscan = studio.hdbscan
        document["hdbscan"] = {"min_cluster_size": hdbscan.min_cluster_size, "min_samples": hdbscan.min_samples,
                               "selection": hdbscan.selection,
                               "clusters": [int(c) for c in hdbscan.model.selected_clusters_] if hdbscan.hand_picked else None}  # fmt: skip
    return document


def edits_document(dataset: Dataset) -> dict:
    """An edited data set's points as its file's: their rows in order, as runs [first, stop), and the values of the
    added points (rows past the file's last), in order."""
    rows = dataset.points.rows
    breaks = np.flatnonzero(np.diff(rows) != 1) + 1
    runs = [[int(run[0]), int(run[-1]) + 1] for run in np.split(rows, breaks) if run.size]
    return {"rows": runs, "added": dataset.points.values[dataset.added].astype(np.float64).tolist()}  # float32: exact


def edited_points(base: Dataset, edits: dict) -> tuple[np.ndarray, np.ndarray]:
    """(values, order) of the edited points an edits document describes (``order`` as in ``Dataset.edited``)."""
    file_rows, first_new = base.points.rows, base.n_points
    last, n_added = base.first_added_row - 1, len(edits["added"])
    stop = max(stop for _, stop in edits["rows"])
    if stop > last + 1 + n_added:  # checked before any array is made: a saved file is not trusted with memory
        raise ValueError(f"the edits' rows go up to row {stop - 1}, past the file's last row ({last}) and the "
                         f"{n_added} added points")  # fmt: skip
    if sum(stop - first for first, stop in edits["rows"]) > first_new + n_added:
        raise ValueError("the edits name a row twice")
    columns = base.points.columns
    if any(len(point) != len(columns) for point in edits["added"]):
        raise ValueError(f"the added points must each have {len(columns)} values ({', '.join(columns)})")
    added = new_points(np.asarray(edits["added"], np.float64).reshape(-1, len(columns)), len(columns))
    rows = np.concatenate([np.arange(first, stop, dtype=np.int64) for first, stop in edits["rows"]])
    new = rows > last
    if np.unique(rows).size != rows.size:
        raise ValueError("the edits name a row twice")
    if int(new.sum()) != len(added):
        raise ValueError(f"the edits' rows name {int(new.sum())} added points but {len(added)} are given")
    if rows.size < 2:
        raise ValueError(f"the edits keep {rows.size} point; clustering needs at least 2")
    index = np.searchsorted(file_rows, rows[~new])
    missing = (index >= first_new) | (file_rows[np.minimum(index, first_new - 1)] != rows[~new])
    if missing.any():
        raise ValueError(f"row {rows[~new][missing][0]} of the edits is not a point of {base.name}")
    order = np.empty(rows.size, np.int64)
    order[~new], order[new] = index, first_new + rows[new] - last - 1
    values = np.empty((rows.size, len(columns)), np.float32)
    values[~new] = base.points.values[index]
    values[new] = added
    return values, order


def session_json(studio: Studio) -> str:
    return json.dumps(session_document(studio), indent=2)


def read_session(text: str | bytes) -> dict:
    """A session document from a saved file, checked: every problem is one ValueError naming the field."""
    if not text.strip():
        raise ValueError("the file is empty: not a dpstudio session file")
    try:
        document = json.loads(text)
    except (ValueError, UnicodeDecodeError) as exc:
        raise ValueError(f"not a dpstudio session file: {exc}") from exc
    if not isinstance(document, dict) or "dpstudio_session" not in document:
        raise ValueError("not a dpstudio session file (no 'dpstudio_session' version)")
    if document["dpstudio_session"] != SCHEMA:
        raise ValueError(f"session version {document['dpstudio_session']!r} is not one this page reads ({SCHEMA})")
    return _checked(document)


def query_document(query: str | dict) -> dict:
    """A session document from a URL's query, e.g. ``?sample=moons&method=dpc&dc=0.2&centers=3,17`` (or its
    parameters, each a value or a list of those given); parameters that are not given keep their defaults. A
    parameter given twice, dc with dc_percent, or an empty list of centers is refused: the page would show one
    reading of them without a word."""
    if isinstance(query, str):
        pairs = parse_qsl(query.lstrip("?"), keep_blank_values=True)
    else:
        pairs = [(k, str(v)) for k, values in query.items() for v in (values if isinstance(values, list) else [values])]
    params = dict(pairs)
    if repeated := sorted(k for k in params if sum(name == k for name, _ in pairs) > 1):
        raise ValueError(f"URL parameter {repeated[0]!r} is given more than once")
    if {"dc", "dc_percent"} <= set(params):
        raise ValueError("give dc or dc_percent, not both")
    for name in ("centers", "clusters"):  # (none picked is ",", as on the command line)
        if name in params and not params[name].strip():
            raise ValueError(f"{name} is empty: give {'point indices, e.g. centers=3,17' if name == 'centers' else 'cluster ids'}, or ',' for none")
    unknown = set(params) - {"sample", "features", "standardize", "method", "kernel", "dc", "dc_percent", "centers",
                             *DPC_VIEWS, "eps", "min_samples", "min_cluster_size", "selection", "clusters"}  # fmt: skip
    if unknown:
        raise ValueError(f"unknown URL parameter {sorted(unknown)[0]!r}")
    method = params.get("method", "dpc")
    if method not in METHODS:
        raise ValueError(f"method must be one of {', '.join(METHODS)}, got {method!r}")
    # a parameter of a method the URL does not show was ignored, or shown for a moment (an eps: DBSCAN, then DPC)
    owners = {"eps": ("DBSCAN's", ["dbscan"]), "min_samples": ("DBSCAN and HDBSCAN's", ["dbscan", "hdbscan"]),
              **{name: ("HDBSCAN's", ["hdbscan"]) for name in ("min_cluster_size", "selection", "clusters")},
              **{name: ("DPC's", ["dpc"]) for name in ("kernel", "dc", "dc_percent", "centers", *DPC_VIEWS)}}  # fmt: skip
    for name, (whose, methods) in owners.items():
        if name in params and method not in methods:
            wanted = " or ".join(f"method={m}" for m in methods)
            if "method" in params:  # adding the one wanted would give method twice
                raise ValueError(f"{name} is {whose}: the URL's method={method} does not use it (use {wanted})")
            raise ValueError(f"{name} is {whose}: add {wanted}")
    dataset = {"sample": params.get("sample"), "standardized": _flag(params, "standardize")}
    if "features" in params or dataset["standardized"]:
        dataset["features"] = [c for c in params.get("features", "").split(",") if c] or None
    document = {"dpstudio_session": SCHEMA, "dataset": dataset, "method": method}
    number, whole = _number_from_text, _whole_from_text
    if method == "dpc" and {"kernel", "dc", "dc_percent", "centers", *DPC_VIEWS} & set(params):
        centers = params.get("centers")
        document["dpc"] = {
            "kernel": params.get("kernel", "cutoff"),
            "dc": number("dc", params["dc"]) if "dc" in params else None,
            "dc_percent": number("dc_percent", params["dc_percent"]) if "dc_percent" in params else None,
            "centers": None if centers is None else _whole_list("centers", centers),
            **{view: _flag(params, view) for view in DPC_VIEWS},
        }  # fmt: skip
    if method == "dbscan":
        document["dbscan"] = {"eps": number("eps", params["eps"]) if "eps" in params else None,
                              "min_samples": whole("min_samples", params.get("min_samples", "5"))}  # fmt: skip
    if method == "hdbscan":
        size = whole("min_cluster_size", params.get("min_cluster_size", "15"))
        clusters = params.get("clusters")
        document["hdbscan"] = {"min_cluster_size": size, "selection": params.get("selection", "eom"),
                               "min_samples": whole("min_samples", params.get("min_samples", str(size))),
                               "clusters": None if clusters is None else _whole_list("clusters", clusters)}  # fmt: skip
    return _checked(document)


def query_fallbacks(query: dict) -> list[dict]:
    """What a URL's query may still show when one of its values is refused, to try in turn (the data set may refuse
    one too: a column the sample lacks): its data set and method with their defaults (a refused eps opened the page
    on DPC), its sample and method, its sample (a refused feature or method opened the page on the default sample).
    None of them is the query itself."""
    fallbacks = []
    for names in (("sample", "features", "standardize", "method"), ("sample", "method"), ("sample",)):
        layout = {name: query[name] for name in names if name in query}
        if layout and layout != query:
            try:
                document = query_document(layout)
            except ValueError:
                continue
            if document not in fallbacks:
                fallbacks.append(document)
    return fallbacks


def apply_session(studio: Studio, document: dict, cache: DatasetCache, progress=None) -> None:
    """Show a (checked) session document: its sample loaded from the cache if it names one, else it must be the
    data set shown; then its features, its edited points if any (DPC fitted on them afresh, at the saved dc), each
    method's parameters, and the method last. A document that only the data can refuse (a center given twice, a
    min_samples past the points, a cluster not in the tree) is refused part way: the studio is then put back as it
    was, from its own document, and the error raised."""
    before, source = session_document(studio), studio.dataset.original
    unloaded = [state for state in studio.states.values() if not state.loaded]
    history, edits = studio.dpc.replace_history([]), studio.replace_edits([])
    try:
        _apply(studio, document, cache, progress)
    except Exception:
        if studio.dataset.original is not source:
            studio.load(source)
        _apply(studio, before, cache)  # all of it cached: the index, each min_samples' tree, the recent dcs
        for state in unloaded:
            state.close()  # a method the document had shown, not shown before
        studio.dpc.replace_history(history)
        studio.replace_edits(edits)  # (each a copy of what DPC showed: still what Undo gives back)
        raise
    studio.dpc.replace_history([])  # Undo starts from the session loaded, as from a data set loaded


def _apply(studio: Studio, document: dict, cache: DatasetCache, progress=None) -> None:
    dataset = document["dataset"]
    shown = studio.dataset.original  # a document's points are its file's, edited or not
    if not dataset.get("sample") and dataset.get("name") not in (None, shown.name):
        raise ValueError(f"this session is of {dataset.get('name')}; load that file first (shown: {shown.name})")
    if dataset.get("sample") and data_source(studio)[0] != dataset["sample"]:
        shown = cache.sample(dataset["sample"], progress)
    features, standardize = dataset.get("features") or list(shown.available), bool(dataset.get("standardized"))
    if (tuple(features), standardize) != (shown.points.columns, shown.standardized):
        shown = cache.features(shown, features, standardize, progress)
    edits = dataset.get("edits")
    edited = None if edits is None else edited_points(shown, edits)
    n = shown.n_points if edited is None else len(edited[0])
    if dataset.get("n_points") not in (None, n):
        raise ValueError(f"this session is of {dataset.get('n_points')} points; {shown.name} has {n}")
    dpc = document.get("dpc")
    picked_at = None if dpc is None else dpc.get("picked_at")
    for centers in ([] if dpc is None else [dpc.get("centers"), picked_at and picked_at["centers"]]):
        if centers is not None and any(not 0 <= c < n for c in centers):
            raise ValueError(f"a center index is out of range for {n} points")
    if shown is not studio.dataset:
        studio.load(shown, progress=progress)
    if dpc is not None:
        studio.set_method("dpc", progress=progress)
        if edited is not None:
            values, order = edited
            fresh = DensityPeaks(dc=dpc["dc"], kernel=dpc["kernel"])
            studio.show_points(fresh.fit(IndexedPoints(values, backend=shown.indexed.backend.name), progress=progress), order)
            if dpc.get("dc_percent") is not None:  # the rule shown (on these points it gives the saved dc again)
                studio.dpc.set_dc(dc_percent=dpc["dc_percent"], kernel=dpc["kernel"], progress=progress)
        elif dpc.get("dc_percent") is not None:
            studio.dpc.set_dc(dc_percent=dpc["dc_percent"], kernel=dpc["kernel"], progress=progress)
        elif dpc.get("dc") is not None:
            studio.dpc.set_dc(dpc["dc"], kernel=dpc["kernel"], progress=progress)
        elif dpc["kernel"] != studio.dpc.kernel:  # a kernel alone (a URL's): the dc rule shown, with that kernel
            studio.dpc.set_dc(kernel=dpc["kernel"], progress=progress)
        if picked_at is not None:  # picked at another dc: picked there again, then followed to this one as before
            shown_dc = {"dc_percent": dpc["dc_percent"]} if dpc.get("dc_percent") is not None else {"dc": studio.dpc.dc}
            studio.dpc.set_dc(picked_at["dc"], kernel=picked_at["kernel"], progress=progress)
            studio.dpc.choose(picked_at["centers"])
            studio.dpc.set_dc(**shown_dc, kernel=dpc["kernel"], progress=progress)
        elif dpc.get("centers") is not None:
            studio.dpc.choose(dpc["centers"])
        if dpc.get("halo") is not None:  # (a file saved before the views were saved has neither: they stay as shown)
            studio.dpc.set_halo(dpc["halo"])
        if dpc.get("log_axes") is not None:
            studio.dpc.set_log_axes(dpc["log_axes"])
    if (dbscan := document.get("dbscan")) is not None:
        studio.set_method("dbscan", progress=progress)
        studio.dbscan.set_min_samples(dbscan["min_samples"], progress=progress, at_knee=dbscan.get("eps") is None)
        if dbscan.get("eps") is not None:
            studio.dbscan.set_eps(dbscan["eps"])
    if (hdbscan := document.get("hdbscan")) is not None:
        studio.set_method("hdbscan", progress=progress)
        studio.hdbscan.set_parameters(hdbscan["min_cluster_size"], hdbscan["min_samples"], hdbscan["selection"], progress=progress)
        if hdbscan.get("clusters") is not None:  # [] too: every cluster deselected on the tree
            studio.hdbscan.set_clusters(hdbscan["clusters"])
    studio.set_method(document["method"], progress=progress)


# every field a session document may have, by where it is: one the page does not read is refused by name (a typo
# such as "centres" loaded as if it were not there)
FIELDS = {
    "the session": {"dpstudio_session", "dataset", "method", *METHODS},
    "dataset": {"name", "sample", "n_points", "features", "standardized", "edits"},
    "edits": {"rows", "added"},
    "dpc": {"kernel", "dc", "dc_percent", "centers", "picked_at", *DPC_VIEWS},
    "picked_at": {"kernel", "dc", "centers"},
    "dbscan": {"eps", "min_samples"},
    "hdbscan": {"min_cluster_size", "min_samples", "selection", "clusters"},
}


def _known_fields(document: dict) -> None:
    """Refuse a field of the document that the page does not read, naming it and where it is."""
    dataset, dpc = document.get("dataset"), document.get("dpc")
    places = {"the session": document, "dataset": dataset, "edits": dataset.get("edits") if isinstance(dataset, dict) else None,
              "dpc": dpc, "picked_at": dpc.get("picked_at") if isinstance(dpc, dict) else None,
              "dbscan": document.get("dbscan"), "hdbscan": document.get("hdbscan")}  # fmt: skip
    for where, fields in places.items():
        if isinstance(fields, dict) and (unknown := sorted(set(fields) - FIELDS[where])):
            raise ValueError(f"unknown field {unknown[0]!r} in {where} (its fields: {', '.join(sorted(FIELDS[where]))})")


def _checked(document: dict) -> dict:
    """The document's fields checked for type and range (not against a data set: see apply_session)."""
    _known_fields(document)
    dataset = document.get("dataset")
    if not isinstance(dataset, dict):
        raise ValueError("the session names no data set")
    if dataset.get("sample") is not None and dataset["sample"] not in sample_data.SAMPLES:
        raise ValueError(f"no sample named {dataset['sample']!r} (samples: {', '.join(sample_data.SAMPLES)})")
    features = dataset.get("features")
    if features is not None and (not isinstance(features, list) or not features or not all(isinstance(f, str) for f in features)):
        raise ValueError("features must be a list of column names")
    if features is not None and len(set(features)) < len(features):
        raise ValueError(f"features name a column twice: {', '.join(features)}")
    if dataset.get("standardized") not in (None, True, False):
        raise ValueError(f"standardized must be true or false, got {dataset['standardized']!r}")
    if dataset.get("n_points") is not None:
        _at_least("n_points", dataset["n_points"], 2)
    if (edits := dataset.get("edits")) is not None:
        _check_edits(edits, document.get("dpc"))
    if document.get("method") not in METHODS:
        raise ValueError(f"method must be one of {', '.join(METHODS)}, got {document.get('method')!r}")
    for method in METHODS:
        if document.get(method) is not None and not isinstance(document[method], dict):
            raise ValueError(f"{method} must be an object of its parameters")
    if (dpc := document.get("dpc")) is not None:
        if dpc.get("kernel") not in KERNELS:
            raise ValueError(f"kernel must be one of {', '.join(KERNELS)}, got {dpc.get('kernel')!r}")
        for name in ("dc", "dc_percent"):
            if dpc.get(name) is not None:
                _positive(name, dpc[name])
        if dpc.get("centers") is not None and not _whole_numbers(dpc["centers"]):
            raise ValueError("centers must be a list of point indices (null for the automatic clusters, [] for Clear's one cluster)")
        if (picked_at := dpc.get("picked_at")) is not None:
            if not isinstance(picked_at, dict) or picked_at.get("kernel") not in KERNELS or not _whole_numbers(picked_at.get("centers")):
                raise ValueError("picked_at must be the picks' kernel, dc and centers (point indices)")
            _positive("picked_at's dc", picked_at.get("dc"))
        for view in DPC_VIEWS:
            if dpc.get(view) is not None and not isinstance(dpc[view], bool):
                raise ValueError(f"{view} must be true or false, got {dpc[view]!r}")
    if (dbscan := document.get("dbscan")) is not None:
        if dbscan.get("eps") is not None:
            _positive("eps", dbscan["eps"])
        _at_least("min_samples", dbscan.get("min_samples"), 1)
    if (hdbscan := document.get("hdbscan")) is not None:
        _at_least("min_cluster_size", hdbscan.get("min_cluster_size"), 2)
        _at_least("min_samples", hdbscan.get("min_samples"), 1)
        if hdbscan.get("selection") not in SELECTION_METHODS:
            raise ValueError(f"selection must be one of {', '.join(SELECTION_METHODS)}, got {hdbscan.get('selection')!r}")
        if hdbscan.get("clusters") is not None and not _whole_numbers(hdbscan["clusters"]):
            raise ValueError("hdbscan clusters must be a list of condensed-tree cluster ids")
    return document


def _check_edits(edits, dpc) -> None:
    if not isinstance(edits, dict) or not isinstance(edits.get("rows"), list) or not isinstance(edits.get("added"), list):
        raise ValueError("edits must hold rows (runs [first, stop) of rows) and added (the added points' values)")
    if not edits["rows"] or not all(isinstance(run, list) and len(run) == 2 and _whole_numbers(run) and 0 <= run[0] < run[1]
                                    for run in edits["rows"]):  # fmt: skip
        raise ValueError("the edits' rows must be a list of runs [first, stop) with 0 <= first < stop")
    if not all(isinstance(point, list) and point and all(isinstance(v, (int, float)) and not isinstance(v, bool) and math.isfinite(v)
                                                         for v in point) for point in edits["added"]):  # fmt: skip
        raise ValueError("the added points must be lists of finite numbers")
    if dpc is None or dpc.get("dc") is None:
        raise ValueError("a session with edited points must give DPC's dc (the edits are DPC's)")


def _number_from_text(name: str, text: str) -> float:
    try:
        return float(text)
    except ValueError:
        raise ValueError(f"{name} must be a number, got {text!r}") from None


def _whole_from_text(name: str, text: str) -> int:
    value = _number_from_text(name, text)
    if not value.is_integer():  # not cut to a whole number without a word (centers=1.5 was point 1)
        raise ValueError(f"{name} must be a whole number, got {text!r}")
    return int(value)


def _flag(params: dict, name: str) -> bool:
    """A URL's on/off parameter (absent: off)."""
    value = params.get(name, "0").lower()
    if value not in ("0", "1", "true", "false"):
        raise ValueError(f"{name} must be 1 or 0, got {params[name]!r}")
    return value in ("1", "true")


def _whole_list(name: str, text: str) -> list[int]:
    return [_whole_from_text(name, c) for c in text.split(",") if c.strip()]


def _positive(name: str, value) -> None:
    if isinstance(value, bool) or not isinstance(value, (int, float)) or not math.isfinite(value) or value <= 0:
        raise ValueError(f"{name} must be a finite positive number, got {value!r}")


def _at_least(name: str, value, low: int) -> None:
    if isinstance(value, bool) or not isinstance(value, int) or value < low:
        raise ValueError(f"{name} must be a whole number >= {low}, got {value!r}")


def _whole_numbers(values) -> bool:
    return isinstance(values, list) and all(isinstance(v, int) and not isinstance(v, bool) for v in values)


def saved_name(studio: Studio) -> str:
    return f"{Path(studio.dataset.name).stem}-session.json"
