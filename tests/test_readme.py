"""The README is the front door: its commands must be the ones CI and users actually run."""

import re
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]


def readme_command(label: str) -> str:
    text = (ROOT / "README.md").read_text()
    match = re.search(rf"<!-- {label} -->\s*```bash\n(.+?)\n```", text, re.S)
    assert match, f"README.md has no '{label}' command block"
    return match.group(1).strip()


def test_ci_runs_the_readme_test_command():
    assert readme_command("test-command") in (ROOT / ".ci" / "run").read_text()


def test_readme_run_command_starts_the_app_on_its_sample():
    # `dpstudio serve` with no PATH opens on the default sample; tests/ui drives exactly that.
    assert readme_command("run-command").endswith("dpstudio serve")
