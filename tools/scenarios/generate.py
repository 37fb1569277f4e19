"""Write a generated cluster as a scenario file: the held-out clusters of tools/bench.

The shapes are the ones the benchmarks compare with OpenStack Watcher (tools/bench/heldout.py,
tools/bench/front.py): ``identical`` (32 cores, 128 GiB, 1 TB hosts, about 7.3 instances a
host, 70 % full) and ``four-sizes`` (16/32/48/64 cores, about 9.2 instances a host, 60 %
full); ``mixed`` is the generator's default five host models. Deterministic for a seed.

    python tools/scenarios/generate.py --hosts 1000 --shape four-sizes --seed 1 \\
        -o mixed1000.yaml
    consolidator plan --scenario mixed1000.yaml
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(ROOT / "tools" / "bench"))
sys.path.insert(0, str(ROOT))

from heldout import CLUSTERS  # noqa: E402

from consolidator.core.errors import ScenarioError  # noqa: E402
from consolidator.emulators.fake.generate import generate  # noqa: E402
from consolidator.scenario.files import dump_document  # noqa: E402

#: --shape name -> (host models or None for the generator's default, instances a host, fill)
SHAPES = {"identical": (CLUSTERS[0][1], CLUSTERS[0][2], CLUSTERS[0][3]),
          "four-sizes": (CLUSTERS[1][1], CLUSTERS[1][2], CLUSTERS[1][3]),
          "mixed": (None, 10.0, 0.5)}


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--hosts", type=int, default=200, help="host count (default 200)")
    parser.add_argument("--shape", choices=sorted(SHAPES), default="four-sizes",
                        help="host models and load (default four-sizes)")
    parser.add_argument("--seed", type=int, default=1, help="random seed (default 1)")
    parser.add_argument("-o", "--output", metavar="FILE",
                        help="write here (.yaml or .json; default: YAML on standard output)")
    args = parser.parse_args()
    if args.hosts < 1:
        parser.error(f"--hosts {args.hosts}: expected a positive host count")
    models, per_host, fill = SHAPES[args.shape]
    doc = generate(args.hosts, per_host=per_host, seed=args.seed, fill=fill, models=models)
    doc["name"] = f"{args.shape}-{args.hosts}-seed{args.seed}"
    try:
        text = dump_document(doc, args.output)
    except ScenarioError as exc:
        print(f"generate: {exc}", file=sys.stderr)
        return 1
    if args.output is None:
        sys.stdout.write(text)
    else:
        print(f"wrote {args.output}: {len(doc['hosts'])} hosts, "
              f"{len(doc['instances'])} instances", file=sys.stderr)
    return 0


if __name__ == "__main__":
    sys.exit(main())
