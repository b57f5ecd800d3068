"""The ``dpstudio`` command: ``serve`` the web app, ``cluster`` a file, ``stream`` it in batches, ``bench`` the engine."""

from __future__ import annotations

import argparse
import contextlib
import json
import os
import sys
import time
from importlib.metadata import version

import numpy as np

from dpstudio.engine import (DBSCAN, HDBSCAN, METHODS, BackendUnavailable, DataError, DensityPeaks, MissingExtra, to_points,
                             write_labels)
from dpstudio.engine.data import check_output_path, with_dropped_rows
from dpstudio.engine.backends import BACKENDS
from dpstudio.engine.dbscan import SELECTION_METHODS
from dpstudio.engine.distributed import PROTOCOLS, local_cluster
from dpstudio.engine.dpc import DC_RULES, SIGNIFICANCE, density_notice, describe_changes
from dpstudio.engine.indexed import KERNELS, NEIGHBOR_MODES

from .wording import counted, read_name_list

EXIT_BAD_INPUT = 2
SCHEDULER_TIMEOUT = 10  # seconds to reach a --scheduler before giving up
# options that only some clusterings read (`stream`'s is DPC's): one given where it is not read is said to be ignored
READ_WHEN = {
    "eps": ("--method dbscan", lambda args: args.method == "dbscan"),
    "neighbors": ("--method dbscan", lambda args: args.method == "dbscan"),
    "min_samples": ("--method dbscan or hdbscan", lambda args: args.method != "dpc"),
    "min_cluster_size": ("--method hdbscan", lambda args: args.method == "hdbscan"),
    "selection": ("--method hdbscan", lambda args: args.method == "hdbscan"),
    **{name: ("--method dpc", lambda args: args.method == "dpc") for name in ("dc", "dc_percent", "dc_rule", "kernel", "centers")},
    **{name: ("--method dpc with --centers auto", lambda args: args.method == "dpc" and args.centers.get("suggest") == "auto")
       for name in ("significance", "noise")},
}  # fmt: skip


def main(argv: list[str] | None = None) -> int:
    parser = _parser()
    args = parser.parse_args(argv)
    try:
        return args.run(args)
    except (DataError, BackendUnavailable, MissingExtra, ValueError) as exc:
        print(f"dpstudio: error: {exc}", file=sys.stderr)
        return EXIT_BAD_INPUT
    except KeyboardInterrupt:
        return 130
    except BrokenPipeError:  # the reader went away (``| head``): stop quietly, as Unix tools do
        sys.stderr.close()
        return 0


def _parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(prog="dpstudio", description="Density Peaks Clustering, interactive and exact.")
    parser.add_argument("--version", action="version", version=f"%(prog)s {version('dpstudio')}")
    commands = parser.add_subparsers(required=True, metavar="COMMAND")

    serve = commands.add_parser("serve", help="start the web app (opens on a sample data set, or on PATH)")
    serve.add_argument("path", metavar="PATH", nargs="?", help="a data file to open (default: the 'blobs' sample)")
    serve.add_argument("--port", type=int, default=5006, help="port to listen on (default 5006; 0 picks a free one)")
    serve.add_argument("--address", default="localhost", help="address to listen on (default localhost; 0.0.0.0: every interface)")
    serve.add_argument("--allow-websocket-origin", metavar="HOST[:PORT]", action="append", default=[],
                       help="another name browsers reach the server by (a proxy, a DNS alias); repeatable")  # fmt: skip
    serve.add_argument("--no-show", dest="show", action="store_false", help="do not open a browser")
    serve.add_argument("--max-upload-mb", type=float, default=200, help="largest file a browser may upload (default 200)")
    serve.add_argument("--cache-size", type=int, default=4, help="data sets (with their index) kept for all sessions (default 4)")
    serve.add_argument("--dc-percent", type=float, default=2.0, help="percent rule a session starts with (default 2)")
    serve.add_argument("--backend", choices=BACKENDS, default="auto", help="default auto: the GPU where CuPy finds one, else the CPU")
    serve.add_argument("--num-procs", type=int, default=1, help="server processes (default 1)")
    serve.set_defaults(run=_serve)

    cluster = commands.add_parser("cluster", help="cluster a data file and print a summary")
    _input_options(cluster)
    cluster.add_argument("--method", choices=METHODS, default="dpc", help="density peaks (default), DBSCAN or HDBSCAN")
    cluster.add_argument("--eps", type=_finite, help="DBSCAN radius (default: the knee of the sorted core distances)")
    cluster.add_argument("--min-samples", type=int, help="DBSCAN/HDBSCAN core size, the point counted (default 5; HDBSCAN: min cluster size)")
    cluster.add_argument("--neighbors", choices=NEIGHBOR_MODES, default="exact",
                         help="DBSCAN: exact, or approximate (KG-DBSCAN's listed edges, for high dimensions)")  # fmt: skip
    cluster.add_argument("--min-cluster-size", type=int, default=5, help="HDBSCAN smallest cluster (default 5)")
    cluster.add_argument("--selection", choices=SELECTION_METHODS, default="eom", help="HDBSCAN cluster selection (default eom)")
    _density_options(cluster)
    _output_options(cluster, "print one JSON object instead of the summary")
    dask = cluster.add_mutually_exclusive_group()
    dask.add_argument("--scheduler", metavar="ADDRESS",
                      help=f"dpc: compute rho and delta on the workers of this Dask scheduler (reached within {SCHEDULER_TIMEOUT} s)")  # fmt: skip
    dask.add_argument("--local-cluster", metavar="N", type=int,
                      help="dpc: ... on a Dask cluster started here: N CPU worker processes (also with --backend auto), or N GPUs "
                           "with --backend gpu (dask-cuda)")  # fmt: skip
    _protocol_option(cluster, "--local-cluster")
    cluster.set_defaults(run=_cluster, command=cluster)

    stream = commands.add_parser("stream", help="replay a data file as a stream: a base fit, then batches inserted one by one")
    _input_options(stream)
    stream.add_argument("--batch", type=int, default=1000, help="points per batch (default 1000)")
    stream.add_argument("--base", type=_base, default="10%", help="the first fit: N rows, or P%% of the rows (default 10%%)")
    # the base fit's centers are kept and updated batch by batch; auto would recompute the topography every batch
    _density_options(stream, centers_default="gamma")
    _output_options(stream, "print one JSON object per batch (the base fit first) instead of the table")
    stream.set_defaults(run=_stream, command=stream, method="dpc")

    bench = commands.add_parser("bench", help="time the engine against baselines in the same run and print a table")
    bench.add_argument("--method", choices=("dpc", "dbscan"), default="dpc",
                       help="dpc: rho and delta against scipy's cKDTree; dbscan: build and eps change against scikit-learn / all-pairs")  # fmt: skip
    bench.add_argument("--sizes", type=_ints, help="comma-separated N (default dpc 10000,100000,1000000; dbscan 100000,1000000)")
    bench.add_argument("--dims", type=_ints, default=[2, 3, 16], help="comma-separated d (default 2,3,16)")
    bench.add_argument("--backend", choices=BACKENDS, default="cpu", help="default cpu")
    bench.add_argument("--baseline-queries", type=int, default=20_000,
                       help="time cKDTree on at most this many queries and scale up (default 20000)")  # fmt: skip
    bench.add_argument("--incremental", action="store_true",
                       help="dpc: insert and delete batches of points, next to a fresh fit of the same points (GDPC's protocol)")  # fmt: skip
    bench.add_argument("--batch", type=int, default=1000, help="--incremental: points per batch (default 1000)")
    bench.add_argument("--batches", type=int, help="--incremental: time only the last K batches (default: every batch after a 10%% base)")
    bench.add_argument("--distributed", action="store_true",
                       help="dpc rho + delta on a local Dask cluster of 1 vs W workers (GPUs: dask-cuda; needs dpstudio[distributed])")  # fmt: skip
    bench.add_argument("--workers", type=_ints, default=[1, 2], help="--distributed: worker counts to compare (default 1,2)")
    _protocol_option(bench, "--distributed")
    bench.add_argument("--markdown", action="store_true", help="print the table as Markdown")
    bench.set_defaults(run=_bench)
    return parser


def _protocol_option(parser, used_by: str) -> None:
    parser.add_argument("--protocol", choices=PROTOCOLS,
                        help=f"{used_by}: Dask's comms; ucx (GPU workers) moves arrays GPU to GPU, over NVLink where "
                        "there is one (needs distributed-ucxx-cu13; default tcp)")  # fmt: skip


def _input_options(parser) -> None:
    parser.add_argument("input", metavar="INPUT", help="CSV/TSV/TXT (gzipped too: .csv.gz), Parquet or NPY file")
    parser.add_argument("--columns", type=_names, help='comma-separated columns to use (default: every numeric one); a name with a comma or spaces at its ends in double quotes, a quote inside doubled: \'"weight, kg",height\'')
    parser.add_argument("--standardize", action="store_true", help="z-score each column first")
    parser.add_argument("--drop-nonfinite", action="store_true", help="drop rows with NaN/inf instead of failing")


def _density_options(parser, centers_default: str = "auto") -> None:
    dc = parser.add_mutually_exclusive_group()
    dc.add_argument("--dc", type=_finite, help="cut-off distance")
    dc.add_argument("--dc-percent", type=float, default=2.0, help="choose dc so the average point has P%% of N neighbours (default 2)")
    dc.add_argument("--dc-rule", choices=DC_RULES, default="percent",
                    help="how dc is chosen when --dc is not given: the percent rule (default) or least potential entropy")  # fmt: skip
    parser.add_argument("--kernel", choices=KERNELS, default="cutoff", help="DPC's density: cut-off counts or a Gaussian sum (default cutoff)")
    parser.add_argument(
        "--centers", default=centers_default, type=_centers,
        help="auto (the density topography) | gamma (largest gamma drop) | K (the K largest gamma) | "
             f"RHO_MIN:DELTA_MIN (either may be empty) | i,j,k (the input's rows; one row: 'i,', none: ','); default {centers_default}",
    )  # fmt: skip
    parser.add_argument("--significance", type=float, default=SIGNIFICANCE,
                        help=f"--centers auto: how many errors a density peak must stand above its saddle (default {SIGNIFICANCE:g}; "
                             "raised for more than 100 candidate peaks, as the summary says)")  # fmt: skip
    parser.add_argument("--noise", action="store_true", help="--centers auto: label -1 the points below their cluster's saddle")


def _output_options(parser, json_help: str) -> None:
    parser.add_argument("--out", metavar="FILE", help="write one row per point to FILE.csv or FILE.parquet (columns: see README)")
    parser.add_argument("--backend", choices=BACKENDS, default="auto", help="default auto: the GPU where CuPy finds one, else the CPU")
    parser.add_argument("--json", action="store_true", help=json_help)


def _finite(text: str) -> float:
    """A number as typed; one too large for a float is refused here, not later as 'got inf'."""
    value = float(text)
    if not np.isfinite(value):
        raise argparse.ArgumentTypeError(f"expected a finite number; {text!r} " + ("overflows" if value == value else "is not a number"))
    return value


def _base(text: str) -> tuple[str, float]:
    """--base: ("rows", N) or ("percent", P)."""
    try:
        if text.strip().endswith("%"):
            percent = float(text.strip()[:-1])
            if not 0 < percent < 100:
                raise ValueError(text)
            return "percent", percent
        rows = int(text)
        if rows < 2:
            raise ValueError(text)
        return "rows", rows
    except ValueError as exc:
        raise argparse.ArgumentTypeError(f"expected a number of rows (>= 2) or a percentage in (0, 100) like 10%; got {text!r}") from exc


def _names(text: str) -> list[str]:
    try:
        names = read_name_list(text)
    except ValueError as exc:
        raise argparse.ArgumentTypeError(str(exc)) from None
    if not names:
        raise argparse.ArgumentTypeError("expected comma-separated column names")
    return names


def _ints(text: str) -> list[int]:
    try:
        return [int(float(v)) for v in text.split(",") if v.strip()]
    except ValueError as exc:
        raise argparse.ArgumentTypeError(f"expected comma-separated integers, got {text!r}") from exc


def _centers(text: str) -> dict:
    """Parse --centers into keyword arguments for DensityPeaks.assign, or the suggestion to make."""
    text = text.strip()
    try:
        if text in ("auto", "gamma"):
            return {"suggest": text}
        if ":" in text:
            rho_min, delta_min = (float(v) if v.strip() else None for v in text.split(":", 1))
            bounds = [b for b in (rho_min, delta_min) if b is not None]
            if not bounds or not np.isfinite(bounds).all():  # ':' alone would silently mean every point
                raise ValueError(text)
            return {"rho_min": rho_min, "delta_min": delta_min}
        if "," in text:
            return {"centers": [int(v) for v in text.split(",") if v.strip()]}
        return {"n_centers": int(text)}
    except ValueError as exc:
        raise argparse.ArgumentTypeError(
            f"expected auto, gamma, K, RHO_MIN:DELTA_MIN (finite numbers, at least one given) or i,j,k; got {text!r}"
        ) from exc


def _at_rows(centers: dict, points) -> dict:
    """--centers i,j,k name the input's rows, as the summary's centers and --out's index do: their places among
    the points kept (rows left out for NaN/inf move the later ones down)."""
    if "centers" not in centers:
        return centers
    rows = np.asarray(centers["centers"], np.int64)
    places = np.minimum(np.searchsorted(points.rows, rows), len(points.rows) - 1)
    for row in rows[points.rows[places] != rows]:
        if row in points.dropped_rows:
            raise ValueError(f"--centers: row {row} was left out (NaN or infinite value)")
        raise ValueError(f"--centers: row {row} is not a row of the input (rows 0 to {len(points.rows) + len(points.dropped_rows) - 1})")
    return {**centers, "centers": places.tolist()}


def _cluster(args) -> int:
    if args.out:
        check_output_path(args.out)  # before the work, not after it
    _warn_of_ignored_options(args)
    points = _points(args)
    args.centers = _at_rows(args.centers, points)
    started = time.perf_counter()
    with _dask_client(args) as client, _ProgressBars(enabled=not args.json and sys.stderr.isatty()) as progress:
        args.client = client
        model, facts = _CLUSTER_METHODS[args.method](args, points.values, progress)
        backend = model._backend.device_name() + _workers(client)
    if args.out:
        write_labels(args.out, with_dropped_rows(model.to_frame(points.rows), points.dropped_rows))
    labels = model.labels_
    facts = {
        "input": args.input,
        "method": args.method,
        "n_points": int(points.values.shape[0]),
        "n_dims": int(points.values.shape[1]),
        "columns": list(points.columns),
        "dropped_rows": int(points.dropped_rows.size),
        "backend": backend,
        **facts,
        "n_clusters": int(labels.max()) + 1,
        "cluster_sizes": [int(s) for s in np.bincount(labels[labels >= 0], minlength=int(labels.max()) + 1)],
        "noise_count": int((labels < 0).sum()),
        "timings": {k: round(v, 4) for k, v in model.timings_.items()},
        "total_seconds": round(time.perf_counter() - started, 4),
        "output": args.out,
    }
    if args.method == "dpc":
        facts["centers"] = [int(c) for c in points.rows[model.centers_]]
        if notice := density_notice(model.rho_, model.dc_):
            print(f"warning: {notice}", file=sys.stderr)
        if not (args.noise and READ_WHEN["noise"][1](args)):
            del facts["noise_count"]  # every point has a cluster; the halo is DPC's noise
    print(json.dumps(facts) if args.json else _summary(facts))
    return 0


def _points(args):
    """The input's points as the options ask, with a warning for each of their features' notes (``feature_notes``)."""
    points = to_points(args.input, args.columns, standardize=args.standardize, drop_nonfinite=args.drop_nonfinite)
    for note in points.notes:
        print(f"warning: {note}", file=sys.stderr)
    return points


def _warn_of_ignored_options(args) -> None:
    """A warning for each option given another value than its default where the clustering asked for does not read
    it (``READ_WHEN``)."""
    defaults = vars(args.command.parse_args(["--", args.input]))  # every option at its default, parsed as given ones are
    for name, (reader, read) in READ_WHEN.items():
        if name in defaults and getattr(args, name) != defaults[name] and not read(args):
            print(f"warning: --{name.replace('_', '-')} is for {reader}; ignored", file=sys.stderr)


def _stream(args) -> int:
    if args.batch < 1:
        raise ValueError(f"--batch must be at least 1, got {args.batch}")
    if args.out:
        check_output_path(args.out)
    _warn_of_ignored_options(args)
    points = _points(args)
    n = points.values.shape[0]
    kind, amount = args.base
    n_base = max(2, min(n, int(amount) if kind == "rows" else round(n * amount / 100)))
    args.centers = _at_rows(args.centers, points)
    if (late := [c for c in args.centers.get("centers", []) if c >= n_base]):
        raise ValueError(f"--centers: row {points.rows[late[0]]} is past the first fit's {n_base} points (--base)")
    with _ProgressBars(enabled=not args.json and sys.stderr.isatty()) as progress:
        dp, facts = _density_peaks(args, points.values[:n_base], progress)
    first = {"batch": 0, "size": n_base, "n_points": n_base, "clusters": len(dp.centers_), "dc": dp.dc_,
             "backend": dp._backend.device_name(), "seconds": round(sum(dp.timings_.values()), 4)}  # fmt: skip
    print(json.dumps(first) if args.json else _stream_header(first, points, n))
    for k, start in enumerate(range(n_base, n, args.batch), start=1):
        dp.partial_fit(points.values[start : start + args.batch])
        row = {"batch": k, "size": min(args.batch, n - start), "n_points": dp.n_points_, **dp.changes_,
               "update_ms": round(1000 * dp.timings_["update"], 3)}  # fmt: skip
        print(json.dumps(row) if args.json else _stream_line(row), flush=True)
    if args.out:
        write_labels(args.out, with_dropped_rows(dp.to_frame(points.rows[dp.rows_]), points.dropped_rows))
        if not args.json:
            print(f"wrote {args.out}")
    return 0


@contextlib.contextmanager
def _dask_client(args):
    """The Dask client that ``--scheduler`` or ``--local-cluster`` ask for (None without them), closed after.
    A local cluster has one worker per GPU with ``--backend gpu`` (dask-cuda), else CPU worker processes."""
    if args.protocol is not None and args.local_cluster is None:
        raise ValueError("--protocol is for --local-cluster (a scheduler's address names its own: ucx://...)")
    if args.scheduler is None and args.local_cluster is None:
        yield None
        return
    if args.method != "dpc":
        raise ValueError("--scheduler and --local-cluster spread density peaks (--method dpc) only")
    try:
        from distributed import Client  # noqa: PLC0415  (an optional extra)
    except ImportError as exc:
        raise ValueError(f"a Dask cluster needs dask.distributed: pip install 'dpstudio[distributed]' ({exc})") from None
    if args.scheduler is not None:
        try:
            client = Client(args.scheduler, timeout=SCHEDULER_TIMEOUT)
        except OSError as exc:
            raise ValueError(f"cannot reach the Dask scheduler at {args.scheduler}: {exc}") from None
        with client:
            yield client
        return
    if args.local_cluster < 1:
        raise ValueError(f"--local-cluster needs at least 1 worker, got {args.local_cluster}")
    if args.backend != "gpu":
        args.backend = "cpu"  # the workers are CPU processes, and the caller's backend is theirs
    threads = max(1, (os.cpu_count() or 1) // args.local_cluster)
    cluster = local_cluster(args.backend, args.local_cluster, threads, args.protocol or "tcp")
    with cluster, Client(cluster) as client:
        yield client


def _workers(client) -> str:
    if client is None:
        return ""
    workers = client.nthreads()
    threads = sum(workers.values())
    return f", rho and delta on {counted(len(workers), 'Dask worker')} ({counted(threads, 'thread')})"


def _stream_header(first: dict, points, n: int) -> str:
    return (f"base fit  {first['n_points']} of {n} points x {points.values.shape[1]} on {first['backend']}: "
            f"dc {first['dc']:.6g}, {first['clusters']} clusters, {first['seconds']:.3f} s\n"
            f"{'batch':>6} {'size':>6} {'points':>9} {'clusters':>8} {'update ms':>10}  changes")  # fmt: skip


def _stream_line(row: dict) -> str:
    return f"{row['batch']:>6} {row['size']:>6} {row['n_points']:>9} {row['clusters']:>8} {row['update_ms']:>10.2f}  {describe_changes(row)}"


def _density_peaks(args, values, progress):
    choice = dict(args.centers)
    dp = DensityPeaks(dc=args.dc, dc_percent=args.dc_percent, dc_rule=args.dc_rule, kernel=args.kernel,
                      suggest=choice.pop("suggest", "auto"), significance=args.significance, noise=args.noise,
                      backend=args.backend, client=getattr(args, "client", None))  # fmt: skip
    dp.fit(values, progress=progress)
    if choice:
        dp.assign(**choice)
    rule = "entropy rule" if args.dc_rule == "entropy" else f"{args.dc_percent:g}% rule"
    centers_rule = "chosen" if choice else {"auto": _topography_rule(dp, args.significance), "gamma": "largest gamma drop"}[dp.suggest]
    facts = {"kernel": dp.kernel_, "dc": dp.dc_, "dc_rule": "given" if args.dc is not None else rule,
             "centers_rule": centers_rule, "halo_count": int(dp.halo_.sum())}  # fmt: skip
    return dp, facts


def _topography_rule(dp, significance: float) -> str:
    """How the automatic clusters were found, with the significance raised for many candidate peaks, if it was."""
    result = dp.topography_
    used = result.threshold / (2 * result.error)
    raised = f", raised to {used:.2f} for {result.peaks.size:,} candidate peaks" if used > significance * (1 + 1e-9) else ""
    return f"density topography, significance {significance:g}{raised}"


def _dbscan(args, values, progress):
    model = DBSCAN(eps=args.eps, min_samples=5 if args.min_samples is None else args.min_samples,
                   neighbors=args.neighbors, backend=args.backend).fit(values, progress=progress)  # fmt: skip
    facts = {"eps": model.eps_, "eps_rule": "given" if args.eps is not None else "knee of the core distances",
             "min_samples": model.min_samples_, "core_count": int(model.core_sample_indices_.size),
             "neighbors": args.neighbors}  # fmt: skip
    if args.neighbors == "approximate":
        facts["saturated_cores"] = model.saturated_cores_
    return model, facts


def _hdbscan(args, values, progress):
    model = HDBSCAN(min_cluster_size=args.min_cluster_size, min_samples=args.min_samples,
                    cluster_selection_method=args.selection, backend=args.backend)  # fmt: skip
    model.fit(values, progress=progress)
    facts = {"min_cluster_size": model.min_cluster_size, "min_samples": model.min_samples or model.min_cluster_size,
             "selection": model.cluster_selection_method}  # fmt: skip
    return model, facts


_CLUSTER_METHODS = {"dpc": _density_peaks, "dbscan": _dbscan, "hdbscan": _hdbscan}


def _summary(facts: dict) -> str:
    dropped = f", {facts['dropped_rows']} rows with NaN/inf dropped" if facts["dropped_rows"] else ""
    lines = [
        f"points    {facts['n_points']} x {facts['n_dims']} ({', '.join(facts['columns'])}){dropped}",
        f"backend   {facts['backend']}",
    ]
    if facts["method"] == "dpc":
        lines.append(f"dc        {facts['dc']:.6g} ({facts['dc_rule']}, {facts['kernel']} kernel)")
    elif facts["method"] == "dbscan":
        lines.append(f"dbscan    eps {facts['eps']:.6g} ({facts['eps_rule']}), min_samples {facts['min_samples']}, {facts['neighbors']} neighbours")
        if "saturated_cores" in facts:
            lines.append(f"certify   {facts['saturated_cores']} saturated cores (0: exact if the lists are the true nearest)")
    else:
        lines.append(f"hdbscan   min_cluster_size {facts['min_cluster_size']}, min_samples {facts['min_samples']}, {facts['selection']} selection")
    lines.append(f"clusters  {facts['n_clusters']}: sizes {' '.join(map(str, facts['cluster_sizes']))}")
    if facts["method"] == "dpc":
        lines += [f"centers   {' '.join(map(str, facts['centers']))} ({facts['centers_rule']})", f"halo      {facts['halo_count']} points"]
        if "noise_count" in facts:
            lines.append(f"noise     {facts['noise_count']} points")
    else:
        core = f" ({facts['core_count']} core points)" if "core_count" in facts else ""
        lines.append(f"noise     {facts['noise_count']} points{core}")
    lines += [
        "time      " + " | ".join(f"{k} {v:.3f} s" for k, v in facts["timings"].items()) + f" | total {facts['total_seconds']:.3f} s",
    ]
    if facts["output"]:
        lines.append(f"wrote     {facts['output']}")
    return "\n".join(lines)


class _ProgressBars:
    """One tqdm bar per engine phase, on a terminal only."""

    def __init__(self, enabled: bool):
        self.enabled, self.bar, self.phase = enabled, None, None

    def __enter__(self):
        return self if self.enabled else None

    def __call__(self, phase: str, fraction: float) -> None:
        from tqdm import tqdm

        if phase != self.phase:
            self._close()
            self.phase, self.bar = phase, tqdm(total=100, desc=f"{phase:6s}", unit="%", leave=False, file=sys.stderr)
        self.bar.update(round(100 * fraction) - self.bar.n)

    def _close(self) -> None:
        if self.bar is not None:
            self.bar.close()

    def __exit__(self, *exc) -> None:
        self._close()


def _serve(args) -> int:
    from .serve import serve  # imports Panel, which the other commands do not need

    serve(args.path, port=args.port, address=args.address, show=args.show, max_upload_mb=args.max_upload_mb,
          cache_size=args.cache_size, backend=args.backend, num_procs=args.num_procs, dc_percent=args.dc_percent,
          allow_websocket_origin=tuple(args.allow_websocket_origin))  # fmt: skip
    return 0


def _bench(args) -> int:
    if args.protocol is not None and not args.distributed:
        raise ValueError("--protocol is for --distributed")
    if args.incremental:
        from .bench_incremental import SMALL_DC_MEAN_RHO, run_incremental_bench

        shapes = args.sizes and [(n, d, rule) for n in args.sizes for d in args.dims for rule in ("2%", f"rho~{SMALL_DC_MEAN_RHO}")]
        run_incremental_bench(shapes, backend=args.backend, batch=args.batch, batches=args.batches, markdown=args.markdown)
        return 0
    if args.distributed:
        from .bench_distributed import SMALL_DC_MEAN_RHO, run_distributed_bench

        shapes = args.sizes and [(n, d, rule) for n in args.sizes for d in args.dims for rule in ("2%", f"rho~{SMALL_DC_MEAN_RHO}")]
        run_distributed_bench(shapes, backend=args.backend, workers=args.workers, markdown=args.markdown, protocol=args.protocol or "tcp")
        return 0
    if args.method == "dbscan":
        from .bench_dbscan import run_dbscan_bench

        run_dbscan_bench(sizes=args.sizes or [100_000, 1_000_000], backend=args.backend, markdown=args.markdown)
        return 0
    from .bench import run_bench

    run_bench(sizes=args.sizes or [10_000, 100_000, 1_000_000], dims=args.dims, backend=args.backend,
              baseline_queries=args.baseline_queries, markdown=args.markdown)  # fmt: skip
    return 0


if __name__ == "__main__":
    sys.exit(main())
