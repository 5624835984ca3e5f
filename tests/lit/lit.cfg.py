import os
import lit.formats

config.name = "netc"
config.test_format = lit.formats.ShTest(execute_external=True)
config.suffixes = [".net", ".test"]
config.test_source_root = os.path.dirname(__file__)
config.test_exec_root = os.path.join(os.path.dirname(config.netc), "tests", "lit-out")
config.excludes = ["lit.cfg.py", "lit.site.cfg.py.in", "inputs"]
config.substitutions.append(("%netc", config.netc))
config.substitutions.append(("FileCheck", config.filecheck))
config.substitutions.append(("%models", os.path.join(config.netc_source_dir, "models")))
config.substitutions.append(("%inputs", os.path.join(config.test_source_root, "inputs")))
import sys
config.substitutions.append(("%python", sys.executable))
# LLVM's `not` and friends
config.environment["PATH"] = "/usr/lib/llvm-19/bin:" + os.environ.get("PATH", "")
# script(1) gives a command a pseudo-terminal (tests of what netc draws on a terminal)
import shutil
if shutil.which("script"):
	config.available_features.add("script")
# `REQUIRES: chromium`: a headless browser for the HTML report (Debian's chromium; CI installs it)
if shutil.which("chromium"):
	config.available_features.add("chromium")
	config.substitutions.append(("%chromium", shutil.which("chromium")))
# the kernel cache is off unless a test names its own directory (tests/lit/cli/kernel_cache.test):
# a test compiles what it tests
config.environment["NETC_CACHE_DIR"] = ""
config.substitutions.append(("%scripts", os.path.join(config.netc_source_dir, "scripts")))
# the source tree and the build of %netc (tests that configure a build of their own)
config.substitutions.append(("%srcdir", config.netc_source_dir))
config.substitutions.append(("%builddir", os.path.dirname(config.netc)))

# `REQUIRES: torch` tests run where the Python that runs lit can import PyTorch (found, not
# imported: importing it takes seconds); CI has no PyTorch and reports them UNSUPPORTED.
import importlib.util
if importlib.util.find_spec("torch") is not None:
	config.available_features.add("torch")
else:
	lit_config.note("PyTorch is not importable by %s: tests that require torch are skipped" % sys.executable)

# `REQUIRES: onnx` tests build ONNX models with onnx's helper API (Debian's python3-onnx) and run
# them through %onnx-python: the Python that runs lit when it can import onnx and numpy, else the
# system's python3 (lit may run under another Python than the one Debian's packages are for).
import subprocess
def _has_onnx(python, extra=""):
	try:
		return subprocess.run([python, "-c", "import onnx, numpy" + extra], capture_output=True, timeout=60).returncode == 0
	except OSError:
		return False
_onnx_python = next((p for p in (sys.executable, "/usr/bin/python3") if os.path.exists(p) and _has_onnx(p)), None)
if _onnx_python:
	config.available_features.add("onnx")
	config.substitutions.append(("%onnx-python", _onnx_python))
	# `REQUIRES: onnx-torch`: that Python has PyTorch too, to export models as PyTorch does
	if _has_onnx(_onnx_python, ", torch"):
		config.available_features.add("onnx-torch")
else:
	lit_config.note("no Python here imports onnx and numpy (apt-get install python3-onnx): the ONNX tests are skipped")
# `REQUIRES: mpi`: Open MPI's mpirun and libmpi.so.40, which netc loads (scripts/install-deps.sh
# installs them in CI).
import ctypes.util, shutil
def _has_libmpi():
	try:
		ctypes.CDLL("libmpi.so.40")
		return True
	except OSError:
		return False
if shutil.which("mpirun") and _has_libmpi():
	config.available_features.add("mpi")
else:
	lit_config.note("Open MPI (mpirun, libmpi.so.40) not found: tests that require mpi are skipped")
# `REQUIRES: pil`: tests that make image files with Pillow (python3-pil, scripts/install-deps.sh)
# through %pil-python: the Python that runs lit when it imports PIL, else the system's python3
# (Debian's python3-pil is for that one; lit may run under another).
def _imports(python, module):
	try:
		return subprocess.run([python, "-c", "import " + module], capture_output=True, timeout=60).returncode == 0
	except OSError:
		return False
_pil_python = next((p for p in (sys.executable, "/usr/bin/python3") if os.path.exists(p) and _imports(p, "PIL")), None)
if _pil_python:
	config.available_features.add("pil")
	config.substitutions.append(("%pil-python", _pil_python))
else:
	lit_config.note("no Python here imports PIL (apt-get install python3-pil): tests that require pil are skipped")
