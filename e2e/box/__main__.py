"""python -m e2e.box build | up [SPEC] [--env ENV]

build: build every binary of the box and the Pulumi engine (cached; a second run returns at once).
up: start the box, register the fleet's nodes, apply its tree, print the report and the kubeconfig, and keep
running until interrupted (every process is stopped then).
"""

from __future__ import annotations

import argparse
import signal
import sys
from pathlib import Path

from e2e.box import build


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m e2e.box", description=__doc__.splitlines()[0])
    sub = parser.add_subparsers(dest="command", required=True)
    sub.add_parser("build", help="build the box's binaries from their pinned Go modules")
    up = sub.add_parser("up", help="start the box with a fleet applied, until interrupted")
    up.add_argument("spec", nargs="?", default="fleet.yaml")
    up.add_argument("--env", default="prod")
    args = parser.parse_args(argv)
    if args.command == "build":
        for name, path in build.build_all(modules=build.MODULES + build.ENGINE).items():
            print(f"{name}: {path}")
        return 0
    from e2e.box import fleet

    box = fleet.up(Path(args.spec), args.env)
    print(box.report.text())
    print(f"\nexport KUBECONFIG={box.cluster.admin_kubeconfig}  # kubectl: {box.cluster.binaries['kubectl']}")
    print("running; Ctrl-C stops every process", flush=True)
    try:
        signal.pause()
    finally:
        box.stop()
    return 1 if box.report.refused else 0


if __name__ == "__main__":
    sys.exit(main())
