"""``flagcore scan`` on a generated 100,000-file tree (issue 32: "a 100,000-file tree in
seconds").

Run by hand: ``.venv/bin/python benchmarks/scan_bench.py [--files 100000] [--jobs 1 2]``.

The tree is made once in a temporary directory: source files of the six languages
(about 1.5 kB each, like small modules), one in ten with an SDK or OpenFeature call,
spread over directories of 100 files, with a root ``.gitignore`` that ignores a
``node_modules/`` of 10% more files and a ``.gitignore`` in every tenth directory. Then
``flagcore scan`` runs against it for each ``--jobs`` value (best of ``--rounds``, the
directory cache warm after the first) and prints files scanned, references found and
seconds; the page cache is not dropped (no root), so this is the warm-tree figure a CI
job on a runner that just checked the code out sees.
"""

from __future__ import annotations

import argparse
import os
import random
import tempfile
import time
from pathlib import Path

from flagcore_cli.scan_command import scan

_LANGUAGES = {
    ".py": 'if client.is_enabled("{flag}", context):\n    pass\n',
    ".ts": "const on = unleash.isEnabled('{flag}');\n",
    ".go": 'if unleash.IsEnabled("{flag}") {{\n}}\n',
    ".java": 'boolean on = unleash.isEnabled("{flag}");\n',
    ".rb": 'UNLEASH.is_enabled? "{flag}", context\n',
    ".cs": 'var on = await client.GetBooleanValueAsync("{flag}", false);\n',
}
_FILLER = "".join(
    f"def function_{i}(argument, other):  # a line of ordinary code, about 60 bytes\n"
    for i in range(25)
)


def make_tree(root: Path, files: int, rng: random.Random) -> None:
    suffixes = list(_LANGUAGES)
    (root / ".gitignore").write_text("node_modules/\n*.min.js\n")
    for i in range(files):
        directory = root / f"pkg{i // 10_000}" / f"mod{i // 100}"
        if i % 100 == 0:
            directory.mkdir(parents=True)
            if (i // 100) % 10 == 0:
                (directory / ".gitignore").write_text("generated_*.py\n!generated_keep.py\n")
        suffix = suffixes[i % len(suffixes)]
        call = _LANGUAGES[suffix].format(flag=f"flag-{rng.randrange(500)}") if i % 10 == 0 else ""
        (directory / f"file{i}{suffix}").write_text(_FILLER[:700] + call + _FILLER[700:])
    ignored = root / "node_modules" / "lib"
    ignored.mkdir(parents=True)
    for i in range(files // 10):
        (ignored / f"dep{i}.js").write_text("unleash.isEnabled('never-seen');\n")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--files", type=int, default=100_000)
    parser.add_argument("--jobs", type=int, nargs="+", default=[1, os.cpu_count() or 1])
    parser.add_argument("--rounds", type=int, default=3)
    args = parser.parse_args()
    print(f"load average {os.getloadavg()[0]:.1f}, {os.cpu_count()} CPUs")
    with tempfile.TemporaryDirectory() as directory:
        root = Path(directory)
        started = time.perf_counter()
        make_tree(root, args.files, random.Random(32))
        print(f"made {args.files:,} files in {time.perf_counter() - started:.1f} s")
        for jobs in args.jobs:
            times = []
            for _ in range(args.rounds):
                started = time.perf_counter()
                report = scan([str(root)], None, jobs=jobs)
                times.append(time.perf_counter() - started)
            assert not any(r.name == "never-seen" for r in report.references)
            print(
                f"--jobs {jobs}: {report.files:,} files, {len(report.references):,} references, "
                f"best {min(times):.2f} s, worst {max(times):.2f} s"
            )


if __name__ == "__main__":
    main()
