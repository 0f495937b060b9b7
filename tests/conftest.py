import atexit
import os
import shutil
import tempfile

os.environ.setdefault("TF_CPP_MIN_LOG_LEVEL", "2")
# One calibration cache for the whole test session (subprocesses inherit it): no test reads
# or writes the user's ~/.cache/neural-cost, and the host bandwidth is measured once per run.
# Removed when the session's process exits (each run had left one directory in the temp folder).
os.environ["NEURAL_COST_CACHE_DIR"] = _CACHE = tempfile.mkdtemp(prefix="neural-cost-test-cache-")
atexit.register(shutil.rmtree, _CACHE, ignore_errors=True)
