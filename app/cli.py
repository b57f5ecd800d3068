"""The ``dpstudio`` command: ``serve`` the web app, ``cluster`` a file, ``bench`` the engine."""

from __future__ import annotations

import argparse
import json
import sys
import time
from importlib.metadata import version

import numpy as np

from dpstudio.engine import BackendUnavailable, DataError, DensityPeaks, to_points, write_labels
from dpstudio.engine.data import with_dropped_rows
from dpstudio.engine.backends import BACKENDS
from dpstudio.engine.indexed import KERNELS

EXIT_BAD_INPUT = 2


def main(argv: list[str] | None = None) -> int:
    parser = _parser()
    args = parser.parse_args(argv)
    try:
        return args.run(args)
    except (DataError, BackendUnavailable, ValueError) as exc:
        print(f"dpstudio: error: {exc}", file=sys.stderr)
        return EXIT_BAD_INPUT
    except KeyboardInterrupt:
        return 130


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
    serve.add_argument("--backend", choices=BACKENDS, default="auto")
    serve.add_argument("--num-procs", type=int, default=1, help="server processes (default 1)")
    serve.set_defaults(run=_serve)

    cluster = commands.add_parser("cluster", help="cluster a data file and print a summary")
    cluster.add_argument("input", metavar="INPUT", help="CSV/TSV/TXT, Parquet or NPY file")
    cluster.add_argument("--columns", type=_names, help="comma-separated columns to use (default: every numeric one)")
    dc = cluster.add_mutually_exclusive_group()
    dc.add_argument("--dc", type=float, help="cut-off distance")
    dc.add_argument("--dc-percent", type=float, default=2.0, help="choose dc so the average point has P%% of N neighbours (default 2)")
    cluster.add_argument("--kernel", choices=KERNELS, default="cutoff")
    cluster.add_argument(
        "--centers", default="auto", type=_centers,
        help="auto (largest gamma drop) | K (the K largest gamma) | RHO_MIN:DELTA_MIN (either may be empty) | i,j,k (indices; one index: 'i,')",
    )  # fmt: skip
    cluster.add_argument("--standardize", action="store_true", help="z-score each column first")
    cluster.add_argument("--drop-nonfinite", action="store_true", help="drop rows with NaN/inf instead of failing")
    cluster.add_argument("--out", metavar="FILE", help="write index,label,halo,rho,delta,parent to FILE.csv or FILE.parquet")
    cluster.add_argument("--backend", choices=BACKENDS, default="auto")
    cluster.add_argument("--json", action="store_true", help="print one JSON object instead of the summary")
    cluster.set_defaults(run=_cluster)

    bench = commands.add_parser("bench", help="time the engine against scipy's cKDTree and print a table")
    bench.add_argument("--sizes", type=_ints, default=[10_000, 100_000, 1_000_000], help="comma-separated N (default 10000,100000,1000000)")
    bench.add_argument("--dims", type=_ints, default=[2, 3, 16], help="comma-separated d (default 2,3,16)")
    bench.add_argument("--backend", choices=BACKENDS, default="cpu")
    bench.add_argument("--baseline-queries", type=int, default=20_000,
                       help="time cKDTree on at most this many queries and scale up (default 20000)")  # fmt: skip
    bench.add_argument("--markdown", action="store_true", help="print the table as Markdown")
    bench.set_defaults(run=_bench)
    return parser


def _names(text: str) -> list[str]:
    names = [n.strip() for n in text.split(",") if n.strip()]
    if not names:
        raise argparse.ArgumentTypeError("expected comma-separated column names")
    return names


def _ints(text: str) -> list[int]:
    try:
        return [int(float(v)) for v in text.split(",") if v.strip()]
    except ValueError as exc:
        raise argparse.ArgumentTypeError(f"expected comma-separated integers, got {text!r}") from exc


def _centers(text: str) -> dict:
    """Parse --centers into keyword arguments for DensityPeaks.assign."""
    text = text.strip()
    try:
        if text == "auto":
            return {}
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
            f"expected auto, K, RHO_MIN:DELTA_MIN (finite numbers, at least one given) or i,j,k; got {text!r}"
        ) from exc


def _cluster(args) -> int:
    points = to_points(args.input, args.columns, standardize=args.standardize, drop_nonfinite=args.drop_nonfinite)
    started = time.perf_counter()
    with _ProgressBars(enabled=not args.json and sys.stderr.isatty()) as progress:
        dp = DensityPeaks(dc=args.dc, dc_percent=args.dc_percent, kernel=args.kernel, backend=args.backend)
        dp.fit(points.values, progress=progress)
    dp.assign(**args.centers)
    halo = dp.halo_
    if args.out:
        write_labels(args.out, with_dropped_rows(dp.to_frame(points.rows), points.dropped_rows))
    sizes = np.bincount(dp.labels_, minlength=len(dp.centers_))
    facts = {
        "input": args.input,
        "n_points": int(points.values.shape[0]),
        "n_dims": int(points.values.shape[1]),
        "columns": list(points.columns),
        "dropped_rows": int(points.dropped_rows.size),
        "backend": dp._backend.device_name(),
        "kernel": dp.kernel_,
        "dc": dp.dc_,
        "dc_rule": "given" if args.dc is not None else f"{args.dc_percent:g}% rule",
        "n_clusters": int(len(dp.centers_)),
        "centers": [int(c) for c in points.rows[dp.centers_]],
        "cluster_sizes": [int(s) for s in sizes],
        "halo_count": int(halo.sum()),
        "timings": {k: round(v, 4) for k, v in dp.timings_.items()},
        "total_seconds": round(time.perf_counter() - started, 4),
        "output": args.out,
    }
    print(json.dumps(facts) if args.json else _summary(facts))
    return 0


def _summary(facts: dict) -> str:
    dropped = f", {facts['dropped_rows']} rows with NaN/inf dropped" if facts["dropped_rows"] else ""
    lines = [
        f"points    {facts['n_points']} x {facts['n_dims']} ({', '.join(facts['columns'])}){dropped}",
        f"backend   {facts['backend']}",
        f"dc        {facts['dc']:.6g} ({facts['dc_rule']}, {facts['kernel']} kernel)",
        f"clusters  {facts['n_clusters']}: sizes {' '.join(map(str, facts['cluster_sizes']))}",
        f"centers   {' '.join(map(str, facts['centers']))}",
        f"halo      {facts['halo_count']} points",
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
    from .bench import run_bench

    run_bench(sizes=args.sizes, dims=args.dims, backend=args.backend, baseline_queries=args.baseline_queries, markdown=args.markdown)
    return 0


if __name__ == "__main__":
    sys.exit(main())
