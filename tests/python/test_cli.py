"""The wheel's `launchwatch` console command (launchwatch._cli): it runs the bundled program."""

import os
import subprocess
import sys

from launchwatch import _cli


def test_the_command_replaces_itself_with_the_bundled_program_passing_every_argument(tmp_path):
    program = tmp_path / "launchwatch"
    said = tmp_path / "said"
    program.write_text(f'#!/bin/sh\nprintf "%s\\n" "$0" "$@" > {said}\nexit 7\n')
    program.chmod(0o755)
    script = (
        "import sys; from launchwatch import _cli; "
        f"_cli._BINARY = {str(program)!r}; sys.argv = ['launchwatch', 'run', '--', 'a b']; "
        "sys.exit(_cli.main())"
    )
    environment = dict(os.environ, PYTHONPATH=os.pathsep.join(sys.path))
    finished = subprocess.run([sys.executable, "-c", script], env=environment)
    assert finished.returncode == 7
    assert said.read_text().splitlines()[1:] == ["run", "--", "a b"]


def test_the_command_without_its_bundled_program_says_to_reinstall_and_exits_127(
    tmp_path, monkeypatch, capsys
):
    monkeypatch.setattr(_cli, "_BINARY", str(tmp_path / "missing" / "launchwatch"))
    assert _cli.main() == 127
    assert "reinstall the wheel" in capsys.readouterr().err


def test_the_command_tells_the_program_where_this_pythons_site_packages_are(tmp_path):
    program = tmp_path / "launchwatch"
    said = tmp_path / "said"
    program.write_text(f'#!/bin/sh\nprintf "%s" "$LAUNCHWATCH_PYTHON_SITE_PACKAGES" > {said}\n')
    program.chmod(0o755)
    site = tmp_path / "venv" / "lib" / "python3" / "site-packages"
    script = (
        "import sys; from launchwatch import _cli; "
        f"_cli._BINARY = {str(program)!r}; sys.path.append({str(site)!r}); "
        "sys.path.append('/not/a/site/folder'); sys.argv = ['launchwatch', '--version']; "
        "sys.exit(_cli.main())"
    )
    environment = dict(os.environ, PYTHONPATH=os.pathsep.join(sys.path))
    environment.pop("LAUNCHWATCH_PYTHON_SITE_PACKAGES", None)
    assert subprocess.run([sys.executable, "-c", script], env=environment).returncode == 0
    folders = said.read_text().split(os.pathsep)
    assert folders[-1] == str(site)
    assert "/not/a/site/folder" not in folders
