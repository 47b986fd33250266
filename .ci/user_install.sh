#!/usr/bin/env bash
# The README's first command as a new user runs it, on this checkout:
#   a wheel built from the checkout, installed with only the [spark] extra (no test
#   dependencies) into a new virtualenv; `pip check`; `paimon-streaming demo` with a short
#   stream from the repository root (where the source tree's paimon_streaming/ shadows the
#   installed one in the driver and in Spark's Python workers) and from another directory;
#   then the same checkout installed editable into that virtualenv, demo from both places.
# Fails on the first step that fails.
set -euo pipefail
cd "$(dirname "$0")/.."
root=$PWD
python=${PYTHON:-python3}
work=$(mktemp -d)
trap 'rm -rf "$work" "$root/warehouse"' EXIT
demo() { "$work/venv/bin/paimon-streaming" demo --batches 3 --rows 5000 --keys 20000 --interval 0.5 "$@"; }

echo "== user install: wheel with the [spark] extra into a new virtualenv"
"$python" -m pip wheel -q --disable-pip-version-check --no-deps -w "$work/dist" .
"$python" -m venv "$work/venv"
"$work/venv/bin/pip" install -q --disable-pip-version-check --upgrade pip
wheel=$(ls "$work"/dist/paimon_streaming-*.whl)
"$work/venv/bin/pip" install -q --disable-pip-version-check "$wheel[spark]"
"$work/venv/bin/pip" check
"$work/venv/bin/python" -c "import pyarrow, numpy, fastavro, pyspark; print('installed: pyarrow', pyarrow.__version__, '| numpy', numpy.__version__, '| fastavro', fastavro.__version__, '| pyspark', pyspark.__version__)"

echo "== demo from the repository root (wheel)"
demo
echo "== demo from another directory (wheel)"
(cd "$work" && demo --warehouse "$work/wh-wheel")

echo "== editable install of the checkout, demo from the repository root and from another directory"
"$work/venv/bin/pip" install -q --disable-pip-version-check -e ".[spark]"
"$work/venv/bin/pip" check
demo
(cd "$work" && demo --warehouse "$work/wh-editable")
echo "== user install: passed"
