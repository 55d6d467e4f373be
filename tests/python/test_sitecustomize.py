"""launchwatch run's sitecustomize: it chains to the one it shadows and installs the torch hooks
only once the program imports torch."""

import os
import subprocess
import sys

import pytest

import launchwatch

PACKAGE_DIR = os.path.dirname(os.path.dirname(launchwatch.__file__))
SITE_DIR = os.path.join(PACKAGE_DIR, "launchwatch", "_site")
HERE = os.path.dirname(os.path.abspath(__file__))


def run_python(code, tmp_path, extra_path=(), **variables):
    environment = dict(os.environ)
    environment.pop("LAUNCHWATCH_RUN_OUT", None)
    environment["PYTHONPATH"] = os.pathsep.join([SITE_DIR, PACKAGE_DIR, HERE, *extra_path])
    environment["LAUNCHWATCH_TORCH"] = "modules"
    environment.update(variables)
    done = subprocess.run([sys.executable, "-c", code], env=environment, capture_output=True,
                          text=True, cwd=tmp_path)
    assert done.returncode == 0, done.stderr
    return done


def test_the_programs_own_sitecustomize_still_runs(tmp_path):
    own = tmp_path / "own"
    own.mkdir()
    (own / "sitecustomize.py").write_text(
        "import builtins\nbuiltins.OWN_SITECUSTOMIZE_RAN = True\n")
    done = run_python("import builtins, sitecustomize\n"
                      "print(getattr(builtins, 'OWN_SITECUSTOMIZE_RAN', False),"
                      " sitecustomize.__file__)\n",
                      tmp_path, extra_path=[str(own)])
    ran, module_file = done.stdout.split()
    assert ran == "True"
    assert module_file == str(own / "sitecustomize.py")


def test_its_folder_is_taken_off_the_programs_path(tmp_path):
    done = run_python("import sys, os\n"
                      "site = os.path.join('launchwatch', '_site')\n"
                      "print(any(p.endswith(site) for p in sys.path))\n", tmp_path)
    assert done.stdout.strip() == "False"


def test_a_program_that_never_imports_torch_is_not_touched(tmp_path):
    done = run_python("import sys\n"
                      "print('torch' in sys.modules, 'launchwatch.torch' in sys.modules)\n",
                      tmp_path)
    assert done.stdout.strip() == "False False"


def test_the_torch_hooks_are_installed_once_the_program_imports_torch(tmp_path):
    pytest.importorskip("torch", reason="torch is not installed for this Python (python3-torch)")
    code = ("from fake_sink import FakeSink\n"
            "from launchwatch import _sink\n"
            "sink = FakeSink()\n"
            "_sink.set_sink(sink)\n"
            "import torch\n"
            "torch.nn.Linear(2, 2)(torch.zeros(1, 2))\n"
            "print(sink.paths())\n")
    done = run_python(code, tmp_path)
    assert done.stdout.strip() == "['Linear']"


def test_off_or_an_unknown_mode_installs_nothing(tmp_path):
    pytest.importorskip("torch", reason="torch is not installed for this Python (python3-torch)")
    code = ("from fake_sink import FakeSink\n"
            "from launchwatch import _sink\n"
            "sink = FakeSink()\n"
            "_sink.set_sink(sink)\n"
            "import torch\n"
            "torch.nn.Linear(2, 2)(torch.zeros(1, 2))\n"
            "print(sink.paths())\n")
    done = run_python(code, tmp_path, LAUNCHWATCH_TORCH="off")
    assert done.stdout.strip() == "[]"
