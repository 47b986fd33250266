"""The product is tested with the newest dependencies; pypaimon (the oracle, pinning
pyarrow<20) runs in its own virtualenv and process, never in the test process."""
from __future__ import annotations

import importlib.util
import subprocess
import sys

import pyarrow as pa

from pypaimon_oracle import OracleError, VENV, call


def test_pypaimon_is_not_importable_in_the_test_process():
    assert importlib.util.find_spec("pypaimon") is None


def test_the_oracle_runs_pypaimon_with_its_own_pyarrow():
    versions = call("versions")
    assert versions["pypaimon"] == "2.1.0"
    assert int(versions["pyarrow"].split(".")[0]) < 20
    print(f"product pyarrow {pa.__version__}, oracle {versions}")


def test_oracle_errors_carry_pypaimons_exception(tmp_path):
    try:
        call("read_table", str(tmp_path / "wh"), "db.missing")
    except OracleError as exc:
        assert exc.kind and exc.remote_traceback
    else:
        raise AssertionError("reading a missing table through pypaimon should fail")


def test_pip_check_passes_in_both_environments():
    for python in (sys.executable, str(VENV / "bin" / "python")):
        result = subprocess.run([python, "-m", "pip", "check"], capture_output=True, text=True)
        assert result.returncode == 0, (python, result.stdout, result.stderr)
