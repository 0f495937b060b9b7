import os
import tempfile

os.environ.setdefault("TF_CPP_MIN_LOG_LEVEL", "2")
# One calibration cache for the whole test session (subprocesses inherit it): no test reads
# or writes the user's ~/.cache/neural-cost, and the host bandwidth is measured once per run.
os.environ["NEURAL_COST_CACHE_DIR"] = tempfile.mkdtemp(prefix="neural-cost-test-cache-")
