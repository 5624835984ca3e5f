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
config.substitutions.append(("%scripts", os.path.join(config.netc_source_dir, "scripts")))

# `REQUIRES: torch` tests run where the Python that runs lit can import PyTorch (found, not
# imported: importing it takes seconds); CI has no PyTorch and reports them UNSUPPORTED.
import importlib.util
if importlib.util.find_spec("torch") is not None:
	config.available_features.add("torch")
else:
	lit_config.note("PyTorch is not importable by %s: tests that require torch are skipped" % sys.executable)
