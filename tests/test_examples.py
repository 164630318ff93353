"""The examples run as a reader would run them: as scripts, again and again."""

from __future__ import annotations

import shutil
import subprocess
import sys
from pathlib import Path

EXAMPLES = Path(__file__).resolve().parent.parent / "examples"


def _run(script: str, *args: str, cwd: Path) -> str:
    result = subprocess.run(
        [sys.executable, str(EXAMPLES / script), *args],
        capture_output=True,
        text=True,
        cwd=cwd,
        timeout=60,
    )
    assert result.returncode == 0, result.stderr
    return result.stdout


def test_the_embedded_example_runs_twice_on_the_file_it_is_given(tmp_path: Path) -> None:
    first = _run("embedded.py", "flags.sqlite3", cwd=tmp_path)
    second = _run("embedded.py", "flags.sqlite3", cwd=tmp_path)
    assert first == second
    assert "new-checkout is on for" in first
    assert first.strip().endswith("stored in flags.sqlite3")
    assert (tmp_path / "flags.sqlite3").stat().st_size > 0


def test_the_embedded_example_without_a_path_uses_a_new_temporary_file(tmp_path: Path) -> None:
    output = _run("embedded.py", cwd=tmp_path)
    stored = Path(output.strip().rsplit("stored in ", 1)[1])
    assert stored.name == "flags.db"
    assert stored.parent != tmp_path
    assert stored.exists()
    assert list(tmp_path.iterdir()) == []
    shutil.rmtree(stored.parent)


def test_the_in_process_example_runs(tmp_path: Path) -> None:
    output = _run("in_process.py", cwd=tmp_path)
    assert "new-checkout is on for" in output
    assert "unknown flag, default True: True" in output


def test_the_readmes_embedding_snippet_runs_twice_on_one_file(tmp_path: Path) -> None:
    readme = (EXAMPLES.parent / "README.md").read_text()
    section = readme.split("## Embed it", 1)[1]
    snippet = section.split("```python\n", 1)[1].split("```", 1)[0]
    script = tmp_path / "snippet.py"
    script.write_text(
        snippet + "\nprint(service.client.engine('development').is_enabled('new-checkout'))\n"
    )
    for _ in range(2):
        result = subprocess.run(
            [sys.executable, str(script)], capture_output=True, text=True, cwd=tmp_path, timeout=60
        )
        assert result.returncode == 0, result.stderr
        assert result.stdout.strip().endswith(("True", "False"))
    assert (tmp_path / "flags.db").exists()
