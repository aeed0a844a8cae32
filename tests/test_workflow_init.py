"""``groundstate init``: a starter suite that validates and runs, from an installed package.

A real wheel needs the build backend pyproject names (setuptools >= 77); where it is missing
(an offline machine with an older setuptools), the installed layout is made the way the
wheel is: the packages' modules plus the files ``package-data`` selects, copied to a folder
outside the repository, so a template left out of ``package-data`` fails here too.
"""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
import tomllib
from pathlib import Path

import pytest
from click.testing import CliRunner

from groundstate.cli import main
from groundstate.episode import default_environment, reset_checked
from groundstate.spec.suite import load_suite
from groundstate.store import RunStore

REPO = Path(__file__).resolve().parent.parent
SOURCE = REPO / "src"


def _setuptools_builds_wheels() -> bool:
    try:
        import setuptools
    except ImportError:
        return False
    major = int(setuptools.__version__.split(".")[0])
    return major >= 77 and shutil.which("pip") is not None


def _install_like_a_wheel(target: Path) -> None:
    """Copy what the wheel holds: every module of every package, and the package data."""
    config = tomllib.loads((REPO / "pyproject.toml").read_text())
    patterns = config["tool"]["setuptools"]["package-data"]["groundstate"]
    package = SOURCE / "groundstate"
    chosen = {p for p in package.rglob("*.py") if (p.parent / "__init__.py").is_file()}
    for pattern in patterns:
        chosen |= {p for p in package.glob(pattern) if p.is_file()}
    for path in chosen:
        if "__pycache__" in path.parts:
            continue
        destination = target / path.relative_to(SOURCE)
        destination.parent.mkdir(parents=True, exist_ok=True)
        shutil.copyfile(path, destination)


def _build_and_install_wheel(target: Path, tmp: Path) -> None:
    wheels = tmp / "wheels"
    pip = [sys.executable, "-m", "pip"]
    subprocess.run(
        [*pip, "wheel", "--no-deps", "--no-build-isolation", "-w", str(wheels), str(REPO)],
        check=True,
        capture_output=True,
    )
    (wheel,) = wheels.glob("groundstate-*.whl")
    subprocess.run(
        [*pip, "install", "--no-deps", "--target", str(target), str(wheel)],
        check=True,
        capture_output=True,
    )


def _groundstate(site: Path, cwd: Path, *args: str) -> subprocess.CompletedProcess[str]:
    """The CLI run with only *site* on the path, from a folder outside the repository."""
    env = {**os.environ, "PYTHONPATH": str(site)}
    code = "import sys; from groundstate.cli import main; sys.exit(main())"
    return subprocess.run(
        [sys.executable, "-c", code, *args], cwd=cwd, env=env, capture_output=True, text=True
    )


def _init_validate_run(site: Path, work: Path) -> None:
    made = _groundstate(site, work, "init", "demo")
    assert made.returncode == 0, made.stderr
    assert "groundstate validate demo" in made.stdout
    checked = _groundstate(site, work, "validate", "demo")
    assert checked.returncode == 0, checked.stdout + checked.stderr
    assert "1 of 1 task valid" in checked.stdout
    assert "suite mutation score 1.00" in checked.stdout  # a starter that shows the bar
    (pin,) = [x for x in checked.stdout.splitlines() if "pin its initial state" in x]
    ran = _groundstate(site, work, "run", "demo", "--system", "demo/system.yaml", "--json")
    assert ran.returncode == 0, ran.stderr
    batch = json.loads(ran.stdout)  # the agent's print() went to the run, not to stdout
    assert batch["terminal_reasons"] == {"success": 1}
    with RunStore(work / ".groundstate" / "runs.db") as store:  # where the print went
        run = store.run(batch["runs"][0]["run_id"])
        printed = store.read_artifact(run.artifact_locations["stdout.txt"])
    assert printed == "renewing 'Dune' for card C-100\n"
    _paste_pin(work / "demo", pin.split(": ", 1)[1])


def _paste_pin(suite_root: Path, pin: str) -> None:
    """The line validate printed, pasted into the task, declares the hash its resets give."""
    assert pin.startswith("reset_check: {initial_state_hash: ")
    task_file = suite_root / "tasks" / "renew-dune.yaml"
    task_file.write_text(task_file.read_text() + pin + "\n")
    suite = load_suite(suite_root)
    task = suite.tasks["renew-dune"]
    assert task.reset_check.initial_state_hash == pin.rstrip("}").rsplit(" ", 1)[1]
    with default_environment(task, suite) as env:
        reset_checked(env, task)  # raises ResetCheckFailed for any other hash


def test_init_validate_run_from_the_installed_layout(tmp_path: Path) -> None:
    site, work = tmp_path / "site", tmp_path / "work"
    work.mkdir()
    _install_like_a_wheel(site)
    assert (site / "groundstate" / "templates" / "init" / "suite.yaml").is_file()
    _init_validate_run(site, work)


@pytest.mark.skipif(
    not _setuptools_builds_wheels(), reason="the build backend (setuptools >= 77) is missing"
)
def test_a_built_wheel_installs_exactly_the_layout_that_inits_validates_and_runs(
    tmp_path: Path,
) -> None:
    """The same files, byte for byte, as the layout the test above copies and runs ``init``,
    ``validate`` and ``run`` from (three cold starts of the CLI, not run twice)."""
    wheel, layout = tmp_path / "wheel", tmp_path / "layout"
    _build_and_install_wheel(wheel, tmp_path)
    _install_like_a_wheel(layout)
    assert _files(wheel / "groundstate") == _files(layout / "groundstate")


def _files(root: Path) -> dict[str, bytes]:
    return {
        str(path.relative_to(root)): path.read_bytes()
        for path in root.rglob("*")
        if path.is_file() and "__pycache__" not in path.parts
    }


def test_init_names_the_suite_after_its_folder(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.chdir(tmp_path)
    result = CliRunner().invoke(main, ["init", "shelves/lib-desk"])
    assert result.exit_code == 0, result.output
    root = tmp_path / "shelves" / "lib-desk"
    assert "name: lib-desk\n" in (root / "suite.yaml").read_text()
    assert "name: lib-desk-rules\n" in (root / "system.yaml").read_text()
    files = {str(p.relative_to(root)) for p in root.rglob("*") if p.is_file()}
    assert {"tasks/renew-dune.yaml", "tools.py", "fixtures/library.sql", "agent.py",
            "solutions/renew-dune/oracle.yaml", "checks.py", "policy.md"} <= files  # fmt: skip
    assert not any("__pycache__" in f or "{{" in (root / f).read_text() for f in files)


@pytest.mark.parametrize("existing", ["file", "full folder"])
def test_init_never_writes_over_anything(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, existing: str
) -> None:
    monkeypatch.chdir(tmp_path)
    if existing == "file":
        Path("demo").write_text("mine")
    else:
        Path("demo").mkdir()
        Path("demo/suite.yaml").write_text("mine")
    result = CliRunner().invoke(main, ["init", "demo"])
    assert result.exit_code == 2
    message = "error: demo exists and is not an empty folder: choose a new name"
    assert result.stderr.strip() == message
    assert "mine" in (Path("demo").read_text() if existing == "file" else
                      Path("demo/suite.yaml").read_text())  # fmt: skip


def test_init_fills_an_empty_folder(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.chdir(tmp_path)
    Path("demo").mkdir()
    assert CliRunner().invoke(main, ["init", "demo"]).exit_code == 0
    assert Path("demo/suite.yaml").is_file()
