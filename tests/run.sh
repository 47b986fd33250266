#!/usr/bin/env bash
# Installs everything the tests need and runs them all:
#   - a virtualenv in .venv with the package (editable) and its test extras (pytest,
#     hypothesis, pypaimon as the test-only oracle);
#   - the Java oracle (tests/java, Apache Paimon's paimon-bundle through Maven), built by
#     tests/java_oracle.py on first use and cached in tests/java/target;
#   - Apache Kafka's broker jars and Spark's Kafka connector (tests/kafka/*.xml, through
#     Maven), fetched by tests/kafka_broker.py on first use and cached in tests/kafka/target.
# Extra arguments go to pytest (e.g. `bash tests/run.sh -k interop`).
set -euo pipefail
cd "$(dirname "$0")/.."
python=${PYTHON:-python3}
[ -x .venv/bin/python ] || "$python" -m venv .venv
.venv/bin/python -m pip install -q --disable-pip-version-check --upgrade pip
.venv/bin/python -m pip install -q --disable-pip-version-check -e ".[test,spark,kafka]"
.venv/bin/python tests/java_oracle.py --build
exec .venv/bin/python -m pytest -q tests "$@"
